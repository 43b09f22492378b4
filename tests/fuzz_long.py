"""The long fuzz run: every case through the pipeline, internal errors counted by place instead of stopping at
the first. Prints what each case ended in; exit 1 if any ended in an internal error.

    python tests/fuzz_long.py [--cases 20000] [--seed 1] [--target blueprint|verify]

`--target verify` mutates real ibnetdiscover and lldpctl -f json captures and runs `verify` with its reports.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fuzzing import Outcome, mutated_capture, mutated_data, mutated_text, run_case, run_verify_case
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--target", choices=["blueprint", "verify"], default="blueprint")
    args = parser.parse_args()
    outcomes: Counter[str] = Counter()
    internal: Counter[str] = Counter()
    started = time.perf_counter()

    long_run = settings(
        max_examples=args.cases,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )

    @seed(args.seed)
    @long_run
    @given(st.one_of(mutated_data().map(lambda c: (*c, None)), mutated_text().map(lambda c: (c[0], None, c[1]))))
    def blueprint(case: tuple[str, object, str | None]) -> None:
        count(run_case(*case), "text" if case[2] is not None else "data")

    def count(outcome: Outcome, kind: str) -> None:
        outcomes[f"{kind} {outcome.stage}"] += 1
        if outcome.stage == "internal":
            internal[outcome.detail] += 1
        done = sum(outcomes.values())
        if done % 1000 == 0:  # a long run shows where it is, and what it found so far
            so_far = ", ".join(f"{key}: {n}" for key, n in sorted(outcomes.items()))
            print(f"{done} cases in {time.perf_counter() - started:.0f} s: {so_far}", flush=True)

    if args.target == "verify":
        with tempfile.TemporaryDirectory() as folder:

            @seed(args.seed)
            @long_run
            @given(mutated_capture())
            def capture(case: tuple[str, str]) -> None:
                count(run_verify_case(*case, Path(folder)), case[0])

            capture()
    else:
        blueprint()
    total = sum(outcomes.values())
    print(f"{total} cases in {time.perf_counter() - started:.0f} s (seed {args.seed})")
    for key, n in sorted(outcomes.items()):
        print(f"  {key}: {n}")
    for detail, n in internal.most_common():
        print(f"  INTERNAL x{n}: {detail}")
    return 1 if internal else 0


if __name__ == "__main__":
    sys.exit(main())
