"""Blueprint versions: a version 1 blueprint (or one without `version:`) is read as it meant, with a
CF-MIGRATE-001 warning per meaning that changed; `clusterforge migrate` rewrites it to the current version,
comments and layout kept, as a diff or in place (--write)."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import REPO, run_cli

from clusterforge import codes
from clusterforge.errors import Severity
from clusterforge.lockfile import Keep
from clusterforge.migrate import CURRENT_VERSION, migrate
from clusterforge.pipeline import analyse, load_valid

POD = REPO / "blueprints" / "h200-training-pod.yaml"


def _version_1_without_in_band(tmp: Path, version: str | None = "version: 1\n") -> Path:
    """The example pod as a version 1 blueprint on no in-band network (the oob switches uplinked to
    storage), its comments and layout as written."""
    text = POD.read_text(encoding="utf-8")
    text = text[: text.index("  inband:\n")] + text[text.index("  oob:\n") :]
    text = text.replace("uplink_to: inband", "uplink_to: storage").replace("version: 2\n", version or "")
    path = tmp / "pod.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_version_1_blueprint_is_read_as_it_meant_with_a_warning(tmp_path: Path) -> None:
    for version in ("version: 1\n", None):  # no version: 1
        analysis = analyse(load_valid(_version_1_without_in_band(tmp_path, version)), keep=Keep())
        found = [f for f in analysis.findings if f.code == codes.OLDER_VERSION]
        assert {f.subject for f in found} == {"gpu", "mgmt", "login", "ufm", "stor"}
        assert all(f.severity is Severity.WARNING and "management_network: oob" in f.message for f in found)
        assert not [f for f in analysis.findings if f.code == codes.MANAGED_ON_BMC]
        assert not analysis.blocking


def test_the_same_blueprint_as_version_2_is_refused(tmp_path: Path) -> None:
    analysis = analyse(load_valid(_version_1_without_in_band(tmp_path, "version: 2\n")), keep=Keep())
    assert {f.subject for f in analysis.findings if f.code == codes.MANAGED_ON_BMC} == {
        "gpu",
        "mgmt",
        "login",
        "ufm",
        "stor",
    }
    assert analysis.blocking


def test_migrate_prints_a_diff_and_writes_the_current_version_keeping_comments(tmp_path: Path) -> None:
    path = _version_1_without_in_band(tmp_path)
    before = path.read_text(encoding="utf-8")
    shown = run_cli("migrate", str(path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "-version: 1\n+version: 2\n" in shown.stdout
    assert shown.stdout.count("+    management_network: oob\n") == 5
    assert path.read_text(encoding="utf-8") == before  # a diff only
    written = run_cli("migrate", str(path), "--write", cwd=tmp_path)
    assert written.returncode == 0 and "migrated from version 1 to 2" in written.stdout
    after = path.read_text(encoding="utf-8")
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert added == ["version: 2"] + ["    management_network: oob"] * 5  # nothing else moves or is lost
    assert [line for line in before.splitlines() if line not in after.splitlines()] == ["version: 1"]
    analysis = analyse(load_valid(path), keep=Keep())
    assert not [f for f in analysis.findings if f.code in (codes.OLDER_VERSION, codes.MANAGED_ON_BMC)]
    again = run_cli("migrate", str(path), cwd=tmp_path)
    assert "already version 2" in again.stdout and again.returncode == 0


def test_a_blueprint_without_version_gains_it_at_the_top_after_its_header_comment(tmp_path: Path) -> None:
    migration = migrate(_version_1_without_in_band(tmp_path, None))
    assert migration.version == 1 and CURRENT_VERSION == 2
    lines = migration.new.splitlines()
    first_key = next(i for i, line in enumerate(lines) if re.match(r"^[a-z]", line))
    assert lines[first_key] == "version: 2" and lines[first_key + 1].startswith("name: ")
    assert all(line.startswith("#") for line in lines[:first_key])


def test_the_examples_are_the_current_version() -> None:
    for path in (REPO / "blueprints").glob("*.yaml"):
        if not path.name.endswith(".lock.yaml"):
            assert load_valid(path).blueprint.version == CURRENT_VERSION, path


def test_an_invalid_blueprint_is_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("version: 1\nname: x\n", encoding="utf-8")
    result = run_cli("migrate", str(path), cwd=tmp_path)
    assert result.returncode == 1 and "CF-" in result.stderr


def test_a_group_in_an_included_file_is_named_to_change_by_hand(tmp_path: Path) -> None:
    path = _version_1_without_in_band(tmp_path)
    text = path.read_text(encoding="utf-8")
    stor = text.index("  - name: stor\n")
    end = text.index("\n\n", stor) + 1
    (tmp_path / "groups.yaml").write_text("node_groups:\n" + text[stor:end], encoding="utf-8")
    text = text[:stor] + text[end:]
    path.write_text(text.replace("\nname: h200", "\ninclude: [groups.yaml]\nname: h200", 1), encoding="utf-8")
    migration = migrate(path)
    assert migration.by_hand == ["node group 'stor' (in an included file): add management_network: oob"]
    assert migration.new.count("management_network: oob") == 4
    result = run_cli("migrate", str(path), cwd=tmp_path)
    assert "by hand: node group 'stor'" in result.stderr
