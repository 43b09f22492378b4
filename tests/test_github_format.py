"""`--format github` prints GitHub workflow commands escaped by GitHub's rules (its toolkit's escapeData and
escapeProperty): a blueprint's file name holding a newline and `::` cannot end an annotation or start a
command of its own, on stdout or stderr."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from helpers import ERRORS_DIR, REPO, run_cli

from clusterforge.errors import Finding, Severity, SourceLocation, visible

HOSTILE_NAME = "pod\n::error file=evil.yaml,line=1::injected 100%\r\n::add-mask::x,y.yaml"
COMMAND = re.compile(r"::(error|warning|notice) (file=([^,:\r\n]*),line=\d+,col=\d+,)?title=CF-[A-Z]+-\d{3}::[^\r\n]*")


def unescape(value: str) -> str:
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(escaped, char)
    return value


def commands(output: str) -> list[re.Match[str]]:
    """Every line a runner would read as a workflow command, each one of ours, whole."""
    lines = [line for line in output.splitlines() if line.startswith("::")]
    matches = [COMMAND.fullmatch(line) for line in lines]
    assert all(matches), lines
    return [m for m in matches if m]


@pytest.mark.parametrize(
    ("command", "source"),
    [("validate", ERRORS_DIR / "unknown-server-model.yaml"), ("check", REPO / "blueprints/h200-training-pod.yaml")],
)
def test_a_file_name_cannot_inject_workflow_commands(command: str, source: Path, tmp_path: Path) -> None:
    blueprint = tmp_path / HOSTILE_NAME
    shutil.copy(source, blueprint)
    result = run_cli(command, "--format", "github", HOSTILE_NAME, cwd=tmp_path)
    assert "Traceback" not in result.stderr
    found = commands(result.stdout) + commands(result.stderr)
    assert found, result.stdout
    assert {unescape(m.group(3)) for m in found} == {visible(HOSTILE_NAME)}
    assert "injected" not in "".join(line for line in result.stderr.splitlines() if line.startswith("::"))


def test_data_and_properties_are_escaped_by_githubs_rules() -> None:
    finding = Finding(
        "CF-REF-002",
        Severity.WARNING,
        "100% of\r\nthe racks: a, b",
        location=SourceLocation("a,b:c%\n.yaml", 3, 4),
        hint="x::y",
    )
    assert finding.as_github() == (
        "::warning file=a%2Cb%3Ac%25%0A.yaml,line=3,col=4,title=CF-REF-002::100%25 of%0D%0Athe racks: a, b (hint: x::y)"
    )


@pytest.mark.parametrize("command", ["validate", "check", "plan"])
def test_a_file_name_reaches_the_terminal_made_visible(command: str, tmp_path: Path) -> None:
    """A file name may hold terminal escapes (here one that clears the screen and prints a fake verdict):
    every message names the file with them made visible, in text as in the other formats."""
    name = "pod\x1b[2J\x1b[Hvalid (0 errors)\u202e.yaml"
    shutil.copy(ERRORS_DIR / "unknown-server-model.yaml", tmp_path / name)
    result = run_cli(command, name, cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    shown = result.stdout + result.stderr
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "pod\\x1b[2J\\x1b[Hvalid (0 errors)<U+202E>.yaml" in shown
