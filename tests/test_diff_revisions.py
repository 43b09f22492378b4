"""`clusterforge diff` on Git revisions a pull request controls: a revision is resolved to an object id before
Git sees it (no revision text is ever an option of `git archive`), and the symbolic links of a revision's tree
are followed inside it and refused when they point out of it. On a real temporary repository, through the CLI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from helpers import REPO, git, git_repo

BLUEPRINT = (REPO / "blueprints/l40s-inference.yaml").read_text(encoding="utf-8")


def diff(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CLUSTERFORGE_DEBUG", None)
    command = ["python", "-m", "clusterforge", "diff", *args]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False, env=env, timeout=300)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A site repository with one committed blueprint."""
    return git_repo(tmp_path / "site", {"blueprints/pod.yaml": BLUEPRINT})


def refused(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    (line,) = [x for x in result.stdout.splitlines() if "error CF-DIFF-001: " in x]
    return line


@pytest.mark.parametrize("option", ["--output={victim}", "--remote={victim}", "-o{victim}", "--exec=touch {victim}"])
def test_a_revision_is_never_an_option_of_git(option: str, repo: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    rev = option.replace("{victim}", str(victim))
    result = diff(repo, "--", f"{rev}:blueprints/pod.yaml", "blueprints/pod.yaml")
    assert victim.read_text(encoding="utf-8") == "precious\n"  # `git archive --output=` truncated it
    line = refused(result)
    assert f"cannot read Git revision '{rev}' of OLD" in line and "names no commit or tree" in line


def test_a_revision_with_path_syntax_stays_in_the_scratch_folder(repo: Path, tmp_path: Path) -> None:
    """The unpacked tree is named by its object id, not by the revision's text."""
    git(repo, "tag", "v1")
    result = diff(repo, "--format", "json", "refs/tags/v1:blueprints/pod.yaml", "main:blueprints/pod.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_a_link_inside_the_tree_is_followed(repo: Path) -> None:
    (repo / "blueprints/current.yaml").symlink_to("pod.yaml")
    (repo / "shared").mkdir()
    (repo / "shared/pod.yaml").write_text(BLUEPRINT.replace("count: 8", "count: 9", 1), encoding="utf-8")
    (repo / "blueprints/shared").symlink_to("../shared", target_is_directory=True)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "links")
    same = diff(repo, "HEAD:blueprints/pod.yaml", "HEAD:blueprints/current.yaml")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "No change to the cluster" in same.stdout
    grown = diff(repo, "HEAD:blueprints/pod.yaml", "HEAD:blueprints/shared/pod.yaml")
    assert grown.returncode == 0, grown.stdout + grown.stderr
    assert "| nodes |" in grown.stdout


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../../../etc/passwd", "../.."])
def test_a_link_out_of_the_tree_is_refused(target: str, repo: Path) -> None:
    (repo / "blueprints/evil").symlink_to(target)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a link out")
    line = refused(diff(repo, "HEAD:blueprints/pod.yaml", "blueprints/pod.yaml"))
    assert f"blueprints/evil is a symbolic link to '{target}', outside the revision's tree" in line
    assert "root:" not in diff(repo, "HEAD:blueprints/evil", "blueprints/pod.yaml").stdout
