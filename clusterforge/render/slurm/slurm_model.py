"""The Slurm render model: node lines, partitions, GRES and the topology tree or blocks, as plain data."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ...catalog import GPU, Catalog, Server
from ...expand.nvlink import multi_node_domains
from ...expand.topology import Device, Topology
from ...model import Blueprint
from ...model.slurm import IMEX_SINCE, at_least
from ..context import host_range

MEMORY_SHARE = 0.95  # RealMemory: 95% of installed memory, the rest for the OS (slurmd drains a node that has less)


def gres_type(gpu_key: str) -> str:
    """'nvidia/h200-sxm' -> 'h200'; 'amd/mi300x' -> 'mi300x'."""
    return gpu_key.split("/", 1)[1].split("-", 1)[0]


@dataclass
class SlurmModel:
    cluster_name: str
    controllers: list[dict[str, str]]
    topology_plugin: str | None
    switch_type: str | None
    gres_types: list[str]
    nodes: list[dict[str, Any]]
    partitions: list[dict[str, Any]]
    gres: list[dict[str, str]]
    switches: list[dict[str, str]] = field(default_factory=list)
    blocks: list[dict[str, str]] = field(default_factory=list)
    block_sizes: list[int] = field(default_factory=list)


def _partition_nodes(bp: Blueprint, topo: Topology) -> list[Device]:
    assert bp.slurm is not None
    groups = {g for p in bp.slurm.partitions for g in p.node_groups}
    return [d for d in topo.nodes() if d.group in groups]


def _node_lines(bp: Blueprint, catalog: Catalog, nodes: list[Device]) -> list[dict[str, Any]]:
    lines = []
    by_group: dict[str, list[Device]] = defaultdict(list)
    for node in nodes:
        by_group[node.group or ""].append(node)
    for group in bp.node_groups:
        members = by_group.get(group.name)
        if not members:
            continue
        server = catalog.require(group.model, Server)
        cpu = server.cpu
        gres = f"gpu:{gres_type(server.gpus.model)}:{server.gpus.count}" if server.gpus else None
        features = [group.name] + ([gres_type(server.gpus.model)] if server.gpus else [])
        lines.append(
            {
                "names": host_range([n.name for n in members]),
                "cpus": cpu.sockets * cpu.cores_per_socket * cpu.threads_per_core,
                "sockets": cpu.sockets,
                "cores_per_socket": cpu.cores_per_socket,
                "threads_per_core": cpu.threads_per_core,
                "real_memory": int(server.memory_gb * 1024 * MEMORY_SHARE),
                "gres": gres,
                "features": ",".join(features),
                "group": group.name,
                "model": group.model,
                "gpu_count": server.gpus.count if server.gpus else 0,
            }
        )
    return lines


def _per_gpu_defaults(node_lines: list[dict[str, Any]], groups: list[str]) -> dict[str, int | None]:
    """DefCpuPerGPU and DefMemPerGPU (MB) of a partition: an even share of a node's CPUs and RealMemory per
    GPU, the smallest over its GPU node groups, so a job asking only for GPUs gets a fair share of the node.
    Both None for a partition without GPU nodes (login or CPU nodes only): slurm.conf(5) defines them per
    allocated GPU, so such a partition has nothing to give them to. Nodes without GPUs in a mixed partition
    do not lower the share: a job there that asks for no GPU is not given any per-GPU default."""
    shares = [
        (line["cpus"] // line["gpu_count"], line["real_memory"] // line["gpu_count"])
        for line in node_lines
        if line["group"] in groups and line["gpu_count"]
    ]
    return {
        "def_cpu_per_gpu": min((c for c, _ in shares), default=None),
        "def_mem_per_gpu": min((m for _, m in shares), default=None),
    }


def _gres_lines(bp: Blueprint, catalog: Catalog, nodes: list[Device]) -> list[dict[str, str]]:
    """gres.conf lines per GPU node group; an NVIDIA group's first line also asks slurmd to detect the GPUs
    by NVML (node-specific AutoDetect, gres.conf(5)), which the group's lines then sanity check."""
    lines = []
    for group in bp.node_groups:
        members = [n.name for n in nodes if n.group == group.name]
        server = catalog.require(group.model, Server)
        if not members or server.gpus is None:
            continue
        gpu = catalog.require(server.gpus.model, GPU)
        group_lines = _group_gres_lines(server, gpu, host_range(members))
        for index, line in enumerate(group_lines):
            line["autodetect"] = "nvml" if index == 0 and gpu.vendor == "NVIDIA" else ""
        lines += group_lines
    return lines


