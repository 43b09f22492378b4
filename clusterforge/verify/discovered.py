"""Read what the tools discovered on the built fabric: `ibnetdiscover` output (its topology format, which
`topology.net` also uses, or the port list of `ibnetdiscover -p`) and `lldpctl -f json` output.

Each gives links between two ends. An InfiniBand end is a node description and a port number; an LLDP end is
a system name and an interface name. Nothing is resolved against the plan here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import visible
from ..inputs import CAPTURE_LIMITS, InputRefused, JsonRefused, Reads, parse_json

_HEADER = re.compile(r'^(?P<kind>Switch|Ca|Hca|Rt)\s+\d+\s+"(?P<id>[^"]*)"(?:\s*#\s*"(?P<desc>[^"]*)")?')
_GUID = re.compile(r"^(?:switchguid|caguid|rtguid)=0x(?P<guid>[0-9a-fA-F]+)")
_PORT_LINE = re.compile(
    r'^\[(?P<port>\d+)\](?:\((?P<portguid>[0-9a-fA-F]+)\))?\s+"(?P<remote>[^"]*)"\[(?P<rport>\d+)\]'
)
_PORTS_FORMAT = re.compile(
    r"^(?P<k1>CA|SW|RT)\s+\d+\s+(?P<p1>\d+)\s+0x(?P<g1>[0-9a-fA-F]+)\s[^-']*?\s-\s+"
    r"(?P<k2>CA|SW|RT)\s+\d+\s+(?P<p2>\d+)\s+0x(?P<g2>[0-9a-fA-F]+)\s+\(\s*'(?P<d1>[^']*)'\s+-\s+'(?P<d2>[^']*)'\s*\)\s*$"
)
"""A line of `ibnetdiscover -p`; no part can match a span another part matches, so a hostile line costs
time linear in its length (`.*` in two places made it cubic: 2 s for a line of 20,000 characters)."""
MAX_LINE = 4096
"""Characters in a line of a capture; ibnetdiscover's are some 150 (a node description is at most 64 bytes)."""
MAX_LINES = 2_000_000
"""Lines in a capture (each link found becomes some 250 bytes); a 100,000-GPU fabric's has some 800,000."""


_CHASSIS_FIELDS = frozenset({"id", "name", "descr", "mgmt-ip", "mgmt-iface", "capability", "ttl"})
"""Fields of an lldpd chassis object; any other key of it is the system name the chassis is keyed by."""


MAX_IB_PORT = 254
"""InfiniBand port numbers are 8 bits; 255 is reserved, 0 a switch's management port, which is never cabled."""
MAX_GUID_DIGITS = 16


class DiscoveryError(ValueError):
    """A discovered file that cannot be read: the message names the file and what is wrong (shown with
    `visible`, since both may come from the field)."""

    def __init__(self, message: str) -> None:
        super().__init__(visible(message))


@dataclass(frozen=True, slots=True, order=True)
class End:
    node: str
    """InfiniBand node description, or LLDP system name (as `visible` shows it)."""
    port: str
    """InfiniBand port number as text, or the interface name (as `visible` shows it)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "node", visible(self.node))
        object.__setattr__(self, "port", visible(self.port))


@dataclass(frozen=True, slots=True)
class Seen:
    """One discovered link: its two ends (in sorted order, so a link seen from both sides is one), and for
    InfiniBand whether each end is a switch."""

    a: End
    b: End
    switches: frozenset[str] = frozenset()
    """Node descriptions of the ends that are switches (InfiniBand; as `visible` shows them); empty for LLDP."""


def _pair(a: End, b: End, switches: frozenset[str] = frozenset()) -> Seen:
    return Seen(a, b, switches) if a <= b else Seen(b, a, switches)


def read_text(path: Path, reads: Reads | None = None) -> str:
    """A capture's text, read with the bounds of `CAPTURE_LIMITS` (regular files only, size checked before
    reading; `reads`: the run's, which bounds all captures together); bytes that are not UTF-8 become U+FFFD."""
    try:
        return (reads or Reads(None, CAPTURE_LIMITS)).read_text(path, errors="replace")
    except InputRefused as exc:
        raise DiscoveryError(f"{path}: will not read it: {exc}") from None
    except OSError as exc:
        raise DiscoveryError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _port(text: str, source: str, line: int) -> str:
    """An InfiniBand port number of a capture, checked (1-254) before it is converted."""
    if len(text) > 3 or not 1 <= int(text) <= MAX_IB_PORT:
        shown = text if len(text) <= 12 else f"{text[:10]}... ({len(text):,} digits)"
        raise DiscoveryError(f"{source}:{line}: port number {shown} is not an InfiniBand port (1-{MAX_IB_PORT})")
    return str(int(text))


