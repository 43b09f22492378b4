"""Exports of an expanded topology: node-link JSON, and a Graphviz diagram of its fabrics."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from dataclasses import asdict
from typing import Any

from . import codes
from .errors import ClusterforgeError, Finding, Severity
from .expand.topology import Device, Topology

DETAIL_LIMIT = 48  # above this many devices in the drawn fabrics, nodes and switches are grouped
MAX_SU_BOXES = 8  # grouped nodes get one box per scalable unit up to this many, else one per group


def node_link(topo: Topology) -> dict[str, Any]:
    """networkx node-link form (`networkx.node_link_graph(data, edges="links")` reads it back)."""
    addresses: dict[str, dict[str, str]] = {}
    for network, table in sorted(topo.addresses.items()):
        for key, address in table.items():
            addresses.setdefault(key.split(":")[0], {})[f"{network}:{key}"] = str(address)
    nodes = [
        {
            "id": d.name,
            **{k: v for k, v in asdict(d).items() if k != "name" and v is not None},
            "addresses": addresses.get(d.name, {}),
        }
        for d in topo.devices.values()
    ]
    links = [
        {
            "source": link.a,
            "target": link.b,
            "key": i,
            **{k: v for k, v in asdict(link).items() if k not in ("a", "b") and v not in (None, "")},
        }
        for i, link in enumerate(topo.links)
    ]
    racks = [{"name": r.name, "row": r.row, "position": r.position, "type": r.type_key} for r in topo.racks.values()]
    return {
        "directed": False,
        "multigraph": True,
        "graph": {"name": topo.name, "racks": racks},
        "nodes": nodes,
        "links": links,
    }


def node_link_json(topo: Topology) -> str:
    return json.dumps(node_link(topo), indent=1, sort_keys=True)


def _cluster_key(device: Device, detailed: bool, by_su: bool) -> str:
    if detailed:
        return device.name
    if device.kind == "node":
        return f"{device.group} SU{device.su}" if device.su and by_su else f"{device.group}"
    plane = f" plane {device.plane}" if device.plane and device.role in ("spine", "core") else ""
    rail = f" rail {device.rail}" if device.rail and device.role == "leaf" else ""
    return f"{device.group} {device.role}{rail}{plane}"


def _quote(text: str) -> str:
    """A DOT string; names are host names and identifiers, so only quotes need escaping (a \\n is kept)."""
    return '"' + text.replace('"', '\\"') + '"'


def fabric_dot(topo: Topology, fabrics: list[str] | None = None) -> str:
    """DOT text: every device and link for small clusters, else one box per group/SU and switch tier."""
    names = fabrics or [name for name in topo.fabrics]
    links = [link for link in topo.links if link.fabric in names]
    members = {n for link in links for n in (link.a, link.b)}
    detailed = len(members) <= DETAIL_LIMIT
    by_su = len({topo.devices[n].su for n in members}) <= MAX_SU_BOXES
    boxes: Counter[str] = Counter()
    kinds: dict[str, Device] = {}
    for name in members:
        device = topo.devices[name]
        key = _cluster_key(device, detailed, by_su)
        boxes[key] += 1
        kinds.setdefault(key, device)
    edges: Counter[tuple[str, str, str]] = Counter()
    speeds: dict[tuple[str, str, str], float] = {}
    for link in links:
        edge = (
            _cluster_key(topo.devices[link.a], detailed, by_su),
            _cluster_key(topo.devices[link.b], detailed, by_su),
            link.fabric,
        )
        edges[edge] += 1
        speeds[edge] = link.speed_gbps
    rank = {"node": 3, "leaf": 2, "spine": 1, "core": 0}
    lines = [
        f"graph {_quote(topo.name)} {{",
        "  rankdir=BT;",
        '  node [fontname="Helvetica", fontsize=10];',
        f"  label={_quote(topo.name + ('' if detailed else ' (grouped)'))};",
    ]
    for level in sorted(set(rank.values())):
        same = [k for k, d in kinds.items() if rank.get(d.role if d.kind == "switch" else "node", 3) == level]
        if same:
            lines.append("  { rank=same; " + " ".join(_quote(k) for k in sorted(same)) + " }")
    for key in sorted(boxes):
        device = kinds[key]
        shape = "box" if device.kind == "node" else "ellipse"
        label = key if detailed else f"{key}\\n{boxes[key]} x {device.model}"
        lines.append(f"  {_quote(key)} [shape={shape}, label={_quote(label)}];")
    for (a, b, fabric), count in sorted(edges.items()):
        label = f"{count} x {speeds[(a, b, fabric)]:g}G" if count > 1 else f"{speeds[(a, b, fabric)]:g}G"
        lines.append(f"  {_quote(a)} -- {_quote(b)} [label={_quote(label)}, tooltip={_quote(fabric)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_to_svg(dot: str) -> str:
    binary = shutil.which("dot")
    if binary is None:
        raise ClusterforgeError(
            [
                Finding(
                    codes.GRAPHVIZ_MISSING,
                    Severity.ERROR,
                    "Graphviz 'dot' is not installed",
                    hint="install graphviz (apt-get install graphviz) or use --format dot",
                )
            ]
        )
    result = subprocess.run([binary, "-Tsvg"], input=dot, capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        reason = result.stderr.strip() or "no message"
        raise ClusterforgeError(
            [
                Finding(
                    codes.GRAPHVIZ_FAILED,
                    Severity.ERROR,
                    f"Graphviz 'dot' failed with exit status {result.returncode}: {reason}",
                    hint="export --format dot writes the graph without Graphviz",
                )
            ]
        )
    return result.stdout
