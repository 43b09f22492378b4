"""Blueprints mutated by Hypothesis, and the whole pipeline run on each: the only failure a user may ever see is a
`ClusterforgeError` (exit 1 with a location); anything else is an internal error (exit 3) and a bug.

Two kinds of case: the data of an example blueprint with one to three values replaced, deleted or added
(mostly by values of the same type, so many cases get past validation into expansion, checks and rendering),
and the YAML text of an example with characters inserted, deleted or repeated.
"""

from __future__ import annotations

import copy
import json
import re
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from captures import lldp_of
from helpers import BLUEPRINTS, REPO
from hypothesis import strategies as st

from clusterforge.errors import ClusterforgeError, DataPath, Severity
from clusterforge.inputs import InputPolicy
from clusterforge.loader import LoadedBlueprint, load_blueprint
from clusterforge.lockfile import Keep
from clusterforge.pipeline import analyse, render_analysis
from clusterforge.validate import validate
from clusterforge.yamlsafe import SourceMap, YamlError, read_yaml

HOSTILE_TEXT = [
    "",
    " ",
    "a\n",
    "gpu\n",
    "\n",
    "x\r\ny",
    "\x00",
    "nul\x00name",
    "\u2028",
    "tab\there",
    "\x1b[31m",
    "\u202e",
    "../../../escaped-{index}",
    "/etc/passwd",
    "a/b",
    "..",
    ".",
    "{{ lookup('pipe', 'id') }}",
    "{% raw %}",
    "#jinja2:x",
    "<script>",
    "]]>",
    "=1+1",
    "|",
    "'",
    '"',
    "\\",
    "08",
    "010",
    "0x1F",
    "yes",
    "no",
    "on",
    "null",
    "1:0",
    "0:1",
    "1e400",
    "nan",
    "-1",
    "A" * 200,
    "é",
    "日本",
    "{row}{index:99d}",
    "{index!r}",
    "{group.__class__}",
    "{",
    "}",
    "{0}",
    "NCCL_DEBUG",
    "INFO\nX=1",
    "mlx5_0",
    "R01",
    "A01",
    "gpu",
    "compute",
    "nvidia/qm9700",
    "generic/cpu-1u",
    "nvidia/dgx-h100",
    "10.0.0.0/8",
    "10.0.0.1/24",
    "0.0.0.0/0",
    "255.255.255.255/32",
]
INTEGERS = [
    -(2**70),
    -1,
    0,
    1,
    2,
    3,
    7,
    8,
    9,
    31,
    32,
    33,
    63,
    64,
    65,
    100,
    101,
    199,
    200,
    201,
    255,
    256,
    4096,
    4097,
    65535,
    200_000,
    200_001,
    10**9,
    2**63,
]
FLOATS = [0.0, -0.0, 0.5, 1.0, 1.5, 16.0, 16.5, 3.0, 1e-300, 1e300, float("inf"), float("nan")]

scalars = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.sampled_from(INTEGERS),
    st.sampled_from(FLOATS),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.integers(),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "count", "kind", "racks", "x"]), inner, max_size=3)
    ),
    max_leaves=6,
)


@cache
def examples() -> dict[str, LoadedBlueprint]:
    return {path.stem: load_blueprint(path) for path in BLUEPRINTS}


def value_paths(data: Any, prefix: DataPath = ()) -> Iterator[DataPath]:
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield (*prefix, key)
        yield from value_paths(value, (*prefix, key))


def _like(draw: st.DrawFn, old: Any) -> Any:
    """A value of the old one's type, mostly: what gets a mutation past the schema into the later stages."""
    if draw(st.integers(0, 4)) == 0:
        return draw(values)
    if isinstance(old, bool):
        return not old
    if isinstance(old, int):
        return draw(st.sampled_from(INTEGERS) | st.integers(max(0, old - 3), max(0, old + 3)))
    if isinstance(old, float):
        return draw(st.sampled_from(FLOATS))
    if isinstance(old, str):
        return draw(st.sampled_from(HOSTILE_TEXT) | st.just(old + draw(st.sampled_from(["1", "\n", "x", "-"]))))
    if isinstance(old, list) and old:
        index = draw(st.integers(0, len(old) - 1))
        return draw(st.sampled_from([old[:index] + old[index + 1 :], [*old, old[index]], old[::-1], []]))
    return draw(values)


