"""Addresses as text, fast: the render formats several hundred thousand of them at 100,000 GPUs."""

from __future__ import annotations

from ipaddress import IPv4Address
from socket import inet_ntoa


def address_text(address: IPv4Address) -> str:
    """str(address), three times as fast (what ipaddress does in Python, inet_ntoa does in C)."""
    return inet_ntoa(address.packed)
