"""The family registry (render/__init__.py FAMILIES) says what each family reads: a family that needs neither
the findings nor the plan renders from a context made before the checks (a large render starts it while the
checks run), and that context refuses to give findings or a plan instead of giving empty ones."""

from __future__ import annotations

from functools import cache

import pytest
from helpers import REPO

from clusterforge.output.pieces import whole
from clusterforge.pipeline import Analysis, analyse, load_valid
from clusterforge.render import FAMILIES, RenderContext, Rendered, render_family
from clusterforge.render.context import ChecksNotRun

EXAMPLES = sorted((REPO / "blueprints").glob("*.yaml"))
EXAMPLES = [p for p in EXAMPLES if not p.name.endswith(".lock.yaml")]


@cache
def _analysed(name: str) -> Analysis:
    return analyse(load_valid(REPO / "blueprints" / name))


def test_a_context_made_before_the_checks_refuses_findings_and_plan() -> None:
    analysis = _analysed("l40s-inference.yaml")
    early = RenderContext.before_checks(analysis.valid, analysis.topo)
    with pytest.raises(ChecksNotRun):
        _ = early.findings
    with pytest.raises(ChecksNotRun):
        _ = early.plan
    checked = early.with_checks(analysis.findings, analysis.plan)
    assert checked.findings == analysis.findings and checked.plan is analysis.plan


@pytest.mark.parametrize("blueprint", [p.name for p in EXAMPLES])
def test_families_that_need_no_checks_render_before_them_the_same(blueprint: str) -> None:
    analysis = _analysed(blueprint)
    early = RenderContext.before_checks(analysis.valid, analysis.topo)
    checked = RenderContext(analysis.valid, analysis.topo, analysis.findings, plan=analysis.plan)
    for name, family in FAMILIES.items():
        if not family.needs:
            assert _texts(render_family(early, name)) == _texts(render_family(checked, name)), name


def _texts(rendered: Rendered) -> tuple[dict[str, str], object]:
    return {path: whole(text) for path, text in rendered.files.items()}, rendered.made


@pytest.mark.parametrize("name", [name for name, family in FAMILIES.items() if family.needs])
def test_families_that_need_the_checks_say_so_truly(name: str) -> None:
    """A family declared to need the checks reads them: before the checks it cannot render."""
    analysis = _analysed("h200-training-pod.yaml")
    with pytest.raises(ChecksNotRun):
        render_family(RenderContext.before_checks(analysis.valid, analysis.topo), name)