def _group_gres_lines(server: Server, gpu: GPU, names: str) -> list[dict[str, str]]:
    assert server.gpus is not None
    kind = gres_type(server.gpus.model)
    devices = (
        [f"/dev/dri/renderD{128 + i}" for i in range(server.gpus.count)]
        if gpu.vendor == "AMD"
        else [f"/dev/nvidia{i}" for i in range(server.gpus.count)]
    )
    cores = server.cpu.cores_per_socket
    if server.pcie is None and server.gpus.sockets is not None:
        return [
            {"names": names, "type": kind, "file": device, "cores": f"{socket * cores}-{(socket + 1) * cores - 1}"}
            for device, socket in zip(devices, server.gpus.sockets, strict=True)
        ]
    if server.pcie is None:
        files = host_range(devices) if gpu.vendor != "AMD" else ",".join(devices)
        return [{"names": names, "type": kind, "file": files, "cores": ""}]
    socket_of = {g: sw.socket for sw in server.pcie.switches for g in sw.gpus}
    lines = []
    for i, device in enumerate(devices):
        socket = socket_of.get(i)
        span = f"{socket * cores}-{(socket + 1) * cores - 1}" if socket is not None else ""
        lines.append({"names": names, "type": kind, "file": device, "cores": span})
    return lines


def _tree(topo: Topology, fabric: str, members: set[str]) -> list[dict[str, str]]:
    """Switch lines, leaves first. Rail-optimized fabrics get one switch per scalable unit (every node of
    an SU reaches the same rail leaves), or per rack where the leaves are per rack; pods and the top tier
    aggregate above that."""
    summary = topo.fabrics[fabric]
    nodes = sorted((topo.devices[n] for n in members), key=lambda d: d.name)
    leaf_of: dict[str, str] = {}
    leaf_pod: dict[str, int | None] = {}
    for link in topo.fabric_links(fabric, "node-leaf"):
        if link.a in members and link.a not in leaf_of:
            leaf = topo.devices[link.b]
            key = _leaf_set(topo, fabric, link.a, leaf)
            leaf_of[link.a] = key
            leaf_pod[key] = leaf.pod
    first: dict[str, list[str]] = defaultdict(list)
    for node in nodes:
        if node.name in leaf_of:
            first[leaf_of[node.name]].append(node.name)
    lines = [{"name": name, "nodes": host_range(names)} for name, names in sorted(first.items())]
    if summary.tiers <= 1 or len(first) <= 1:  # none: no partition node is on this fabric (CPU-only partitions)
        return lines
    if summary.tiers == 2:
        lines.append({"name": f"{fabric}-spine", "switches": host_range(sorted(first))})
        return lines
    pods: dict[int, list[str]] = defaultdict(list)
    for name in sorted(first):
        pods[leaf_pod.get(name) or 1].append(name)
    for pod, names in sorted(pods.items()):
        lines.append({"name": f"{fabric}-pod{pod:03d}", "switches": host_range(names)})
    lines.append({"name": f"{fabric}-core", "switches": host_range([f"{fabric}-pod{p:03d}" for p in pods])})
    return lines


def _leaf_set(topo: Topology, fabric: str, node: str, leaf: Device) -> str:
    """The switch name Slurm sees for the leaves `node` reaches."""
    summary = topo.fabrics[fabric]
    if summary.topology != "rail-optimized" or not leaf.su:
        return leaf.name
    if summary.rail_leaves == "per-rack":
        return f"{fabric}-su{leaf.su:03d}-{topo.devices[node].rack}"
    return f"{fabric}-su{leaf.su:03d}"


