"""The handoff pack's tables: handoff/cabling.csv, handoff/cabling.md and handoff/bom.csv.

Every cable once, every port at most once, BOM totals that reconcile with the topology, hand-computed
cable lengths, and blueprint text that cannot break (or run code in) a spreadsheet or a Markdown table.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections import Counter
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal

import pytest
from factories import dgx_blueprint
from helpers import BLUEPRINTS

from clusterforge.catalog.models import CableMedia, Sourced
from clusterforge.expand import expand
from clusterforge.expand.cabling import END_ALLOWANCE_M, TRAY_RISE_M, U_METRES
from clusterforge.expand.topology import Topology
from clusterforge.output.pieces import FileText, whole
from clusterforge.pipeline import load_valid
from clusterforge.plan import cables as plan_cables
from clusterforge.render.context import RenderContext
from clusterforge.render.escape import csv_cell, csv_field, csv_line, md_cell
from clusterforge.render.handoff import cabling as cabling_module
from clusterforge.render.handoff.bom import BOM_CSV, BOM_HEADER, BOM_RACKS_CSV, render_bom
from clusterforge.render.handoff.cable_rows import shared_cable_list
from clusterforge.render.handoff.cabling import (
    CABLING_CSV,
    CABLING_MD,
    CSV_HEADER,
    LINKS_CSV,
    cable_cells,
    cabling_csv,
    csv_text,
    rack_rows,
    rack_summaries,
    render_cabling,
)
from clusterforge.validate import ValidBlueprint

EXAMPLES = [p.stem for p in BLUEPRINTS]
INJECTION = "=cmd|' /C calc'!A0"
MARKUP = "<b>|x</b> & `y`\nsecond | line"


def whole_files(files: Mapping[str, FileText]) -> dict[str, str]:
    return {path: whole(text) for path, text in files.items()}


def render_handoff(valid: ValidBlueprint) -> tuple[Topology, dict[str, str]]:
    """Only the two families under test, straight from the Topology (other renderers are not involved)."""
    topo, findings = expand(valid)
    ctx = RenderContext(valid, topo, findings)
    return topo, whole_files({**render_cabling(ctx), **render_bom(ctx)})


@cache
def example(name: str) -> tuple[Topology, dict[str, str]]:
    return render_handoff(load_valid(Path("blueprints") / f"{name}.yaml"))


def read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def cable_table(name: str) -> list[dict[str, str]]:
    return read_csv(example(name)[1][CABLING_CSV])


def bom_table(name: str) -> list[dict[str, str]]:
    return read_csv(example(name)[1][BOM_CSV])


# --- every link once, every cable once ----------------------------------------------------------


def link_table(name: str) -> list[dict[str, str]]:
    return read_csv(example(name)[1][LINKS_CSV])


@pytest.mark.parametrize("name", EXAMPLES)
def test_one_link_row_per_link_and_no_port_twice(name: str) -> None:
    topo, _ = example(name)
    rows = link_table(name)
    assert len(rows) == len(topo.links) > 0
    assert len({r["label"] for r in rows}) == len(rows)
    pairs = [frozenset({(r["a_device"], r["a_port"]), (r["b_device"], r["b_port"])}) for r in rows]
    assert len(set(pairs)) == len(pairs), "a link appears twice (in either direction)"
    ends = Counter(end for r in rows for end in ((r["a_device"], r["a_port"]), (r["b_device"], r["b_port"])))
    assert ends.most_common(1)[0][1] == 1, f"a port carries two links: {ends.most_common(1)}"
    assert set(pairs) == {frozenset({(link.a, link.a_port), (link.b, link.b_port)}) for link in topo.links}


@pytest.mark.parametrize("name", EXAMPLES)
def test_one_cable_row_per_cable_carrying_its_links(name: str) -> None:
    topo, _ = example(name)
    rows = cable_table(name)
    assert len(rows) == len(topo.cables) > 0
    assert len({r["label"] for r in rows}) == len(rows)
    # every cabled link is on exactly one cable row, with the row's label (and /leg when it has several)
    links = link_table(name)
    by_label = {r["label"]: r for r in rows}
    carried: Counter[str] = Counter()
    for link in links:
        if not link["media"]:
            continue
        cable_label, _, leg = link["label"].partition("/")
        cable = by_label[cable_label]
        carried[cable_label] += 1
        assert (leg != "") == (int(cable["links"]) > 1)
        for side in ("a", "b"):
            assert link[f"{side}_device"] in cable["a_device"].split(" / ") + cable["b_device"].split(" / ")
    assert all(carried[r["label"]] == int(r["links"]) for r in rows)
    uncabled = [link for link in topo.links if link.cable < 0]
    assert sum(1 for link in links if not link["media"]) == len(uncabled)
    for r in rows:
        assert r["a_label"].startswith(r["label"] + " | ") and r["b_label"].startswith(r["label"] + " | ")
        assert float(r["length_class_m"]) >= float(r["run_length_m"])


@pytest.mark.parametrize("name", EXAMPLES)
def test_link_rows_carry_the_topology_positions(name: str) -> None:
    topo, _ = example(name)
    for r in link_table(name):
        for side in ("a", "b"):
            device = topo.devices[r[f"{side}_device"]]
            assert r[f"{side}_rack"] == (device.rack or "")
            assert r[f"{side}_u"] == str(device.u)
            assert r[f"{side}_row"] == topo.racks[device.rack].row if device.rack else True
        if r["media"]:
            assert float(r["length_class_m"]) >= float(r["run_length_m"])
        assert (r["a_transceiver"] != "") == (r["media"] in {"MMF", "SMF"})


@pytest.mark.parametrize("name", EXAMPLES)
def test_order_and_labels_do_not_depend_on_link_order(name: str) -> None:
    valid = load_valid(Path("blueprints") / f"{name}.yaml")
    topo, findings = expand(valid)
    first = whole_files(render_cabling(RenderContext(valid, topo, findings)))
    reordered = list(reversed(topo.links))
    new_index = {id(link): i for i, link in enumerate(reordered)}
    for cable in topo.cables:
        cable.links = tuple(new_index[id(topo.links[i])] for i in cable.links)
    topo.links[:] = reordered
    second = whole_files(render_cabling(RenderContext(valid, topo, findings)))
    assert first == second
    labels = [r["label"] for r in read_csv(first[CABLING_CSV])]
    fabric = labels[0].rsplit("-", 1)[0]
    assert labels[0] == f"{fabric}-00001"


# --- the bill of materials reconciles ---------------------------------------------------------------


def _quantities(rows: list[dict[str, str]], category: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for r in rows:
        if r["category"] == category:
            out[r["item"]] += int(r["quantity"])
    return out


@pytest.mark.parametrize("name", EXAMPLES)
def test_bom_cables_match_cabling_and_plan(name: str) -> None:
    topo, _ = example(name)
    bom, cables = bom_table(name), cable_table(name)
    cable_lines = [r for r in bom if r["category"] == "cable"]
    assert (
        sum(int(r["quantity"]) for r in cable_lines)
        == sum(int(r["pieces"]) for r in cables)
        == sum(c.pieces for c in topo.cables)
    )
    # by media label and ordered length, exactly as `clusterforge plan` counts them
    catalog = load_valid(Path("blueprints") / f"{name}.yaml").catalog
    got: Counter[tuple[str, str]] = Counter()
    for r in cable_lines:
        media = catalog.entries[r["item"]]
        assert isinstance(media, CableMedia)
        length = r["description"].rsplit(", ", 1)[1].removesuffix(" m")
        got[(media.label, length)] += int(r["quantity"])
        assert r["part_number"] == media.part_numbers.get(length, "")
    expected = Counter(
        {(label, length): n for label, by_length in plan_cables(topo).items() for length, n in by_length.items()}
    )
    assert got == expected


@pytest.mark.parametrize("name", EXAMPLES)
def test_bom_devices_racks_and_pdus_match_topology(name: str) -> None:
    topo, _ = example(name)
    bom = bom_table(name)
    devices: Counter[str] = Counter()
    for category in ("server", "switch", "equipment", "built-in equipment"):
        devices += _quantities(bom, category)
    assert devices == Counter(d.model for d in topo.devices.values())
    assert _quantities(bom, "rack") == Counter(r.type_key for r in topo.racks.values())
    assert sum(_quantities(bom, "pdu").values()) == sum(r.rack_type.feeds for r in topo.racks.values())
    # per rack, the quantities add up to the totals
    per_rack: Counter[tuple[str, str]] = Counter()
    for r in read_csv(example(name)[1][BOM_RACKS_CSV]):
        per_rack[(r["category"], r["item"])] += int(r["quantity"])
    totals: Counter[tuple[str, str]] = Counter()
    for r in bom:
        if r["category"] != "total":
            totals[(r["category"], r["item"])] += int(r["quantity"])
    assert per_rack == totals


@pytest.mark.parametrize("name", EXAMPLES)
def test_transceivers_one_per_occupied_cage(name: str) -> None:
    topo, _ = example(name)
    bom, links = bom_table(name), link_table(name)
    optical = [r for r in links if r["media"] in {"MMF", "SMF"}]
    lines = [r for r in bom if r["category"] == "transceiver"]
    assert optical, "the examples all have optical links"
    # modules: one per occupied cage (ib3/1 and ib3/2 share ib3; swp1s0..s3 share swp1)
    cages = {(r[f"{s}_device"], re.sub(r"(\d)(/\d+|s\d+)$", r"\1", r[f"{s}_port"])) for r in optical for s in "ab"}
    assert sum(int(r["quantity"]) for r in lines) == len(cages) == len(topo.modules)


def test_synthetic_three_tier_cluster_reconciles() -> None:
    topo, files = render_handoff(dgx_blueprint(96, tiers=3, scalable_unit=8))
    links = read_csv(files[LINKS_CSV])
    bom = read_csv(files[BOM_CSV])
    assert len(links) == len(topo.links)
    assert {r["tier"] for r in links} >= {"node-leaf", "leaf-spine", "spine-core"}
    assert sum(int(r["quantity"]) for r in bom if r["category"] == "cable") == sum(c.pieces for c in topo.cables)
    assert all(link.cable >= 0 for link in topo.links)


# --- lengths, by hand -------------------------------------------------------------------------------


def _row(name: str, a: str, a_port: str) -> dict[str, str]:
    return next(r for r in link_table(name) if (r["a_device"], r["a_port"]) == (a, a_port))


def test_same_rack_length() -> None:
    # l40s-inference: inf001 (4U) at U1 of R01, centre 2 U up; oob-sw001 (1U) at U41, centre 40.5 U up.
    # Vertical 38.5 U x 0.04445 = 1.711 m, + 0.5 m in-rack at each end + 1.0 m slack = 3.71 m.
    # 1G BMC on RJ45: Cat6a, ordered at the next class up from 3.71 m: 5 m (classes ..., 3, 5, ...).
    row = _row("l40s-inference", "inf001", "bmc")
    assert (row["b_device"], row["a_rack"], row["b_rack"]) == ("oob-sw001", "R01", "R01")
    assert float(row["run_length_m"]) == pytest.approx(3.71)
    assert (row["media"], row["length_class_m"]) == ("Cat6a", "5")
    assert round(38.5 * U_METRES + 2 * END_ALLOWANCE_M + 1.0, 2) == 3.71


def test_same_row_length_and_a_breakout() -> None:
    # l40s-inference: inf001 (4U, U1, centre 2 U) in R01 to compute-leaf001 (2U, U40, centre 40 U) in R03,
    # 42U racks two positions apart at 0.6 m pitch: up (42-2) U = 1.778 m, down (42-40) U = 0.089 m,
    # 2 x 0.3 m tray rise, 2 x 0.6 m along the row, 2 x 0.5 m ends, 1.0 m slack = 5.67 m.
    # 200G from a QSFP112 port to an SN5600 cage split 4 x 200G (2 lanes of 100G each): the 1:4 DAC
    # (MCP7Y40) reaches 2 m, so optics: a twin-port MMA4Z00-NS in the switch cage, whose two MPOs each
    # feed a 1:2 splitter fibre (MFP7E20) to two MMA1Z00-NS400 running 2 lanes (NVIDIA: 200G mode).
    row = _row("l40s-inference", "inf001", "ens1")
    assert (row["b_device"], row["b_rack"]) == ("compute-leaf001", "R03")
    assert float(row["run_length_m"]) == pytest.approx(5.67)
    assert (row["media"], row["length_class_m"]) == ("MMF", "7")
    assert (row["a_transceiver"], row["b_transceiver"]) == ("MMA1Z00-NS400", "MMA4Z00-NS")
    assert row["label"] == "compute-00001/1"
    cable = next(r for r in cable_table("l40s-inference") if r["label"] == "compute-00001")
    assert (cable["product"], cable["part_number"], cable["links"]) == ("nvidia/mfp7e20", "MFP7E20-N007", "2")
    assert cable["a_device"] == "compute-leaf001"  # the splitter's single end


def test_across_rows_length() -> None:
    # h200-training-pod: gpu001 (8U, U1, centre 4 U) in A01 (row A, index 0) to compute-leaf001 (1U, U41,
    # centre 40.5 U) in N01 (row N, index 2), both first in their row: up 38 U, down 1.5 U (39.5 U = 1.756 m),
    # 0.6 m tray rise, 2 rows x 2.4 m pitch = 4.8 m, 1.0 m ends, 1.0 m slack = 9.16 m.
    # 400G OSFP to a twin-port QM9700 cage: the splitter DAC (MCP7Y00) reaches 3 m: optics, a flat-top
    # MMA4Z00-NS400 in the node and a finned MMA4Z00-NS in the switch, fibre MFP7E10 ordered at 10 m.
    row = _row("h200-training-pod", "gpu001", "ib1")
    assert (row["a_rack"], row["b_rack"], row["b_row"]) == ("A01", "N01", "N")
    assert float(row["run_length_m"]) == pytest.approx(9.16)
    assert (row["media"], row["length_class_m"]) == ("MMF", "10")
    by_hand = 39.5 * U_METRES + 2 * TRAY_RISE_M + 2 * 2.4 + 2 * END_ALLOWANCE_M + 1.0
    assert float(row["run_length_m"]) == round(by_hand, 2)
    assert (row["a_transceiver"], row["b_transceiver"]) == ("MMA4Z00-NS400", "MMA4Z00-NS")


# --- hostile text -----------------------------------------------------------------------------------


def test_escape_helpers() -> None:
    for dangerous in (INJECTION, "+1+1", "-2+3", "@SUM(A1)", " =1", "\t=1"):
        assert csv_cell(dangerous).startswith("'")
    assert csv_cell("gpu001") == "gpu001"
    assert csv_cell(-1.5) == "-1.5"
    cell = md_cell(MARKUP)
    assert "<" not in cell and "\n" not in cell
    assert re.search(r"(?<!\\)\|", cell) is None


def _hostile() -> ValidBlueprint:
    valid = load_valid(Path("blueprints/l40s-inference.yaml"))
    bp = valid.blueprint
    site = bp.site.model_copy(update={"name": INJECTION, "location": MARKUP})
    hostile = bp.model_copy(update={"site": site, "description": MARKUP})
    entries = dict(valid.catalog.entries)
    server = entries["supermicro/sys-421ge-tnrt-l40s"]
    assert isinstance(server, Sourced)
    entries["supermicro/sys-421ge-tnrt-l40s"] = server.model_copy(update={"name": INJECTION, "vendor": "@evil|<i>"})
    catalog = dataclasses.replace(valid.catalog, entries=entries)
    return dataclasses.replace(valid, blueprint=hostile, catalog=catalog)


def test_hostile_text_cannot_break_csv_or_markdown() -> None:
    _, files = render_handoff(_hostile())
    bom = read_csv(files[BOM_CSV])
    assert all(len(r) == len(BOM_HEADER) and None not in r for r in bom)
    server = next(r for r in bom if r["item"] == "supermicro/sys-421ge-tnrt-l40s")
    assert server["description"] == "'@evil|<i> " + INJECTION
    assert server["quantity"] == "8"
    for text in (files[BOM_CSV], files[CABLING_CSV]):
        for row in csv.reader(io.StringIO(text)):
            assert not any(cell.lstrip(" ").startswith(("=", "+", "-", "@")) for cell in row), row
    md = files[CABLING_MD]
    assert "<b>" not in md and "<i>" not in md
    assert "&lt;b&gt;\\|x&lt;/b&gt;" in md
    for line in md.splitlines():
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line)[1:-1]
            header_cells = len(cells)
            assert header_cells in {3, 4, len(cabling_module.MD_HEADER)}, line
    assert INJECTION.replace("|", "\\|") in md  # printed, escaped, not dropped


def test_markdown_keeps_summaries_only_for_huge_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    _, files = example("l40s-inference")
    assert "compute-00001" in files[CABLING_MD]
    monkeypatch.setattr(cabling_module, "MD_CABLE_LIMIT", 10)
    _, small = render_handoff(load_valid(Path("blueprints/l40s-inference.yaml")))
    assert "compute-00001" not in small[CABLING_MD]
    assert "more than 10 cables: this view keeps the summaries only" in small[CABLING_MD]
    assert small[CABLING_CSV] == files[CABLING_CSV]  # the CSV stays complete


def test_csv_text_reads_back_as_the_csv_module_reads_it() -> None:
    """csv_text writes the file itself (for speed): Python's csv reader must read back every cell, with
    quotes, commas, line breaks and formula-looking text handled, and numbers left bare."""
    import csv
    import io
    import random

    from clusterforge.render.escape import csv_cell, csv_text

    rng = random.Random(7)
    alphabet = ["a", "Z", "0", ",", '"', "'", "\n", "\r", " ", "=", "+", "-", "@", "<", "é", "\t"]
    rows = [
        [
            rng.choice(
                [
                    rng.randint(0, 10**6),
                    round(rng.random() * 100, 2),
                    "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))),
                ]
            )
            for _ in range(6)
        ]
        for _ in range(2000)
    ]
    text = csv_text(["a", "b", "c", "d", "e", "f"], rows)
    read = list(csv.reader(io.StringIO(text, newline="")))
    assert read[0] == ["a", "b", "c", "d", "e", "f"] and len(read) == len(rows) + 1
    for written, back in zip(rows, read[1:], strict=True):
        assert back == [
            format(v, "g") if isinstance(v, float) else str(v) if isinstance(v, int) else csv_cell(v) for v in written
        ]


TRICKY = ["", " ", "  x", " =1", "=1", "+1", "-1", "@a", "\t1", "\r1", "\n1", "a\nb", '"', 'a"b', '""', "a,b", "é"]
TRICKY += ["'x", "x=", "gpu001", "A1-001 U1 gpu001 ib1", "compute-000001 | A1 U1 gpu001 ib1 | to N1 U46 leaf ib1/1"]


class _Text(str):
    """A str subclass (as a StrEnum value is): csv_field must treat it as its text."""


def test_csv_field_quotes_as_the_csv_module_does() -> None:
    """csv_field writes a cell itself (with a shortcut for plain text): the csv module, given the same
    spreadsheet-safe text, must write the same characters."""

    def written(value: object, quoting: Literal[0, 1, 2, 3]) -> str:
        out = io.StringIO()
        csv.writer(out, quoting=quoting, lineterminator="").writerow([value])
        return out.getvalue()

    for text in TRICKY:
        assert csv_field(text) == written(csv_cell(text), csv.QUOTE_ALL), text
        assert csv_field(_Text(text)) == csv_field(text), text
    assert [csv_field(v) for v in (" =1", "=1", "-1", 'a"b')] == ['"\' =1"', '"\'=1"', '"\'-1"', '"a""b"']
    for number in (0, 7, -3, 2**70, 43.07, -1.5, 1e-7):
        assert csv_field(number) == written(number, csv.QUOTE_NONNUMERIC), number
    assert [csv_field(v) for v in (400.0, -2.0, True, None)] == ["400", "-2", '"true"', '""']


@pytest.mark.parametrize("name", EXAMPLES)
def test_cabling_csv_equals_its_cells_written_one_by_one(name: str) -> None:
    """cabling.csv writes a cable of one link from cached texts, the others cell by cell: both ways must
    give the lines the cells give, and the per-rack counts must agree with the per-rack lists."""
    valid = load_valid(Path("blueprints") / f"{name}.yaml")
    topo, findings = expand(valid)
    ctx = RenderContext(valid, topo, findings)
    cables = shared_cable_list(ctx)
    assert 0 < len(cables.irregular) < len(cables)  # the example has cables of both sorts
    cables.rows()  # made before the copy: the copy must not take them over
    hostile = dataclasses.replace(cables, labels=[f'={label}"' for label in cables.labels])
    for listed in (cables, hostile):  # labels that need more than quotes make every line go cell by cell
        lines: list[list[object]] = [list(CSV_HEADER), *map(cable_cells, listed.rows())]
        assert cabling_csv(listed) == "".join(f"{csv_line(cells)}\n" for cells in lines)
    first = cables.labels[0]
    assert f'\n"\'={first}""",' in cabling_csv(hostile)  # the hostile label, quoted and defused
    links = read_csv(csv_text(cables.table, [f'={label}"' for label in cables.link_labels]))
    assert [row["label"] for row in links] == [f"'={label}\"" for label in cables.link_labels]
    per_rack = rack_rows(cables)
    summaries = rack_summaries(cables, list(topo.racks))
    assert {rack: count for rack, count, _ in summaries} == {rack: len(items) for rack, items in per_rack.items()}


