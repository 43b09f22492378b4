"""`clusterforge --help` gives every command's first sentence whole (click cuts it at the terminal width
unless told otherwise)."""

from __future__ import annotations

import re

from helpers import run_cli

from clusterforge.cli import cli


def _words(text: str) -> str:
    return " ".join(text.split())


def test_help_gives_every_command_description_whole() -> None:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    listed = _words(result.stdout)
    for name, command in cli.commands.items():
        first = re.split(r"(?<=\.)\s", _words(command.help or ""), maxsplit=1)[0]
        assert first.endswith(".") and f"{name} {first}" in listed, name
