"""The numbers of networks and node groups that the switch and InfiniBand files are made from, kept by the
lock file (its `numbers` section) so that reordering the blueprint moves none:

- `network/<name>`: the network's place among the blueprint's networks, the fabric byte of its leaf pairs'
  MLAG system MAC and EVPN Ethernet-segment MAC (render/switches/nvue_model.py);
- `infiniband/<name>`: an InfiniBand fabric's place among the InfiniBand fabrics, the fabric part of the
  simulated node GUIDs (render/infiniband/infiniband_plan.py);
- `group/<name>`: a node group's place, the group part of the simulated adapters' GUIDs.

Without a lock file each is its place in the blueprint (so a render is what it always was). With one, each
keeps the number the lock holds; a new one takes its place when the lock gives it to no other, else the lowest
free number. A number stays in the lock when its network or group is gone, so it is never given to another.
"""

from __future__ import annotations

from ..model.fabric import LeafSpineFabric
from .context import ExpandContext

KINDS = ("network", "infiniband", "group")


def blueprint_places(ctx: ExpandContext) -> dict[str, int]:
    """`kind/name` -> its place in the blueprint, for every network, InfiniBand fabric and node group."""
    fabrics = ctx.bp.fabrics
    infiniband = [n for n, f in fabrics.items() if isinstance(f, LeafSpineFabric) and f.technology == "infiniband"]
    places = {f"network/{name}": i for i, name in enumerate(fabrics)}
    places.update({f"infiniband/{name}": i for i, name in enumerate(infiniband)})
    places.update({f"group/{group.name}": i for i, group in enumerate(ctx.bp.node_groups)})
    return places


def assign_numbers(ctx: ExpandContext) -> None:
    """Every network's, InfiniBand fabric's and node group's number into `topo.numbers`."""
    lock = ctx.keep.lock
    held = {k: int(v) for k, v in lock.section("numbers").items()} if lock is not None else {}
    places = blueprint_places(ctx)
    taken = {(key.partition("/")[0], number) for key, number in held.items()}
    numbers = {key: held[key] for key in places if key in held}  # first: a new one never takes theirs
    for key, place in places.items():
        if key in numbers:
            continue
        kind = key.partition("/")[0]
        number = place
        if (kind, number) in taken:
            number = next(n for n in range(len(places) + len(held) + 1) if (kind, n) not in taken)
        numbers[key] = number
        taken.add((kind, number))
    ctx.topo.numbers = numbers
    ctx.topo.held_numbers = {k: str(v) for k, v in held.items() if k not in numbers}
