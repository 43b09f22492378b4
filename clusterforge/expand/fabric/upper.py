"""Spine and core tiers over a set of leaves, each sized by `spread.switch_count`.

Two tiers: the leaves of a plane share one spine group. Three tiers: a plane's leaves form pods of at
most half a spine's ports; each pod gets its own spines (half their ports down, half up, non-blocking);
spine j of every pod joins core group j. A plane is the whole fabric, or one rail when the blueprint
asks for `planes: per-rail`.
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


def three_tier(
    wiring: FabricWiring, planes: list[list[Device]], uplinks: dict[str, int], spine_ports: int, core_ports: int
) -> None:
    spine_model, core_model = wiring.fabric.spine, wiring.fabric.core
    assert spine_model is not None and core_model is not None
    spine_down = spine_ports // 2
    pod_number = 0
    for number, plane in enumerate(planes, 1):
        pod_size = min(len(plane), spine_down)
        by_position: list[list[Device]] = []
        spine_up: dict[str, int] = {}
        for start in range(0, len(plane), pod_size):
            pod_number += 1
            pod = plane[start : start + pod_size]
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
            for j, spine in enumerate(spines):
                spine_up[spine.name] = sum(row[j] for row in counts)  # non-blocking: as many up as down
                if j == len(by_position):
                    by_position.append([])
                by_position[j].append(spine)
        for group in by_position:
            ups = [spine_up[spine.name] for spine in group]
            cores = [wiring.switch("core", core_model, plane=number) for _ in range(switch_count(ups, core_ports))]
            if not wiring.mesh("spine-core", group, cores, spread(ups, len(cores))):
                return