@st.composite
def mutated_data(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(examples())))
    data = copy.deepcopy(examples()[name].data)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(sorted(value_paths(data), key=repr)))
        parent: Any = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["like", "like", "like", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(HOSTILE_TEXT[:20]))] = draw(values)
        else:
            parent[path[-1]] = _like(draw, parent[path[-1]])
    return name, data


INSERTS = [
    "\x00",
    "\x01",
    "\t",
    "\n",
    "\r",
    "\u2028",
    "\ufeff",
    "&a ",
    "*a",
    "!!binary ",
    "!!int ",
    "!!python/name:x",
    "<<: *a\n",
    "[",
    "]",
    "{",
    "}",
    ": ",
    "- ",
    "#",
    "'",
    '"',
    "%YAML 1.1\n",
    "---\n",
    "...\n",
    "0",
    "08",
    "~",
]


@cache
def example_texts() -> dict[str, str]:
    """Read once: a case must not depend on the files changing under a long run."""
    return {path.stem: path.read_text(encoding="utf-8") for path in BLUEPRINTS}


@st.composite
def mutated_text(draw: st.DrawFn) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(example_texts())))
    text = example_texts()[name]
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "insert", "delete", "repeat"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(INSERTS) | st.text(max_size=3)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        else:
            end = text.find("\n", at) + 1 or len(text)
            text = text[:end] + text[at:end] + text[end:]
    return name, text


POLICY = InputPolicy((REPO,))


@dataclass
class Outcome:
    stage: str
    """'rendered', 'refused' (a user error) or 'internal' (a bug)."""
    detail: str = ""


def run_case(name: str, data: Any, text: str | None = None) -> Outcome:
    """The pipeline on one case, as `render` runs it (without writing)."""
    # a case built in code (fuzzing_schema) stands in the first example's place: the render hashes its file
    path = REPO / "blueprints" / f"{name}.yaml" if name in examples() else BLUEPRINTS[0]
    try:
        if text is not None:
            data, sources = read_yaml(text, path.name)
        else:  # a case built in code has no text to point into
            sources = examples()[name].sources if name in examples() else SourceMap({}, {})
        if not isinstance(data, dict):
            return Outcome("refused", "not a mapping")
        # a mutated blueprint is a design of its own: the example's lock file is not its identity
        valid = validate(LoadedBlueprint(path, data, sources, [path], POLICY))
        render_analysis(analyse(valid, keep=Keep()))
        return Outcome("rendered")
    except YamlError as exc:
        return Outcome("refused", exc.finding.code)
    except ClusterforgeError as exc:  # counted by its first error (warnings may come first)
        errors = [f for f in exc.findings if f.severity is Severity.ERROR] or exc.findings
        if errors and errors[0].code.startswith("CF-RENDER-"):  # the shipped templates disagree: a bug
            return Outcome("internal", f"{errors[0].code}: {errors[0].message}"[:300])
        return Outcome("refused", errors[0].code if errors else "")
    except Exception as exc:  # anything else is what this hunts for
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome("internal", f"{type(exc).__name__} at {Path(where.filename).name}:{where.lineno}: {exc}"[:300])


# --- verify's inputs ---------------------------------------------------------------------------------------------
# Real captures, mutated: `ibnetdiscover -p` of the h200 example's fabric as ibsim simulated it (miscabled), the
# topology format of the same subnet (what ibnetdiscover without -p and ibsim read), and lldpctl -f json of the
# l40s example's inference hosts in lldpd 1.0's shape. Each case is one capture through `verify` and its three
# reports; the only failure a user may see is a DiscoveryError or ClusterforgeError (exit 1, located).

IB_PORTS = REPO / "docs" / "examples" / "h200-training-pod-ibnetdiscover-miscabled.txt"
IB_TOPOLOGY = REPO / "inventories" / "h200-training-pod" / "infiniband" / "compute" / "topology.net"
LLDP_HOSTS = ("inf001", "inf002", "inf003")

VERIFY_INSERTS = [
    "\x1b[2K\r",
    "\x1b]8;;http://x\x07",
    "\u202e",
    "\u2066",
    "\u200b",
    "\u2028",
    "\x85",
    "\x00",
    "\r",
    "\n",
    "\t",
    "\ufffd",
    "\\",
    "9" * 5000,
    "1." + "5" * 5000,
    "1e99999",
    "-0",
    "0",
    "255",
    "256",
    "99999",
    "0x" + "f" * 40,
    "[" * 3000,
    "{" * 3000,
    '{"a":' * 200,
    "[",
    "]",
    "{",
    "}",
    '"',
    "'",
    ":",
    ",",
    "NaN",
    "null",
    " - ",
    "( '",
    "' - '",
    "SW    13 ",
    "CA   221  1 ",
    'Switch 64 "',
    "switchguid=0x",
    '[1] "',
    '"[1]',
    '"lldp": ',
    '"interface": ',
    '"chassis": ',
]


