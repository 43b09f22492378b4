"""What attaches to a leaf/spine fabric: each device with its ports of the fabric's role, in rail order."""

from __future__ import annotations

from dataclasses import dataclass

from ... import codes
from ...model.fabric import LeafSpineFabric
from ..context import ExpandContext
from ..hold import held_devices
from ..identity import port_order
from ..locked_order import Hole, Slots, locked_order
from ..topology import Device

PORT_ROLE = {"compute": "compute", "storage": "storage", "inband": "inband"}
HOLE_ROLE = "removed"
"""The role of the stand-in for a removed device's ports (locked_order.Hole): wiring books them, links none."""


@dataclass
class Endpoint:
    device: Device
    ports: list[tuple[str, float]]
    """(port name, speed) in rail order."""


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
    slots: Slots[Endpoint] = Slots(
        lambda e: [f"{e.device.name}:{port}" for port, _ in e.ports], lambda key: key.partition(":")[0]
    )
    ordered = locked_order(endpoints, slots, patched, held_devices(ctx.keep))
    return _stood_in(ordered)


def _stood_in(ordered: list[Endpoint | Hole]) -> list[Endpoint]:
    """Each hole as a stand-in at the speed of the node before it (the first node's when none is): a removed
    node's ports ran at its group's speed, and its neighbours are mostly of its group."""
    speeds: list[float] = []
    speed = next(item.ports[0][1] for item in ordered if isinstance(item, Endpoint) and item.ports)
    for item in ordered:
        if isinstance(item, Endpoint) and item.ports:
            speed = item.ports[0][1]
        speeds.append(speed)
    return [_stand_in(item, s) if isinstance(item, Hole) else item for item, s in zip(ordered, speeds, strict=True)]


def _stand_in(hole: Hole, speed: float) -> Endpoint:
    device = Device(f"({hole.owner})", "node", "", HOLE_ROLE, 0)
    return Endpoint(device, [(f"port{k}", speed) for k in range(1, hole.width + 1)])


def split_managers(fabric: LeafSpineFabric, endpoints: list[Endpoint]) -> tuple[list[Endpoint], list[Endpoint]]:
    """(nodes, subnet managers): UFM and other subnet-manager hosts are placed apart on the compute fabric."""
    if fabric.kind != "compute":
        return endpoints, []
    managers = [e for e in endpoints if e.device.role == "subnet-manager"]
    return [e for e in endpoints if e.device.role != "subnet-manager"], managers