def _guid(text: str, source: str, line: int) -> int:
    if len(text) > MAX_GUID_DIGITS:
        raise DiscoveryError(f"{source}:{line}: GUID 0x{text[:8]}... ({len(text):,} hex digits) is longer than 64 bits")
    return int(text, 16)


def _lines(text: str, source: str = "") -> list[str]:
    """Lines at line feeds only: a carriage return or other separator inside a node description is part of
    it (and shown, made visible), not a line break that would hide it. A line over MAX_LINE characters is
    refused (located), as no tool writes one."""
    if text.count("\n") >= MAX_LINES:
        raise DiscoveryError(
            f"{source}:{MAX_LINES + 1}: more than {MAX_LINES:,} lines (a 100,000-GPU fabric's has some 800,000)"
        )
    lines = text.split("\n")
    if lines and max(map(len, lines)) > MAX_LINE:
        number = next(i for i, line in enumerate(lines, 1) if len(line) > MAX_LINE)
        raise DiscoveryError(
            f"{source}:{number}: a line of {len(lines[number - 1]):,} characters, more than the {MAX_LINE:,} "
            "of any ibnetdiscover line"
        )
    return lines


def parse_ibnetdiscover(text: str, source: str) -> list[Seen]:
    """Links of `ibnetdiscover` (topology format) or `ibnetdiscover -p` output, each once."""
    if any(_PORTS_FORMAT.match(line) for line in _lines(text, source)[:50]):
        return _ports_format(text, source)
    return _topology_format(text, source)


def _ports_format(text: str, source: str) -> list[Seen]:
    found: set[Seen] = set()
    for number, line in enumerate(_lines(text), 1):
        match = _PORTS_FORMAT.match(line.strip())
        if match:
            _guid(match["g1"], source, number), _guid(match["g2"], source, number)
            a = End(match["d1"], _port(match["p1"], source, number))
            b = End(match["d2"], _port(match["p2"], source, number))
            ends = ((match["d1"], match["k1"]), (match["d2"], match["k2"]))
            switches = frozenset(visible(d) for d, k in ends if k == "SW")
            found.add(_pair(a, b, switches))
    return sorted(found, key=lambda s: (s.a, s.b))


def _topology_format(text: str, source: str) -> list[Seen]:
    """Node headers name each node by an id (ibnetdiscover: `S-<guid>`, with the description in a comment;
    topology.net: the description itself); port lines name the remote node by its id."""
    names: dict[str, str] = {}
    kinds: dict[str, str] = {}
    ports: list[tuple[str, str, str, str]] = []
    current: str | None = None
    for number, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        header = _HEADER.match(line)
        if header:
            current = header["id"]
            names[current] = header["desc"] if header["desc"] is not None else current
            kinds[current] = header["kind"]
            continue
        port = _PORT_LINE.match(line)
        if port:
            if current is None:
                raise DiscoveryError(f"{source}:{number}: a port line before any Switch or Ca line")
            if port["portguid"]:
                _guid(port["portguid"], source, number)
            here, there = _port(port["port"], source, number), _port(port["rport"], source, number)
            ports.append((current, here, port["remote"], there))
        elif (value := _GUID.match(line)) is not None:
            _guid(value["guid"], source, number)
    if not names:
        raise DiscoveryError(f"{source}: no Switch or Ca lines: not ibnetdiscover output")
    switches = frozenset(visible(names[n]) for n, k in kinds.items() if k == "Switch")
    found = {
        _pair(End(names[node], port), End(names.get(remote, remote), rport), switches)
        for node, port, remote, rport in ports
    }
    return sorted(found, key=lambda s: (s.a, s.b))


