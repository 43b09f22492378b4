"""Relative paths of rendered files: checked before anything is written, so no file lands outside its folder."""

from __future__ import annotations

import re

SAFE_PART = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,127}")
"""One path component: no separators, no control characters, no leading dot (so never '.' or '..')."""
MAX_DEPTH = 8


class UnsafePath(ValueError):
    """A rendered file's path that could leave the output folder or that a file system would misread."""


def check_relative(rel: str) -> None:
    """Raise UnsafePath, saying why, unless `rel` is a path inside the output folder (called per file written:
    plain string work, no Path objects)."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or len(parts) > MAX_DEPTH:
        raise UnsafePath(f"{rel!r} is not a relative path of at most {MAX_DEPTH} parts")
    for part in parts:
        if not SAFE_PART.fullmatch(part):
            raise UnsafePath(
                f"{rel!r}: part {part!r} is not a plain file name "
                "(letters, digits, '.', '_', '+', '-'; not starting with '.'; at most 128)"
            )
