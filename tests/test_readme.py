"""The README stays a ten-minute read: at most 450 lines, a table of contents naming every section, short table
rows, and every link into docs/ (and between pages of docs/) reaching a file and heading that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers import REPO

README = REPO / "README.md"
MAX_LINES = 450
MAX_ROW = 300
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(`{3,}|~{3,})")


def prose(text: str) -> list[str]:
    """The lines of a markdown text outside fenced blocks (a heading or link in a code sample is not one)."""
    lines, fence = [], ""
    for line in text.splitlines():
        opened = FENCE.match(line)
        if fence:
            if line.strip() == fence:
                fence = ""
        elif opened:
            fence = opened.group(1)
        else:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (`-` and `_` kept), spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a page; a repeated heading gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(path.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6} (.+)$", line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def local_links(path: Path) -> list[str]:
    """Links of a page to files of this repository (not to the web, not mail)."""
    links = [m.group(1) for line in prose(path.read_text(encoding="utf-8")) for m in LINK.finditer(line)]
    return [link for link in links if not re.match(r"^[a-z]+:", link)]


def broken(path: Path, link: str) -> str | None:
    """Why a link of `path` leads nowhere, or None when its file (and heading) exist."""
    target, _, fragment = link.partition("#")
    file = (path.parent / target).resolve() if target else path
    if not file.exists():
        return f"{path.name}: {link}: no file {file}"
    if fragment and file.suffix == ".md" and fragment not in anchors(file):
        return f"{path.name}: {link}: {file.name} has no heading '#{fragment}'"
    return None


def test_readme_is_at_most_450_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines: move a section to docs/ and link it"


def test_readme_has_a_table_of_contents_naming_every_section() -> None:
    lines = prose(README.read_text(encoding="utf-8"))
    assert "## Contents" in lines, "README.md has no '## Contents'"
    start = lines.index("## Contents") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## "))
    listed = {m.group(1) for line in lines[start:end] for m in re.finditer(r"\]\(#([^)]+)\)", line)}
    sections = {slug(line[3:]) for line in lines if line.startswith("## ") and line != "## Contents"}
    assert sections - listed == set(), "sections missing from the table of contents"
    assert listed - anchors(README) == set(), "contents entries without their heading"


def test_readme_table_rows_are_short() -> None:
    rows = [line for line in prose(README.read_text(encoding="utf-8")) if line.startswith("|")]
    long_rows = [row[:60] for row in rows if len(row) > MAX_ROW]
    assert rows and long_rows == [], f"README table rows over {MAX_ROW} characters: move the detail to docs/"


def test_readme_links_into_docs_exist() -> None:
    links = [link for link in local_links(README) if link.startswith("docs/") or link.startswith("#")]
    assert any(link.startswith("docs/") for link in links)
    assert [problem for link in links if (problem := broken(README, link))] == []


@pytest.mark.parametrize("page", sorted(p.name for p in (REPO / "docs").glob("*.md")))
def test_docs_links_exist(page: str) -> None:
    path = REPO / "docs" / page
    assert [problem for link in local_links(path) if (problem := broken(path, link))] == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Some `code` here (too)\n\n```\n## not a heading\n```\n")
    readme = tmp_path / "README.md"
    assert broken(readme, "docs/a.md#some-code-here-too") is None
    assert broken(readme, "docs/b.md") is not None
    assert broken(readme, "docs/a.md#not-a-heading") is not None


def test_the_dependencies_section_stays_true() -> None:
    """README, Dependencies: networkx is imported by clusterforge/graph.py alone (inside its functions), ansible
    by no module; if that changes, so must the README (or the dependency becomes an extra)."""
    importers: dict[str, set[str]] = {"networkx": set(), "ansible": set()}
    for path in sorted((REPO / "clusterforge").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in importers:
                    importers[top].add(str(path.relative_to(REPO)))
    assert importers == {"networkx": {"clusterforge/graph.py"}, "ansible": set()}
    text = README.read_text(encoding="utf-8")
    assert "## Dependencies" in text and "`networkx`" in text and "`ansible-core`" in text
