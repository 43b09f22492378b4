"""Every gateway the rendered files point at is held by a rendered device or declared external
(clusterforge/gateways.py): the out-of-band gateway of every BMC and management port, on one leaf or leaf
pair (one VLAN cannot span pairs), apart from every address handed out; and the head nodes reach the BMCs
behind it (CF-ADDR-006)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from ..gateways import heads_off_the_oob, oob_gateway
from .context import CheckContext, shown


def check_gateways(ctx: CheckContext) -> Iterator[Finding]:
    gateway = oob_gateway(ctx.valid, ctx.topo)
    if gateway is None:
        return
    users = len(ctx.topo.addresses.get(gateway.network, {}))
    path = ("fabrics", gateway.network)
    if not gateway.held:
        yield ctx.finding(
            codes.GATEWAY_HELD_BY_NOTHING,
            Severity.ERROR,
            f"network '{gateway.network}': {users} devices (BMCs and switch management ports) point at gateway "
            f"{gateway.address}, which no rendered device holds",
            path,
            gateway.network,
            "set uplink_to (its leaves hold the gateway) or gateway: "
            f"{gateway.address} when the site's router holds it",
        )
        return
    pairs = {(ctx.topo.devices[h].group, ctx.topo.devices[h].pair) for h in gateway.holders}
    if len(gateway.holders) > 1 and (len(pairs) > 1 or None in {p for _, p in pairs}):
        yield ctx.finding(
            codes.GATEWAY_HELD_BY_NOTHING,
            Severity.ERROR,
            f"network '{gateway.network}': the OOB uplinks land on {', '.join(gateway.holders)}, not one leaf pair: "
            f"the VLAN of gateway {gateway.address} would be split, and part of the devices would reach none",
            path,
            gateway.network,
        )
    off = heads_off_the_oob(ctx.valid, ctx.topo, gateway)
    if off:
        heads = shown(off, counted=True)
        where = f"the site's router {gateway.address}" if gateway.external else "leaves they are not cabled to"
        yield ctx.finding(
            codes.HEAD_NODES_OFF_THE_OOB,
            Severity.WARNING,
            f"network '{gateway.network}': head nodes {heads} have no leg on it and no rendered route to it "
            f"(its gateway is {where}): BCM, Ansible and UFM on them reach no BMC unless the site routes "
            "between the in-band and out-of-band networks",
            path,
            gateway.network,
            "set uplink_to: <the in-band network> on the out-of-band network (its leaves then route between "
            "the two), or suppress with the site's routing as the reason",
        )
    taken = set(ctx.topo.addresses.get(gateway.network, {}).values())
    clash = [h for h in gateway.holders if gateway.own_address(h) in taken]
    if clash:
        yield ctx.finding(
            codes.GATEWAY_HELD_BY_NOTHING,
            Severity.ERROR,
            f"network '{gateway.network}': the gateway's leaves' own addresses (top of {gateway.pool}) are handed "
            f"out to devices too: {', '.join(clash)}",
            path,
            gateway.network,
            "use a larger out-of-band pool",
        )
