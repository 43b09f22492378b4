"""Rendered Slurm files, proven by Debian's real slurmctld started on loopback: 22.05 (Debian 12, this
machine) and 24.11 (Debian 13, in a cached chroot: topology/block and switch/nvidia_imex)."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import re
from pathlib import Path

import hostlist
import pytest
from helpers import BLUEPRINTS, REPO, run_cli
from slurm_chroot import Slurmctld2411
from slurm_harness import Slurmctld

from clusterforge import codes
from clusterforge.catalog import Server
from clusterforge.errors import ClusterforgeError
from clusterforge.loader import load_blueprint
from clusterforge.output.writer import write_tree
from clusterforge.pipeline import analyse, load_valid, render_files
from clusterforge.validate import ValidBlueprint, validate

EXAMPLES = [p.name for p in BLUEPRINTS]
BLUEPRINTS_DIR = REPO / "blueprints"


def with_tree(valid: ValidBlueprint) -> ValidBlueprint:
    """The same blueprint for Debian 12's Slurm 22.05, with topology/tree: 22.05 has no topology/block."""
    bp = valid.blueprint
    assert bp.slurm is not None
    tree = bp.model_copy(update={"slurm": bp.slurm.model_copy(update={"topology": "tree", "version": "22.05"})})
    return dataclasses.replace(valid, blueprint=tree)


def controller(version: str, out: Path, work: Path, trixie: Path) -> Slurmctld:
    """The real slurmctld of `version`: Debian 12's on this machine, Debian 13's in the chroot."""
    if version == "22.05":
        return Slurmctld(out, work)
    assert version == "24.11", f"no slurmctld {version} to test with"
    return Slurmctld2411(trixie, out)


def rendered(valid: ValidBlueprint, out: Path) -> Path:
    write_tree(render_files(valid), out)
    return out


def parse_records(text: str) -> list[dict[str, str]]:
    """`scontrol -o` lines -> dicts of KEY=value."""
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("name", EXAMPLES)
def test_slurmctld_accepts_the_rendered_files(name: str, tmp_path: Path) -> None:
    valid = with_tree(load_valid(Path("blueprints") / name))
    bp = valid.blueprint
    assert bp.slurm is not None
    out = rendered(valid, tmp_path / "out")
    with Slurmctld(out, tmp_path / "slurm") as ctld:
        sinfo = ctld.run("sinfo", "-h", "-o", "%P %D %N")
        nodes = parse_records(ctld.run("scontrol", "-o", "show", "node"))
        topology = parse_records(ctld.run("scontrol", "-o", "show", "topology"))
        complaints = ctld.complaints()
    assert complaints == []
    # partitions: names, the default, and the nodes of their groups
    counts = {g.name: g.count for g in bp.node_groups}
    expected = {
        (p.name + ("*" if p.default else "")): sum(counts[g] for g in p.node_groups) for p in bp.slurm.partitions
    }
    got = {line.split()[0]: int(line.split()[1]) for line in sinfo.splitlines()}
    assert got == expected
    # every node with the catalog's CPUs, memory and GPUs
    models = {g.name: valid.catalog.require(g.model, Server) for g in bp.node_groups}
    in_partitions = {g for p in bp.slurm.partitions for g in p.node_groups}
    assert len(nodes) == sum(counts[g] for g in in_partitions)
    for record in nodes:
        group = record["AvailableFeatures"].split(",")[0]
        server = models[group]
        cpu = server.cpu
        assert int(record["CPUTot"]) == cpu.sockets * cpu.cores_per_socket * cpu.threads_per_core
        assert (int(record["Sockets"]), int(record["CoresPerSocket"])) == (cpu.sockets, cpu.cores_per_socket)
        assert int(record["RealMemory"]) == int(server.memory_gb * 1024 * 0.95)
        if server.gpus:
            assert record["Gres"].startswith("gpu:") and record["Gres"].split(":")[2].startswith(str(server.gpus.count))
    # the tree: every partition node under exactly one leaf-level switch, and one root
    leaves = [s for s in topology if "Nodes" in s and s.get("Level") == "0"]
    listed = [n for s in leaves for n in hostlist.expand_hostlist(s["Nodes"])]
    assert sorted(listed) == sorted(r["NodeName"] for r in nodes)
    tops = [
        s
        for s in topology
        if s["SwitchName"]
        not in {c for t in topology if t.get("Switches") for c in hostlist.expand_hostlist(t["Switches"])}
    ]
    assert len(tops) == 1


