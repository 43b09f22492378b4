"""Subnet managers (UFM) kept in the node slot the lock file holds them in, on a rail-optimized fabric.

A subnet manager takes the free node slots of the last scalable unit (leaves.place_managers), slot by slot,
rail by rail. When the group grows, a new node would take that slot first and push the manager into the next
unit. With a lock file, the slots its managers held are kept: the nodes the lock holds fill as many slots as
before, so the free slots and which manager port took which (slot, rail) follow as in the render that wrote
the lock; a stand-in books each such slot right after those nodes (new nodes come after it), and each manager
port is wired on the port the stand-in booked for its rail: the port the lock holds, unless the blueprint lays the
scalable units out otherwise (another `scalable_unit`), when it is a free slot of the same unit.
"""

from __future__ import annotations

from ..context import ExpandContext
from ..topology import Device, Link
from .endpoints import HOLE_ROLE, Endpoint
from .wiring import FabricWiring

Kept = list[tuple[str, Endpoint, str, float, int]]
"""(stand-in's name, manager, manager port, its speed, rail) of each manager port kept in a slot."""


def keep_manager_slots(
    ctx: ExpandContext,
    network: str,
    nodes: list[Endpoint],
    ordered: list[Endpoint],
    managers: list[Endpoint],
    slots: tuple[int, int],
) -> tuple[list[Endpoint], Kept]:
    """`nodes` with a stand-in for each slot the lock's managers held, and the manager ports to wire in them;
    `nodes` as given, and no port, when the lock holds no manager port on a leaf of `network`. `ordered`: the
    nodes and managers in the lock's order (endpoints.py); `slots`: nodes per scalable unit, and rails."""
    su_size, rails = slots
    lock = ctx.keep.lock
    ports = lock.section("ports") if lock is not None else {}
    leaf = f"{network}-leaf"
    held = [(m, port, speed) for m in managers for port, speed in m.ports]
    if not held or not all(ports.get(f"{network}/{m.device.name}:{port}", "").startswith(leaf) for m, port, _ in held):
        return nodes, []
    before = next(j for j, e in enumerate(ordered) if e.device.role == "subnet-manager")  # nodes before them
    in_slots = held[: (-before % su_size) * rails]
    if not in_slots:
        return nodes, []
    node_speed = next((e.ports[0][1] for e in nodes if e.ports), in_slots[0][2])
    stand_ins: list[Endpoint] = []
    kept: Kept = []
    for start in range(0, len(in_slots), rails):
        slot = in_slots[start : start + rails]
        name = f"(slot of {slot[0][0].device.name})"
        speeds = [speed for _, _, speed in slot] + [node_speed] * (rails - len(slot))
        stand_ins.append(
            Endpoint(Device(name, "node", "", HOLE_ROLE, 0), [(f"port{r}", s) for r, s in enumerate(speeds, 1)])
        )
        kept += [(name.strip("()"), m, port, speed, rail) for rail, (m, port, speed) in enumerate(slot, 1)]
    return nodes[:before] + stand_ins + nodes[before:], kept


def wire_kept_managers(wiring: FabricWiring, kept: Kept, managers: list[Endpoint]) -> list[Endpoint]:
    """Each kept manager port wired on the port its stand-in booked for its rail: the port the lock holds while
    the scalable units are laid out as before (else a free slot of the same unit, reported as re-patched like
    any port); the managers with the ports left to place (leaves.place_managers)."""
    placed: set[tuple[str, str]] = set()
    for owner, manager, port, speed, rail in kept:
        booked = wiring.ctx.held_ports.get(owner, [])
        if len(booked) < rail:
            continue
        switch, switch_port = booked[rail - 1]
        link_speed = min(speed, wiring.down_speed)
        wiring.topo.add_link(
            Link(wiring.name, "node-leaf", manager.device.name, port, switch, switch_port, link_speed, rail)
        )
        placed.add((manager.device.name, port))
    rest = [Endpoint(m.device, [p for p in m.ports if (m.device.name, p[0]) not in placed]) for m in managers]
    return [m for m in rest if m.ports]
