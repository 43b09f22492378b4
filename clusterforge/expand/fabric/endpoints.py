"""What attaches to a leaf/spine fabric: each device with its ports of the fabric's role, in rail order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import codes
from ...model.fabric import LeafSpineFabric
from ..context import ExpandContext
from ..identity import LATE, port_order
from ..topology import Device

PORT_ROLE = {"compute": "compute", "storage": "storage", "inband": "inband"}


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
    """With a lock file: the nodes it holds on `network` first, in the order of the leaf ports they were patched
    to (the order they were wired in, so each gets its leaf and port back), then the new ones in blueprint
    order; the blueprint's order without one (and, where nothing changed, the same order)."""
    patched = port_order(ctx.keep.lock, network)
    if not patched:
        return endpoints

    def first_port(endpoint: Endpoint) -> tuple[Any, ...]:
        name = endpoint.device.name
        return min((patched.get(f"{name}:{port}", LATE) for port, _ in endpoint.ports), default=LATE)

    ranked = sorted(range(len(endpoints)), key=lambda i: (first_port(endpoints[i]), i))
    return [endpoints[i] for i in ranked]


def split_managers(fabric: LeafSpineFabric, endpoints: list[Endpoint]) -> tuple[list[Endpoint], list[Endpoint]]:
    """(nodes, subnet managers): UFM and other subnet-manager hosts are placed apart on the compute fabric."""
    if fabric.kind != "compute":
        return endpoints, []
    managers = [e for e in endpoints if e.device.role == "subnet-manager"]
    return [e for e in endpoints if e.device.role != "subnet-manager"], managers
