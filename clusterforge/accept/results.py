"""Read burn-in results back: nccl-tests text output, `dcgmi diag -j` JSON, nvbandwidth output, `nvidia-smi -q`
output (its Fabric section) and ibdiagnet2.log, each after the `# clusterforge-burn-in:` line the rendered
jobs write first (clusterforge/render/handoff/burnin.py).

Every file is read with the bounded reader of clusterforge/inputs.py (regular files only, 8 MiB at most). A
file that is not what its header says, or stops early, is a `ResultError` naming the file and line: never a
pass. The formats follow the tools' own output (tests/accept/README.md names the samples).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import codes
from ..inputs import InputRefused, JsonRefused, parse_json, read_regular
from ..render.handoff.burnin import HEADER

MAX_FILES = 200_000
"""Result files read from the folders given, at most (a cluster of 100,000 nodes writes about 20 a node)."""


class ResultError(ValueError):
    """A result file that cannot be read: its file, line (0: the file as a whole) and CF code."""

    def __init__(self, code: str, message: str, file: str, line: int = 0) -> None:
        super().__init__(message)
        self.code, self.file, self.line = code, file, line


@dataclass
class Result:
    """One result file: what its header says and what was measured."""

    file: str
    test: str
    fields: dict[str, str]
    mtime: float
    exit_status: int | None = None
    tail: str = ""
    """The last lines before a failed test's exit status, to show with it."""
    busbw: float | None = None
    """nccl-tests: out-of-place bus bandwidth of the largest message, GB/s."""
    size: int = 0
    wrong: int = 0
    hosts: list[str] = field(default_factory=list)
    dcgm: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(category, test, GPU ids, warnings) of each failed DCGM result."""
    matrix: dict[tuple[int, int], float] = field(default_factory=dict)
    """nvbandwidth: (row, column) -> GB/s."""
    matrix_title: str = ""
    fabric: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    """nvidia-smi -q: each GPU's index and its Fabric section's fields."""
    ib_stages: dict[str, tuple[int, int]] = field(default_factory=dict)
    """ibdiagnet summary: stage -> (warnings, errors)."""
    ib_errors: list[tuple[int, str, str]] = field(default_factory=list)
    """ibdiagnet: (line, location, message) of each -E- line that names a port."""

    def identity(self) -> tuple[str, ...]:
        """What makes two files the same test (a re-test replaces the earlier result)."""
        keys = ("group", "rail", "collective", "nodes", "fabric")
        return (self.test, *(self.fields.get(k, "") for k in keys))


def _stamp(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def read_bounded(path: Path) -> str:
    """The file's text through the bounded reader (regular file, size limit); ResultError otherwise."""
    try:
        return read_regular(path)[1].decode("utf-8")
    except InputRefused as exc:
        raise ResultError(codes.ACCEPT_UNREADABLE, f"cannot read it: {exc}", str(path)) from exc
    except UnicodeDecodeError as exc:
        raise ResultError(codes.ACCEPT_UNREADABLE, f"cannot read it: {exc}", str(path)) from exc
    except OSError as exc:
        raise ResultError(codes.ACCEPT_UNREADABLE, f"cannot read it: {exc.strerror or exc}", str(path)) from exc


def result_paths(paths: list[Path]) -> Iterator[tuple[Path, bool]]:
    """Each file to read and whether it was named (a file in a named folder without the header is skipped)."""
    count = 0
    for path in paths:
        if path.is_dir():
            for folder, dirs, names in os.walk(path):
                dirs.sort()
                for name in sorted(names):
                    count += 1
                    if count > MAX_FILES:
                        raise ResultError(codes.ACCEPT_UNREADABLE, f"more than {MAX_FILES:,} files", str(path))
                    yield Path(folder) / name, False
        else:
            count += 1
            yield path, True


def starts_with_header(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(HEADER)) == HEADER.encode()
    except OSError:
        return True  # let the bounded reader say why


_FIELD = re.compile(r"(\w[\w-]*)=(\S+)")


def read_result(path: Path) -> Result:
    text = read_bounded(path)
    lines = text.splitlines()
    file = str(path)
    if not lines or not lines[0].startswith(HEADER):
        raise ResultError(
            codes.ACCEPT_UNREADABLE,
            f"no '{HEADER}' line first: not a result of a rendered burn-in job (keep the line the job writes)",
            file,
            1,
        )
    fields = dict(_FIELD.findall(lines[0][len(HEADER) :]))
    test = fields.pop("test", "")
    result = Result(file, test, fields, _stamp(path))
    body = lines[1:]
    for index, line in enumerate(body):
        match = re.match(rf"{re.escape(HEADER)} exit status (\d+)", line)
        if match:
            result.exit_status = int(match[1])
            result.tail = "\n".join(x for x in body[max(0, index - 3) : index] if x.strip())
    if result.exit_status:
        return result
    parser = PARSERS.get(test)
    if parser is None:
        raise ResultError(codes.ACCEPT_UNREADABLE, f"unknown test '{test}' in the header", file, 1)
    parser(result, body)
    return result


