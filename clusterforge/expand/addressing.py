"""IPv4 addresses per network, handed out in a fixed order from each pool.

The first usable address of every pool is kept for the gateway. Compute fabrics get one address per
node port (one interface per rail); storage and in-band networks one per node (the ports are bonded);
the out-of-band network one per BMC and per switch management port.
"""

from __future__ import annotations

from ipaddress import IPv4Address

from .. import codes
from ..model.fabric import FabricBase, OobFabric
from .context import ExpandContext
from .topology import Device


def interfaces(ctx: ExpandContext, name: str, fabric: FabricBase) -> list[str]:
    """Interface keys ('host' or 'host:port') that need an address on `name`, in address order."""
    topo = ctx.topo
    order = {d.name: i for i, d in enumerate(topo.devices.values())}
    if isinstance(fabric, OobFabric):
        hosts = sorted({link.a for link in topo.fabric_links(name, "oob")}, key=order.__getitem__)
        switches = [d.name for d in topo.devices.values() if d.kind == "switch" and d.group == name]
        return hosts + switches
    per_port = getattr(fabric, "kind", "") == "compute"
    keys: list[str] = []
    seen: set[str] = set()
    for link in topo.fabric_links(name, "node-leaf"):
        node: Device = topo.devices[link.a]
        key = f"{node.name}:{link.a_port}" if per_port else node.name
        if key not in seen:
            seen.add(key)
            keys.append(key)
    return sorted(keys, key=lambda k: order[k.split(":")[0]])  # stable: ports keep rail order


def assign_addresses(ctx: ExpandContext) -> None:
    for name, fabric in ctx.bp.fabrics.items():
        keys = interfaces(ctx, name, fabric)
        pool = fabric.ipv4_pool
        first = int(pool.network_address) + 2  # network address, then the gateway
        last = int(pool.broadcast_address) - 1 if pool.prefixlen < 31 else int(pool.broadcast_address)
        available = max(0, last - first + 1)
        if len(keys) > available:
            ctx.error(codes.POOL_TOO_SMALL, f"network '{name}': pool {pool} has {available} host addresses, "
                      f"{len(keys)} are needed", ("fabrics", name, "ipv4_pool"),
                      f"use a pool of at least /{_prefix_for(len(keys) + 3)}")
            continue
        for offset, key in enumerate(keys):
            ctx.topo.assign_address(name, key, IPv4Address(first + offset))


def _prefix_for(addresses: int) -> int:
    return 32 - max(0, (addresses - 1).bit_length())
