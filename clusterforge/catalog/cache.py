"""The built-in catalog as last read and validated, kept beside the package's bytecode.

Reading the shipped catalog files (YAML, source lines, a pydantic validation of every entry) is a tenth of a
small render. Its result depends only on those files and on the code that reads them, so it is kept in a
pickle under a digest of both, where Python keeps this package's compiled bytecode (`__pycache__`, or
under PYTHONPYCACHEPREFIX): the same place and trust as the .pyc files, written only where Python writes
them (not with PYTHONDONTWRITEBYTECODE). A missing, unreadable or stale file just means reading the catalog
again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pydantic

PACKAGE = Path(__file__).resolve().parents[1]
READER_SOURCES = ("catalog/*.py", "model/*.py", "errors.py", "codes.py", "yamlsafe.py", "schema_errors.py")
"""The code whose change can change what the catalog reads to: its models, loader and messages."""


def digest(texts: Iterable[bytes]) -> str:
    """A digest of the catalog files' contents, the code that reads them, and the Python and pydantic
    versions (pickles of pydantic models follow both)."""
    hasher = hashlib.sha256(f"{sys.version}\0{pydantic.VERSION}\0".encode())
    sources = sorted(path for pattern in READER_SOURCES for path in PACKAGE.glob(pattern))
    for data in (*texts, *(path.read_bytes() for path in sources)):
        hasher.update(len(data).to_bytes(8, "little") + data)
    return hasher.hexdigest()


def _path() -> Path:
    return Path(importlib.util.cache_from_source(__file__)).parent / "builtin-catalog.pickle"


def load(key: str) -> Any | None:
    """What `store` kept under `key`, or None (nothing kept, or kept under another key)."""
    try:
        with _path().open("rb") as cached:
            return pickle.load(cached) if pickle.load(cached) == key else None
    except Exception:  # missing, unreadable, or written by other code: read the catalog instead
        return None


def store(key: str, value: Any) -> None:
    """Keep `value` under `key` if Python may write bytecode here; never fails."""
    if sys.dont_write_bytecode:
        return
    path = _path()
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with temporary.open("wb") as out:
            pickle.dump(key, out, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)  # readers see the whole file or none
    except Exception:  # a folder that cannot be written, or a value that cannot be pickled: no cache then
        temporary.unlink(missing_ok=True)
