"""`verify` fuzzed in CI: real ibnetdiscover and lldpctl -f json captures, mutated (fixed seed, bounded cases, a
few seconds); each must end in a verdict or a located refusal, never an internal error, and no report or
error may carry a raw control or bidi character. The long run: `python tests/fuzz_long.py --target verify`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from fuzzing import mutated_capture, run_verify_case
from hypothesis import HealthCheck, given, seed, settings


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("captures")


def test_mutated_captures_never_cause_an_internal_error(folder: Path) -> None:
    stages: Counter[str] = Counter()

    @seed(20261205)
    @settings(
        max_examples=150,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(case=mutated_capture())
    def one(case: tuple[str, str]) -> None:
        outcome = run_verify_case(*case, folder)
        stages[outcome.stage] += 1
        assert outcome.stage != "internal", outcome.detail

    one()
    assert stages["verified"] and stages["refused"], stages  # the captures reach the comparison, not only the reader
