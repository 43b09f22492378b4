"""Port bookkeeping taken in bulk gives the ports one-by-one booking gives, named as the NOS names them; free U
found in one pass; switch islands by union-find. Expected names and slots are written out by hand."""

from __future__ import annotations

from clusterforge.catalog import PortGroup, RackType, Switch, load_catalog
from clusterforge.expand.placement import free_slot
from clusterforge.expand.ports import PortAllocator
from clusterforge.expand.topology import Rack
from clusterforge.expand.union_find import UnionFind


def qm9700_ports() -> PortGroup:
    """64 NDR ports in 32 twin-port OSFP cages, each splittable into two 200G ports (QM9700 data sheet)."""
    switch = load_catalog().require("nvidia/qm9700", Switch)
    return next(group for group in switch.ports if group.name == "ib")


def test_ports_taken_in_bulk_are_the_ports_taken_one_by_one() -> None:
    bulk, single = PortAllocator(qm9700_ports()), PortAllocator(qm9700_ports())
    # from the top: the last cage's second port first; from the bottom: cage 1 port 1 first
    assert bulk.take_high_many(3) == ["ib32/2", "ib32/1", "ib31/2"]
    assert bulk.take_low_many(400, 3) == ["ib1/1", "ib1/2", "ib2/1"]
    assert [single.take_high() for _ in range(3)] == ["ib32/2", "ib32/1", "ib31/2"]
    assert [single.take_low(400) for _ in range(3)] == ["ib1/1", "ib1/2", "ib2/1"]
    # 200G splits the next native port (ib4, the second port of cage 2) in two: ib4s0, ib4s1, then ib5s0
    assert bulk.take_low_many(200, 3) == ["ib4s0", "ib4s1", "ib5s0"]
    assert [single.take_low(200) for _ in range(3)] == ["ib4s0", "ib4s1", "ib5s0"]
    assert (bulk.low, bulk.high, bulk.used) == (single.low, single.high, single.used) == (5, 61, 9)
    assert bulk.capacity(200) == single.capacity(200) == 1 + 2 * 56  # ib5s1, then 56 natives left


def test_bulk_takes_stop_at_the_reserved_ports() -> None:
    ports = PortAllocator(qm9700_ports(), reserved=2)
    assert ports.free_native == 62
    assert ports.take_high_many(1) == ["ib31/2"]  # ib32/1 and ib32/2 are kept for subnet managers
    assert ports.take_reserved() == "ib32/1"


def rack(used: list[str | None]) -> Rack:
    rack_type = load_catalog().require("generic/rear-door-48u-60kw", RackType)
    return Rack("A01", "A", 0, 0, "generic/rear-door-48u-60kw", rack_type, used)


def test_free_slot_from_below_and_from_above() -> None:
    #           U1    U2    U3    U4    U5    U6    U7
    used = ["x", None, None, "x", None, None, None]
    assert free_slot(rack(used), 2) == 2  # U2-U3
    assert free_slot(rack(used), 3) == 5  # U5-U7
    assert free_slot(rack(used), 2, top_down=True) == 6  # U6-U7
    assert free_slot(rack(used), 1, top_down=True) == 7
    assert free_slot(rack(used), 4) is None
    assert free_slot(rack(used), 4, top_down=True) is None


def test_union_find_counts_groups() -> None:
    joins = UnionFind(["leaf1", "leaf2", "leaf3", "spare"])
    joins.join("leaf1", "spine1")
    joins.join("leaf2", "spine1")
    joins.join("leaf3", "spine2")
    # {leaf1, leaf2, spine1}, {leaf3, spine2}, {spare}
    assert joins.groups() == 3
    assert joins.root("leaf1") == joins.root("leaf2") != joins.root("leaf3")
    joins.join("spine2", "leaf1")
    assert joins.groups() == 2