# --- nccl-tests -------------------------------------------------------------------------------------------
_RANK = re.compile(r"^#\s+Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device")
_ROW = re.compile(
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)"
    r"\s+(?P<time>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)\s+(?P<wrong>\S+)"
    r"\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\S+\s*$"
)


def parse_nccl(result: Result, body: list[str]) -> None:
    """The table under `#  out-of-place ... in-place` and the closing `# Avg bus bandwidth` line (nccl-tests
    prints it after the last size: a file without it stopped early)."""
    in_table = done = False
    rows: list[tuple[int, float, int]] = []
    for number, line in enumerate(body, start=2):
        if match := _RANK.match(line):
            result.hosts.append(match[1].split(".", 1)[0])
        elif "out-of-place" in line and line.startswith("#"):
            in_table = True
        elif line.startswith("# Avg bus bandwidth"):
            done = True
        elif in_table and line.strip() and not line.startswith("#"):
            match = _ROW.match(line)
            if match is None:
                raise ResultError(
                    codes.ACCEPT_MALFORMED,
                    f"not a row of the nccl-tests table: {line.strip()[:80]}",
                    result.file,
                    number,
                )
            wrong = match["wrong"]
            rows.append((int(match["size"]), float(match["busbw"]), int(wrong) if wrong.isdigit() else 0))
    if not in_table:
        raise ResultError(
            codes.ACCEPT_MALFORMED,
            "no nccl-tests table (its '#  out-of-place ... in-place' header)",
            result.file,
            len(body) + 1,
        )
    if not rows or not done:
        raise ResultError(
            codes.ACCEPT_MALFORMED,
            "the nccl-tests output stops before its '# Avg bus bandwidth' line: cut short",
            result.file,
            len(body) + 1,
        )
    size, busbw, _ = max(rows)
    result.size, result.busbw, result.wrong = size, busbw, sum(r[2] for r in rows)


# --- dcgmi diag -j ----------------------------------------------------------------------------------------
def _warnings(entry: dict[str, Any]) -> str:
    found = []
    for key in ("warnings", "info"):
        for item in entry.get(key) or []:
            if isinstance(item, dict):
                found.append(str(item.get("warning") or item.get("message") or item))
            else:
                found.append(str(item))
    return "; ".join(found)


def parse_dcgm(result: Result, body: list[str]) -> None:
    """`{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results": [{"gpu_ids",
    "status", "warnings"}]}]}]}}`; dcgmi may print lines before the JSON."""
    start = next((i for i, line in enumerate(body) if line.lstrip().startswith("{")), None)
    if start is None:
        raise ResultError(
            codes.ACCEPT_MALFORMED, "no JSON object: not `dcgmi diag -j` output", result.file, len(body) + 1
        )
    try:
        data = parse_json("\n".join(body[start:]))
    except JsonRefused as exc:
        raise ResultError(codes.ACCEPT_MALFORMED, exc.reason, result.file, start + 1 + exc.line) from exc
    root = data.get("DCGM GPU Diagnostic") if isinstance(data, dict) else None
    categories = root.get("test_categories") if isinstance(root, dict) else None
    if not isinstance(categories, list) or not categories:
        raise ResultError(
            codes.ACCEPT_MALFORMED,
            "no 'DCGM GPU Diagnostic' test_categories: not `dcgmi diag -j` output",
            result.file,
            start + 2,
        )
    for category in categories:
        tests = category.get("tests") if isinstance(category, dict) else None
        if not isinstance(category, dict) or not isinstance(tests, list):
            raise ResultError(
                codes.ACCEPT_MALFORMED, "a test category without its list of tests", result.file, start + 2
            )
        for test in tests:
            if not isinstance(test, dict):
                continue  # DCGM 3.1 writes null between tests
            entries = test.get("results")
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and str(entry.get("status", "")).upper() == "FAIL":
                    ids = str(entry.get("gpu_ids", entry.get("gpu_id", "")))
                    result.dcgm.append(
                        (str(category.get("category", "")), str(test.get("name", "")), ids, _warnings(entry))
                    )


