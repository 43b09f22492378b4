"""`netplan generate` run on a rendered rails file inside a scratch root (never the host's /etc/netplan): the
systemd-networkd units it writes, as parsed INI files."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path

from clusterforge.render import paths

NETPLAN = shutil.which("netplan") or "/usr/sbin/netplan"


def generate_units(root: Path, text: str) -> dict[str, configparser.ConfigParser]:
    """netplan generate over one rails file installed under root; the units it wrote, by file name."""
    target = root / paths.NETPLAN_RAILS_INSTALLED.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text(text, encoding="utf-8")
    target.chmod(0o600)
    run = subprocess.run([NETPLAN, "generate", "--root-dir", str(root)], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "Error" not in run.stderr, run.stderr
    units = {}
    for path in (root / "run/systemd/network").glob("*"):
        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.optionxform = str  # type: ignore[assignment,method-assign]
        unit.read_string(path.read_text(encoding="utf-8"))
        units[path.name] = unit
    return units
