"""nccl output family (being written)."""

from __future__ import annotations

from .context import RenderContext


def render_nccl(ctx: RenderContext) -> dict[str, str]:
    return {}
