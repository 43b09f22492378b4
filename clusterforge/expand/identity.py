"""Stable identity: what the lock file holds is kept, what is new takes what is free.

Without a lock file the expanders assign every address in a fixed order (addressing.py), so a render is what
it always was. With one, `keep_identities` runs last: each interface the lock holds keeps its address when
that address still lies in the interface's subnet; a new interface keeps the address the fixed order gave it
when nothing the lock holds has it, else takes the lowest free address of its subnet. The addresses of a
device removed from the blueprint stay reserved (the lock's `held` section) until a render releases them.
An address that would still change (its subnet moved: another pool, another leaf pair) and a host whose name
changes are CF-IDENT-001, an error unless the render allows renumbering; a device that moves to another rack
slot and a port patched to another switch port are CF-IDENT-002 warnings.

`identities` reads them back from a topology for the lock file and for `diff`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache, partial
from ipaddress import IPv4Address, IPv4Network
from socket import inet_aton
from typing import Any, Protocol, get_args

from .. import codes
from ..errors import Finding, Severity, SourceLocation
from ..lockfile import SECTIONS, Keep, Lock
from .addressing import PAIR_SVIS
from .context import ExpandContext
from .hold import held_devices, held_value
from .topology import Device, Link, LinkTier, Topology, a_end, a_ends
from .trunk_moves import trunks_moved

MAX_NAMED = 6
"""Identities named in one finding's message; the rest are counted (diff lists every one)."""
PATCHED_TIERS = frozenset(("node-leaf", "oob", "oob-uplink"))
_TRUNK_TIERS = frozenset(get_args(LinkTier)) - PATCHED_TIERS
PORT_ORDERS, NATURAL, BY_NETWORK = "port orders", "natural", "by network"
"""Keys of what is worked out from a lock's sections once (Lock.cache)."""


def identities(topo: Topology) -> dict[str, dict[str, str]]:
    """Every identity of an expanded topology, by lock section (plain text, as the lock file holds them)."""
    return {name: make() for name, make in _sections(topo).items()}


def _sections(topo: Topology, ends: Callable[[], list[str]] | None = None) -> dict[str, Callable[[], dict[str, str]]]:
    """Per lock section, what makes its identities of `topo` (each made when called); `ends`, when given, makes
    the A end of every link (`_link_ends`)."""
    ends = ends or partial(_link_ends, topo)
    return {
        "hosts": lambda: {d.name: f"{d.group} {d.index}" for d in topo.devices.values() if d.kind == "node"},
        "addresses": lambda: {
            f"{network}/{key}": str(address)
            for network, keyed in topo.addresses.items()
            for key, address in keyed.items()
        },
        "loopbacks": lambda: {switch: str(address) for switch, address in topo.loopbacks.items()},
        "asns": lambda: {switch: str(asn) for switch, asn in topo.asns.items()},
        "numbers": lambda: {key: str(number) for key, number in topo.numbers.items()},
        "bonds": lambda: {
            f"{leaf}/{node}": str(n) for leaf, numbers in topo.bonds.items() for node, n in numbers.items()
        },
        "racks": lambda: {d.name: _slot(d) for d in topo.devices.values() if d.rack is not None},
        "ports": lambda: _patched(topo, ends()),
        "trunks": lambda: trunks(topo, ends()),
    }


def _patched(topo: Topology, ends: _Ends | None = None) -> dict[str, str]:
    """Every patched port (node to leaf, out-of-band): its device end -> the switch port."""
    return _far_ends(topo, ends, PATCHED_TIERS)


def trunks(topo: Topology, ends: _Ends | None = None) -> dict[str, str]:
    """Every switch-to-switch link (leaf to spine, spine to core, leaf pair peer links): its lower end ->
    its upper end. A mesh keeps those the lock file holds where its switches still have a link
    (fabric/kept_mesh.py); `diff` lists those that move, and CF-IDENT-006 counts them."""
    return _far_ends(topo, ends, _TRUNK_TIERS)


class _Ends(Protocol):
    def __getitem__(self, link: int, /) -> str: ...


@dataclass(frozen=True)
class _EndsOnDemand:
    """`_link_ends` made for the links asked for only."""

    links: list[Link]

    def __getitem__(self, link: int) -> str:
        return a_end(self.links[link])


