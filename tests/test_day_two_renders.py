"""No existing identity moves, read from the rendered files host by host: for every example, a node taken out
of the middle of a group, a group shrunk at its end, a group grown, and node groups, racks or networks
reordered, each rendered with the lock file of the render before (and once more: the same files and lock
file). What each host is given in the Ansible inventory and /etc/hosts, each cable leg (label, both ends),
each Slurm node's block or switch in topology.conf, each node's bond on each leaf (its MLAG ID or Ethernet
segment), each switch's BGP ASN and MACs (MLAG system MAC, Ethernet segment MAC), and each simulated InfiniBand
node's GUID must be what the previous render gave it."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_identity import CASES, NEW_SPINES, TRUNKS_MOVED, _copy, _edit

from clusterforge.diff import _node_blocks
from clusterforge.lockfile import lock_path, write_lock
from clusterforge.pipeline import analyse, keep_of, load_valid, lock_of, render_analysis

CHOSEN = {
    "h200-training-pod": (
        "take gpu010 out",
        "shrink gpu by 1",
        "grow gpu by 5",
        "reorder groups",
        "add slower storage nodes",
    ),
    "l40s-inference": ("take rack R01 out", "shrink inf by 3", "grow inf by 4", "reorder racks"),
    "gb200-nvl72": ("take login002 out", "take gb010 out", "grow login by 2", "reorder networks"),
    "b200-spectrum-x": ("take gpu003 out", "shrink gpu by 2", "grow gpu by 2", "reorder networks", "empty rack A02"),
    "mi300x-roce": ("take gpu002 out", "shrink gpu by 1", "grow gpu by 2", "reorder groups", "empty rack A01"),
}
"""Per example the changes rendered in full (test_identity.py runs every change through the lock file)."""
ASN = re.compile(r"^\s+autonomous-system: (\d+)$", re.MULTILINE)
BOND = re.compile(r"^      (bond\d+):\n        type: bond\n        description: \"(\S+) ", re.MULTILINE)
MAC = re.compile(r"^\s+mac-address: \"?([0-9a-f:]{17})\"?$", re.MULTILINE)
"""Every MAC a switch configuration sets: the MLAG system MAC, the EVPN Ethernet segments' MAC, the VRR MAC."""
IB_NODE = re.compile(r"^(?:caguid|switchguid)=(0x[0-9a-f]+)\n(?:Hca|Switch) [0-9]+ \"([^\"]+)\"", re.MULTILINE)
"""A node of the simulated InfiniBand topology (ibsim's topology.net): its GUID and node description."""


def _render(path: Path) -> dict[str, str]:
    """Every rendered file, the lock file beside `path` written afresh as `render` does."""
    valid = load_valid(path)
    keep = keep_of(valid)
    analysis = analyse(valid, keep=keep)
    files = render_analysis(analysis)
    write_lock(path, lock_of(analysis))
    return files


def per_host(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Identity facts by device, from the rendered files alone."""
    seen: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for name, host in node.get("hosts", {}).items():
                seen.setdefault(name, {})["inventory"] = host
            for value in node.values():
                walk(value)

    walk(json.loads(files["ansible/inventory.json"]))
    for line in files["network/hosts"].splitlines():
        if line and not line.startswith("#"):
            address, name, *_ = line.split()
            seen.setdefault(name, {})["etc_hosts"] = address
    for node, block in _node_blocks(files).items():
        seen.setdefault(node, {})["slurm_block"] = block
    for path, text in files.items():
        if path.startswith("switches/nvue/") and ASN.search(text):
            seen.setdefault(Path(path).stem, {})["asn"] = ASN.search(text)[1]  # type: ignore[index]
        for bond, node in BOND.findall(text) if path.startswith("switches/nvue/") else []:
            seen.setdefault(node, {}).setdefault("bonds", {})[Path(path).stem] = bond  # its bond (and MLAG ID)
        if path.startswith("switches/nvue/") and MAC.search(text):
            seen.setdefault(Path(path).stem, {})["macs"] = sorted(set(MAC.findall(text)))
        for guid, description in IB_NODE.findall(text) if path.endswith("/topology.net") else []:
            device, _, port = description.partition(" ")
            seen.setdefault(device, {}).setdefault("guids", {})[port] = guid
    return seen


def cables(files: dict[str, str]) -> dict[tuple[str, str, str], tuple[str, ...]]:
    """(cable label, device, port) of each leg of each cable (a breakout harness has a leg per sub-port) ->
    where the leg's far end is (rack, U, device, port) and its own rack."""
    legs: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for row in csv.DictReader(io.StringIO(files["handoff/cabling.csv"])):
        a, b = _legs(row, "a"), _legs(row, "b")
        if len(a) == len(b):
            for near, far in (*zip(a, b, strict=True), *zip(b, a, strict=True)):
                legs[(row["label"], near[2], near[3])] = (near[0], *far)
    return legs


def _legs(row: dict[str, str], side: str) -> list[tuple[str, str, str, str]]:
    """(rack, U, device, port) of each leg of one end of a cable row ('login003 / login004', 'swp37s2+swp37s3')."""
    ports = re.split(r" / |\+", row[f"{side}_port"])
    racks, devices, units = (row[f"{side}_{k}"].split(" / ") for k in ("rack", "device", "u"))
    racks, devices, units = ((cell * len(ports))[: len(ports)] for cell in (racks, devices, units))
    return list(zip(racks, units, devices, ports, strict=True))


@pytest.mark.parametrize(("name", "label"), [(n, label) for n, labels in CHOSEN.items() for label in labels])
def test_no_rendered_identity_moves_host_by_host(name: str, label: str, tmp_path: Path) -> None:
    path = _copy(name, tmp_path)
    before = _render(path)
    _edit(path, dict(CASES[name])[label])
    after = _render(path)
    lock = lock_path(path).read_text(encoding="utf-8")
    assert _render(path) == after and lock_path(path).read_text(encoding="utf-8") == lock  # a fixed point
    old, new = per_host(before), per_host(after)
    both = old.keys() & new.keys()
    assert len(both) > len(old) // 2
    moved = {host: (old[host], new[host]) for host in both if old[host] != new[host]}
    assert moved == {}, sorted(moved.items())[:3]
    a, b = cables(before), cables(after)
    changed = {k for k in a.keys() & b.keys() if a[k] != b[k]}
    devices = {k[1] for k in b}
    lost = {k for k in a if k not in b and {k[1], a[k][3]} <= devices}
    # a leaf-to-spine cable that must move keeps its label and its leaf port, its spine end goes to a new spine;
    # counted per (leaf, spine it leaves) from its leaf's leg (changed) and its old spine's leg (gone)
    assert Counter((leg[1], a[leg][3]) for leg in changed) == TRUNKS_MOVED.get((name, label), {})
    assert all(b[leg][3] in NEW_SPINES for leg in changed), sorted(changed)[:3]
    assert Counter((a[leg][3], leg[1]) for leg in lost) == TRUNKS_MOVED.get((name, label), {}), sorted(lost)[:3]
