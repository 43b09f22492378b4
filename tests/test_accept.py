"""`clusterforge accept` and the burn-in jobs: result folders built from the published samples in tests/accept/
(its README names them) with faults planted, and the rendered jobs checked by Debian's real slurmctld 22.05."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from accept_results import SAMPLES, Run, dcgm, ibdiagnet, nccl
from helpers import REPO, run_cli
from slurm_chroot import Slurmctld2411
from slurm_harness import Slurmctld

from clusterforge import codes
from clusterforge.accept import Acceptance, accept
from clusterforge.accept.report import accept_html, accept_json, accept_markdown, drain_lines
from clusterforge.accept.results import HEADER, ResultError, read_result
from clusterforge.output.writer import write_tree
from clusterforge.pipeline import Analysis, analyse, load_valid, render_files
from clusterforge.render.context import RenderContext
from clusterforge.render.handoff.burnin import burn_in_groups
from clusterforge.render.infiniband.infiniband_plan import plan_subnets

GB200 = Path("blueprints/gb200-nvl72.yaml")


@pytest.fixture(scope="module")
def gb200() -> Analysis:
    return analyse(load_valid(REPO / GB200))


def judged(analysis: Analysis, run: Run) -> Acceptance:
    return accept(analysis.valid, analysis.topo, [run.write()])


def summary(result: Acceptance) -> list[tuple[str, str, tuple[str, ...]]]:
    return sorted((p.code, p.subject, p.drain) for p in result.problems)


# --- the samples as published ------------------------------------------------------------------------------
def with_header(tmp_path: Path, name: str, header: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(f"{HEADER} {header}\n{body}")
    return path


def test_the_published_samples_read_as_their_tools_wrote_them(tmp_path: Path) -> None:
    sample = (SAMPLES / "nccl-tests-all_reduce.txt").read_text()
    nccl_result = read_result(with_header(tmp_path, "a.txt", "test=leaf group=gpu nodes=x", sample))
    assert (nccl_result.size, nccl_result.busbw, nccl_result.wrong) == (8589934592, 338.82, 0)
    assert sorted(set(nccl_result.hosts)) == ["ztan-mig-235z", "ztan-mig-gq73"]
    body = (SAMPLES / "dcgm-diag-r3.json").read_text()
    assert read_result(with_header(tmp_path, "d.json", "test=dcgm group=gpu nodes=x", body)).dcgm == []
    body = (SAMPLES / "nvbandwidth-device_to_device.txt").read_text()
    copies = read_result(with_header(tmp_path, "n.txt", "test=nvbandwidth group=gpu nodes=x", body)).matrix
    assert len(copies) == 56 and min(copies.values()) == 389.02 and max(copies.values()) == 389.40
    body = (SAMPLES / "nvidia-smi-q-fabric.txt").read_text()
    fabric = read_result(with_header(tmp_path, "f.txt", "test=fabric-state group=gpu nodes=x", body)).fabric
    assert [(i, s["State"], s["Status"], s["Summary"]) for i, s in fabric] == [
        (i, "Completed", "Success", "Healthy") for i in range(4)
    ]
    stages = read_result(with_header(tmp_path, "i.log", "test=ibdiagnet fabric=compute", ibdiagnet())).ib_stages
    assert len(stages) == 9 and stages["Speed / Width checks"] == (0, 0)


def test_a_hostile_dcgm_result_is_a_located_error_not_a_crash(tmp_path: Path) -> None:
    """A JSON body nested 200,000 deep once ended `accept` with an internal RecursionError."""
    for body, line, reason in (
        ('{"a": ' + "[" * 200_000 + "]" * 200_000 + "}", 2, "nest deeper"),
        ('{"DCGM GPU Diagnostic": }', 2, "not JSON"),
        ('note\n{\n"a": 1,\n}', 5, "not JSON"),
    ):
        with pytest.raises(ResultError) as caught:
            read_result(with_header(tmp_path, "d.json", "test=dcgm group=gpu nodes=x", body))
        assert (caught.value.code, caught.value.line) == (codes.ACCEPT_MALFORMED, line), caught.value
        assert reason in str(caught.value)


# --- verdicts ----------------------------------------------------------------------------------------------
def test_a_clean_run_of_every_job_passes(gb200: Analysis, tmp_path: Path) -> None:
    run = Run(gb200, tmp_path / "results")
    result = judged(gb200, run)
    assert result.problems == [] and result.untested == [] and result.passed
    # every node, rail pair and tier was measured: 72 nodes' copies, 4 NVLink domains and the spine, each with
    # two collectives (no leaf job: a leaf takes one rack, whose 18 trays are one NVLink domain); 72 rail
    # pairs and 72 spine pairs per rail (every pair of racks meets at the spines)
    counts = {t: sum(1 for m in result.measurements if m.test == t) for t in {m.test for m in result.measurements}}
    assert counts == {"nvbandwidth": 72, "nvlink": 8, "spine": 2, "rail-pair": 288, "spine-pair": 288}
    spine = next(m for m in result.measurements if m.test == "spine" and m.detail == "alltoall")
    # acceptance.md's spine row: 50 GB/s per NIC x (288 - 1) / (288 - 72) ranks outside the NVLink domain
    assert (round(spine.expected, 2), round(spine.floor, 2)) == (66.44, 53.15)


def plant(run: Run, gb200: Analysis, fault: str) -> None:
    groups = burn_in_groups(RenderContext(gb200.valid, gb200.topo, []))
    g = groups[0]
    if fault == "slow rail":  # gb010's rail-3 cable: every pair test of gb010 on rail 3 at 20 GB/s
        run.slow_pairs("gb010", 3, 20.0)
    elif fault == "bad uplink":  # the rail-2 leaf of the second scalable unit: its pairs across the spine
        for node in g.leaf_sets[1]:
            run.slow_pairs(node, 2, 15.0, kind="spine-pair")
    elif fault == "dcgm":
        run.put("dcgm.gb020.json", "test=dcgm group=gb nodes=gb020", dcgm((2, "A memory mismatch was detected")))
    elif fault == "bad rail leaf":  # the rail-4 leaf of the first scalable unit: every pair on it, either tier
        for node in g.leaf_sets[0]:
            run.slow_pairs(node, 4, 12.0)
    elif fault == "ber at the host":
        errors = ["gb036 mlx5_1/P1 - Symbol BER 2.1e-11 is higher than the threshold 1e-12"]
        run.files["ibdiagnet.compute.log"] = f"{HEADER} test=ibdiagnet fabric=compute\n" + ibdiagnet(errors)
    elif fault == "ber by guid":  # a port ibdiagnet names by GUIDs: not in the plan, still a failure
        errors = ["Sfc6a1c030047ee80/Nfc6a1c030047ee80/P1/27/2 - Symbol BER 2.1e-11 is higher than the threshold"]
        run.files["ibdiagnet.compute.log"] = f"{HEADER} test=ibdiagnet fabric=compute\n" + ibdiagnet(errors)
    elif fault == "unlocated ibdiagnet error":  # an error in the Summary that no line names: the fabric fails
        text = ibdiagnet().replace(
            "-I- Links Check               0          0", "-I- Links Check               0          2"
        )
        run.files["ibdiagnet.compute.log"] = f"{HEADER} test=ibdiagnet fabric=compute\n" + text
    elif fault == "ber, port named with its unit":  # ibdiagnet's port name form `<switch>/U1/P<port>`
        errors = ["compute-leaf006/U1/P18 - Symbol BER 2.1e-11 is higher than the threshold 1e-12"]
        run.files["ibdiagnet.compute.log"] = f"{HEADER} test=ibdiagnet fabric=compute\n" + ibdiagnet(errors)
    elif fault == "ber":
        errors = ["compute-leaf006/P18 - Symbol BER 2.1e-11 is higher than the threshold 1e-12"]
        run.files["ibdiagnet.compute.log"] = f"{HEADER} test=ibdiagnet fabric=compute\n" + ibdiagnet(errors)


def expected(gb200: Analysis, fault: str) -> tuple[str, str, tuple[str, ...]]:
    """The one problem a fault must give: code, subject (a cable label or a leaf) and the nodes to drain."""
    g = burn_in_groups(RenderContext(gb200.valid, gb200.topo, []))[0]
    subnet = plan_subnets(gb200.valid, gb200.topo)[0]
    label = {(c.lower.device, c.rail): c.label for c in subnet.cables if c.tier == "node-leaf"}
    if fault == "slow rail":
        return (codes.ACCEPT_RAIL_LOW, label[("gb010", 3)], ("gb010",))
    if fault == "bad uplink":
        return (codes.ACCEPT_LEAF_UPLINKS, g.ports[(g.leaf_sets[1][0], 2)].leaf, ())
    if fault == "dcgm":
        return (codes.ACCEPT_GPU_DIAGNOSTIC, "gb020", ("gb020",))
    if fault == "ber by guid":
        return (codes.ACCEPT_PORT_ERROR, "Sfc6a1c030047ee80/Nfc6a1c030047ee80/P1/27/2", ())
    if fault == "unlocated ibdiagnet error":
        return (codes.ACCEPT_PORT_ERROR, "compute", ())
    if fault == "bad rail leaf":
        return (codes.ACCEPT_RAIL_LEAF, g.ports[(g.leaf_sets[0][0], 4)].leaf, ())
    # compute-leaf006 (rack 2, rail 2) port 18 holds gb036's rail-2 cable (the plan's IB port numbering)
    cable = next(c for c in subnet.cables if c.upper.device == "compute-leaf006" and c.upper.port == 18)
    assert (cable.lower.device, cable.rail) == ("gb036", 2)
    return (codes.ACCEPT_PORT_ERROR, cable.label, ("gb036",))


FAULTS = ["slow rail", "bad uplink", "dcgm", "ber"]
MORE = ["bad rail leaf", "ber at the host", "ber, port named with its unit", "ber by guid", "unlocated ibdiagnet error"]


@pytest.mark.parametrize("faults", [[f] for f in FAULTS + MORE] + [FAULTS], ids=[*FAULTS, *MORE, "all four"])
def test_planted_faults_are_found_and_nothing_else(gb200: Analysis, tmp_path: Path, faults: list[str]) -> None:
    run = Run(gb200, tmp_path / "results")
    for fault in faults:
        plant(run, gb200, fault)
    result = judged(gb200, run)
    assert summary(result) == sorted(expected(gb200, f) for f in faults)
    assert not result.passed
    drained = sorted({n for f in faults for n in expected(gb200, f)[2]})
    assert [line.split()[2].removeprefix("nodename=") for line in drain_lines(result)] == drained


def test_the_slow_rail_names_its_node_cable_and_pairs(gb200: Analysis, tmp_path: Path) -> None:
    run = Run(gb200, tmp_path / "results")
    plant(run, gb200, "slow rail")
    (problem,) = judged(gb200, run).problems
    assert problem.message.startswith(
        "rail 3 of gb010 below floor: 20.0 GB/s with gb009, 20.0 GB/s with gb011; floor 40.0 (one port, 50.0 GB/s): "
        f"cable {problem.subject} (A01 U"
    )
    assert problem.jobs == ("handoff/burn-in/gb/su001.sbatch",)
    markdown = accept_markdown(judged(gb200, run))
    assert f"| {problem.subject} | A01 U23 gb010 ib3 to N01 U39 compute-leaf003 ib5/2 | 1 | &#9744; |" in markdown


def test_a_retest_replaces_the_earlier_result(gb200: Analysis, tmp_path: Path) -> None:
    run = Run(gb200, tmp_path / "results")
    plant(run, gb200, "dcgm")
    folder = run.write()
    assert summary(accept(gb200.valid, gb200.topo, [folder]))[0][1] == "gb020"
    retest = tmp_path / "retest"
    retest.mkdir()
    again = with_header(retest, "dcgm.gb020.json", "test=dcgm group=gb nodes=gb020", dcgm())
    later = (folder / "dcgm.gb020.json").stat().st_mtime + 60
    os.utime(again, (later, later))
    assert accept(gb200.valid, gb200.topo, [folder, retest]).passed
    # judged alone, the re-test passes only with --partial: the other 71 nodes have no result
    assert not accept(gb200.valid, gb200.topo, [retest]).passed
    assert accept(gb200.valid, gb200.topo, [retest], partial=True).passed


def test_the_command_exits_1_and_prints_drain_and_retest(gb200: Analysis, tmp_path: Path) -> None:
    run = Run(gb200, tmp_path / "results")
    plant(run, gb200, "dcgm")
    folder = run.write()
    result = run_cli("accept", str(GB200), str(folder), cwd=REPO)
    assert result.returncode == 1
    assert "error CF-ACCEPT-007: DCGM Hardware test 'GPU Memory' failed on gb020 GPU 2" in result.stdout
    drain = 'scontrol update nodename=gb020 state=drain reason="clusterforge accept: CF-ACCEPT-007 DCGM Hardware'
    assert drain in result.stdout
    assert "sbatch handoff/burn-in/gb/su002.sbatch  # gb020" in result.stdout  # rack 2's leaves
    assert result.stdout.rstrip().endswith("gb200-nvl72: not accepted (1 failure)")
    (folder / "dcgm.gb020.json").write_text(f"{HEADER} test=dcgm group=gb nodes=gb020\n{dcgm()}")
    report = tmp_path / "acceptance.html"
    result = run_cli("accept", str(GB200), str(folder), "--format", "html", "-o", str(report), cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "gb200-nvl72: accepted, every test passed\n"
    assert "Sign-off" in report.read_text() and "for the customer" in report.read_text()


def test_reports_escape_what_the_results_say(gb200: Analysis, tmp_path: Path) -> None:
    run = Run(gb200, tmp_path / "results")
    run.put("dcgm.gb020.json", "test=dcgm group=gb nodes=gb020", dcgm((2, "<script>x</script> | `rm -rf /`")))
    result = judged(gb200, run)
    page, markdown = accept_html(result), accept_markdown(result)
    assert "<script>" not in page and "&lt;script&gt;" in page
    outside_code = "".join(markdown.split("```")[::2])  # a fenced block shows its text as it is
    assert "<script>" not in outside_code and "&lt;script&gt;" in outside_code and "\\|" in outside_code
    assert "## Sign-off" in markdown and "```sh\nscontrol update nodename=gb020 state=drain" in markdown
    assert "`rm" not in markdown.split("```sh")[1]  # a backtick in a reason cannot close the fence
    assert "## Cables to look at" not in markdown  # a DCGM failure names no cable
    verdicts = json.loads(accept_json(result))["nodes"]
    assert verdicts["gb020"] == "fail" and sum(v == "pass" for v in verdicts.values()) == 71


# --- bad input: located, exit 1, never a pass and never a traceback ---------------------------------------
def _cut_nccl(text: str) -> str:
    return text[: text.index("  4294967296")]


BAD_INPUTS = {
    "cut nccl": ("spine.all_reduce.gb001.txt", _cut_nccl, codes.ACCEPT_MALFORMED, "cut short"),
    "no header": ("dcgm.gb001.json", lambda t: t.split("\n", 1)[1], codes.ACCEPT_UNREADABLE, ":1:1: "),
    "bad json": ("dcgm.gb001.json", lambda t: t.replace('"PASS"', "PASS", 1), codes.ACCEPT_MALFORMED, "not JSON"),
    "cut matrix": ("nvbandwidth.gb001.txt", lambda t: t.rsplit("\n", 3)[0], codes.ACCEPT_MALFORMED, "rows: cut"),
    "no fabric": ("fabric-state.gb001.txt", lambda t: t.replace("Fabric", "Fabrik"), codes.ACCEPT_MALFORMED, "R550"),
    "cut ibdiagnet": ("ibdiagnet.compute.log", lambda t: t.split("Summary")[0], codes.ACCEPT_MALFORMED, "Summary"),
    "stranger": (
        "dcgm.gb001.json",
        lambda t: t.replace("nodes=gb001", "nodes=gb099"),
        codes.ACCEPT_NOT_PLANNED,
        "gb099",
    ),
    "row": (
        "rail-pair.r1.gb001+gb002.txt",
        lambda t: t.replace("  8589934592", "  85899x4592"),
        codes.ACCEPT_MALFORMED,
        "row",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_a_malformed_result_is_a_located_error(gb200: Analysis, tmp_path: Path, case: str) -> None:
    name, change, code, words = BAD_INPUTS[case]
    run = Run(gb200, tmp_path / "results")
    run.files[name] = change(run.files[name])
    folder = run.write()
    named = folder / name
    result = run_cli("accept", str(GB200), str(named), cwd=REPO)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    line = result.stderr.strip()
    assert re.match(rf"^\S*{re.escape(name)}(:\d+:1)?: error {code}: ", line), line
    assert words in line


def test_what_is_not_a_regular_small_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.txt"
    big.write_bytes((HEADER + " test=dcgm\n").encode() + b"x" * (8 * 1024 * 1024))
    for path, words in ((fifo, "it is not a regular file"), (big, "it is larger than 8 MiB")):
        result = run_cli("accept", str(GB200), str(path), cwd=REPO)
        assert result.returncode == 1 and f"error {codes.ACCEPT_UNREADABLE}: cannot read it: {words}" in result.stderr


def test_a_test_that_crashed_fails_its_node(gb200: Analysis, tmp_path: Path) -> None:
    run = Run(gb200, tmp_path / "results")
    run.put(
        "nvlink.all_reduce.gb001.txt",
        "test=nvlink group=gb collective=all_reduce nodes=gb[001-018]",
        "NCCL WARN NET/IB : Got completion with error 12\n# clusterforge-burn-in: exit status 1\n",
    )
    (problem,) = judged(gb200, run).problems
    assert problem.code == codes.ACCEPT_TEST_FAILED and problem.subject == "gb[001-018]"
    assert (
        problem.message == "nvlink on gb[001-018] exited with status 1: NCCL WARN NET/IB : Got completion with error 12"
    )
    assert problem.drain == () and problem.jobs == ("handoff/burn-in/gb/nvlink001.sbatch",)


def test_the_sample_sizes_reach_the_plateau() -> None:
    """The jobs' message sizes: in the published run busbw grows by 2.3% from 4 to 8 GiB (330.58 -> 338.82)
    and by 27% from 256 to 512 MiB: the floor is judged at 8 GiB and more."""
    run = nccl(["a", "b"], 8, 338.82)
    rows = {int(line.split()[0]): float(line.split()[7]) for line in run.splitlines() if line[:1] == " "}
    assert rows[8589934592] / rows[4294967296] < 1.03 and rows[536870912] / rows[268435456] > 1.2


# --- the jobs ----------------------------------------------------------------------------------------------
def as_cloud_nodes(root: Path) -> None:
    """The harness's nodes as powered-down cloud nodes: without a slurmd they are UNKNOWN and `sbatch
    --test-only` refuses every job ("Requested node configuration is not available"); a cloud node is one the
    scheduler may allocate (and would power up). slurmctld refuses AutoDetect on a cloud node (gres.conf(5):
    "AutoDetect cannot be used with cloud nodes"), so the harness's copy of gres.conf keeps the plan's lines
    only (the cluster's own nodes are not cloud nodes)."""
    conf = root / "cluster.conf"
    conf.write_text(conf.read_text().replace("State=UNKNOWN", "State=CLOUD"))
    gres = root / "gres.conf"
    if gres.exists():
        gres.write_text(gres.read_text().replace(" AutoDetect=nvml", ""))
    wrapper = root / "slurm.conf"
    wrapper.write_text(wrapper.read_text() + "SuspendProgram=/bin/true\nResumeProgram=/bin/true\n")


class CloudSlurmctld(Slurmctld):
    def __init__(self, rendered: Path, root: Path) -> None:
        super().__init__(rendered, root)
        as_cloud_nodes(root)


class CloudSlurmctld2411(Slurmctld2411):
    def __init__(self, chroot: Path, rendered: Path) -> None:
        super().__init__(chroot, rendered)
        as_cloud_nodes(self.root)


@pytest.mark.parametrize("name", ["h200-training-pod.yaml", "gb200-nvl72.yaml"])
def test_slurm_accepts_every_burn_in_job(name: str, tmp_path: Path) -> None:
    valid = load_valid(REPO / "blueprints" / name)
    bp = valid.blueprint
    assert bp.slurm is not None
    tree = bp.model_copy(update={"slurm": bp.slurm.model_copy(update={"topology": "tree", "version": "22.05"})})
    out = tmp_path / "out"
    write_tree(render_files(dataclasses.replace(valid, blueprint=tree)), out)
    jobs = sorted((out / "handoff/burn-in").rglob("*.sbatch"))
    assert jobs
    broken = tmp_path / "broken.sbatch"
    text = jobs[-1].read_text()
    broken.write_text(
        re.sub(r"--gpus-per-node=\d+", "--gpus-per-node=9", text, count=1)
        if "gpus" in text
        else text.replace("--nodes=1", "--nodes=2")
    )
    with CloudSlurmctld(out, tmp_path / "slurm") as ctld:
        answers = {
            job.relative_to(out).as_posix(): ctld.run("sbatch", "--test-only", str(job), check=False) for job in jobs
        }
        refused = ctld.run("sbatch", "--test-only", str(broken), check=False)
    for name, answer in answers.items():
        assert re.search(r"Job \d+ to start at \S+ using \d+ processors on nodes \S+", answer), f"{name}: {answer}"
    assert "allocation failure" in refused or "error" in refused
    for job in jobs:
        text = job.read_text()
        subprocess.run(["bash", "-n", str(job)], check=True)
        assert "--gpus-per-task" not in text.replace("--gpus-per-task=1 and ConstrainDevices", "")
        for line in (x for x in text.splitlines() if x.strip().startswith("srun") and "_perf" in text):
            assert "--gpus-per-node" in line or "ibdiagnet" in line, line


def test_pairs_cover_each_ring_once_with_disjoint_steps(tmp_path: Path) -> None:
    """The job's ring of pairs, run with srun stubbed: every node with the next and the last with the first,
    once per rail, and no node in two pairs of one step."""
    out = tmp_path / "out"
    write_tree(render_files(load_valid(REPO / "blueprints/h200-training-pod.yaml")), out)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "srun").write_text('#!/bin/bash\necho "$*" >> "$CF_CALLS"\n')
    (stubs / "scontrol").write_text("#!/bin/bash\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "CF_RESULTS": str(tmp_path / "r"),
        "CF_CALLS": str(tmp_path / "calls"),
    }
    subprocess.run(["bash", str(out / "handoff/burn-in/gpu/su001.sbatch")], env=env, check=True, timeout=120)
    pairs = sorted(p.name for p in (tmp_path / "r").glob("rail-pair.*"))
    assert len(pairs) == 31 * 8
    assert "rail-pair.r3.gpu031+gpu001.txt" in pairs and "rail-pair.r8.gpu015+gpu016.txt" in pairs
    first = (tmp_path / "r" / "rail-pair.r3.gpu031+gpu001.txt").read_text().splitlines()[0]
    assert first == f"{HEADER} test=rail-pair group=gpu rail=3 collective=all_reduce nodes=gpu031,gpu001"
    calls = (tmp_path / "calls").read_text()
    assert "CUDA_VISIBLE_DEVICES=2 NCCL_IB_HCA==mlx5_2:1" in calls and "--gpus-per-task" not in calls
    assert sys.platform.startswith("linux")


@pytest.mark.parametrize("name", ["h200-training-pod.yaml", "l40s-inference.yaml"])
def test_the_other_examples_pass_clean_and_name_a_slow_rail(name: str, tmp_path: Path) -> None:
    """HGX (one NVLink domain per node, one scalable unit) and PCIe nodes on Ethernet (no NVLink, no
    ibdiagnet): a clean run passes, and a slow rail on the fifth node names that node's cable alone."""
    analysis = analyse(load_valid(REPO / "blueprints" / name))
    run = Run(analysis, tmp_path / "results")
    if not burn_in_groups(RenderContext(analysis.valid, analysis.topo, []))[0].infiniband:
        del run.files["ibdiagnet.compute.log"]
    assert judged(analysis, run).passed
    g = run.groups[0]
    node = g.leaf_sets[0][4]
    run.slow_pairs(node, 2, 10.0)
    result = judged(analysis, run)
    cable = next(c for c in cable_labels(analysis, node, g.ports[(node, 2)].port))
    assert summary(result) == [(codes.ACCEPT_RAIL_LOW, cable, (node,))]


def cable_labels(analysis: Analysis, device: str, port: str) -> list[str]:
    from clusterforge.render.handoff.handoff_common import cable_table

    return [
        row.label
        for row in cable_table(analysis.valid, analysis.topo).rows()
        if (row.link.a, row.link.a_port) == (device, port)
    ]


ODD_BODIES = {
    "dcgm": ['{"DCGM GPU Diagnostic": {"test_categories": ["x"]}}', '{"DCGM GPU Diagnostic": []}', "[1, 2]", "{"],
    "nvbandwidth": ["memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n 0 1\n 0 N/A x\n", "\x00\x01"],
    "fabric-state": ["GPU 00000000:18:00.0\n    Fabric\n", "Fabric\n    State : Completed\n"],
    "leaf": ["#  out-of-place\n 8 2 float sum -1 1.0 1.0 1.0 0 1.0 1.0 1.0 0\n", "# Avg bus bandwidth : 1\n"],
    "ibdiagnet": ["-I- Stage Warnings Errors\n-I- Discovery 0 x\n", "-E- /P - x\n"],
}


@pytest.mark.parametrize("test,body", [(t, b) for t, bodies in ODD_BODIES.items() for b in bodies])
def test_odd_files_never_crash_and_never_pass(tmp_path: Path, test: str, body: str) -> None:
    nodes = "gb[001-032]" if test == "leaf" else "gb001"
    header = f"test={test} group=gb nodes={nodes} collective=all_reduce fabric=compute"
    path = with_header(tmp_path, "odd.txt", header, body)
    result = run_cli("accept", str(GB200), str(path), "--partial", cwd=REPO)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_slurm_2411_accepts_the_nvl72_jobs_as_committed(tmp_path: Path, trixie: Path) -> None:
    """The GB200 example as committed (Slurm 24.11, topology/block, switch/nvidia_imex): Debian 13's sbatch
    --test-only takes every burn-in job."""
    out = tmp_path / "out"
    write_tree(render_files(load_valid(REPO / GB200)), out)
    jobs = sorted((out / "handoff/burn-in").rglob("*.sbatch"))
    # a leaf per rack: each rack's job takes its 18 trays, inside one 36-node aggregate
    su002 = (out / "handoff/burn-in/gb/su002.sbatch").read_text()
    assert "#SBATCH --nodes=18\n#SBATCH --nodelist=gb[019-036]\n" in su002 and "NODES=gb[019-036]" in su002
    assert "#SBATCH --nodelist=gb[001-018]\n" in (out / "handoff/burn-in/gb/su001.sbatch").read_text()
    with CloudSlurmctld2411(trixie, out) as ctld:
        inner = Path("/") / ctld.root.relative_to(trixie)
        answers = {}
        for job in jobs:
            (ctld.root / job.name).write_text(job.read_text())
            answers[job.name] = ctld.run("sbatch", "--test-only", str(inner / job.name), check=False)
        complaints = ctld.complaints()
    assert complaints == []
    for name, answer in answers.items():
        assert re.search(r"Job \d+ to start at \S+ using \d+ processors on nodes \S+", answer), f"{name}: {answer}"


def test_a_missing_result_is_never_a_pass(gb200: Analysis, tmp_path: Path) -> None:
    """Every node needs a result of every test its jobs run; an empty folder is no pass, even with --partial."""
    run = Run(gb200, tmp_path / "results")
    del run.files["dcgm.gb007.json"]
    del run.files["rail-pair.r2.gb040+gb041.txt"]
    folder = run.write()
    result = run_cli("accept", str(GB200), str(folder), cwd=REPO)
    assert result.returncode == 1
    assert (
        f"warning {codes.ACCEPT_UNTESTED}: 3 planned nodes lack results: gb[007,040-041] (gb007: dcgm)\n"
        in result.stdout
    )
    assert result.stdout.rstrip().endswith("gb200-nvl72: not accepted (3 nodes not tested)")
    assert "gb040: rail 2 with gb041" in accept_json_of(gb200, folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("accept", str(GB200), str(empty), "--partial", cwd=REPO)
    assert result.returncode == 1 and "0 results" in result.stdout


def accept_json_of(analysis: Analysis, folder: Path) -> str:
    result = accept(analysis.valid, analysis.topo, [folder])
    return "; ".join(f"{n}: {', '.join(keys)}" for n, keys in result.missing.items())
