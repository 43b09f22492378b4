"""Physical cables for the plan: one row per cable, labelled, with both ends and a printable label for each.

Labels come from the cable table (`handoff_common`): a cable's is `<fabric>-<number>`, a link's its cable's
with `/<leg>` when the cable carries several links (a twin-port cable, a splitter).
The A end of a cable is its single plug: the hub of a splitter, else the links' A end.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..expand.topology import Cable, Link
from .context import RenderContext
from .handoff_common import CableTable, Place, shared_cable_table


@dataclass(frozen=True, slots=True)
class CableEnd:
    """One end of a cable: where its plug or plugs (a splitter's legs) go."""

    places: list[Place]
    """The device of each plug (one for a single plug; a splitter's legs each their own)."""
    ports: list[str]
    """The port of each link at this end, in leg order."""
    module: str
    """Transceiver part number in the cage(s), for fibre ('' otherwise)."""

    def column(self, name: str) -> str:
        """A Place field over the end's plugs, each value once ('A01' or 'A01 / A02')."""
        values: list[str] = []
        for place in self.places:
            value = getattr(place, name)
            text = "" if value is None else str(value)
            if text not in values:
                values.append(text)
        return " / ".join(values)

    def where(self) -> str:
        """'A01 U1 gpu001 ib1', a twin-port plug 'N01 U34 compute-leaf008 ib17/1+ib17/2', a splitter's legs
        joined with ' / '."""
        if len(self.places) == 1:
            p = self.places[0]
            return f"{p.rack} U{p.u} {p.device} {'+'.join(self.ports)}"
        legs = zip(self.places, self.ports, strict=True)
        return " / ".join(f"{p.rack} U{p.u} {p.device} {port}" for p, port in legs)


@dataclass(frozen=True, slots=True)
class CableRow:
    label: str
    fabric: str
    tier: str
    rail: int | None
    cable: Cable
    links: list[Link]
    a: CableEnd
    b: CableEnd

    @property
    def a_label(self) -> str:
        """What to print on the label at the A end: the label, where this end goes and where the other."""
        return f"{self.label} | {self.a.where()} | to {self.b.where()}"

    @property
    def b_label(self) -> str:
        return f"{self.label} | {self.b.where()} | to {self.a.where()}"

    @property
    def racks(self) -> set[str]:
        return {p.rack for p in (*self.a.places, *self.b.places)}


@dataclass(frozen=True)
class CableList:
    rows: list[CableRow]
    """Every cable once, in plan order."""
    link_labels: list[str]
    """Each link's label, in the cable table's (plan) order."""


def shared_cable_list(ctx: RenderContext) -> CableList:
    return ctx.shared(_cable_list)


def _cable_list(ctx: RenderContext) -> CableList:
    return cable_list(ctx, shared_cable_table(ctx))


def cable_list(ctx: RenderContext, table: CableTable) -> CableList:
    cables = ctx.topo.cables
    rows = [_row(table, cables[c], label, ctx.topo.links) for c, label in table.cable_labels.items()]
    return CableList(rows, table.link_labels)


def _row(table: CableTable, cable: Cable, label: str, all_links: list[Link]) -> CableRow:
    """The cable's row, its A end the single plug (a splitter's hub); places are the cable table's."""
    links = [all_links[i] for i in cable.links]
    first, places = links[0], table.places
    ends = [
        ([places[link.a] for link in links], [link.a_port for link in links], first.a_module),
        ([places[link.b] for link in links], [link.b_port for link in links], first.b_module),
    ]
    if cable.hub_is_b:
        ends.reverse()
    splitter = len(links) > 1 and (cable.hub_is_b or len({p.device for p in ends[1][0]}) > 1)
    a, b = (
        CableEnd(plugs if splitter and side == 1 else plugs[:1], ports, table.kinds.part_number(module))
        for side, (plugs, ports, module) in enumerate(ends)
    )
    return CableRow(label, first.fabric, first.tier, first.rail, cable, links, a, b)
