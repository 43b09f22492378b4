"""What one failure takes away: devices it stops (directly, by power or by cooling), node ports it cuts from
each fabric, the bisection left, NVLink domains broken or slowed, subnets left without a subnet manager, Slurm
partitions and blocks touched, and the workloads that no longer have their GPUs."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..model.slurm import Slurm
from ..physical import DERATE
from ..workload.hardware import compute_groups
from .baseline import SWITCH_LINK_TIERS, Baseline, FabricBase, components, still_joined


@dataclass(frozen=True)
class Failure:
    """One element failing, as what it takes out directly."""

    kind: str
    """Element class (docs/failures.md): leaf, spine, core, oob-switch, bundle, subnet-manager, node, psu, pdu,
    feed, cdu, rack, row, power-shelf, switch-tray."""
    name: str
    devices: frozenset[str] = frozenset()
    """Devices that stop."""
    links: frozenset[int] = frozenset()
    """Links cut (a cable bundle)."""
    psus: frozenset[tuple[str, int]] = frozenset()
    """(device, PSU number) left without power."""
    feeds: tuple[tuple[str, int], ...] = ()
    """(rack, feeds lost) for a rack's feed capacity."""
    uncooled: frozenset[str] = frozenset()
    """Racks whose coolant stops."""
    racks: tuple[str, ...] = ()
    """Racks the element is in or serves (for the picture)."""


@dataclass
class FabricEffect:
    fabric: str
    gpus_cut_off: int = 0
    """GPUs of running nodes with no port left on the fabric."""
    nodes_cut_off: int = 0
    nodes_degraded: int = 0
    """Running nodes with some, not all, of their ports on the fabric lost."""
    gpus_degraded: int = 0
    ports_lost: int = 0
    rails_lost: dict[int, int] = field(default_factory=dict)
    """Rail -> running nodes that lost it."""
    switches_down: int = 0
    links_down: int = 0
    """Switch-to-switch links lost."""
    bisection_gbps: float = 0.0
    """The fabric's switch bisection intact (docs/failures.md)."""
    bisection_left_gbps: float = 0.0
    subnets_without_sm: int = 0
    cut_nodes: set[str] = field(default_factory=set)
    degraded_nodes: set[str] = field(default_factory=set)

    @property
    def bisection_tbps(self) -> float:
        return round(self.bisection_gbps / 1000, 6)

    @property
    def bisection_left_tbps(self) -> float:
        return round(self.bisection_left_gbps / 1000, 6)

    @property
    def bisection_left(self) -> float:
        """Share of the switch bisection left (1 for a fabric of one tier)."""
        return self.bisection_left_gbps / self.bisection_gbps if self.bisection_gbps else 1.0


