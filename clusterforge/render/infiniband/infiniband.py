"""infiniband output family: each InfiniBand subnet as the tools take it.

- `topology.net`: the planned fabric in ibnetdiscover's topology format, which `ibsim` simulates and which
  reads beside `ibnetdiscover` output of the built fabric; the subnet manager's adapter comes first (ibsim
  attaches its clients to the first node);
- `opensm-<host>.conf` per subnet-manager host (master priority 15, standby 14): the routing engine chosen
  from the topology (`ftree` for a fat tree, `updn` otherwise), the root GUID file and the partitions;
- `sm-<switch>.mlnxos` where the switches run the subnet manager (`subnet_manager: switches`): the MLNX-OS
  commands that enable it on the first two switches of the top tier, master and standby;
- `root-guids.conf`: the top tier's switches (the spines, or the cores of three tiers);
- `partitions.conf`: the default partition and the blueprint's P_Keys.

GUIDs are the plan's (the simulation's); `verify --opensm-out` writes the root and partition files again with
the built fabric's GUIDs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from operator import add
from typing import Any

from ...checks.fat_tree import fat_tree_faults
from ...model.fabric import LeafSpineFabric
from ...output.pieces import FileText, Pieces
from ..context import RenderContext, host_range
from ..handoff.handoff_common import shared_cable_table
from .infiniband_plan import IbLinks, IbNode, IbSubnet, infiniband_fabrics, plan_subnets, sm_adapter, take, top_tier

ETC = "/etc/opensm"
MASTER_PRIORITY, STANDBY_PRIORITY = 15, 14


def subnet_faults(subnet: IbSubnet) -> Sequence[str]:
    """What keeps the subnet from being a fat tree (see checks/fat_tree.py)."""
    switches = {n.name: n.tier for n in subnet.switches()}
    return fat_tree_faults(subnet.tiers, switches, subnet.links.switch_links())


_NODE_LINES = '\n{}=0x{:016x}\n{} {} "{}"\n'.format
"""A node's GUID line and header."""


def topology_net(subnet: IbSubnet, blueprint: str, orders: LineOrders | None = None) -> str:
    """ibnetdiscover/ibsim topology: a GUID line and a header per node, then a line per cabled port. `orders`:
    the line orders of the subnets rendered before (the planes of a per-rail fabric share theirs)."""
    first = sm_adapter(subnet)
    switches = subnet.switches()
    adapters = [n for n in subnet.nodes.values() if n.kind == "Hca" and n is not first]
    order = ([first] if first else []) + switches + adapters
    head = (
        f"# {blueprint}: planned InfiniBand subnet '{subnet.folder.removeprefix('infiniband/')}', "
        "ibnetdiscover topology format (ibsim -s -n topology.net); rendered by clusterforge\n"
        f"# {len(switches)} switches, {len(order) - len(switches)} host adapters, "
        f"{len(subnet.links)} cables; GUIDs are the plan's\n"
    )
    return head + "".join(_node_texts(subnet.links, order, orders or LineOrders()))


class LineOrders:
    """The order of a subnet's lines, kept for the next subnet: the planes of a per-rail fabric are alike, so
    their lines fall in the same order, which is then sorted once."""

    def __init__(self) -> None:
        self.keys: list[int] = []
        self.placed: list[int] = []

    def placed_by(self, keys: list[int], tie: Callable[[], list[tuple[str, int, str]]]) -> list[int]:
        """The indexes of `keys` in key order; `tie()` orders lines of equal keys."""
        if keys != self.keys:
            placed = sorted(range(len(keys)), key=keys.__getitem__)
            if len(set(keys)) < len(keys):  # two cables on one port (a fault the checks report): the rest decides
                rest = tie()
                placed.sort(key=lambda i: (keys[i], rest[i]))
                return placed  # the tie depends on more than the keys: not kept
            self.keys, self.placed = keys, placed
        return self.placed


def _node_texts(links: IbLinks, order: list[IbNode], orders: LineOrders) -> list[str]:
    """Each node's lines in `order`: its GUID line and header, then a line per cabled port by port number
    (then remote node, remote port and label). One sort of integers puts them in place: a node's lines are
    keyed by its position, its header just before its ports."""
    nodes, ports, remotes, remote_ports, labels = links.ends()
    headers = [
        _NODE_LINES("switchguid" if n.kind == "Switch" else "caguid", n.guid, n.kind, n.ports, n.name) for n in order
    ]
    base = max(ports, default=0) + 2
    position = {node.name: i * base for i, node in enumerate(order)}
    keys = [*range(0, len(order) * base, base), *map(add, map(position.__getitem__, nodes), map(add, ports, repeat(1)))]
    placed = orders.placed_by(
        keys, lambda: [("", 0, "")] * len(headers) + list(zip(remotes, remote_ports, labels, strict=True))
    )
    numbers = [str(port) for port in range(base)]  # port numbers as text, made once per number
    lines = [
        f'[{numbers[port]}] "{remote}"[{numbers[remote_port]}]\t# {label}\n'
        for port, remote, remote_port, label in zip(ports, remotes, remote_ports, labels, strict=True)
    ]
    return take(headers + lines, placed)


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


