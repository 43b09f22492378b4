"""The architect's first view of an expanded cluster: counts, fabrics per tier, ratios, cables."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .catalog import Server
from .errors import Finding
from .expand.ports import booked_ports
from .expand.topology import LINK_TIERS, TIERS, Topology
from .physical import W_TO_BTU_H, rack_figures
from .validate import ValidBlueprint


def _ratio(down: float, up: float) -> float | None:
    return round(down / up, 3) if up else None


def ports_used(topo: Topology, name: str, booked: dict[str, dict[str, tuple[float, int]]]) -> dict[str, list[float]]:
    """Per tier: [native data ports booked, native data ports], by the booking rule the port check uses."""
    out: dict[str, list[float]] = {}
    for tier in TIERS:
        groups = [g for s in topo.switches(name, tier) for g in booked.get(s.name, {}).values()]
        if groups:
            out[tier] = [round(sum(used for used, _ in groups), 2), sum(total for _, total in groups)]
    return out


def fabric_plan(topo: Topology, name: str, booked: dict[str, dict[str, tuple[float, int]]]) -> dict[str, Any]:
    summary = topo.fabrics[name]
    switches = {tier: len(topo.switches(name, tier)) for tier in TIERS if topo.switches(name, tier)}
    links: Counter[str] = Counter()
    down: dict[str, float] = defaultdict(float)
    up: dict[str, float] = defaultdict(float)
    tier_capacity: dict[str, float] = defaultdict(float)
    for link in topo.fabric_links(name):
        links[link.tier] += 1
        tier_capacity[link.tier] += link.speed_gbps
        down[link.b] += link.speed_gbps
        up[link.a] += link.speed_gbps
    oversubscription: dict[str, float | None] = {}
    for tier in TIERS:
        members = topo.switches(name, tier)
        ratios = [_ratio(down[s.name], up[s.name]) for s in members if up[s.name]]
        if ratios:
            oversubscription[tier] = max(r for r in ratios if r is not None)
    crossing = [tier_capacity[t] for t in LINK_TIERS if tier_capacity[t]]
    return {
        "kind": summary.kind,
        "technology": summary.technology,
        "topology": summary.topology,
        "tiers": summary.tiers,
        "models": summary.models,
        "nodes": summary.nodes,
        "endpoints": summary.endpoints,
        "rails": summary.rails,
        "scalable_unit": summary.scalable_unit,
        "uplinks_for": summary.uplinks_for,
        "subnets": topo.switch_islands(name) if switches else 0,
        "switches": switches,
        "links": {tier: links[tier] for tier in (*LINK_TIERS, "oob", "oob-uplink") if links[tier]},
        "oversubscription": oversubscription,
        "oversubscription_target": summary.oversubscription_target,
        "bisection_tbps": round(min(crossing) / 2 / 1000, 3) if crossing else 0.0,
        "ports_used": ports_used(topo, name, booked),
    }


def oob_plan(topo: Topology, name: str) -> dict[str, Any]:
    links = Counter(link.tier for link in topo.fabric_links(name))
    return {"kind": "oob", "switches": {"oob": len(topo.switches(name, "oob"))}, "links": dict(sorted(links.items()))}


def cables(topo: Topology) -> dict[str, dict[str, int]]:
    """Cables by media, then by length class (metres, as text so JSON keys sort stably)."""
    counts: dict[str, Counter[float]] = defaultdict(Counter)
    for link in topo.links:
        if link.media:
            counts[link.media][link.length_class_m] += 1
    return {media: {f"{length:g}": n for length, n in sorted(by_length.items())}
            for media, by_length in sorted(counts.items())}


def power_plan(valid: ValidBlueprint, topo: Topology) -> dict[str, Any]:
    """Power, heat and weight per rack, per row and in total (kW, BTU/h, kg)."""
    figures = rack_figures(valid.blueprint, valid.catalog, topo)
    racks = {name: {"row": f.rack.row, "power_kw": round(f.power_kw, 2), "heat_kw": round(f.heat_kw, 2),
                    "heat_btu_h": round(f.heat_btu_h), "air_kw": round(f.air_kw, 2),
                    "liquid_kw": round(f.liquid_kw, 2), "weight_kg": round(f.weight_kg, 1),
                    "usable_power_kw": round(f.usable_power_kw, 2), "u_used": f.u_used,
                    "u_total": f.rack.rack_type.u_height} for name, f in figures.items()}
    rows: dict[str, dict[str, float]] = {}
    for f in figures.values():
        row = rows.setdefault(f.rack.row, {"power_kw": 0.0, "heat_kw": 0.0, "liquid_kw": 0.0, "weight_kg": 0.0})
        row["power_kw"] += f.power_kw
        row["heat_kw"] += f.heat_kw
        row["liquid_kw"] += f.liquid_kw
        row["weight_kg"] += f.weight_kg + f.rack.rack_type.weight_kg
    total = sum(f.power_kw for f in figures.values())
    pue = valid.blueprint.site.pue
    return {
        "racks": racks,
        "rows": {name: {k: round(v, 2) for k, v in row.items()} for name, row in rows.items()},
        "power_kw": round(total, 2),
        "heat_kw": round(total, 2),
        "heat_btu_h": round(total * 1000 * W_TO_BTU_H),
        "facility_kw": round(total * pue, 2) if pue else None,
    }


def build_plan(valid: ValidBlueprint, topo: Topology, findings: list[Finding]) -> dict[str, Any]:
    nodes = list(topo.nodes())
    gpus = 0
    for node in nodes:
        server = valid.catalog.require(node.model, Server)
        gpus += server.gpus.count if server.gpus else 0
    fabrics = {}
    booked = booked_ports(topo, valid.catalog)
    for name in valid.blueprint.fabrics:
        fabrics[name] = fabric_plan(topo, name, booked) if name in topo.fabrics else oob_plan(topo, name)
    domain_sizes = Counter(d.gpus for d in topo.domains)
    power = power_plan(valid, topo)
    return {
        "name": valid.blueprint.name,
        "nodes": len(nodes),
        "nodes_by_role": dict(sorted(Counter(n.role for n in nodes).items())),
        "gpus": gpus,
        "racks": len(topo.racks),
        "racks_used": sum(1 for rack in topo.racks.values() if any(rack.used)),
        "nvlink_domains": {str(size): count for size, count in sorted(domain_sizes.items())},
        "fabrics": fabrics,
        "cables": cables(topo),
        "cables_total": sum(1 for link in topo.links if link.media),
        "power_kw": power["power_kw"],
        "heat_kw": power["heat_kw"],
        "power": power,
        "findings": [f.as_dict() for f in findings],
    }


def plan_text(plan: dict[str, Any]) -> str:
    lines = [f"{plan['name']}: {plan['nodes']} nodes, {plan['gpus']} GPUs, {plan['racks_used']} racks used of "
             f"{plan['racks']} declared"]
    roles = ", ".join(f"{n} {role}" for role, n in plan["nodes_by_role"].items())
    lines.append(f"  nodes by role: {roles}")
    if plan["nvlink_domains"]:
        domains = ", ".join(f"{n} x {size} GPUs" for size, n in plan["nvlink_domains"].items())
        lines.append(f"  NVLink domains: {domains}")
    for name, fabric in plan["fabrics"].items():
        switches = ", ".join(f"{n} {tier}" for tier, n in fabric["switches"].items())
        if fabric["kind"] != "oob":
            switches += " (ports used: " + ", ".join(
                f"{tier} {used:g}/{total}" for tier, (used, total) in fabric["ports_used"].items()) + ")"
        links = ", ".join(f"{n} {tier}" for tier, n in fabric["links"].items())
        if fabric["kind"] == "oob":
            lines.append(f"  {name} (oob): switches {switches}; links {links}")
            continue
        ratios = ", ".join(f"{tier} {r:g}:1" for tier, r in fabric["oversubscription"].items()) or "single switch"
        models = ", ".join(f"{tier} {model}" for tier, model in fabric["models"].items())
        rails = f", {fabric['rails']} rails" if fabric["rails"] else ""
        su = f"scalable unit {fabric['scalable_unit']} nodes; " if fabric["scalable_unit"] else ""
        sized = "the planned downlinks" if fabric["uplinks_for"] == "planned" else "the ports in use"
        subnets = "" if fabric["subnets"] <= 1 else f"; {fabric['subnets']} separate planes"
        lines += [f"  {name} ({fabric['kind']}, {fabric['technology']}, {fabric['topology']}, "
                  f"{fabric['tiers']} tier{'s' if fabric['tiers'] != 1 else ''}{rails}): {fabric['nodes']} nodes, "
                  f"{fabric['endpoints']} ports",
                  f"    models: {models}",
                  f"    switches: {switches}{subnets}",
                  *([f"    {su}leaf uplinks sized for {sized}"] if fabric["tiers"] > 1 else []),
                  f"    links: {links}",
                  f"    oversubscription: {ratios} (target {fabric['oversubscription_target']:g}:1); "
                  f"bisection {fabric['bisection_tbps']:g} Tb/s"]
    power = plan["power"]
    facility = f", facility {power['facility_kw']:g} kW at the site's PUE" if power["facility_kw"] else ""
    lines.append(f"  power: {power['power_kw']:g} kW IT, heat {power['heat_kw']:g} kW "
                 f"({power['heat_btu_h']:,} BTU/h){facility}")
    for name, rack in power["racks"].items():
        if rack["power_kw"]:
            liquid = f" ({rack['liquid_kw']:g} kW to liquid)" if rack["liquid_kw"] else ""
            lines.append(f"    {name}: {rack['power_kw']:g} of {rack['usable_power_kw']:g} kW{liquid}, "
                         f"{rack['weight_kg']:g} kg, {rack['u_used']}/{rack['u_total']} U")
    lines.append(f"  cables: {plan['cables_total']}")
    for media, by_length in plan["cables"].items():
        lengths = ", ".join(f"{n} x {length} m" for length, n in by_length.items())
        lines.append(f"    {media}: {lengths}")
    return "\n".join(lines)
