"""The bill of materials: spares by policy, the site's price list, airflow matched to the aisles, PDU
outlets per device, and the report's BOM; quantities by hand."""

from __future__ import annotations

import csv
import io
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from factories import valid_from
from helpers import run_cli

from clusterforge import codes
from clusterforge.expand import expand
from clusterforge.pipeline import analyse, load_valid
from clusterforge.render.context import RenderContext
from clusterforge.render.handoff.bom import BOM_CSV, POWER_CSV, render_bom
from clusterforge.validate import ValidBlueprint
from clusterforge.yamlsafe import read_yaml

H200 = Path("blueprints/h200-training-pod.yaml")


def bom_of(valid: ValidBlueprint) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    analysis = analyse(valid)
    files = render_bom(RenderContext(valid, analysis.topo, analysis.findings))
    return [*csv.DictReader(io.StringIO(files[BOM_CSV]))], [*csv.DictReader(io.StringIO(files[POWER_CSV]))]


def h200_data(**procurement: Any) -> dict[str, Any]:
    data, _ = read_yaml(H200.read_text(encoding="utf-8"), str(H200))
    data["procurement"] = procurement
    return dict(data)


def line(rows: list[dict[str, str]], part: str) -> dict[str, str]:
    return next(r for r in rows if part in (r["part_number"], r["item"]))


def test_spares_are_a_share_per_class_rounded_up() -> None:
    """The h200 example's policy: cables and transceivers 5%, PSUs 2%, nothing else."""
    rows, _ = bom_of(load_valid(H200))
    acc = line(rows, "MCA4J80-N004")  # 128 twin-port leaf-spine ACC + 2 storage peer links: 6.5 -> 7 spares
    assert (acc["quantity"], acc["spares"], acc["order"]) == ("130", "7", "137")
    ns400 = line(rows, "MMA4Z00-NS400")  # 250 node optics: 12.5 -> 13
    assert (ns400["quantity"], ns400["spares"], ns400["order"]) == ("250", "13", "263")
    psu = line(rows, "psu:supermicro/sys-821ge-tnhr-h200")  # 31 nodes x 6 PSUs = 186, 3.72 -> 4, only spares ordered
    assert (psu["quantity"], psu["spares"], psu["order"]) == ("186", "4", "4")
    server = line(rows, "supermicro/sys-821ge-tnhr-h200")
    assert (server["quantity"], server["spares"], server["order"]) == ("31", "0", "31")
    for r in rows:
        share = {"cable": 0.05, "transceiver": 0.05, "psu": 0.02}.get(r["category"], 0.0)
        assert int(r["spares"]) == math.ceil(int(r["quantity"]) * share - 1e-9), r


def test_price_list_prices_the_order_and_totals_it() -> None:
    prices = {"MCA4J80-N004": 500.0, "MMA4Z00-NS": 1200.0, "supermicro/sys-821ge-tnhr-h200": 300000.0}
    valid = valid_from(h200_data(spares={"cable": 0.05}, currency="EUR", price_list=prices))
    rows, _ = bom_of(valid)
    acc, optic = line(rows, "MCA4J80-N004"), line(rows, "MMA4Z00-NS")
    assert (acc["order"], acc["unit_price"], acc["price"]) == ("137", "500.00", "68500.00")  # 130 + 7 spares
    # no transceiver spares in this policy; 160 as before, and 6 for the 12 storage ports (400G QSFP112) of the
    # 4 storage and 2 login servers, two per twin-port module on the SN5600 leaves
    assert (optic["order"], optic["price"]) == ("166", "199200.00")
    total = next(r for r in rows if r["category"] == "total")
    assert float(total["price"]) == 137 * 500 + 166 * 1200 + 31 * 300000
    assert total["note"].startswith("EUR; ") and "have no price in the price list" in total["note"]


def test_switch_airflow_follows_the_aisle_and_a_mismatch_is_a_finding() -> None:
    data = h200_data()
    data["floor"]["switch_ports_face"] = "cold-aisle"
    rows, _ = bom_of(valid_from(data))
    qm9700 = line(rows, "nvidia/qm9700")
    assert (qm9700["part_number"], qm9700["airflow"]) == ("MQM9700-NS2R", "C2P")
    # a site catalog offering the leaf in P2C only
    catalog = Path(__file__).parent / "bom" / "p2c-only-catalog.yaml"
    data["catalogs"] = [str(catalog.resolve())]
    analysis = analyse(valid_from(data))
    (finding,) = [f for f in analysis.findings if f.code == codes.AIRFLOW_MISMATCH]
    assert finding.message == (
        "nvidia/qm9700 in 'compute' (12 switches) needs C2P airflow (ports face the cold aisle); "
        "the catalog lists P2C only"
    )


def test_every_psu_has_an_outlet_on_its_feed() -> None:
    """The example's racks (APC AR3300) have four feeds, one AP8888 each: PSU i of a device on feed i mod 4
    (A, B, C, D; A and C one side, B and D the other), outlets numbered bottom-up per PDU: gpu001 (6 PSUs,
    U1) takes outlets 1-2 of A01-PDU-A and -B and outlet 1 of -C and -D; gpu002 (U9) outlets 3-4 of -A."""
    _, power = bom_of(load_valid(H200))
    gpu001 = [(r["pdu"], r["outlet"], r["psu"]) for r in power if r["device"] == "gpu001"]
    assert gpu001 == [
        ("A01-PDU-A", "1", "1"),
        ("A01-PDU-B", "1", "2"),
        ("A01-PDU-C", "1", "3"),
        ("A01-PDU-D", "1", "4"),
        ("A01-PDU-A", "2", "5"),
        ("A01-PDU-B", "2", "6"),
    ]
    assert [r["outlet"] for r in power if r["device"] == "gpu002" and r["feed"] == "A"] == ["3", "4"]
    # every PSU once: nodes, CPU servers, UFM hosts, QM9700, SN2201, the SN5600 and SN4600C pairs
    assert len(power) == 31 * 6 + 9 * 2 + 2 * 2 + 12 * 2 + 14 * 2 + 2 * 2 + 2 * 2


