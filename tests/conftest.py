"""Fixtures shared by test files."""

from __future__ import annotations

from pathlib import Path

import pytest
from slurm_chroot import trixie_root


@pytest.fixture(scope="session")
def trixie() -> Path:
    """A Debian 13 chroot (Slurm 24.11, glibc's getent), built at most once and cached across runs."""
    return trixie_root()
