"""A hostile value in every free-text field of a blueprint and its site catalog renders inert in every output
format, and the real consumers read it as data: a browser-grade HTML parser, an XML parser, the csv module,
a Markdown table's column count, ansible-inventory and ansible-playbook."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from helpers import REPO, ansible, run_cli

from clusterforge.render.ansible.host_data import host_data_json
from clusterforge.render.ansible.inventory_json import UNSAFE_KEY, inventory_json

MARK = "cf-pwned"
HOSTILE = (
    f"=1+1 {{{{ lookup('pipe','touch {MARK}') }}}} {{% if 1 %}} <script>alert(1)</script> | *b* ]]> --> \" ' & ` #c %s"
)
"""Formula, Jinja2, HTML, Markdown, XML and comment syntax in one value short enough for every field."""


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """l40s-inference with HOSTILE in every free-text field, rendered with its site catalog."""
    root = tmp_path_factory.mktemp("hostile")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    bp = yaml.safe_load((REPO / "blueprints/l40s-inference.yaml").read_text())
    bp["description"] = bp["site"]["name"] = bp["site"]["location"] = HOSTILE
    for fabric in bp["fabrics"].values():
        fabric["description"] = HOSTILE
    bp["suppress"] = [{"code": "CF-SPACE-001", "target": HOSTILE, "reason": HOSTILE}]
    servers = yaml.safe_load((REPO / "clusterforge/catalog/data/servers.yaml").read_text())["servers"]
    server = servers["generic/l40s-4u-8gpu"]
    server.update(vendor=HOSTILE, name=HOSTILE, sources={key: HOSTILE for key in server.get("sources", {})})
    server["cpu"]["model"] = HOSTILE
    (root / "site.yaml").write_text(yaml.safe_dump({"servers": {"site/l40s": server}}))
    bp["catalogs"] = ["site.yaml"]
    bp["node_groups"][0]["model"] = "site/l40s"
    (root / "cluster.yaml").write_text(yaml.safe_dump(bp))
    result = run_cli("render", str(root / "cluster.yaml"), "-o", str(root / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    return root / "out"


def files_of(out: Path, suffix: str) -> list[Path]:
    found = sorted(p for p in out.rglob(f"*{suffix}") if p.is_file())
    assert found, f"no {suffix} file rendered"
    return found


def test_the_hostile_value_reaches_the_handoff_pack(rendered: Path) -> None:
    """Otherwise the tests below would pass for want of input."""
    reached = {p.suffix for p in rendered.rglob("*") if p.is_file() and "lookup(" in p.read_text()}
    assert {".csv", ".md", ".html"} <= reached


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [f"{k}={v}" for k, v in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_holds_the_value_as_text_never_as_markup(rendered: Path) -> None:
    for page in files_of(rendered, ".html"):
        parsed = Elements()
        parsed.feed(page.read_text())
        assert "script" not in parsed.tags, page
        assert not any("javascript:" in a for a in parsed.attrs), page
        assert any("<script>alert(1)</script>" in t for t in parsed.text) or "report" not in page.name, page


def test_svg_is_well_formed_and_holds_the_value_as_text(rendered: Path) -> None:
    texts = []
    for drawing in files_of(rendered, ".svg"):
        root = ET.fromstring(drawing.read_text())
        assert not [e for e in root.iter() if e.tag.endswith("script")], drawing
        texts += [e.text or "" for e in root.iter()]
    assert any("lookup(" in text for text in texts)


def test_csv_cells_read_back_whole_and_never_as_formulas(rendered: Path) -> None:
    cells = []
    for table in files_of(rendered, ".csv"):
        rows = list(csv.reader(io.StringIO(table.read_text())))
        assert all(len(row) == len(rows[0]) for row in rows), table
        cells += [cell for row in rows for cell in row]
    assert any(cell.startswith("'" + HOSTILE) for cell in cells), "the value is not in one cell behind a quote"
    assert not any(cell.lstrip().startswith(("=", "+", "@")) for cell in cells)


def test_markdown_tables_keep_their_columns(rendered: Path) -> None:
    """Every table, whichever separator form it has ('|---|' or '| --- |'); the report's hold the value."""
    checked: set[str] = set()
    for page in files_of(rendered, ".md"):
        lines = page.read_text().splitlines()
        assert not any(line.lstrip().startswith("<script") for line in lines)
        for index, line in enumerate(lines):
            if re.match(r"\| ?:?---", line):
                checked.add(page.name)
                cells = line.count("|")
                for row in lines[index + 1 :]:
                    if not row.startswith("|"):
                        break
                    assert row.replace("\\|", "").count("|") == cells, f"{page.name}: {row}"
    assert "report.md" in checked