def _far_ends(topo: Topology, ends: _Ends | None, tiers: frozenset[str]) -> dict[str, str]:
    """The links of `tiers`: each one's A end (`ends[i]` for link i: the lock text's `_link_ends`, made once for
    three sections; by default made here) -> its B end."""
    ends = ends if ends is not None else _EndsOnDemand(topo.links)
    return {ends[i]: f"{link.b}:{link.b_port}" for i, link in enumerate(topo.links) if link.tier in tiers}


def _slot(device: Device) -> str:
    """'A01 U3' (1U) or 'A01 U3-10': the rack and the U the device takes."""
    top = (device.u or 0) + device.u_height - 1
    return f"{device.rack} U{device.u}" + (f"-{top}" if top != device.u else "")


def _link_ends(topo: Topology) -> list[str]:
    """The A end of each link, by link index: the keys of the `ports`, `trunks` and `cables` lines, made once for
    the three (at a million GPUs 3.2 million strings; the lock text took 11.6 CPU s instead of 12.4)."""
    return list(a_ends(topo.links))


def locked_sections(
    topo: Topology, cables: Callable[[list[str]], dict[str, str]]
) -> Iterator[tuple[str, Callable[[], dict[str, str]]]]:
    """What the next lock file holds, section by section in file order, each made when called (one at a time in
    memory): the topology's identities, the `cables` labels (told `_link_ends`), and what the lock the topology
    was expanded with holds of devices that are gone (`held_identities`, kept by the expand stage)."""
    ends = cache(partial(_link_ends, topo))  # made for the first section that needs it, let go with the generator
    makers = {**_sections(topo, ends), "held": dict, "cables": lambda: cables(ends())}
    for name in SECTIONS:
        yield name, partial(_with_held, topo, name, makers[name])


def _with_held(topo: Topology, name: str, make: Callable[[], dict[str, str]]) -> dict[str, str]:
    entries = make()
    if name == "numbers":
        entries.update(topo.held_numbers)
    entries.update(topo.held_identities.get(name, {}))
    return entries


def held_identities(topo: Topology, keep: Keep, ports: dict[str, str]) -> dict[str, dict[str, str]]:
    """What the lock of `keep` adds to the next lock file beyond the topology's identities: the free ports it
    keeps, and the identities of devices that are gone (their host name, addresses, loopback and ASN, marked
    `held` with the date: expand/hold.py) while their hold lasts. Worked out when expanded, so that the lock
    itself need not be kept until the lock file is written (at a million GPUs its sections take 0.9 GiB).
    `ports`: the topology's patched ports (`_patched`)."""
    if keep.lock is None:
        return {}
    out = {"ports": _free_ports(topo, keep, ports)}
    held = held_devices(keep) - set(topo.devices)
    if not held:
        return out
    out["held"] = {device: held_value(keep, device) for device in sorted(held)}
    for name in ("hosts", "loopbacks", "asns"):
        out[name] = {k: v for k, v in keep.lock.section(name).items() if k in held}
    out["bonds"] = {k: v for k, v in keep.lock.section("bonds").items() if k.rpartition("/")[2] in held}
    present = set(_addresses(topo))  # a pin may have taken one
    out["addresses"] = {
        k: v
        for k, v in keep.lock.section("addresses").items()
        if _device_of(k.partition("/")[2]) in held and (k.partition("/")[0], v) not in present
    }
    return out


def _addresses(topo: Topology) -> Iterator[tuple[str, str]]:
    """(network, address) of every interface, as the lock file's `addresses` section holds them."""
    for network, keyed in topo.addresses.items():
        for address in keyed.values():
            yield network, str(address)