# --- nvbandwidth ------------------------------------------------------------------------------------------
def parse_nvbandwidth(result: Result, body: list[str]) -> None:
    """`memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)`, a line of column numbers, a row per GPU (`N/A`
    where a GPU meets itself)."""
    title = next((i for i, line in enumerate(body) if "bandwidth (GB/s)" in line), None)
    if title is None or title + 1 >= len(body):
        raise ResultError(
            codes.ACCEPT_MALFORMED,
            "no nvbandwidth matrix ('... bandwidth (GB/s)' and its rows)",
            result.file,
            len(body) + 1,
        )
    result.matrix_title = body[title].strip()
    columns = body[title + 1].split()
    if not columns or not all(c.isdigit() for c in columns):
        raise ResultError(
            codes.ACCEPT_MALFORMED, "the line after the matrix title is not its column numbers", result.file, title + 3
        )
    rows = 0
    for offset, line in enumerate(body[title + 2 :], start=title + 4):
        parts = line.split()
        if not parts or not parts[0].isdigit():
            break
        if len(parts) != len(columns) + 1:
            raise ResultError(
                codes.ACCEPT_MALFORMED,
                f"row {parts[0]} has {len(parts) - 1} values for {len(columns)} columns",
                result.file,
                offset,
            )
        for column, value in zip(columns, parts[1:], strict=True):
            if value != "N/A":
                try:
                    result.matrix[(int(parts[0]), int(column))] = float(value)
                except ValueError:
                    raise ResultError(
                        codes.ACCEPT_MALFORMED, f"'{value}' is not a bandwidth", result.file, offset
                    ) from None
        rows += 1
    if rows < len(columns):
        raise ResultError(
            codes.ACCEPT_MALFORMED,
            f"the matrix has {rows} of its {len(columns)} rows: cut short",
            result.file,
            title + 3 + rows,
        )


# --- nvidia-smi -q ----------------------------------------------------------------------------------------
_GPU = re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d\s*$")


def parse_fabric_state(result: Result, body: list[str]) -> None:
    """Each `GPU 00000000:xx:00.0` block's `Fabric` section: State, Status, CliqueId, ClusterUUID and its
    Health lines (Summary, Bandwidth, ...)."""
    index = -1
    section: dict[str, str] | None = None
    depth = 0
    for line in body:
        if _GPU.match(line):
            index += 1
            section = None
            continue
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped == "Fabric" and index >= 0:
            section, depth = {}, indent
            result.fabric.append((index, section))
            continue
        if section is not None:
            if stripped and indent <= depth:
                section = None
            elif ":" in stripped:
                key, _, value = stripped.partition(":")
                section.setdefault(key.strip(), value.strip())
    if index < 0:
        raise ResultError(
            codes.ACCEPT_MALFORMED,
            "no 'GPU 0000xxxx:xx:xx.x' block: not `nvidia-smi -q` output",
            result.file,
            len(body) + 1,
        )
    if not result.fabric:
        raise ResultError(
            codes.ACCEPT_MALFORMED,
            "no Fabric section in `nvidia-smi -q` (a driver before R550?)",
            result.file,
            len(body) + 1,
        )


# --- ibdiagnet2.log ---------------------------------------------------------------------------------------
_STAGE = re.compile(r"^-I-\s+(?P<stage>\S.*?)\s+(?P<warnings>\d+)\s+(?P<errors>\d+)(?:\s+.*)?$")
_LOCATED = re.compile(r"^-E-\s+(?P<where>\S.*?/P\d+(?:/\d+)*)\s+-\s+(?P<message>.+)$")


def parse_ibdiagnet(result: Result, body: list[str]) -> None:
    """The closing `Summary` table (`-I- Stage  Warnings  Errors  Comment`, a row per stage) and every `-E-`
    line that names a port (`<node description>/P<port> - <message>`)."""
    summary = None
    for number, line in enumerate(body, start=2):
        if line.startswith("-I- Stage") and "Errors" in line:
            summary = number
            continue
        if summary is not None and (match := _STAGE.match(line)):
            result.ib_stages[match["stage"]] = (int(match["warnings"]), int(match["errors"]))
        elif match := _LOCATED.match(line):
            result.ib_errors.append((number, match["where"], match["message"].strip()))
    if summary is None or not result.ib_stages:
        raise ResultError(
            codes.ACCEPT_MALFORMED,
            "no Summary table ('-I- Stage  Warnings  Errors'): ibdiagnet2.log cut short",
            result.file,
            len(body) + 1,
        )


PARSERS = {
    "nvlink": parse_nccl,
    "leaf": parse_nccl,
    "spine": parse_nccl,
    "rail-pair": parse_nccl,
    "spine-pair": parse_nccl,
    "dcgm": parse_dcgm,
    "nvbandwidth": parse_nvbandwidth,
    "fabric-state": parse_fabric_state,
    "ibdiagnet": parse_ibdiagnet,
}


def read_results(paths: list[Path]) -> tuple[list[Result], int]:
    """The results in `paths` (files, or folders read through), the latest of each test kept (a re-test
    replaces the earlier result); and how many files in folders were skipped as not burn-in results."""
    latest: dict[tuple[str, ...], Result] = {}
    skipped = 0
    for path, named in result_paths(paths):
        if not named and not starts_with_header(path):
            skipped += 1
            continue
        result = read_result(path)
        key = result.identity()
        if key not in latest or latest[key].mtime <= result.mtime:
            latest[key] = result
    return list(latest.values()), skipped
