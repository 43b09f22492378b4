"""Day two in a real Git repository, through the CLI: render and commit, the hooks' checks, grow a group,
render again, diff, check; no existing host gets another address; a forced renumber is refused by plan and
render and listed by diff. The repository holds a blueprint at its root, one in blueprints/ with included
fragments beside it, and their lock files."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from helpers import REPO, git_repository

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
ENV.pop("CLUSTERFORGE_DEBUG", None)


def cf(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["python", "-m", "clusterforge", *args], cwd=repo, env=ENV, capture_output=True, text=True, check=False
    )


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def hook_args(hook_id: str) -> list[str]:
    """The command and arguments a pre-commit hook of this repository runs."""
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    hook = next(h for h in hooks if h["id"] == hook_id)
    assert hook["pass_filenames"] is False
    return [*hook["entry"].split()[1:], *hook.get("args", [])]


def host_identities(out: Path) -> dict[str, Any]:
    """Per host: ansible_host and every address the inventory gives it; /etc/hosts lines; SlurmctldHost."""
    seen: dict[str, Any] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for name, host in node.get("hosts", {}).items():
                seen[name] = {k: host.get(k) for k in ("ansible_host", "cf_addresses", "cf_port_addresses")}
            for value in node.values():
                walk(value)

    walk(json.loads((out / "ansible/inventory.json").read_text(encoding="utf-8")))
    for line in (out / "network/hosts").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            address, *names = line.split()
            seen.setdefault(f"hosts:{names[0]}", address)
    slurm = (out / "slurm/slurm.conf").read_text(encoding="utf-8")
    seen["SlurmctldHost"] = re.findall(r"^SlurmctldHost=.*$", slurm, re.MULTILINE)
    return seen


def test_grow_render_diff_check_in_a_git_repository(tmp_path: Path) -> None:
    repo = git_repository(tmp_path / "site")
    (repo / "blueprints").mkdir()
    pod = repo / "pod.yaml"  # a blueprint at the repository's root
    pod.write_text((REPO / "blueprints/h200-training-pod.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    shutil.copy(REPO / "blueprints/gb200-nvl72.yaml", repo / "blueprints/gb200-nvl72.yaml")
    shutil.copytree(REPO / "blueprints/gb200-nvl72", repo / "blueprints/gb200-nvl72")  # included fragments
    for blueprint in ("pod.yaml", "blueprints/gb200-nvl72.yaml"):
        result = cf(repo, "render", blueprint)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "lock.yaml: written" in result.stdout
    assert (repo / "pod.lock.yaml").is_file() and (repo / "blueprints/gb200-nvl72.lock.yaml").is_file()
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "day one")

    # the hooks: every blueprint wherever it is, fragments and lock files passed over
    for hook in ("clusterforge-validate", "clusterforge-render-check"):
        result = cf(repo, *hook_args(hook))
        assert result.returncode == 0, hook + result.stdout + result.stderr
    checked = cf(repo, *hook_args("clusterforge-render-check"))
    assert checked.stdout.count(": fresh (") == 2
    assert "fabrics.yaml: skipped" in checked.stderr or "fabrics.yaml" not in checked.stdout
    before = host_identities(repo / "inventories/h200-training-pod")

    # day two: five more GPU nodes in a new row
    data = pod.read_text(encoding="utf-8")
    data = data.replace("    count: 31\n", "    count: 36\n", 1).replace(
        "rows: [A, B], per_rack: 3", "rows: [A, B, C], per_rack: 3"
    )
    data = data.replace(
        "    - {name: B, racks: 5, rack_type: apc/ar3300-4x-ap8888}\n",
        "    - {name: B, racks: 5, rack_type: apc/ar3300-4x-ap8888}\n"
        "    - {name: C, racks: 2, rack_type: apc/ar3300-4x-ap8888}\n",
    )
    pod.write_text(data, encoding="utf-8")
    stale = cf(repo, *hook_args("clusterforge-render-check"))
    assert stale.returncode == 1
    assert "out of date" in stale.stdout
    grown = cf(repo, "render", "pod.yaml")
    assert grown.returncode == 0, grown.stdout + grown.stderr
    after = host_identities(repo / "inventories/h200-training-pod")
    assert len(after) > len(before)
    moved = {host: (before[host], after[host]) for host in before if before[host] != after.get(host)}
    assert moved == {}, moved
    lock = (repo / "pod.lock.yaml").read_text(encoding="utf-8")
    assert "  gpu036: gpu 36\n" in lock

    diff = cf(repo, "diff", "HEAD:pod.yaml", "pod.yaml")
    assert diff.returncode == 0, diff.stderr
    assert "Addresses that move" not in diff.stdout and "Host names" not in diff.stdout
    first = diff.stdout.index("\n### ")
    assert diff.stdout.index("### Cluster") >= first  # identity sections, when any, come before the figures
    assert "| nodes | 42 | 47 | +5 |" in diff.stdout
    assert cf(repo, "render", "pod.yaml", "--check").returncode == 0
    assert cf(repo, *hook_args("clusterforge-render-check")).returncode == 0
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "day two: five more nodes")

    # a node out of the middle: every other host keeps what it had, diff lists no move, the hook passes
    pod.write_text(
        pod.read_text(encoding="utf-8").replace("    count: 36\n", "    count: 35\n    absent: [10]\n", 1),
        encoding="utf-8",
    )
    assert cf(repo, "render", "pod.yaml", "--date", "2026-12-05").returncode == 0
    fewer = host_identities(repo / "inventories/h200-training-pod")
    assert "gpu010" not in fewer and {h: after[h] for h in fewer if h in after} == {
        h: fewer[h] for h in fewer if h in after
    }
    assert "  gpu010: removed 2026-12-05\n" in (repo / "pod.lock.yaml").read_text(encoding="utf-8")
    out = cf(repo, "diff", "HEAD:pod.yaml", "pod.yaml").stdout
    assert "No existing host, address, cable or rack slot moves." in out, out[:2000]
    assert cf(repo, *hook_args("clusterforge-render-check")).returncode == 0
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "day two: gpu010 out")

    # a change that renumbers: refused by plan and render, listed first by diff
    pod.write_text(pod.read_text(encoding="utf-8").replace("10.120.0.0/24", "10.121.0.0/24"), encoding="utf-8")
    for command in (("plan", "pod.yaml"), ("render", "pod.yaml")):
        refused = cf(repo, *command)
        assert refused.returncode == 1, refused.stdout
        assert "CF-IDENT-001" in refused.stdout and "inband gpu001 10.120.0.2 -> 10.121.0.2" in refused.stdout
    assert git(repo, "status", "--porcelain") == " M pod.yaml\n", "a refused render wrote something"
    listed = cf(repo, "diff", "HEAD:pod.yaml", "pod.yaml")
    assert listed.stdout.index("### Addresses that move") < listed.stdout.index("### Rendered files")
    assert "| `inband/gpu001` | 10.120.0.2 | 10.121.0.2 |" in listed.stdout
    allowed = cf(repo, "render", "pod.yaml", "--allow-renumber")
    assert allowed.returncode == 0 and "warning CF-IDENT-001" in allowed.stdout
    assert cf(repo, *hook_args("clusterforge-render-check")).returncode == 0