def _free_ports(topo: Topology, keep: Keep, ports: dict[str, str]) -> dict[str, str]:
    """The lock's patched ports of removed devices that no device of `ports` took and whose switch is still
    there, when the device is held or a device after it on its network is wired (the port is a hole that keeps
    the others in place; see locked_order.py)."""
    assert keep.lock is not None
    if ports == keep.lock.section("ports"):  # a render after a render: every port the lock holds is patched
        return {}
    used = set(ports.values())
    gone = [
        (key, value)
        for key, value in keep.lock.section("ports").items()
        if key not in ports and value not in used and value.partition(":")[0] in topo.devices
    ]
    if not gone:  # the sort keys below are made only when a port may be free (not on a render after a render)
        return {}
    held = held_devices(keep)
    orders = {network: port_order(keep.lock, network) for network in {key.partition("/")[0] for key, _ in gone}}
    last: dict[str, tuple[Any, ...]] = {}
    for key in ports:
        network, _, interface = key.partition("/")
        order = orders.get(network)
        if order is None:
            continue
        where = order.get(interface)
        if where is not None and (network not in last or where > last[network]):
            last[network] = where
    free: dict[str, str] = {}
    for key, value in gone:
        network, _, interface = key.partition("/")
        where = orders[network].get(interface)
        if _device_of(interface) in held or (where is not None and network in last and where < last[network]):
            free[key] = value
    return free


def port_order(lock: Lock | None, network: str) -> dict[str, tuple[Any, ...]]:
    """'device:port' -> the switch port it was patched to, as a sort key (switch, then port, numbers as
    numbers), on `network` (the lock's ports). Made once per lock and network (the fabric's builder and
    `_free_ports` ask for the same): the caller does not change it."""
    if lock is None:
        return {}
    orders = lock.cache.setdefault(PORT_ORDERS, {})
    order = orders.get(network)
    if order is None:
        entries = by_network(lock, "ports").get(network, {})
        order = orders[network] = dict(zip(entries, map(_port_key(lock), entries.values()), strict=True))
    return order


def _port_key(lock: Lock) -> Callable[[str], tuple[Any, ...]]:
    """'switch:port' -> its sort key, the names' keys made once per lock (switch and port names repeat)."""
    parts: dict[str, tuple[Any, ...]] = lock.cache.setdefault(NATURAL, {})

    def key(value: str) -> tuple[Any, ...]:
        switch, _, port = value.partition(":")
        a = parts.get(switch) or parts.setdefault(switch, natural(switch))
        b = parts.get(port) or parts.setdefault(port, natural(port))
        return (a, b)

    return key


def by_network(lock: Lock, section: str) -> dict[str, dict[str, str]]:
    """A section keyed 'network/...' as network -> '...' -> value, split once per lock (each network's
    expander asked for its own by a pass over every line: at a million GPUs 1.2 million, four times)."""
    found = lock.cache.get((BY_NETWORK, section))
    if found is None:
        found = defaultdict(dict)
        for key, value in lock.section(section).items():
            network, _, rest = key.partition("/")
            found[network][rest] = value
        lock.cache[BY_NETWORK, section] = found = dict(found)
    return found


def uplinks_onto(lock: Lock | None, network: str) -> dict[str, tuple[Any, ...]]:
    """'switch:port' of another network's switches (out-of-band uplinks) the lock file holds patched to a leaf
    of `network`, as port_order's sort keys."""
    if lock is None:
        return {}
    leaf, key = f"{network}-leaf", _port_key(lock)
    return {
        interface: key(value)
        for other, entries in by_network(lock, "ports").items()
        if other != network
        for interface, value in entries.items()
        if value.startswith(leaf)
    }


