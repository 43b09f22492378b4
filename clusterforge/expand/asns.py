"""BGP autonomous system numbers of the Ethernet fabrics' switches (eBGP, RFC 7938: the spines of a fabric
share an ASN, each leaf has its own), from the private 4-byte range (RFC 6996): fabric k (blueprint order)
uses ASN_BASE + 1000 k and up, its spines + 1, its cores + 2, leaf n + 100 + n.

With a lock file a switch keeps the ASN it holds; a new switch takes its fabric's numbers (its fabric found by
the ASNs the lock holds for the fabric's other switches, so reordering fabrics moves none), a leaf the next
number its fabric does not hold when its own is taken.
"""

from __future__ import annotations

from ..model.fabric import LeafSpineFabric
from .context import ExpandContext
from .hold import held_devices
from .topology import Tier, Topology

ASN_BASE = 4_200_000_000
FABRIC_STEP = 1000
LEAF_OFFSET = 100
ROUTED_TIERS = frozenset({"leaf-spine", "spine-core"})
"""Links that run BGP (unnumbered): a switch with one has an ASN."""


def routed_switches(ctx: ExpandContext) -> dict[str, list[str]]:
    """Ethernet leaf/spine fabric -> its switches with a routed link, in tier order (leaves, spines, cores)."""
    topo = ctx.topo
    routed = {end for link in topo.links if link.tier in ROUTED_TIERS for end in (link.a, link.b)}
    out: dict[str, list[str]] = {}
    for name, fabric in ctx.bp.fabrics.items():
        if isinstance(fabric, LeafSpineFabric) and fabric.technology == "ethernet" and name in topo.fabrics:
            switches = [s.name for tier in ("leaf", "spine", "core") for s in topo.switches(name, tier)]
            out[name] = [s for s in switches if s in routed]
    return {name: switches for name, switches in out.items() if switches}


def assign_asns(ctx: ExpandContext) -> None:
    """Every routed switch's ASN into `topo.asns`: the lock file's, else its fabric's number for it."""
    topo = ctx.topo
    lock = ctx.keep.lock
    held = {k: int(v) for k, v in lock.section("asns").items()} if lock is not None else {}
    reserved = held_devices(ctx.keep)
    taken = {asn for switch, asn in held.items() if switch in topo.devices or switch in reserved}
    position = {name: i for i, name in enumerate(ctx.bp.fabrics)}
    for name, switches in routed_switches(ctx).items():
        kept = [held[s] for s in switches if s in held]
        base = _base(kept[0]) if kept else ASN_BASE + FABRIC_STEP * position[name]
        for switch in switches:
            if switch in held:
                topo.asns[switch] = held[switch]
                continue
            asn = _fabric_asn(topo, switch, base, held)
            while asn in taken and topo.devices[switch].role == "leaf" and asn < base + FABRIC_STEP - 1:
                asn += 1
            topo.asns[switch] = asn
            taken.add(asn)


def _base(asn: int) -> int:
    return ASN_BASE + (asn - ASN_BASE) // FABRIC_STEP * FABRIC_STEP


def _fabric_asn(topo: Topology, switch: str, base: int, held: dict[str, int]) -> int:
    device = topo.devices[switch]
    if device.role == "leaf":
        return base + LEAF_OFFSET + device.index
    tier: Tier = "spine" if device.role == "spine" else "core"
    shared = next((held[s.name] for s in topo.switches(device.group or "", tier) if s.name in held), None)
    return shared if shared is not None else base + (1 if device.role == "spine" else 2)
