"""Semantic diff of two blueprint versions: what a change does to the cluster, for a pull request."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hostlist

from . import codes
from .errors import BlueprintError, ClusterforgeError, Finding, Severity
from .expand.identity import identities, moves
from .failures import analyse_failures
from .failures.text import worst_by_class, worst_changes, worst_markdown
from .pipeline import analyse, cable_labels, keep_of, load_valid, render_analysis
from .plan import FabricPlan, Plan
from .render.escape import md_cell

MAX_LISTED = 25  # findings listed per section in Markdown


@dataclass
class Snapshot:
    label: str
    plan: Plan
    findings: list[Finding]
    files: dict[str, str] | None
    """Rendered files, or None when a check error stops the render."""
    partitions: dict[str, int]
    expands: bool = True
    failures: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Element class -> its worst single failure (clusterforge failures)."""
    identities: dict[str, dict[str, str]] | None = None
    """Every identity (expand/identity.py), or None when the version does not expand."""
    node_partitions: dict[str, str] | None = None
    """Slurm node -> its partitions, comma-separated."""
    workloads: dict[str, dict[str, Any]] | None = None
    """Workload name -> its fields as the blueprint gives them."""


def snapshot(path: Path, label: str, allow: tuple[Path, ...] = ()) -> Snapshot:
    """The plan, findings and files of one version, from one analysis; a version that does not expand keeps
    its errors."""
    valid = load_valid(path, allow)
    workloads = {w.name: w.model_dump(mode="json", exclude_defaults=True) for w in valid.blueprint.workloads}
    try:
        # renumbering allowed: the diff lists what would move (render refuses it without the flag)
        analysis = analyse(valid, keep=keep_of(valid, allow_renumber=True))
    except BlueprintError as exc:
        return Snapshot(
            label, Plan.empty(valid.blueprint.name), exc.findings, None, {}, expands=False, workloads=workloads
        )
    try:
        files: dict[str, str] | None = render_analysis(analysis)
    except ClusterforgeError:
        files = None
    slurm = valid.blueprint.slurm
    counts = {g.name: g.count for g in valid.blueprint.node_groups}
    partitions = {p.name: sum(counts[g] for g in p.node_groups) for p in slurm.partitions} if slurm else {}
    in_partitions: dict[str, list[str]] = {}
    for partition in slurm.partitions if slurm else []:
        for node in analysis.topo.nodes():
            if node.group in partition.node_groups:
                in_partitions.setdefault(node.name, []).append(partition.name)
    return Snapshot(
        label,
        analysis.plan,
        analysis.findings,
        files,
        partitions,
        identities={**identities(analysis.topo), "cables": cable_labels(analysis)},
        node_partitions={node: ",".join(names) for node, names in in_partitions.items()},
        workloads=workloads,
        failures=worst_by_class(analyse_failures(valid, analysis.topo)),
    )


def materialize(spec: str, workdir: Path, side: str = "blueprint") -> Path:
    """A blueprint path, or `REV:path` from Git (the revision's tree is unpacked so includes resolve). The
    revision is resolved to its tree's object id first and only that id is passed on, so no revision text is
    ever read as an option of Git; a symbolic link of the tree is kept when it stays inside the tree, and a
    link out of it refuses the revision."""
    if ":" not in spec or Path(spec).exists():
        return Path(spec)
    rev, rel = spec.split(":", 1)

    def unreadable(text: str, hint: str = _REVISION_HINT) -> ClusterforgeError:
        return ClusterforgeError(
            [
                Finding(
                    codes.GIT_REVISION_UNREADABLE,
                    Severity.ERROR,
                    f"cannot read Git revision '{rev}' of {side} '{spec}': {text}",
                    hint=hint,
                )
            ]
        )

    try:
        top = _git("rev-parse", "--show-toplevel").decode().strip()
        prefix = _git("rev-parse", "--show-prefix").decode().strip()
        tree = _git("-C", top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{tree}}").decode()
        tree = tree.strip()
        if not _OBJECT_ID.fullmatch(tree):
            raise unreadable(_NO_TREE)
        target = workdir / tree
        if not target.exists():
            _unpack(_git("-C", top, "archive", "--format=tar", tree), target)
    except subprocess.CalledProcessError as exc:
        text = exc.stderr.decode(errors="replace").strip() if exc.stderr else ""
        raise unreadable(text or _NO_TREE) from None
    except FileNotFoundError as exc:  # no git
        raise unreadable(str(exc)) from None
    except tarfile.FilterError as exc:
        member = exc.tarinfo
        why = f"is a symbolic link to '{member.linkname}', outside the revision's tree" if member.issym() else exc
        hint = "commit the file itself, or a link to a file inside the repository"
        raise unreadable(f"{member.name} {why}; nothing of the revision is read", hint) from None
    except tarfile.TarError as exc:
        raise unreadable(f"its archive cannot be unpacked: {exc}") from None
    return target / prefix / rel