def natural(text: str) -> tuple[Any, ...]:
    """'swp10' after 'swp9'."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _device_of(interface: str) -> str:
    return interface.partition(":")[0]


class _Free:
    """The lowest free addresses (as integers) of subnets, skipping those `taken` (which only grows)."""

    def __init__(self, taken: set[int]) -> None:
        self.taken = taken
        self.cursor: dict[IPv4Network, int] = {}

    def take(self, subnet: IPv4Network, first: int, last: int) -> int | None:
        at = max(self.cursor.get(subnet, first), first)
        while at <= last and at in self.taken:
            at += 1
        self.cursor[subnet] = at + 1
        if at > last:
            return None
        self.taken.add(at)
        return at


def keep_identities(ctx: ExpandContext) -> None:
    """The last expander: the blueprint's pinned addresses and the lock file's identities kept (see the
    module's text); nothing without a lock file or a pin."""
    keep = ctx.keep
    pins = _pins(ctx)
    if keep.lock is not None:
        ctx.topo.held_labels = keep.lock.section("cables")
    if keep.lock is None:
        for network, pinned in pins.items():
            _keep_addresses(ctx, network, ctx.bp.fabrics[network].ipv4_pool, None, pinned)
        return
    moved: list[str] = []
    for network, fabric in ctx.bp.fabrics.items():
        moved += _keep_addresses(ctx, network, fabric.ipv4_pool, keep.lock, pins.get(network, {}))
        pool = getattr(fabric, "loopback_pool", None)
        if pool is not None:
            moved += _keep_loopbacks(ctx, network, pool, keep.lock)
    moved += _renamed(ctx.topo, keep.lock)
    patched = _patched(ctx.topo)
    ctx.topo.held_identities = held_identities(ctx.topo, keep, patched)
    where = SourceLocation(keep.lock.where, 0, 0) if keep.lock.where else None
    if moved:
        ctx.findings.append(
            Finding(
                codes.IDENTITY_MOVES,
                Severity.WARNING if keep.allow_renumber else Severity.ERROR,
                f"{len(moved)} identities the lock file holds would change: {_named(moved)}",
                location=where,
                hint="grow a group at its end and keep pools and names, or render with --allow-renumber when "
                "the devices are to be renumbered"
                if not keep.allow_renumber
                else "renumbered as allowed (--allow-renumber); the lock file records the new identities",
            )
        )
    repatched = list(_repatched(ctx.topo, keep.lock, patched))
    del patched
    if repatched:
        ctx.findings.append(
            Finding(
                codes.IDENTITY_REPATCHED,
                Severity.WARNING,
                f"{len(repatched)} devices or cables the lock file holds move: {_named(repatched)}",
                location=where,
                hint="move or re-patch them as listed (`clusterforge diff` lists every one), or change the "
                "blueprint so they stay",
            )
        )
    moved_trunks = trunks_moved(ctx.topo, keep.lock, PATCHED_TIERS, ctx.trunks_as_held)
    if moved_trunks is not None:
        ctx.findings.append(moved_trunks)


def _pins(ctx: ExpandContext) -> dict[str, dict[str, int]]:
    """The blueprint's `addresses`, checked against the topology: network -> interface -> address. A pin on
    no interface, outside the interface's subnet, on its network, gateway or broadcast address, or on an
    address pinned twice is a CF-IDENT-005 error at the pin's line (and is not applied)."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    by_address: dict[tuple[str, int], str] = {}
    topo = ctx.topo
    for key, address in ctx.bp.addresses.items():
        network, _, interface = key.partition("/")
        path = ("addresses", key)
        fabric = ctx.bp.fabrics.get(network)
        if fabric is None or interface not in topo.addresses.get(network, {}):
            where = f"network '{network}' has no interface '{interface}'" if fabric else f"no network '{network}'"
            ctx.error(
                codes.ADDRESS_PIN,
                f"address pin {key}: {where}",
                path,
                "key a pin as the lock file does: network/host (in-band, storage, BMC) or network/host:port",
            )
            continue
        subnet, first, last = _subnet_and_range(topo, network, interface, fabric.ipv4_pool)
        value = int(address)
        why = ""
        if address not in subnet:
            why = f"lies outside the interface's subnet {subnet}"
        elif value == int(subnet.network_address) and subnet.prefixlen < 31:
            why = f"is the network address of {subnet}"
        elif value == int(subnet.broadcast_address) and subnet.prefixlen < 31:
            why = f"is the broadcast address of {subnet}"
        elif value < first or value > last:
            why = f"is reserved in {subnet} (its gateway or switch addresses)"
        elif (network, value) in by_address:
            why = f"is pinned for {network}/{by_address[network, value]} too"
        if why:
            ctx.error(
                codes.ADDRESS_PIN,
                f"address pin {key}: {address} {why}",
                path,
                f"pin an address from {IPv4Address(first)} to {IPv4Address(last)}, once",
            )
            continue
        by_address[network, value] = interface
        out[network][interface] = value
    return dict(out)


def _named(items: list[str]) -> str:
    more = len(items) - MAX_NAMED
    return "; ".join(items[:MAX_NAMED]) + (f"; and {more} more" if more > 0 else "")


def _subnet_and_range(topo: Topology, network: str, key: str, pool: IPv4Network) -> tuple[IPv4Network, int, int]:
    """The subnet an interface's address must lie in, and its first and last assignable address."""
    segment = topo.segments.get(network, {}).get(key)
    if segment is not None:
        subnet = segment.subnet
        if subnet.prefixlen == 31:  # a /31 with its leaf port: the host has the odd address
            return subnet, int(subnet.network_address) + 1, int(subnet.network_address) + 1
        return subnet, int(subnet.network_address) + 2, int(subnet.broadcast_address) - 1
    lan = topo.lans.get(network, {}).get(key)
    if lan is not None:
        svis = PAIR_SVIS if lan.pair is not None else 0
        return lan.subnet, int(lan.subnet.network_address) + 2, int(lan.subnet.broadcast_address) - 1 - svis
    last = int(pool.broadcast_address) - 1 if pool.prefixlen < 31 else int(pool.broadcast_address)
    return pool, int(pool.network_address) + 2, last


def _as_int(text: str) -> int:
    """A dotted IPv4 address the lock file reader checked (four decimal octets), as an integer (inet_aton:
    three times faster than splitting it, ten times faster than IPv4Address)."""
    return int.from_bytes(inet_aton(text))


def _keep_addresses(
    ctx: ExpandContext, network: str, pool: IPv4Network, lock: Lock | None, pinned: dict[str, int]
) -> list[str]:
    """Pinned interfaces take their pins, those the lock holds keep theirs, new ones take the fixed order's
    address when free, else the lowest free one (after every address claimed so none is pushed along)."""
    topo = ctx.topo
    assigned = topo.addresses.get(network)
    if not assigned:
        return []
    if lock is not None and not pinned and _as_locked(lock.section("addresses"), network, assigned):
        return []
    entries = by_network(lock, "addresses").get(network, {}) if lock is not None else {}
    if not entries and not pinned:
        return []
    held = dict(zip(entries, map(int.from_bytes, map(inet_aton, entries.values())), strict=True))  # _as_int's
    kept: dict[str, int] = {key: address for key, address in pinned.items() if int(assigned[key]) != address}
    """Interfaces whose address differs from the fixed order's: pinned, or locked and still in their subnet."""
    taken: set[int] = set(pinned.values())
    pending, moved = _sort_out(topo, network, pool, held, pinned, kept, taken)
    if not kept and not pending:
        return []  # every interface has the address the lock file holds
    reserved = held_devices(ctx.keep)
    taken.update(a for key, a in held.items() if _device_of(key) in reserved)  # removed devices keep theirs
    later = [key for key in pending if int(assigned[key]) in taken]  # first every free fixed-order address
    taken.update(int(assigned[key]) for key in pending if int(assigned[key]) not in taken)  # is claimed...
    free = _Free(taken)
    for key in later:  # ...then the others take the lowest free ones
        subnet, first, last = _subnet_and_range(topo, network, key, pool)
        found = free.take(subnet, first, last)
        if found is None:
            ctx.error(
                codes.IDENTITY_NO_ROOM,
                f"network '{network}': subnet {subnet} has no free address for {key} (the lock file "
                f"holds {sum(1 for a in taken if first <= a <= last)} of it)",
                ("fabrics", network, "ipv4_pool"),
                "release the identities of removed devices (render --release-removed), or use a larger pool",
            )
            return []
        kept[key] = found
    changed = {key: IPv4Address(address) for key, address in kept.items()}
    topo.addresses[network] = {key: changed.get(key, address) for key, address in assigned.items()}
    return [f"{network} {key} {entries[key]} -> {topo.addresses[network][key]}" for key in moved]


def _as_locked(entries: dict[str, str], network: str, assigned: dict[str, IPv4Address]) -> bool:
    """Whether the lock's `addresses` (`entries`) hold for every interface of `network` the address the fixed
    order gave it, each once (a render after a render): `_sort_out` would keep every one. In C loops."""
    texts = list(map(entries.get, map(f"{network}/".__add__, assigned)))
    if None in texts:
        return False
    olds = list(map(int.from_bytes, map(inet_aton, texts)))  # type: ignore[arg-type]  # no None: checked
    return olds == list(map(int, assigned.values())) and len(set(olds)) == len(olds)


def _sort_out(
    topo: Topology,
    network: str,
    pool: IPv4Network,
    held: dict[str, int],
    pinned: dict[str, int],
    kept: dict[str, int],
    taken: set[int],
) -> tuple[list[str], list[str]]:
    """Each interface of `network` not pinned: its locked address kept (into `kept` and `taken`) when it still
    lies in its subnet and no pin has it; else pending (an address to find), and moved when the lock held one.
    What remains in `held` afterwards are the addresses of removed devices."""
    pending: list[str] = []
    moved: list[str] = []
    for key, address in topo.addresses[network].items():
        old = held.pop(key, None)
        if key in pinned:
            continue
        if old is None:
            pending.append(key)
        elif old in taken:  # another interface's pin: the pin wins
            moved.append(key)
            pending.append(key)
        elif old == int(address):
            taken.add(old)
        else:
            _, first, last = _subnet_and_range(topo, network, key, pool)
            if first <= old <= last:
                kept[key] = old
                taken.add(old)
            else:
                moved.append(key)
                pending.append(key)
    return pending, moved


def _keep_loopbacks(ctx: ExpandContext, network: str, pool: IPv4Network, lock: Lock) -> list[str]:
    topo = ctx.topo
    held = lock.section("loopbacks")
    switches = [s.name for tier in ("leaf", "spine", "core") for s in topo.switches(network, tier)]
    first, last = int(pool.network_address) + 1, int(pool.broadcast_address) - 1
    final: dict[str, int] = {}
    moved: list[str] = []
    for name in switches:
        old = _as_int(held[name]) if name in held else None
        if old is not None and first <= old <= last:
            final[name] = old
        elif old is not None:
            moved.append(name)
    taken = set(final.values())
    reserved = held_devices(ctx.keep)
    taken.update(_as_int(v) for k, v in held.items() if k not in topo.devices and k in reserved)
    free = _Free(taken)
    for name in switches:
        if name in final:
            continue
        address = int(topo.loopbacks[name])
        if address in taken:
            found = free.take(pool, first, last)
            if found is None:
                ctx.error(
                    codes.IDENTITY_NO_ROOM,
                    f"network '{network}': loopback pool {pool} has no free address for {name}",
                    ("fabrics", network, "loopback_pool"),
                    "release the identities of removed devices (render --release-removed), or use a larger pool",
                )
                return []
            address = found
        taken.add(address)
        final[name] = address
    topo.loopbacks.update((name, IPv4Address(address)) for name, address in final.items())
    return [f"{network} loopback {name} {held[name]} -> {topo.loopbacks[name]}" for name in moved]


def _renamed(topo: Topology, lock: Lock) -> list[str]:
    """Hosts whose group and index the lock file gives another name (the hostname pattern or the group's
    name changed)."""
    by_place = {value: name for name, value in lock.section("hosts").items()}
    out = []
    for device in topo.devices.values():
        if device.kind != "node":
            continue
        old = by_place.get(f"{device.group} {device.index}")
        if old is not None and old != device.name and old not in topo.devices:
            out.append(f"host {old} renamed {device.name}")
    return out


def _repatched(topo: Topology, lock: Lock, patched: dict[str, str]) -> Iterator[str]:
    """Devices in another rack slot, and of `patched` (the topology's patched ports, in link order) those the
    lock holds on another switch port."""
    racks = lock.section("racks")
    for device in topo.devices.values():
        old = racks.get(device.name)
        if old is not None and device.rack is not None and old != _slot(device):
            yield f"{device.name} moves from {old} to {_slot(device)}"
    ports = lock.section("ports")
    if not ports or ports == patched:
        return
    for key, now in patched.items():
        old = ports.get(key)
        if old is not None and old != now:
            yield f"{key} re-patched from {old} to {now}"


def moves(old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """Per section, every identity both sides have that differs: {"key", "old", "new"}; what `diff` lists."""
    out: dict[str, list[dict[str, str]]] = defaultdict(list)
    sections = ("hosts", "addresses", "loopbacks", "asns", "numbers", "bonds", "racks", "ports", "trunks", "cables")
    for section in sections:
        a, b = old.get(section, {}), new.get(section, {})
        for key in sorted(a.keys() & b.keys()):
            if a[key] != b[key]:
                out[section].append({"key": key, "old": a[key], "new": b[key]})
    return dict(out)
