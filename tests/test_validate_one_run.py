"""Every validation error in one run, and rack-space errors that name their limit and what would fit."""

from __future__ import annotations

from pathlib import Path

from helpers import REPO, run_cli

L40S = (REPO / "blueprints" / "l40s-inference.yaml").read_text(encoding="utf-8")


def _write(tmp: Path, text: str) -> Path:
    path = tmp / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_unknown_keys_catalog_and_references_in_one_run(tmp_path: Path) -> None:
    text = L40S.replace("    count: 8\n", "    count: 8\n    placment: {}\n", 1)
    text = text.replace("model: supermicro/sys-421ge-tnrt-l40s", "model: supermicro/sys-421ge-tnrt-l40x", 1)
    text = text.replace("controllers: [ctl001]", "controllers: [ctl009]")
    result = run_cli("validate", str(_write(tmp_path, text)))
    assert result.returncode == 1
    for code in ("CF-SCHEMA-001", "CF-REF-002", "CF-REF-005"):
        assert code in result.stdout, result.stdout
    assert "invalid (3 errors)" in result.stdout


def test_a_wrong_value_still_shows_unknown_catalog_keys(tmp_path: Path) -> None:
    text = L40S.replace("    count: 2\n", "    count: two\n", 1)
    text = text.replace("model: supermicro/sys-421ge-tnrt-l40s", "model: supermicro/sys-421ge-tnrt-l40x", 1)
    result = run_cli("validate", str(_write(tmp_path, text)))
    assert "CF-SCHEMA-006" in result.stdout and "CF-REF-002" in result.stdout
    assert "did you mean 'supermicro/sys-421ge-tnrt-l40s'" in result.stdout


def test_nodes_that_do_not_fit_name_the_limit(tmp_path: Path) -> None:
    per_rack = run_cli("plan", str(_write(tmp_path, L40S.replace("    count: 8\n", "    count: 12\n", 1))))
    assert "room for 8 of 12 nodes in rows R (per_rack 4 filled 2 racks)" in per_rack.stdout
    assert "raise per_rack: the racks' free space holds 12 more 4U nodes (4 are missing)" in per_rack.stdout
    text = L40S.replace("    count: 8\n", "    count: 30\n", 1).replace("per_rack: 4", "per_rack: 20")
    space = run_cli("plan", str(_write(tmp_path, text)))
    assert "room for 20 of 30 nodes in rows R (rack space filled 2)" in space.stdout
    assert "per_rack" not in space.stdout.split("hint:")[1]
    assert "an empty 42U rack holds at most 10 of these" in space.stdout


def test_switches_that_do_not_fit_name_the_limit(tmp_path: Path) -> None:
    result = run_cli("plan", str(_write(tmp_path, L40S.replace("    count: 2\n", "    count: 38\n", 1))))
    assert "CF-SPACE-001" in result.stdout
    # R03 (AR3300, U42 a patch panel) with 38 1U servers of 800 W: 30.4 kW, and one side of the rack carries
    # 2 x 22.17 kW x 0.8 = 35.47 kW, 90% of it 31.9 kW: the SN5600 (2.1 kW) finds no power; of the 3 U left
    # the 1U OOB switch and one 2U SN4600C take all, the second SN4600C finds no space
    assert "fabric 'compute': 1 switches (2 U) do not fit in racks R03 (90% of power or cooling filled R03)" in (
        result.stdout
    )
    assert "fabric 'inband': 1 switches (2 U) do not fit in racks R03 (rack space filled R03)" in result.stdout
    assert "an empty rack like R03 holds 20 2U switches" in result.stdout
