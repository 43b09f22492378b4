"""`clusterforge catalog`: the catalog entries a blueprint can name, as text (cli.py prints it).

`list` gives one line per entry: its kind (what a blueprint field takes it as), its key, vendor and product
name, how many of its figures are estimates, and the document most of its other figures cite (the source
text up to its first comma, semicolon, colon or parenthesis; a web address whole). `show KEY` gives every
field of one entry and, per field,
the source the catalog names for it (a data sheet or reference architecture, or `estimate: ...`).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import yaml

from .catalog import Catalog, Sourced


def _kind(entry: Sourced) -> str:
    return type(entry).__name__.lower()


_DOCUMENT_END = re.compile(r"[,;:(]")
_SHOWN = 60


def _document(source: str) -> str:
    """The document a source text names: a web address, or the text before its first qualifier."""
    text = source.strip().strip("\"'")
    if text.startswith(("http://", "https://")):
        return text.split()[0].rstrip(":,;")
    return _DOCUMENT_END.split(text, 1)[0].strip()


def main_source(entry: Sourced) -> str:
    """The document most of the entry's figures that are not estimates cite (ties: the first field's)."""
    documents = [
        _document(text) for _, text in sorted(entry.sources.items()) if not text.lower().startswith("estimate")
    ]
    if not documents:
        return "estimates only" if entry.sources else "no sources"
    counts = Counter(documents)
    best = max(counts.values())
    found = next(d for d in documents if counts[d] == best)
    return found if len(found) <= _SHOWN else found[: _SHOWN - 3] + "..."


def catalog_list_text(catalog: Catalog) -> str:
    rows = sorted(
        (_kind(entry), key, f"{entry.vendor} {entry.name}", len(entry.estimated_fields()), main_source(entry))
        for key, entry in catalog.entries.items()
    )
    kind_width = max(len(r[0]) for r in rows)
    key_width = max(len(r[1]) for r in rows)
    lines = [f"{'kind':<{kind_width}}  {'key':<{key_width}}  name (estimated figures); source"]
    lines += [
        f"{kind:<{kind_width}}  {key:<{key_width}}  {name}"
        + (f" ({estimates} estimated)" if estimates else "")
        + f"; source: {source}"
        for kind, key, name, estimates, source in rows
    ]
    lines.append(f"{len(rows)} entries; `clusterforge catalog show KEY` gives one with its sources")
    return "\n".join(lines) + "\n"


def catalog_show_text(catalog: Catalog, key: str) -> str | None:
    """Every field of the entry `key` and the sources of its figures; None for an unknown key."""
    entry = catalog.entries.get(key)
    if entry is None:
        return None
    fields: dict[str, Any] = entry.model_dump(mode="json", exclude={"sources"}, exclude_none=True)
    origin = catalog.origins.get(key)
    lines = [
        f"{key}: {_kind(entry)}, {entry.vendor} {entry.name}" + (f" (defined at {origin})" if origin else ""),
        yaml.safe_dump(fields, sort_keys=False, allow_unicode=True).rstrip(),
        "sources:",
    ]
    lines += [f"  {field}: {source}" for field, source in sorted(entry.sources.items())] or ["  (none given)"]
    return "\n".join(lines) + "\n"


def close_keys(catalog: Catalog, key: str) -> list[str]:
    import difflib

    return difflib.get_close_matches(key, list(catalog.entries), n=3)
