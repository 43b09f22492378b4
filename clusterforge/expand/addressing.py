"""IPv4 addresses per network, handed out in a fixed order from each pool.

Storage and in-band networks get one address per node (the ports are bonded), the out-of-band network
one per BMC and per switch management port (per port on a device with several); the first usable
address of their pool is kept for the gateway. A dual-homed network with several leaf pairs gives each pair
its own block of the pool (the pair routes it and holds its first address as the gateway), so a bond's subnet
ends at its pair.

Compute fabrics get one address per node port in a subnet of its own rail, so no two ports of a host
share a subnet (a shared subnet means ARP flux: replies leave by any NIC, RDMA-CM binds the wrong one).
The pool is split into equal rail blocks (rail k takes block k); on Ethernet each rail block is split
again into one routed segment per leaf of the rail (the leaf holds the segment's first address as
gateway; hosts reach the rest of the rail through it), on InfiniBand the rail block is one IPoIB subnet.
With `rail_addressing: per-port` each Ethernet port gets a /31 of its rail block with its leaf port
(the leaf the even address, the host the odd one, RFC 3021).
"""

from __future__ import annotations

from collections import defaultdict
from ipaddress import IPv4Address, IPv4Network

from .. import codes
from ..model.fabric import FabricBase, OobFabric
from .context import ExpandContext
from .topology import Device, LanSegment, RailSegment

RESERVED_PER_SUBNET = 3
"""Network address, gateway and broadcast address."""
PAIR_SVIS = 2
"""A leaf pair's own addresses in its subnet (the top two below broadcast), beside the shared gateway."""


def interfaces(ctx: ExpandContext, name: str, fabric: FabricBase) -> list[str]:
    """Interface keys ('host' or 'host:port') that need an address on `name`, in address order."""
    topo = ctx.topo
    order = {d.name: i for i, d in enumerate(topo.devices.values())}
    if isinstance(fabric, OobFabric):
        ports: dict[str, list[str]] = defaultdict(list)
        for link in topo.fabric_links(name, "oob"):
            ports[link.a].append(link.a_port)
        hosts = sorted(ports, key=order.__getitem__)
        switches = [d.name for d in topo.devices.values() if d.kind == "switch" and d.group == name]
        # one address per device, or per port where a device has several (NVLink switch tray: BMC and NVOS)
        return [k for h in hosts for k in ([h] if len(ports[h]) == 1 else [f"{h}:{p}" for p in ports[h]])] + switches
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
        _assign_loopbacks(ctx, name, fabric)
        if getattr(fabric, "kind", "") == "compute":
            _assign_rails(ctx, name, fabric)
            continue
        if getattr(fabric, "kind", "") in ("storage", "inband"):
            _assign_lans(ctx, name, fabric)
            continue
        keys = interfaces(ctx, name, fabric)
        pool = fabric.ipv4_pool
        first = int(pool.network_address) + 2  # network address, then the gateway
        last = int(pool.broadcast_address) - 1 if pool.prefixlen < 31 else int(pool.broadcast_address)
        available = max(0, last - first + 1)
        if len(keys) > available:
            _too_small(
                ctx,
                name,
                pool,
                f"{available} host addresses, {len(keys)} are needed",
                _prefix_for(len(keys) + RESERVED_PER_SUBNET),
            )
            continue
        for offset, key in enumerate(keys):
            ctx.topo.assign_address(name, key, IPv4Address(first + offset))


def _assign_loopbacks(ctx: ExpandContext, name: str, fabric: FabricBase) -> None:
    """One /32 per switch of the fabric from its loopback pool, leaves first, from the pool's first address."""
    pool: IPv4Network | None = getattr(fabric, "loopback_pool", None)
    if pool is None:
        return
    switches = [s for tier in ("leaf", "spine", "core") for s in ctx.topo.switches(name, tier)]
    if len(switches) > pool.num_addresses - 2:
        ctx.error(
            codes.POOL_TOO_SMALL,
            f"network '{name}': loopback pool {pool} has {max(pool.num_addresses - 2, 0)} addresses, "
            f"{len(switches)} switches need one",
            ("fabrics", name, "loopback_pool"),
            f"use a pool of at least /{_prefix_for(len(switches) + 2)}",
        )
        return
    for offset, switch in enumerate(switches, 1):
        ctx.topo.loopbacks[switch.name] = pool.network_address + offset


def _assign_lans(ctx: ExpandContext, name: str, fabric: FabricBase) -> None:
    """One address per node; per leaf pair a block of the pool when the fabric has several pairs."""
    topo = ctx.topo
    pair_of = {leaf.name: leaf.pair for leaf in topo.switches(name, "leaf")}
    by_pair: dict[int | None, list[str]] = defaultdict(list)
    for node in interfaces(ctx, name, fabric):
        first = next(link.b for link in topo.links_of(node) if link.fabric == name and link.tier == "node-leaf")
        by_pair[pair_of.get(first)].append(node)
    pool = fabric.ipv4_pool
    pairs = sorted(p for p in by_pair if p is not None)
    bits = _bits(max(pairs)) if len(pairs) > 1 else 0
    biggest = max((len(nodes) for nodes in by_pair.values()), default=0)
    reserved = RESERVED_PER_SUBNET + (PAIR_SVIS if pairs else 0)
    if pool.prefixlen + bits > min(_prefix_for(biggest + reserved), 30):
        per = f" per leaf pair ({2**bits} pair blocks)" if bits else ""
        _too_small(
            ctx,
            name,
            pool,
            f"{max(0, 2 ** (32 - pool.prefixlen - bits) - reserved)} host addresses{per}, {biggest} are needed",
            max(_prefix_for(biggest + reserved) - bits, 0),
        )
        return
    blocks = list(pool.subnets(prefixlen_diff=bits))
    for pair, nodes in by_pair.items():
        subnet = blocks[pair - 1] if bits and pair is not None else pool
        lan = LanSegment(subnet, subnet.network_address + 1, pair)
        for offset, node in enumerate(nodes, 2):
            topo.assign_address(name, node, subnet.network_address + offset)
            topo.lans[name][node] = lan


