"""Property-based fuzzing in CI: a fixed seed and a bounded number of cases, so a run takes the same cases
every time and a few seconds. The long run (20,000 cases and more) is `python tests/fuzz_long.py`, with
`--target schema` for the blueprints built from the schema."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from typing import Any

from fuzzing import Outcome, examples, mutated_data, mutated_text, run_case
from fuzzing_schema import schema_blueprints
from hypothesis import HealthCheck, given, seed, settings
from hypothesis.strategies import SearchStrategy

CI = settings(
    max_examples=400,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _stages(cases: SearchStrategy[Any], run: Callable[[Any], Outcome], seed_value: int, examples: int) -> Counter[str]:
    """Runs `run` on the fixed-seed cases, each failing on an internal error; how many ended in each stage."""
    stages: Counter[str] = Counter()

    @seed(seed_value)
    @settings(CI, max_examples=examples)
    @given(cases)
    def one(case: Any) -> None:
        outcome = run(case)
        stages[outcome.stage] += 1
        assert outcome.stage != "internal", outcome.detail

    one()
    return stages


def test_mutated_blueprint_data_never_causes_an_internal_error() -> None:
    stages = _stages(mutated_data(), lambda case: run_case(*case), 20261203, 400)
    assert stages["rendered"] and stages["refused"], stages  # the cases reach the render, not only the schema


def test_mutated_blueprint_text_never_causes_an_internal_error() -> None:
    stages = _stages(mutated_text(), lambda case: run_case(case[0], None, case[1]), 20261203, 400)
    assert stages["rendered"] and stages["refused"], stages


def test_blueprints_built_from_the_schema_never_cause_an_internal_error() -> None:
    stages = _stages(schema_blueprints(), lambda data: run_case("schema", data), 20261205, 500)
    assert stages["rendered"] and stages["refused"], stages


def test_cases_the_long_run_found_are_user_errors() -> None:
    """Found by tests/fuzz_long.py: a utilisation of 0 divided by zero; a headroom of 1 left no memory."""
    for field, value in (("mfu", 0.0), ("memory_headroom", 1.0)):
        data = copy.deepcopy(examples()["h200-training-pod"].data)
        job = next(w for w in data["workloads"] if w["kind"] == "training")
        job[field] = value
        outcome = run_case("h200-training-pod", data)
        assert (outcome.stage, outcome.detail) == ("refused", "CF-SCHEMA-004"), (field, outcome)


def test_cases_the_schema_run_found_render() -> None:
    """Found by `fuzz_long.py --target schema`: a Slurm partition of CPU nodes only stopped the render
    (UndefinedError def_cpu_per_gpu, exit 3), and nodes whose catalog names their HCAs (DGX) on a fat-tree
    of two tiers (no rails) were refused by the render's own consistency check (CF-RENDER-002: "rails of
    gpu001 ... do not match the 8 HCAs of nccl/gpu.conf"), though check passed both."""
    cpu_partition = copy.deepcopy(examples()["h200-training-pod"].data)
    cpu_partition["slurm"]["partitions"].append({"name": "cpu", "node_groups": ["login"]})
    dgx_fat_tree = copy.deepcopy(examples()["h200-training-pod"].data)
    dgx_fat_tree["node_groups"][0]["model"] = "nvidia/dgx-h100"
    dgx_fat_tree["fabrics"]["compute"]["topology"] = "fat-tree"
    for data in (cpu_partition, dgx_fat_tree):
        assert run_case("h200-training-pod", data).stage == "rendered"
