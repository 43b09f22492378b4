"""A render after a render: a lock file that a render without one made names the hash of its inputs (its
`afresh` line); a render of those very inputs expands without reading it and checks that the lock file it
makes is the same, reading it after all (LockMoved) when it is not. Both ways give the same files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import BLUEPRINTS, REPO, run_cli

from clusterforge import pipeline
from clusterforge.errors import BlueprintError
from clusterforge.lockfile import WRITTEN, LockMoved, LockUpdate, lock_path, parse_lock, read_afresh
from clusterforge.pipeline import analyse, keep_of, load_valid, lock_of, render_analysis


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example blueprints without their lock files, each rendered once (which writes a new one)."""
    root = tmp_path_factory.mktemp("afresh") / "blueprints"
    shutil.copytree(REPO / "blueprints", root, ignore=shutil.ignore_patterns("*.lock.yaml"))
    for blueprint in BLUEPRINTS:
        done = run_cli("render", "-q", str(root / blueprint.name), "-o", str(root.parent / blueprint.stem))
        assert done.returncode == 0, done.stderr
    return root


def afresh_line(blueprint: Path) -> str:
    return next((line for line in lock_path(blueprint).read_text().splitlines() if line.startswith("afresh:")), "")


@pytest.mark.parametrize("example", [b.name for b in BLUEPRINTS])
def test_a_first_render_names_its_inputs_and_trusting_that_gives_what_reading_the_lock_gives(
    examples: Path, example: str
) -> None:
    valid = load_valid(examples / example)
    assert afresh_line(valid.path) == f"afresh: {valid.source_sha256()}"
    trusted = keep_of(valid, fresh=True)
    assert trusted.fresh and trusted.lock is None
    read = keep_of(valid)
    assert read.lock is not None and read.lock.afresh == valid.source_sha256()
    fast, slow = analyse(valid, keep=trusted), analyse(valid, keep=read)
    assert lock_of(fast) == lock_of(slow) == lock_path(valid.path).read_text(encoding="utf-8")
    assert render_analysis(fast) == render_analysis(slow)


def test_a_second_render_does_not_read_the_lock_file(examples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    valid = load_valid(examples / "l40s-inference.yaml")

    def unread(*_args: object) -> None:
        raise AssertionError("the lock file was read")

    monkeypatch.setattr(pipeline, "read_lock", unread)
    assert keep_of(valid, fresh=True).fresh
    with pytest.raises(AssertionError, match="was read"):
        keep_of(valid, fresh=False)


def test_a_second_render_reports_the_lock_file_unchanged_and_check_finds_it_fresh(examples: Path) -> None:
    blueprint = examples / "h200-training-pod.yaml"
    before = lock_path(blueprint).read_bytes()
    again = run_cli("render", "-q", str(blueprint), "-o", str(examples.parent / "again"))
    assert again.returncode == 0, again.stderr
    assert "h200-training-pod.lock.yaml: unchanged" in again.stdout
    assert lock_path(blueprint).read_bytes() == before
    check = run_cli("render", "--check", str(blueprint), "-o", str(examples.parent / "again"))
    assert check.returncode == 0, check.stdout + check.stderr


def copied(examples: Path, tmp_path: Path, example: str) -> Path:
    folder = tmp_path / "bp"
    shutil.copytree(examples, folder)
    return folder / example


def test_an_edited_blueprint_reads_the_lock_and_its_lock_file_names_no_inputs(examples: Path, tmp_path: Path) -> None:
    blueprint = copied(examples, tmp_path, "l40s-inference.yaml")
    with blueprint.open("a", encoding="utf-8") as handle:
        handle.write("# reviewed\n")
    valid = load_valid(blueprint)
    assert keep_of(valid, fresh=True).lock is not None, "other inputs: the lock file is read"
    done = run_cli("render", "-q", str(blueprint), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "rendering again" not in done.stderr, "read at once, not found out"
    assert afresh_line(blueprint) == ""
    assert keep_of(load_valid(blueprint), fresh=True).lock is not None


def test_a_lock_file_that_is_not_what_a_render_without_it_makes_is_read_after_all(
    examples: Path, tmp_path: Path
) -> None:
    """Its `afresh` line names these inputs, but a line was changed by hand (or by another version of
    clusterforge): the render finds the lock file it makes differs, reads it, keeps what it holds, and the new
    lock file names no inputs."""
    blueprint = copied(examples, tmp_path, "h200-training-pod.yaml")
    lock = lock_path(blueprint)
    text = lock.read_text(encoding="utf-8")
    assert "  inband/gpu001: 10.120.0.2\n" in text and "10.120.0.250" not in text
    lock.write_text(text.replace("  inband/gpu001: 10.120.0.2\n", "  inband/gpu001: 10.120.0.250\n"), "utf-8")
    done = run_cli("render", "-q", str(blueprint), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "h200-training-pod.lock.yaml: written" in done.stdout
    assert "lock.yaml is not what a render without it makes: rendering again, reading it" in done.stderr
    assert "  inband/gpu001: 10.120.0.250\n" in lock.read_text(encoding="utf-8")
    assert afresh_line(blueprint) == ""
    assert "10.120.0.250" in (tmp_path / "out/network/hosts").read_text(encoding="utf-8")
    assert sorted(p.name for p in blueprint.parent.glob(".*.lock.yaml.*")) == []


def test_the_update_refuses_another_text_when_the_same_was_expected(tmp_path: Path) -> None:
    blueprint = tmp_path / "x.yaml"
    lock_path(blueprint).write_text("old\n", encoding="utf-8")
    with LockUpdate(blueprint, fresh_expected=True) as update:
        update.reserve()
        outcome = update.fill(["new\n"])
        assert outcome == WRITTEN
        with pytest.raises(LockMoved, match=r"x\.lock\.yaml is not what a render without it makes"):
            update.filled(outcome)
    assert lock_path(blueprint).read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.lock.yaml"]


HEAD = "version: 1\nblueprint: x\n"


def test_the_reader_takes_the_afresh_line_and_refuses_a_value_that_is_no_hash() -> None:
    digest = "0123456789abcdef" * 4
    assert parse_lock(f"{HEAD}afresh: {digest}\nhosts:\n  a: g 1\n").afresh == digest
    laid_out_otherwise = f"{HEAD}afresh: {digest}\n# a comment\nhosts:\n  a: g 1\n"
    assert parse_lock(laid_out_otherwise).afresh == digest
    with pytest.raises(BlueprintError) as raised:
        parse_lock(f"{HEAD}afresh: 12ab\n", "x.lock.yaml")
    (problem,) = raised.value.findings
    assert problem.location is not None and problem.location.line == 3
    assert "expected the 64 hex digits of a SHA-256 hash" in problem.message


def test_the_header_is_read_alone_and_never_from_what_is_not_a_regular_file(tmp_path: Path) -> None:
    blueprint = tmp_path / "x.yaml"
    assert read_afresh(blueprint) == "", "no lock file"
    digest = "ab" * 32
    lock_path(blueprint).write_text(f"# c\n{HEAD}afresh: {digest}\nhosts:\n" + "  a: g 1\n" * 10_000, "utf-8")
    assert read_afresh(blueprint) == digest
    lock_path(blueprint).unlink()
    os.mkfifo(lock_path(blueprint))
    assert read_afresh(blueprint) == "", "a FIFO would block a plain open"