def discovered_guids(text: str) -> dict[str, int]:
    """Node description -> GUID as the built fabric has it: a switch's node GUID, an adapter's port GUID (what
    root-guids.conf and partitions.conf take). From `ibnetdiscover -p`, or the topology format (a node's
    `switchguid=`/`caguid=` line; an adapter's port GUID in parentheses on its port line, else node GUID + 1)."""
    found: dict[str, int] = {}
    lines = _lines(text)
    if any(_PORTS_FORMAT.match(line) for line in lines[:50]):
        for line in lines:
            match = _PORTS_FORMAT.match(line.strip())
            if match:
                found[match["d1"]] = int(match["g1"], 16)
                found[match["d2"]] = int(match["g2"], 16)
        return found
    guid, desc, kind = 0, "", ""
    for raw in lines:
        line = raw.strip()
        if (value := _GUID.match(line)) is not None:
            guid = int(value["guid"], 16)
        elif (header := _HEADER.match(line)) is not None:
            desc, kind = header["desc"] if header["desc"] is not None else header["id"], header["kind"]
            found[desc] = guid if kind == "Switch" else guid + 1
        elif (port := _PORT_LINE.match(line)) is not None and kind != "Switch" and port["portguid"]:
            found[desc] = int(port["portguid"], 16)
    return found


def parse_lldp(data: Any, host: str, source: str) -> list[Seen]:
    """Neighbours of one host's `lldpctl -f json`: `{"lldp": {"interface": {...}}}`, where `interface` is a
    mapping of interface names, or a list of one-entry mappings when there are several (lldpd 1.0's json)."""
    if not isinstance(data, dict) or not isinstance(data.get("lldp"), dict | list):
        raise DiscoveryError(f"{source}: not lldpctl -f json output (no 'lldp' object)")
    lldp = data["lldp"]
    interfaces = lldp.get("interface", []) if isinstance(lldp, dict) else []
    entries: list[tuple[str, Any]] = []
    for item in interfaces if isinstance(interfaces, list) else [interfaces]:
        if isinstance(item, dict):
            entries.extend(item.items())
    found = set()
    for local, neighbour in entries:
        for one in neighbour if isinstance(neighbour, list) else [neighbour]:
            remote = _lldp_remote(one)
            if remote is not None:
                found.add(_pair(End(host, local), remote))
    return sorted(found, key=lambda s: (s.a, s.b))


def _value(field: Any) -> str:
    """lldpd prints a scalar as itself, as {"value": x}, or as a list of those."""
    if isinstance(field, list):
        field = field[0] if field else None
    if isinstance(field, dict):
        field = field.get("value")
    return "" if field is None else str(field)


def _lldp_remote(entry: Any) -> End | None:
    """The neighbour's system name (the chassis object's key, or its `name`) and port: the port id when it is
    an interface name, else the port description (Linux lldpd sends the MAC as id, the name as description)."""
    if not isinstance(entry, dict):
        return None
    chassis = entry.get("chassis")
    system = ""
    if isinstance(chassis, dict):
        named = [(k, v) for k, v in chassis.items() if isinstance(v, dict) and k not in _CHASSIS_FIELDS]
        system = _value(chassis.get("name")) or (named[0][0] if named else "")
    port = entry.get("port")
    if not system or not isinstance(port, dict):
        return None
    port_id = port.get("id")
    kind = port_id.get("type") if isinstance(port_id, dict) else None
    name = _value(port_id) if kind in ("ifname", "local", None) else _value(port.get("descr"))
    return End(system, name) if name else None


def read_lldp_file(path: Path, reads: Reads | None = None) -> tuple[list[str], list[Seen]]:
    """The hosts that reported and their links: one host's lldpctl output (the host is the file's name without
    `.json`), or a merged file, an object of host name -> that host's lldpctl output."""
    try:
        data = parse_json(read_text(path, reads))
    except JsonRefused as exc:
        raise DiscoveryError(f"{path}:{exc.line}:{exc.column}: {exc.reason}") from None
    if isinstance(data, dict) and "lldp" not in data and data and all(isinstance(v, dict) for v in data.values()):
        found = {seen for host, one in data.items() for seen in parse_lldp(one, host, f"{path} ({host})")}
        return sorted(data), sorted(found, key=lambda s: (s.a, s.b))
    host = path.name.removesuffix(".json")
    return [host], parse_lldp(data, host, str(path))
