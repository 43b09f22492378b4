"""Findings that repeat per rack are grouped into one naming every rack; the rest stay as they are."""

from __future__ import annotations

from clusterforge.checks.grouping import group_repeats
from clusterforge.errors import Finding, Severity


def _rack(name: str, kw: float = 51.8) -> Finding:
    return Finding(
        "CF-POWER-002",
        Severity.WARNING,
        f"rack {name} plans {kw} kW, 90% of the 57.5 kW its feeds can carry",
        ("floor", "rows", 0),
        hint="less than 10% headroom for growth and inrush",
        subject=name,
    )


def test_same_finding_about_32_racks_is_one_naming_them_all() -> None:
    racks = [f"A1-{i:03d}" for i in range(1, 33)]
    other = _rack("A1-033", kw=49.0)
    grouped = group_repeats([_rack(r) for r in racks] + [other])
    assert len(grouped) == 2 and grouped[1] == other
    one = grouped[0]
    assert one.subjects == tuple(racks)
    assert one.subject == "A1-[001-032]"
    assert one.message == (
        "rack A1-001 plans 51.8 kW, 90% of the 57.5 kW its feeds can carry; likewise A1-[002-032] (32 in all)"
    )
    assert one.as_dict()["subjects"] == racks


def test_a_suppressed_rack_is_not_grouped_with_the_others() -> None:
    from dataclasses import replace

    findings = [_rack("A1-001"), replace(_rack("A1-002"), suppressed_by="measured"), _rack("A1-003")]
    grouped = group_repeats(findings)
    assert [f.subject for f in grouped] == ["A1-[001,003]", "A1-002"]
