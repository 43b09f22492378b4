"""The hold period: a removed device's identities stay reserved for the blueprint's `hold_days`, counted from
the date the lock file records for its removal to the render's date (--date or SOURCE_DATE_EPOCH; never the
wall clock), then a render releases them."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli
from test_identity import Change, _copy, _edit, _grow, _shrink

from clusterforge.errors import BlueprintError
from clusterforge.lockfile import lock_path, parse_lock, read_lock, write_lock
from clusterforge.pipeline import analyse, keep_of, load_valid, lock_of


def _render(path: Path, today: date | None, release: bool = False) -> dict[str, str]:
    """The lock file written as `render --date today` writes it; its `held` section."""
    valid = load_valid(path)
    keep = keep_of(valid, release_removed=release, today=today)
    write_lock(path, lock_of(analyse(valid, keep=keep)))
    lock = read_lock(path)
    assert lock is not None
    return lock.section("held")


def _hold(days: int | None) -> Change:
    def change(data: dict[str, Any]) -> None:
        data["hold_days"] = days

    return change


def test_a_removed_node_is_held_for_hold_days_from_its_removal_then_released(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    _edit(path, _hold(30))
    _render(path, date(2026, 12, 1))
    before = path.with_name("l40s-inference.lock.yaml").read_text(encoding="utf-8")
    _edit(path, _shrink("inf", 2))
    held = _render(path, date(2026, 12, 5))
    assert held == {"inf007": "removed 2026-12-05", "inf008": "removed 2026-12-05"}
    assert _render(path, date(2027, 1, 3)) == held  # 29 days: still held, its date kept
    lock = read_lock(path)
    assert lock is not None and "inband/inf008" in lock.section("addresses")
    assert _render(path, date(2027, 1, 4)) == {}  # 30 days: released
    lock = read_lock(path)
    assert lock is not None and not any("inf008" in key for key in lock.section("addresses"))
    assert "inf008" not in lock.section("hosts")
    # a node added now takes the address freed: the fixed order's, as before the removal
    old = parse_lock(before, "before").section("addresses")["inband/inf007"]
    _edit(path, _grow("inf", 1))
    _render(path, date(2027, 1, 5))
    lock = read_lock(path)
    assert lock is not None and lock.section("addresses")["inband/inf007"] == old


def test_without_a_date_no_hold_ends_and_the_first_dated_render_starts_the_clock(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    _edit(path, _hold(1))
    _render(path, None)
    _edit(path, _shrink("inf", 1))
    assert _render(path, None) == {"inf008": "removed"}
    assert _render(path, None) == {"inf008": "removed"}
    assert _render(path, date(2027, 6, 1)) == {"inf008": "removed 2027-06-01"}
    assert _render(path, date(2027, 6, 2)) == {}


def test_hold_days_zero_releases_at_once_and_no_hold_days_holds_until_released(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    _render(path, None)
    _edit(path, _shrink("inf", 1))
    assert _render(path, date(2030, 1, 1)) == {"inf008": "removed 2030-01-01"}
    assert _render(path, date(2040, 1, 1)) == {"inf008": "removed 2030-01-01"}  # no hold_days: held
    assert _render(path, date(2040, 1, 1), release=True) == {}
    path2 = _copy("h200-training-pod", tmp_path)
    _render(path2, None)
    _edit(path2, _hold(0))
    _edit(path2, _shrink("gpu", 1))
    assert _render(path2, None) == {}


@pytest.mark.parametrize("value", ["removed 2026-02-30", "removed yesterday", "gone"])
def test_a_bad_held_line_is_an_error_with_its_line(value: str) -> None:
    with pytest.raises(BlueprintError) as raised:
        parse_lock(f"version: 1\nheld:\n  gpu001: {value}\n", "x.lock.yaml")
    assert "x.lock.yaml:3" in str(raised.value) and "'removed YYYY-MM-DD'" in str(raised.value)


def test_the_cli_takes_the_date_from_the_flag_or_source_date_epoch(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    _edit(path, _hold(7))
    out = tmp_path / "out"
    assert run_cli("render", str(path), "-o", str(out)).returncode == 0
    _edit(path, _shrink("inf", 1))
    epoch = {"SOURCE_DATE_EPOCH": "1796083200"}  # 2026-12-01 00:00 UTC
    assert run_cli("render", str(path), "-o", str(out), env=epoch).returncode == 0
    lock = lock_path(path).read_text(encoding="utf-8")
    assert "  inf008: removed 2026-12-01\n" in lock
    assert run_cli("render", str(path), "-o", str(out), "--check", "--date", "2026-12-07").returncode == 0
    due = run_cli("render", str(path), "-o", str(out), "--check", "--date", "2026-12-08")
    assert due.returncode == 1 and "stale: " in due.stdout and "lock.yaml" in due.stdout
    assert run_cli("render", str(path), "-o", str(out), "--date", "2026-12-08").returncode == 0
    assert "held:" not in lock_path(path).read_text(encoding="utf-8")
    bad = run_cli("plan", str(path), "--date", "08.12.2026")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    bad_env = run_cli("plan", str(path), env={"SOURCE_DATE_EPOCH": "soon"})
    assert bad_env.returncode == 2 and "SOURCE_DATE_EPOCH" in bad_env.stderr and "Traceback" not in bad_env.stderr
