"""Port bookkeeping on one switch: which ports are taken, at which speed, with names the NOS would show."""

from __future__ import annotations

from ..catalog import PortGroup, Switch

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


def per_native(group: PortGroup, speed: float) -> int:
    """Logical ports one native port gives at `speed` (breakout), 1 when it runs unsplit."""
    if speed >= group.speed_gbps:
        return 1
    return max(1, group.ports_at(speed) // group.count)


def link_speed(port_speed: float, group: PortGroup) -> float:
    """Speed a link runs at between a port of `port_speed` and `group` (the slower side wins)."""
    return min(port_speed, group.speed_gbps)


class PortAllocator:
    """Hands out a switch port group's ports: downlinks from the bottom, uplinks from the top, the
    topmost `reserved` native ports kept free (for fabric managers) until asked for explicitly."""

    def __init__(self, group: PortGroup, reserved: int = 0):
        self.group = group
        self.low = 0
        self.high = group.count - reserved
        self.reserved_next = group.count - reserved
        self._split: dict[float, tuple[int, int]] = {}
        self.used = 0

    @property
    def free_native(self) -> int:
        return max(0, self.high - self.low)

    def capacity(self, speed: float) -> int:
        """Logical ports still free at `speed` (not counting reserved ones)."""
        pending = self._split.get(speed)
        extra = per_native(self.group, speed) - pending[1] if pending else 0
        return self.free_native * per_native(self.group, speed) + extra

    def _name(self, native: int, sub: int | None) -> str:
        group = self.group
        if sub is not None:
            return f"{group.name}{native + 1}s{sub}"
        if group.cages and group.cages < group.count:
            per_cage = group.count // group.cages
            return f"{group.name}{native // per_cage + 1}/{native % per_cage + 1}"
        return f"{group.name}{native + 1}"

    def take_low(self, speed: float) -> str | None:
        split = per_native(self.group, speed)
        if split == 1:
            if self.low >= self.high:
                return None
            self.low += 1
            self.used += 1
            return self._name(self.low - 1, None)
        native, sub = self._split.get(speed, (-1, split))
        if sub >= split:
            if self.low >= self.high:
                return None
            native, sub = self.low, 0
            self.low += 1
        self._split[speed] = (native, sub + 1)
        self.used += 1
        return self._name(native, sub)

    def take_high(self) -> str | None:
        """An unsplit port from the top (uplinks run at the native speed)."""
        if self.high <= self.low:
            return None
        self.high -= 1
        self.used += 1
        return self._name(self.high, None)

    def take_reserved(self) -> str | None:
        if self.reserved_next >= self.group.count:
            return None
        self.reserved_next += 1
        self.used += 1
        return self._name(self.reserved_next - 1, None)
