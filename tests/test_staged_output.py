"""A render is written family by family into a folder beside its output folder while it goes on, and swapped
in whole at the end: the staged files are those `render_analysis` returns, byte for byte, whether one process
renders them or two (the handoff pack in a forked one); a render that fails half-way, in either process,
leaves nothing; another render's clean-up leaves a running render's folder alone."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO

from clusterforge import pipeline, schedule
from clusterforge.errors import ClusterforgeError, Finding, Severity
from clusterforge.output.pieces import FileText
from clusterforge.output.writer import MANIFEST, StagedTree, manifest_files, manifest_text, with_manifest, write_tree
from clusterforge.pipeline import CONSISTENCY_READS, analyse, load_valid, render_analysis
from clusterforge.render import FAMILIES, Family, Rendered, Renderer
from clusterforge.render.context import RenderContext
from clusterforge.render.handoff import handoff_common
from clusterforge.runtime import forked
from clusterforge.schedule import Strategy, render_analysed, render_blueprint

BP = REPO / "blueprints/l40s-inference.yaml"
IB_BP = REPO / "blueprints/h200-training-pod.yaml"


def staging_folders(parent: Path) -> list[Path]:
    return sorted(parent.glob(".out.clusterforge-new-*"))


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two lanes wherever the test runs (a CI machine may give it one CPU)."""
    monkeypatch.setattr(forked, "cpus_usable", lambda: 2)


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.parametrize("chosen", [Strategy.ONE_PROCESS, Strategy.TWO_LANES, Strategy.WRITE_BEHIND])
def test_staged_files_are_the_rendered_files_on_disk_before_the_swap(tmp_path: Path, chosen: Strategy) -> None:
    analysis = analyse(load_valid(BP))
    expected = render_analysis(analysis)
    out = tmp_path / "out"
    with StagedTree(out, keep=CONSISTENCY_READS) as staged:
        render_analysed(analysis, staged, chosen=chosen)
        (staging,) = staging_folders(tmp_path)
        assert not out.exists(), "nothing is in place before the commit"
        on_disk = {str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file()}
        assert on_disk == set(expected)
        assert dict(staged) == expected, "a text read back from the disk differs from the rendered one"
        staged.commit()
    assert staging_folders(tmp_path) == []
    assert {rel: (out / rel).read_text(encoding="utf-8") for rel in expected} == expected
    assert manifest_files(out) == set(expected)
    assert staged[MANIFEST] == expected[MANIFEST]


def _pids_of_families(monkeypatch: pytest.MonkeyPatch, record: Path) -> None:
    """Every renderer appends `family pid` to `record` (a file: the forked process's memory is its own)."""
    for name, family in list(FAMILIES.items()):

        def recording(
            ctx: RenderContext, name: str = name, renderer: Renderer = family.render
        ) -> Mapping[str, FileText] | Rendered:
            with record.open("a", encoding="utf-8") as out:
                out.write(f"{name} {os.getpid()}\n")
            return renderer(ctx)

        _replace_renderer(monkeypatch, name, recording)


def _replace_renderer(monkeypatch: pytest.MonkeyPatch, name: str, renderer: Renderer) -> None:
    family = FAMILIES[name]
    monkeypatch.setitem(FAMILIES, name, Family(name, renderer, needs=family.needs, handoff=family.handoff))


@pytest.mark.usefixtures("two_cpus")
def test_two_lanes_render_the_handoff_pack_in_a_second_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "pids.txt"
    _pids_of_families(monkeypatch, record)
    monkeypatch.setattr(schedule, "TWO_LANES_MIN_LINKS", 0)  # the example is smaller than where two lanes start
    seen: list[tuple[str, int, int]] = []
    analysis = analyse(load_valid(BP))
    with StagedTree(tmp_path / "out", keep=CONSISTENCY_READS) as staged:
        render_analysed(analysis, staged, progress=lambda stage, done, total: seen.append((stage, done, total)))
        staged.commit()
    pids = dict(line.split() for line in record.read_text(encoding="utf-8").splitlines())
    assert set(pids) == set(FAMILIES)
    here = {name for name, pid in pids.items() if pid == str(os.getpid())}
    handoff = {name for name, family in FAMILIES.items() if family.handoff}
    assert here == set(FAMILIES) - handoff
    assert len({pids[name] for name in handoff}) == 1, "the handoff pack is in one other process"
    steps = [done for stage, done, total in seen if stage == "render" and total == len(FAMILIES)]
    assert steps == list(range(len(FAMILIES) + 1)), "the render bar counts the families of both processes"


