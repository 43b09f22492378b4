"""Captures for verify's tests, in the shape the tools print them."""

from __future__ import annotations

from typing import Any


def lldp_of(neighbours: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """lldpctl -f json of a host: local interface -> (switch, switch port); a Linux host's neighbour (a
    Cumulus switch) sends its interface name as port id."""

    def entry(switch: str, port: str) -> dict[str, Any]:
        return {
            "via": "LLDP",
            "rid": "1",
            "age": "0 day, 00:10:00",
            "chassis": {switch: {"id": {"type": "mac", "value": "1c:34:da:00:00:01"}, "descr": "Cumulus Linux"}},
            "port": {"id": {"type": "ifname", "value": port}, "descr": port, "ttl": "120"},
        }

    items = [{local: entry(*remote)} for local, remote in sorted(neighbours.items())]
    return {"lldp": {"interface": items if len(items) > 1 else items[0]}}
