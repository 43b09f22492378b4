"""report output family (being written)."""

from __future__ import annotations

from .context import RenderContext


def render_report(ctx: RenderContext) -> dict[str, str]:
    return {}