@cache
def verify_analyses() -> dict[str, Any]:
    from clusterforge.pipeline import analyse, load_valid

    return {
        name: analyse(load_valid(REPO / "blueprints" / f"{name}.yaml"))
        for name in ("h200-training-pod", "l40s-inference")
    }


@cache
def verify_samples() -> dict[str, str]:
    """Capture name -> its text, read once."""
    from clusterforge.render.handoff.handoff_common import cable_table

    analysis = verify_analyses()["l40s-inference"]
    hosts: dict[str, dict[str, tuple[str, str]]] = {host: {} for host in LLDP_HOSTS}
    for row in cable_table(analysis.valid, analysis.topo).rows():
        if row.link.a in hosts and row.link.fabric in ("compute", "inband"):
            hosts[row.link.a][row.link.a_port] = (row.link.b, row.link.b_port)
    lldp = {host: lldp_of(ports) for host, ports in hosts.items()}
    return {
        "ib-ports.txt": IB_PORTS.read_text(encoding="utf-8"),
        "ib-topology.net": IB_TOPOLOGY.read_text(encoding="utf-8"),
        "inf001.json": json.dumps(lldp["inf001"], indent=2),
        "lldp-all.json": json.dumps(lldp, indent=2),
    }


@st.composite
def mutated_capture(draw: st.DrawFn) -> tuple[str, str]:
    """(capture name, mutated text): characters inserted, lines deleted or repeated, numbers replaced; for
    LLDP also values of the parsed JSON replaced (then written out again)."""
    name = draw(st.sampled_from(sorted(verify_samples())))
    text = verify_samples()[name]
    if name.endswith(".json") and draw(st.booleans()):
        data = json.loads(text)
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(sorted(value_paths(data), key=repr)))
            parent: Any = data
            for part in path[:-1]:
                parent = parent[part]
            parent[path[-1]] = (
                _like(draw, parent[path[-1]]) if draw(st.booleans()) else draw(st.sampled_from(VERIFY_INSERTS))
            )
        text = json.dumps(data, indent=draw(st.sampled_from([None, 2])))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "insert", "number", "delete", "repeat"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(VERIFY_INSERTS) | st.text(max_size=3)) + text[at:]
        elif action == "number":
            found = re.compile(r"\d+").search(text, at)
            if found:
                new = draw(st.sampled_from(["0", "65", "129", "254", "255", "256", "99999", "9" * 5000, "-1", ""]))
                text = text[: found.start()] + new + text[found.end() :]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 200)) :]
        else:
            end = text.find("\n", at) + 1 or len(text)
            text = text[:end] + text[at:end] * draw(st.integers(1, 3)) + text[end:]
    return name, text


_SHOWN_RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
"""What no report may carry raw: controls but tab and line feed, bidi and zero-width characters."""


def run_verify_case(name: str, text: str, folder: Path) -> Outcome:
    """`verify` on one mutated capture, as the CLI runs it, and its three reports."""
    from clusterforge.verify import DiscoveryError, verify
    from clusterforge.verify.report import verify_html, verify_json, verify_text

    path = folder / name
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    analysis = verify_analyses()["l40s-inference" if name.endswith(".json") else "h200-training-pod"]
    ib, lldp = ([], [path]) if name.endswith(".json") else ([path], [])
    try:
        result = verify(analysis.valid, analysis.topo, ib, lldp)
        reports = [verify_text(result), verify_json(result), verify_html(result)]
    except DiscoveryError as exc:
        if _SHOWN_RAW.search(str(exc)):
            return Outcome("internal", f"error shows a raw control or bidi character: {str(exc)[:200]!r}")
        return Outcome("refused", str(exc).split(": ", 2)[-1][:40])
    except ClusterforgeError as exc:
        return Outcome("refused", exc.findings[0].code if exc.findings else "")
    except Exception as exc:  # anything else is what this hunts for
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome("internal", f"{type(exc).__name__} at {Path(where.filename).name}:{where.lineno}: {exc}"[:300])
    for report in reports:
        raw = _SHOWN_RAW.search(report)
        if raw:
            return Outcome("internal", f"report shows raw U+{ord(raw.group()):04X}")
    return Outcome("verified", "matches" if not result.problems else "differs")
