"""`clusterforge catalog`: the catalog entries a blueprint can name, as text (cli.py prints it).

`list` gives one line per entry: its kind (what a blueprint field takes it as), its key, vendor and product
name, and how many of its figures are estimates. `show KEY` gives every field of one entry and, per field,
the source the catalog names for it (a data sheet or reference architecture, or `estimate: ...`).
"""

from __future__ import annotations

from typing import Any

import yaml

from .catalog import Catalog, Sourced


def _kind(entry: Sourced) -> str:
    return type(entry).__name__.lower()


def catalog_list_text(catalog: Catalog) -> str:
    rows = sorted(
        (_kind(entry), key, f"{entry.vendor} {entry.name}", len(entry.estimated_fields()))
        for key, entry in catalog.entries.items()
    )
    kind_width = max(len(r[0]) for r in rows)
    key_width = max(len(r[1]) for r in rows)
    lines = [f"{'kind':<{kind_width}}  {'key':<{key_width}}  name (estimated figures)"]
    lines += [
        f"{kind:<{kind_width}}  {key:<{key_width}}  {name}" + (f" ({estimates} estimated)" if estimates else "")
        for kind, key, name, estimates in rows
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
