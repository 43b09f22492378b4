"""Who holds each gateway the rendered files point at.

Every BMC, switch eth0, NVLink switch tray and power shelf points at the out-of-band pool's first address.
It is held by the leaves that take the OOB switches' uplinks (an SVI in the OOB VLAN; VRR on a leaf pair, each
leaf with its own address at the top of the pool, as the LAN gateways are), or declared external in the
blueprint (`gateway: <address>`, the site's router). Storage and in-band subnets' gateways are their leaf
pair's VRR address, routed rail segments' their leaf's SVI or /31: the leaf exists whenever the segment does.

A head node (a node group of role management: BCM, Ansible, UFM run there) reaches the BMCs through its
in-band leaves when those hold the OOB gateway: their in-band and OOB SVIs are in one routing table, so the
leaf routes between the two, and each BMC's gateway is that same leaf (the way back). Where the OOB
gateway is the site's router, no rendered device joins the two networks.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from .expand.topology import Topology
from .model.fabric import InbandFabric, OobFabric
from .validate import ValidBlueprint


@dataclass(frozen=True)
class OobGateway:
    network: str
    pool: IPv4Network
    address: IPv4Address
    holders: tuple[str, ...]
    """Leaves holding it (an SVI), in name order; empty when external or held by nothing."""
    external: bool

    def own_address(self, leaf: str) -> IPv4Address:
        """A holder's own address beside the shared gateway: the top of the pool (first leaf the highest)."""
        return self.pool.broadcast_address - 1 - self.holders.index(leaf)

    @property
    def held(self) -> bool:
        return self.external or bool(self.holders)


def oob_gateway(valid: ValidBlueprint, topo: Topology) -> OobGateway | None:
    for name, fabric in valid.blueprint.fabrics.items():
        if not isinstance(fabric, OobFabric):
            continue
        address = fabric.ipv4_pool.network_address + 1
        if isinstance(fabric.gateway, IPv4Address):
            return OobGateway(name, fabric.ipv4_pool, address, (), True)
        holders: tuple[str, ...] = ()
        if fabric.uplink_to is not None:
            leaves = {link.b for link in topo.links if link.tier == "oob-uplink" and link.fabric == name}
            leaves |= {link.a for link in topo.links if link.tier == "oob-uplink" and link.fabric == name}
            holders = tuple(sorted(d for d in leaves if topo.devices[d].group == fabric.uplink_to))
        return OobGateway(name, fabric.ipv4_pool, address, holders, False)
    return None


def head_node_leaves(valid: ValidBlueprint, topo: Topology) -> dict[str, tuple[str, ...]]:
    """Each head node (role management) -> the in-band leaves its bond is cabled to, in name order."""
    inband = {name for name, fabric in valid.blueprint.fabrics.items() if isinstance(fabric, InbandFabric)}
    heads = {group.name for group in valid.blueprint.node_groups if group.role == "management"}
    out: dict[str, set[str]] = {
        name: set() for name, device in topo.devices.items() if device.kind == "node" and device.group in heads
    }
    for link in topo.links:
        if link.tier == "node-leaf" and link.fabric in inband and link.a in out:
            out[link.a].add(link.b)
    return {node: tuple(sorted(leaves)) for node, leaves in sorted(out.items())}


def heads_off_the_oob(valid: ValidBlueprint, topo: Topology, gateway: OobGateway) -> list[str]:
    """Head nodes none of whose in-band leaves holds the OOB gateway: nothing rendered routes them to a BMC."""
    holders = set(gateway.holders)
    return [node for node, leaves in head_node_leaves(valid, topo).items() if not holders.intersection(leaves)]
