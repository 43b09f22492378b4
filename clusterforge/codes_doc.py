"""docs/codes.md, generated from the finding-code registry (as docs/reference.md is from the schema)."""

from __future__ import annotations

from .codes import FAMILIES, REGISTRY, CodeInfo


def table_cell(text: str) -> str:
    """Text as one cell of a generated Markdown table (docs/codes.md, docs/reference.md): pipes escaped,
    newlines as spaces."""
    return text.replace("|", "\\|").replace("\n", " ")


def _entry(info: CodeInfo) -> list[str]:
    return [
        f"### {info.code}",
        "",
        f"**{info.severity.value}**: {info.title}.",
        "",
        f"What to do: {info.action}.",
        "",
        "```",
        f"{info.severity.value} {info.code}: {info.example}",
        "```",
        "",
    ]


def codes_markdown() -> str:
    entries = sorted(REGISTRY.values(), key=lambda i: (list(FAMILIES).index(i.family), i.code))
    lines = [
        "# Finding codes",
        "",
        "Every code clusterforge reports, generated from `clusterforge/codes.py` by "
        "`python tests/regen.py codes`; do not edit by hand. A blueprint silences a warning with "
        "`suppress: [{code: ..., target: ..., reason: ...}]` (README, Check).",
        "",
        "| code | severity | what it means |",
        "|---|---|---|",
    ]
    lines += [f"| [{i.code}](#{i.code.lower()}) | {i.severity.value} | {table_cell(i.title)} |" for i in entries]
    lines.append("")
    family = ""
    for info in entries:
        if info.family != family:
            family = info.family
            lines += [f"## {FAMILIES[family]}", ""]
        lines += _entry(info)
    return "\n".join(lines).rstrip() + "\n"