@dataclass
class Effect:
    failure: Failure
    devices_down: set[str] = field(default_factory=set)
    """Every device that stops: the element's own, unpowered and uncooled."""
    gpus_lost: int = 0
    """GPUs of nodes down or cut off from every port of a compute fabric."""
    gpus_degraded: int = 0
    gpus_throttled: int = 0
    throttled: list[str] = field(default_factory=list)
    """Nodes left running on fewer PSUs than their planned draw needs."""
    racks_down: list[str] = field(default_factory=list)
    power: list[str] = field(default_factory=list)
    """What is left against the load, in words."""
    cooling: list[str] = field(default_factory=list)
    fabrics: dict[str, FabricEffect] = field(default_factory=dict)
    domains_broken: int = 0
    domains_degraded: int = 0
    nvlink_left: float = 1.0
    """Share of the NVLink bandwidth left in the worst degraded domain."""
    trays_left: tuple[int, int] = (0, 0)
    """NVLink switch trays left of the trays, in the worst degraded domain's rack."""
    partitions: dict[str, int] = field(default_factory=dict)
    """Slurm partition -> nodes it loses."""
    blocks: int = 0
    """Slurm blocks (topology/block) or switches (topology/tree) touched."""
    blocks_are: str = "blocks"
    """What `blocks` counts: 'blocks' or 'switches'."""
    workloads: dict[str, str] = field(default_factory=dict)
    """Workload -> what the failure does to it, for those it touches."""
    management_lost: int = 0
    """Devices whose out-of-band port is lost."""
    slurm_controllers: tuple[int, int] = (0, 0)
    """Slurm controllers still running, of the controllers."""
    power_margin: float = 10.0
    """The least share of its planned draw that a device left on fewer PSUs still has (1.2: 20% to spare)."""

    @property
    def bisection_loss(self) -> float:
        """The largest share of a fabric's switch bisection lost."""
        return max((1 - f.bisection_left for f in self.fabrics.values()), default=0.0)

    @property
    def subnets_without_sm(self) -> int:
        return sum(f.subnets_without_sm for f in self.fabrics.values())

    def severity_key(self) -> tuple[float, ...]:
        """Worse first when sorted descending: GPUs lost, racks down, bisection, degraded, throttled."""
        return (
            self.gpus_lost,
            len(self.racks_down),
            self.slurm_controllers[1] > 0 and not self.slurm_controllers[0],
            self.domains_broken,
            round(self.bisection_loss, 6),
            self.subnets_without_sm,
            self.gpus_degraded + self.gpus_throttled,
            len(self.failure.links),
            -self.power_margin,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.failure.kind,
            "element": self.failure.name,
            "racks": list(self.failure.racks),
            "devices_down": len(self.devices_down),
            "gpus_lost": self.gpus_lost,
            "gpus_degraded": self.gpus_degraded,
            "gpus_throttled": self.gpus_throttled,
            "racks_down": self.racks_down,
            "power": self.power,
            "cooling": self.cooling,
            "fabrics": {
                name: {
                    "gpus_cut_off": f.gpus_cut_off,
                    "nodes_cut_off": f.nodes_cut_off,
                    "nodes_degraded": f.nodes_degraded,
                    "ports_lost": f.ports_lost,
                    "rails_lost": {str(rail): n for rail, n in sorted(f.rails_lost.items())},
                    "switches_down": f.switches_down,
                    "switch_links_down": f.links_down,
                    "bisection_tbps": round(f.bisection_tbps, 3),
                    "bisection_left_tbps": round(f.bisection_left_tbps, 3),
                    "bisection_left": round(f.bisection_left, 4),
                    "subnets_without_subnet_manager": f.subnets_without_sm,
                }
                for name, f in self.fabrics.items()
            },
            "nvlink": {
                "domains_broken": self.domains_broken,
                "domains_degraded": self.domains_degraded,
                "bandwidth_left": round(self.nvlink_left, 4),
            },
            "slurm": {
                "partitions": self.partitions,
                self.blocks_are: self.blocks,
                "controllers_left": self.slurm_controllers[0],
            },
            "workloads": self.workloads,
            "management_ports_lost": self.management_lost,
            "power_margin": round(self.power_margin, 4) if self.power_margin < 10 else None,
        }


def effect_of(base: Baseline, failure: Failure) -> Effect:
    effect = Effect(failure, set(failure.devices))
    _power(base, failure, effect)
    _cooling(base, failure, effect)
    for fabric in base.fabrics.values():
        found = _fabric(base, fabric, failure, effect.devices_down)
        if found is not None:
            effect.fabrics[fabric.name] = found
    _totals(base, effect)
    return effect


def _power(base: Baseline, failure: Failure, effect: Effect) -> None:
    lost: Counter[str] = Counter(device for device, _ in failure.psus)
    for device, count in sorted(lost.items()):
        total, rating = base.psus[device]
        left = total - count
        if base.draw_w.get(device):
            effect.power_margin = min(effect.power_margin, left * rating / base.draw_w[device])
        if device in effect.devices_down:
            continue
        if left <= 0:
            effect.devices_down.add(device)
        elif left * rating < base.draw_w.get(device, 0.0) - 1e-9:
            if device in base.gpus:
                effect.throttled.append(device)  # a GPU node caps its power (or stops)
            else:
                effect.devices_down.add(device)  # a switch or server without the power it draws stops
    if lost:
        _psu_text(base, lost, effect)
    tightest: tuple[float, str] | None = None
    for rack, feeds_lost in failure.feeds:
        rack_type = base.topo.racks[rack].rack_type
        left = rack_type.feeds - feeds_lost
        load = base.figures[rack].power_kw
        capacity = left * rack_type.feed.capacity_kw
        if load > capacity + 1e-9:
            effect.devices_down.update(base.rack_devices.get(rack, ()))
            effect.power.append(f"{rack}: {load:.1f} kW on {left} feeds of {capacity:.1f} kW: the breakers trip")
        elif load and (tightest is None or load / capacity > tightest[0]):
            feeds = f"{left} feed{'s' if left != 1 else ''}"
            state = "within" if load <= capacity * DERATE + 1e-9 else "over"
            tightest = (
                load / capacity,
                f"{rack}: {load:.1f} kW on the {feeds} left ({capacity:.1f} kW rated, {state} the "
                f"{capacity * DERATE:.1f} kW continuous)",
            )
    if tightest is not None:
        effect.power.append(tightest[1])
    shelf_texts = [(rack, _shelves(base, rack, shelves, effect)) for rack, shelves in base.shelves.items()]
    effect.power += by_text([(rack, text) for rack, text in shelf_texts if text])


