from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from clusterforge.catalog import BUILTIN_FILES, GPU, NIC, PDU, RackType, Server, Switch, load_catalog
from clusterforge.catalog.loader import DATA_DIR
from clusterforge.catalog.models import Sourced
from clusterforge.errors import CatalogError
from clusterforge.model import CatalogFile
from clusterforge.yamlsafe import read_yaml

REQUIRED_KEYS = {
    GPU: [
        "nvidia/h100-sxm",
        "nvidia/h200-sxm",
        "nvidia/b200",
        "nvidia/gb200",
        "nvidia/a100-sxm-80gb",
        "nvidia/l40s",
        "amd/mi300x",
        "amd/mi325x",
        "amd/mi355x",
        "nvidia/h100-nvl",
    ],
    Server: [
        "nvidia/dgx-h100",
        "nvidia/dgx-h200",
        "nvidia/dgx-b200",
        "supermicro/sys-821ge-tnhr-h100",
        "supermicro/sys-821ge-tnhr-h200",
        "supermicro/sys-421ge-tnhr2-lcc",
        "nvidia/gb200-nvl72-tray",
        "generic/cpu-1u",
        "supermicro/as-1125hs-tnr",
        "supermicro/as-1125hs-tnr-ndr",
        "supermicro/sys-a21ge-nbrt",
        "supermicro/sys-a21ge-nbrt-spectrum-x",
        "supermicro/sys-421ge-tnrt-l40s",
        "supermicro/as-8125gs-tnmr2-mi300x",
        "supermicro/as-8125gs-tnmr2-mi325x",
        "supermicro/as-4126gs-nmr-lcc-mi355x",
        "supermicro/srs-gb200-nvl72-tray",
    ],
    NIC: ["nvidia/bluefield-3-b3140h", "nvidia/bluefield-3-b3220", "broadcom/bcm57608-1p-400g"],
    PDU: ["apc/ap8888", "apc/apdu11450me"],
    Switch: ["nvidia/qm9700", "nvidia/sn5600", "nvidia/sn4600c", "nvidia/sn2201", "nvidia/sn4700", "nvidia/sn3700"],
    RackType: [
        "generic/air-42u-40kw",
        "generic/rear-door-48u-60kw",
        "generic/liquid-48u-140kw",
        "nvidia/gb200-nvl72-rack",
        "apc/ar3300-4x-ap8888",
        "supermicro/srs-gb200-nvl72",
    ],
}


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog()


@pytest.mark.parametrize("kind", list(REQUIRED_KEYS), ids=lambda k: k.__name__)
def test_builtin_catalog_has_the_required_parts(catalog, kind) -> None:  # type: ignore[no-untyped-def]
    assert set(REQUIRED_KEYS[kind]) <= set(catalog.keys_of(kind))


def _numeric_fields(entry: Sourced) -> set[str]:
    """Top-level fields that hold a number, or a structure with numbers in it."""

    def has_number(value: object) -> bool:
        if isinstance(value, bool):
            return False
        if isinstance(value, int | float):
            return True
        if isinstance(value, dict):
            return any(has_number(v) for v in value.values())
        if isinstance(value, list):
            return any(has_number(v) for v in value)
        return False

    dumped = entry.model_dump(exclude={"sources", "kind"}, exclude_defaults=True)
    return {name for name, value in dumped.items() if has_number(value)}


def test_every_builtin_number_has_a_source(catalog) -> None:  # type: ignore[no-untyped-def]
    missing = []
    for key, entry in catalog.entries.items():
        for name in sorted(_numeric_fields(entry) - set(entry.sources)):
            missing.append(f"{key}.{name}")
    assert missing == []


def test_no_builtin_source_cites_a_file_outside_the_repository(catalog) -> None:  # type: ignore[no-untyped-def]
    """A source names a document anyone can find (a data sheet, a guide, a URL), never a note beside the repository."""
    outside = [
        f"{key}.{name}: {text}"
        for key, entry in catalog.entries.items()
        for name, text in entry.sources.items()
        if re.search(r"\.\./|(^|[\s(])shared/", text)
    ]
    assert outside == []


def test_no_key_is_defined_twice_in_the_builtin_files() -> None:
    seen: dict[str, str] = {}
    for name in BUILTIN_FILES:
        data, _ = read_yaml((DATA_DIR / name).read_text(encoding="utf-8"), name)
        for section in data.values():
            for key in section:
                assert key not in seen, f"{key} in {name} and {seen[key]}"
                seen[key] = name


def test_feed_capacity_is_three_phase_power(catalog) -> None:  # type: ignore[no-untyped-def]
    rack = catalog.require("generic/air-42u-40kw", RackType)
    # sqrt(3) x 415 V x 63 A = 45.28 kW
    assert rack.feed.capacity_kw == pytest.approx(45.28, abs=0.01)