def _rail_ports(ctx: ExpandContext, name: str) -> dict[int, dict[str, list[str]]]:
    """rail -> leaf -> port keys, in address order. A port without a rail (a subnet manager on a reserved
    port) counts as the rail of its position among the host's ports."""
    topo = ctx.topo
    order = {d.name: i for i, d in enumerate(topo.devices.values())}
    position: dict[str, int] = defaultdict(int)
    rails: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    links = sorted(topo.fabric_links(name, "node-leaf"), key=lambda link: order[link.a])
    for link in links:
        position[link.a] += 1
        rail = link.rail if link.rail is not None else position[link.a]
        rails[rail][link.b].append(f"{link.a}:{link.a_port}")
    return rails


def _assign_rails(ctx: ExpandContext, name: str, fabric: FabricBase) -> None:
    rails = _rail_ports(ctx, name)
    if not rails:
        return
    pool = fabric.ipv4_pool
    if getattr(fabric, "rail_addressing", "per-rail") == "per-port":
        _assign_port_pairs(ctx, name, pool, rails)
        return
    routed = getattr(fabric, "technology", "") == "ethernet"
    # rail -> its segments' ports: one per leaf (routed Ethernet) or the whole rail (InfiniBand)
    segments = {
        rail: [leaves[leaf] for leaf in sorted(leaves)]
        if routed
        else [[key for leaf in sorted(leaves) for key in leaves[leaf]]]
        for rail, leaves in rails.items()
    }
    rail_bits = _bits(max(rails))
    segment_bits = _bits(max(len(parts) for parts in segments.values()))
    biggest = max(len(ports) for parts in segments.values() for ports in parts)
    needed_prefix = min(_prefix_for(biggest + RESERVED_PER_SUBNET), 30) - rail_bits - segment_bits
    if pool.prefixlen > needed_prefix:
        per = (
            f"leaf segment ({2**rail_bits} rail blocks of {2**segment_bits})"
            if routed
            else f"rail ({2**rail_bits} rail blocks)"
        )
        _too_small(
            ctx,
            name,
            pool,
            f"{2 ** (32 - pool.prefixlen - rail_bits - segment_bits)} addresses per {per}, "
            f"{biggest + RESERVED_PER_SUBNET} are needed",
            max(needed_prefix, 0),
        )
        return
    blocks = list(pool.subnets(prefixlen_diff=rail_bits))
    addresses, port_segments = ctx.topo.addresses[name], ctx.topo.segments[name]
    for rail, parts in sorted(segments.items()):
        block = blocks[rail - 1]
        for subnet, ports in zip(block.subnets(prefixlen_diff=segment_bits), parts, strict=False):
            segment = RailSegment(rail, subnet, block, subnet.network_address + 1 if routed else None)
            first = int(subnet.network_address) + 2
            addresses.update(zip(ports, map(IPv4Address, range(first, first + len(ports))), strict=True))
            port_segments.update(dict.fromkeys(ports, segment))


def _assign_port_pairs(
    ctx: ExpandContext, name: str, pool: IPv4Network, rails: dict[int, dict[str, list[str]]]
) -> None:
    """A /31 per rail port, taken in order from its rail's block: the leaf port the even address, the host
    the odd one."""
    rail_bits = _bits(max(rails))
    biggest = max(sum(len(ports) for ports in leaves.values()) for leaves in rails.values())
    needed_prefix = 32 - _bits(2 * biggest) - rail_bits
    if pool.prefixlen > needed_prefix:
        _too_small(
            ctx,
            name,
            pool,
            f"{2 ** (32 - pool.prefixlen - rail_bits) // 2} /31 links per rail ({2**rail_bits} rail blocks), "
            f"{biggest} are needed",
            needed_prefix,
        )
        return
    blocks = list(pool.subnets(prefixlen_diff=rail_bits))
    for rail, leaves in sorted(rails.items()):
        block = blocks[rail - 1]
        ports = [key for leaf in sorted(leaves) for key in leaves[leaf]]
        for index, key in enumerate(ports):
            link = IPv4Network((int(block.network_address) + 2 * index, 31))
            ctx.topo.assign_address(name, key, link.network_address + 1)
            ctx.topo.segments[name][key] = RailSegment(rail, link, block, link.network_address)


def _too_small(ctx: ExpandContext, name: str, pool: IPv4Network, what: str, prefix: int) -> None:
    ctx.error(
        codes.POOL_TOO_SMALL,
        f"network '{name}': pool {pool} has {what}",
        ("fabrics", name, "ipv4_pool"),
        f"use a pool of at least /{prefix}",
    )


def _bits(count: int) -> int:
    """Bits that number `count` equal blocks (1 -> 0, 2 -> 1, 3..4 -> 2, ...)."""
    return max(0, (count - 1).bit_length())


def _prefix_for(addresses: int) -> int:
    return 32 - max(0, (addresses - 1).bit_length())
