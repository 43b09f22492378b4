"""`diff` lists what moves first: identities, Slurm nodes that change partition, then workload changes."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import REPO

from clusterforge.diff import diff_markdown, diff_specs

L40S = REPO / "blueprints" / "l40s-inference.yaml"


def _pair(tmp: Path, new_text: str) -> tuple[str, str]:
    """The example as OLD and an edited copy as NEW, each with the example's lock file beside it."""
    old, new = tmp / "old", tmp / "new"
    for side, text in ((old, L40S.read_text(encoding="utf-8")), (new, new_text)):
        side.mkdir()
        (side / "cluster.yaml").write_text(text, encoding="utf-8")
        shutil.copy(REPO / "blueprints" / "l40s-inference.lock.yaml", side / "cluster.lock.yaml")
    return str(old / "cluster.yaml"), str(new / "cluster.yaml")


def test_partitions_and_workloads_come_before_the_figures(tmp_path: Path) -> None:
    text = L40S.read_text(encoding="utf-8")
    text = text.replace(
        "    - {name: serve, node_groups: [inf], default: true}\n",
        "    - {name: serve, node_groups: [inf], default: true}\n    - {name: ops, node_groups: [inf, ctl]}\n",
    )
    text = text.replace("    replicas: 32\n", "    replicas: 16\n", 1)
    diff = diff_specs(*_pair(tmp_path, text))
    partitions = {c["key"]: (c["old"], c["new"]) for c in diff["node_partitions"]}
    assert partitions["inf001"] == ("serve", "serve,ops")
    assert "ctl001" not in partitions  # not a Slurm node before: added, not changed
    assert diff["workloads"] == [
        {"workload": "llama3-8b-assist", "status": "changed", "fields": [{"item": "replicas", "old": 32, "new": 16}]}
    ]
    assert diff["identity_moves"] == {}
    markdown = diff_markdown(diff)
    assert markdown.index("### Slurm nodes that change partition") < markdown.index("### Workloads")
    assert markdown.index("### Workloads") < markdown.index("### Rendered files")
    assert "| llama3-8b-assist | `replicas` | 32 | 16 |" in markdown


def test_a_workload_change_of_a_list_or_flag_reads_as_the_blueprint_writes_it(tmp_path: Path) -> None:
    text = L40S.read_text(encoding="utf-8")
    lengths = "    context_tokens: 8192\n    prompt_tokens: 2048\n    output_tokens: 1024\n"
    assert text.count(lengths) == 1
    mix = (
        "    context_tokens: 8192\n    decode_cuda_graphs: false\n    request_mix:\n"
        "      - {share: 0.5, prompt_tokens: 1024, output_tokens: 512}\n"
        "      - {share: 0.5, prompt_tokens: 4096, output_tokens: 1024}\n"
    )
    markdown = diff_markdown(diff_specs(*_pair(tmp_path, text.replace(lengths, mix))))
    assert "| llama3-8b-assist | `decode_cuda_graphs` | — | false |" in markdown
    assert (
        "| llama3-8b-assist | `request_mix` | — | [{share: 0.5, prompt_tokens: 1024, output_tokens: 512}, "
        "{share: 0.5, prompt_tokens: 4096, output_tokens: 1024}] |"
    ) in markdown


def test_a_renumbering_change_is_listed_address_by_address(tmp_path: Path) -> None:
    text = L40S.read_text(encoding="utf-8").replace("10.41.0.0/24", "10.49.0.0/24")
    diff = diff_specs(*_pair(tmp_path, text))
    moved = {m["key"]: (m["old"], m["new"]) for m in diff["identity_moves"]["addresses"]}
    assert moved["inband/ctl001"] == ("10.41.0.10", "10.49.0.10")
    assert len(moved) == 10
    assert diff_markdown(diff).index("### Addresses that move (10)") < diff_markdown(diff).index("### Rendered files")


def test_slurm_nodes_that_change_switch_and_re_patched_cables_come_first(tmp_path: Path) -> None:
    """Halving the pod's scalable unit moves gpu017-031 to a second unit: their leaf ports and their switch in
    topology.conf change, and diff says so node by node before any figure."""
    pod = REPO / "blueprints" / "h200-training-pod.yaml"
    old, new = tmp_path / "old", tmp_path / "new"
    text = pod.read_text(encoding="utf-8")
    for side, body in ((old, text), (new, text.replace("scalable_unit: 32", "scalable_unit: 16"))):
        side.mkdir()
        (side / "pod.yaml").write_text(body, encoding="utf-8")
        shutil.copy(REPO / "blueprints" / "h200-training-pod.lock.yaml", side / "pod.lock.yaml")
    diff = diff_specs(str(old / "pod.yaml"), str(new / "pod.yaml"))
    blocks = {c["key"]: (c["old"], c["new"]) for c in diff["node_blocks"]}
    assert blocks == {f"gpu{i:03d}": ("compute-su001", "compute-su002") for i in range(17, 32)}
    repatched = {m["key"] for m in diff["identity_moves"]["ports"]}
    assert "compute/gpu017:ib1" in repatched and "compute/gpu016:ib1" not in repatched
    trunks = {m["key"]: (m["old"], m["new"]) for m in diff["identity_moves"]["trunks"]}
    assert trunks and all(key.startswith("compute/compute-") for key in trunks)  # leaf-spine cables moved
    markdown = diff_markdown(diff)
    assert "| `gpu017` | compute-su001 | compute-su002 |" in markdown
    assert "### Switch-to-switch cables re-patched" in markdown
    assert markdown.index("### Cables re-patched") < markdown.index("### Slurm nodes that change block or switch")
    assert markdown.index("### Slurm nodes that change block or switch") < markdown.index("### Rendered files")