def test_deployment_files_carry_no_free_text(rendered: Path) -> None:
    """Slurm, NCCL and Ansible files are built from validated names only; the hostile text never gets in."""
    for folder in ("slurm", "nccl", "ansible"):
        for path in (rendered / folder).rglob("*"):
            if path.is_file():
                assert "lookup(" not in path.read_text() and "<script" not in path.read_text(), path
    manifest = json.loads((rendered / "manifest.json").read_text())
    assert manifest["tool"] == "clusterforge"


def _lookup_that_touches(tmp_path: Path) -> str:
    return f"{{{{ lookup('pipe', 'touch {tmp_path / MARK}') }}}}"


def _unwrapped(tagged: str) -> str:
    """The same JSON with every unsafe value written as a plain string (what the writer must not do)."""
    return json.dumps(json.loads(tagged, object_hook=lambda d: d.get(UNSAFE_KEY, d)))


def test_ansible_never_templates_an_inventory_value(tmp_path: Path) -> None:
    """The inventory writer wraps a value that holds template syntax as Ansible's unsafe value; a play that
    prints every host var runs no lookup. The same inventory unwrapped does run it: the test can fail.
    Two hosts share the value, so it is also written as a group var."""
    value = _lookup_that_touches(tmp_path)
    hosts = {
        name: {
            "ansible_connection": "local",
            "ansible_host": "127.0.0.1",
            "cf_label": value,
            "cf_rails": {"1": {"port": value}},
            "cf_own": f"{{% if true %}}{name}{{% endif %}}",
        }
        for name in ("node001", "node002")
    }
    tagged = inventory_json({"all": {"children": {"nodes": {"hosts": hosts}}}}) + "\n"
    assert tagged.count(UNSAFE_KEY) == 4 and '"vars": {' in tagged
    untagged = _unwrapped(tagged)
    playbook = tmp_path / "print.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.debug: {var: cf_label}\n"
        "    - ansible.builtin.debug: {var: cf_rails}\n"
    )
    for name, text, runs in (("tagged", tagged, False), ("untagged", untagged, True)):
        inventory = tmp_path / f"{name}.json"
        inventory.write_text(text)
        listing = json.loads(ansible(tmp_path, "ansible-inventory", "-i", str(inventory), "--list"))
        label = listing["_meta"]["hostvars"]["node001"]["cf_label"]
        assert label in (value, {"__ansible_unsafe": value})  # newer ansible-core lists unsafe values so
        ansible(tmp_path, "ansible-playbook", "-i", str(inventory), str(tmp_path / "print.yml"))
        assert (tmp_path / MARK).exists() is runs, name
        (tmp_path / MARK).unlink(missing_ok=True)


def test_ansible_never_templates_a_host_data_value(tmp_path: Path) -> None:
    """Host data is read with include_vars, which trusts a file's strings as templates: a value with template
    syntax is written unsafe, so the play runs no lookup. The same file unwrapped does run it."""
    tagged = host_data_json({"node001": {"cf_rails": {"1": {"port": _lookup_that_touches(tmp_path)}}}})
    assert tagged.count(UNSAFE_KEY) == 1
    (tmp_path / "print.yml").write_text(
        "- hosts: node001\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.include_vars: {file: '{{ playbook_dir }}/data.json', name: rack}\n"
        "    - ansible.builtin.debug: {msg: \"{{ rack.node001.cf_rails['1'].port }}\"}\n"
    )
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"node001": {"ansible_connection": "local"}}}}))
    for name, text, runs in (("tagged", tagged, False), ("untagged", _unwrapped(tagged), True)):
        (tmp_path / "data.json").write_text(text)
        ansible(tmp_path, "ansible-playbook", "-i", str(inventory), str(tmp_path / "print.yml"))
        assert (tmp_path / MARK).exists() is runs, name
        (tmp_path / MARK).unlink(missing_ok=True)
