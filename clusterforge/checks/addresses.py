"""Addresses against their subnets: every host address inside its subnet and not its network or broadcast
address (a /31 has neither, RFC 3021), the gateway inside the same subnet and not the host's own
address, and no address on two interfaces. netplan accepts all of these mistakes without a word."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from ipaddress import IPv4Address, IPv4Network

from .. import codes
from ..errors import Finding, Severity
from .context import CheckContext


def _disagreement(address: IPv4Address, subnet: IPv4Network, gateway: IPv4Address | None) -> str | None:
    if address not in subnet:
        return f"is outside its subnet {subnet}"
    if subnet.prefixlen < 31 and address in (subnet.network_address, subnet.broadcast_address):
        return f"is the network or broadcast address of {subnet}"
    if gateway is not None and gateway not in subnet:
        return f"has its gateway {gateway} outside its subnet {subnet}"
    if gateway == address:
        return "is its own gateway"
    return None


def _interfaces(ctx: CheckContext) -> Iterator[tuple[str, str, IPv4Address, IPv4Network | None, IPv4Address | None]]:
    """(network, interface, address, subnet, gateway) of every addressed interface."""
    topo = ctx.topo
    for network, addresses in sorted(topo.addresses.items()):
        rails, lans = topo.segments.get(network, {}), topo.lans.get(network, {})
        for key, address in addresses.items():
            segment, lan = rails.get(key), lans.get(key)
            if segment is not None:
                yield network, key, address, segment.subnet, segment.gateway
            elif lan is not None:
                yield network, key, address, lan.subnet, lan.gateway
            else:
                yield network, key, address, None, None


def check_address_agreement(ctx: CheckContext) -> Iterator[Finding]:
    owners: dict[IPv4Address, list[str]] = defaultdict(list)
    for network, key, address, subnet, gateway in _interfaces(ctx):
        owners[address].append(f"{key} on '{network}'")
        if subnet is None:
            continue
        problem = _disagreement(address, subnet, gateway)
        if problem is not None:
            yield ctx.finding(
                codes.ADDRESS_SUBNET_DISAGREE,
                Severity.ERROR,
                f"network '{network}': {key} address {address} {problem}",
                ("fabrics", network, "ipv4_pool"),
                key,
            )
    for address, where in owners.items():
        if len(where) > 1:
            yield ctx.finding(
                codes.ADDRESS_ON_TWO_INTERFACES,
                Severity.ERROR,
                f"address {address} is on {len(where)} interfaces: {', '.join(where)}",
                ("fabrics",),
                str(address),
            )
