"""Every bad input in tests/errors gets its reviewed message, exit code 1 and no traceback."""

from __future__ import annotations

import re

import pytest
from helpers import ERRORS_DIR, error_cases, run_cli

CASES = error_cases()
LOCATED = re.compile(r"^[\w./-]+\.yaml(:\d+:\d+)?: error CF-[A-Z]+-\d{3}: .+")


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize(("case", "target"), CASES, ids=[c for c, _ in CASES])
def test_bad_input(case: str, target: str) -> None:
    result = run_cli("validate", target, cwd=ERRORS_DIR)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    expected = (ERRORS_DIR / f"{case}.expected").read_text(encoding="utf-8")
    assert result.stdout == expected
    first = result.stdout.splitlines()[0]
    assert LOCATED.match(first), f"first line names no file, line and code: {first!r}"


@pytest.mark.parametrize(("case", "target"), CASES[:5], ids=[c for c, _ in CASES[:5]])
def test_github_format_annotates_file_and_line(case: str, target: str) -> None:
    result = run_cli("validate", "--format", "github", target, cwd=ERRORS_DIR)
    assert result.returncode == 1, case
    assert result.stdout.startswith("::error file="), case
