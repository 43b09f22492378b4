"""What a link is built from, in words for the plan: the cable product that carries it and, over fibre, the
transceiver in the cage at each end, all chosen by the cabling expander from the catalog. A cluster has
a few kinds of link (speed, media, product, modules), so each kind is worked out once and its LinkParts
shared by all its links.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog import CableMedia, Transceiver
from ...expand.topology import Topology
from ...validate import ValidBlueprint


@dataclass(frozen=True, slots=True, eq=False)
class LinkParts:
    """What a kind of link is built from."""

    speed_gbps: float
    media: str
    """The cable's media class: DAC, ACC, AOC, MMF, SMF, Cat6a ('' for a link that was not cabled)."""
    product: str
    """Catalog key of the cable product ('' when not cabled)."""
    cable: str
    """The cable product's name."""
    a_module: str
    """Catalog key of the A end's transceiver ('' unless over fibre)."""
    b_module: str
    a_transceiver: str
    """The A end's transceiver part number ('' unless over fibre)."""
    b_transceiver: str

    @property
    def optical(self) -> bool:
        return bool(self.a_module or self.b_module)


LinkKind = tuple[float, str, str, str, str]
"""Speed, media, product, A module, B module."""


class LinkKinds(dict[LinkKind, LinkParts]):
    """The LinkParts of each kind of link, worked out on first use."""

    def __init__(self, valid: ValidBlueprint) -> None:
        super().__init__()
        self.catalog = valid.catalog

    def __missing__(self, kind: LinkKind) -> LinkParts:
        speed, media, product, a_module, b_module = kind
        entry = self.catalog.entries.get(product)
        name = entry.name if isinstance(entry, CableMedia) else ""
        parts = self[kind] = LinkParts(
            speed, media, product, name, a_module, b_module, self.part_number(a_module), self.part_number(b_module)
        )
        return parts

    def part_number(self, module: str) -> str:
        entry = self.catalog.entries.get(module)
        return entry.part_number if isinstance(entry, Transceiver) else module


def link_products(topo: Topology) -> list[str]:
    """The cable product of every link, in the topology's order ('' for a link without a cable)."""
    products = [cable.product for cable in topo.cables]
    return [products[link.cable] if link.cable >= 0 else "" for link in topo.links]
