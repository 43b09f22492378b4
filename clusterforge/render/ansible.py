"""ansible output family (being written)."""

from __future__ import annotations

from .context import RenderContext


def render_ansible(ctx: RenderContext) -> dict[str, str]:
    return {}
