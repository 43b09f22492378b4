"""The network Ansible reaches each node group on (its nodes' `ansible_host`).

Named in the group's `management_network`, else the first in-band network the group is attached to. A group
on neither is an error (checks/management.py, CF-MGMT-001): its BMCs' out-of-band network is reached only when
named, and a storage network is never chosen unless named, so that no render reaches the nodes on an address
nobody meant.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Blueprint, OobFabric
from .topology import Topology


@dataclass(frozen=True)
class Management:
    network: str | None
    """The network Ansible uses for the group, or None when there is none."""
    how: str
    """'named', 'in-band', 'bmc' (no in-band network: the out-of-band one), 'none', or 'wrong' (named, but a
    compute fabric or a network the group is not on)."""


def management_networks(bp: Blueprint, topo: Topology) -> dict[str, Management]:
    """Node group -> the network its nodes are managed on, and how it was chosen."""
    attached = topo.group_fabrics()
    oob = {
        name: fabric.node_groups
        for name, fabric in bp.fabrics.items()
        if isinstance(fabric, OobFabric) and name in topo.addresses
    }
    out: dict[str, Management] = {}
    for group in bp.node_groups:
        on = attached.get(group.name, set())
        bmc = next((name for name, groups in oob.items() if groups is None or group.name in groups), None)
        named = group.management_network
        if named is not None:
            fabric = bp.fabrics.get(named)
            usable = fabric is not None and fabric.kind != "compute" and (named in on or named == bmc)
            out[group.name] = Management(named, "named" if usable else "wrong")
            continue
        inband = next((name for name, fabric in bp.fabrics.items() if fabric.kind == "inband" and name in on), None)
        if inband is not None:
            out[group.name] = Management(inband, "in-band")
        else:
            out[group.name] = Management(bmc, "bmc" if bmc is not None else "none")
    return out