@pytest.mark.usefixtures("two_cpus")
def test_a_render_below_the_two_lanes_minimum_stays_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "pids.txt"
    _pids_of_families(monkeypatch, record)
    analysis = analyse(load_valid(BP))
    assert len(analysis.topo.links) < schedule.TWO_LANES_MIN_LINKS
    with StagedTree(tmp_path / "out", keep=CONSISTENCY_READS) as staged:
        render_analysed(analysis, staged)
        staged.commit()
    pids = dict(line.split() for line in record.read_text(encoding="utf-8").splitlines())
    assert set(pids) == set(FAMILIES)
    assert set(pids.values()) == {str(os.getpid())}


def _failing(_ctx: RenderContext) -> dict[str, str]:
    raise ClusterforgeError([Finding("CF-RENDER-001", Severity.ERROR, "a site template failed")])


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.parametrize("chosen", [Strategy.WRITE_BEHIND, Strategy.TWO_LANES])
@pytest.mark.parametrize("family", ["switches", "elevation"], ids=["device-lane", "handoff-lane"])
def test_a_render_that_fails_half_way_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, family: str, chosen: Strategy
) -> None:
    """Some families were written when one fails, in this process or in the forked one (or, in one process,
    by the write-behind process); the error is the same as it was raised (its findings intact), and the other
    process is stopped."""
    _replace_renderer(monkeypatch, family, _failing)
    analysis = analyse(load_valid(BP))
    out = tmp_path / "new" / "deeper" / "out"
    with pytest.raises(ClusterforgeError) as failed, StagedTree(out, keep=CONSISTENCY_READS) as staged:
        render_analysed(analysis, staged, chosen=chosen)
    assert [f.message for f in failed.value.findings] == ["a site template failed"]
    assert type(failed.value) is ClusterforgeError
    assert list(tmp_path.iterdir()) == [], "the staging folder, or the folders made for it, were left"


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.usefixtures("two_cpus")
def test_a_forked_lane_that_dies_fails_the_render_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed(_ctx: RenderContext) -> dict[str, str]:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer would
        return {}

    _replace_renderer(monkeypatch, "acceptance", killed)
    analysis = analyse(load_valid(BP))
    out = tmp_path / "out"
    with pytest.raises(forked.ChildDied, match="SIGKILL"), StagedTree(out, keep=CONSISTENCY_READS) as staged:
        render_analysed(analysis, staged, jobs=2)  # two lanes, or the renderer would kill this process
    assert list(tmp_path.iterdir()) == []


def test_another_renders_clean_up_leaves_a_running_render_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with StagedTree(out) as running:
        running.put("family/a.txt", "running\n")
        write_tree(with_manifest({"family/a.txt": "other\n"}, "0" * 64), out)
        assert len(staging_folders(tmp_path)) == 1, "the running render's folder was removed"
        running.put(MANIFEST, manifest_text(running.digests, "1" * 64))
        running.commit()
    assert (out / "family/a.txt").read_text() == "running\n"
    assert staging_folders(tmp_path) == []


