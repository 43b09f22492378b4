"""cabling output family (being written)."""

from __future__ import annotations

from .context import RenderContext


def render_cabling(ctx: RenderContext) -> dict[str, str]:
    return {}
