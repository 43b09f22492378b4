"""The expand stage: a valid blueprint -> a `Topology`, by an ordered list of expanders."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import BlueprintError, Finding, Severity
from ..lockfile import Keep
from ..runtime.gc_paused import gc_paused
from ..validate import ValidBlueprint
from .addressing import assign_addresses
from .asns import assign_asns
from .bonds import assign_bonds
from .cabling import cable_links
from .context import ExpandContext
from .fabric import build_fabrics
from .identity import keep_identities
from .numbers import assign_numbers
from .nvlink import build_domains
from .oob import build_oob
from .outlets import assign_outlets
from .placement import pin_slots, place_nodes, place_racks, unpin_slots
from .topology import Topology

Expander = Callable[[ExpandContext], None]
IDENTITY_FAMILY = "CF-IDENT-"

# Order matters: nodes need racks; NVLink domains and fabrics need placed nodes; each fabric places its
# switches into racks after the nodes, so nodes get the lower U first.
EXPANDERS: tuple[Expander, ...] = (
    place_racks,
    pin_slots,  # with a lock file: the slots it holds kept for their devices
    place_nodes,
    build_domains,
    build_fabrics,
    build_oob,  # after every switch is placed: their management ports are wired too
    unpin_slots,  # every device placed: slots held for devices no longer there are free again
    cable_links,  # after all links exist and every device has its rack and U
    assign_outlets,
    assign_addresses,
    assign_asns,  # with a lock file: the ASNs it holds kept
    assign_numbers,  # networks' and node groups' numbers (switch MACs, simulated GUIDs), kept likewise
    assign_bonds,  # each node's bond on its storage or in-band leaf, kept likewise
    keep_identities,  # last: what the lock file holds replaces what the fixed order gave
)


def expand(valid: ValidBlueprint, keep: Keep | None = None) -> tuple[Topology, list[Finding]]:
    """Build the topology, keeping the identities of `keep`'s lock file; raise BlueprintError when an
    expander reports an error."""
    ctx = ExpandContext(valid, Topology(valid.blueprint.name), keep=keep or Keep())
    with gc_paused():
        for expander in EXPANDERS:
            expander(ctx)
            if ctx.failed:
                raise BlueprintError(ctx.findings)
    warnings = [f for f in ctx.findings if f.severity is not Severity.ERROR]
    ctx.topo.identity_findings = [f for f in warnings if f.code.startswith(IDENTITY_FAMILY)]
    ctx.topo.afresh = ctx.keep.names_afresh
    return ctx.topo, [f for f in warnings if not f.code.startswith(IDENTITY_FAMILY)]


__all__ = ["EXPANDERS", "Topology", "expand"]
