"""`clusterforge --help` gives every command's first sentence whole (click cuts it at the terminal width
unless told otherwise); `render` draws progress bars on a terminal only."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from helpers import REPO, run_cli

from clusterforge.cli import cli

L40S = REPO / "blueprints" / "l40s-inference.yaml"


def _words(text: str) -> str:
    return " ".join(text.split())


def test_help_gives_every_command_description_whole() -> None:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    listed = _words(result.stdout)
    for name, command in cli.commands.items():
        first = re.split(r"(?<=\.)\s", _words(command.help or ""), maxsplit=1)[0]
        assert first.endswith(".") and f"{name} {first}" in listed, name


def _render_stderr(tmp_path: Path, *extra: str, terminal: bool) -> str:
    """`render`'s stderr, written to a pseudo-terminal or to a pipe."""
    command = [sys.executable, "-m", "clusterforge", "render", str(L40S), "-o", str(tmp_path / "out"), "--force"]
    if not terminal:
        return run_cli(*command[3:], *extra).stderr
    leader, follower = pty.openpty()
    with subprocess.Popen([*command, *extra], cwd=REPO, stdout=subprocess.DEVNULL, stderr=follower) as child:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        child.wait()
    os.close(leader)
    return b"".join(chunks).decode()


def test_render_draws_a_bar_per_stage_on_a_terminal_only(tmp_path: Path) -> None:
    on_terminal = _render_stderr(tmp_path, terminal=True)
    for stage in ("load", "expand", "check", "render", "consistency", "write"):
        assert re.search(rf"{stage} +\[#{{30}}\]", on_terminal), stage
    assert "[#" not in _render_stderr(tmp_path, terminal=False)
    assert "[#" not in _render_stderr(tmp_path, "--quiet", terminal=True)
