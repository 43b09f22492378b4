"""Every node group has a network Ansible reaches it on, chosen in the open (expand/management.py): the
in-band network it is on, else the one its management_network names; a group on neither is an error, even
when its BMCs could be reached (`management_network: oob` says so)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from ..expand.management import management_networks
from .context import CheckContext


def check_management(ctx: CheckContext) -> Iterator[Finding]:
    bp = ctx.valid.blueprint
    chosen = management_networks(bp, ctx.topo)
    on_storage = ctx.topo.group_fabrics()
    modelled = any(fabric.kind in ("inband", "oob") for fabric in bp.fabrics.values())
    for i, group in enumerate(bp.node_groups):
        management = chosen[group.name]
        storage = [name for name in on_storage.get(group.name, ()) if bp.fabrics[name].kind == "storage"]
        if management.how == "bmc" and bp.version < 2:  # version 1 reached the BMCs implicitly
            yield ctx.finding(
                codes.OLDER_VERSION,
                Severity.WARNING,
                f"blueprint version {bp.version}: node group '{group.name}' is on no in-band network and is "
                f"reached on its BMCs (network '{management.network}'), as version 1 did implicitly; version 2 "
                f"needs management_network: {management.network}",
                ("node_groups", i, "name"),
                group.name,
                "run `clusterforge migrate BLUEPRINT --write` (it writes the management_network and version: 2)",
            )
        elif management.how == "bmc":  # reached on its BMCs only when named: a storage network never
            on = f", not on storage network '{storage[0]}'" if storage else ""
            yield ctx.finding(
                codes.MANAGED_ON_BMC,
                Severity.ERROR,
                f"node group '{group.name}' is on no in-band network and names no management_network: Ansible "
                f"would reach its nodes on their BMC addresses (network '{management.network}'){on}",
                ("node_groups", i, "name"),
                group.name,
                "attach the group to an in-band network, or name the network Ansible uses in "
                f"node_groups[{i}].management_network ('{management.network}' for the BMCs)",
            )
        elif management.how == "none" and modelled:  # a blueprint of racks and power alone plans no management
            yield ctx.finding(
                codes.UNREACHABLE_GROUP,
                Severity.ERROR,
                f"node group '{group.name}' is on no in-band or out-of-band network: Ansible cannot reach its nodes",
                ("node_groups", i, "name"),
                group.name,
                "attach the group to an in-band or out-of-band network, or name one in management_network",
            )
        elif management.how == "wrong":
            fabric = bp.fabrics[management.network or ""]
            why = "is a compute fabric" if fabric.kind == "compute" else "is not a network the group is on"
            yield ctx.finding(
                codes.WRONG_MANAGEMENT_NETWORK,
                Severity.ERROR,
                f"node group '{group.name}': management_network '{management.network}' {why}; name an in-band, "
                "out-of-band or storage network the group is on",
                ("node_groups", i, "management_network"),
                group.name,
            )
