"""The architect's first view of an expanded cluster: counts, fabrics per tier, ratios, cables."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .catalog import Server
from .errors import Finding
from .expand.topology import LINK_TIERS, TIERS, Topology
from .validate import ValidBlueprint


def _ratio(down: float, up: float) -> float | None:
    return round(down / up, 3) if up else None


def fabric_plan(topo: Topology, name: str) -> dict[str, Any]:
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
        "switches": switches,
        "links": {tier: links[tier] for tier in (*LINK_TIERS, "oob", "oob-uplink") if links[tier]},
        "oversubscription": oversubscription,
        "oversubscription_target": summary.oversubscription_target,
        "bisection_tbps": round(min(crossing) / 2 / 1000, 3) if crossing else 0.0,
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


def build_plan(valid: ValidBlueprint, topo: Topology, findings: list[Finding]) -> dict[str, Any]:
    nodes = list(topo.nodes())
    gpus = 0
    for node in nodes:
        server = valid.catalog.require(node.model, Server)
        gpus += server.gpus.count if server.gpus else 0
    fabrics = {}
    for name in valid.blueprint.fabrics:
        fabrics[name] = fabric_plan(topo, name) if name in topo.fabrics else oob_plan(topo, name)
    domain_sizes = Counter(d.gpus for d in topo.domains)
    return {
        "name": valid.blueprint.name,
        "nodes": len(nodes),
        "nodes_by_role": dict(sorted(Counter(n.role for n in nodes).items())),
        "gpus": gpus,
        "racks": len(topo.racks),
        "nvlink_domains": {str(size): count for size, count in sorted(domain_sizes.items())},
        "fabrics": fabrics,
        "cables": cables(topo),
        "cables_total": sum(1 for link in topo.links if link.media),
        "findings": [f.as_dict() for f in findings],
    }


def plan_text(plan: dict[str, Any]) -> str:
    lines = [f"{plan['name']}: {plan['nodes']} nodes, {plan['gpus']} GPUs, {plan['racks']} racks"]
    roles = ", ".join(f"{n} {role}" for role, n in plan["nodes_by_role"].items())
    lines.append(f"  nodes by role: {roles}")
    if plan["nvlink_domains"]:
        domains = ", ".join(f"{n} x {size} GPUs" for size, n in plan["nvlink_domains"].items())
        lines.append(f"  NVLink domains: {domains}")
    for name, fabric in plan["fabrics"].items():
        switches = ", ".join(f"{n} {tier}" for tier, n in fabric["switches"].items())
        links = ", ".join(f"{n} {tier}" for tier, n in fabric["links"].items())
        if fabric["kind"] == "oob":
            lines.append(f"  {name} (oob): switches {switches}; links {links}")
            continue
        ratios = ", ".join(f"{tier} {r:g}:1" for tier, r in fabric["oversubscription"].items()) or "single switch"
        models = ", ".join(f"{tier} {model}" for tier, model in fabric["models"].items())
        rails = f", {fabric['rails']} rails" if fabric["rails"] else ""
        lines += [f"  {name} ({fabric['kind']}, {fabric['technology']}, {fabric['topology']}, "
                  f"{fabric['tiers']} tier{'s' if fabric['tiers'] != 1 else ''}{rails}): {fabric['nodes']} nodes, "
                  f"{fabric['endpoints']} ports",
                  f"    models: {models}",
                  f"    switches: {switches}",
                  f"    links: {links}",
                  f"    oversubscription: {ratios} (target {fabric['oversubscription_target']:g}:1); "
                  f"bisection {fabric['bisection_tbps']:g} Tb/s"]
    lines.append(f"  cables: {plan['cables_total']}")
    for media, by_length in plan["cables"].items():
        lengths = ", ".join(f"{n} x {length} m" for length, n in by_length.items())
        lines.append(f"    {media}: {lengths}")
    return "\n".join(lines)
