"""Includes and catalogs: regular files only, inside the blueprint's repository or an allowed folder, size
checked before reading; YAML 1.2 integers; totals bounded before any work."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from helpers import REPO, run_cli

from clusterforge.cli import cli
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


BLUEPRINT_ARGUMENTS = {"blueprint", "blueprints", "patterns", "old", "new"}


def _commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


def test_every_command_that_reads_a_blueprint_takes_allow_dir() -> None:
    """The README promises it: a command reading a blueprint reads its includes and catalogs too."""
    reading = {
        name: {param.name for param in command.params}
        for name, command in _commands(cli)
        if any(isinstance(p, click.Argument) and p.name in BLUEPRINT_ARGUMENTS for p in command.params)
    }
    assert {"validate", "plan", "check", "fit", "diff", "render", "lab up"} <= set(reading)
    assert [name for name, params in reading.items() if "allow" not in params] == []


@pytest.mark.parametrize("command", [["fit"], ["diff"]])
def test_fit_and_diff_read_an_allowed_folder(repo: Path, tmp_path: Path, command: list[str]) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "desc.yaml").write_text("description: from the shared folder\n")
    path = str(with_include(repo, str(shared / "desc.yaml")))
    args = [*command, path, path] if command == ["diff"] else [*command, path]
    refused = run_cli(*args)
    assert refused.returncode == 1 and "CF-YAML-005" in refused.stdout, refused.stdout + refused.stderr
    allowed = run_cli(*args, "--allow-dir", str(shared))
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "CF-YAML-005" not in allowed.stdout


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


# --- fan-out: each file read once per run, the run's reads bounded -------------------------------------------
def fan_out(repo: Path, files: int = 9, repeats: int = 4, size: int = 36_000) -> Path:
    """The blueprint and `files - 1` files of about `size` bytes, each including the next `repeats` times:
    repeats**(files - 1) includes of the last one (65,536 for 9 files of 36 KB included 4 times)."""
    folder = repo / "blueprints"
    filler = ("# " + "x" * 70 + "\n") * (size // 73)

    def includes(i: int) -> str:
        return f"include: [{', '.join([repr(f'f{i}.yaml')] * repeats)}]\n"

    for i in range(1, files):
        (folder / f"f{i}.yaml").write_text((includes(i + 1) if i + 1 < files else "include: []\n") + filler)
    path = folder / "cluster.yaml"
    path.write_text(BASE.replace("site: {name: lab}\n", "site: {name: lab}\n" + includes(1)) + filler)
    return path


def test_an_include_fan_out_stops_at_the_run_bound(repo: Path) -> None:
    path = fan_out(repo)
    result = subprocess.run(
        [sys.executable, "-m", "clusterforge", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,  # before: over 300 s and 2.4 GB
        check=False,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "error CF-LIMIT-003: " in result.stdout and ".yaml:1:" in result.stdout
    assert "more than 256 file reads in one run (repeats counted)" in result.stdout


def test_a_catalog_named_many_times_stops_at_the_run_bound(repo: Path) -> None:
    (repo / "blueprints/site.yaml").write_text("servers: {}\n")
    path = repo / "blueprints/cluster.yaml"
    path.write_text(
        BASE.replace("site: {name: lab}\n", "site: {name: lab}\ncatalogs: [" + "site.yaml, " * 2000 + "]\n")
    )
    result = subprocess.run(
        [sys.executable, "-m", "clusterforge", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert (
        "error CF-LIMIT-003: " in result.stdout
        and "cluster.yaml:4:" in result.stdout
        and "(catalogs[255])" in result.stdout
    )


def test_a_file_included_or_named_twice_is_read_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import clusterforge.inputs

    (repo / "blueprints/a.yaml").write_text("catalogs: [site.yaml]\n")
    (repo / "blueprints/site.yaml").write_text("servers: {}\n")
    path = repo / "blueprints/cluster.yaml"
    path.write_text(BASE.replace("site: {name: lab}\n", "site: {name: lab}\ninclude: [a.yaml, a.yaml]\n"))
    opened: list[str] = []
    real_open = os.open

    def counting_open(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(file).is_relative_to(repo.resolve()):
            opened.append(Path(file).name)
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(clusterforge.inputs.os, "open", counting_open)
    valid = load_valid(path)
    assert sorted(opened) == ["a.yaml", "cluster.yaml", "site.yaml"]
    assert len(valid.blueprint.catalogs) == 2


# --- other files a command opens: site templates, the output folder it compares -------------------------------
def test_a_site_template_that_is_a_fifo_is_refused_without_waiting(repo: Path) -> None:
    templates = repo / "site-templates"
    (templates / "slurm").mkdir(parents=True)
    os.mkfifo(templates / "slurm/gres.conf.j2")
    result = run_cli(
        "render", str(repo / "blueprints/cluster.yaml"), "-o", str(repo / "out"), "--templates", str(templates)
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "gres.conf.j2: error CF-RENDER-001" in result.stdout and "it is not a regular file" in result.stdout


def test_render_check_does_not_wait_on_a_fifo_in_the_output_folder(repo: Path) -> None:
    path, out = repo / "blueprints/cluster.yaml", repo / "out"
    assert run_cli("render", str(path), "-o", str(out)).returncode == 0
    (out / "slurm/gres.conf").unlink()
    os.mkfifo(out / "slurm/gres.conf")
    result = subprocess.run(
        [sys.executable, "-m", "clusterforge", "render", str(path), "-o", str(out), "--check"],
        capture_output=True,
        text=True,
        timeout=60,  # before: waited for a writer forever
        check=False,
    )
    assert result.returncode == 1 and f"stale: {out}/slurm/gres.conf" in result.stdout
