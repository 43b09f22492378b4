"""Blueprints built in code for property tests and benchmarks: N DGX H100 nodes on one compute fabric."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

from clusterforge.inputs import InputPolicy
from clusterforge.loader import LoadedBlueprint
from clusterforge.validate import ValidBlueprint, validate
from clusterforge.yamlsafe import SourceMap

NODES_PER_RACK = 4  # 4 x 10.2 kW in a 60 kW rear-door rack
MAX_ROW = 200


def _rows(prefix: str, racks: int, rack_type: str) -> list[dict[str, Any]]:
    rows = []
    for i in range(math.ceil(racks / MAX_ROW)):
        count = min(MAX_ROW, racks - i * MAX_ROW)
        rows.append(
            {"name": f"{prefix}{i + 1}", "racks": count, "rack_type": rack_type, "rack_names": "{row}-{index:03d}"}
        )
    return rows


def dgx_data(
    nodes: int,
    *,
    topology: str = "rail-optimized",
    tiers: int | str = "auto",
    ratio: str = "1:1",
    scalable_unit: int | None = None,
    model: str = "nvidia/dgx-h100",
    spine: str = "nvidia/qm9700",
    core: str | None = "nvidia/qm9700",
    network_racks: int | None = None,
    managers: int = 0,
    **compute_options: Any,
) -> dict[str, Any]:
    """`managers` adds that many UFM appliances (one NDR port each) to the compute fabric; other keyword
    arguments go into the compute fabric's entry."""
    node_racks = math.ceil(nodes / NODES_PER_RACK)
    # at 1:1 a leaf serves 32 ports, so up to 3 x 8/32 switches per node over three tiers; 40 U per rack
    # (twice that, for small scalable units and oversubscribed leaves)
    network_racks = network_racks or 2 * math.ceil(nodes * 8 * 3 / 32 / 40) + 1
    node_rows = _rows("A", node_racks, "generic/rear-door-48u-60kw")
    net_rows = _rows("N", network_racks, "generic/rear-door-48u-60kw")
    net_rack_names = [f"{row['name']}-{i:03d}" for row in net_rows for i in range(1, row["racks"] + 1)]
    compute: dict[str, Any] = {
        "kind": "compute",
        "technology": "infiniband",
        "topology": topology,
        "leaf": "nvidia/qm9700",
        "spine": spine,
        "tiers": tiers,
        "oversubscription": ratio,
        "ipv4_pool": "10.0.0.0/8",
        "switch_racks": net_rack_names,
    }
    if core:
        compute["core"] = core
    if scalable_unit:
        compute["scalable_unit"] = scalable_unit
    compute.update(compute_options)
    groups: list[dict[str, Any]] = [
        {
            "name": "gpu",
            "model": model,
            "count": nodes,
            "role": "compute",
            "placement": {"rows": [r["name"] for r in node_rows], "per_rack": NODES_PER_RACK},
            "management_network": "oob",  # no in-band network: Ansible reaches the nodes on their BMCs, as said
        }
    ]
    if managers:
        groups.append(
            {
                "name": "ufm",
                "model": "generic/cpu-1u-ndr",
                "count": managers,
                "role": "subnet-manager",
                "placement": {"racks": [net_rack_names[-1]]},
                "management_network": "oob",
            }
        )
    return {
        "version": 2,  # the current format: a group on no in-band network names its management network
        "name": f"dgx-{nodes}",
        "site": {"name": "test"},
        "floor": {"rows": node_rows + net_rows},
        "node_groups": groups,
        "fabrics": {
            "compute": compute,
            "oob": {"kind": "oob", "switch": "nvidia/sn2201", "ipv4_pool": "172.16.0.0/12", "gateway": "172.16.0.1"},
        },
    }


def valid_from(data: dict[str, Any]) -> ValidBlueprint:
    """A blueprint given as data; its catalog files may lie in the repository or a temporary folder."""
    policy = InputPolicy((Path(__file__).resolve().parent.parent, Path(tempfile.gettempdir()).resolve()))
    return validate(LoadedBlueprint(Path("generated.yaml"), data, SourceMap({}, {}), [], policy))


def dgx_blueprint(nodes: int, **options: Any) -> ValidBlueprint:
    return valid_from(dgx_data(nodes, **options))
