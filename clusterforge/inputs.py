"""Which files a blueprint may read (its includes and catalogs), and reading them with bounds.

A blueprint may read regular files inside its repository (the nearest folder above it that holds `.git`,
or its own folder outside Git) and inside folders the user allows explicitly. Devices, FIFOs and files
over the size limit are refused before any byte is read, so no input can hang a run or fill its memory.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 8 * 1024 * 1024


class InputRefused(Exception):
    """A file a blueprint names that clusterforge will not read; the message says why."""


def repository_root(blueprint: Path) -> Path:
    """The nearest folder at or above the blueprint's folder that holds `.git`, else the blueprint's folder."""
    folder = blueprint.resolve().parent
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


@dataclass(frozen=True)
class InputPolicy:
    roots: tuple[Path, ...]
    """Folders files may be read from (resolved)."""

    @classmethod
    def for_blueprint(cls, blueprint: Path, allow: Sequence[Path] = ()) -> InputPolicy:
        return cls((repository_root(blueprint), *(p.resolve() for p in allow)))

    def check(self, path: Path) -> Path:
        """The resolved path, or InputRefused when it lies outside every allowed folder."""
        resolved = path.resolve()
        if not any(resolved.is_relative_to(root) for root in self.roots):
            raise InputRefused(
                "it is outside the blueprint's repository; allow its folder explicitly (--allow-dir) to read it"
            )
        return resolved

    def read_text(self, path: Path, limit: int = MAX_FILE_BYTES) -> str:
        """The file's text; InputRefused for what may not be read (or is over `limit` bytes), OSError/
        UnicodeDecodeError as reading fails."""
        resolved = self.check(path)
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below by its type.
        fd = os.open(resolved, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InputRefused("it is not a regular file")
            if info.st_size > limit:
                raise InputRefused(f"it is larger than {limit // (1024 * 1024)} MiB")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read(limit + 1)
        finally:
            os.close(fd)
        if len(data) > limit:
            raise InputRefused(f"it is larger than {limit // (1024 * 1024)} MiB")
        return data.decode("utf-8")
