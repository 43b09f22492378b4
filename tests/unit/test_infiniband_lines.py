"""The InfiniBand topology file's lines and the subnets' islands, on the paths the example fabrics do not take:
two cables on one port, planes of one shape sharing an order, a fat tree whose few cables do not join its
groups, and a switch with more than 64 ports in use. Expected texts are written out by hand."""

from __future__ import annotations

from clusterforge.render.infiniband.infiniband import LineOrders, _node_texts
from clusterforge.render.infiniband.infiniband_plan import IbLinks, IbNode, _islands, _port_counts


def _links(cables: list[tuple[str, str, int, str, int]]) -> IbLinks:
    """(label, lower node, lower port, upper switch, upper port) of node-leaf cables."""
    return IbLinks(
        labels=[c[0] for c in cables],
        tiers=["node-leaf"] * len(cables),
        rails=[None] * len(cables),
        lower=[c[1] for c in cables],
        lower_ports=[c[2] for c in cables],
        lower_devices=[c[1].split()[0] for c in cables],
        lower_port_names=["ib1"] * len(cables),
        upper=[c[3] for c in cables],
        upper_ports=[c[4] for c in cables],
        upper_port_names=[f"ib{c[4]}" for c in cables],
    )


def _order(switch: str, hosts: list[str]) -> list[IbNode]:
    nodes = [IbNode(switch, "Switch", 64, 0x10, "leaf", switch)]
    return nodes + [IbNode(h, "Hca", 1, 0x20 + i * 4, "compute", h.split()[0]) for i, h in enumerate(hosts)]


def test_two_cables_on_one_port_are_listed_by_remote_node_and_the_order_is_not_kept() -> None:
    links = _links([("c-2", "h2 mlx5_0", 1, "leaf1", 3), ("c-1", "h1 mlx5_0", 1, "leaf1", 3)])
    orders = LineOrders()
    text = "".join(_node_texts(links, _order("leaf1", ["h1 mlx5_0", "h2 mlx5_0"]), orders))
    assert text == (
        '\nswitchguid=0x0000000000000010\nSwitch 64 "leaf1"\n'
        '[3] "h1 mlx5_0"[1]\t# c-1\n'
        '[3] "h2 mlx5_0"[1]\t# c-2\n'
        '\ncaguid=0x0000000000000020\nHca 1 "h1 mlx5_0"\n'
        '[1] "leaf1"[3]\t# c-1\n'
        '\ncaguid=0x0000000000000024\nHca 1 "h2 mlx5_0"\n'
        '[1] "leaf1"[3]\t# c-2\n'
    )
    assert orders.keys == []  # an order decided by more than the keys is not kept for the next subnet


def test_a_second_plane_of_the_same_shape_takes_the_first_ones_order() -> None:
    orders = LineOrders()
    first = _links([("a-2", "h1 mlx5_0", 1, "leafA", 2), ("a-1", "h2 mlx5_0", 1, "leafA", 1)])
    second = _links([("b-2", "h1 mlx5_1", 1, "leafB", 2), ("b-1", "h2 mlx5_1", 1, "leafB", 1)])
    "".join(_node_texts(first, _order("leafA", ["h1 mlx5_0", "h2 mlx5_0"]), orders))
    kept = orders.placed
    text = "".join(_node_texts(second, _order("leafB", ["h1 mlx5_1", "h2 mlx5_1"]), orders))
    assert orders.placed is kept
    assert text == (
        '\nswitchguid=0x0000000000000010\nSwitch 64 "leafB"\n'
        '[1] "h2 mlx5_1"[1]\t# b-1\n'
        '[2] "h1 mlx5_1"[1]\t# b-2\n'
        '\ncaguid=0x0000000000000020\nHca 1 "h1 mlx5_1"\n'
        '[1] "leafB"[2]\t# b-2\n'
        '\ncaguid=0x0000000000000024\nHca 1 "h2 mlx5_1"\n'
        '[1] "leafB"[1]\t# b-1\n'
    )


def test_islands_when_one_cable_per_switch_does_not_join_a_group() -> None:
    # the last uplink of a and b and the last downlink of x, y and z join {a, y} and {b, x, z}; cable a-x joins
    # those two, so all five are one island; p-q is a second
    lows, highs = ["a", "a", "b", "b", "a", "p"], ["y", "x", "x", "z", "y", "q"]
    assert _islands(["a", "b", "p", "x", "y", "z", "q"], lows, highs) == {
        "a": 1,
        "b": 1,
        "p": 2,
        "x": 1,
        "y": 1,
        "z": 1,
        "q": 2,
    }


def test_a_switch_with_a_port_above_64_in_use_shows_that_many() -> None:
    links = _links([("c-1", "h1 mlx5_0", 1, "leaf1", 65), ("c-2", "h2 mlx5_0", 1, "leaf2", 3)])
    assert _port_counts(links) == {"leaf1": 65}
    assert _port_counts(_links([("c-2", "h2 mlx5_0", 1, "leaf2", 64)])) == {}
