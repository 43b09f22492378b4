from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.errors import BlueprintError
from clusterforge.loader import load_blueprint
from clusterforge.pipeline import load_valid

REPO = Path(__file__).resolve().parents[2]


def test_includes_append_lists_and_keep_each_files_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "main.yaml").write_text(
        "name: x\ninclude: [more.yaml]\nnode_groups:\n  - {name: a}\nfabrics:\n  one: {kind: oob}\n", encoding="utf-8"
    )
    (tmp_path / "more.yaml").write_text(
        "# extra groups\nnode_groups:\n  - {name: b}\n  - {name: c}\nfabrics:\n  two: {kind: oob}\n", encoding="utf-8"
    )
    loaded = load_blueprint(tmp_path / "main.yaml")
    assert [g["name"] for g in loaded.data["node_groups"]] == ["a", "b", "c"]
    assert sorted(loaded.data["fabrics"]) == ["one", "two"]
    assert str(loaded.sources.locate(("node_groups", 0, "name"))) == "main.yaml:4:12"
    assert str(loaded.sources.locate(("node_groups", 2, "name"))) == "more.yaml:4:12"
    assert str(loaded.sources.locate(("fabrics", "two", "kind"))) == "more.yaml:6:15"
    assert [p.name for p in loaded.files] == ["main.yaml", "more.yaml"]


def test_example_with_includes_reports_errors_in_the_included_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = REPO / "blueprints"
    (tmp_path / "gb200-nvl72").mkdir()
    (tmp_path / "gb200-nvl72.yaml").write_text((source / "gb200-nvl72.yaml").read_text())
    (tmp_path / "gb200-nvl72" / "slurm.yaml").write_text((source / "gb200-nvl72" / "slurm.yaml").read_text())
    fabrics = (source / "gb200-nvl72" / "fabrics.yaml").read_text().replace("leaf: nvidia/qm9700", "leaf: nvidia/qm970")
    (tmp_path / "gb200-nvl72" / "fabrics.yaml").write_text(fabrics)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BlueprintError) as info:
        load_valid(Path("gb200-nvl72.yaml"))
    finding = info.value.findings[0]
    assert finding.code == "CF-REF-002"
    assert finding.location is not None
    assert finding.location.file == "gb200-nvl72/fabrics.yaml"
    assert fabrics.splitlines()[finding.location.line - 1].strip() == "leaf: nvidia/qm970"
