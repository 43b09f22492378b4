"""Compiled templates kept beside the bytecode (render/jinja.py): a kept template renders as compiled, and an
edited one is compiled again."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from jinja2.bccache import bc_magic
from jinja2.sandbox import SecurityError

from clusterforge.render.jinja import environment, render_template


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "bytecode"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    environment.cache_clear()
    yield tmp_path / "bytecode"
    environment.cache_clear()


def test_a_template_is_compiled_once_and_again_when_edited(cache_dir: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "nccl").mkdir(parents=True)
    template = site / "nccl" / "nccl.conf.j2"
    template.write_text("first {{ value }}\n", encoding="utf-8")
    assert render_template("nccl/nccl.conf.j2", {"value": 1}, site) == "first 1\n"
    assert len(list(cache_dir.rglob("template-*.jinja2"))) == 1
    environment.cache_clear()  # a new process: only the kept code is left
    assert render_template("nccl/nccl.conf.j2", {"value": 2}, site) == "first 2\n"
    template.write_text("second {{ value }}\n", encoding="utf-8")
    environment.cache_clear()
    assert render_template("nccl/nccl.conf.j2", {"value": 3}, site) == "second 3\n"


def test_nothing_is_kept_where_python_writes_no_bytecode(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert render_template("nccl/nccl.conf.j2", {"comments": [], "lines": ["NCCL_DEBUG=WARN"]}, None) == (
        "NCCL_DEBUG=WARN\n"
    )
    assert not cache_dir.exists()


def test_a_damaged_kept_template_is_compiled_again(cache_dir: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "nccl").mkdir(parents=True)
    (site / "nccl" / "nccl.conf.j2").write_text("kept {{ value }}\n", encoding="utf-8")
    assert render_template("nccl/nccl.conf.j2", {"value": 1}, site) == "kept 1\n"
    (kept,) = cache_dir.rglob("template-*.jinja2")
    kept.write_bytes(bc_magic)  # Jinja's header, then nothing: reading the source digest fails
    environment.cache_clear()
    assert render_template("nccl/nccl.conf.j2", {"value": 2}, site) == "kept 2\n"


def test_a_kept_template_still_renders_in_the_sandbox(cache_dir: Path, tmp_path: Path) -> None:
    """The compiled code a process keeps holds the sandbox's checks: the next process is refused as the first."""
    site = tmp_path / "site"
    (site / "nccl").mkdir(parents=True)
    (site / "nccl" / "nccl.conf.j2").write_text("{{ value.__class__.__mro__ }}\n", encoding="utf-8")
    for _ in range(2):
        environment.cache_clear()
        with pytest.raises(SecurityError):
            render_template("nccl/nccl.conf.j2", {"value": 1}, site)
    assert len(list(cache_dir.rglob("template-*.jinja2"))) == 1
