"""Spine and core tiers over a set of leaves, each sized by `spread.switch_count`.

Two tiers: the leaves of a plane share one spine group. Three tiers: a plane's leaves form pods, runs of
at most half a spine's ports or the rail groups of `spine_groups: rail-groups`; each pod gets its own
spines (half their ports down, half up, non-blocking); spine j of every pod joins core group j, unless
that takes more cores than the spine-core links need (then one group of the fewest). A plane is the
whole fabric, or one rail when the blueprint asks for `planes: per-rail`.
"""

from __future__ import annotations

from ..topology import Device
from .spread import spread, switch_count
from .wiring import FabricWiring


def rail_planes(leaves: list[Device], rails: int) -> list[list[Device]]:
    return [[leaf for leaf in leaves if leaf.rail == rail] for rail in range(1, rails + 1)]


def two_tier(wiring: FabricWiring, planes: list[list[Device]], uplinks: dict[str, int], spine_ports: int) -> None:
    model = wiring.fabric.spine
    assert model is not None
    for number, plane in enumerate(planes, 1):
        ups = [uplinks[leaf.name] for leaf in plane]
        spines = [wiring.switch("spine", model, plane=number) for _ in range(switch_count(ups, spine_ports))]
        if not wiring.mesh("leaf-spine", plane, spines, spread(ups, len(spines))):
            return


def pods_of(plane: list[Device], spine_down: int, rail_groups: bool) -> list[list[Device]]:
    """The leaves that share a set of spines: the rail groups (one rail of one scalable unit), or runs of
    at most `spine_down` leaves."""
    if rail_groups:
        groups: dict[tuple[int | None, int | None], list[Device]] = {}
        for leaf in plane:
            groups.setdefault((leaf.su, leaf.rail), []).append(leaf)
        return list(groups.values())
    size = min(len(plane), spine_down)
    return [plane[start : start + size] for start in range(0, len(plane), size)]


def three_tier(
    wiring: FabricWiring,
    planes: list[list[Device]],
    uplinks: dict[str, int],
    spine_ports: int,
    core_ports: int,
    rail_groups: bool = False,
) -> None:
    spine_model = wiring.fabric.spine
    assert spine_model is not None
    spine_down = spine_ports // 2
    pod_number = 0
    for number, plane in enumerate(planes, 1):
        by_position: list[list[Device]] = []
        spine_up: dict[str, int] = {}
        for pod in pods_of(plane, spine_down, rail_groups):
            pod_number += 1
            ups = [uplinks[leaf.name] for leaf in pod]
            spines = [
                wiring.switch("spine", spine_model, plane=number, pod=pod_number)
                for _ in range(switch_count(ups, spine_down))
            ]
            counts = spread(ups, len(spines))
            for leaf in pod:
                leaf.pod = pod_number
            if not wiring.mesh("leaf-spine", pod, spines, counts):
                return
            down = [0] * len(spines)
            for row in counts:
                for j, k in row:
                    down[j] += k
            for j, spine in enumerate(spines):
                spine_up[spine.name] = down[j]  # non-blocking: as many up as down
                if j == len(by_position):
                    by_position.append([])
                by_position[j].append(spine)
        if not core_tier(wiring, number, by_position, spine_up, core_ports):
            return


def core_tier(
    wiring: FabricWiring, plane: int, by_position: list[list[Device]], spine_up: dict[str, int], core_ports: int
) -> bool:
    """Cores over a plane's spines: a core group per spine position (spine j of every pod) where that takes
    no more cores than one group over all spines would; else that one group, sized by `switch_count` like
    every tier (a B200 design of 20 SU takes 80 cores for its 5,120 links, not 3 per position, 96; its pairs
    carry 0 or 1 link, no fat tree for OpenSM, as 32 uplinks over 3 cores is not either)."""
    model = wiring.fabric.core
    assert model is not None
    groups = [[spine_up[spine.name] for spine in group] for group in by_position]
    counts = [switch_count(ups, core_ports) for ups in groups]
    together = switch_count([u for ups in groups for u in ups], core_ports)
    if sum(counts) > together:
        by_position = [[spine for group in by_position for spine in group]]
        groups, counts = [[spine_up[spine.name] for spine in by_position[0]]], [together]
    for spines, ups, count in zip(by_position, groups, counts, strict=True):
        cores = [wiring.switch("core", model, plane=plane) for _ in range(count)]
        if not wiring.mesh("spine-core", spines, cores, spread(ups, len(cores))):
            return False
    return True
