"""Shared test helpers: paths and running the real CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ERRORS_DIR = REPO / "tests" / "errors"
BLUEPRINTS = sorted(p for p in (REPO / "blueprints").glob("*.yaml") if not p.name.endswith(".lock.yaml"))


def run_cli(
    *args: str,
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env.pop("CLUSTERFORGE_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "clusterforge", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def git_repo(root: Path, files: dict[str, str]) -> Path:
    """A new Git repository at `root` with `files` (relative path: text) committed on `main`."""
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "config", "user.name", "t")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", ".")
    git(root, "commit", "-qm", "v1")
    return root


def error_cases() -> list[tuple[str, str]]:
    """(case name, path to validate relative to tests/errors) for every bad-input case."""
    cases = [(p.stem, p.name) for p in ERRORS_DIR.glob("*.yaml")]
    cases += [(p.name, f"{p.name}/blueprint.yaml") for p in ERRORS_DIR.iterdir() if p.is_dir()]
    return sorted(cases)


def ansible(case_work: Path, *args: str) -> str:
    """Run an Ansible tool with the traps of this machine closed; fail on a non-zero exit or any warning."""
    home = case_work / "ansible-home"
    for sub in ("local", "remote"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    config = home / "ansible.cfg"
    config.write_text("[defaults]\n", encoding="utf-8")
    env = {
        **os.environ,
        "LC_ALL": "C.UTF-8",
        "ANSIBLE_CONFIG": str(config),
        "ANSIBLE_HOME": str(home),
        "ANSIBLE_LOCAL_TEMP": str(home / "local"),
        "ANSIBLE_REMOTE_TEMP": str(home / "remote"),
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1",
        "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "1",
        "ANSIBLE_INVENTORY_ENABLED": "yaml",
        "ANSIBLE_DUPLICATE_YAML_DICT_KEY": "error",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
    }
    proc = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=300, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}:\n{output}"
    assert "WARNING" not in output, f"{' '.join(args)} warned:\n{output}"
    return proc.stdout


def git_repository(folder: Path) -> Path:
    """A new Git repository in `folder` (made), on branch main, with a committer set."""
    folder.mkdir(parents=True, exist_ok=True)
    for args in (
        ("init", "-q", "-b", "main"),
        ("config", "user.email", "t@example.invalid"),
        ("config", "user.name", "t"),
    ):
        subprocess.run(["git", "-C", str(folder), *args], capture_output=True, check=True)
    return folder
