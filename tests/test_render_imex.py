"""The IMEX node lists of multi-node NVLink domains: one file per domain with the in-band address of each
of its nodes, one a line (NVIDIA IMEX guide: nodes_config.cfg, NVLink-domain-wide deployment)."""

from __future__ import annotations

from ipaddress import IPv4Address
from pathlib import Path

from clusterforge.expand import expand
from clusterforge.pipeline import load_valid, render_files
from clusterforge.render import paths


def test_gb200_gets_one_node_list_per_rack() -> None:
    """gb200-nvl72: 4 NVL72 racks of 18 compute trays: 4 lists of 18 in-band addresses, disjoint, each
    tray of a domain listed in its domain's file and nowhere else."""
    valid = load_valid(Path("blueprints/gb200-nvl72.yaml"))
    topo, _ = expand(valid)
    files = render_files(valid)
    lists = {path: text for path, text in files.items() if path.startswith("imex/")}
    assert sorted(lists) == [paths.imex_nodes(i) for i in (1, 2, 3, 4)]
    inband = topo.addresses["inband"]
    for domain in topo.domains:
        lines = lists[paths.imex_nodes(domain.index)].splitlines()
        assert len(lines) == 18 and all(IPv4Address(line) for line in lines)
        assert lines == [str(inband[n]) for n in domain.nodes]
    assert len({line for text in lists.values() for line in text.splitlines()}) == 72
    assert '"dest": "etc/nvidia-imex/nodes_config.cfg"' in files["ansible/inventory.json"]


def test_single_node_domains_get_no_imex() -> None:
    """An HGX node is its own NVLink domain: no IMEX."""
    files = render_files(load_valid(Path("blueprints/h200-training-pod.yaml")))
    assert not [p for p in files if p.startswith("imex/")]
