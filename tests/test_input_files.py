"""Includes and catalogs: regular files only, inside the blueprint's repository or an allowed folder, size
checked before reading; YAML 1.2 integers; totals bounded before any work."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import REPO, run_cli

from clusterforge.inputs import MAX_FILE_BYTES
from clusterforge.loader import load_blueprint
from clusterforge.pipeline import load_valid

BASE = (
    (REPO / "tests/errors/count-zero.yaml")
    .read_text()
    .replace("count: 0", "count: 4")
    # no leaf takes the OOB uplink: the site's router holds the gateway (else CF-ADDR-005)
    .replace("    ipv4_pool: 10.1.0.0/24\n", "    ipv4_pool: 10.1.0.0/24\n    gateway: 10.1.0.1\n")
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A Git repository holding one valid blueprint, `cluster.yaml`."""
    root = tmp_path / "repo"
    (root / "blueprints").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "blueprints/cluster.yaml").write_text(BASE)
    return root


def with_include(repo: Path, target: str) -> Path:
    path = repo / "blueprints/cluster.yaml"
    path.write_text(BASE.replace("site: {name: lab}\n", f"site: {{name: lab}}\ninclude: [{target!r}]\n"))
    return path


def validate(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    result = run_cli("validate", str(path), *extra)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    return result


def test_an_include_elsewhere_in_the_repository_is_read(repo: Path) -> None:
    (repo / "common").mkdir()
    (repo / "common/desc.yaml").write_text("description: shared text\n")
    assert validate(with_include(repo, "../common/desc.yaml")).returncode == 0


def test_an_include_outside_the_repository_is_refused_without_echoing_it(repo: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secrets.yaml"
    secret.write_text("token: s3cr3t-value\n")
    result = validate(with_include(repo, str(secret)))
    assert result.returncode == 1
    assert "CF-YAML-005" in result.stdout and "outside the blueprint's repository" in result.stdout
    assert "s3cr3t" not in result.stdout + result.stderr
    # the same file through a link inside the repository is still outside
    (repo / "blueprints/link.yaml").symlink_to(secret)
    linked = validate(with_include(repo, "link.yaml"))
    assert linked.returncode == 1 and "outside the blueprint's repository" in linked.stdout


def test_allow_dir_lets_a_named_folder_in(repo: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "desc.yaml").write_text("description: from the shared folder\n")
    path = with_include(repo, str(shared / "desc.yaml"))
    assert validate(path).returncode == 1
    assert validate(path, "--allow-dir", str(shared)).returncode == 0


def test_a_device_is_refused_without_reading_it(repo: Path) -> None:
    result = validate(with_include(repo, "/dev/zero"), "--allow-dir", "/dev")
    assert result.returncode == 1 and "not a regular file" in result.stdout


def test_a_fifo_is_refused_without_waiting_for_a_writer(repo: Path) -> None:
    os.mkfifo(repo / "blueprints/pipe.yaml")
    result = validate(with_include(repo, "pipe.yaml"))  # run_cli's timeout would fail a hang
    assert result.returncode == 1 and "not a regular file" in result.stdout


def test_a_catalog_that_is_a_device_or_outside_is_refused(repo: Path) -> None:
    path = repo / "blueprints/cluster.yaml"
    for target, reason in (("/dev/zero", "outside the blueprint's repository"), ("/etc/hostname", "outside")):
        path.write_text(BASE.replace("site: {name: lab}\n", f"site: {{name: lab}}\ncatalogs: [{target}]\n"))
        result = validate(path)
        assert result.returncode == 1 and "CF-CAT-001" in result.stdout and reason in result.stdout


def test_an_oversized_file_is_refused_before_it_is_read(repo: Path) -> None:
    big = repo / "blueprints/big.yaml"
    with open(big, "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk
    result = validate(with_include(repo, "big.yaml"))
    assert result.returncode == 1 and "larger than 8 MiB" in result.stdout


def test_integers_are_yaml_1_2(repo: Path) -> None:
    path = repo / "blueprints/cluster.yaml"
    path.write_text(BASE.replace("count: 4", "count: 010"))
    assert load_valid(path).blueprint.node_groups[0].count == 10  # PyYAML's YAML 1.1 reads 8
    path.write_text(BASE.replace("count: 4", "count: 08"))  # an internal error before
    assert load_valid(path).blueprint.node_groups[0].count == 8
    path.write_text(BASE.replace("count: 4", "count: 0o10"))
    assert load_blueprint(path).data["node_groups"][0]["count"] == 8


def test_huge_sums_of_counts_stop_before_any_work(repo: Path) -> None:
    groups = "".join(f"  - {{name: g{i}, model: generic/cpu-1u, count: 200000, role: storage}}\n" for i in range(400))
    path = repo / "blueprints/cluster.yaml"
    path.write_text(BASE.replace("node_groups:\n", "node_groups:\n" + groups))
    result = validate(path)
    assert result.returncode == 1
    assert "CF-LIMIT-001" in result.stdout and "80,000,006 nodes in 402 groups" in result.stdout


def test_server_ports_are_bounded_too(repo: Path) -> None:
    servers = yaml.safe_load((REPO / "clusterforge/catalog/data/servers.yaml").read_text())["servers"]
    many = servers["generic/cpu-1u"]
    cpu_ports = sum(g["count"] for g in many["ports"])
    many["ports"] = [{**many["ports"][0], "count": 64}, *many["ports"][1:]]
    (repo / "blueprints/site.yaml").write_text(yaml.safe_dump({"servers": {"site/many-ports": many}}))
    group = "  - {name: many, model: site/many-ports, count: 100000, role: storage}\n"
    path = repo / "blueprints/cluster.yaml"
    path.write_text(
        BASE.replace("node_groups:\n", "node_groups:\n" + group).replace(
            "site: {name: lab}\n", "site: {name: lab}\ncatalogs: [site.yaml]\n"
        )
    )
    result = validate(path)
    assert result.returncode == 1 and "CF-LIMIT-002" in result.stdout
    ports = 100_000 * sum(g["count"] for g in many["ports"]) + 4 * 13 + 2 * cpu_ports  # 13 ports per DGX H100
    assert f"asks for {ports:,} server ports" in result.stdout, result.stdout


def test_a_blueprint_outside_any_repository_reads_its_own_folder(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    shutil.copy(REPO / "tests/errors/count-zero.yaml", folder / "b.yaml")
    (folder / "b.yaml").write_text(BASE.replace("site: {name: lab}\n", "site: {name: lab}\ninclude: [d.yaml]\n"))
    (folder / "d.yaml").write_text("description: beside it\n")
    assert validate(folder / "b.yaml").returncode == 0


def test_a_file_name_with_a_newline_never_reaches_a_config_header(repo: Path) -> None:
    path = repo / "blueprints" / "pod\nSlurmctldHost=evil.yaml"
    path.write_text(BASE)
    result = run_cli("render", str(path), "-o", str(repo / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    for conf in sorted((repo / "out/slurm").glob("*.conf")):
        text = conf.read_text()
        assert "evil" not in text and "SlurmctldHost=evil" not in text.splitlines(), conf
        assert text.splitlines()[0].endswith(("from blueprint tiny.", "from blueprint tiny. Do not edit.")), conf
