"""Edit a topology file (ibnetdiscover/ibsim format) the way a technician miscables a fabric: pull a cable,
add one, exchange two. Both ends of a link are edited, so ibsim simulates what was built."""

from __future__ import annotations

import re

_HEADER = re.compile(r'^(Switch|Hca) (\d+) "([^"]+)"')
_PORT = re.compile(r'^\[(\d+)\] "([^"]+)"\[(\d+)\]')


class NetFile:
    def __init__(self, text: str) -> None:
        self.order: list[str] = []
        self.header: dict[str, list[str]] = {}
        self.ports: dict[str, dict[int, tuple[str, int]]] = {}
        self.size: dict[str, int] = {}
        pending: list[str] = []
        current = ""
        for line in text.splitlines():
            header = _HEADER.match(line)
            port = _PORT.match(line)
            if header:
                current = header[3]
                self.order.append(current)
                self.header[current] = [*pending, line]
                self.ports[current] = {}
                self.size[current] = int(header[2])
                pending = []
            elif port:
                self.ports[current][int(port[1])] = (port[2], int(port[3]))
            elif line.startswith(("switchguid=", "caguid=")):
                pending.append(line)

    def text(self) -> str:
        out = []
        for name in self.order:
            out.append("\n".join(self.header[name]))
            out.extend(f'[{p}] "{r}"[{rp}]' for p, (r, rp) in sorted(self.ports[name].items()))
            out.append("")
        return "\n".join(out) + "\n"

    def remote(self, node: str, port: int) -> tuple[str, int]:
        return self.ports[node][port]

    def unplug(self, node: str, port: int) -> tuple[str, int]:
        remote, rport = self.ports[node].pop(port)
        del self.ports[remote][rport]
        return remote, rport

    def plug(self, a: str, a_port: int, b: str, b_port: int) -> None:
        assert a_port not in self.ports[a] and b_port not in self.ports[b], "port taken"
        self.ports[a][a_port] = (b, b_port)
        self.ports[b][b_port] = (a, a_port)

    def free_port(self, node: str) -> int:
        return next(p for p in range(self.size[node], 0, -1) if p not in self.ports[node])

    def exchange(self, node: str, port_a: int, port_b: int) -> None:
        """The cables of two ports of `node` put into each other's port."""
        ra, rb = self.unplug(node, port_a), self.unplug(node, port_b)
        self.plug(node, port_a, *rb)
        self.plug(node, port_b, *ra)
