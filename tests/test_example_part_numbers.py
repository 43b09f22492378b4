"""Every row of every example's bom.csv and cabling.csv names an orderable part (the golden renders in
inventories/), except the parts listed below, whose vendor part numbers no public source gave us: they are
written out one by one, so that a new row without a part number fails here, and so does a gap that is closed
(then strike it from the list).

Closed: the QM9700's spare PSU (P2C) is MTEF-PSF-AC-K, the PSU VPD NVIDIA ships for the MQM9700 in its
hw-management package (Mellanox/hw-mgmt, usr/etc/hw-management-virtual/HI130/psu_vpd), whose PSF names the
forward (P2C) airflow there (get_psu_fan_direction). That VPD is a pseudo one for NVIDIA's SimX simulator,
copied to other SKUs, so it is a secondary source (docs/catalog.md).

Known gaps: spare PSUs of the SN2201, SN4600C and SN5600 for P2C halls (the same package names the SN5600's
C2P unit, 930-9SPSU-00RA-00B, in the catalog, but no P2C one, and no PSU of the SN2201 or SN4600C) and of the
Supermicro servers (their PWS- modules are tied to no system by any source read), Category 6A patch cords of
7 m (the ordered CommScope cord's part numbers were found for 2, 3 and 5 m only, so longer runs take the
generic cord). A second search for issue 35 (NVIDIA's manual pages in the corpora, hw-mgmt's history, NVIDIA's
nv-config-manager fixtures, NetBox, SONiC, BMC captures, stock lists; docs/catalog.md lists them) found none of
these, and none is inferred from a naming scheme. The GB200 NVL72 racks are Supermicro's SRS-GB200-NVL72, one
part number with their compute trays, which ship built in, fed through APC APDU11450ME PDUs (415 V 3-phase
60 A). Built-in equipment rows are not ordered (they ship with their rack) and need none.
"""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import BLUEPRINTS, REPO

INVENTORIES = REPO / "inventories"
FIBRE = {"MMF", "SMF"}

CAT6A_7M = "generic/cat6a"  # runs over 5 m: no CommScope part number of 7 m found
SWITCH_PSUS = {"psu:nvidia/sn2201", "psu:nvidia/sn4600c", "psu:nvidia/sn5600"}
CPU_PSUS = {"psu:supermicro/as-1125hs-tnr"}
KNOWN_GAPS = {
    "b200-spectrum-x": {CAT6A_7M, *SWITCH_PSUS, *CPU_PSUS, "psu:supermicro/sys-a21ge-nbrt-spectrum-x"},
    "gb200-nvl72": {
        *SWITCH_PSUS,
        *CPU_PSUS,
        "psu:supermicro/as-1125hs-tnr-ndr",
    },
    "h200-training-pod": {
        *SWITCH_PSUS,
        *CPU_PSUS,
        "psu:supermicro/as-1125hs-tnr-ndr",
        "psu:supermicro/sys-821ge-tnhr-h200",
    },
    "l40s-inference": {CAT6A_7M, *SWITCH_PSUS, *CPU_PSUS, "psu:supermicro/sys-421ge-tnrt-l40s"},
    "mi300x-roce": {*SWITCH_PSUS, *CPU_PSUS, "psu:supermicro/as-8125gs-tnmr2-mi300x"},
}


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def without_part_number(handoff: Path) -> set[str]:
    """Items of a render's BOM and cabling plan (its handoff/ folder) that name no part number: BOM lines
    other than the total and built-in equipment, cables, and the transceivers at both ends of a fibre."""
    missing = {
        r["item"]
        for r in rows(handoff / "bom.csv")
        if r["category"] not in ("total", "built-in equipment") and not r["part_number"]
    }
    for r in rows(handoff / "cabling.csv"):
        if not r["part_number"]:
            missing.add(r["product"])
        if r["media"] in FIBRE and not (r["a_transceiver"] and r["b_transceiver"]):
            missing.add(f"transceiver of {r['label']}")
    return missing


def test_every_example_has_golden_bom_and_cabling() -> None:
    examples = {p.stem for p in BLUEPRINTS}
    assert examples == set(KNOWN_GAPS)
    for example in examples:
        for name in ("bom.csv", "cabling.csv"):
            assert (INVENTORIES / example / "handoff" / name).is_file(), f"{example}: no {name}; regen inventories"


def test_every_bom_and_cabling_row_names_a_part_number() -> None:
    for example, gaps in sorted(KNOWN_GAPS.items()):
        assert without_part_number(INVENTORIES / example / "handoff") == gaps, example


def test_the_check_sees_an_empty_part_number(tmp_path: Path) -> None:
    """The check itself: a BOM line and a fibre end without part numbers are reported."""
    example = tmp_path
    bom = "category,item,part_number\nrack,apc/ar3300-4x-ap8888,AR3300\nserver,acme/box,\ntotal,,\n"
    (example / "bom.csv").write_text(bom, encoding="utf-8")
    cabling = (
        "label,media,product,part_number,a_transceiver,b_transceiver\n"
        "c1,MMF,nvidia/mfp7e10,MFP7E10-N010,MMA4Z00-NS,\nc2,DAC,nvidia/mcp1600,,,\n"
    )
    (example / "cabling.csv").write_text(cabling, encoding="utf-8")
    assert without_part_number(example) == {"acme/box", "nvidia/mcp1600", "transceiver of c1"}
