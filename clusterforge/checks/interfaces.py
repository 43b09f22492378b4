"""Host interface names: every port netplan configures must be matched to an interface the node has, by a
name the catalog quotes or derives for the node's model and OS, or by what `clusterforge bind` read from
the node (clusterforge/ifnames.py). A port with neither is left out of netplan: CF-NET-001."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from .. import codes
from ..catalog.models import Server
from ..errors import Finding, Severity
from ..expand.nics import bound_hca, group_nodes, hca_devices, rdma_storage_ports
from ..ifnames import catalog_name
from .context import CheckContext, shown


def check_interface_names(ctx: CheckContext) -> Iterator[Finding]:
    """Per node group: nodes with addressed ports that have no interface name."""
    blueprint = ctx.valid.blueprint
    addressed = set(ctx.topo.segments) | set(ctx.topo.lans)
    technology = {name: getattr(f, "technology", "ethernet") for name, f in blueprint.fabrics.items()}
    groups = {group.name: (index, group) for index, group in enumerate(blueprint.node_groups)}
    cache: dict[tuple[str, str, str, bool], bool] = {}
    missing: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for link in ctx.topo.links:
        if link.tier != "node-leaf" or link.fabric not in addressed:
            continue
        device = ctx.topo.devices[link.a]
        if device.group not in groups or link.a_port in blueprint.bindings.get(link.a, {}):
            continue
        group = groups[device.group][1]
        key = device.model, group.os, link.a_port, technology.get(link.fabric) == "infiniband"
        if key not in cache:
            server = ctx.valid.catalog.require(device.model, Server)
            cache[key] = catalog_name(ctx.valid.catalog, server, group.os, link.a_port, key[3]) is not None
        if not cache[key]:
            missing[device.group][link.a].append(link.a_port)
    for name, nodes in missing.items():
        index, group = groups[name]
        ports = sorted({p for found in nodes.values() for p in found})
        yield ctx.finding(
            codes.INTERFACE_NAME_UNKNOWN,
            Severity.WARNING,
            f"node group '{name}' ({group.model} on {group.os}): {len(nodes)} node"
            f"{'s have' if len(nodes) != 1 else ' has'} ports with no known interface name: {shown(ports)}"
            f" ({len(ports)} port{'s' if len(ports) != 1 else ''}); netplan leaves them out until they are bound",
            ("node_groups", index),
            name,
            "read the nodes with `clusterforge bind` (ip -j link, ibdev2netdev, Ansible facts), include the file "
            "it writes and render again",
        )


def check_nccl_hca(ctx: CheckContext) -> Iterator[Finding]:
    """GPU groups whose nccl.conf cannot name the compute RDMA devices while RDMA-capable storage or in-band
    NICs sit beside them: without NCCL_IB_HCA NCCL uses every RDMA device, storage NICs included."""
    compute = {name for name, f in ctx.topo.fabrics.items() if f.kind == "compute"}
    on_compute = {
        ctx.topo.devices[link.a].group for link in ctx.topo.links if link.tier == "node-leaf" and link.fabric in compute
    }
    for index, group in enumerate(ctx.valid.blueprint.node_groups):
        server = ctx.valid.catalog.require(group.model, Server)
        if server.gpus is None or group.name not in on_compute:
            continue  # nccl.conf is rendered for GPU groups on a compute fabric (render/nccl.py nccl_groups)
        if "NCCL_IB_HCA" in group.nccl or hca_devices(server)[1]:
            continue
        if bound_hca(ctx.valid.blueprint.bindings, group_nodes(ctx.topo, group.name), server) is not None:
            continue
        others = rdma_storage_ports(ctx.valid.catalog, server)
        if not others:
            continue
        yield ctx.finding(
            codes.NCCL_MAY_USE_STORAGE,
            Severity.WARNING,
            f"node group '{group.name}' ({group.model}): the RDMA devices of its compute ports are not known, and "
            f"its ports {', '.join(others)} are RDMA-capable: NCCL_IB_HCA is not set, so "
            "NCCL may use them",
            ("node_groups", index),
            group.name,
            "run `clusterforge bind` with each node's ibdev2netdev output and include the file it writes",
        )