def test_tree_of_the_nvl72_system_follows_the_rack_leaves(tmp_path: Path) -> None:
    # 72 trays in one SU, a leaf per rack and rail: gb001-018 ... gb055-072 under four rack switches (the
    # racks' rail leaves), one spine above
    out = rendered(with_tree(load_valid(Path("blueprints/gb200-nvl72.yaml"))), tmp_path / "out")
    with Slurmctld(out, tmp_path / "slurm") as ctld:
        topology = parse_records(ctld.run("scontrol", "-o", "show", "topology"))
        assert ctld.complaints() == []
    by_name = {s["SwitchName"]: s for s in topology}
    assert by_name["compute-su001-A01"]["Nodes"] == "gb[001-018]"
    assert by_name["compute-su001-A04"]["Nodes"] == "gb[055-072]"
    assert by_name["compute-spine"]["Switches"] == "compute-su001-A[01-04]"
    assert by_name["compute-spine"]["Level"] == "1"


BLOCK_LINE = re.compile(r"^BlockName=(?P<name>[A-Za-z0-9_-]+) Nodes=(?P<nodes>\S+)$")
SIZES_LINE = re.compile(r"^BlockSizes=(?P<sizes>\d+(,\d+)*)$")


def test_block_topology_follows_the_documented_grammar() -> None:
    """topology.conf(5), topology/block (Slurm 23.11+, BlockSizes 24.05+): `BlockName=<name> Nodes=<hostlist>`
    lines and one `BlockSizes=<base>[,<size>...]` line, each size a power-of-two multiple of the one before."""
    files = render_files(load_valid(Path("blueprints/gb200-nvl72.yaml")))
    conf = files["slurm/slurm.conf"]
    assert "TopologyPlugin=topology/block" in conf
    blocks: dict[str, list[str]] = {}
    sizes: list[int] = []
    for line in files["slurm/topology.conf"].splitlines():
        if not line or line.startswith("#"):
            continue
        if match := BLOCK_LINE.match(line):
            assert match["name"] not in blocks
            blocks[match["name"]] = hostlist.expand_hostlist(match["nodes"])
        elif match := SIZES_LINE.match(line):
            sizes = [int(s) for s in match["sizes"].split(",")]
        else:
            pytest.fail(f"line outside the grammar: {line}")
    # one block per 72-GPU NVLink domain: 18 trays each, in rack order, every node exactly once
    assert [len(v) for v in blocks.values()] == [18, 18, 18, 18]
    assert sorted(n for v in blocks.values() for n in v) == [f"gb{i:03d}" for i in range(1, 73)]
    assert sizes == [18, 36, 72]
    assert all(b % a == 0 and (b // a) & (b // a - 1) == 0 for a, b in itertools.pairwise(sizes))


def test_slurmctld_complains_about_a_broken_topology(tmp_path: Path) -> None:
    """The harness can fail: a node in topology.conf that slurm.conf lacks is only logged by slurmctld."""
    out = rendered(load_valid(Path("blueprints/h200-training-pod.yaml")), tmp_path / "out")
    topology = out / "slurm/topology.conf"
    topology.write_text(topology.read_text().replace("gpu[001-031]", "gpu[001-033]"))
    with Slurmctld(out, tmp_path / "slurm") as ctld:
        assert any("gpu033" in line for line in ctld.complaints())


def test_gres_autodetects_by_nvml_on_nvidia_nodes_and_the_plan_checks_it() -> None:
    """SchedMD's gres.conf(5): AutoDetect=nvml detects NVIDIA GPUs, and File/Cores given beside it sanity
    check what is detected; a node-specific AutoDetect applies to that node only. A slurmd without NVML falls
    back to gpu/generic (src/interfaces/gpu.c, _get_gpu_type) and so to these lines: with the lines commented
    out (as the dayone branch rendered them) such a node had no GPUs and went 'inval' in the lab twin."""
    text = render_files(load_valid(Path("blueprints/h200-training-pod.yaml")))["slurm/gres.conf"]
    active = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert "AutoDetect=nvml" not in active  # not global: nodes without GPUs keep the default
    assert len(active) == 8 and all(line.startswith("NodeName=gpu[001-031] ") for line in active)
    assert active[0].startswith("NodeName=gpu[001-031] AutoDetect=nvml Name=gpu Type=h200 File=/dev/nvidia0")
    assert sum("AutoDetect" in line for line in active) == 1


def test_gres_core_affinity_follows_the_pcie_layout() -> None:
    files = render_files(load_valid(Path("blueprints/h200-training-pod.yaml")))
    lines = [line.replace(" AutoDetect=nvml", "") for line in files["slurm/gres.conf"].splitlines()]
    lines = [line for line in lines if line.startswith("NodeName=")]
    # 8 GPUs; GPUs 0-3 behind socket 0 (cores 0-55), 4-7 behind socket 1 (cores 56-111)
    assert len(lines) == 8
    assert lines[0] == "NodeName=gpu[001-031] Name=gpu Type=h200 File=/dev/nvidia0 Cores=0-55"
    assert lines[7] == "NodeName=gpu[001-031] Name=gpu Type=h200 File=/dev/nvidia7 Cores=56-111"


def test_gb200_gpus_bind_to_their_grace_socket(tmp_path: Path) -> None:
    """A GB200 tray: two superchips of one 72-core Grace and two GPUs; GPUs 0-1 on cores 0-71, 2-3 on
    72-143. The real slurmctld (22.05: tree form, it has no topology/block) takes the file with no complaint
    and the node keeps its 4 GPUs."""
    valid = with_tree(load_valid(Path("blueprints/gb200-nvl72.yaml")))
    out = rendered(valid, tmp_path / "out")
    lines = [line for line in (out / "slurm/gres.conf").read_text().splitlines() if line.startswith("NodeName=")]
    assert [line.rsplit(" ", 2)[1:] for line in lines] == [
        ["File=/dev/nvidia0", "Cores=0-71"],
        ["File=/dev/nvidia1", "Cores=0-71"],
        ["File=/dev/nvidia2", "Cores=72-143"],
        ["File=/dev/nvidia3", "Cores=72-143"],
    ]
    with Slurmctld(out, tmp_path / "slurm") as ctld:
        node = parse_records(ctld.run("scontrol", "-o", "show", "node", "gb001"))[0]
        complaints = ctld.complaints()
    assert complaints == []
    assert node["Gres"].startswith("gpu:gb200:4")


def test_gpu_jobs_are_confined_and_get_per_gpu_defaults(tmp_path: Path) -> None:
    """The real slurmctld reads the partition's per-GPU defaults and the cgroup plugins. h200-training-pod:
    224 CPUs and RealMemory 1,992,294 MB (95% of 2 TiB) over 8 GPUs = 28 CPUs and 249,036 MB per GPU."""
    valid = load_valid(Path("blueprints/h200-training-pod.yaml"))
    out = rendered(valid, tmp_path / "out")
    cgroup = (out / "slurm/cgroup.conf").read_text()
    assert "ConstrainDevices=yes" in cgroup.splitlines()
    with Slurmctld(out, tmp_path / "slurm") as ctld:
        partition = parse_records(ctld.run("scontrol", "-o", "show", "partition", "gpu"))[0]
        config = ctld.run("scontrol", "show", "config")
        complaints = ctld.complaints()
    assert complaints == []
    assert "DefCpuPerGPU=28" in partition["JobDefaults"] and "DefMemPerGPU=249036" in partition["JobDefaults"]
    assert re.search(r"ProctrackType\s*=\s*proctrack/cgroup", config)
    assert re.search(r"TaskPlugin\s*=\s*task/cgroup,task/affinity", config)


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_targeted_slurm_accepts_each_example(name: str, tmp_path: Path, trixie: Path) -> None:
    """Each example as committed, on the slurmctld of the release it names (slurm.version)."""
    valid = load_valid(Path("blueprints") / name)
    assert valid.blueprint.slurm is not None
    version = valid.blueprint.slurm.version
    out = rendered(valid, tmp_path / "out")
    assert f"Written for Slurm {version}:" in (out / "slurm/slurm.conf").read_text()
    with controller(version, out, tmp_path / "slurm", trixie) as ctld:
        config = ctld.run("scontrol", "show", "config")
        assert ctld.run("sinfo", "-h", "-o", "%D").split()
        complaints = ctld.complaints()
    assert complaints == []
    assert re.search(rf"SLURM_VERSION\s*=\s*{re.escape(version)}\.", config), config


def test_nvl72_on_slurm_2411_gets_blocks_and_imex_channels(tmp_path: Path, trixie: Path) -> None:
    """Slurm 24.11 reads the NVL72 system's blocks (one per 18-tray rack, aggregated to 36 and 72 nodes by
    BlockSizes=18,36,72) and loads switch/nvidia_imex, which hands each job an IMEX channel."""
    out = rendered(load_valid(Path("blueprints/gb200-nvl72.yaml")), tmp_path / "out")
    assert "SwitchType=switch/nvidia_imex" in (out / "slurm/slurm.conf").read_text().splitlines()
    with Slurmctld2411(trixie, out) as ctld:
        topology = ctld.run("scontrol", "show", "topology")
        config = ctld.run("scontrol", "show", "config")
        complaints = ctld.complaints()
    assert complaints == []
    assert re.search(r"SwitchType\s*=\s*switch/nvidia_imex", config)
    assert re.search(r"TopologyPlugin\s*=\s*topology/block", config)
    blocks = {r["BlockName"]: (r["Nodes"], r["BlockSize"]) for r in parse_records(topology) if "BlockName" in r}
    assert blocks == {
        "block001": ("gb[001-018]", "18"),
        "block002": ("gb[019-036]", "18"),
        "block003": ("gb[037-054]", "18"),
        "block004": ("gb[055-072]", "18"),
    }
    aggregated = {r["Nodes"]: r["BlockSize"] for r in parse_records(topology) if "AggregatedBlock" in r}
    assert aggregated == {"gb[001-036]": "36", "gb[037-072]": "36", "gb[001-072]": "72"}


def test_slurm_2411_harness_fails_on_a_broken_block(tmp_path: Path, trixie: Path) -> None:
    """The 24.11 harness can fail: slurmctld logs a block node that slurm.conf lacks, and stops when a block
    has fewer known nodes than BlockSizes' base."""
    out = rendered(load_valid(Path("blueprints/gb200-nvl72.yaml")), tmp_path / "out")
    topology = out / "slurm/topology.conf"
    original = topology.read_text()
    topology.write_text(original.replace("gb[055-072]", "gb[055-073]"))
    with Slurmctld2411(trixie, out) as ctld:
        assert any('"gb073"' in line for line in ctld.complaints())
    topology.write_text(original.replace("gb[055-072]", "gb[056-072]"))
    with pytest.raises(RuntimeError, match=r"block004\) children count lower"), Slurmctld2411(trixie, out):
        pass


def test_slurm_2205_gets_no_imex_switch_and_a_warning(tmp_path: Path) -> None:
    """For 22.05 (no switch/nvidia_imex: its slurmctld stops with "Can't find plugin") the NVL72 system is
    written without SwitchType, 22.05 accepts it, and check warns that jobs get no IMEX channel."""
    valid = with_tree(load_valid(Path("blueprints/gb200-nvl72.yaml")))
    out = rendered(valid, tmp_path / "out")
    assert "SwitchType" not in (out / "slurm/slurm.conf").read_text()
    with Slurmctld(out, tmp_path / "slurm") as ctld:
        assert ctld.complaints() == []
    findings = [f for f in analyse(valid).findings if f.code == codes.SLURM_WITHOUT_IMEX]
    assert [f.message for f in findings] == [
        "Slurm 22.05 has no switch/nvidia_imex: jobs on the 4 multi-node NVLink domains (gb[001-072]) get no "
        "IMEX channel, so their GPUs cannot share memory across nodes"
    ]


def test_hgx_nodes_get_no_imex_switch() -> None:
    """One-node NVLink domains (HGX H200) need no IMEX channel: no SwitchType, no warning."""
    valid = load_valid(Path("blueprints/h200-training-pod.yaml"))
    assert "SwitchType" not in render_files(valid)["slurm/slurm.conf"]
    assert not [f for f in analyse(valid).findings if f.code == codes.SLURM_WITHOUT_IMEX]


def partitions_of(valid: ValidBlueprint, partitions: list[dict[str, object]]) -> ValidBlueprint:
    """`valid` with other partitions, validated again from its data."""
    loaded = load_blueprint(valid.path)
    data = copy.deepcopy(loaded.data)
    data["slurm"]["partitions"] = partitions
    return validate(dataclasses.replace(loaded, data=data))


def with_partitions(valid: ValidBlueprint, partitions: list[dict[str, object]]) -> ValidBlueprint:
    """`valid` with other partitions in its 22.05 form (tree topology)."""
    return with_tree(partitions_of(valid, partitions))


def test_cpu_only_and_mixed_partitions_render_and_slurmctld_takes_them(tmp_path: Path) -> None:
    """A partition of login nodes (no GPUs) and one of GPU and login nodes: check passes them, so render must
    too. DefCpuPerGPU and DefMemPerGPU are written where a partition has GPU nodes (the smallest share over
    them: 28 CPUs and 249,036 MB of an H200 node) and left out of a partition without any."""
    h200 = load_valid(Path("blueprints/h200-training-pod.yaml"))
    assert h200.blueprint.slurm is not None
    valid = with_partitions(
        h200,
        [
            *(p.model_dump() for p in h200.blueprint.slurm.partitions),
            {"name": "cpu", "node_groups": ["login"]},
            {"name": "mixed", "node_groups": ["gpu", "login"]},
        ],
    )
    assert not analyse(valid).blocking
    out = rendered(valid, tmp_path / "out")
    lines = {line.split()[0]: line for line in (out / "slurm/slurm.conf").read_text().splitlines() if line}
    assert "PerGPU" not in lines["PartitionName=cpu"]
    with Slurmctld(out, tmp_path / "slurm") as ctld:
        partitions = {p["PartitionName"]: p for p in parse_records(ctld.run("scontrol", "-o", "show", "partition"))}
        sinfo = ctld.run("sinfo", "-h", "-o", "%P %D %N")
        complaints = ctld.complaints()
    assert complaints == []
    got = {line.split()[0]: (int(line.split()[1]), line.split()[2]) for line in sinfo.splitlines()}
    assert got == {
        "gpu*": (31, "gpu[001-031]"),
        "debug": (31, "gpu[001-031]"),
        "cpu": (2, "login[001-002]"),
        "mixed": (33, "gpu[001-031],login[001-002]"),
    }
    assert partitions["cpu"]["JobDefaults"] == "(null)"
    for name in ("gpu", "mixed"):
        assert "DefCpuPerGPU=28" in partitions[name]["JobDefaults"], partitions[name]
        assert "DefMemPerGPU=249036" in partitions[name]["JobDefaults"], partitions[name]


def test_validate_check_and_render_agree_on_a_cpu_partition(tmp_path: Path) -> None:
    """The commands as a user runs them: validate and check passed a partition of login nodes, and render
    stopped with an internal error (exit 3, UndefinedError def_cpu_per_gpu); now all three exit 0."""
    text = (BLUEPRINTS_DIR / "h200-training-pod.yaml").read_text(encoding="utf-8")
    text = text.replace(
        '    - {name: debug, node_groups: [gpu], max_time: "02:00:00"}\n',
        '    - {name: debug, node_groups: [gpu], max_time: "02:00:00"}\n    - {name: cpu, node_groups: [login]}\n',
    )
    assert "name: cpu," in text
    blueprint = tmp_path / "pod.yaml"
    blueprint.write_text(text, encoding="utf-8")
    for args in (("validate",), ("check",), ("render", "-o", str(tmp_path / "out"))):
        result = run_cli(*args, str(blueprint))
        assert result.returncode == 0, (args, result.stdout, result.stderr)
    assert "PartitionName=cpu Nodes=login[001-002] " in (tmp_path / "out/slurm/slurm.conf").read_text()


@pytest.mark.parametrize("name", EXAMPLES)
def test_a_slurm_of_cpu_nodes_only_renders_and_slurmctld_takes_it(name: str, tmp_path: Path) -> None:
    """Slurm over a CPU node group alone (no partition node has a GPU or is on the compute fabric): no
    gres.conf, no GresTypes, no per-GPU defaults, and no empty switch in topology.conf (slurmctld stops on
    "switch compute-spine has neither child switches nor nodes")."""
    valid = load_valid(Path("blueprints") / name)
    cpu_group = next(g.name for g in valid.blueprint.node_groups if valid.catalog.require(g.model, Server).gpus is None)
    valid = with_partitions(valid, [{"name": "cpu", "node_groups": [cpu_group], "default": True}])
    out = rendered(valid, tmp_path / "out")
    conf = (out / "slurm/slurm.conf").read_text()
    assert not (out / "slurm/gres.conf").exists()
    assert "GresTypes" not in conf and "PerGPU" not in conf
    with Slurmctld(out, tmp_path / "slurm") as ctld:
        sinfo = ctld.run("sinfo", "-h", "-o", "%P %D")
        topology = parse_records(ctld.run("scontrol", "-o", "show", "topology"))
        complaints = ctld.complaints()
    assert complaints == []
    count = next(g.count for g in valid.blueprint.node_groups if g.name == cpu_group)
    assert sinfo.split() == ["cpu*", str(count)]
    assert all(s.get("Nodes") or s.get("Switches") for s in topology), topology


def test_block_topology_refuses_a_partition_outside_every_block(tmp_path: Path, trixie: Path) -> None:
    """topology/block places a job inside one block only, and a block is an NVLink domain: a partition of
    login nodes alone would run no job (its topology.conf has no block; slurmctld 24.11 logs "No blocks
    configured"), so check refuses it; login nodes beside the GB200 trays in one partition get a warning, and
    the real slurmctld 24.11 takes the files, with the login nodes in no block."""
    nvl72 = load_valid(Path("blueprints/gb200-nvl72.yaml"))
    gpu = {"name": "gpu", "node_groups": ["gb"], "default": True}
    alone = partitions_of(nvl72, [gpu, {"name": "cpu", "node_groups": ["login"]}])
    assert [(f.code, f.message) for f in analyse(alone).blocking] == [
        (
            codes.SLURM_PARTITION_WITHOUT_BLOCK,
            "topology 'block': partition 'cpu' (login[001-003]) has no node in an NVLink domain, so it is in no "
            "block and Slurm's topology/block gives it no job",
        )
    ]
    with pytest.raises(ClusterforgeError):
        render_files(alone)
    mixed = partitions_of(nvl72, [{**gpu, "node_groups": ["gb", "login"]}])
    analysis = analyse(mixed)
    assert not analysis.blocking
    assert [f.message for f in analysis.findings if f.code == codes.SLURM_NODES_WITHOUT_BLOCK] == [
        "topology 'block': login[001-003] of partition 'gpu' are in no NVLink domain, so in no block: Slurm's "
        "topology/block gives them no job"
    ]
    out = rendered(mixed, tmp_path / "out")
    with Slurmctld2411(trixie, out) as ctld:
        sinfo = ctld.run("sinfo", "-h", "-o", "%P %D %N")
        topology = parse_records(ctld.run("scontrol", "-o", "show", "topology"))
        complaints = ctld.complaints()
    assert complaints == []
    assert sinfo.split() == ["gpu*", "75", "gb[001-072],login[001-003]"]
    in_blocks = {n for r in topology if "BlockName" in r for n in hostlist.expand_hostlist(r["Nodes"])}
    assert in_blocks == {f"gb{i:03d}" for i in range(1, 73)}
