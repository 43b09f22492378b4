"""Addresses against their subnets: every host address inside its subnet and not its network or broadcast
address (a /31 has neither, RFC 3021), the gateway inside the same subnet and not the host's own
address, and no address on two interfaces. netplan accepts all of these mistakes without a word."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from ipaddress import IPv4Address, IPv4Network

from .. import codes
from ..errors import Finding, Severity
from .context import CheckContext


class _Subnet:
    """A subnet and gateway as integers, worked out once for all the interfaces that share them."""

    def __init__(self, subnet: IPv4Network, gateway: IPv4Address | None) -> None:
        self.subnet = subnet
        self.first, self.last = int(subnet.network_address), int(subnet.broadcast_address)
        self.has_edges = subnet.prefixlen < 31  # a /31 has no network or broadcast address (RFC 3021)
        self.gateway = None if gateway is None else int(gateway)
        self.gateway_problem = (
            f"has its gateway {gateway} outside its subnet {subnet}"
            if gateway is not None and gateway not in subnet
            else None
        )

    def disagreement(self, address: int) -> str | None:
        if not self.first <= address <= self.last:
            return f"is outside its subnet {self.subnet}"
        if self.has_edges and address in (self.first, self.last):
            return f"is the network or broadcast address of {self.subnet}"
        if self.gateway_problem is not None:
            return self.gateway_problem
        if self.gateway == address:
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
    interfaces = list(_interfaces(ctx))
    numbers = [int(address) for _, _, address, _, _ in interfaces]
    subnets: dict[tuple[int, int], _Subnet] = {}
    """By the identity of the subnet and gateway objects: the topology keeps them for the whole check, and
    the thousands of interfaces of a segment share them (hashing an ipaddress object is slow Python)."""
    for (network, key, address, subnet, gateway), number in zip(interfaces, numbers, strict=True):
        if subnet is None:
            continue
        same = (id(subnet), id(gateway))
        if same not in subnets:
            subnets[same] = _Subnet(subnet, gateway)
        problem = subnets[same].disagreement(number)
        if problem is not None:
            yield ctx.finding(
                codes.ADDRESS_SUBNET_DISAGREE,
                Severity.ERROR,
                f"network '{network}': {key} address {address} {problem}",
                ("fabrics", network, "ipv4_pool"),
                key,
            )
    counts = Counter(numbers)
    if len(counts) == len(numbers):
        return  # no address on two interfaces
    shared = {number for number, count in counts.items() if count > 1}
    owners: dict[int, tuple[IPv4Address, list[str]]] = {}
    for (network, key, address, _, _), number in zip(interfaces, numbers, strict=True):
        if number in shared:
            owners.setdefault(number, (address, []))[1].append(f"{key} on '{network}'")
    for address, where in owners.values():
        yield ctx.finding(
            codes.ADDRESS_ON_TWO_INTERFACES,
            Severity.ERROR,
            f"address {address} is on {len(where)} interfaces: {', '.join(where)}",
            ("fabrics",),
            str(address),
        )