def with_generic_racks(data: dict[str, Any]) -> dict[str, Any]:
    """The example on rack types that name no PDU model (two feeds), so procurement.pdu_outlets counts."""
    for row in data["floor"]["rows"]:
        row["rack_type"] = "generic/air-42u-40kw"
    return data


def test_too_few_outlets_is_a_finding() -> None:
    """Two feeds: A01-A06 and B01-B04 hold three nodes of six PSUs and a 2-PSU OOB switch: 10 PSUs per feed;
    N01 13 switches (12 QM9700, 1 OOB): 13; N03 11 servers and the OOB switch: 12; all over 8 outlets. B05
    (one node, 4) and N02 (5 switches) fit: 12 racks."""
    _, findings = expand(valid_from(with_generic_racks(h200_data(pdu_outlets=8))))
    (finding,) = [f for f in findings if f.code == codes.PDU_OUTLETS_SHORT]
    assert finding.message == (
        "12 racks need more outlets on one PDU than its 8: A01 (10), A02 (10), A03 (10), A04 (10), A05 (10), "
        "A06 (10), ..."
    )
    _, findings = expand(valid_from(with_generic_racks(h200_data(pdu_outlets=12))))
    (finding,) = [f for f in findings if f.code == codes.PDU_OUTLETS_SHORT]
    assert finding.message == "1 rack needs more outlets on one PDU than its 12: N01 (13)"


def test_a_rack_types_pdu_brings_its_outlets_and_part_number() -> None:
    """On the example's AR3300 racks the AP8888 (42 outlets) counts, not procurement.pdu_outlets: at most
    7 PSUs per feed (N01: 13 switches of 2 PSUs over 4 feeds) fit; the BOM orders 4 AP8888 per rack."""
    valid = valid_from(h200_data(pdu_outlets=4))
    _, findings = expand(valid)
    assert not [f for f in findings if f.code == codes.PDU_OUTLETS_SHORT]
    rows, _ = bom_of(valid)
    pdu, rack = line(rows, "AP8888"), line(rows, "AR3300")
    assert (pdu["item"], pdu["quantity"]) == ("apc/ap8888", str(14 * 4))
    assert (rack["item"], rack["quantity"]) == ("apc/ar3300-4x-ap8888", "14")


def test_bom_command_and_report_sections() -> None:
    result = run_cli("bom", str(H200))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "     137       130      7  cable              MCA4J80-N004" in result.stdout
    report = Path("inventories/h200-training-pod/handoff/report.html").read_text(encoding="utf-8")
    assert "<h2>Bill of materials</h2>" in report and "<h2>Cables per rack</h2>" in report
    assert '<section class="report-section rack-cables">' in report and "<h2>Rack N01: " in report


@pytest.mark.parametrize("name", ["gb200-nvl72", "l40s-inference"])
def test_other_examples_order_what_they_install(name: str) -> None:
    """No spares policy: order = installed, built-in equipment is not ordered, PSUs come with devices."""
    rows, _ = bom_of(load_valid(Path("blueprints") / f"{name}.yaml"))
    for r in rows:
        expected = {"built-in equipment": "0", "psu": "0"}.get(r["category"], r["quantity"])
        assert (r["spares"], r["order"]) == ("0", expected), r


def test_a_rack_sold_with_its_trays_ships_them_built_in(tmp_path: Path) -> None:
    """Supermicro sells the GB200 NVL72 as one rack SKU, SRS-GB200-NVL72, with its 18 compute trays: the example
    orders 4 racks and no trays. NVIDIA's rack type names no such SKU, so there each of the 72 trays is a server
    line of its own."""
    rows, _ = bom_of(load_valid(Path("blueprints/gb200-nvl72.yaml")))
    tray = line(rows, "supermicro/srs-gb200-nvl72-tray")
    assert (tray["category"], tray["quantity"], tray["order"]) == ("built-in equipment", "72", "0")
    rack = line(rows, "SRS-GB200-NVL72")
    assert (rack["item"], rack["order"]) == ("supermicro/srs-gb200-nvl72", "4")
    shutil.copytree("blueprints/gb200-nvl72", tmp_path / "gb200-nvl72")
    text = Path("blueprints/gb200-nvl72.yaml").read_text(encoding="utf-8")
    nvidia = text.replace("supermicro/srs-gb200-nvl72-tray", "nvidia/gb200-nvl72-tray")
    (tmp_path / "nvidia.yaml").write_text(nvidia.replace("supermicro/srs-gb200-nvl72", "nvidia/gb200-nvl72-rack"))
    rows, _ = bom_of(load_valid(tmp_path / "nvidia.yaml"))
    tray = line(rows, "nvidia/gb200-nvl72-tray")
    assert (tray["category"], tray["quantity"], tray["order"]) == ("server", "72", "72")
