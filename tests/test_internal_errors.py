"""A mistake in a site's template override is the user's (exit 1, CF-RENDER-001); a bug in clusterforge's own
renderers is an internal error (exit 3), even when an override folder is given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_cli

from clusterforge import cli
from clusterforge.render import FAMILIES, Family, RenderContext

BLUEPRINT = "blueprints/l40s-inference.yaml"


def site_templates(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "templates"
    (folder / "slurm").mkdir(parents=True)
    (folder / "slurm" / "gres.conf.j2").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "text", ["{% if %}\n", "{{ cluster_name | length // 0 }}\n"], ids=["syntax-error", "error-in-template-code"]
)
def test_error_in_a_site_template_is_a_user_error(tmp_path: Path, text: str) -> None:
    folder = site_templates(tmp_path, text)
    result = run_cli("render", BLUEPRINT, "-o", str(tmp_path / "out"), "--templates", str(folder))
    assert result.returncode == 1, result.stderr
    assert "CF-RENDER-001" in result.stdout and "rendering slurm failed" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def _broken_renderer(ctx: RenderContext) -> dict[str, str]:
    return {"handoff/bom.csv": str(1 // len(ctx.findings[:0]))}  # ZeroDivisionError: a bug, not bad input


@pytest.mark.parametrize("with_override", [False, True])
def test_a_renderer_bug_is_an_internal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], with_override: bool
) -> None:
    monkeypatch.setitem(FAMILIES, "bom", Family("bom", _broken_renderer, handoff=True))
    monkeypatch.delenv("CLUSTERFORGE_DEBUG", raising=False)
    args = ["render", BLUEPRINT, "-o", str(tmp_path / "out")]
    if with_override:
        args += ["--templates", str(site_templates(tmp_path, "{{ cluster_name }}\n"))]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(args)
    assert exit_info.value.code == cli.EXIT_INTERNAL == 3
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError" in err and "CF-RENDER-001" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("code", "status", "err"), [(None, 0, ""), (2, 2, ""), ("stopped", 1, "stopped\n")])
def test_the_command_ends_its_process_as_sys_exit_would_with_its_output_flushed(
    code: str | int | None, status: int, err: str
) -> None:
    """`main` run as the command ends the process without freeing its objects (cli._end_process): the exit
    status and the buffered output are those `sys.exit` gives."""
    script = f"import sys; from clusterforge.cli import _end_process; print('written', end=''); _end_process({code!r})"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (status, "written", err)
