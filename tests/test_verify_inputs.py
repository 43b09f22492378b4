"""`clusterforge verify` on hostile captures: anyone on the fabric sets its own node description or LLDP system
name, and a capture file may be anything. Every case ends in a located error (exit 1) or a finding, never an
internal error (exit 3), a hang or unbounded memory; text from the field reaches the operator only with its
control, escape and bidirectional characters made visible."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

H200 = REPO / "blueprints" / "h200-training-pod.yaml"
L40S = REPO / "blueprints" / "l40s-inference.yaml"
CAPTURE = REPO / "docs" / "examples" / "h200-training-pod-ibnetdiscover-miscabled.txt"
LINE = "CA   221  1 0x0002ca00000007c9 4x SDR - SW    13 31 0x0002c90000000003 ( 'gpu031 ib3' - 'compute-leaf003' )"
"""A line of the sample capture (line 156): gpu031's rail-3 adapter on port 31 of compute-leaf003."""


def verify(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real CLI, with a timeout a hang or a read of an endless file fails."""
    env = {k: v for k, v in os.environ.items() if k != "CLUSTERFORGE_DEBUG"}
    result = subprocess.run(
        [sys.executable, "-m", "clusterforge", "verify", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    return result


def capture_with(tmp_path: Path, old: str, new: str) -> Path:
    text = CAPTURE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "fabric.txt"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


# --- defect 1: bounded reading ---------------------------------------------------------------------------------
def test_deeply_nested_lldp_json_is_a_located_error(tmp_path: Path) -> None:
    host = tmp_path / "inf001.json"
    host.write_text('{"lldp":\n' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    result = verify(str(L40S), "--lldp", str(host))
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {host}:2:" in result.stderr and "nest deeper than 64" in result.stderr


@pytest.mark.parametrize(
    "number", ["1" * 5000, "1." + "5" * 5000, "-" + "9" * 5000 + "e5"], ids=["int", "fraction", "exp"]
)
def test_a_5000_digit_number_in_lldp_json_is_a_located_error(tmp_path: Path, number: str) -> None:
    host = tmp_path / "inf001.json"
    host.write_text('{"lldp": {\n"interface": {"ens1": {"rid": ' + number + "}}}}", encoding="utf-8")
    result = verify(str(L40S), "--lldp", str(host))
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {host}:2:" in result.stderr and "a number of more than" in result.stderr


@pytest.mark.parametrize("digits", [3000, 5000])
def test_a_5000_digit_port_number_in_ibnetdiscover_is_a_located_error(tmp_path: Path, digits: int) -> None:
    bad = capture_with(tmp_path, LINE, LINE.replace("SW    13 31 ", f"SW    13 {'3' * digits} "))
    result = verify(str(H200), "--ibnetdiscover", str(bad))
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {bad}:156: " in result.stderr  # over 4,096 characters: the line is refused
    if digits < 4000:
        assert f"{bad}:156: port number 3333333333... (3,000 digits) is not an InfiniBand port" in result.stderr


@pytest.mark.parametrize("digits", [3000, 5000])
def test_a_guid_longer_than_64_bits_is_a_located_error(tmp_path: Path, digits: int) -> None:
    bad = capture_with(tmp_path, LINE, LINE.replace("0x0002c90000000003", "0x" + "f" * digits))
    result = verify(str(H200), "--ibnetdiscover", str(bad))
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {bad}:156: " in result.stderr
    if digits < 4000:
        assert f"{bad}:156: GUID 0xffffffff... (3,000 hex digits) is longer than 64 bits" in result.stderr


def test_a_line_built_to_make_the_parser_backtrack_is_refused_at_once(tmp_path: Path) -> None:
    """Before: the port-list pattern took time cubic in a line's length (2 s for 20,000 characters)."""
    hostile = "CA    1  1 0x1 4x SDR - SW    13 31 0x3 ( '" + "' - '" * 100_000
    bad = capture_with(tmp_path, LINE, LINE + "\n" + hostile)
    result = verify(str(H200), "--ibnetdiscover", str(bad), timeout=30)
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {bad}:157: a line of 500,043 characters, more than the 4,096" in result.stderr
    short = capture_with(tmp_path, LINE, LINE + "\n" + hostile[:4000])  # under the bound: linear, so quick
    assert verify(str(H200), "--ibnetdiscover", str(short), timeout=30).returncode == 1


def test_a_capture_that_would_fill_memory_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """Within the size bound, but more links or JSON values than any fabric has (each some 250 and 60 bytes
    once parsed)."""
    ib = tmp_path / "fabric.txt"
    ib.write_text('Switch 64 "compute-leaf001"\n' + '[1] "a"[1]\n' * 2_000_000, encoding="utf-8")
    result = verify(str(H200), "--ibnetdiscover", str(ib), timeout=60)
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {ib}:2000001: more than 2,000,000 lines" in result.stderr
    host = tmp_path / "inf001.json"
    host.write_text('{"lldp": [' + "0," * 4_000_000 + "0]}", encoding="utf-8")
    result = verify(str(L40S), "--lldp", str(host), timeout=60)
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {host}:1:1: more than 4,000,000 values" in result.stderr


@pytest.mark.parametrize("option", ["--lldp", "--ibnetdiscover"])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_before_it_is_read(option: str, device: str) -> None:
    blueprint = L40S if option == "--lldp" else H200
    result = verify(str(blueprint), option, device, timeout=30)
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {device}: will not read it: it is not a regular file" in result.stderr


@pytest.mark.parametrize("option", ["--lldp", "--ibnetdiscover"])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path, option: str) -> None:
    pipe = tmp_path / "inf001.json"
    os.mkfifo(pipe)
    result = verify(str(L40S if option == "--lldp" else H200), option, str(pipe), timeout=30)
    assert result.returncode == 1 and "it is not a regular file" in result.stderr


