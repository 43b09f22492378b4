"""`clusterforge lab` end to end: the 3-node twin of blueprints/l40s-inference.yaml (the controller and two L40S
nodes, the shape-true subset) brought up, the playbook run over ssh, every check passed, and taken down with
nothing left behind. Needs root (network namespaces, overlay mounts, systemd-nspawn) and the node image, built
once by debootstrap (about 60-150 s, 450 MB) and cached beside the Slurm 24.11 chroot
(CLUSTERFORGE_TEST_CACHE, else ~/.cache/clusterforge-tests): it fails, never skips, when it cannot run.
`python tests/test_lab_twin.py` builds the image ahead of a test run.

The twin of one GB200 NVL72 rack (23 nodes: a whole NVLink domain, a tray on the other leaf of each rail,
every other node group) is opt-in: `pytest -m lab_large tests/test_lab_twin.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from helpers import REPO
from slurm_chroot import cache_dir

from clusterforge.lab import network
from clusterforge.lab.checks import check_lab
from clusterforge.lab.image import Image, base_image
from clusterforge.lab.twin import INOTIFY, down, left_over, up
from clusterforge.pipeline import load_valid


def lab_image() -> Image:
    if os.geteuid() != 0:
        raise AssertionError("the lab test needs root (network namespaces, overlay mounts, systemd-nspawn)")
    return base_image(cache_dir() / "lab")


def bring_up_and_check(tmp_path: Path, blueprint: str, timings: dict[str, float]) -> None:
    lab_image()
    work = tmp_path / "lab"
    inotify_before = INOTIFY.read_text()
    lines: list[str] = []
    state = up(load_valid(REPO / "blueprints" / blueprint), work, cache_dir() / "lab", scale=True, say=lines.append)
    try:
        timings.update(state.timings)
        results = check_lab(work, say=lines.append)
        failed = [r for r in results if not r.ok]
        assert not failed, "\n".join(lines)
        assert {r.name for r in results} >= {"ping matrix", "slurm idle", "job on every node", "second run, no change"}
    finally:
        down(work, say=lines.append)
    assert left_over(state.prefix) == []
    assert INOTIFY.read_text() == inotify_before
    assert not any(os.path.ismount(work / "nodes" / n / "root") for n in state.nodes)
    for pid in state.pids.values():
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]


def test_l40s_twin_day_one_and_two(tmp_path: Path) -> None:
    timings: dict[str, float] = {}
    start = time.monotonic()
    bring_up_and_check(tmp_path, "l40s-inference.yaml", timings)
    assert time.monotonic() - start < 900, timings


@pytest.mark.lab_large
def test_nvl72_rack_twin(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if "lab_large" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("opt-in: pytest -m lab_large tests/test_lab_twin.py (23 containers, several minutes)")
    bring_up_and_check(tmp_path, "gb200-nvl72.yaml", {})


def test_the_lab_refuses_a_namespace_with_a_way_out() -> None:
    """A namespace holding a device that is neither a veth nor a bridge (a VXLAN tunnel, a real way out; this
    kernel has no dummy device), and a default route through it, is refused. Everything happens inside a fresh
    namespace: the host's own links and routes are not touched, and the tunnel has no remote."""
    if os.geteuid() != 0:
        raise AssertionError("needs root (network namespaces)")
    ns = f"cfltest{os.getpid() % 100000}-n0"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        network.ip("link", "add", "up0", "type", "vxlan", "id", "5", "dstport", "4789", ns=ns)
        network.ip("link", "set", "up0", "up", ns=ns)
        network.ip("addr", "add", "198.51.100.2/24", "dev", "up0", ns=ns)
        network.ip("route", "add", "default", "via", "198.51.100.1", ns=ns)
        with pytest.raises(network.NetworkError) as refused:
            network.assert_isolated([ns], ["10.41.0.0/24"], [])
        message = str(refused.value)
        assert "up0 is a vxlan" in message and "via 198.51.100.1, outside the lab's subnets" in message
        routes = json.loads(network.ip("-j", "-4", "route", "show", "table", "all", ns=ns))
        assert any(r.get("dst") == "default" for r in routes)
    finally:
        network.delete([ns])
    assert ns not in network.ip("netns", "list")


if __name__ == "__main__":  # build the node image ahead of a test run
    print(lab_image())
