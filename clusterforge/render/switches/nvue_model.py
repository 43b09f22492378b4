"""The NVUE configuration of each Ethernet fabric switch, as the nested mapping `nv config apply` reads
(one `- set:` document; Cumulus Linux 5.x object model).

What goes into it, from the topology only: every cabled port with a description naming the far end and
the link's speed and MTU, breakout on the cages whose sub-ports are cabled; BGP unnumbered on every
switch-to-switch link (eBGP, RFC 7938: spines of a fabric share an ASN, each leaf its own, expand/asns.py);
on storage and in-band leaves one VLAN with the pair's gateway (VRR) and a bond per node (an MLAG bond with the same ID
on both leaves of a pair, or an EVPN multihoming Ethernet segment); on RoCE compute leaves the rail
segments' gateways (an SVI per rail, or the leaf's /31 on each port) and the lossless RoCE profile on the
blueprint's DSCP and PFC priority, the class NCCL marks its traffic with (NCCL_IB_TC).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import Any

from ...expand.bonds import anchor_of
from ...expand.breakouts import breakouts
from ...expand.topology import Device, LanSegment, Link, Topology
from ...gateways import OobGateway, oob_gateway
from ...model.fabric import LeafSpineFabric, OobFabric
from ...validate import ValidBlueprint

Config = dict[str, Any]
SWITCH_MTU = 9216
"""Port MTU on every fabric link: carries any host MTU up to 9,000 plus VLAN and VXLAN headers."""
LAN_VLAN = 10
"""VLAN of a storage or in-band network on its leaves (VNI 10010 under EVPN)."""
OOB_VLAN = 20
"""VLAN of the out-of-band switches' uplinks on in-band leaves."""
RAIL_VLAN_BASE = 100
"""VLAN 100 + k holds rail k's segment on a RoCE leaf (per-rail addressing)."""
VRR_MAC = "00:00:5e:00:01:01"
"""The virtual router MAC of the gateway a leaf pair shares (VRRP's range, as Cumulus Linux's VRR uses)."""
ON = "on"
CUMULUS_RELEASE = "5.14"
"""The Cumulus Linux release the files are written for: its NVUE object model (`on`/`off` values; Cumulus Linux
5.15 user guide, New and Changed NVUE Commands: 'nv set interface <interface-id> bond lacp-bypass on|off'
became 'enabled|disabled', 'mlag enable on|off' became 'mlag state enabled|disabled', in 5.15) and its
breakout tables (catalog `breakout_modes`, from the 5.14 user guide)."""


@dataclass(frozen=True)
class SwitchPort:
    name: str
    link: Link
    far: str
    far_port: str


def _ports(topo: Topology, switch: str) -> list[SwitchPort]:
    out = []
    for link in topo.links_of(switch):
        if link.tier in ("oob", "mgmt"):
            continue  # the management port (eth0) is configured apart
        if link.b == switch:
            out.append(SwitchPort(link.b_port, link, link.a, link.a_port))
        if link.a == switch:
            out.append(SwitchPort(link.a_port, link, link.b, link.b_port))
    return out


def _speed(gbps: float) -> str:
    return f"{gbps:g}G"


def _description(port: SwitchPort, rails: bool) -> str:
    rail = f", rail {port.link.rail}" if rails and port.link.rail is not None else ""
    return f"{port.far}:{port.far_port} ({port.link.tier}{rail})"


def _natural(name: str) -> tuple[int, list[object]]:
    """lo, eth0, swp1, swp1s0, swp2, ..., bond1, bond2, ..., peerlink, vlan10: as a person reads them."""
    rank = {"lo": 0, "eth": 1, "swp": 2, "bond": 3, "peerlink": 4, "vlan": 5}
    prefix = re.match(r"[a-z]*", name).group(0)  # type: ignore[union-attr]
    return rank.get(prefix, 6), [int(part) if part.isdigit() else part for part in re.split(r"([0-9]+)", name)]