def opensm_model(subnet: IbSubnet, blueprint: str, host: str | None, faults: Sequence[str]) -> dict[str, Any]:
    managers = subnet.managers
    io = io_adapters(subnet)
    return {
        "io_nodes": [n.name for n in io],
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


def _made_when_written(subnet: IbSubnet, blueprint: str, orders: LineOrders) -> Pieces:
    """A subnet's topology.net, made as it is written: made at once, the files of every subnet stood whole in
    memory together with the subnets they were made from (at a million GPUs 16 subnets, 0.33 GiB of text, in
    the checking process at the render's peak); the subnets are kept, one text at a time is made."""
    return Pieces(lambda: (topology_net(subnet, blueprint, orders),))


def render_infiniband(ctx: RenderContext) -> dict[str, FileText]:
    fabrics = dict(infiniband_fabrics(ctx.valid))
    if not fabrics:
        return {}
    blueprint = ctx.valid.blueprint.name
    groups = {d.name: d.group or "" for d in ctx.topo.nodes()}
    files: dict[str, FileText] = {}
    orders = LineOrders()
    for subnet in plan_subnets(ctx.valid, ctx.topo, shared_cable_table(ctx)):
        faults = subnet_faults(subnet)
        folder = subnet.folder
        files[f"{folder}/topology.net"] = _made_when_written(subnet, blueprint, orders)
        hosts: list[str | None] = [*subnet.managers] or [None]
        for host in hosts:
            name = f"opensm-{host}.conf" if host else "opensm.conf"
            files[f"{folder}/{name}"] = ctx.render(
                "infiniband/opensm.conf.j2", opensm_model(subnet, blueprint, host, faults)
            )
        for name, text in guid_files(subnet, fabrics[subnet.fabric], groups, blueprint, ctx.render).items():
            files[f"{folder}/{name}"] = text
        if fabrics[subnet.fabric].subnet_manager == "switches":
            for switch, model in switch_sm_models(subnet, blueprint).items():
                files[f"{folder}/sm-{switch}.mlnxos"] = ctx.render("infiniband/switch-sm.mlnxos.j2", model)
    return files


def switch_sm_models(subnet: IbSubnet, blueprint: str) -> dict[str, dict[str, Any]]:
    """The subnet manager on the switches: the first two of the top tier, master (priority 15) and standby
    (14), each enabled with MLNX-OS `ib smnode <name> enable` and `sm-priority` (MLNX-OS user manual,
    Subnet Manager)."""
    switches = [n.name for n in subnet.switches(top_tier(subnet))][:2]
    return {
        name: {
            "blueprint": blueprint,
            "subnet": subnet.folder.removeprefix("infiniband/"),
            "switch": name,
            "role": "master" if i == 0 else "standby",
            "others": [s for s in switches if s != name],
            "priority": MASTER_PRIORITY if i == 0 else STANDBY_PRIORITY,
            "nodes": len(subnet.nodes),
        }
        for i, name in enumerate(switches)
    }


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
    files = {
        "root-guids.conf": render("infiniband/root-guids.conf.j2", {"roots": roots}),
        "partitions.conf": render("infiniband/partitions.conf.j2", {"blueprint": blueprint, "partitions": partitions}),
    }
    io = [{"guid": f"0x{n.guid + 1:016x}", "name": n.name} for n in io_adapters(subnet)]
    if io:  # the same one-GUID-a-line form as the root file
        files["io-guids.conf"] = render("infiniband/root-guids.conf.j2", {"roots": io})
    return files


def io_adapters(subnet: IbSubnet) -> list[IbNode]:
    """Host adapters cabled to a switch above the leaves (a UFM on a spine's free port): OpenSM's fat-tree
    engine takes them as I/O nodes from `io_guid_file`, else it refuses the fabric (ERR AB26, a compute node
    on a switch of another rank than the leaves; measured with 96 DGX H100 and two UFM on the spines)."""
    above = {n.name for n in subnet.switches() if n.tier != "leaf"}
    links = subnet.links
    names = {
        low
        for tier, low, high in zip(links.tiers, links.lower, links.upper, strict=True)
        if tier == "node-leaf" and high in above
    }
    return [subnet.nodes[name] for name in sorted(names)]
