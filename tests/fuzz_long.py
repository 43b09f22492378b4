"""The long fuzz run: every case through the pipeline, internal errors counted by place instead of stopping at
the first. Prints what each case ended in; exit 1 if any ended in an internal error.

    python tests/fuzz_long.py [--cases 20000] [--seed 1] [--target blueprint|schema|verify] [--keep DIR]

`blueprint` (the default): the examples with values or text changed (fuzzing.py); `schema`: blueprints built from
the JSON Schema (fuzzing_schema.py); `verify`: real ibnetdiscover and lldpctl -f json captures mutated and run
through `verify` with its reports. Refused cases are counted by the finding code they stopped at; with `--keep`,
each blueprint case that ended in an internal error is written to DIR (JSON data or YAML text) to replay.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fuzzing import Outcome, mutated_capture, mutated_data, mutated_text, run_case, run_verify_case
from fuzzing_schema import schema_blueprints
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

BLUEPRINT_TARGETS = {
    "blueprint": st.one_of(
        mutated_data().map(lambda c: ("data", c[0], c[1], None)),
        mutated_text().map(lambda c: ("text", c[0], None, c[1])),
    ),
    "schema": schema_blueprints().map(lambda data: ("schema", "schema", data, None)),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target", choices=[*sorted(BLUEPRINT_TARGETS), "verify"], default="blueprint")
    parser.add_argument("--keep", type=Path, help="folder for the cases that ended in an internal error")
    args = parser.parse_args()
    outcomes: Counter[str] = Counter()
    refusals: Counter[str] = Counter()
    internal: Counter[str] = Counter()
    started = time.perf_counter()

    long_run = settings(
        max_examples=args.cases,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )

    def count(outcome: Outcome, kind: str) -> None:
        outcomes[f"{kind} {outcome.stage}"] += 1
        if outcome.stage == "refused":
            refusals[outcome.detail] += 1
        if outcome.stage == "internal":
            internal[outcome.detail] += 1
        done = sum(outcomes.values())
        if done % 1000 == 0:  # a long run shows where it is, and what it found so far
            so_far = ", ".join(f"{key}: {n}" for key, n in sorted(outcomes.items()))
            print(f"{done} cases in {time.perf_counter() - started:.0f} s: {so_far}", flush=True)

    def keep(name: str, outcome: Outcome, data: object, text: str | None) -> None:
        args.keep.mkdir(parents=True, exist_ok=True)
        number = sum(internal.values())
        if text is not None:
            (args.keep / f"internal-{number}-{name}.yaml").write_text(text, encoding="utf-8")
        else:
            kept = {"example": name, "detail": outcome.detail, "data": data}
            (args.keep / f"internal-{number}.json").write_text(json.dumps(kept, indent=1, default=repr))

    if args.target == "verify":
        with tempfile.TemporaryDirectory() as folder:

            @seed(args.seed)
            @long_run
            @given(mutated_capture())
            def capture(case: tuple[str, str]) -> None:
                count(run_verify_case(*case, Path(folder)), case[0])

            capture()
    else:

        @seed(args.seed)
        @long_run
        @given(BLUEPRINT_TARGETS[args.target])
        def blueprint(case: tuple[str, str, object, str | None]) -> None:
            kind, name, data, text = case
            outcome: Outcome = run_case(name, data, text)
            count(outcome, kind)
            if outcome.stage == "internal" and args.keep:
                keep(name, outcome, data, text)

        blueprint()
    total = sum(outcomes.values())
    print(f"{total} cases in {time.perf_counter() - started:.0f} s (target {args.target}, seed {args.seed})")
    for key, n in sorted(outcomes.items()):
        print(f"  {key}: {n}")
    print("  refused by code: " + ", ".join(f"{code or '?'} {n}" for code, n in refusals.most_common()))
    for detail, n in internal.most_common():
        print(f"  INTERNAL x{n}: {detail}")
    return 1 if internal else 0


if __name__ == "__main__":
    sys.exit(main())