class SwitchConfigs:
    """Builds the NVUE configuration of every Ethernet leaf, spine and core switch."""

    def __init__(self, valid: ValidBlueprint, topo: Topology) -> None:
        self.valid, self.topo = valid, topo
        self.fabrics = {
            name: f
            for name, f in valid.blueprint.fabrics.items()
            if isinstance(f, LeafSpineFabric) and f.technology == "ethernet" and name in topo.fabrics
        }
        self.oob = next((n for n, f in valid.blueprint.fabrics.items() if isinstance(f, OobFabric)), None)
        self.oob_gateway = oob_gateway(valid, topo)
        self.position = {name: i for i, name in enumerate(valid.blueprint.fabrics)}

    def switches(self) -> list[Device]:
        return [
            s for name in self.fabrics for tier in ("leaf", "spine", "core") for s in self.topo.switches(name, tier)
        ]

    def asn(self, switch: Device) -> int:
        return self.topo.asns[switch.name]

    def oob_address(self, switch: str) -> IPv4Address | None:
        return self.topo.addresses[self.oob].get(switch) if self.oob else None

    def router_id(self, switch: str) -> IPv4Address | None:
        return self.topo.loopbacks.get(switch) or self.oob_address(switch)

    def peer_of(self, leaf: Device) -> Device | None:
        if leaf.pair is None:
            return None
        return next(
            (s for s in self.topo.switches(leaf.group or "", "leaf") if s.pair == leaf.pair and s.name != leaf.name),
            None,
        )

    # --- building -----------------------------------------------------------------------------
    def config(self, switch: Device) -> Config:
        fabric = self.fabrics[switch.group or ""]
        ports = sorted(_ports(self.topo, switch.name), key=lambda p: p.name)
        interfaces: Config = {}
        cabled = [(p.name, p.link.speed_gbps) for p in ports]
        for parent, (breakout, _) in sorted(breakouts(self.valid.catalog, switch.model, cabled).items()):
            interfaces[parent] = {"type": "swp", "link": {"breakout": breakout}}
        for port in ports:
            interfaces[port.name] = {
                "type": "swp",
                "description": _description(port, fabric.kind == "compute"),
                "link": {"mtu": SWITCH_MTU, "speed": _speed(port.link.speed_gbps)},
            }
        top: Config = {"system": {"hostname": switch.name}, "interface": interfaces}
        self._management(switch, interfaces)
        routed = [p for p in ports if p.link.tier in ("leaf-spine", "spine-core")]
        if switch.role == "leaf":
            if fabric.kind == "compute":
                self._rails(switch, ports, interfaces, top)
                self._roce(fabric, top)
            else:
                self._lan(switch, fabric, ports, interfaces, top)
        self._bgp(switch, fabric, routed, interfaces, top)
        top["interface"] = {name: interfaces[name] for name in sorted(interfaces, key=_natural)}
        return {key: top[key] for key in sorted(top)}

    def _management(self, switch: Device, interfaces: Config) -> None:
        address = self.oob_address(switch.name)
        loopback = self.topo.loopbacks.get(switch.name)
        if loopback is not None:
            interfaces["lo"] = {"type": "loopback", "ip": {"address": {f"{loopback}/32": {}}}}
        if address is not None and self.oob is not None:
            pool = self.valid.blueprint.fabrics[self.oob].ipv4_pool
            interfaces["eth0"] = {
                "type": "eth",
                "ip": {
                    "address": {f"{address}/{pool.prefixlen}": {}},
                    "gateway": {str(pool.network_address + 1): {}},
                    "vrf": "mgmt",
                },
            }

    def _rails(self, switch: Device, ports: list[SwitchPort], interfaces: Config, top: Config) -> None:
        """Rail gateways: an SVI per rail segment (per-rail) or the leaf's side of each port's /31."""
        network = switch.group or ""
        segments = self.topo.segments.get(network, {})
        vlans: dict[int, str] = {}
        for port in ports:
            if port.link.tier != "node-leaf":
                continue
            segment = segments.get(f"{port.far}:{port.far_port}")
            if segment is None or segment.gateway is None:
                continue
            if segment.subnet.prefixlen == 31:
                interfaces[port.name]["ip"] = {"address": {f"{segment.gateway}/31": {}}}
                continue
            vlan = RAIL_VLAN_BASE + segment.rail
            vlans[vlan] = f"{segment.gateway}/{segment.subnet.prefixlen}"
            interfaces[port.name]["bridge"] = {"domain": {"br_default": {"access": vlan}}}
        for vlan, address in sorted(vlans.items()):
            interfaces[f"vlan{vlan}"] = {"type": "svi", "vlan": vlan, "ip": {"address": {address: {}}}}
        if vlans:
            top["bridge"] = {"domain": {"br_default": {"vlan": {str(v): {} for v in sorted(vlans)}}}}

    def _roce(self, fabric: LeafSpineFabric, top: Config) -> None:
        roce = getattr(fabric, "roce", None)
        if roce is None or roce.qos is None:
            return
        priority, dscp = roce.qos.pfc_priority, roce.qos.dscp
        top["qos"] = {
            "roce": {"enable": ON, "mode": "lossless"},
            "mapping": {"default-global": {"trust": "l3", "dscp": {str(dscp): {"switch-priority": priority}}}},
            "pfc": {"default-global": {"switch-priority": {str(priority): {}}}},
            "congestion-control": {"default-global": {"traffic-class": {str(priority): {"ecn": "enable"}}}},
        }

    def _lan(
        self, switch: Device, fabric: LeafSpineFabric, ports: list[SwitchPort], interfaces: Config, top: Config
    ) -> None:
        """One VLAN for the network; a bond per node on this leaf (MLAG or EVPN-MH on a pair); the gateway."""
        network = switch.group or ""
        members: dict[str, list[str]] = defaultdict(list)
        for port in ports:
            if port.link.tier == "node-leaf":
                members[port.far].append(port.name)
            elif port.link.tier == "oob-uplink":
                interfaces[port.name]["bridge"] = {"domain": {"br_default": {"access": OOB_VLAN}}}
        vlans: Config = {str(LAN_VLAN): {}}
        if any(p.link.tier == "oob-uplink" for p in ports):
            vlans[str(OOB_VLAN)] = {}
        self._node_bonds(switch, fabric, members, interfaces)
        top["bridge"] = {"domain": {"br_default": {"vlan": vlans}}}
        lans = self.topo.lans.get(network, {})
        lan = next((lans[node] for node in members if node in lans), None)
        if lan is not None:
            self._gateway(switch, lan, interfaces)
        gateway = self.oob_gateway
        if gateway is not None and switch.name in gateway.holders:
            self._oob_gateway(switch, gateway, interfaces)
        if fabric.dual_homing == "mlag":
            self._mlag(switch, ports, interfaces, top)
        elif fabric.dual_homing == "evpn-mh":
            self._evpn(switch, ports, interfaces, top, vlans)

    def _node_bonds(
        self, switch: Device, fabric: LeafSpineFabric, members: dict[str, list[str]], interfaces: Config
    ) -> None:
        """bond<n> for each node on the leaf, n its number on the leaf's pair (expand/bonds.py, kept by the lock
        file): both leaves of a pair number alike."""
        numbers = self.topo.bonds.get(anchor_of(self.topo, switch).name, {})
        for node in sorted(members, key=lambda n: (numbers.get(n, 0), n)):
            number = numbers.get(node, 0)
            bond: Config = {"member": {m: {} for m in members[node]}, "lacp-bypass": ON}
            entry: Config = {"type": "bond", "description": f"{node} ({switch.group} bond)", "bond": bond}
            entry["link"] = {"mtu": SWITCH_MTU}
            entry["bridge"] = {"domain": {"br_default": {"access": LAN_VLAN}}}
            if fabric.dual_homing == "mlag":
                bond["mlag"] = {"id": number}
            elif fabric.dual_homing == "evpn-mh":
                segment = {"enable": ON, "local-id": number, "mac-address": self._segment_mac(switch)}
                entry["evpn"] = {"multihoming": {"segment": segment}}
            interfaces[f"bond{number}"] = entry

    def _evpn(self, switch: Device, ports: list[SwitchPort], interfaces: Config, top: Config, vlans: Config) -> None:
        """EVPN multihoming: the VLAN as a VXLAN VNI from the loopback, the spine links as its uplinks."""
        top["evpn"] = {"enable": ON, "multihoming": {"enable": ON}}
        top["nve"] = {"vxlan": {"enable": ON, "source": {"address": str(self.topo.loopbacks.get(switch.name))}}}
        vlans[str(LAN_VLAN)] = {"vni": {str(10000 + LAN_VLAN): {}}}
        for port in ports:
            if port.link.tier == "leaf-spine":
                interfaces[port.name]["evpn"] = {"multihoming": {"uplink": ON}}

    def network_number(self, switch: Device) -> int:
        """The number of the switch's network (its place in the blueprint, kept by the lock file)."""
        network = switch.group or ""
        return self.topo.numbers.get(f"network/{network}", self.position[network])

    def _segment_mac(self, switch: Device) -> str:
        """The Ethernet segment MAC both leaves of a pair give their bonds (the LACP system ID hosts see)."""
        fabric = self.network_number(switch)
        return f"44:38:39:be:{fabric:02x}:{switch.pair or 0:02x}"

    def _gateway(self, switch: Device, lan: LanSegment, interfaces: Config) -> None:
        """The subnet's gateway: on the leaf itself, or shared by a pair (VRR) beside each leaf's own address."""
        if switch.pair is None:
            interfaces[f"vlan{LAN_VLAN}"] = {
                "type": "svi",
                "vlan": LAN_VLAN,
                "ip": {"address": {f"{lan.gateway}/{lan.subnet.prefixlen}": {}}},
            }
            return
        side = 1 if switch.index % 2 else 2  # the pair's first leaf takes the top address, the second the next
        own = lan.subnet.broadcast_address - side
        interfaces[f"vlan{LAN_VLAN}"] = {
            "type": "svi",
            "vlan": LAN_VLAN,
            "ip": {
                "address": {f"{own}/{lan.subnet.prefixlen}": {}},
                "vrr": {"enable": ON, "address": {f"{lan.gateway}/{lan.subnet.prefixlen}": {}}, "mac-address": VRR_MAC},
            },
        }

    def _oob_gateway(self, switch: Device, gateway: OobGateway, interfaces: Config) -> None:
        """The out-of-band network's gateway, which every BMC and management port points at: an SVI in the OOB
        VLAN, shared by the pair (VRR) beside each leaf's own address at the top of the pool."""
        prefix = gateway.pool.prefixlen
        ip: Config = {"address": {f"{gateway.own_address(switch.name)}/{prefix}": {}}}
        if len(gateway.holders) > 1:
            ip["vrr"] = {"enable": ON, "address": {f"{gateway.address}/{prefix}": {}}, "mac-address": VRR_MAC}
        else:
            ip = {"address": {f"{gateway.address}/{prefix}": {}}}
        interfaces[f"vlan{OOB_VLAN}"] = {"type": "svi", "vlan": OOB_VLAN, "ip": ip}

    def _mlag(self, switch: Device, ports: list[SwitchPort], interfaces: Config, top: Config) -> None:
        peer_ports = [p.name for p in ports if p.link.tier == "leaf-peer"]
        interfaces["peerlink"] = {"type": "peerlink", "bond": {"member": {p: {} for p in peer_ports}}}
        interfaces["peerlink.4094"] = {"type": "sub", "base-interface": "peerlink", "vlan": 4094}
        fabric = self.network_number(switch)
        mlag: Config = {
            "enable": ON,
            "mac-address": f"44:38:39:ff:{fabric:02x}:{switch.pair or 0:02x}",
            "peer-ip": "linklocal",
            "priority": 1000 if switch.index % 2 else 2000,
        }
        peer = self.peer_of(switch)
        backup = self.oob_address(peer.name) if peer is not None else None
        if backup is not None:
            mlag["backup"] = {str(backup): {"vrf": "mgmt"}}
        top["mlag"] = mlag

    def _bgp(
        self, switch: Device, fabric: LeafSpineFabric, routed: list[SwitchPort], interfaces: Config, top: Config
    ) -> None:
        """BGP unnumbered on every switch-to-switch link; EVPN address family where EVPN-MH runs."""
        neighbors = [p.name for p in routed]
        if not neighbors:
            return
        if "peerlink.4094" in interfaces:
            neighbors.append("peerlink.4094")
        evpn = fabric.dual_homing == "evpn-mh"
        families: Config = {"ipv4-unicast": {"enable": ON, "redistribute": {"connected": {"enable": ON}}}}
        if evpn:
            families["l2vpn-evpn"] = {"enable": ON}
        router: Config = {"enable": ON, "autonomous-system": self.asn(switch)}
        router_id = self.router_id(switch.name)
        if router_id is not None:
            router["router-id"] = str(router_id)
        top["router"] = {"bgp": router}
        neighbor: Config = {"type": "unnumbered", "remote-as": "external"}
        if evpn:
            neighbor["address-family"] = {"l2vpn-evpn": {"enable": ON}}
        top["vrf"] = {
            "default": {
                "router": {
                    "bgp": {
                        "enable": ON,
                        "address-family": families,
                        "neighbor": {name: dict(neighbor) for name in sorted(neighbors, key=_natural)},
                    }
                }
            }
        }
