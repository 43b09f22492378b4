"""Property-based fuzzing in CI: a fixed seed and a bounded number of cases, so a run takes the same cases
every time and a few seconds. The long run (20,000 cases and more) is `python tests/fuzz_long.py`."""

from __future__ import annotations

from typing import Any

from fuzzing import mutated_data, mutated_text, run_case
from hypothesis import HealthCheck, given, seed, settings

CI = settings(max_examples=400, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@seed(20261203)
@CI
@given(mutated_data())
def test_mutated_blueprint_data_never_causes_an_internal_error(case: tuple[str, dict[str, Any]]) -> None:
    outcome = run_case(*case)
    assert outcome.stage != "internal", outcome.detail


@seed(20261203)
@CI
@given(mutated_text())
def test_mutated_blueprint_text_never_causes_an_internal_error(case: tuple[str, str]) -> None:
    name, text = case
    outcome = run_case(name, None, text)
    assert outcome.stage != "internal", outcome.detail
