"""The report's bill of materials and cables per rack: the BOM as purchasing reads it, and for each rack
the cables a technician pulls there (report.html prints one rack per page)."""

from __future__ import annotations

from typing import Any

from ..context import RenderContext
from .bom import BOM_RACKS_CSV, bom_rows, collect
from .cable_rows import shared_cable_list
from .cabling import CABLING_CSV, MD_CABLE_LIMIT, MD_HEADER, rack_summaries, shared_rack_tables
from .report_table import table


def bom_sections(ctx: RenderContext) -> list[dict[str, Any]]:
    procurement = ctx.valid.blueprint.procurement
    rows = bom_rows(ctx, ctx.shared(collect))
    spares = ", ".join(f"{k} {v:.0%}" for k, v in sorted(procurement.spares.items())) or "none"
    intro = (
        f"Installed quantities, spares by the blueprint's policy (procurement.spares: {spares}; rounded up) and "
        f"what to order; installed PSUs ship with their devices. Quantities per rack: {BOM_RACKS_CSV}."
    )
    if procurement.price_list:
        intro += f" Prices in {procurement.currency} from the site's price list."
    body = [[str(r[0]), str(r[2] or r[1]), str(r[3]), str(r[4]), *(str(v) for v in r[5:8]), str(r[9])] for r in rows]
    per_rack = rack_summaries(shared_cable_list(ctx), list(ctx.topo.racks))
    return [
        table(
            "Bill of materials",
            ["category", "part", "description", "airflow", "installed", "spares", "order", "price"],
            body,
            numeric=(4, 5, 6, 7),
            intro=intro,
        ),
        table(
            "Cables per rack",
            ["rack", "cables", "media and ordered length"],
            [[rack, str(count), mix] for rack, count, mix in per_rack],
            numeric=(1,),
            intro=(
                f"Cables with an end in each rack (a cable between two racks is counted in both); {CABLING_CSV} "
                "holds each cable with both ends and the text of its labels, and the printed report gives each "
                "rack's list on a page of its own."
            ),
        ),
    ]


def rack_cable_sections(ctx: RenderContext, limit: int = MD_CABLE_LIMIT) -> list[dict[str, Any]]:
    """One table per rack for report.html to print: every cable with an end in the rack, from the top U
    down; left out above `limit` cables (cabling.csv then is the list)."""
    cables = shared_cable_list(ctx)
    if len(cables) > limit:
        return []
    per_rack = shared_rack_tables(ctx)
    return [
        table(
            f"Rack {rack}: {count} cables",
            MD_HEADER,
            per_rack[rack],
            numeric=(1,),
            intro=mix,
        )
        for rack, count, mix in rack_summaries(cables, list(ctx.topo.racks))
    ]
