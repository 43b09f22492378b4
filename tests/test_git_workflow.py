"""Determinism, atomic writes, `render --check`, and `diff` between Git revisions (through the real CLI)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import BLUEPRINTS, REPO, git, git_repo, run_cli


def tree_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("name", ["h200-training-pod.yaml", "gb200-nvl72.yaml"])
def test_render_is_byte_identical_across_hash_seeds(name: str, tmp_path: Path) -> None:
    outputs = []
    for seed in ("0", "1", "4242"):
        out = tmp_path / f"seed{seed}"
        result = run_cli("render", f"blueprints/{name}", "-o", str(out), env={"PYTHONHASHSEED": seed})
        assert result.returncode == 0, result.stdout + result.stderr
        outputs.append(tree_hashes(out))
    assert outputs[0] == outputs[1] == outputs[2]
    assert len(outputs[0]) > 5


def test_manifest_lists_every_file_with_its_hash(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("render", "blueprints/l40s-inference.yaml", "-o", str(out)).returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    on_disk = tree_hashes(out)
    on_disk.pop("manifest.json")
    assert manifest["files"] == on_disk
    assert manifest["version"] and len(manifest["blueprint_sha256"]) == 64


def test_check_detects_changed_and_missing_files_and_keeps_others(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bp = "blueprints/l40s-inference.yaml"
    assert run_cli("render", bp, "-o", str(out)).returncode == 0
    fresh = run_cli("render", bp, "-o", str(out), "--check")
    assert fresh.returncode == 0 and "fresh" in fresh.stdout
    (out / "slurm/slurm.conf").write_text("# edited by hand\n")
    (out / "slurm/gres.conf").unlink()
    (out / "notes.txt").write_text("stray\n")
    before = tree_hashes(out)
    stale = run_cli("render", bp, "-o", str(out), "--check")
    assert stale.returncode == 1
    assert "stale: " in stale.stdout and "slurm/slurm.conf" in stale.stdout
    assert "missing: " in stale.stdout and "slurm/gres.conf" in stale.stdout
    assert "kept: " in stale.stdout and "notes.txt" in stale.stdout
    assert tree_hashes(out) == before, "--check wrote something"
    # a real render replaces what it wrote: the edits are undone, the file a person added stays
    assert run_cli("render", bp, "-o", str(out)).returncode == 0
    assert (out / "notes.txt").read_text() == "stray\n"
    assert run_cli("render", bp, "-o", str(out), "--check").returncode == 0


def test_failed_render_leaves_the_previous_output_untouched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bp = "blueprints/h200-training-pod.yaml"
    assert run_cli("render", bp, "-o", str(out)).returncode == 0
    before = tree_hashes(out)
    broken = tmp_path / "templates" / "slurm"
    broken.mkdir(parents=True)
    (broken / "gres.conf.j2").write_text("{{ no_such_value }}\n")  # StrictUndefined: fails while rendering
    result = run_cli("render", bp, "-o", str(out), "--templates", str(tmp_path / "templates"))
    assert result.returncode == 1
    assert "CF-RENDER-001" in result.stdout and "no_such_value" in result.stdout
    assert "Traceback" not in result.stderr
    assert tree_hashes(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "templates"], "a temporary folder was left"


def test_site_template_override_replaces_one_template(tmp_path: Path) -> None:
    override = tmp_path / "templates" / "slurm"
    override.mkdir(parents=True)
    shipped = (REPO / "templates/slurm/gres.conf.j2").read_text()
    (override / "gres.conf.j2").write_text("# site header: owned by the HPC team\n" + shipped)
    out = tmp_path / "out"
    result = run_cli(
        "render", "blueprints/h200-training-pod.yaml", "-o", str(out), "--templates", str(tmp_path / "templates")
    )
    assert result.returncode == 0, result.stdout
    assert (out / "slurm/gres.conf").read_text().startswith("# site header: owned by the HPC team\n")
    assert "Include /etc/slurm/clusterforge.conf" in (out / "slurm/slurm.conf").read_text()


def test_diff_between_two_git_revisions(tmp_path: Path) -> None:
    source = (REPO / "blueprints/h200-training-pod.yaml").read_text()
    repo = git_repo(tmp_path / "site", {"blueprints/pod.yaml": source})
    # v2: two more nodes: the first SU is full (the UFM pair moves to the free slot of the second)
    (repo / "blueprints/pod.yaml").write_text(source.replace("    count: 31\n", "    count: 33\n", 1))
    git(repo, "commit", "-qam", "v2")
    result = subprocess.run(
        [
            "python",
            "-m",
            "clusterforge",
            "diff",
            "HEAD~1:blueprints/pod.yaml",
            "HEAD:blueprints/pod.yaml",
            "--format",
            "json",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    diff = json.loads(result.stdout)
    summary = {c["item"]: (c["old"], c["new"]) for c in diff["summary"]}
    assert summary["nodes"] == (42, 44)
    assert summary["GPUs"] == (248, 264)
    # the 33rd node opens a second scalable unit: 8 more leaves
    fabrics = {c["item"]: (c["old"], c["new"]) for c in diff["fabrics"]}
    assert fabrics["compute leaf switches"] == (8, 16)
    assert {c["item"]: (c["old"], c["new"]) for c in diff["partitions"]}["gpu"] == (31, 33)
    changed = {f["file"] for f in diff["files"]}
    assert {"slurm/slurm.conf", "slurm/topology.conf"} <= changed
    assert any(line.startswith("SwitchName=compute-su002") for line in diff["slurm_topology"]["added"])
    markdown = subprocess.run(
        ["python", "-m", "clusterforge", "diff", "HEAD~1:blueprints/pod.yaml", "blueprints/pod.yaml"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    ).stdout
    assert "| nodes | 42 | 44 | +2 |" in markdown


def test_diff_of_identical_blueprints_says_so() -> None:
    result = run_cli("diff", "blueprints/l40s-inference.yaml", "blueprints/l40s-inference.yaml")
    assert result.returncode == 0
    assert "No change to the cluster or its rendered files." in result.stdout


def test_committed_inventories_are_fresh() -> None:
    """inventories/ holds the rendered examples (regenerate: python tests/regen.py inventories)."""
    result = run_cli("render-check")
    assert result.returncode == 0, result.stdout
    assert result.stdout.count(": fresh (") == len(BLUEPRINTS)


def test_pre_commit_hooks_name_real_commands() -> None:
    import yaml

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    for hook in hooks:
        command = hook["entry"].split()[1]
        assert run_cli(command, "--help").returncode == 0, command
    assert shutil.which("git")
