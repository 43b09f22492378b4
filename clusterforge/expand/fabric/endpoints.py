"""What attaches to a leaf/spine fabric: each device with its ports of the fabric's role, in rail order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import codes
from ...model import OobFabric
from ...model.fabric import LeafSpineFabric
from ..context import ExpandContext
from ..hold import held_devices
from ..identity import port_order, uplinks_onto
from ..locked_order import Hole, Slots, locked_order
from ..ports import uplink_group
from ..topology import Device

PORT_ROLE = {"compute": "compute", "storage": "storage", "inband": "inband"}
HOLE_ROLE = "removed"
"""The role of the stand-in for a removed device's ports (locked_order.Hole): wiring books them, links none."""


@dataclass
class Endpoint:
    device: Device
    ports: list[tuple[str, float]]
    """(port name, speed) in rail order."""
    leaf: str | None = None
    """For a stand-in: the leaf the lock holds its port on (a leaf pair puts it on that side)."""


def endpoints_for(ctx: ExpandContext, name: str, fabric: LeafSpineFabric) -> list[Endpoint]:
    role = PORT_ROLE[fabric.kind]
    listed = fabric.node_groups
    endpoints: list[Endpoint] = []
    for group in ctx.bp.node_groups:
        if listed is not None and group.name not in listed:
            continue
        groups = ctx.server(group.model).port_groups(role)  # type: ignore[arg-type]
        if not groups:
            if listed is not None:
                j = listed.index(group.name)
                ctx.error(
                    codes.NO_PORTS_OF_ROLE,
                    f"node group '{group.name}' ({group.model}) has no {role} ports for fabric '{name}'",
                    ("fabrics", name, "node_groups", j),
                )
            continue
        ports = [(f"{pg.name}{i}", pg.speed_gbps) for pg in groups for i in range(1, pg.count + 1)]
        endpoints += [Endpoint(node, ports) for node in ctx.topo.devices_of("node", group=group.name)]
    return _locked_first(ctx, endpoints, name)


def _locked_first(ctx: ExpandContext, endpoints: list[Endpoint], network: str) -> list[Endpoint]:
    """With a lock file: the nodes it holds on `network` in the order of the leaf ports they were patched to
    (the order they were wired in, so each gets its leaf and port back), a stand-in where a removed node was
    (locked_order.py), then the new ones in blueprint order; the blueprint's order without one."""
    patched = port_order(ctx.keep.lock, network)
    if not patched or not endpoints:
        return endpoints
    uplinks = uplinks_onto(ctx.keep.lock, network)  # their leaf ports kept for them (oob.py wires them)
    patched = {**patched, **uplinks} if uplinks else patched
    fabric = ctx.bp.fabrics[network]
    if isinstance(fabric, LeafSpineFabric) and fabric.paired:
        patched = {key: _by_pair(where) for key, where in patched.items()}
    slots: Slots[Endpoint] = Slots(
        lambda e: [f"{e.device.name}:{port}" for port, _ in e.ports], lambda key: key.partition(":")[0]
    )
    uplinkers = {key.partition(":")[0] for key in uplinks}
    ordered = locked_order(endpoints, slots, patched, held_devices(ctx.keep) | uplinkers)
    owners = {item.owner for item in ordered if isinstance(item, Hole)}
    if not owners:
        return [item for item in ordered if isinstance(item, Endpoint)]
    speeds = dict.fromkeys(uplinkers, _uplink_speed(ctx, network))
    return _stood_in(ordered, speeds, _first_leaves(ctx, network, owners))


def _first_leaves(ctx: ExpandContext, network: str, owners: set[str]) -> dict[str, str]:
    """Each of `owners` (devices gone, uplinks) -> the leaf of `network` the lock holds its first port on."""
    assert ctx.keep.lock is not None
    leaf = f"{network}-leaf"
    found: dict[str, tuple[str, str]] = {}
    for key, value in ctx.keep.lock.section("ports").items():
        owner = key.partition("/")[2].partition(":")[0]
        if owner in owners and value.startswith(leaf) and (owner not in found or key < found[owner][0]):
            found[owner] = (key, value.partition(":")[0])
    return {owner: where for owner, (_, where) in found.items()}


def _by_pair(where: tuple[Any, ...]) -> tuple[Any, ...]:
    """A port's sort key on a leaf pair: the pair's number for the leaf's, as the two leaves fill side by side
    (a node's first port is on the first leaf; a stand-in for one port may be on the second)."""
    switch, port = where
    if len(switch) > 1 and isinstance(switch[1], int):
        switch = (switch[0], (switch[1] + 1) // 2, *switch[2:])
    return (switch, port)


def _uplink_speed(ctx: ExpandContext, network: str) -> float:
    """The speed of the out-of-band switches' uplinks onto `network`'s leaves."""
    models = [f.switch for f in ctx.bp.fabrics.values() if isinstance(f, OobFabric) and f.uplink_to == network]
    groups = [uplink_group(ctx.switch(model)) for model in models]
    return min((g.speed_gbps for g in groups if g is not None), default=0.0)


def _stood_in(ordered: list[Endpoint | Hole], fixed: dict[str, float], leaves: dict[str, str]) -> list[Endpoint]:
    """Each hole as a stand-in: an uplink's at its speed (`fixed`), a removed node's at the speed of the node
    before it (the first node's when none is): its ports ran at its group's speed, and its neighbours are
    mostly of its group."""
    speeds: list[float] = []
    speed = next(item.ports[0][1] for item in ordered if isinstance(item, Endpoint) and item.ports)
    for item in ordered:
        if isinstance(item, Endpoint) and item.ports:
            speed = item.ports[0][1]
        speeds.append(fixed.get(item.owner) or speed if isinstance(item, Hole) else speed)
    return [
        _stand_in(item, s, leaves.get(item.owner)) if isinstance(item, Hole) else item
        for item, s in zip(ordered, speeds, strict=True)
    ]


def _stand_in(hole: Hole, speed: float, leaf: str | None) -> Endpoint:
    device = Device(f"({hole.owner})", "node", "", HOLE_ROLE, 0)
    return Endpoint(device, [(f"port{k}", speed) for k in range(1, hole.width + 1)], leaf)


def split_managers(fabric: LeafSpineFabric, endpoints: list[Endpoint]) -> tuple[list[Endpoint], list[Endpoint]]:
    """(nodes, subnet managers): UFM and other subnet-manager hosts are placed apart on the compute fabric."""
    if fabric.kind != "compute":
        return endpoints, []
    managers = [e for e in endpoints if e.device.role == "subnet-manager"]
    return [e for e in endpoints if e.device.role != "subnet-manager"], managers
