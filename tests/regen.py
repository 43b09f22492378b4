"""Regenerate reviewed expectations; run it, then review the diff before committing.

    python tests/regen.py errors      # tests/errors/*.expected from `clusterforge validate`
    python tests/regen.py schema      # docs/blueprint.schema.json and docs/reference.md
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from helpers import ERRORS_DIR, REPO, error_cases, run_cli


def regen_errors() -> None:
    for case, target in error_cases():
        result = run_cli("validate", target, cwd=ERRORS_DIR)
        (ERRORS_DIR / f"{case}.expected").write_text(result.stdout, encoding="utf-8")
        print(f"wrote tests/errors/{case}.expected")


def regen_schema() -> None:
    for fmt, name in (("json", "blueprint.schema.json"), ("markdown", "reference.md")):
        result = run_cli("schema", "--format", fmt, cwd=REPO)
        (REPO / "docs" / name).write_text(result.stdout, encoding="utf-8")
        print(f"wrote docs/{name}")


if __name__ == "__main__":
    jobs = {"errors": regen_errors, "schema": regen_schema}
    for name in sys.argv[1:] or list(jobs):
        jobs[name]()
