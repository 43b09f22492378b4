"""Which YAML files of a repository are blueprints: what `render-check` and the pre-commit hooks check.

A repository of blueprints also holds their fragments: lock files (`x.lock.yaml`), files a blueprint includes
(`include:`) and site catalogs (`catalogs:`). Given files and globs, the candidates are every file they name
but lock files and files under the output folder; a file a glob found is a candidate only when it looks like
a blueprint at its top level (a `name:` and one of `include:`, `floor:`, `node_groups:`), so a CI workflow or
a catalog beside the blueprints is passed over. `render-check` then drops the candidates another one reads.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Sequence
from pathlib import Path

from .inputs import MAX_FILE_BYTES, InputRefused, read_regular
from .lockfile import is_lock_file

YAML_SUFFIXES = (".yaml", ".yml")
_TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:", re.MULTILINE)
BLUEPRINT_KEYS = {"include", "floor", "node_groups"}


def has_glob(pattern: str) -> bool:
    return glob.has_magic(pattern)


def looks_like_blueprint(path: Path) -> bool:
    """A top-level `name:` and one of BLUEPRINT_KEYS (read up to the input size limit; False when unreadable)."""
    try:
        text = read_regular(path, MAX_FILE_BYTES)[1].decode("utf-8", errors="replace")
    except (OSError, InputRefused):
        return False
    keys = set(_TOP_KEY.findall(text))
    return "name" in keys and bool(keys & BLUEPRINT_KEYS)


def blueprint_candidates(patterns: Sequence[str], output_root: Path) -> tuple[list[Path], list[str]]:
    """The files `patterns` name (paths, or globs with `*`, `?`, `[` and `**`), sorted, without lock files and
    files under `output_root`; from globs only those that look like blueprints. Also the paths given that do
    not exist."""
    found: dict[Path, None] = {}
    missing: list[str] = []
    skip = output_root.resolve()
    for pattern in patterns:
        if has_glob(pattern):
            hits = [Path(p) for p in glob.glob(pattern, recursive=True)]
            hits = [p for p in hits if p.is_file() and p.suffix in YAML_SUFFIXES and looks_like_blueprint(p)]
        elif Path(pattern).is_file():
            hits = [Path(pattern)]
        else:
            missing.append(pattern)
            continue
        for path in hits:
            if not is_lock_file(path) and not path.resolve().is_relative_to(skip):
                found[path] = None
    return sorted(found), missing
