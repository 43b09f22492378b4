"""Relative paths of rendered files: checked before anything is written, so no file lands outside its folder."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

SAFE_PART = re.compile(r"[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,127}")
"""One path component: no separators, no control characters, no leading dot (so never '.' or '..')."""
MAX_DEPTH = 8


class UnsafePath(ValueError):
    """A rendered file's path that could leave the output folder or that a file system would misread."""


def check_relative(rel: str) -> PurePosixPath:
    """`rel` as a path inside the output folder, or UnsafePath saying why not."""
    path = PurePosixPath(rel)
    parts = rel.split("/")
    if not rel or path.is_absolute() or len(parts) > MAX_DEPTH:
        raise UnsafePath(f"{rel!r} is not a relative path of at most {MAX_DEPTH} parts")
    for part in parts:
        if not SAFE_PART.fullmatch(part):
            raise UnsafePath(
                f"{rel!r}: part {part!r} is not a plain file name "
                "(letters, digits, '.', '_', '+', '-'; not starting with '.'; at most 128)"
            )
    return path