def by_text(items: list[tuple[str, str]]) -> list[str]:
    """'A01, A02: text' for racks that say the same (up to 6 named)."""
    racks: dict[str, list[str]] = defaultdict(list)
    for rack, text in items:
        racks[text].append(rack)
    return [
        f"{', '.join(names[:6])}{', ...' if len(names) > 6 else ''}"
        + (f" ({len(names)} racks)" if len(names) > 6 else "")
        + f": {text}"
        for text, names in racks.items()
    ]


def _psu_text(base: Baseline, lost: Counter[str], effect: Effect) -> None:
    """One line per kind of device whose PSUs were lost: PSUs left, their capacity against the draw."""
    kinds: dict[tuple[int, int, float, float], list[str]] = defaultdict(list)
    shelves = {s for rack in base.shelves.values() for s in rack}
    for device, count in sorted(lost.items()):
        if device in shelves:
            continue  # a shelf's PSUs are judged with the rack's shelves (_shelves)
        total, rating = base.psus[device]
        kinds[(total - count, total, rating, base.draw_w.get(device, 0.0))].append(device)
    short: list[str] = []
    enough: list[str] = []
    for (left, total, rating, draw), devices in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
        model = base.topo.devices[devices[0]].model
        state = "enough" if left * rating >= draw - 1e-9 else "short: throttles or stops"
        text = (
            f"{len(devices)} {model}: {left} of {total} PSUs ({left * rating / 1000:.1f} kW) for "
            f"{draw / 1000:.1f} kW planned ({state})"
        )
        (enough if state == "enough" else short).append(text)
    effect.power += short or enough[:1]
    if short and enough:
        effect.power.append(f"{len(enough)} other device model{'s' if len(enough) != 1 else ''}: enough PSUs left")


def _shelves(base: Baseline, rack: str, shelves: list[str], effect: Effect) -> str:
    """A rack fed through power shelves: the shelves left (whole and fed) against the load they carry, in words
    ('' when the failure does not touch them)."""
    fig = base.figures[rack]
    lost_psus = Counter(device for device, _ in effect.failure.psus)
    capacity = spare = 0.0
    left = 0
    for shelf in shelves:
        if shelf in effect.devices_down:
            continue
        total, rating = base.psus[shelf]
        fed = total - lost_psus[shelf]
        left += 1
        capacity += fed * rating / 1000
        spare += max(fed - 1, 0) * rating / 1000
    if (left == len(shelves) and not any(lost_psus[s] for s in shelves)) or not left:
        return ""  # untouched, or the whole rack fails
    load = fig.shelf_load_kw
    if load > capacity + 1e-9:
        effect.devices_down.update(base.on_shelves.get(rack, ()))
        state = "short: the trays stop"
    elif load > spare + 1e-9:
        state = "no PSU spare left"
    else:
        state = "enough, with a spare PSU per shelf"
    return (
        f"{load:.1f} kW of trays on {left} of {len(shelves)} power shelves ({capacity:.1f} kW; "
        f"{spare:.1f} kW with one PSU per shelf spare): {state}"
    )