@pytest.mark.parametrize("name", ["h200-training-pod", "gb200-nvl72"])
def test_cable_tables_in_pieces_are_the_whole_tables(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """cabling.csv and links.csv are made in pieces of a few thousand lines (output/pieces.py), as they are
    read: pieces of 7 lines, regular and irregular cables (twin-port and splitter cables) among them, join to
    the tables made in one piece, and a second reading gives the same pieces again."""
    from clusterforge.output import pieces

    valid = load_valid(Path("blueprints") / f"{name}.yaml")
    topo, findings = expand(valid)
    ctx = RenderContext(valid, topo, findings)
    assert shared_cable_list(ctx).irregular, "the example has irregular cables"
    tables = render_cabling(ctx)
    whole_tables = {path: list(tables[path]) for path in (CABLING_CSV, LINKS_CSV)}
    assert all(len(whole_tables[path]) == 2 for path in (CABLING_CSV, LINKS_CSV)), "a header and one piece"
    monkeypatch.setattr(pieces, "LINES_PER_PIECE", 7)
    in_pieces = render_cabling(ctx)
    for path in (CABLING_CSV, LINKS_CSV):
        first, again = list(in_pieces[path]), list(in_pieces[path])
        assert len(first) > 2 and first == again
        assert "".join(first) == "".join(whole_tables[path])
    lines = whole(in_pieces[CABLING_CSV]).splitlines()
    assert len(lines) == 1 + len(topo.cables)