def test_an_oversized_capture_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from clusterforge.inputs import CAPTURE_LIMITS

    big = tmp_path / "fabric.txt"
    with open(big, "wb") as handle:
        handle.truncate(CAPTURE_LIMITS.file_bytes + 1)  # sparse: costs no disk
    result = verify(str(H200), "--ibnetdiscover", str(big), timeout=30)
    assert result.returncode == 1 and "it is larger than 256 MiB" in result.stderr


# --- defect 2: field text made visible ---------------------------------------------------------------------------
FAKE = "\x1b[1A\x1b[2K\rh200-training-pod: the fabric matches the plan\x1b[8m"
BIDI = "\u202egnp.exe"


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_escape_and_bidi_in_a_node_description_are_made_visible(tmp_path: Path, fmt: str) -> None:
    bad = capture_with(tmp_path, "( 'gpu031 ib3' -", f"( 'gpu031 ib3{FAKE}{BIDI}' -")
    out = tmp_path / f"report.{fmt}"
    result = verify(str(H200), "--ibnetdiscover", str(bad), "--format", fmt, "-o", str(out))
    assert result.returncode == 1
    text = out.read_text(encoding="utf-8")
    for raw in ("\x1b", "\r", "\u202e", "\\u001b", "\\u202e"):
        assert raw not in text and raw not in result.stdout + result.stderr
    shown = html.unescape(text) if fmt == "html" else text
    if fmt == "json":
        shown = "\n".join(p["message"] for s in json.loads(text)["sources"] for p in s["problems"])
    assert r"gpu031 ib3\x1b[1A\x1b[2K\x0dh200-training-pod: the fabric matches the plan\x1b[8m<U+202E>gnp.exe" in shown


def test_escapes_in_an_lldp_host_name_are_made_visible_in_errors(tmp_path: Path) -> None:
    merged = tmp_path / "all.json"
    merged.write_text(json.dumps({f"inf001{FAKE}": {"no": "lldp"}}), encoding="utf-8")
    result = verify(str(L40S), "--lldp", str(merged))
    assert result.returncode == 1
    assert "\x1b" not in result.stderr and r"inf001\x1b[1A" in result.stderr


# --- defect 4: port numbers the device does not have ------------------------------------------------------------
@pytest.mark.parametrize("port", ["0", "256", "99999"])
def test_a_port_number_no_infiniband_device_has_is_a_located_error(tmp_path: Path, port: str) -> None:
    bad = capture_with(tmp_path, LINE, LINE.replace("SW    13 31 ", f"SW    13 {port} "))
    result = verify(str(H200), "--ibnetdiscover", str(bad))
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {bad}:156: port number {port} is not an InfiniBand port (1-254)" in result.stderr
    assert "ib0/" not in result.stdout and "ib50000/" not in result.stdout


def test_a_port_number_beyond_the_switch_model_is_a_finding(tmp_path: Path) -> None:
    bad = capture_with(tmp_path, LINE, LINE.replace("SW    13 31 ", "SW    13 200 "))
    result = verify(str(H200), "--ibnetdiscover", str(bad))
    assert result.returncode == 1
    assert (
        "error CF-VERIFY-007: no such port: N01 U39 compute-leaf003 IB port 200 (a nvidia/qm9700 has ports 1-128) "
        "holds a link to B05 U1 gpu031 ib3" in result.stdout
    )
    assert "ib100/" not in result.stdout