def _cooling(base: Baseline, failure: Failure, effect: Effect) -> None:
    if failure.kind == "cdu":
        row = next(r for r in base.valid.blueprint.floor.rows if f"{r.name}-CDU" == failure.name)
        liquid = sum(base.figures[r].liquid_kw for r in failure.uncooled)
        effect.cooling.append(f"row {row.name}: {liquid:.1f} kW to coolant, 0 of its {row.cdu_kw:g} kW CDU left")
    texts = []
    for rack in sorted(failure.uncooled):
        fig = base.figures[rack]
        if not fig.liquid_kw:
            continue
        stopped = [d for d in base.rack_devices.get(rack, ()) if d in base.liquid]
        effect.devices_down.update(stopped)
        texts.append(
            (rack, f"{fig.liquid_kw:.1f} kW of liquid-cooled load without coolant: {len(stopped)} devices stop")
        )
    effect.cooling += by_text(texts)


def _fabric(base: Baseline, fabric: FabricBase, failure: Failure, down: set[str]) -> FabricEffect | None:
    """What `fabric` loses when `down` stop and the failure's links are cut; None when it is untouched."""
    links = base.topo.links
    dead = _dead_switches(fabric, failure, down)
    cut = {i for i in failure.links if links[i].fabric == fabric.name}
    if not (dead or cut or _ports_down(fabric, down)):
        return None
    cut_switch_links = {i for i in cut if links[i].tier in SWITCH_LINK_TIERS}
    lost_links = _switch_links_lost(fabric, dead, cut_switch_links)
    found = FabricEffect(
        fabric.name,
        switches_down=len(dead),
        links_down=len(lost_links),
        bisection_gbps=fabric.bisection_gbps,
        bisection_left_gbps=_bisection_left(fabric, dead, lost_links, links),
    )
    bad = dead | _cut_off_switches(fabric, dead, cut_switch_links, lost_links, links)
    for node, lost, ports in _nodes_losing_ports(fabric, down, cut, bad, links):
        _count_node(base, found, node, lost, ports, links)
    found.subnets_without_sm = _subnets_without_sm(fabric, down, cut, bad, links)
    return found


def _dead_switches(fabric: FabricBase, failure: Failure, down: set[str]) -> set[str]:
    return {s for s in failure.devices if s in fabric.switches} | {s for s in down if s in fabric.switches}


def _ports_down(fabric: FabricBase, down: set[str]) -> bool:
    """A subnet manager or a node with ports on the fabric is down."""
    return any(m in down for m in fabric.subnet_managers) or any(n in fabric.node_ports for n in down)


def _switch_links_lost(fabric: FabricBase, dead: set[str], cut_switch_links: set[int]) -> set[int]:
    """The switch-to-switch links cut, and those of the dead switches."""
    lost_links = set(cut_switch_links)
    for switch in dead:
        lost_links.update(index for _, index in fabric.neighbours.get(switch, ()))
    return lost_links


def _bisection_left(fabric: FabricBase, dead: set[str], lost_links: set[int], links: list[Any]) -> float:
    """The fabric's switch bisection without `lost_links` and the `dead` switches, Gb/s."""
    down_lost: dict[str, float] = defaultdict(float)
    up_lost: dict[str, float] = defaultdict(float)
    for index in lost_links:
        link = links[index]
        if link.tier == "leaf-spine":
            down_lost[link.b] += link.speed_gbps
        elif link.tier == "spine-core":
            up_lost[link.a] += link.speed_gbps
    return fabric.bisection_after(down_lost, up_lost, dead)


def _nodes_losing_ports(
    fabric: FabricBase, down: set[str], cut: set[int], bad: set[str], links: list[Any]
) -> Iterator[tuple[str, list[int], int]]:
    """Each running node, by name, with the ports it loses (cut, or on a `bad` leaf) and its ports on the
    fabric."""
    nodes = {n for leaf in bad for n in fabric.leaf_nodes.get(leaf, ())}
    nodes.update(links[i].a for i in cut if links[i].tier == "node-leaf")
    for node in sorted(nodes - down):
        ports = fabric.node_ports[node]
        lost = [i for i in ports if i in cut or links[i].b in bad]
        if lost:
            yield node, lost, len(ports)


def _count_node(base: Baseline, found: FabricEffect, node: str, lost: list[int], ports: int, links: list[Any]) -> None:
    found.ports_lost += len(lost)
    gpus = base.gpus.get(node, 0)
    if len(lost) == ports:
        found.nodes_cut_off += 1
        found.gpus_cut_off += gpus
        found.cut_nodes.add(node)
    else:
        found.nodes_degraded += 1
        found.gpus_degraded += gpus
        found.degraded_nodes.add(node)
    for i in lost:
        rail = links[i].rail
        if rail is not None:
            found.rails_lost[rail] = found.rails_lost.get(rail, 0) + 1


