"""The built-in catalog kept between runs (catalog/cache.py): read back as it was read, and only under the
digest of the same files and code."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterforge.catalog import Server, cache, loader
from clusterforge.catalog.loader import BUILTIN_FILES, DATA_DIR


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private bytecode folder, so the test neither reads nor replaces the real cache."""
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    loader._builtin.cache_clear()
    yield tmp_path
    loader._builtin.cache_clear()


def _texts() -> list[bytes]:
    return [(DATA_DIR / name).read_bytes() for name in BUILTIN_FILES]


def test_a_cached_catalog_is_the_catalog_read_from_the_files(cache_dir: Path) -> None:
    read, read_findings = loader._builtin()  # nothing kept yet: read from the files, then kept
    assert list(cache_dir.rglob("builtin-catalog.pickle"))
    loader._builtin.cache_clear()
    kept, kept_findings = loader._builtin()
    assert kept is not read  # read back from the pickle, not this process's first reading
    assert kept.entries == read.entries
    assert kept.origins == read.origins
    assert kept_findings == read_findings == []
    assert kept.require("nvidia/dgx-h100", Server).gpus is not None


@pytest.mark.usefixtures("cache_dir")
def test_the_key_changes_with_a_catalog_file_and_a_kept_value_needs_its_key() -> None:
    texts = _texts()
    key = cache.digest(texts)
    assert cache.digest(texts) == key
    assert cache.digest([*texts[:-1], texts[-1] + b"\n# edited\n"]) != key
    cache.store(key, ("value",))
    assert cache.load(key) == ("value",)
    assert cache.load(cache.digest([b"other"])) is None


def test_nothing_is_written_where_python_writes_no_bytecode(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache.store("key", ("value",))
    assert not list(cache_dir.rglob("*.pickle"))
    assert cache.load("key") is None


def test_an_unreadable_cache_file_means_reading_the_files(cache_dir: Path) -> None:
    loader._builtin()
    (kept,) = cache_dir.rglob("builtin-catalog.pickle")
    kept.write_bytes(b"not a pickle")
    loader._builtin.cache_clear()
    catalog, findings = loader._builtin()
    assert "nvidia/qm9700" in catalog.entries and findings == []
