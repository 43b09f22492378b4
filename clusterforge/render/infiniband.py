"""infiniband output family: each InfiniBand subnet as the tools take it.

- `topology.net`: the planned fabric in ibnetdiscover's topology format, which `ibsim` simulates and which
  reads beside `ibnetdiscover` output of the built fabric; the subnet manager's adapter comes first (ibsim
  attaches its clients to the first node);
- `opensm-<host>.conf` per subnet-manager host (master priority 15, standby 14): the routing engine chosen
  from the topology (`ftree` for a fat tree, `updn` otherwise), the root GUID file and the partitions;
- `root-guids.conf`: the top tier's switches (the spines, or the cores of three tiers);
- `partitions.conf`: the default partition and the blueprint's P_Keys.

GUIDs are the plan's (the simulation's); `verify --opensm-out` writes the root and partition files again with
the built fabric's GUIDs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..checks.fat_tree import fat_tree_faults
from ..model.fabric import LeafSpineFabric
from .context import RenderContext, host_range
from .handoff_common import shared_cable_table
from .infiniband_plan import IbSubnet, infiniband_fabrics, plan_subnets, sm_adapter, top_tier

ETC = "/etc/opensm"
MASTER_PRIORITY, STANDBY_PRIORITY = 15, 14


def subnet_faults(subnet: IbSubnet) -> list[str]:
    """What keeps the subnet from being a fat tree (see checks/fat_tree.py)."""
    switches = {n.name: n.tier for n in subnet.switches()}
    links = ((c.tier, c.lower.node, c.upper.node) for c in subnet.cables if c.tier != "node-leaf")
    return fat_tree_faults(subnet.tiers, switches, links)


def topology_net(subnet: IbSubnet, blueprint: str) -> str:
    """ibnetdiscover/ibsim topology: a GUID line and a header per node, then a line per cabled port."""
    ports: dict[str, list[tuple[int, str, int, str]]] = {name: [] for name in subnet.nodes}
    for cable in subnet.cables:
        low, high = cable.lower, cable.upper
        ports[low.node].append((low.port, high.node, high.port, cable.label))
        ports[high.node].append((high.port, low.node, low.port, cable.label))
    first = sm_adapter(subnet)
    switches = [n.name for n in subnet.switches()]
    adapters = [n.name for n in subnet.nodes.values() if n.kind == "Hca" and n is not first]
    order = ([first.name] if first else []) + switches + adapters
    out = [
        f"# {blueprint}: planned InfiniBand subnet '{subnet.folder.removeprefix('infiniband/')}', "
        "ibnetdiscover topology format (ibsim -s -n topology.net); rendered by clusterforge\n",
        f"# {len(switches)} switches, {len(order) - len(switches)} host adapters, "
        f"{len(subnet.cables)} cables; GUIDs are the plan's\n",
    ]
    for name in order:
        node = subnet.nodes[name]
        guid = "switchguid" if node.kind == "Switch" else "caguid"
        out.append(f'\n{guid}=0x{node.guid:016x}\n{node.kind} {node.ports} "{name}"\n')
        out.extend(
            f'[{port}] "{remote}"[{remote_port}]\t# {label}\n'
            for port, remote, remote_port, label in sorted(ports[name])
        )
    return "".join(out)


def partitions_model(subnet: IbSubnet, fabric: LeafSpineFabric, groups: dict[str, str]) -> list[dict[str, Any]]:
    """The blueprint's partitions with their members' port GUIDs (a simulated adapter's port GUID is its node
    GUID + 1). `groups`: host -> node group."""
    found = []
    for partition in fabric.partitions:
        members = [
            f"0x{node.guid + 1:016x}"
            for node in subnet.nodes.values()
            if node.kind == "Hca" and groups.get(node.device) in partition.node_groups
        ]
        if members:
            found.append(
                {
                    "name": partition.name,
                    "pkey": f"0x{partition.pkey:04x}",
                    "ipoib": partition.ipoib,
                    "members": members,
                }
            )
    return found


def opensm_model(subnet: IbSubnet, blueprint: str, host: str | None, faults: list[str]) -> dict[str, Any]:
    managers = subnet.managers
    return {
        "blueprint": blueprint,
        "subnet": subnet.folder.removeprefix("infiniband/"),
        "host": host,
        "managers": managers,
        "priority": MASTER_PRIORITY if host is None or host == managers[0] else STANDBY_PRIORITY,
        # ftree for a fat tree of two or more tiers; updn (up/down from the root GUIDs) for anything else
        "routing_engine": "ftree" if subnet.tiers >= 2 and not faults else "updn",
        "faults": faults[:5],
        "root_tier": top_tier(subnet),
        "roots": host_range([n.name for n in subnet.switches(top_tier(subnet))]),
        "etc": ETC,
    }


def render_infiniband(ctx: RenderContext) -> dict[str, str]:
    fabrics = dict(infiniband_fabrics(ctx.valid))
    if not fabrics:
        return {}
    blueprint = ctx.valid.blueprint.name
    groups = {d.name: d.group or "" for d in ctx.topo.nodes()}
    files: dict[str, str] = {}
    for subnet in plan_subnets(ctx.valid, ctx.topo, shared_cable_table(ctx)):
        faults = subnet_faults(subnet)
        folder = subnet.folder
        files[f"{folder}/topology.net"] = topology_net(subnet, blueprint)
        hosts: list[str | None] = [*subnet.managers] or [None]
        for host in hosts:
            name = f"opensm-{host}.conf" if host else "opensm.conf"
            files[f"{folder}/{name}"] = ctx.render(
                "infiniband/opensm.conf.j2", opensm_model(subnet, blueprint, host, faults)
            )
        for name, text in guid_files(subnet, fabrics[subnet.fabric], groups, blueprint, ctx.render).items():
            files[f"{folder}/{name}"] = text
    return files


def guid_files(
    subnet: IbSubnet,
    fabric: LeafSpineFabric,
    groups: dict[str, str],
    blueprint: str,
    render: Callable[[str, dict[str, Any]], str],
) -> dict[str, str]:
    """root-guids.conf and partitions.conf of `subnet` with its nodes' GUIDs (the plan's, or the built
    fabric's, which `verify --opensm-out` puts in). `groups`: host -> node group."""
    roots = [{"guid": f"0x{n.guid:016x}", "name": n.name} for n in subnet.switches(top_tier(subnet))]
    partitions = partitions_model(subnet, fabric, groups)
    return {
        "root-guids.conf": render("infiniband/root-guids.conf.j2", {"roots": roots}),
        "partitions.conf": render("infiniband/partitions.conf.j2", {"blueprint": blueprint, "partitions": partitions}),
    }
