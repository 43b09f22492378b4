"""Shared test helpers: paths and running the real CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ERRORS_DIR = REPO / "tests" / "errors"
BLUEPRINTS = sorted((REPO / "blueprints").glob("*.yaml"))


def run_cli(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("CLUSTERFORGE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "clusterforge", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=300, check=False)


def error_cases() -> list[tuple[str, str]]:
    """(case name, path to validate relative to tests/errors) for every bad-input case."""
    cases = [(p.stem, p.name) for p in ERRORS_DIR.glob("*.yaml")]
    cases += [(p.name, f"{p.name}/blueprint.yaml") for p in ERRORS_DIR.iterdir() if p.is_dir()]
    return sorted(cases)