def _cut_off_switches(
    fabric: FabricBase, dead: set[str], cut: set[int], lost_links: set[int], links: list[Any]
) -> set[str]:
    """Switches still running but no longer in the part of their intact group that keeps the most node ports."""
    if not lost_links:
        return set()
    affected = {links[i].a for i in lost_links} | {links[i].b for i in lost_links}
    affected -= dead
    if not affected or still_joined(affected, fabric.component, fabric.neighbours, dead, cut):
        return set()
    survivor = _survivors(fabric, dead, cut, links)
    return {s for s, alive in survivor.items() if not alive}


def _survivors(fabric: FabricBase, dead: set[str], cut: set[int], base_links: list[Any]) -> dict[str, bool]:
    """Switch (of the intact groups the failure touches) -> whether it is still in the part of its intact group
    that keeps the most node ports (the other parts are cut off)."""
    hit = {fabric.component[s] for s in dead} | {
        fabric.component[s] for i in cut for s in (base_links[i].a, base_links[i].b) if s in fabric.component
    }
    after = components([s for s in fabric.switches if fabric.component[s] in hit], fabric.neighbours, dead, cut)
    weight: Counter[int] = Counter()
    for switch, number in after.items():
        weight[number] += fabric.leaf_ports.get(switch, 0)
    best: dict[int, int] = {}
    for switch, number in after.items():
        known = best.get(fabric.component[switch])
        if known is None or (weight[number], -number) > (weight[known], -known):
            best[fabric.component[switch]] = number
    return {switch: best[fabric.component[switch]] == number for switch, number in after.items()}


def _subnets_without_sm(fabric: FabricBase, down: set[str], cut: set[int], bad: set[str], links: list[Any]) -> int:
    """InfiniBand subnets (intact groups) that had a subnet manager and have no running one left on a port that
    still reaches them."""
    if fabric.technology != "infiniband" or not fabric.subnet_managers:
        return 0
    before: set[int] = set()
    after: set[int] = set()
    for manager in fabric.subnet_managers:
        for i in fabric.node_ports[manager]:
            group = fabric.component[links[i].b]
            before.add(group)
            if manager not in down and i not in cut and links[i].b not in bad:
                after.add(group)
    return len(before - after)


def _totals(base: Baseline, effect: Effect) -> None:
    """What the devices down and the fabrics' losses add up to: GPUs, racks, NVLink, Slurm, workloads."""
    lost_nodes = _lost_nodes(base, effect)
    effect.gpus_lost = _gpus_of(base, lost_nodes)
    effect.gpus_throttled = _gpus_of(base, effect.throttled, but=lost_nodes)
    effect.racks_down = _racks_down(base, effect.devices_down)
    broken = _broken_domains(base, lost_nodes)
    effect.domains_broken = len(broken)
    degraded = {n for found in effect.fabrics.values() for n in found.degraded_nodes}
    degraded |= _slowed_by_switch_trays(base, effect, lost_nodes, broken)
    effect.gpus_degraded = _gpus_of(base, degraded, but=lost_nodes)
    slurm = base.valid.blueprint.slurm
    if slurm is not None:
        _slurm(base, effect, slurm, lost_nodes, broken)
    _workloads(base, effect, lost_nodes)
    effect.management_lost = sum(len(base.oob_ports.get(d, ())) for d in effect.failure.devices)


def _gpus_of(base: Baseline, nodes: Iterable[str], but: Collection[str] = ()) -> int:
    return sum(base.gpus.get(n, 0) for n in nodes if n not in but)


def _lost_nodes(base: Baseline, effect: Effect) -> set[str]:
    """GPU nodes down or cut off from every port of a fabric."""
    lost = {n for n in effect.devices_down if n in base.gpus}
    for found in effect.fabrics.values():
        lost |= {n for n in found.cut_nodes if n in base.gpus}
    return lost


def _racks_down(base: Baseline, down: set[str]) -> list[str]:
    racks_hit = {base.topo.devices[d].rack for d in down}
    return sorted(r for r in racks_hit if r is not None and _rack_down(base, r, down))


