"""The architect's first view of an expanded cluster: counts, fabrics per tier, ratios, power, cables.

`build_plan` gives a typed `Plan`, shared by `clusterforge plan` (text and JSON), the handoff report and
elevations, and `clusterforge diff`. `Plan.as_dict()` is the JSON form: field names are its keys.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .catalog import GPU, Server
from .checks.figures import rack_figures
from .errors import Finding
from .expand.ports import booked_ports
from .expand.topology import LINK_TIERS, TIERS, Device, LinkTier, Tier, Topology
from .physical import W_TO_BTU_H
from .validate import ValidBlueprint
from .workload import fit_workloads, fits_as_dict


@dataclass(frozen=True)
class FabricPlan:
    """A leaf/spine network: what the expander chose and what came of it."""

    kind: str
    technology: str
    topology: str
    tiers: int
    models: dict[str, str]
    nodes: int
    endpoints: int
    rails: int
    scalable_unit: int | None
    uplinks_for: str
    """Leaf uplinks sized for the 'planned' downlinks (full scalable unit or leaf) or the ports 'present'."""
    subnets: int
    """Connected groups of the fabric's switches (an InfiniBand subnet each)."""
    switches: dict[Tier, int]
    """Switches per tier (leaf, spine, core)."""
    links: dict[LinkTier, int]
    """Links per tier (node-leaf, leaf-spine, spine-core)."""
    oversubscription: dict[str, float]
    """The highest downlink:uplink ratio among each tier's switches (tiers with uplinks only)."""
    oversubscription_target: float
    bisection_tbps: float
    ports_used: dict[Tier, list[float]]
    """Per tier: [native data ports booked, native data ports], by the booking rule the port check uses."""
    dual_homing: str = "none"
    """'mlag' or 'evpn-mh' when nodes are dual-homed to leaf pairs, else 'none'."""
    leaf_pairs: int = 0
    """Leaf pairs of a dual-homed fabric."""


@dataclass(frozen=True)
class OobPlan:
    """The out-of-band network: one switch per rack or row."""

    switches: dict[Tier, int]
    links: dict[LinkTier, int]
    kind: Literal["oob"] = "oob"


@dataclass(frozen=True)
class RackPlan:
    row: str
    power_kw: float
    heat_kw: float
    heat_btu_h: int
    air_kw: float
    liquid_kw: float
    weight_kg: float
    """Devices only; the rack's own weight is not part of its load."""
    usable_power_kw: float
    u_used: int
    u_total: int


@dataclass(frozen=True)
class RowPlan:
    power_kw: float
    heat_kw: float
    liquid_kw: float
    weight_kg: float
    """Devices and the empty racks."""


@dataclass(frozen=True)
class PowerPlan:
    racks: dict[str, RackPlan]
    rows: dict[str, RowPlan]
    power_kw: float
    heat_kw: float
    heat_btu_h: int
    facility_kw: float | None
    """IT power times the site's PUE, when the blueprint gives one."""


