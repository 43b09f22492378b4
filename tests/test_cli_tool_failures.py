"""`clusterforge diff` and `export` when the tools they call fail: a Git revision that does not exist
(CF-DIFF-001), Graphviz missing (CF-EXPORT-001) or failing (CF-EXPORT-002). Through the real CLI: a
finding and exit status 1, never a traceback."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from helpers import run_cli

BLUEPRINT = "blueprints/l40s-inference.yaml"


def assert_clean_failure(output: str, returncode: int, code: str) -> None:
    assert returncode == 1, output
    assert "Traceback" not in output
    assert "internal error" not in output
    assert f"error {code}: " in output


def test_diff_against_a_revision_that_does_not_exist() -> None:
    result = run_cli("diff", "nosuchrev:blueprints/h200-training-pod.yaml", "blueprints/h200-training-pod.yaml")
    assert_clean_failure(result.stdout + result.stderr, result.returncode, "CF-DIFF-001")
    (line,) = [x for x in result.stdout.splitlines() if "CF-DIFF-001" in x]
    assert "cannot read Git revision 'nosuchrev' of OLD 'nosuchrev:blueprints/h200-training-pod.yaml': " in line
    assert line.split("h200-training-pod.yaml': ", 1)[1].strip()  # git's own reason follows


def test_export_svg_without_graphviz(tmp_path: Path) -> None:
    # PATH holds only a link to this interpreter: no `dot` anywhere on it
    (tmp_path / "python").symlink_to(sys.executable)
    assert shutil.which("dot", path=str(tmp_path)) is None
    result = run_cli("export", BLUEPRINT, "--format", "svg", env={"PATH": str(tmp_path)})
    assert_clean_failure(result.stdout + result.stderr, result.returncode, "CF-EXPORT-001")
    assert "Graphviz 'dot' is not installed" in result.stdout
    assert "hint: install graphviz" in result.stdout and "--format dot" in result.stdout
    assert "<svg" not in result.stdout


def test_export_dot_does_not_need_graphviz(tmp_path: Path) -> None:
    """The hint of CF-EXPORT-001 offers --format dot: it works with the same PATH."""
    (tmp_path / "python").symlink_to(sys.executable)
    result = run_cli("export", BLUEPRINT, "--format", "dot", env={"PATH": str(tmp_path)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith('graph "l40s-inference" {')


def test_export_svg_when_graphviz_fails(tmp_path: Path) -> None:
    """A stand-in `dot` (a tiny shell script, first on PATH) that exits non-zero with a message on stderr:
    this tests our handling of a failing tool, not Graphviz itself."""
    fake = tmp_path / "dot"
    fake.write_text(
        "#!/bin/sh\ncat >/dev/null\necho 'Error: <stdin>: syntax error in line 3 near x' >&2\nexit 2\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    result = run_cli(
        "export", BLUEPRINT, "--format", "svg", env={"PATH": f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}"}
    )
    assert_clean_failure(result.stdout + result.stderr, result.returncode, "CF-EXPORT-002")
    assert "Graphviz 'dot' failed with exit status 2: Error: <stdin>: syntax error in line 3 near x" in result.stdout
    assert "<svg" not in result.stdout
