"""`clusterforge catalog`: every entry of the shipped catalog files is listed, and `show` gives an entry's
fields and the sources written next to them in those files (read here with PyYAML, not the tool)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from helpers import REPO, run_cli

DATA = REPO / "clusterforge" / "catalog" / "data"


def shipped_entries() -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for path in sorted(DATA.glob("*.yaml")):
        for section in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).values():
            entries.update(section)
    return entries


def test_list_names_every_shipped_entry_once() -> None:
    result = run_cli("catalog", "list")
    assert result.returncode == 0, result.stderr
    keys = [line.split()[1] for line in result.stdout.splitlines()[1:-1]]
    assert all("; source: " in line for line in result.stdout.splitlines()[1:-1])
    assert sorted(keys) == sorted(shipped_entries())
    assert result.stdout.splitlines()[-1].startswith(f"{len(keys)} entries")
    assert run_cli("catalog").stdout == result.stdout


def test_show_gives_the_sources_written_in_the_catalog_file() -> None:
    entry = shipped_entries()["nvidia/dgx-h100"]
    result = run_cli("catalog", "show", "nvidia/dgx-h100")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert f"vendor: {entry['vendor']}" in text and f"u_height: {entry['u_height']}" in text
    sources = text.split("\nsources:\n", 1)[1].splitlines()
    assert sources == [f"  {field}: {source}" for field, source in sorted(entry["sources"].items())]


def test_an_unknown_key_is_exit_1_with_a_suggestion(tmp_path: Path) -> None:
    result = run_cli("catalog", "show", "nvidia/dgx-h10", cwd=tmp_path)
    assert result.returncode == 1
    assert "unknown key 'nvidia/dgx-h10'" in result.stderr and "nvidia/dgx-h100" in result.stderr
    assert "Traceback" not in result.stderr


NEW_FAMILIES = {
    # key: the document the list must name (most of the entry's figures cite it, in the shipped file)
    "apc/ap8888": "NetBox devicetype-library AP8888",
    "apc/ar3300-4x-ap8888": "NetBox devicetype-library AR3300",
    "supermicro/as-8125gs-tnmr2-mi300x": "NetBox devicetype-library AS-8125GS-TNMR2",
    "supermicro/as-1125hs-tnr": "NetBox devicetype-library AS-1125HS-TNR",
    "nvidia/sn4700": "NetBox devicetype-library SN4700",
    "nvidia/sn3700": "NetBox devicetype-library SN3700",
    "amd/mi355x": "AMD MI350 series launch figures",
    "supermicro/as-4126gs-nmr-lcc-mi355x": "MLPerf Training v5.1 Supermicro system description 8xMI35...",
    "nvidia/h100-nvl": "NVIDIA H100 NVL product figures as public GPU tables quot...",
    "apc/apdu11450me": "Schneider/APC APDU11450ME product details",
    "supermicro/srs-gb200-nvl72": "Supermicro SRS-GB200-NVL72 product page",
    "supermicro/srs-gb200-nvl72-tray": "Supermicro SRS-GB200-NVL72 product page",
    "nvidia/bluefield-3-b3220": "NVIDIA DOCA installation guide",
    "broadcom/bcm57608-1p-400g": "NetBox devicetype-library",
}


def test_list_shows_each_entry_with_the_document_its_figures_cite() -> None:
    """The new families (PDUs, real racks, AMD and OEM B200 servers, BlueField-3, Broadcom) appear with the
    document their sources name; every document shown starts one of the entry's non-estimate sources as
    written in the shipped file (or the entry has only estimates)."""
    result = run_cli("catalog", "list")
    shown = {line.split()[1]: line.split("; source: ", 1)[1] for line in result.stdout.splitlines()[1:-1]}
    for key, document in NEW_FAMILIES.items():
        assert shown[key] == document, key
    for key, entry in shipped_entries().items():
        cited = [str(text).strip('"') for text in entry.get("sources", {}).values()]
        if shown[key] in ("estimates only", "no sources"):
            assert all(text.lower().startswith("estimate") for text in cited), key
        else:
            assert any(text.startswith(shown[key].removesuffix("...")) for text in cited), key