@dataclass(frozen=True)
class Plan:
    name: str
    nodes: int
    nodes_by_role: dict[str, int]
    gpus: int
    racks: int
    """Racks the blueprint declares."""
    racks_used: int
    """Racks holding at least one device or reserved U."""
    nvlink_domains: dict[str, int]
    """Domain size in GPUs (as text) -> number of domains."""
    fabrics: dict[str, FabricPlan | OobPlan]
    cables: dict[str, dict[str, int]]
    """Media -> length class in metres (as text) -> count."""
    cables_total: int
    power_kw: float
    heat_kw: float
    power: PowerPlan
    findings: list[Finding] = field(default_factory=list)
    workloads: dict[str, Any] = field(default_factory=dict)
    """Figures of each workload by name, as `clusterforge fit --format json` gives them (docs/workloads.md)."""
    scale_up_links: list[str] = field(default_factory=list)
    """The links that join the GPUs of the domains, as the catalog names them (NVLink, Infinity Fabric)."""

    @property
    def domains_label(self) -> str:
        """What the domains are called: by their links ('Infinity Fabric domains'), NVLink where none is named."""
        return f"{' and '.join(self.scale_up_links) or 'NVLink'} domains"

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (`clusterforge plan --format json`)."""
        out = asdict(self)
        out["findings"] = [f.as_dict() for f in self.findings]
        return out

    @classmethod
    def empty(cls, name: str) -> Plan:
        """The plan of a blueprint that does not expand: every figure zero."""
        return cls(name, 0, {}, 0, 0, 0, {}, {}, {}, 0, 0.0, 0.0, PowerPlan({}, {}, 0.0, 0.0, 0, None))


def _ratio(down: float, up: float) -> float | None:
    return round(down / up, 3) if up else None


def ports_used(topo: Topology, name: str, booked: dict[str, dict[str, tuple[float, int]]]) -> dict[Tier, list[float]]:
    """Per tier: [native data ports booked, native data ports], by the booking rule the port check uses."""
    out: dict[Tier, list[float]] = {}
    for tier in TIERS:
        groups = [g for s in topo.switches(name, tier) for g in booked.get(s.name, {}).values()]
        if groups:
            out[tier] = [round(sum(used for used, _ in groups), 2), sum(total for _, total in groups)]
    return out


def fabric_plan(topo: Topology, name: str, booked: dict[str, dict[str, tuple[float, int]]]) -> FabricPlan:
    summary = topo.fabrics[name]
    switches: dict[Tier, int] = {tier: len(topo.switches(name, tier)) for tier in TIERS if topo.switches(name, tier)}
    links: Counter[LinkTier] = Counter()
    down: dict[str, float] = defaultdict(float)
    up: dict[str, float] = defaultdict(float)
    tier_capacity: dict[str, float] = defaultdict(float)
    for link in topo.fabric_links(name):
        links[link.tier] += 1
        if link.tier == "leaf-peer":  # MLAG peer links join a pair; they carry no node traffic up or down
            continue
        tier_capacity[link.tier] += link.speed_gbps
        down[link.b] += link.speed_gbps
        up[link.a] += link.speed_gbps
    oversubscription: dict[str, float] = {}
    for tier in TIERS:
        members = topo.switches(name, tier)
        ratios = [_ratio(down[s.name], up[s.name]) for s in members if up[s.name]]
        if ratios:
            oversubscription[tier] = max(r for r in ratios if r is not None)
    crossing = [tier_capacity[t] for t in LINK_TIERS if tier_capacity[t]]
    return FabricPlan(
        kind=summary.kind,
        technology=summary.technology,
        topology=summary.topology,
        tiers=summary.tiers,
        models=summary.models,
        nodes=summary.nodes,
        endpoints=summary.endpoints,
        rails=summary.rails,
        scalable_unit=summary.scalable_unit,
        uplinks_for=summary.uplinks_for,
        subnets=topo.switch_islands(name) if switches else 0,
        switches=switches,
        links={
            tier: links[tier]
            for tier in ("node-leaf", "leaf-peer", *LINK_TIERS[1:], "oob", "oob-uplink")
            if links[tier]
        },
        oversubscription=oversubscription,
        oversubscription_target=summary.oversubscription_target,
        bisection_tbps=round(min(crossing) / 2 / 1000, 3) if crossing else 0.0,
        ports_used=ports_used(topo, name, booked),
        dual_homing=summary.dual_homing,
        leaf_pairs=len({s.pair for s in topo.switches(name, "leaf") if s.pair is not None}),
    )


def oob_plan(topo: Topology, name: str) -> OobPlan:
    links = Counter(link.tier for link in topo.fabric_links(name))
    return OobPlan({"oob": len(topo.switches(name, "oob"))}, dict(sorted(links.items())))


def cables(topo: Topology) -> dict[str, dict[str, int]]:
    """Physical cables (a twin-port cable or a splitter once, an 800G link over two fibres twice) by media,
    then by length class (metres, as text so JSON keys sort stably)."""
    counts: dict[str, Counter[float]] = defaultdict(Counter)
    for cable in topo.cables:
        counts[cable.media][cable.length_class_m] += cable.pieces
    return {
        media: {f"{length:g}": n for length, n in sorted(by_length.items())}
        for media, by_length in sorted(counts.items())
    }


def power_plan(valid: ValidBlueprint, topo: Topology) -> PowerPlan:
    """Power, heat and weight per rack, per row and in total (kW, BTU/h, kg)."""
    figures = rack_figures(valid.blueprint, valid.catalog, topo)
    racks = {
        name: RackPlan(
            f.rack.row,
            round(f.power_kw, 2),
            round(f.heat_kw, 2),
            round(f.heat_btu_h),
            round(f.air_kw, 2),
            round(f.liquid_kw, 2),
            round(f.weight_kg, 1),
            round(f.usable_power_kw, 2),
            f.u_used,
            f.rack.rack_type.u_height,
        )
        for name, f in figures.items()
    }
    rows: dict[str, dict[str, float]] = {}
    for f in figures.values():
        row = rows.setdefault(f.rack.row, {"power_kw": 0.0, "heat_kw": 0.0, "liquid_kw": 0.0, "weight_kg": 0.0})
        row["power_kw"] += f.power_kw
        row["heat_kw"] += f.heat_kw
        row["liquid_kw"] += f.liquid_kw
        row["weight_kg"] += f.weight_kg + f.rack.rack_type.weight_kg
    total = sum(f.power_kw for f in figures.values())
    pue = valid.blueprint.site.pue
    return PowerPlan(
        racks=racks,
        rows={name: RowPlan(**{k: round(v, 2) for k, v in row.items()}) for name, row in rows.items()},
        power_kw=round(total, 2),
        heat_kw=round(total, 2),
        heat_btu_h=round(total * 1000 * W_TO_BTU_H),
        facility_kw=round(total * pue, 2) if pue else None,
    )


def build_plan(valid: ValidBlueprint, topo: Topology, findings: list[Finding]) -> Plan:
    nodes = list(topo.nodes())
    gpus = 0
    for node in nodes:
        server = valid.catalog.require(node.model, Server)
        gpus += server.gpus.count if server.gpus else 0
    fabrics: dict[str, FabricPlan | OobPlan] = {}
    booked = booked_ports(topo, valid.catalog)
    for name in valid.blueprint.fabrics:
        fabrics[name] = fabric_plan(topo, name, booked) if name in topo.fabrics else oob_plan(topo, name)
    domain_sizes = Counter(d.gpus for d in topo.domains)
    links = {gpu.link_family for gpu in _gpus_in_domains(valid, nodes)} - {""}
    power = power_plan(valid, topo)
    return Plan(
        name=valid.blueprint.name,
        nodes=len(nodes),
        nodes_by_role=dict(sorted(Counter(n.role for n in nodes).items())),
        gpus=gpus,
        racks=len(topo.racks),
        racks_used=sum(1 for rack in topo.racks.values() if any(rack.used)),
        nvlink_domains={str(size): count for size, count in sorted(domain_sizes.items())},
        fabrics=fabrics,
        cables=cables(topo),
        cables_total=sum(cable.pieces for cable in topo.cables),
        power_kw=power.power_kw,
        heat_kw=power.heat_kw,
        power=power,
        findings=list(findings),
        workloads=fits_as_dict(fit_workloads(valid.blueprint, valid.catalog, topo)),
        scale_up_links=sorted(links),
    )


def _gpus_in_domains(valid: ValidBlueprint, nodes: list[Device]) -> list[GPU]:
    """The GPU models of nodes whose GPUs share a domain of more than one GPU."""
    servers = [valid.catalog.require(model, Server) for model in sorted({node.model for node in nodes})]
    return [valid.catalog.require(s.gpus.model, GPU) for s in servers if s.gpus and s.gpus.nvlink_domain > 1]


def plan_text(plan: Plan) -> str:
    lines = [
        f"{plan.name}: {plan.nodes} nodes, {plan.gpus} GPUs, {plan.racks_used} racks used of {plan.racks} declared"
    ]
    roles = ", ".join(f"{n} {role}" for role, n in plan.nodes_by_role.items())
    lines.append(f"  nodes by role: {roles}")
    if plan.nvlink_domains:
        domains = ", ".join(f"{n} x {size} GPUs" for size, n in plan.nvlink_domains.items())
        lines.append(f"  {plan.domains_label}: {domains}")
    for name, fabric in plan.fabrics.items():
        lines += _fabric_text(name, fabric)
    lines += _power_text(plan.power)
    lines.append(f"  cables: {plan.cables_total}")
    for media, by_length in plan.cables.items():
        lengths = ", ".join(f"{n} x {length} m" for length, n in by_length.items())
        lines.append(f"    {media}: {lengths}")
    return "\n".join(lines)


def _fabric_text(name: str, fabric: FabricPlan | OobPlan) -> list[str]:
    switches = ", ".join(f"{n} {tier}" for tier, n in fabric.switches.items())
    links = ", ".join(f"{n} {tier}" for tier, n in fabric.links.items())
    if isinstance(fabric, OobPlan):
        return [f"  {name} (oob): switches {switches}; links {links}"]
    switches += (
        " (ports used: "
        + ", ".join(f"{tier} {used:g}/{total}" for tier, (used, total) in fabric.ports_used.items())
        + ")"
    )
    ratios = ", ".join(f"{tier} {r:g}:1" for tier, r in fabric.oversubscription.items()) or "single switch"
    models = ", ".join(f"{tier} {model}" for tier, model in fabric.models.items())
    rails = f", {fabric.rails} rails" if fabric.rails else ""
    su = f"scalable unit {fabric.scalable_unit} nodes; " if fabric.scalable_unit else ""
    sized = "the planned downlinks" if fabric.uplinks_for == "planned" else "the ports in use"
    subnets = "" if fabric.subnets <= 1 else f"; {fabric.subnets} separate planes"
    if fabric.leaf_pairs:
        mode = "MLAG" if fabric.dual_homing == "mlag" else "EVPN multihoming"
        subnets += f"; {fabric.leaf_pairs} leaf pair{'s' if fabric.leaf_pairs != 1 else ''} ({mode}), nodes dual-homed"
    return [
        f"  {name} ({fabric.kind}, {fabric.technology}, {fabric.topology}, "
        f"{fabric.tiers} tier{'s' if fabric.tiers != 1 else ''}{rails}): {fabric.nodes} nodes, "
        f"{fabric.endpoints} ports",
        f"    models: {models}",
        f"    switches: {switches}{subnets}",
        *([f"    {su}leaf uplinks sized for {sized}"] if fabric.tiers > 1 else []),
        f"    links: {links}",
        f"    oversubscription: {ratios} (target {fabric.oversubscription_target:g}:1); "
        f"bisection {fabric.bisection_tbps:g} Tb/s",
    ]


def _power_text(power: PowerPlan) -> list[str]:
    facility = f", facility {power.facility_kw:g} kW at the site's PUE" if power.facility_kw else ""
    lines = [f"  power: {power.power_kw:g} kW IT, heat {power.heat_kw:g} kW ({power.heat_btu_h:,} BTU/h){facility}"]
    for name, rack in power.racks.items():
        if rack.power_kw:
            liquid = f" ({rack.liquid_kw:g} kW to liquid)" if rack.liquid_kw else ""
            lines.append(
                f"    {name}: {rack.power_kw:g} of {rack.usable_power_kw:g} kW{liquid}, "
                f"{rack.weight_kg:g} kg, {rack.u_used}/{rack.u_total} U"
            )
    return lines