def _broken_domains(base: Baseline, lost_nodes: set[str]) -> set[int]:
    """NVLink domains of several nodes with a node lost (a one-node domain goes with its node's GPUs)."""
    domains = [base.domain_of[n] for n in lost_nodes if n in base.domain_of]
    return {d for d in domains if len(base.topo.domains[d].nodes) > 1}


def _slowed_by_switch_trays(base: Baseline, effect: Effect, lost_nodes: set[str], broken: set[int]) -> set[str]:
    """The running GPU nodes of racks with an NVLink switch tray down: their domains are slowed (counted in
    `effect.domains_degraded`, the worst rack's trays in `nvlink_left` and `trays_left`)."""
    slowed: set[int] = set()
    members_slowed: set[str] = set()
    for rack, trays in base.switch_trays.items():
        left = sum(1 for t in trays if t not in effect.devices_down)
        if left == len(trays):
            continue
        members = [n for n in base.rack_devices.get(rack, ()) if n in base.gpus and n not in lost_nodes]
        slowed |= {base.domain_of[n] for n in members if n in base.domain_of} - broken
        if left / len(trays) < effect.nvlink_left:
            effect.nvlink_left, effect.trays_left = left / len(trays), (left, len(trays))
        members_slowed.update(members)
    effect.domains_degraded = len(slowed)
    return members_slowed


def _slurm(base: Baseline, effect: Effect, slurm: Slurm, lost_nodes: set[str], broken: set[int]) -> None:
    """Controllers left, nodes each partition loses, and the topology blocks or switches touched."""
    controllers = [c for c in slurm.controllers if c in base.topo.devices]
    effect.slurm_controllers = (sum(1 for c in controllers if c not in effect.devices_down), len(controllers))
    effect.partitions = _partitions_hit(base, slurm, lost_nodes)
    if slurm.topology == "block":
        effect.blocks = len(broken)
    elif slurm.topology == "tree":
        effect.blocks_are = "switches"
        effect.blocks = _compute_switches_down(base, effect)


def _partitions_hit(base: Baseline, slurm: Slurm, lost_nodes: set[str]) -> dict[str, int]:
    """Partition -> the nodes it loses, for those that lose any."""
    groups_lost = Counter(base.topo.devices[n].group for n in lost_nodes)
    hit: dict[str, int] = {}
    for partition in slurm.partitions:
        count = sum(n for group, n in groups_lost.items() if group in partition.node_groups)
        if count:
            hit[partition.name] = count
    return hit


def _compute_switches_down(base: Baseline, effect: Effect) -> int:
    return sum(f.switches_down for f in effect.fabrics.values() if base.fabrics[f.fabric].kind == "compute")


def _rack_down(base: Baseline, rack: str, down: set[str]) -> bool:
    """Every device of the rack that draws power is down."""
    devices = [d for d in base.rack_devices.get(rack, ()) if d in base.draw_w or d in base.gpus]
    return bool(devices) and all(d in down for d in devices)


def _workloads(base: Baseline, effect: Effect, lost: set[str]) -> None:
    """The workloads in blueprint order take the GPUs left in their node groups; one short of its GPUs no longer
    fits; a training job on a group with throttled nodes or degraded ports runs slower."""
    bp, catalog, topo = base.valid.blueprint, base.valid.catalog, base.topo
    if not bp.workloads:
        return
    left = Counter(base.group_gpus)
    for node in lost:
        left[topo.devices[node].group or ""] -= base.gpus[node]
    slowed_groups = {topo.devices[n].group for n in effect.throttled}
    for workload in bp.workloads:
        groups = compute_groups(bp, catalog, workload)
        need = workload.gpus if workload.kind == "training" else workload.replicas * workload.gpus_per_replica
        have = sum(left[g] for g in groups)
        if have < need:
            if workload.kind == "training":
                effect.workloads[workload.name] = f"no longer fits: needs {need} GPUs, {have} left"
            else:
                replicas = have // workload.gpus_per_replica
                effect.workloads[workload.name] = (
                    f"{replicas} of {workload.replicas} replicas left: misses its targets at "
                    f"{workload.concurrent_requests} concurrent requests"
                )
        elif any(g in slowed_groups for g in groups) and workload.kind == "training":
            effect.workloads[workload.name] = "runs at the pace of its throttled nodes"
        taken = min(need, have)
        for g in groups:
            used = min(left[g], taken)
            left[g] -= used
            taken -= used
