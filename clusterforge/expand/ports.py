"""Port bookkeeping on one switch: which ports are taken, at which speed, with names the NOS would show.

One booking rule serves expansion, the port check and the plan: a link at speed s takes a sub-port of
the slowest speed the group offers (natively or as a breakout) that is at least s, so a 25G port on an
800G cage that breaks out to 4 x 100G costs a quarter of the cage, and a 400G port on it half.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from functools import cache
from itertools import chain
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from ..catalog import Catalog, PortGroup, Switch

if TYPE_CHECKING:
    from .topology import Topology

NO_DATA_PORTS_HINT = "its catalog entry lists management ports only: pick a switch model with data ports"


def data_groups(switch: Switch) -> list[PortGroup]:
    return [g for g in switch.ports if g.role != "oob"]


def downlink_group(switch: Switch, speed: float) -> PortGroup | None:
    """The data port group that serves endpoints at `speed`: the slowest group that can run at it."""
    groups = data_groups(switch)
    able = [g for g in groups if g.speed_gbps >= speed or g.ports_at(speed)]
    if able:
        return min(able, key=lambda g: (g.speed_gbps, -g.count))
    return max(groups, key=lambda g: g.speed_gbps) if groups else None


def uplink_group(switch: Switch) -> PortGroup | None:
    """The fastest data port group: the one uplinks (and spine/core downlinks) use."""
    groups = data_groups(switch)
    return max(groups, key=lambda g: (g.speed_gbps, g.count)) if groups else None


def sub_port_speed(group: PortGroup, speed: float) -> float:
    """Speed of the (sub-)port a link at `speed` occupies: the slowest offered speed >= `speed`."""
    offered = [float(s) for s in group.breakout if s >= speed and group.breakout[s]]
    return min([group.speed_gbps, *offered]) if speed < group.speed_gbps else group.speed_gbps


def per_native(group: PortGroup, speed: float) -> int:
    """Logical ports one native port gives for links at `speed` (breakout), 1 when it runs unsplit."""
    sub = sub_port_speed(group, speed)
    if sub >= group.speed_gbps:
        return 1
    return max(1, group.ports_at(sub) // group.count)


def cage_split(group: PortGroup, speed: float) -> tuple[int, int, bool]:
    """(sub-ports per split cage, cages each split uses (2 when the next one must be disabled), whether
    only odd-numbered cages split) for links at `speed`: the vendor's breakout table (`breakout_modes`)
    where it lists the sub-port speed, else `per_native` sub-ports on any cage."""
    split = per_native(group, speed)
    mode = group.breakout_mode(sub_port_speed(group, speed)) if split > 1 else None
    if mode is None:
        return split, 1, False
    return mode.sub_ports, 2 if mode.disables_next else 1, mode.cages == "odd"


def natives_for(group: PortGroup, speed: float, links: int) -> int:
    """Native ports (cages) `links` downlinks at `speed` take, disabled neighbours included."""
    per_cage, step, _ = cage_split(group, speed)
    return -(-links // per_cage) * step


def links_on(group: PortGroup, speed: float, natives: int) -> int:
    """Downlinks at `speed` that `natives` free native ports (from an odd cage on) hold."""
    per_cage, step, _ = cage_split(group, speed)
    return natives // step * per_cage


def native_share(group: PortGroup, speed: float) -> float:
    """Share of one native port that a link at `speed` books."""
    return 1 / per_native(group, speed)


@cache
def native_names(name: str, count: int, cages: int | None) -> tuple[str, ...]:
    """The names of a port group's native ports, as the NOS shows them: 'ib3/2' on a group of twin-port
    cages, else 'swp5' (shared by every switch of a model)."""
    if cages and cages < count:
        per_cage = count // cages
        return tuple(f"{name}{native // per_cage + 1}/{native % per_cage + 1}" for native in range(count))
    return tuple(f"{name}{native + 1}" for native in range(count))


class PortAllocator:
    """Hands out a switch port group's ports: downlinks from the bottom, uplinks from the top, the
    topmost `reserved` native ports kept free (for subnet managers) until asked for explicitly."""

    def __init__(self, group: PortGroup, reserved: int = 0):
        self.group = group
        self.low = 0
        self.high = group.count - reserved
        self.reserved_next = group.count - reserved
        self._split: dict[float, tuple[int, int]] = {}
        self._booking: dict[float, tuple[float, int]] = {}
        self._splits: dict[float, tuple[int, int, bool]] = {}
        """speed -> (sub-port speed, sub-ports per native port), the booking rule's answer kept per speed."""
        self.used = 0
        self._names = native_names(group.name, group.count, group.cages)

    def booking(self, speed: float) -> tuple[float, int]:
        known = self._booking.get(speed)
        if known is None:
            known = self._booking[speed] = (sub_port_speed(self.group, speed), per_native(self.group, speed))
        return known

    @property
    def free_native(self) -> int:
        return max(0, self.high - self.low)

    def splits(self, speed: float) -> tuple[int, int, bool]:
        known = self._splits.get(speed)
        if known is None:
            known = self._splits[speed] = cage_split(self.group, speed)
        return known

    def capacity(self, speed: float) -> int:
        """Logical ports still free at `speed` (not counting reserved ones)."""
        key, split = self.booking(speed)
        per_cage, step, odd = self.splits(speed) if split > 1 else (1, 1, False)
        pending = self._split.get(key)
        extra = per_cage - pending[1] if pending else 0
        free = self.free_native - (1 if odd and self.low % 2 else 0)
        return max(0, free) // step * per_cage + extra

    def _name(self, native: int, sub: int | None) -> str:
        if sub is not None:
            return f"{self.group.name}{native + 1}s{sub}"
        return self._names[native]

    def take_low(self, speed: float) -> str | None:
        key, split = self.booking(speed)
        if split == 1:
            if self.low >= self.high:
                return None
            self.low += 1
            self.used += 1
            return self._name(self.low - 1, None)
        per_cage, step, odd = self.splits(speed)
        native, sub = self._split.get(key, (-1, per_cage))
        if sub >= per_cage:
            start = self.low + (1 if odd and self.low % 2 else 0)  # index 0 is cage 1 (odd)
            if start + step > self.high:
                return None
            native, sub = start, 0
            self.low = start + step
        self._split[key] = (native, sub + 1)
        self.used += 1
        return self._name(native, sub)

    def take_at(self, name: str, speed: float) -> str | None:
        """The port `name` (a port, or a sub-port 'swp5s2'), taken as `take_low` would give it once the free
        ports below it are passed over (they stay unused); None, taking nothing, when it is taken already or
        is no port of this group at `speed`."""
        key, split = self.booking(speed)
        native, sub = self._position(name, split)
        if native is None or native >= self.high:
            return None
        pending = self._split.get(key)
        if split == 1 or native >= self.low:
            if native < self.low:
                return None
            self.low = native + 1
        elif pending is None or pending[0] != native or sub < pending[1]:
            return None
        if split > 1:
            self._split[key] = (native, sub + 1)
        self.used += 1
        return self._name(native, sub if split > 1 else None)

    def _position(self, name: str, split: int) -> tuple[int | None, int]:
        """(native index, sub-port) of a port name of this group, (None, 0) when it is none."""
        base, s, sub = name.rpartition("s") if split > 1 else (name, "", "")
        if split > 1 and not (s and sub.isdigit() and int(sub) < split):
            return None, 0
        try:
            return self._names.index(base), int(sub or 0)
        except ValueError:
            return None, 0

    def peek_high(self) -> str | None:
        """The port `take_high` gives next, taking nothing."""
        return self._name(self.high - 1, None) if self.high > self.low else None

    def take_high(self) -> str | None:
        """An unsplit port from the top (uplinks run at the native speed)."""
        if self.high <= self.low:
            return None
        self.high -= 1
        self.used += 1
        return self._name(self.high, None)

    def take_high_many(self, count: int) -> list[str]:
        """`count` ports as `take_high` gives them one after another; the caller checked `free_native`."""
        assert count <= self.free_native
        names = self._names[self.high - count : self.high]
        self.high -= count
        self.used += count
        return list(reversed(names))

    def take_low_many(self, speed: float, count: int) -> list[str]:
        """`count` ports as `take_low` gives them one after another; the caller checked `capacity`."""
        if self.booking(speed)[1] == 1:
            names = self._names[self.low : self.low + count]
            self.low += count
            self.used += count
            return list(names)
        ports = [port for _ in range(count) if (port := self.take_low(speed)) is not None]
        assert len(ports) == count
        return ports

    def take_reserved(self) -> str | None:
        if self.reserved_next >= self.group.count:
            return None
        self.reserved_next += 1
        self.used += 1
        return self._name(self.reserved_next - 1, None)


