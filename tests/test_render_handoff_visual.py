"""The visual handoff pack: rack elevation SVGs, their index page, and the report (Markdown and HTML).

SVGs are parsed as XML and every device is checked at its U; the HTML pages are parsed, then opened in
headless Chromium (tests/apt-packages.txt) over file://, which must draw a non-blank page, log nothing to
the console, and run nothing a blueprint's text tries to inject.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from factories import valid_from
from helpers import BLUEPRINTS, REPO

from clusterforge.checks import run_checks
from clusterforge.errors import Finding, Severity
from clusterforge.expand import expand
from clusterforge.expand.topology import Topology
from clusterforge.output.pieces import Pieces, whole
from clusterforge.pipeline import load_valid, render_files
from clusterforge.render.context import RenderContext
from clusterforge.render.handoff.elevation import TOP, U_PX, render_elevation
from clusterforge.render.handoff.report import render_report
from clusterforge.validate import ValidBlueprint

SVG = "{http://www.w3.org/2000/svg}"
PAYLOAD = "<script>alert(1)</script>"
IMG_PAYLOAD = "<img src=x onerror=alert(2)>"
MINE = ("handoff/report.", "handoff/elevations/")
"""The files of this family (the handoff folder also holds the cabling plan and the BOM)."""
COMPUTE_BLUE = (0x9E, 0xCA, 0xE1)
"""The compute role's fill in elevation.ROLE_COLOURS, looked for in the screenshot."""


@cache
def expanded(name: str) -> tuple[ValidBlueprint, Topology, list[Finding]]:
    valid = load_valid(REPO / "blueprints" / name)
    topo, early = expand(valid)
    return valid, topo, run_checks(valid, topo, early)


@cache
def two_feed_h200() -> tuple[ValidBlueprint, Topology, list[Finding]]:
    """The h200 example on two-feed generic racks: losing a feed throttles its nodes (CF-POWER-004, a finding
    about a node group, not a rack), which the example's AR3300 racks with four PDUs no longer give."""
    data = yaml.safe_load((REPO / "blueprints" / "h200-training-pod.yaml").read_text(encoding="utf-8"))
    for row in data["floor"]["rows"]:
        row["rack_type"] = "generic/air-42u-40kw"
    valid = valid_from(data)
    topo, early = expand(valid)
    return valid, topo, run_checks(valid, topo, early)


@cache
def elevation_files(name: str) -> dict[str, str]:
    return {rel: whole(text) for rel, text in render_elevation(RenderContext(*expanded(name))).items()}


# --- elevations as XML ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [p.name for p in BLUEPRINTS])
def test_every_rack_svg_draws_each_device_at_its_u(name: str) -> None:
    _, topo, _ = expanded(name)
    files = elevation_files(name)
    assert sorted(files) == sorted(
        [f"handoff/elevations/{r}.svg" for r in topo.racks] + ["handoff/elevations/index.html"]
    )
    for rack in topo.racks.values():
        root = ET.fromstring(files[f"handoff/elevations/{rack.name}.svg"])
        assert root.tag == f"{SVG}svg"
        rack_u = rack.rack_type.u_height
        faces = {g.get("data-face"): g.find(f"{SVG}rect") for g in root.iter(f"{SVG}g") if g.get("class") == "face"}
        assert set(faces) == {"front", "rear"}
        frame_bottom = {
            face: float(r.get("y", 0)) + float(r.get("height", 0)) for face, r in faces.items() if r is not None
        }
        assert set(frame_bottom.values()) == {TOP + rack_u * U_PX}
        drawn: dict[tuple[str, str], ET.Element] = {}
        for g in root.iter(f"{SVG}g"):
            if g.get("data-device"):
                drawn[(g.get("data-device", ""), g.get("data-face", ""))] = g
        devices = [d for d in topo.nodes_in_rack(rack.name) if d.u is not None]
        assert {d for d, _ in drawn} == {d.name for d in devices}
        for device in devices:
            assert device.u is not None
            for face in ("front", "rear"):
                g = drawn[(device.name, face)]
                box = g.find(f"{SVG}rect")
                assert box is not None
                y, height = float(box.get("y", -1)), float(box.get("height", -1))
                # U1 at the bottom: the device's top edge is (rack U - its highest U) slots below the top
                assert y == TOP + (rack_u - (device.u + device.u_height - 1)) * U_PX, (rack.name, device.name)
                assert height == device.u_height * U_PX
                if device.u == 1:
                    assert y + height == frame_bottom[face]
                texts = " ".join("".join(t.itertext()) for t in g.iter(f"{SVG}text"))
                assert device.name in texts
                if face == "front" and device.u_height > 1:
                    assert device.model in texts
        # every reserved U is drawn hatched, on both faces, with its purpose
        reserved_u = {i + 1 for i, slot in enumerate(rack.used) if slot and slot.startswith("reserved:")}
        drawn_u: set[int] = set()
        for g in root.iter(f"{SVG}g"):
            if g.get("class") == "reserved" and g.get("data-face") == "front":
                low, height = int(g.get("data-u", 0)), int(g.get("data-height", 0))
                drawn_u |= set(range(low, low + height))
                box = g.find(f"{SVG}rect")
                assert box is not None and box.get("fill", "").startswith("url(#hatch-")
                assert float(box.get("y", -1)) == TOP + (rack_u - (low + height - 1)) * U_PX
        assert drawn_u == reserved_u
        # U numbers 1..N, 1 lowest; the footer states power, heat and weight against the rack's limits
        numbers = {
            int(t.text or 0): float(t.get("y", 0)) for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"
        }
        assert sorted(numbers) == list(range(1, rack_u + 1)) and numbers[1] > numbers[rack_u]
        footer = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
        assert "Power:" in footer and "Heat to" in footer and "Weight:" in footer
        assert f"of {rack.rack_type.max_load_kg:,.0f} kg max load" in footer
        assert not [e for e in root.iter() if not e.tag.startswith(SVG)], "only SVG elements"
        assert not [e for e in root.iter() if e.get("href") or e.get("{http://www.w3.org/1999/xlink}href")]


