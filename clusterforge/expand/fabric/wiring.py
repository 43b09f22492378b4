"""A fabric's switches and links, every port booked through the switch's allocators."""

from __future__ import annotations

from ... import codes
from ...errors import DataPath
from ...model.fabric import LeafSpineFabric
from ..context import ExpandContext
from ..ports import PortAllocator, downlink_group, uplink_group
from ..topology import Device, Link, LinkTier, Tier
from .endpoints import HOLE_ROLE
from .kept_mesh import kept_mesh
from .spread import Row

OUT_OF_PORTS_HINT = (
    "the switch model has fewer ports than its downlinks, uplinks and reserved_ports need: "
    "reserve fewer ports, or pick a model with more"
)


class FabricWiring:
    """Creates the switches of one fabric and wires them: node ports from the bottom of a leaf's
    downlink group, uplinks from the top of the uplink group, subnet managers on reserved ports."""

    def __init__(
        self, ctx: ExpandContext, name: str, fabric: LeafSpineFabric, down_speed: float, up_speed: float
    ) -> None:
        self.ctx, self.name, self.fabric = ctx, name, fabric
        self.path: DataPath = ("fabrics", name)
        self.topo = ctx.topo
        self.down_speed, self.up_speed = down_speed, up_speed
        self.counts: dict[Tier, int] = {"leaf": 0, "spine": 0, "core": 0}
        self._up: dict[str, PortAllocator] = {}
        self._down: dict[str, PortAllocator] = {}

    def reserved(self, tier: Tier, device_name: str) -> int:
        ports = self.fabric.reserved_ports
        return int(getattr(ports, tier)) + ports.switches.get(device_name, 0)

    def switch(self, tier: Tier, model: str, **where: int | None) -> Device:
        """A new switch of `tier`; its reserved ports are kept free for subnet managers."""
        self.counts[tier] += 1
        switch = self.ctx.switch(model)
        device = Device(
            f"{self.name}-{tier}{self.counts[tier]:03d}",
            "switch",
            model,
            tier,
            switch.u_height,
            self.name,
            self.counts[tier],
            **where,  # type: ignore[arg-type]
        )
        self.topo.add_device(device)
        up = uplink_group(switch)
        down = downlink_group(switch, self.down_speed) if tier == "leaf" else up
        assert up is not None and down is not None
        reserved = self.reserved(tier, device.name)
        for data in switch.ports:
            if data.role != "oob":
                self.ctx.allocators[(device.name, data.name)] = PortAllocator(
                    data, reserved if data.name == down.name else 0
                )
        self._up[device.name] = self.ctx.allocators[(device.name, up.name)]
        self._down[device.name] = self.ctx.allocators[(device.name, down.name)]
        return device

    def down_ports(self, device: Device) -> PortAllocator:
        return self._down[device.name]

    def up_ports(self, device: Device) -> PortAllocator:
        return self._up[device.name]

    def out_of_ports(self, what: str) -> None:
        self.ctx.error(codes.OUT_OF_PORTS, f"fabric '{self.name}': out of ports {what}", self.path, OUT_OF_PORTS_HINT)

    def node_link(self, device: Device, port: str, speed: float, switch: Device, rail: int | None) -> bool:
        """A node (or subnet manager) port to a leaf's downlink group, booked at the link's own speed."""
        link_speed = min(speed, self.down_speed)
        switch_port = self._down[switch.name].take_low(link_speed)
        if switch_port is None:
            self.out_of_ports(f"on {switch.name}")
            return False
        if device.role == HOLE_ROLE:  # a removed device's port, or one an uplink holds: booked, cabled to nothing
            self.ctx.held_ports.setdefault(device.name.strip("()"), []).append((switch.name, switch_port))
            return True
        self.topo.add_link(Link(self.name, "node-leaf", device.name, port, switch.name, switch_port, link_speed, rail))
        return True

    def uplink(self, tier: LinkTier, low: Device, high: Device) -> bool:
        """Uplink from `low` (top ports) to `high` (bottom ports)."""
        a_port = self._up[low.name].take_high()
        b_port = self._down[high.name].take_low(self.up_speed)
        if a_port is None or b_port is None:
            self.out_of_ports(f"wiring {low.name} to {high.name}")
            return False
        self.topo.add_link(Link(self.name, tier, low.name, a_port, high.name, b_port, self.up_speed, low.rail))
        return True

    def peer_links(self, a: Device, b: Device, count: int) -> bool:
        """`count` MLAG peer links between the two leaves of a pair, from the top of their uplink ports."""
        for _ in range(count):
            a_port, b_port = self._up[a.name].take_high(), self._up[b.name].take_high()
            if a_port is None or b_port is None:
                self.out_of_ports(f"joining the leaf pair {a.name} and {b.name}")
                return False
            self.topo.add_link(Link(self.name, "leaf-peer", a.name, a_port, b.name, b_port, self.up_speed))
        return True

    def reserved_link(self, device: Device, port: str, speed: float, switch: Device, reserved: bool = True) -> bool:
        """A subnet manager port on one of `switch`'s reserved ports, or (`reserved` False) on a port its
        links left free."""
        link_speed = min(speed, self.down_speed if switch.role == "leaf" else self.up_speed)
        down = self._down[switch.name]
        switch_port = down.take_reserved() if reserved else down.take_low(link_speed)
        if switch_port is None:
            return False
        self.topo.add_link(Link(self.name, "node-leaf", device.name, port, switch.name, switch_port, link_speed))
        return True

    def mesh(self, tier: LinkTier, lows: list[Device], highs: list[Device], rows: list[Row]) -> bool:
        """rows[i]: (j, k) for k links from lows[i] to highs[j], keeping the cables the lock file holds
        (kept_mesh.py)."""
        lock = self.ctx.keep.lock
        held = lock.section("trunks") if lock is not None else None
        if held:
            return kept_mesh(self, tier, lows, highs, rows, held)
        return self.plain_mesh(tier, lows, highs, rows)

    def plain_mesh(self, tier: LinkTier, lows: list[Device], highs: list[Device], rows: list[Row]) -> bool:
        """rows[i]: (j, k) for k links from lows[i] to highs[j], row by row."""
        return all(self._row(tier, low, highs, row) for low, row in zip(lows, rows, strict=True))

    def _row(self, tier: LinkTier, low: Device, highs: list[Device], row: Row) -> bool:
        """k uplinks from `low` to highs[j] for each (j, k) of `row`: their ports taken at once when every switch
        has enough, else link by link up to the one that finds none."""
        up, speed = self._up[low.name], self.up_speed
        ends = [(highs[j], self._down[highs[j].name], k) for j, k in row]
        total = sum(k for _, k in row)
        if up.free_native < total or any(down.capacity(speed) < k for _, down, k in ends):
            return all(self.uplink(tier, low, high) for high, _, k in ends for _ in range(k))
        a_ports = up.take_high_many(total)
        b_ends = [(high.name, port) for high, down, k in ends for port in down.take_low_many(speed, k)]
        name, rail = self.name, low.rail
        self.topo.add_links(
            Link(name, tier, low.name, a, high, b, speed, rail) for a, (high, b) in zip(a_ports, b_ends, strict=True)
        )
        return True