def port_group_of(switch: Switch, port: str) -> PortGroup | None:
    """The data port group a port name belongs to (the longest group-name prefix)."""
    return _longest(g for g in data_groups(switch) if port.startswith(g.name))


def _longest(groups: Iterable[PortGroup]) -> PortGroup | None:
    return max(groups, key=lambda g: len(g.name), default=None)


Booked = dict[str, dict[str, tuple[float, int]]]
_BOOKED: WeakKeyDictionary[Topology, tuple[int, Catalog, Booked]] = WeakKeyDictionary()
"""The last answer per topology, with its link count and catalog: links are only ever added."""


def booked_ports(topo: Topology, catalog: Catalog) -> Booked:
    """Switch -> data port group -> (native ports booked, native ports it has), from the links themselves
    by the booking rule above; the port check, the idle-switch check and the plan all read this (worked out
    once per topology and link count: do not change the returned dict)."""
    known = _BOOKED.get(topo)
    if known is not None and known[0] == len(topo.links) and known[1] is catalog:
        return known[2]
    result = _booked_ports(topo, catalog)
    _BOOKED[topo] = (len(topo.links), catalog, result)
    return result


def _booked_ports(topo: Topology, catalog: Catalog) -> Booked:
    """Link ends are counted per (device, port kind, speed) first (a port's kind: the group names its name
    starts with), so the booking rule runs once per switch and port group, not once per link."""
    links = topo.links
    tiers, a_names, b_names = [x.tier for x in links], [x.a for x in links], [x.b for x in links]
    # an OOB link's A end is a management port, not a data port (nor its B end when that is the same device:
    # a management switch's own management port in one of its ports)
    a_data = [None if tier == "oob" else a for tier, a in zip(tiers, a_names, strict=True)]
    b_data = [None if tier == "oob" and a == b else b for tier, a, b in zip(tiers, a_names, b_names, strict=True)]
    devices = list(chain.from_iterable(zip(a_data, b_data, strict=True)))  # in link order, A end first
    ports = list(chain.from_iterable(zip([x.a_port for x in links], [x.b_port for x in links], strict=True)))
    link_speeds = [x.speed_gbps for x in links]
    speeds = chain.from_iterable(zip(link_speeds, link_speeds, strict=True))
    switches = {model: catalog.get(model, Switch) for model in {d.model for d in topo.devices.values()}}
    names = sorted({g.name for switch in switches.values() if switch is not None for g in data_groups(switch)})
    kinds: dict[tuple[str, ...], int] = {}
    kind = {port: kinds.setdefault(tuple(n for n in names if port.startswith(n)), len(kinds)) for port in set(ports)}
    kind_names = list(kinds)
    ends = Counter(zip(devices, map(kind.__getitem__, ports), speeds, strict=True))  # kinds as numbers: fast hash
    groups: dict[tuple[str, int], PortGroup | None] = {}
    shares: dict[tuple[str, str, float], float] = {}
    booked: dict[str, dict[str, list[float]]] = {}
    for (device_name, port_kind, speed), count in ends.items():
        if device_name is None:
            continue
        model = topo.devices[device_name].model
        switch = switches[model]
        if switch is None:
            continue
        if (model, port_kind) not in groups:
            groups[(model, port_kind)] = _longest(g for g in data_groups(switch) if g.name in kind_names[port_kind])
        group = groups[(model, port_kind)]
        if group is not None:
            entry = booked.setdefault(device_name, {}).setdefault(group.name, [0.0, group.count])
            if (model, group.name, speed) not in shares:
                shares[(model, group.name, speed)] = native_share(group, speed)
            entry[0] += count * shares[(model, group.name, speed)]
    return {
        name: {g: (round(used, 6), int(total)) for g, (used, total) in groups.items()}
        for name, groups in booked.items()
    }