_REVISION_HINT = "give a revision `git rev-parse` knows (a branch, tag or commit) and a path relative to the repository"
_NO_TREE = "it names no commit or tree of the repository (git rev-parse --verify)"
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A Git object id (SHA-1 or SHA-256): all `materialize` passes to `git archive`."""


def _git(*args: str) -> bytes:
    return subprocess.run(["git", *args], capture_output=True, check=True).stdout


def _unpack(archive: bytes, target: Path) -> None:
    """A revision's tar archive into `target`, all of it or nothing; tarfile's `data` filter keeps symbolic
    links that stay inside the tree and raises FilterError for any other (absolute, or out through `..`)."""
    partial = target.with_name(target.name + ".partial")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(partial, filter="data")
    partial.rename(target)


def _flat_fabrics(plan: Plan) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for name, fabric in plan.fabrics.items():
        for tier, n in fabric.switches.items():
            rows[f"{name} {tier} switches"] = n
        for link_tier, n in fabric.links.items():
            rows[f"{name} {link_tier} links"] = n
        if isinstance(fabric, FabricPlan):
            for upper_tier, ratio in fabric.oversubscription.items():
                rows[f"{name} {upper_tier} oversubscription"] = f"{ratio:g}:1"
            rows[f"{name} bisection Tb/s"] = fabric.bisection_tbps
    return rows


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"item": key, "old": old.get(key), "new": new.get(key)}
        for key in sorted(set(old) | set(new), key=_natural)
        if old.get(key) != new.get(key)
    ]


def _natural(text: str) -> tuple[object, ...]:
    """'MMF 5 m' before 'MMF 10 m'."""
    return tuple(float(part) if part.replace(".", "", 1).isdigit() else part for part in text.split())


def _finding_key(f: Finding) -> tuple[str, str]:
    """Findings are the same finding across versions when code and subject (or data path) agree."""
    return (f.code, f.subject or f.path_text)


def _file_changes(old: dict[str, str] | None, new: dict[str, str] | None) -> list[dict[str, Any]]:
    """Per changed file, the lines it gains and loses: each distinct line counts as often as it occurs more in
    one version than in the other (a line that only moves counts as neither). Linear in the files' size, where
    a line-by-line diff (difflib) took over a minute on the files of 10,000 GPUs."""
    if old is None or new is None:
        return []
    out = []
    for path in sorted(set(old) | set(new)):
        if path == "manifest.json" or old.get(path) == new.get(path):
            continue
        a, b = Counter(old.get(path, "").splitlines()), Counter(new.get(path, "").splitlines())
        added, removed = (b - a).total(), (a - b).total()
        status = "added" if path not in old else "removed" if path not in new else "changed"
        out.append({"file": path, "status": status, "added": added, "removed": removed})
    return out


def _topology_lines(files: dict[str, str] | None) -> set[str]:
    text = (files or {}).get("slurm/topology.conf", "")
    return {line for line in text.splitlines() if line and not line.startswith("#")}


def _summary(plan: Plan) -> dict[str, Any]:
    return {
        "nodes": plan.nodes,
        "GPUs": plan.gpus,
        "racks": plan.racks,
        "IT power kW": plan.power_kw,
        "heat kW": plan.heat_kw,
        "cables": plan.cables_total,
    }


def _rack_changes(old: Plan, new: Plan) -> list[dict[str, Any]]:
    racks_old, racks_new = old.power.racks, new.power.racks
    changes = []
    for rack in sorted(set(racks_old) | set(racks_new)):
        a, b = racks_old.get(rack), racks_new.get(rack)
        old_kw, new_kw = (a.power_kw if a else None), (b.power_kw if b else None)
        if old_kw != new_kw or (a.heat_kw if a else None) != (b.heat_kw if b else None):
            changes.append(
                {"rack": rack, "old_kw": old_kw, "new_kw": new_kw, "delta_kw": round((new_kw or 0) - (old_kw or 0), 2)}
            )
    return changes


def _cable_counts(plan: Plan) -> dict[str, int]:
    return {f"{media} {length} m": n for media, lengths in plan.cables.items() for length, n in lengths.items()}


def _workload_changes(old: Snapshot, new: Snapshot) -> list[dict[str, Any]]:
    """Per workload added, removed or changed: what changed, field by field."""
    a, b = old.workloads or {}, new.workloads or {}
    out = []
    for name in sorted(a.keys() | b.keys()):
        if a.get(name) == b.get(name):
            continue
        status = "added" if name not in a else "removed" if name not in b else "changed"
        fields = _changes(a.get(name, {}), b.get(name, {})) if status == "changed" else []
        out.append({"workload": name, "status": status, "fields": fields})
    return out


def _node_blocks(files: dict[str, str] | None) -> dict[str, str]:
    """Slurm node -> the block (topology/block) or leaf switch (topology/tree) topology.conf puts it in."""
    out: dict[str, str] = {}
    for line in (files or {}).get("slurm/topology.conf", "").splitlines():
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        name = fields.get("BlockName") or fields.get("SwitchName")
        if name and "Nodes" in fields:
            out.update(dict.fromkeys(hostlist.expand_hostlist(fields["Nodes"]), name))
    return out


def _node_block_changes(old: dict[str, str] | None, new: dict[str, str] | None) -> list[dict[str, Any]]:
    """Slurm nodes on both sides whose block or leaf switch in topology.conf differs."""
    a, b = _node_blocks(old), _node_blocks(new)
    both = sorted(a.keys() & b.keys(), key=_natural)
    return [{"key": node, "old": a[node], "new": b[node]} for node in both if a[node] != b[node]]


def _node_partition_changes(old: Snapshot, new: Snapshot) -> list[dict[str, Any]]:
    """Slurm nodes on both sides whose partitions differ."""
    a, b = old.node_partitions or {}, new.node_partitions or {}
    both = sorted(a.keys() & b.keys(), key=_natural)
    return [{"key": node, "old": a[node], "new": b[node]} for node in both if a[node] != b[node]]


IDENTITY_SECTIONS = (
    ("hosts", "Host names (group and index)"),
    ("addresses", "Addresses that move"),
    ("loopbacks", "Loopbacks that move"),
    ("asns", "BGP ASNs that change"),
    ("numbers", "Network and node group numbers that change (switch MACs, simulated GUIDs)"),
    ("bonds", "Node bonds that renumber (bond, MLAG ID, Ethernet segment)"),
    ("ports", "Cables re-patched"),
    ("trunks", "Switch-to-switch cables re-patched"),
    ("cables", "Cable labels that change"),
    ("racks", "Devices that move rack or U"),
)
"""The identity moves `diff` lists first: section of expand/identity.py -> its title."""


def semantic_diff(old: Snapshot, new: Snapshot) -> dict[str, Any]:
    active_old = {_finding_key(f): f for f in old.findings if not f.suppressed_by}
    active_new = {_finding_key(f): f for f in new.findings if not f.suppressed_by}
    both = old.files is not None and new.files is not None
    topo_old, topo_new = (_topology_lines(old.files), _topology_lines(new.files)) if both else (set(), set())
    return {
        "old": old.label,
        "new": new.label,
        "identity_moves": moves(old.identities, new.identities) if old.identities and new.identities else {},
        "node_partitions": _node_partition_changes(old, new),
        "node_blocks": _node_block_changes(old.files, new.files),
        "workloads": _workload_changes(old, new),
        "summary": _changes(_summary(old.plan), _summary(new.plan)),
        "fabrics": _changes(_flat_fabrics(old.plan), _flat_fabrics(new.plan)),
        "cables": _changes(_cable_counts(old.plan), _cable_counts(new.plan)),
        "racks": _rack_changes(old.plan, new.plan),
        "findings_added": [f.as_dict() for k, f in sorted(active_new.items()) if k not in active_old],
        "findings_resolved": [f.as_dict() for k, f in sorted(active_old.items()) if k not in active_new],
        "findings_changed": [
            active_new[k].as_dict()
            for k in sorted(set(active_old) & set(active_new))
            if active_old[k].message != active_new[k].message
        ],
        "partitions": _changes(old.partitions, new.partitions),
        "failures": worst_changes(old.failures, new.failures),
        "slurm_topology": {"added": sorted(topo_new - topo_old), "removed": sorted(topo_old - topo_new)},
        "files": _file_changes(old.files, new.files),
        "render_blocked": {"old": old.files is None, "new": new.files is None},
        "expands": {"old": old.expands, "new": new.expands},
    }


def _arrow(change: dict[str, Any]) -> str:
    old, new = change["old"], change["new"]
    delta = ""
    if isinstance(old, int | float) and isinstance(new, int | float) and not isinstance(old, bool):
        d = round(new - old, 2)
        delta = f"{'+' if d > 0 else ''}{d:g}"
    return f"| {change['item']} | {'—' if old is None else old} | {'—' if new is None else new} | {delta} |"


def diff_markdown(diff: dict[str, Any]) -> str:
    lines = [f"## clusterforge diff: `{md_cell(diff['old'])}` → `{md_cell(diff['new'])}`", ""]
    nothing = not any(
        diff[k]
        for k in (
            "identity_moves",
            "node_partitions",
            "node_blocks",
            "workloads",
            "summary",
            "fabrics",
            "cables",
            "racks",
            "findings_added",
            "findings_resolved",
            "findings_changed",
            "partitions",
            "failures",
            "files",
        )
    )
    if nothing and not any(diff["slurm_topology"].values()):
        return "\n".join([*lines, "No change to the cluster or its rendered files.", ""])
    for section in (
        _identity_tables,
        _workload_table,
        _change_tables,
        _rack_table,
        _finding_lists,
        _topology_lines_md,
        _file_table,
        _side_notes,
    ):
        lines += section(diff)
        if section is _rack_table:
            lines += worst_markdown(diff["failures"])
    return "\n".join(lines).rstrip() + "\n"


def _moves_table(title: str, rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"### {title} ({len(rows)})", "", "| | before | after |", "|---|---|---|"]
    lines += [f"| `{md_cell(r['key'])}` | {md_cell(r['old'])} | {md_cell(r['new'])} |" for r in rows[:MAX_LISTED]]
    if len(rows) > MAX_LISTED:
        lines.append(f"| … and {len(rows) - MAX_LISTED} more (`--format json` lists all) | | |")
    return [*lines, ""]


def _identity_tables(diff: dict[str, Any]) -> list[str]:
    """What moves that exists: addresses, names, cables, rack slots, Slurm partitions; first in the report."""
    lines: list[str] = []
    moved = diff["identity_moves"]
    for section, title in IDENTITY_SECTIONS:
        if moved.get(section):
            lines += _moves_table(title, moved[section])
    if diff["node_partitions"]:
        lines += _moves_table("Slurm nodes that change partition", diff["node_partitions"])
    if diff["node_blocks"]:
        lines += _moves_table("Slurm nodes that change block or switch", diff["node_blocks"])
    if not lines:
        return ["No existing host, address, cable or rack slot moves.", ""]
    return lines


def _workload_table(diff: dict[str, Any]) -> list[str]:
    if not diff["workloads"]:
        return []
    lines = ["### Workloads", "", "| workload | change | before | after |", "|---|---|---|---|"]
    for w in diff["workloads"]:
        if w["status"] != "changed":
            lines.append(f"| {md_cell(w['workload'])} | {w['status']} | | |")
        for f in w["fields"]:
            old = "—" if f["old"] is None else md_cell(_flow(f["old"]))
            new = "—" if f["new"] is None else md_cell(_flow(f["new"]))
            lines.append(f"| {md_cell(w['workload'])} | `{md_cell(f['item'])}` | {old} | {new} |")
    return [*lines, ""]


def _flow(value: Any) -> str:
    """A field's value as a blueprint writes it in YAML flow style: {share: 0.7, prompt_tokens: 1024}, [a, b]."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _change_tables(diff: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for key, title in (
        ("summary", "Cluster"),
        ("fabrics", "Fabrics"),
        ("cables", "Cables by media and length"),
        ("partitions", "Slurm partitions (nodes)"),
    ):
        if diff[key]:
            lines += [f"### {title}", "", "| | before | after | change |", "|---|---|---|---|"]
            lines += [_arrow({**c, "item": md_cell(str(c["item"]))}) for c in diff[key]]
            lines.append("")
    return lines


