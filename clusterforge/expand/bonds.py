"""The bond of each node on its storage or in-band leaf (`bond<n>` in the switch configuration, the bond's
MLAG ID or its EVPN Ethernet segment's local ID), kept by the lock file (its `bonds` section): a renumbered
bond flaps the host's LACP bond when the configuration is applied.

A node's number is the place of its port on the leaf (on a pair, on the pair's first leaf, so both leaves
number alike), each cage counted as split for the slowest node speed on the leaf: nodes of one speed filling
a leaf in order are bond1, bond2, ..., and a node removed before another leaves a gap. With a lock file a node
keeps the number the lock holds, so a node of a new, slower speed joining the leaf (which splits the count of
every cage finer) renumbers none; a new node takes its place's number when free, else the next free one.
"""

from __future__ import annotations

from collections import defaultdict

from ..catalog import Switch
from ..model.fabric import LeafSpineFabric
from .context import ExpandContext
from .hold import held_devices
from .ports import native_names, per_native, port_group_of
from .topology import Device, Topology


def lan_leaves(ctx: ExpandContext) -> list[Device]:
    """The leaves of every Ethernet storage or in-band network (those that give nodes a bond)."""
    topo = ctx.topo
    return [
        leaf
        for name, fabric in ctx.bp.fabrics.items()
        if isinstance(fabric, LeafSpineFabric)
        and fabric.technology == "ethernet"
        and fabric.kind != "compute"
        and name in topo.fabrics
        for leaf in topo.switches(name, "leaf")
    ]


def anchor_of(topo: Topology, leaf: Device) -> Device:
    """The leaf whose ports number the bonds: the pair's first (odd) leaf, else the leaf itself."""
    if leaf.pair is None or leaf.index % 2:
        return leaf
    peers = topo.switches(leaf.group or "", "leaf")
    return next((s for s in peers if s.pair == leaf.pair and s.name != leaf.name), leaf)


def node_ports(topo: Topology, leaf: str) -> dict[str, list[tuple[str, float]]]:
    """Node -> its (port on `leaf`, speed)."""
    members: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for link in topo.links_of(leaf):
        if link.tier == "node-leaf":
            node, port = (link.a, link.b_port) if link.b == leaf else (link.b, link.a_port)
            members[node].append((port, link.speed_gbps))
    return members


def assign_bonds(ctx: ExpandContext) -> None:
    """Every node's bond number on each storage or in-band leaf (its pair's first) into `topo.bonds`."""
    topo = ctx.topo
    lock = ctx.keep.lock
    held: dict[str, dict[str, int]] = defaultdict(dict)
    if lock is not None:
        for key, value in lock.section("bonds").items():
            leaf_name, _, node = key.rpartition("/")
            held[leaf_name][node] = int(value)
    reserved = held_devices(ctx.keep)
    leaves = lan_leaves(ctx)
    for leaf in leaves:
        anchor = anchor_of(topo, leaf)
        if anchor.name in topo.bonds:
            continue
        on_anchor = node_ports(topo, anchor.name)
        on_other = node_ports(topo, leaf.name) if anchor is not leaf else {}
        speeds = {speed for ports in on_anchor.values() for _, speed in ports}
        places = {
            node: min(_place(ctx, anchor, port, speeds) for port, _ in on_anchor.get(node) or on_other[node])
            for node in {*on_anchor, *on_other}
        }
        kept = held.get(anchor.name, {})
        taken = {n for node, n in kept.items() if node in places or node in reserved}
        numbers: dict[str, int] = {}
        for node in sorted(places, key=lambda n: (places[n], n)):
            if node in kept:
                numbers[node] = kept[node]
                continue
            number = places[node]
            while lock is not None and number in taken:
                number += 1
            numbers[node] = number
            taken.add(number)
        topo.bonds[anchor.name] = numbers


def _place(ctx: ExpandContext, switch: Device, port: str, speeds: set[float]) -> int:
    """1 + the ports of the port's group before `port`, each cage counted as split for the slowest of the
    nodes' `speeds` on the leaf (so nodes of one speed filling the leaf in order are numbered 1, 2, 3...)."""
    model = ctx.valid.catalog.get(switch.model, Switch)
    group = port_group_of(model, port) if model is not None else None
    if group is None:
        return 0
    finest = max((per_native(group, speed) for speed in speeds), default=1)
    base, mark, sub = port.rpartition("s")
    names = native_names(group.name, group.count, group.cages)
    if mark and sub.isdigit() and base in names:
        return names.index(base) * finest + int(sub) + 1
    return names.index(port) * finest + 1 if port in names else 0
