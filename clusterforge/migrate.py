"""Blueprint versions: what each one changed, and `clusterforge migrate`, which rewrites an older blueprint to
the current version keeping its comments and layout (a ruamel.yaml round trip).

A blueprint without `version:` is version 1. It is read as version 1 meant it, with a CF-MIGRATE-001 warning
per meaning that changed (checks/management.py); `migrate` writes down what version 1 left implicit, so the
blueprint then means the same under the current version without a warning.
"""

from __future__ import annotations

import difflib
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .expand.management import management_networks
from .lockfile import Keep, write_atomically
from .pipeline import analyse, load_valid

CURRENT_VERSION = 2
CHANGES: dict[int, list[str]] = {
    2: [
        "a node group on no in-band network names the network Ansible reaches it on (`management_network`): "
        "version 1 reached it on its BMCs implicitly, version 2 refuses it (CF-MGMT-001); `migrate` writes "
        "`management_network: <the out-of-band network>` into each such group",
        "`render` writes and keeps the lock file beside the blueprint (Day two); nothing to write",
    ],
}
"""What each version changed, in the words of the README's Migrations table."""


@dataclass
class Migration:
    """The blueprint's text before and after, and what was done or is left to do by hand."""

    path: Path
    old: str
    new: str
    version: int
    done: list[str] = field(default_factory=list)
    by_hand: list[str] = field(default_factory=list)

    def diff(self) -> str:
        name = str(self.path)
        lines = difflib.unified_diff(
            self.old.splitlines(keepends=True), self.new.splitlines(keepends=True), name, name + " (migrated)"
        )
        return "".join(lines)


def implicit_bmc_groups(path: Path, allow: Sequence[Path] = ()) -> dict[str, str]:
    """Node group -> the out-of-band network version 1 reached it on implicitly (no in-band network, no
    management_network)."""
    analysis = analyse(load_valid(path, allow), keep=Keep())  # the lock file changes no network
    chosen = management_networks(analysis.valid.blueprint, analysis.topo)
    return {group: m.network for group, m in chosen.items() if m.how == "bmc" and m.network is not None}


def migrate(path: Path, allow: Sequence[Path] = ()) -> Migration:
    """The blueprint at `path` rewritten to CURRENT_VERSION (not written: see `write`)."""
    from ruamel.yaml import YAML

    implicit = implicit_bmc_groups(path, allow)  # read as every blueprint is: bounded, errors located
    old = path.read_text(encoding="utf-8")
    mapping, offset = _indents(old)
    yaml = YAML()  # round trip: comments, key order, quotes and flow style kept
    yaml.preserve_quotes = True
    yaml.width = 10_000  # no line is re-wrapped
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    data: Any = yaml.load(old)
    version = int(data.get("version", 1))
    migration = Migration(path, old, old, version)
    if version >= CURRENT_VERSION:
        return migration
    groups = {g.get("name"): g for g in data.get("node_groups") or [] if hasattr(g, "get")}
    for group, network in implicit.items():
        if group in groups:
            groups[group]["management_network"] = network
            migration.done.append(f"node group '{group}': management_network: {network} (its BMCs, as version 1)")
        else:  # the group comes from an included file
            migration.by_hand.append(f"node group '{group}' (in an included file): add management_network: {network}")
    if "version" in data:
        data["version"] = CURRENT_VERSION
    else:
        data.insert(0, "version", CURRENT_VERSION)
    migration.done.append(f"version: {CURRENT_VERSION}")
    out = io.StringIO()
    yaml.dump(data, out)
    migration.new = out.getvalue()
    return migration


def _indents(text: str) -> tuple[int, int]:
    """The blueprint's layout: how far a mapping's keys are indented under their parent key (2 by default),
    and how far a block sequence's dashes are (0: `- ` under the key, 2: indented like a mapping)."""
    mapping: int | None = None
    offset: int | None = None
    parent = -1
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        lead = len(line) - len(stripped)
        if parent >= 0 and lead > parent:
            if stripped.startswith("- ") and offset is None:
                offset = lead - parent
            elif not stripped.startswith("- ") and mapping is None:
                mapping = lead - parent
        parent = lead if stripped.endswith(":") and not stripped.startswith("- ") else -1
        if mapping is not None and offset is not None:
            break
    return mapping or 2, offset if offset is not None else 2


def write(migration: Migration) -> None:
    write_atomically(migration.path, migration.new)