def _compute_fabric(bp: Blueprint) -> str | None:
    return next((name for name, f in bp.fabrics.items() if getattr(f, "kind", "") == "compute"), None)


def _tree_with_root(bp: Blueprint, topo: Topology, nodes: list[Device]) -> list[dict[str, str]]:
    fabric = _compute_fabric(bp)
    names = {n.name for n in nodes}
    lines = _tree(topo, fabric, names) if fabric and fabric in topo.fabrics else []
    placed = {n for line in lines if "nodes" in line for n in _expand(line["nodes"])}
    rest = sorted(names - placed)
    assert bp.slurm is not None
    if rest:  # nodes off the compute fabric still need a switch; they share the management network
        lines.append({"name": f"{bp.slurm.cluster_name}-ethernet", "nodes": host_range(rest)})
    tops = _tops(lines)
    if len(tops) > 1:
        lines.append({"name": f"{bp.slurm.cluster_name}-root", "switches": host_range(tops)})
    return lines


def _expand(hostlist_text: str) -> list[str]:
    import hostlist

    return list(hostlist.expand_hostlist(hostlist_text))


def _tops(lines: list[dict[str, str]]) -> list[str]:
    children = {c for line in lines if "switches" in line for c in _expand(line["switches"])}
    return [line["name"] for line in lines if line["name"] not in children]


def _blocks(bp: Blueprint, topo: Topology, nodes: list[Device]) -> tuple[list[dict[str, str]], list[int]]:
    assert bp.slurm is not None
    names = {n.name for n in nodes}
    blocks: list[dict[str, str]] = []
    for domain in topo.domains:
        members = [n for n in domain.nodes if n in names]
        if members:
            blocks.append({"name": f"block{len(blocks) + 1:03d}", "nodes": host_range(members)})
    if not blocks and bp.slurm.block_size:
        # no NVLink domain among the nodes: blocks of block_size nodes in order (rack by rack); without a
        # block_size the file lists none and check says so (CF-SLURM-004)
        size = bp.slurm.block_size
        ordered = [n.name for n in nodes]
        for start in range(0, len(ordered), size):
            blocks.append({"name": f"block{len(blocks) + 1:03d}", "nodes": host_range(ordered[start : start + size])})
    base = bp.slurm.block_size or max((len(_expand(b["nodes"])) for b in blocks), default=1)
    sizes = [base]
    while sizes[-1] * 2 <= base * len(blocks):
        sizes.append(sizes[-1] * 2)
    return blocks, sizes


def slurm_model(bp: Blueprint, catalog: Catalog, topo: Topology) -> SlurmModel:
    assert bp.slurm is not None
    slurm = bp.slurm
    nodes = _partition_nodes(bp, topo)
    inband = next((n for n, f in bp.fabrics.items() if getattr(f, "kind", "") == "inband"), None)
    controllers = [
        {"name": c, "address": str(topo.addresses[inband][c]) if inband and c in topo.addresses[inband] else ""}
        for c in slurm.controllers
    ]
    node_lines = _node_lines(bp, catalog, nodes)
    partitions = [
        {
            "name": p.name,
            "nodes": host_range([n.name for n in nodes if n.group in p.node_groups]),
            "default": p.default,
            "max_time": p.max_time,
            **_per_gpu_defaults(node_lines, p.node_groups),
        }
        for p in slurm.partitions
    ]
    plugin = {"tree": "topology/tree", "block": "topology/block", "none": None}[slurm.topology]
    imex = bool(multi_node_domains(topo, {n.name for n in nodes})) and at_least(slurm.version, IMEX_SINCE)
    model = SlurmModel(
        slurm.cluster_name,
        controllers,
        plugin,
        "switch/nvidia_imex" if imex else None,
        ["gpu"] if any(line["gres"] for line in node_lines) else [],
        node_lines,
        partitions,
        _gres_lines(bp, catalog, nodes),
    )
    if slurm.topology == "tree":
        model.switches = _tree_with_root(bp, topo, nodes)
    elif slurm.topology == "block":
        model.blocks, model.block_sizes = _blocks(bp, topo, nodes)
    return model
