"""Single failures against the blueprint's `resilience:` tolerance (CF-FAIL): run only when the blueprint
declares one, so a render pays nothing otherwise (the analysis: clusterforge/failures, docs/failures.md)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Finding
from .context import CheckContext


def check_resilience(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.valid.blueprint.resilience is None:
        return
    from ..failures import analyse_failures

    yield from analyse_failures(ctx.valid, ctx.topo).findings
