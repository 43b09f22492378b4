"""NCCL must not use the storage NICs: on the h200 example the Supermicro nodes' storage ConnectX-7 ports are
RDMA-capable (RoCE on the storage fabric) while the compute ports' RDMA names are unknown, so nccl.conf could
not set NCCL_IB_HCA and NCCL would use every RDMA device (NCCL environment variables: 'NCCL_IB_HCA ... By
default, all IB devices are used'). Now that is CF-NET-003, and once `clusterforge bind` read every node's
ibdev2netdev, NCCL_IB_HCA lists exactly the compute devices."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from clusterforge import codes
from clusterforge.checks import run_checks
from clusterforge.expand import expand
from clusterforge.model.nodes import BoundPort
from clusterforge.pipeline import load_valid
from clusterforge.render import RenderContext, paths
from clusterforge.render.nccl.nccl import render_nccl
from clusterforge.validate import ValidBlueprint

H200 = Path("blueprints/h200-training-pod.yaml")
# as gpu001's ibdev2netdev reports them in tests/bind: rails on mlx5_0-3 and mlx5_6-9, storage on mlx5_4/5
RAILS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]


def _with_bindings(valid: ValidBlueprint, rails_of: dict[str, list[str]]) -> ValidBlueprint:
    bindings = {
        node: {
            **{f"ib{k}": BoundPort(name=f"ibx{k}", rdma=rdma) for k, rdma in enumerate(rails, 1)},
            "stor1": BoundPort(name="enpx0", rdma="mlx5_4"),
            "stor2": BoundPort(name="enpx1", rdma="mlx5_5"),
        }
        for node, rails in rails_of.items()
    }
    return dataclasses.replace(valid, blueprint=valid.blueprint.model_copy(update={"bindings": bindings}))


def _conf_and_findings(valid: ValidBlueprint) -> tuple[str, list[str]]:
    topo, findings = expand(valid)
    conf = render_nccl(RenderContext(valid, topo, findings))[paths.nccl_conf("gpu")]
    return conf, [f.code for f in run_checks(valid, topo, findings)]


def test_unknown_compute_names_beside_rdma_storage_nics_are_a_finding() -> None:
    """On main: no NCCL_IB_HCA and no finding; NCCL would stripe collectives over the storage NICs."""
    conf, found = _conf_and_findings(load_valid(H200))
    assert "NCCL_IB_HCA=" not in conf
    assert codes.NCCL_MAY_USE_STORAGE in found


def test_bound_nodes_give_nccl_ib_hca_without_the_storage_nics() -> None:
    valid = load_valid(H200)
    nodes = [f"gpu{i:03d}" for i in range(1, 32)]
    conf, found = _conf_and_findings(_with_bindings(valid, dict.fromkeys(nodes, RAILS)))
    line = next(line for line in conf.splitlines() if line.startswith("NCCL_IB_HCA="))
    assert line == "NCCL_IB_HCA==" + ",".join(f"{d}:1" for d in RAILS)
    assert "mlx5_4" not in line and "mlx5_5" not in line
    assert codes.NCCL_MAY_USE_STORAGE not in found


def test_nodes_that_disagree_leave_it_unset() -> None:
    """nccl.conf is one file per group: one node whose names differ keeps it unset (and the finding)."""
    valid = load_valid(H200)
    rails_of = {f"gpu{i:03d}": RAILS for i in range(1, 32)}
    rails_of["gpu031"] = [*RAILS[:-1], "mlx5_10"]
    conf, found = _conf_and_findings(_with_bindings(valid, rails_of))
    assert "NCCL_IB_HCA=" not in conf and codes.NCCL_MAY_USE_STORAGE in found


def test_a_bound_group_passes_the_cross_check_of_the_whole_render() -> None:
    """On main the whole render refused a group whose NCCL_IB_HCA came from bindings (CF-RENDER-002: 'set
    from guessed device names'), so only a group the catalog names could ever get it: the lab twin ran
    without NCCL_IB_HCA."""
    from clusterforge.pipeline import render_files

    valid = load_valid(H200)
    files = render_files(_with_bindings(valid, {f"gpu{i:03d}": RAILS for i in range(1, 32)}))
    assert "NCCL_IB_HCA==" + ",".join(f"{d}:1" for d in RAILS) in files[paths.nccl_conf("gpu")]
