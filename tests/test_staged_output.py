"""A render is written family by family into a folder beside its output folder while it goes on, and swapped
in whole at the end: the staged files are those `render_analysis` returns, byte for byte; a render that fails
half-way leaves nothing; another render's clean-up leaves a running render's folder alone."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import REPO

from clusterforge.errors import ClusterforgeError, Finding, Severity
from clusterforge.pipeline import CONSISTENCY_READS, analyse, load_valid, render_analysis, render_staged
from clusterforge.render.context import RenderContext
from clusterforge.writer import MANIFEST, StagedTree, manifest_files, manifest_text, with_manifest, write_tree

BP = REPO / "blueprints/l40s-inference.yaml"
RENDER = sys.modules["clusterforge.render"]  # the package: `clusterforge.render` the attribute is its function


def staging_folders(parent: Path) -> list[Path]:
    return sorted(parent.glob(".out.clusterforge-new-*"))


def test_staged_files_are_the_rendered_files_on_disk_before_the_swap(tmp_path: Path) -> None:
    analysis = analyse(load_valid(BP))
    expected = render_analysis(analysis)
    out = tmp_path / "out"
    with StagedTree(out, keep=CONSISTENCY_READS) as staged:
        render_staged(analysis, staged)
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


def test_a_render_that_fails_half_way_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(_ctx: RenderContext) -> dict[str, str]:
        raise ClusterforgeError([Finding("CF-RENDER-001", Severity.ERROR, "a site template failed")])

    families = dict(RENDER.RENDERERS)
    names = list(families)
    families[names[len(names) // 2]] = failing  # after some families were written
    monkeypatch.setattr(RENDER, "RENDERERS", families)
    analysis = analyse(load_valid(BP))
    out = tmp_path / "new" / "deeper" / "out"
    with pytest.raises(ClusterforgeError), StagedTree(out, keep=CONSISTENCY_READS) as staged:
        render_staged(analysis, staged)
    assert list(tmp_path.iterdir()) == [], "the staging folder, or the folders made for it, were left"


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


def test_a_text_written_piece_by_piece_is_its_utf8_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large texts are encoded a piece at a time; pieces of 3 characters put multi-byte characters (2, 3 and 4
    bytes in UTF-8) on every side of a piece's end, and an empty file stays empty."""
    import hashlib

    import clusterforge.writer as writer

    monkeypatch.setattr(writer, "ENCODE_PIECE", 3)
    text = "rack é1 € 😀 gpu001\n" * 7
    out = tmp_path / "out"
    with StagedTree(out) as staged:
        staged.put("a/table.csv", text)
        staged.put("a/empty.txt", "")
        staged.commit()
    assert (out / "a/table.csv").read_bytes() == text.encode("utf-8")
    assert (out / "a/empty.txt").read_bytes() == b""
    assert staged.digests["a/table.csv"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert staged.digests["a/empty.txt"] == hashlib.sha256(b"").hexdigest()
