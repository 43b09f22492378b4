"""What purchasing needs beyond the topology: spares, the site's price list, PDU outlets."""

from typing import Annotated, Literal

from pydantic import Field

from .base import Label, Strict

PartClass = Literal["server", "switch", "transceiver", "cable", "psu", "pdu", "rack"]
MAX_UNIT_PRICE = 1e12
"""Dearest unit price a price list may give: the dearest part a BOM lists (a GB200 NVL72 rack, some USD 4M)
costs some 1e11 in the currencies with the most units to the dollar (IDR, VND), so 1e12 leaves ten times that.
With the size limits (bounds.py: at most 250,000 nodes and 4,000,000 server ports, at most 99+99 PSUs a
device) no line orders more than about 1e8 parts, so a line is at most some 1e20 and the total of a few
thousand lines far below the largest float: never `inf`."""
Price = Annotated[float, Field(ge=0, le=MAX_UNIT_PRICE, allow_inf_nan=False)]


class Procurement(Strict):
    spares: dict[PartClass, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    """Spares to order per part class, as a share of the installed quantity of each part, rounded up
    (`{cable: 0.05, transceiver: 0.05, psu: 0.02}`); a class left out gets none."""
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    """ISO 4217 code of the price list."""
    price_list: dict[Label, Price] = Field(default_factory=dict, max_length=10_000)
    """Unit price by vendor part number or catalog key; the BOM prices what it lists and totals it. Keep the
    site's list in a file of its own and `include` it."""
    pdu_outlets: Annotated[int, Field(ge=1, le=96)] = 48
    """Outlets of one rack PDU where the rack type names no PDU model (one that does brings its own count); a
    feed whose PSUs need more is a CF-POWER-007 warning."""
