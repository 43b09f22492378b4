#!/usr/bin/env python3
"""clusterforge: refuse a netplan configuration that would give the host two default routes or an address on a
bond's member. netplan merges every file of /etc/netplan: an OS installer's file that addressed a member port
(eno1 with the in-band address and a default route) and clusterforge's bond0 (eno1 a member, the same address
and route) merge into both. Reads the merged configuration (`netplan get all`, or the YAML on stdin with `-`);
exits 1 with one line per problem."""

import subprocess
import sys

import yaml


def problems(network: dict) -> list:
    ports = {}
    for kind in ("ethernets", "bonds", "vlans", "bridges"):
        ports.update({name: cfg or {} for name, cfg in (network.get(kind) or {}).items()})
    defaults = sorted(
        name
        for name, cfg in ports.items()
        if cfg.get("gateway4") or any(str(r.get("to")) in ("default", "0.0.0.0/0") for r in cfg.get("routes") or [])
    )
    found = []
    if len(defaults) > 1:
        found.append("default routes on " + ", ".join(defaults) + ": keep one (remove the OS installer's netplan file)")
    for bond, cfg in sorted((network.get("bonds") or {}).items()):
        for member in cfg.get("interfaces") or []:
            port = ports.get(member) or {}
            if port.get("addresses") or port.get("dhcp4") or port.get("dhcp6"):
                found.append(f"{member} is a member of {bond} and has an address of its own: remove it")
    return found


def main() -> int:
    if sys.argv[1:] == ["-"]:
        text = sys.stdin.read()
    else:
        text = subprocess.run(["netplan", "get", "all"], capture_output=True, text=True, check=True).stdout
    doc = yaml.safe_load(text) or {}
    found = problems(doc.get("network", doc) or {})
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
