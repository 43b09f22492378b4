"""Each expansion finding code, from a blueprint that provokes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from factories import dgx_data, valid_from

from clusterforge.errors import BlueprintError
from clusterforge.expand import expand

Mutation = Callable[[dict[str, Any]], None]


def _nvl72_split(data: dict[str, Any]) -> None:
    data["floor"]["rows"] = [{"name": "A", "racks": 2, "rack_type": "nvidia/gb200-nvl72-rack"}]
    data["node_groups"] = [
        {
            "name": "gb",
            "model": "nvidia/gb200-nvl72-tray",
            "count": 20,
            "role": "compute",
            "placement": {"rows": ["A"], "per_rack": 10},
        }
    ]
    del data["fabrics"]["compute"]


def _add_subnet_manager(data: dict[str, Any]) -> None:
    data["node_groups"].append(
        {
            "name": "ufm",
            "model": "generic/cpu-1u-ndr",
            "count": 1,
            "role": "subnet-manager",
            "placement": {"racks": ["N1-001"]},
        }
    )


def _no_storage_ports(data: dict[str, Any]) -> None:
    _add_subnet_manager(data)
    data["fabrics"]["storage"] = {
        "kind": "storage",
        "technology": "ethernet",
        "leaf": "nvidia/sn5600",
        "node_groups": ["ufm"],
        "ipv4_pool": "192.168.0.0/24",
    }


def _manager_without_reserved_ports(data: dict[str, Any]) -> None:
    # 2 full SU: 16 leaves of 32 nodes and 32 uplinks on 8 spines of 64 ports, not one port free (with 3 SU the
    # 16 spines use 48 of 64 and the manager takes a free one)
    data["node_groups"][0]["count"] = 64
    _add_subnet_manager(data)
    data["fabrics"]["compute"]["node_groups"] = ["gpu", "ufm"]


def _slow_leaf(data: dict[str, Any]) -> None:
    data["fabrics"]["compute"].update(
        technology="ethernet", leaf="nvidia/sn4600c", spine="nvidia/sn4600c", core="nvidia/sn4600c"
    )


def _one_network_rack(data: dict[str, Any]) -> None:
    data["node_groups"][0]["count"] = 300
    data["floor"]["rows"][0]["racks"] = 75
    data["fabrics"]["compute"]["switch_racks"] = ["N1-001"]


CASES: dict[str, tuple[str, Mutation, bool]] = {
    # code: (what, mutation, is it an error)
    "CF-SPACE-001": ("one network rack for 300 nodes' switches", _one_network_rack, True),
    "CF-SPACE-002": ("more nodes than racks hold", lambda d: d["node_groups"][0].__setitem__("count", 99), True),
    "CF-NVLINK-001": ("NVL72 domain split over racks", _nvl72_split, True),
    "CF-FABRIC-001": ("listed group without ports of the role", _no_storage_ports, True),
    "CF-FABRIC-003": ("400G NICs on 100G leaves", _slow_leaf, False),
    "CF-FABRIC-004": ("subnet manager without reserved ports", _manager_without_reserved_ports, True),
    "CF-FABRIC-005": (
        "one tier asked, too many ports",
        lambda d: d["fabrics"]["compute"].__setitem__("tiers", 1),
        True,
    ),
    "CF-ADDR-001": ("pool too small", lambda d: d["fabrics"]["compute"].__setitem__("ipv4_pool", "10.0.0.0/26"), True),
    "CF-CABLE-001": ("rows 600 m apart", lambda d: d["floor"].__setitem__("row_pitch_mm", 600_000), True),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_expansion_finding(code: str) -> None:
    _, mutate, is_error = CASES[code]
    data = dgx_data(96)
    mutate(data)
    valid = valid_from(data)
    if is_error:
        with pytest.raises(BlueprintError) as info:
            expand(valid)
        assert code in {f.code for f in info.value.findings}
    else:
        _, findings = expand(valid)
        assert code in {f.code for f in findings}