@pytest.mark.parametrize("behind", [False, True], ids=["here", "write-behind"])
def test_a_text_written_piece_by_piece_is_its_utf8_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behind: bool
) -> None:
    """Large texts are encoded a piece at a time; pieces of 3 characters put multi-byte characters (2, 3 and 4
    bytes in UTF-8) on every side of a piece's end, and an empty file stays empty."""
    import hashlib

    import clusterforge.output.writer as writer

    monkeypatch.setattr(writer, "ENCODE_PIECE", 3)
    text = "rack é1 € 😀 gpu001\n" * 7
    out = tmp_path / "out"
    with StagedTree(out) as staged:
        if behind:
            staged.write_behind()
        staged.put("a/table.csv", text)
        staged.put("a/empty.txt", "")
        staged.commit()
    assert (out / "a/table.csv").read_bytes() == text.encode("utf-8")
    assert (out / "a/empty.txt").read_bytes() == b""
    assert staged.digests["a/table.csv"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert staged.digests["a/empty.txt"] == hashlib.sha256(b"").hexdigest()


@pytest.mark.parametrize("ring", [None, 1000], ids=["ring", "small-ring"])
def test_write_behind_sends_large_and_small_files_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ring: int | None
) -> None:
    """Files larger than a batch go into the ring on their own, small ones many to a copy: every one arrives
    whole, with its digest, in the order sent. A ring smaller than a file (and than a batch) is gone round
    many times, with frames and paths split at its end, the render waiting for room."""
    import hashlib

    from clusterforge.output import write_behind

    monkeypatch.setattr(write_behind, "BATCH", 64)
    if ring is not None:
        monkeypatch.setattr(write_behind, "RING_BYTES", ring)
    texts = {f"f/{i:03d}.txt": ("x" * (i * 7)) + "\n" for i in range(60)} | {"big.txt": "é" * 5000}
    out = tmp_path / "out"
    with StagedTree(out) as staged:
        staged.write_behind()
        for rel, text in texts.items():
            staged.put(rel, text)
        assert list(staged) == list(texts)
        assert list(staged.digests.items()) == [
            (rel, hashlib.sha256(t.encode()).hexdigest()) for rel, t in texts.items()
        ]
        staged.commit()
    assert {rel: (out / rel).read_text() for rel in texts} == texts


def test_a_full_ring_goes_on_when_word_of_room_came_while_telling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the ring full, the render tells the process how far it put and takes what the process said
    meanwhile: when that is that everything is written, the render goes on, as no more word will come (here
    the process is given time to write all it was told of and say so before every such look)."""
    import select as select_module
    import time

    from clusterforge.output import write_behind

    monkeypatch.setattr(write_behind, "RING_BYTES", 1000)
    monkeypatch.setattr(write_behind, "BATCH", 64)
    take_freed = write_behind.WriteBehind._take_freed

    def take_freed_late(self: write_behind.WriteBehind, *, wait: bool) -> None:
        if not wait and self._put - self._taken == len(self._ring):
            time.sleep(0.02)
        take_freed(self, wait=wait)

    select = select_module.select

    def select_for_a_while(readers: list[int], writers: list[int], others: list[int], timeout: float | None) -> Any:
        found = select(readers, writers, others, 5 if timeout is None else timeout)
        assert found[0] or timeout is not None, "the render waited for word from the process that never came"
        return found

    monkeypatch.setattr(write_behind.WriteBehind, "_take_freed", take_freed_late)
    monkeypatch.setattr(select_module, "select", select_for_a_while)
    texts = {f"f/{i:03d}.txt": f"{i}" * 300 + "\n" for i in range(40)}
    out = tmp_path / "out"
    with StagedTree(out) as staged:
        staged.write_behind()
        for rel, text in texts.items():
            staged.put(rel, text)
        staged.commit()
    assert {rel: (out / rel).read_text() for rel in texts} == texts


def test_a_position_read_in_two_parts_counts_once_whole() -> None:
    """Either end of the ring reads positions off a pipe: one cut between two reads counts when its rest
    comes, the latest whole one is kept, and the end of the input reads False."""
    from clusterforge.output.write_behind_child import POSITION, Positions

    read_end, write_end = os.pipe()
    positions = Positions(read_end)
    first, second = POSITION.pack(300), POSITION.pack(70_000) + POSITION.pack(1 << 40)
    os.write(write_end, first + second[:5])
    assert positions.read() and positions.latest == 300
    os.write(write_end, second[5:])
    assert positions.read() and positions.latest == 1 << 40
    os.close(write_end)
    assert not positions.read()
    os.close(read_end)


def test_without_memfd_the_ring_is_an_unlinked_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A system without memfd_create gets the ring from a temporary file, gone from the folder at once."""
    import tempfile

    monkeypatch.delattr("os.memfd_create", raising=False)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    out = tmp_path / "out"
    with StagedTree(out) as staged:
        staged.write_behind()
        assert staged._behind is not None
        assert list(temporary.iterdir()) == []
        staged.put("a/b.txt", "text\n" * 1000)
        staged.commit()
    assert (out / "a/b.txt").read_text() == "text\n" * 1000


