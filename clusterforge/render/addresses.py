"""Addresses as text, fast: the render formats several hundred thousand of them at 100,000 GPUs."""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import IPv4Address
from operator import attrgetter
from socket import inet_ntoa
from struct import Struct

from ..expand.topology import Topology
from .context import per_topology

_PACKED = Struct(">I").pack
_NUMBER = attrgetter("_ip")
"""An IPv4Address's integer, which `packed` and `int()` reach through a Python call each."""


def address_text(address: IPv4Address) -> str:
    """str(address), three times as fast (what ipaddress does in Python, inet_ntoa does in C)."""
    return inet_ntoa(address.packed)


def address_texts(addresses: Iterable[IPv4Address]) -> list[str]:
    """`address_text` of each of `addresses`, in C from end to end."""
    return list(map(inet_ntoa, map(_PACKED, map(_NUMBER, addresses))))


@per_topology
def topology_address_texts(topo: Topology) -> dict[str, dict[str, str]]:
    """network -> interface key ('host' or 'host:port') -> its address as text: every address of the topology
    formatted once for the families that write them."""
    return {
        network: dict(zip(keys, address_texts(keys.values()), strict=True)) for network, keys in topo.addresses.items()
    }