def _rack_table(diff: dict[str, Any]) -> list[str]:
    if not diff["racks"]:
        return []
    lines = ["### Power per rack (changed racks)", "", "| rack | before kW | after kW | change |", "|---|---|---|---|"]
    for r in diff["racks"]:
        sign = "+" if r["delta_kw"] > 0 else ""
        lines.append(
            f"| {md_cell(r['rack'])} | {r['old_kw'] if r['old_kw'] is not None else '—'} | "
            f"{r['new_kw'] if r['new_kw'] is not None else '—'} | {sign}{r['delta_kw']:g} |"
        )
    return [*lines, ""]


def _finding_lists(diff: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for key, title in (
        ("findings_added", "New findings"),
        ("findings_resolved", "Resolved findings"),
        ("findings_changed", "Changed findings"),
    ):
        if diff[key]:
            lines += [f"### {title} ({len(diff[key])})", ""]
            lines += [f"- **{f['severity']}** `{f['code']}`: {md_cell(f['message'])}" for f in diff[key][:MAX_LISTED]]
            if len(diff[key]) > MAX_LISTED:
                lines.append(f"- … and {len(diff[key]) - MAX_LISTED} more (`--format json` lists all)")
            lines.append("")
    return lines


def _topology_lines_md(diff: dict[str, Any]) -> list[str]:
    topology = diff["slurm_topology"]
    if not (topology["added"] or topology["removed"]):
        return []
    return [
        "### Slurm topology",
        "",
        "```diff",
        *[f"- {line}" for line in topology["removed"]],
        *[f"+ {line}" for line in topology["added"]],
        "```",
        "",
    ]


def _file_table(diff: dict[str, Any]) -> list[str]:
    if not diff["files"]:
        return []
    return [
        "### Rendered files",
        "",
        "| file | status | lines |",
        "|---|---|---|",
        *[f"| `{f['file']}` | {f['status']} | +{f['added']} −{f['removed']} |" for f in diff["files"]],
        "",
    ]


def _side_notes(diff: dict[str, Any]) -> list[str]:
    lines = []
    for side in ("old", "new"):
        if not diff["expands"][side]:
            lines.append(
                f"_The {side} blueprint does not expand (its errors are listed above), so its figures count as zero._"
            )
        elif diff["render_blocked"][side]:
            lines.append(f"_The {side} blueprint has check errors, so its files were not rendered._")
    return lines


def diff_specs(old_spec: str, new_spec: str, allow: tuple[Path, ...] = ()) -> dict[str, Any]:
    """`allow`: folders outside the blueprints' repository their includes and catalogs may be read from."""
    with tempfile.TemporaryDirectory(prefix="clusterforge-diff-") as tmp:
        # a revision's tree is unpacked without its .git: the unpacked tree is the blueprint's repository
        old = snapshot(materialize(old_spec, Path(tmp), "OLD"), old_spec, (Path(tmp), *allow))
        new = snapshot(materialize(new_spec, Path(tmp), "NEW"), new_spec, (Path(tmp), *allow))
    return semantic_diff(old, new)