def test_a_failed_write_behind_is_an_output_error_and_leaves_nothing(tmp_path: Path) -> None:
    """The second process cannot create a file (here: one sent twice): the render gets OutputError naming the
    file, as if it had written it itself, and nothing is left."""
    from clusterforge.output.writer import OutputError

    out = tmp_path / "out"
    with (
        pytest.raises(OutputError, match=r"cannot write the output: File exists \(.*a\.txt\)"),
        StagedTree(out) as staged,
    ):
        staged.write_behind()
        staged.put("a.txt", "first\n")
        staged.put("a.txt", "second\n")
        staged.commit()
    assert list(tmp_path.iterdir()) == []


def test_a_killed_write_behind_process_is_an_output_error(tmp_path: Path) -> None:
    from clusterforge.output.writer import OutputError

    out = tmp_path / "out"
    with pytest.raises(OutputError, match="ended early"), StagedTree(out) as staged:
        staged.write_behind()
        staged.put("a.txt", "first\n")
        assert staged._behind is not None
        staged._behind._proc.kill()
        staged._behind._proc.wait()
        staged.put("b.txt", "second\n" * 300_000)  # told of: the pipe to the process is closed
        staged.commit()
    assert list(tmp_path.iterdir()) == []


BESIDE = {
    Strategy.CHECKS_BESIDE: {"checks", *schedule.FAMILIES_BESIDE_CHECKS},
    Strategy.TWO_LANES: {"checks", *(name for name, family in FAMILIES.items() if family.handoff)},
}
"""What each strategy runs in its forked process."""


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.parametrize("chosen", list(BESIDE))
def test_checks_beside_the_first_families_give_the_same_files_and_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: Strategy
) -> None:
    """The checks and the plan run in a forked process while families that do not show the checks render here
    (checks beside: then the InfiniBand family there; two lanes: the handoff pack there); the files (the
    report and rack drawings show the findings and the plan) and the findings are those of a render that
    checks first. The cable table, which the InfiniBand plan and the handoff pack read, is worked out once,
    before the fork."""
    record = tmp_path / "pids.txt"
    checks = pipeline.run_checks
    table_of = handoff_common._table_of

    def recording_table(ctx: RenderContext) -> handoff_common.CableTable:
        with record.open("a", encoding="utf-8") as out:
            out.write(f"cable-table {os.getpid()}\n")
        return table_of(ctx)

    def recording(*args: object) -> list[Finding]:
        with record.open("a", encoding="utf-8") as out:
            out.write(f"checks {os.getpid()}\n")
        return checks(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "run_checks", recording)
    valid = load_valid(IB_BP)
    expected = analyse(valid)
    expected_files = render_analysis(expected)
    assert any(rel.startswith("infiniband/") for rel in expected_files)
    _pids_of_families(monkeypatch, record)
    monkeypatch.setattr(handoff_common, "_table_of", recording_table)
    record.unlink()
    out = tmp_path / "out"
    seen: list[tuple[str, int, int]] = []
    with StagedTree(out, keep=CONSISTENCY_READS) as staged:
        analysis = render_blueprint(valid, staged, chosen=chosen, progress=lambda *step: seen.append(step))
        staged.commit()
    lines = record.read_text(encoding="utf-8").splitlines()
    tables = [line for line in lines if line.startswith("cable-table ")]
    assert tables == [f"cable-table {os.getpid()}"], "one cable table, worked out before the fork"
    pids = dict(line.split() for line in lines if line not in tables)
    beside = {name for name, pid in pids.items() if pid != str(os.getpid())}
    assert beside == BESIDE[chosen]
    assert len({pids[name] for name in beside}) == 1
    steps = [done for stage, done, total in seen if stage == "render"]
    assert steps == list(range(len(FAMILIES) + 1)), "the render bar counts the families of both processes"
    assert analysis.findings == expected.findings
    assert analysis.plan.as_dict() == expected.plan.as_dict()
    assert {rel: (out / rel).read_text(encoding="utf-8") for rel in expected_files} == expected_files


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.parametrize("chosen", list(BESIDE))
def test_a_check_error_found_beside_the_render_refuses_it_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: Strategy
) -> None:
    error = Finding("CF-POWER-001", Severity.ERROR, "rack R1 draws more than its feeds carry")
    checks = pipeline.run_checks
    monkeypatch.setattr(pipeline, "run_checks", lambda *args: [*checks(*args), error])
    out = tmp_path / "out"
    with pytest.raises(ClusterforgeError) as refused, StagedTree(out, keep=CONSISTENCY_READS) as staged:
        render_blueprint(load_valid(BP), staged, chosen=chosen)
        staged.commit()
    assert refused.value.findings == [error]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.parametrize("family", ["infiniband", "network"], ids=["beside-checks", "this-process"])