def test_nvl72_rack_shows_trays_switch_trays_shelves_and_the_manifold() -> None:
    svg = elevation_files("gb200-nvl72.yaml")["handoff/elevations/A01.svg"]
    root = ET.fromstring(svg)
    roles = {g.get("class") for g in root.iter(f"{SVG}g") if g.get("data-device")}
    assert {"device role-compute", "device role-nvswitch", "device role-power-shelf", "device role-oob"} <= roles
    texts = " ".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))
    assert "liquid manifold and cable management" in texts
    titles = [t.text for t in root.iter(f"{SVG}title")]
    assert "reserved U38-U48: liquid manifold and cable management" in titles
    assert "Heat to liquid:" in texts


def test_elevations_are_deterministic() -> None:
    ctx = RenderContext(*expanded("h200-training-pod.yaml"))
    assert render_elevation(ctx) == render_elevation(ctx)


# --- HTML structure -----------------------------------------------------------------------------------
class Page(HTMLParser):
    """What the tests look at in an HTML page: elements, attributes, text, and text per rack figure."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.rack_text: dict[str, list[str]] = {}
        self._figure: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "figure":
            self._figure.append(attributes.get("data-rack"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure" and self._figure:
            self._figure.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._figure and self._figure[-1]:
            self.rack_text.setdefault(self._figure[-1], []).append(data)


def parse_html(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    return page


def assert_inert(page: Page) -> None:
    """No script, no event handler, nothing loaded from elsewhere."""
    assert not [t for t, _ in page.tags if t in ("script", "iframe", "object", "embed", "img", "link")]
    assert not [(t, a) for t, attrs in page.tags for a in attrs if a.lower().startswith("on")]
    assert not [(t, a) for t, attrs in page.tags for a, v in attrs.items() if a in ("src", "href") and v]


def test_index_page_shows_every_row_and_the_findings_on_their_rack() -> None:
    valid, topo, findings = two_feed_h200()
    about_rack = Finding(
        "CF-TEST-001", Severity.WARNING, "rack A02 is <close> to its limit", subject="A02", suppressed_by=None
    )
    about_switch = Finding("CF-TEST-002", Severity.INFO, "a note on a switch", subject="oob-sw014")
    files = render_elevation(RenderContext(valid, topo, [*findings, about_rack, about_switch]))
    html = whole(files["handoff/elevations/index.html"])
    page = parse_html(html)
    assert_inert(page)
    sections = [a.get("id") for t, a in page.tags if t == "section" and a.get("class") == "row"]
    assert sections == ["row-A", "row-B", "row-N"]
    assert [a.get("data-rack") for t, a in page.tags if t == "figure"] == list(topo.racks)
    assert len([t for t, _ in page.tags if t == "svg"]) == len(topo.racks)
    assert "rack A02 is <close> to its limit" in " ".join(page.rack_text["A02"])
    assert "<close>" not in html  # escaped in the source
    assert "a note on a switch" in " ".join(page.rack_text[topo.devices["oob-sw014"].rack or ""])
    assert "rack A02 is" not in " ".join(page.rack_text["A01"])
    # a finding about a node group is not about one rack: listed above the rows
    assert "CF-POWER-004" not in " ".join(t for texts in page.rack_text.values() for t in texts)
    assert "CF-POWER-004" in " ".join(page.text)
    # one row per printed page
    assert "@media print" in html and "break-before: page" in html


# --- the report -------------------------------------------------------------------------------------------
def evil_blueprint(tmp_path: Path) -> Path:
    """h200-training-pod with hostile free text: site, description, a suppression reason, and a rack type
    from a user catalog file with a hostile name, vendor, reserved purpose and source."""
    data: dict[str, Any] = yaml.safe_load((REPO / "blueprints" / "h200-training-pod.yaml").read_text())
    racks = yaml.safe_load((REPO / "clusterforge" / "catalog" / "data" / "racks.yaml").read_text())["racks"]
    rack = racks["generic/air-42u-40kw"]
    rack.update(
        name=PAYLOAD,
        vendor="ACME & <b>Sons</b> | *bold* [link](http://x)",
        reserved=[{"u": 42, "purpose": IMG_PAYLOAD}],
    )
    rack["sources"]["max_load_kg"] = f"estimate: {PAYLOAD}"
    (tmp_path / "racks.yaml").write_text(yaml.safe_dump({"racks": {"site/evil-rack": rack}}))
    data["catalogs"] = ["racks.yaml"]
    for row in data["floor"]["rows"]:
        row["rack_type"] = "site/evil-rack"
    data["site"]["name"] = PAYLOAD
    data["description"] = f"{PAYLOAD} & {IMG_PAYLOAD}"
    data["suppress"] = [{"code": "CF-POWER-004", "target": "gpu", "reason": f"{PAYLOAD} capping tested"}]
    path = tmp_path / "evil.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_report_markdown_has_the_figures_findings_and_estimates() -> None:
    valid, topo, findings = two_feed_h200()
    md = render_report(RenderContext(valid, topo, findings))["handoff/report.md"]
    lines = md.splitlines()
    assert "| GPUs | 248 |" in lines and "| Racks | 14 |" in lines
    assert "| compute | leaf | 8 | nvidia/qm9700 | 1:1 | 1:1 |" in lines
    assert "| compute | spine | 4 | nvidia/qm9700 | top tier, no uplinks |  |" in lines
    assert any(line.startswith("| A01 | A | 30.76 | 36.23 | 85% |") for line in lines)
    assert any("CF-POWER-004" in line and line.startswith("| warning |") for line in lines)
    assert "| generic/air-42u-40kw | Generic 42U air-cooled rack" in md
    assert "| max\\_load\\_kg | estimate: common static load rating (3,000 lb) |" in md
    # every table row has as many cells as its header
    for i, line in enumerate(lines):
        if line.startswith("| ---"):
            width = lines[i - 1].count(" | ")
            for row in lines[i + 1 :]:
                if not row.startswith("|"):
                    break
                assert row.replace("\\|", "").count(" | ") == width, row


def test_hostile_text_is_escaped_everywhere(tmp_path: Path) -> None:
    files = render_files(load_valid(evil_blueprint(tmp_path)))
    # SVG: valid XML, the text shown as text, no element but SVG ones
    for path in (p for p in files if p.endswith(".svg")):
        root = ET.fromstring(files[path])
        assert not [e for e in root.iter() if not e.tag.startswith(SVG)]
        texts = [("".join(t.itertext())) for t in root.iter(f"{SVG}text")]
        assert any(PAYLOAD in t for t in texts)
        assert f"reserved: {IMG_PAYLOAD}" in texts
    # Markdown: HTML as entities, link and emphasis marks backslash-escaped, so GitHub shows the text as is
    md = files["handoff/report.md"]
    assert "<" not in md and ">" not in md
    assert re.findall(r"(?<!\\)[\[\]]", md) == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt; capping tested" in md
    assert "ACME &amp; &lt;b&gt;Sons&lt;/b&gt; \\| \\*bold\\* \\[link\\](http://x)" in md
    # HTML: nothing executable, the text present
    for path in ("handoff/report.html", "handoff/elevations/index.html"):
        page = parse_html(files[path])
        assert_inert(page)
        text = " ".join(page.text)
        assert PAYLOAD in text and IMG_PAYLOAD in text
    report = parse_html(files["handoff/report.html"])
    assert f"{PAYLOAD} capping tested" in " ".join(report.text)


# --- in a real browser ------------------------------------------------------------------------------------
def chromium() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.fail("chromium is not installed (tests/run.sh installs it from tests/apt-packages.txt)")
    return binary


@dataclass
class BrowserRun:
    dom: str
    console: list[str]
    png: bytes


def open_in_chromium(page: Path, work: Path, width: int = 1200, height: int = 1500) -> BrowserRun:
    """Load `page` over file:// with no network, and return the DOM after load, console lines and a screenshot."""
    shot = work / f"{page.stem}.png"
    result = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={work / 'profile'}",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            f"--window-size={width},{height}",
            f"--screenshot={shot}",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=work,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert shot.exists(), result.stderr[-2000:]
    return BrowserRun(result.stdout, console, shot.read_bytes())


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA, non-interlaced PNG into rows of RGB bytes (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = chunk
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = previous[i], previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        previous = line
        rows.append(bytes(line) if bpp == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
    return width, height, rows


def colours(png: bytes) -> dict[tuple[int, int, int], int]:
    """Pixel count by colour."""
    _, _, rows = png_pixels(png)
    counts: dict[tuple[int, int, int], int] = {}
    for row in rows:
        for i in range(0, len(row), 3):
            key = (row[i], row[i + 1], row[i + 2])
            counts[key] = counts.get(key, 0) + 1
    return counts


def assert_not_blank(png: bytes) -> dict[tuple[int, int, int], int]:
    counts = colours(png)
    total = sum(counts.values())
    background = max(counts.values())
    assert len(counts) > 20, "the screenshot has almost no colours"
    assert total - background > total * 0.02, "the screenshot is nearly all one colour"
    return counts


def test_the_browser_harness_catches_a_broken_page(tmp_path: Path) -> None:
    """The checks below can fail: a blank page and a page with a script error are caught."""
    (tmp_path / "blank.html").write_text("<!DOCTYPE html><html><body></body></html>")
    (tmp_path / "broken.html").write_text(
        "<!DOCTYPE html><html><body><p>x</p><script>undefined_function()</script></body></html>"
    )
    blank = open_in_chromium(tmp_path / "blank.html", tmp_path, 400, 300)
    with pytest.raises(AssertionError):
        assert_not_blank(blank.png)
    broken = open_in_chromium(tmp_path / "broken.html", tmp_path, 400, 300)
    assert any("undefined_function" in line for line in broken.console)


def test_report_html_renders_in_chromium(tmp_path: Path) -> None:
    valid = load_valid(REPO / "blueprints" / "h200-training-pod.yaml")
    out = tmp_path / "out"
    for rel, text in render_files(valid).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    report = out / "handoff" / "report.html"
    parse_html(report.read_text())  # well-formed enough to parse before a browser forgives it
    run = open_in_chromium(report, tmp_path)
    assert run.console == []
    dom = parse_html(run.dom)
    assert_inert(dom)
    # one drawing per rack, the workload chart, a floor map per element class of the single failures (11 here)
    assert len([t for t, _ in dom.tags if t == "svg"]) == 14 + 1 + 11
    assert len([t for t, _ in dom.tags if t == "table"]) >= 8
    assert "h200-training-pod: handoff report" in " ".join(dom.text)
    assert_not_blank(run.png)
    # the elevations page: its first row's compute nodes show in their colour
    index = open_in_chromium(out / "handoff" / "elevations" / "index.html", tmp_path)
    assert index.console == []
    assert colours(index.png).get(COMPUTE_BLUE, 0) > 10_000


@pytest.mark.parametrize("name", [p.name for p in BLUEPRINTS])
def test_every_example_report_renders_in_chromium(name: str, tmp_path: Path) -> None:
    """Each example's report and elevations page: no console errors, one drawing per rack, not blank."""
    valid, topo, _ = expanded(name)
    out = tmp_path / "out"
    for rel, text in render_files(valid).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    for page in ("report.html", "elevations/index.html"):
        run = open_in_chromium(out / "handoff" / page, tmp_path)
        assert run.console == [], page
        dom = parse_html(run.dom)
        assert_inert(dom)
        assert len([t for t, _ in dom.tags if t == "svg"]) >= len(topo.racks), page
        assert_not_blank(run.png)


def test_hostile_text_runs_nothing_in_chromium(tmp_path: Path) -> None:
    files = render_files(load_valid(evil_blueprint(tmp_path)))
    page = tmp_path / "report.html"
    page.write_text(files["handoff/report.html"])
    run = open_in_chromium(page, tmp_path)
    assert run.console == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in run.dom
    assert "&lt;img src=x onerror=alert(2)&gt;" in run.dom
    dom = parse_html(run.dom)
    assert_inert(dom)
    assert PAYLOAD in " ".join(dom.text)
    assert_not_blank(run.png)


def test_handoff_pages_do_not_depend_on_the_working_directory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    blueprint = REPO / "blueprints" / "h200-training-pod.yaml"
    here = {k: v for k, v in render_files(load_valid(blueprint)).items() if k.startswith(MINE)}
    monkeypatch.chdir(tmp_path)
    there = {k: v for k, v in render_files(load_valid(blueprint)).items() if k.startswith(MINE)}
    assert here == there
    assert "| h200-training-pod.yaml:31:5 |" in here["handoff/report.md"]  # CF-PORT-002 on group mgmt


def test_large_clusters_link_the_rack_drawings_instead_of_inlining_them(tmp_path: Path) -> None:
    """Above INLINE_RACKS_MAX racks the report and the elevations page show each rack as an <img> of its
    SVG file (every link resolves), so the pages stay small; the browser loads them without errors."""
    from factories import dgx_data, valid_from

    from clusterforge.render.handoff.elevation import INLINE_RACKS_MAX

    valid = valid_from(dgx_data(4 * INLINE_RACKS_MAX + 4))
    files = render_files(valid)
    out = tmp_path / "out"
    for rel, text in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    racks = sorted(p.stem for p in (out / "handoff" / "elevations").glob("*.svg"))
    assert len(racks) > INLINE_RACKS_MAX
    for page, folder in (("report.html", "elevations/"), ("elevations/index.html", "")):
        text = files[f"handoff/{page}"]
        linked = re.findall(r'<img src="([^"]+)"', text)
        assert linked == [f"{folder}{name}.svg" for name in ordered(racks, text)], page
        assert all((out / "handoff" / page).parent.joinpath(src).is_file() for src in linked), page
        assert "<svg" not in text.split('<section class="row"', 1)[1], f"{page} still inlines a rack"
        assert len(text) < 2_000_000, page
    run = open_in_chromium(out / "handoff" / "report.html", tmp_path)
    assert run.console == []
    assert_not_blank(run.png)


def test_large_clusters_draw_each_rack_as_it_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above INLINE_RACKS_MAX racks no page inlines the drawings, so each rack's SVG is drawn when its file is
    written (a Pieces), not all of them first: the same drawing, made only when read, anew at each reading."""
    from clusterforge.render.handoff import elevation, rack_drawing

    ctx = RenderContext(*expanded("h200-training-pod.yaml"))
    drawn = {rel: text for rel, text in render_elevation(ctx).items() if rel.endswith(".svg")}
    assert drawn and all(isinstance(text, str) for text in drawn.values())
    monkeypatch.setattr(elevation, "INLINE_RACKS_MAX", 0)
    calls: list[str] = []
    draw = rack_drawing.RackDrawer.file

    def counted(self: rack_drawing.RackDrawer, rack: Any, *args: Any) -> str:
        calls.append(rack.name)
        return draw(self, rack, *args)

    monkeypatch.setattr(rack_drawing.RackDrawer, "file", counted)
    lazy = {rel: text for rel, text in render_elevation(RenderContext(*expanded("h200-training-pod.yaml"))).items()}
    assert calls == [] and all(isinstance(lazy[rel], Pieces) for rel in drawn)
    assert {rel: whole(lazy[rel]) for rel in drawn} == drawn
    assert whole(lazy[next(iter(drawn))]) == next(iter(drawn.values()))
    assert len(calls) == len(drawn) + 1


def ordered(racks: list[str], page: str) -> list[str]:
    """The racks in the order the page shows them (floor order, by their figure ids)."""
    order = re.findall(r'<figure class="rack" id="rack-([^"]+)"', page)
    assert sorted(order) == racks
    return order
