"""Address pins: `addresses:` in the blueprint gives an interface the address it already has in the field. A
pin wins over the lock file and the fixed order, no other interface takes it, and a pin that cannot be
applied is an error at its line (CF-IDENT-005)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import REPO

from clusterforge import codes
from clusterforge.errors import BlueprintError
from clusterforge.expand.identity import identities
from clusterforge.lockfile import Keep, write_lock
from clusterforge.pipeline import analyse, keep_of, load_valid, lock_of


def _pinned(tmp: Path, lines: str, lock: bool = False) -> Path:
    """The example pod with `lines` as its `addresses:` section (and its lock file when `lock`)."""
    path = tmp / "h200-training-pod.yaml"
    text = (REPO / "blueprints" / "h200-training-pod.yaml").read_text(encoding="utf-8")
    path.write_text(text + "\naddresses:\n" + lines, encoding="utf-8")
    if lock:
        shutil.copy(REPO / "blueprints" / "h200-training-pod.lock.yaml", tmp / "h200-training-pod.lock.yaml")
    return path


def _addresses(path: Path, keep: Keep | None = None) -> dict[str, str]:
    valid = load_valid(path)
    return identities(analyse(valid, keep=keep or keep_of(valid)).topo)["addresses"]


def test_a_pin_wins_over_the_fixed_order_and_moves_only_the_host_that_had_it(tmp_path: Path) -> None:
    before = _addresses(REPO / "blueprints" / "h200-training-pod.yaml", Keep())
    assert before["inband/gpu009"] == "10.120.0.10"
    after = _addresses(_pinned(tmp_path, "  inband/gpu002: 10.120.0.10\n  oob/gpu003: 10.130.0.200\n"), Keep())
    assert after["inband/gpu002"] == "10.120.0.10"
    assert after["oob/gpu003"] == "10.130.0.200"
    assert after["inband/gpu009"] not in ("10.120.0.10", before["inband/gpu009"])
    changed = {k for k in before if before[k] != after[k]}
    assert changed == {"inband/gpu002", "inband/gpu009", "oob/gpu003"}  # nothing else is pushed along
    assert len(set(after.values())) == len(after)


def test_a_pin_wins_over_the_lock_file(tmp_path: Path) -> None:
    path = _pinned(tmp_path, "  inband/mgmt001: 10.120.0.40\n  compute/gpu001:ib1: 10.100.0.100\n", lock=True)
    valid = load_valid(path)
    keep = keep_of(valid, allow_renumber=True)  # the host that held .40 in the lock file is moved off it
    analysis = analyse(valid, keep=keep)
    after = identities(analysis.topo)["addresses"]
    assert after["inband/mgmt001"] == "10.120.0.40"
    assert after["compute/gpu001:ib1"] == "10.100.0.100"
    assert list(after.values()).count("10.120.0.40") == 1
    write_lock(path, lock_of(analysis))
    assert _addresses(path)["inband/mgmt001"] == "10.120.0.40"  # and the lock file keeps it from now on


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        ("  inband/gpu002: 10.99.0.5\n", "lies outside the interface's subnet 10.120.0.0/24"),
        ("  inband/gpu002: 10.120.0.0\n", "is the network address of 10.120.0.0/24"),
        ("  inband/gpu002: 10.120.0.255\n", "is the broadcast address of 10.120.0.0/24"),
        ("  inband/gpu002: 10.120.0.1\n", "is reserved in 10.120.0.0/24"),
        ("  inband/gpu002: 10.120.0.60\n  inband/gpu003: 10.120.0.60\n", "is pinned for inband/gpu002 too"),
        ("  inband/gpu999: 10.120.0.60\n", "network 'inband' has no interface 'gpu999'"),
        ("  storage9/gpu001: 10.120.0.60\n", "no network 'storage9'"),
    ],
)
def test_a_pin_that_cannot_be_applied_is_an_error_at_its_line(tmp_path: Path, lines: str, said: str) -> None:
    path = _pinned(tmp_path, lines)
    text = (REPO / "blueprints" / "h200-training-pod.yaml").read_text(encoding="utf-8")
    first = len(text.splitlines()) + 3  # after a blank line and `addresses:`
    with pytest.raises(BlueprintError) as raised:
        _addresses(path, Keep())
    found = [f for f in raised.value.findings if f.code == codes.ADDRESS_PIN]
    assert len(found) == 1 and said in found[0].message, raised.value
    assert found[0].location is not None and found[0].location.file.endswith("h200-training-pod.yaml")
    assert found[0].location.line in (first, first + 1)


def test_a_pin_key_is_checked_when_the_blueprint_is_read(tmp_path: Path) -> None:
    with pytest.raises(BlueprintError):
        load_valid(_pinned(tmp_path, "  gpu002: 10.120.0.60\n"))


def test_a_pin_on_the_address_of_a_removed_device_takes_it_from_the_held_ones(tmp_path: Path) -> None:
    path = _pinned(tmp_path, "  inband/gpu002: 10.120.0.32\n", lock=True)  # gpu031's, held once it is gone
    text = path.read_text(encoding="utf-8").replace("count: 31", "count: 30", 1)
    path.write_text(text, encoding="utf-8")
    valid = load_valid(path)
    keep = keep_of(valid)
    analysis = analyse(valid, keep=keep)
    assert identities(analysis.topo)["addresses"]["inband/gpu002"] == "10.120.0.32"
    lock = lock_of(analysis)
    assert "  gpu031: removed\n" in lock and "inband/gpu031: 10.120.0.32" not in lock
    assert lock.count(": 10.120.0.32\n") == 1