def test_switch_ports_at_breakout_speeds(catalog) -> None:  # type: ignore[no-untyped-def]
    sn5600 = catalog.require("nvidia/sn5600", Switch)
    assert sn5600.ports[0].ports_at(800) == 64
    assert sn5600.ports[0].ports_at(400) == 128
    assert sn5600.ports[0].ports_at(200) == 256
    assert sn5600.ports[0].ports_at(25) == 0


def test_user_catalog_overrides_and_adds(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text(
        textwrap.dedent("""\
        switches:
          nvidia/qm9700:
            vendor: NVIDIA
            name: QM9790 (unmanaged, site spares)
            technology: infiniband
            u_height: 1
            weight_kg: 14.8
            max_power_w: 1700
            ports:
              - {name: ib, count: 64, speed_gbps: 400, cage: osfp}
    """),
        encoding="utf-8",
    )
    catalog = load_catalog([CatalogFile(path="site.yaml")], tmp_path)
    assert catalog.require("nvidia/qm9700", Switch).max_power_w == 1700
    assert "nvidia/qm9700" in catalog.overridden
    assert catalog.origins["nvidia/qm9700"].line == 2


NETBOX_QM9700 = """\
manufacturer: NVIDIA
model: MQM9700-NS2F
slug: nvidia-mqm9700-ns2f
u_height: 1
is_full_depth: true
weight: 32.6
weight_unit: lb
power-ports:
  - {name: PS1, type: iec-60320-c14, maximum_draw: 1720}
  - {name: PS2, type: iec-60320-c14, maximum_draw: 1720}
interfaces:
  - {name: mgmt0, type: 1000base-t, mgmt_only: true}
"""


def test_netbox_device_type_becomes_a_switch(tmp_path: Path) -> None:
    ports = "".join(f"  - {{name: IB{i}, type: infiniband-ndr}}\n" for i in range(1, 65))
    (tmp_path / "qm.yaml").write_text(NETBOX_QM9700 + ports, encoding="utf-8")
    catalog = load_catalog([CatalogFile(path="qm.yaml", format="netbox")], tmp_path)
    switch = catalog.require("nvidia/nvidia-mqm9700-ns2f", Switch)
    assert switch.technology == "infiniband"
    assert switch.weight_kg == pytest.approx(14.79, abs=0.01)
    assert switch.max_power_w == 1720
    by_name = {g.name: g for g in switch.ports}
    assert by_name["ib"].count == 64 and by_name["ib"].speed_gbps == 400
    assert by_name["mgmt"].role == "oob" and by_name["mgmt"].speed_gbps == 1


def test_netbox_file_without_power_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("manufacturer: X\nmodel: Y\nu_height: 1\nweight: 3\n", encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_catalog([CatalogFile(path="bad.yaml", format="netbox")], tmp_path)
    assert info.value.findings[0].code == "CF-CAT-004"
    assert "maximum_draw" in info.value.findings[0].message


def test_catalog_cross_references_are_checked(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(
        textwrap.dedent("""\
        servers:
          acme/box:
            vendor: ACME
            name: box
            u_height: 2
            weight_kg: 20
            max_power_w: 2000
            cpu: {model: X, sockets: 1, cores_per_socket: 8}
            memory_gb: 64
            gpus: {model: nvidia/h100-sx, count: 4, nvlink_domain: 4, nvswitch: false}
    """),
        encoding="utf-8",
    )
    with pytest.raises(CatalogError) as info:
        load_catalog([CatalogFile(path="c.yaml")], tmp_path)
    finding = info.value.findings[0]
    assert finding.code == "CF-CAT-005"
    assert "did you mean 'nvidia/h100-sxm'" in finding.message
    assert finding.location is not None and finding.location.line == 2


def test_ap8888_feed_is_the_ar3300_rack_feed(catalog) -> None:  # type: ignore[no-untyped-def]
    """AP8888 (NetBox: 400 V 3-phase, 23 kVA) on a 32 A feed: sqrt(3) x 400 V x 32 A = 22.17 kW; four per
    AR3300, two a side, so one side carries 44.3 kW before derating."""
    pdu, rack = catalog.require("apc/ap8888", PDU), catalog.require("apc/ar3300-4x-ap8888", RackType)
    assert rack.pdu == "apc/ap8888" and rack.feed == pdu.feed
    assert round(pdu.feed.capacity_kw, 2) == 22.17
    assert (pdu.outlets, rack.part_number, pdu.part_number) == (42, "AR3300", "AP8888")


RACK_NAMING_A_PDU = """\
racks:
  acme/rack:
    vendor: ACME
    name: rack
    u_height: 42
    max_load_kg: 1000
    weight_kg: 100
    feeds: 2
    feed_redundancy: 2N
    feed: {voltage_v: 415, phases: 3, current_a: 63}
    cooling: {method: air, air_kw: 30}
    pdu: PDU_KEY
"""


def test_a_rack_types_pdu_must_exist_and_take_the_racks_feed(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(RACK_NAMING_A_PDU.replace("PDU_KEY", "apc/ap8889"), encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_catalog([CatalogFile(path="c.yaml")], tmp_path)
    (finding,) = info.value.findings
    assert finding.code == "CF-CAT-005" and "unknown PDU model 'apc/ap8889'" in finding.message
    assert "did you mean 'apc/ap8888'" in finding.message
    (tmp_path / "c.yaml").write_text(RACK_NAMING_A_PDU.replace("PDU_KEY", "apc/ap8888"), encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_catalog([CatalogFile(path="c.yaml")], tmp_path)
    (finding,) = info.value.findings
    assert finding.code == "CF-CAT-005"
    assert finding.message == (
        "acme/rack: PDU 'apc/ap8888' takes 400 V 3-phase 32 A, the rack's feed is 415 V 3-phase 63 A"
    )
    assert finding.location is not None and finding.location.line == 2


def test_mi355x_rates_are_the_isscc_per_cu_rate_by_hand(catalog) -> None:  # type: ignore[no-untyped-def]
    """AMD's ISSCC 2026 MI355X paper: 8 XCDs of 32 active CUs, 8,192 FP8 FLOPs per clock per CU, 2.4 GHz peak
    clock (Hot Chips 2025): 5,033.2 dense FP8 TFLOPS, 'five petaflops'; BF16 half of it, FP4 twice; seven
    Infinity Fabric links of 153.6 GB/s."""
    mi355x = catalog.require("amd/mi355x", GPU)
    fp8 = 8 * 32 * 8192 * 2.4e9 / 1e12
    assert mi355x.fp8_tflops == pytest.approx(fp8, abs=0.05)
    assert (mi355x.bf16_tflops, mi355x.fp4_tflops) == (
        pytest.approx(fp8 / 2, abs=0.05),
        pytest.approx(fp8 * 2, abs=0.1),
    )
    assert mi355x.gpu_link_gbs == pytest.approx(7 * 153.6)


def test_apdu11450me_is_rated_for_the_nvl72_feed(catalog) -> None:  # type: ignore[no-untyped-def]
    """Schneider/APC give 34.6 kW at 415 V 60 A: 80% (a continuous load on a 60 A circuit) of sqrt(3) x 415 V x
    60 A = 43.13 kW; the Supermicro NVL72 rack's feed is the PDU's (CF-CAT-005 refuses another)."""
    pdu = catalog.require("apc/apdu11450me", PDU)
    rack = catalog.require("supermicro/srs-gb200-nvl72", RackType)
    assert 0.8 * pdu.feed.capacity_kw == pytest.approx(34.6, abs=0.1)
    assert (rack.pdu, rack.feed, rack.includes_nodes) == ("apc/apdu11450me", pdu.feed, True)


# NVIDIA hw-management (Mellanox/hw-mgmt, hw-management-thermal-events.sh get_psu_fan_direction) reads a
# PSU's airflow from its part number: MTEF-PS<F|R>... or 930-9SPSU-xx<F|R>x-xxx, F forward (P2C), R reverse (C2P).
_NVIDIA_PSU_AIRFLOW = re.compile(r"MTEF-PS(?P<mtef>[FR])|930-9SPSU-\w{2}(?P<opn>[FR])\w-\w{3}")


def test_nvidia_spare_psus_are_listed_under_the_airflow_their_part_number_names(catalog) -> None:  # type: ignore[no-untyped-def]
    listed = {
        (key, airflow, part)
        for key in catalog.keys_of(Switch)
        if key.startswith("nvidia/") and (psus := catalog.require(key, Switch).psus)
        for airflow, part in psus.part_numbers.items()
    }
    assert ("nvidia/qm9700", "p2c", "MTEF-PSF-AC-K") in listed
    assert ("nvidia/sn5600", "c2p", "930-9SPSU-00RA-00B") in listed
    for key, airflow, part in listed:
        match = _NVIDIA_PSU_AIRFLOW.match(part)
        assert match, f"{key}: {part} is not an NVIDIA PSU part number"
        letter = match.group("mtef") or match.group("opn")
        assert {"F": "p2c", "R": "c2p"}[letter] == airflow, f"{key}: {part} listed under {airflow}"


def _unquoted_psu_part_numbers(entries: dict[str, Sourced]) -> list[str]:
    """Spare-PSU part numbers that the entry's own `psus` source does not quote word for word."""
    return [
        f"{key}: {part}"
        for key, entry in entries.items()
        if (psus := getattr(entry, "psus", None))
        for part in psus.part_numbers.values()
        if part not in entry.sources.get("psus", "")
    ]


def test_every_spare_psu_part_number_is_quoted_in_its_source(catalog) -> None:  # type: ignore[no-untyped-def]
    """A part number is never inferred from a naming scheme: the source it came from names it."""
    assert _unquoted_psu_part_numbers(catalog.entries) == []
    qm9700 = catalog.require("nvidia/qm9700", Switch)
    altered = qm9700.model_copy(update={"sources": {**qm9700.sources, "psus": "estimate: the MTEF-PSF-AC scheme"}})
    assert _unquoted_psu_part_numbers({"nvidia/qm9700": altered}) == ["nvidia/qm9700: MTEF-PSF-AC-K"]