def test_a_family_failing_beside_the_checks_or_here_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, family: str
) -> None:
    _replace_renderer(monkeypatch, family, _failing)
    out = tmp_path / "out"
    with pytest.raises(ClusterforgeError) as failed, StagedTree(out, keep=CONSISTENCY_READS) as staged:
        render_blueprint(load_valid(BP), staged, chosen=Strategy.CHECKS_BESIDE)
        staged.commit()
    assert [f.message for f in failed.value.findings] == ["a site template failed"]
    assert list(tmp_path.iterdir()) == []


def test_without_a_python_to_start_the_files_are_written_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedded Python may have no executable to start the write-behind process with: the tree then writes
    its files itself, the same files."""
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    out = tmp_path / "out"
    with StagedTree(out) as staged:
        staged.write_behind()
        assert staged._behind is None
        staged.put("a/b.txt", "text\n")
        staged.commit()
    assert (out / "a/b.txt").read_text() == "text\n"


@pytest.mark.usefixtures("two_cpus")
def test_the_strategy_follows_the_size_and_the_jobs_asked_for() -> None:
    low, high = schedule.TWO_LANES_MIN_LINKS, schedule.TWO_LANES_MAX_LINKS
    assert [schedule.strategy(links) for links in (0, low - 1, low, high, high + 1)] == [
        Strategy.ONE_PROCESS,
        Strategy.ONE_PROCESS,
        Strategy.TWO_LANES,
        Strategy.TWO_LANES,
        Strategy.CHECKS_BESIDE,
    ]
    assert schedule.strategy(3_204_058) is Strategy.TWO_LANES, "the million-GPU benchmark's links"
    assert {schedule.strategy(links, jobs=1) for links in (0, low, high + 1)} == {Strategy.ONE_PROCESS}
    assert {schedule.strategy(links, jobs=2) for links in (0, low, high + 1)} == {Strategy.TWO_LANES}


def test_without_a_second_cpu_a_render_stays_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "cpus_usable", lambda: 1)
    assert schedule.strategy(schedule.TWO_LANES_MIN_LINKS, jobs=2) is Strategy.ONE_PROCESS


@pytest.mark.usefixtures("two_cpus")
def test_jobs_1_starts_no_other_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At a size where the render would check beside it and write behind it, `--jobs 1` forks nothing and
    starts nothing."""
    import subprocess

    monkeypatch.setattr(schedule, "TWO_LANES_MIN_LINKS", 0)
    monkeypatch.setattr(schedule, "TWO_LANES_MAX_LINKS", 0)
    valid = load_valid(BP)
    assert schedule.strategy(len(analyse(valid).topo.links)) is Strategy.CHECKS_BESIDE

    def refused(*_args: object, **_kwargs: object) -> Any:
        raise AssertionError("a process was started")

    monkeypatch.setattr(os, "fork", refused)
    monkeypatch.setattr(subprocess, "Popen", refused)
    out = tmp_path / "out"
    with StagedTree(out, keep=CONSISTENCY_READS) as staged:
        render_blueprint(valid, staged, jobs=1)
        staged.commit()
    assert (out / MANIFEST).read_text(encoding="utf-8") == render_analysis(analyse(valid))[MANIFEST]
