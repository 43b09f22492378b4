"""Is an InfiniBand fabric a fat tree, as OpenSM's fat-tree routing engine needs? Each switch-to-switch level
(leaf to spine, spine to core) must join every lower switch to the upper switches of its group, and to all of
them: a leaf missing one spine link makes OpenSM's engine refuse the fabric (ERR AB0B) and fall back to
min-hop routing. The rule reads only switch pairs, so it judges the planned fabric and a discovered one alike.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from itertools import islice
from operator import itemgetter
from typing import overload

from .. import codes
from ..errors import Finding, Severity
from ..expand.topology import Link
from ..expand.union_find import UnionFind
from .context import CheckContext

SWITCH_LEVELS = (("leaf-spine", "leaf"), ("spine-core", "spine"))
"""Each switch-to-switch link tier and the tier of its lower end."""


def level_faults(lower: Iterable[str], pairs: Iterable[tuple[str, str]]) -> list[str]:
    """What keeps one level from being a fat tree, in words, sorted: a lower switch without uplinks, one that
    misses an upper switch its group reaches (a group: lower switches joined through upper ones), or a pair
    of switches with another number of links than the group's others (OpenSM's ERR AB0B: "different number
    of ports in an upward port group")."""
    return list(_level_faults(lower, pairs))


class Faults(Sequence[str]):
    """Faults counted without being written: a fabric that is far from a fat tree (a core tier of one group
    over thousands of spines) has millions, of which a finding shows a few; each lower switch's are put in
    words only when read."""

    def __init__(self, parts: list[tuple[int, Callable[[], list[str]]]]) -> None:
        self._parts = [(count, words) for count, words in parts if count]
        self._count = sum(count for count, _ in self._parts)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        for _, words in self._parts:
            yield from words()

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, int):
            return self[index : index + 1][0] if index >= 0 else list(self)[index]
        start, stop, step = index.indices(self._count)
        return list(islice(self, start, stop, step)) if step > 0 else list(self)[index]


def _level_faults(lower: Iterable[str], pairs: Iterable[tuple[str, str]]) -> Faults:
    links: Counter[tuple[str, str]] = Counter(pairs)
    ups: dict[str, dict[str, int]] = defaultdict(dict)
    """Lower switch -> its upper switches -> the links to each."""
    for (low, high), count in links.items():
        ups[low][high] = count
    group_of = _groups(ups)
    group_ups: dict[str, set[str]] = defaultdict(set)
    for low, highs in ups.items():
        group_ups[group_of[low]].update(highs)
    # the links per pair in each group, in the order the pairs come (the first of equally common wins)
    widths: dict[str, Counter[int]] = defaultdict(Counter)
    pair_groups = map(group_of.__getitem__, map(itemgetter(0), links))
    for (group, count), pair_count in Counter(zip(pair_groups, links.values(), strict=True)).items():
        widths[group][count] += pair_count
    usual = {group: counts.most_common(1)[0][0] for group, counts in widths.items()}

    def missing(low: str, reached: dict[str, int]) -> list[str]:
        return [f"{low} has no link to {high}" for high in sorted(group_ups[group_of[low]].difference(reached))]

    def uneven(low: str, reached: dict[str, int]) -> list[str]:
        width = usual[group_of[low]]
        return [
            f"{low} has {_links(count)} to {high}, where its group has {width}"
            for high, count in sorted(reached.items())
            if count != width
        ]

    parts: list[tuple[int, Callable[[], list[str]]]] = []
    for low in sorted(set(lower)):
        reached = ups.get(low)
        if not reached:
            parts.append((1, partial(_no_uplink, low)))
            continue
        group = group_of[low]
        parts.append((len(group_ups[group]) - len(reached), partial(missing, low, reached)))
        if len(widths[group]) > 1:
            width = usual[group]
            parts.append((sum(c != width for c in reached.values()), partial(uneven, low, reached)))
    return Faults(parts)


def _groups(ups: dict[str, dict[str, int]]) -> dict[str, str]:
    """Each lower switch's group: lower switches joined through the upper switches they share. Joined per
    distinct set of upper switches (in a fat tree, one per pod), not per link."""
    kinds = {low: frozenset(highs) for low, highs in ups.items()}
    joins = UnionFind()
    for highs in dict.fromkeys(kinds.values()):
        first = next(iter(highs))
        for high in highs:
            joins.join(high, first)
    return {low: joins.root(next(iter(highs))) for low, highs in kinds.items()}


def _no_uplink(low: str) -> list[str]:
    return [f"{low} has no uplink"]


def _links(count: int) -> str:
    return f"{count} link{'s' if count != 1 else ''}"


def fat_tree_faults(tiers: int, switches: dict[str, str], links: Iterable[tuple[str, str, str]]) -> Faults:
    """Faults of a whole fabric. `switches`: name -> tier; `links`: (link tier, lower, upper) of the
    switch-to-switch links. A fabric of one tier (a single switch) is no tree and has none."""
    by_level: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for tier, low, high in links:
        by_level[tier].append((low, high))
    return _levels_faults(tiers, switches, by_level)


def _levels_faults(tiers: int, switches: dict[str, str], by_level: Mapping[str, Iterable[tuple[str, str]]]) -> Faults:
    parts: list[tuple[int, Callable[[], list[str]]]] = []
    for level, (link_tier, lower_tier) in enumerate(SWITCH_LEVELS, 2):
        if tiers < level:
            break
        lower = [name for name, tier in switches.items() if tier == lower_tier]
        parts.extend(_level_faults(lower, by_level.get(link_tier, ()))._parts)
    return Faults(parts)


def topology_faults(ctx: CheckContext, fabric: str) -> Faults:
    topo = ctx.topo
    switches = {d.name: d.role for d in topo.switches(fabric) if d.role != "oob"}
    by_level: dict[str, list[Link]] = {tier: [] for tier, _ in SWITCH_LEVELS}
    for link in topo.links:
        if link.fabric == fabric and link.tier in by_level:
            by_level[link.tier].append(link)
    pairs = {tier: zip([x.a for x in links], [x.b for x in links], strict=True) for tier, links in by_level.items()}
    return _levels_faults(topo.fabrics[fabric].tiers, switches, pairs)


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
