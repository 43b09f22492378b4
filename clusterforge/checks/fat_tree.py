"""Is an InfiniBand fabric a fat tree, as OpenSM's fat-tree routing engine needs? Each switch-to-switch level
(leaf to spine, spine to core) must join every lower switch to the upper switches of its group, and to all of
them: a leaf missing one spine link makes OpenSM's engine refuse the fabric (ERR AB0B) and fall back to
min-hop routing. The rule reads only switch pairs, so it judges the planned fabric and a discovered one alike.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

from .. import codes
from ..errors import Finding, Severity
from ..expand.union_find import UnionFind
from .context import CheckContext

SWITCH_LEVELS = (("leaf-spine", "leaf"), ("spine-core", "spine"))
"""Each switch-to-switch link tier and the tier of its lower end."""


def level_faults(lower: Iterable[str], pairs: Iterable[tuple[str, str]]) -> list[str]:
    """What keeps one level from being a fat tree, in words, sorted: a lower switch without uplinks, one that
    misses an upper switch its group reaches (a group: lower switches joined through upper ones), or a pair
    of switches with another number of links than the group's others (OpenSM's ERR AB0B: "different number
    of ports in an upward port group")."""
    links: Counter[tuple[str, str]] = Counter(pairs)
    ups: dict[str, set[str]] = defaultdict(set)
    joins = UnionFind()
    for low, high in links:
        ups[low].add(high)
        joins.join(low, high)
    group_of = {low: joins.root(low) for low in ups}  # each lower switch's group, once all are joined
    group_ups: dict[str, set[str]] = defaultdict(set)
    widths: dict[str, Counter[int]] = defaultdict(Counter)
    for (low, _), count in links.items():
        widths[group_of[low]][count] += 1
    for low, highs in ups.items():
        group_ups[group_of[low]] |= highs
    faults = []
    for low in sorted(set(lower)):
        if not ups.get(low):
            faults.append(f"{low} has no uplink")
            continue
        missing = sorted(group_ups[group_of[low]] - ups[low])
        faults.extend(f"{low} has no link to {high}" for high in missing)
        usual = widths[group_of[low]].most_common(1)[0][0]
        faults.extend(
            f"{low} has {_links(links[low, high])} to {high}, where its group has {usual}"
            for high in sorted(ups[low])
            if links[low, high] != usual
        )
    return faults


def _links(count: int) -> str:
    return f"{count} link{'s' if count != 1 else ''}"


def fat_tree_faults(tiers: int, switches: dict[str, str], links: Iterable[tuple[str, str, str]]) -> list[str]:
    """Faults of a whole fabric. `switches`: name -> tier; `links`: (link tier, lower, upper) of the
    switch-to-switch links. A fabric of one tier (a single switch) is no tree and has none."""
    by_level: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for tier, low, high in links:
        by_level[tier].append((low, high))
    faults: list[str] = []
    for level, (link_tier, lower_tier) in enumerate(SWITCH_LEVELS, 2):
        if tiers < level:
            break
        lower = [name for name, tier in switches.items() if tier == lower_tier]
        faults.extend(level_faults(lower, by_level[link_tier]))
    return faults


def topology_faults(ctx: CheckContext, fabric: str) -> list[str]:
    topo = ctx.topo
    switches = {d.name: d.role for d in topo.switches(fabric) if d.role != "oob"}
    links = [(link.tier, link.a, link.b) for link in topo.fabric_links(fabric) if link.tier != "node-leaf"]
    return fat_tree_faults(topo.fabrics[fabric].tiers, switches, links)


def check_fat_trees(ctx: CheckContext) -> Iterator[Finding]:
    """Multi-tier InfiniBand fabrics the fat-tree routing engine would refuse (they are routed with updn)."""
    for name, summary in ctx.topo.fabrics.items():
        if summary.technology != "infiniband" or summary.tiers < 2:
            continue
        faults = topology_faults(ctx, name)
        if faults:
            shown = ", ".join(faults[:3]) + (f" and {len(faults) - 3} more" if len(faults) > 3 else "")
            yield ctx.finding(
                codes.NOT_A_FAT_TREE,
                Severity.WARNING,
                f"fabric '{name}' is not a fat tree: {shown}; OpenSM's fat-tree routing refuses it, so the "
                "rendered OpenSM configuration routes it with updn",
                ("fabrics", name),
                name,
            )
