"""Stable identity: the lock file keeps every address and host name when node groups and racks grow, shrink
and are reordered; a change that would still renumber is refused unless allowed; a broken lock file is an
error with its line, never a traceback."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO, run_cli

from clusterforge import codes
from clusterforge.diff import diff_markdown, diff_specs
from clusterforge.errors import BlueprintError
from clusterforge.expand import EXPANDERS
from clusterforge.expand.context import ExpandContext
from clusterforge.expand.identity import PATCHED_TIERS, identities, moves
from clusterforge.expand.topology import Topology
from clusterforge.expand.trunk_moves import trunks_moved
from clusterforge.lockfile import Keep, lock_path, lock_text, parse_lock, read_lock, write_lock
from clusterforge.pipeline import analyse, keep_of, load_valid, lock_of

Change = Callable[[dict[str, Any]], None]
KEPT = ("hosts", "addresses", "loopbacks", "asns", "numbers", "bonds", "racks", "ports", "trunks", "cables")
"""What the lock file keeps, compared device by device."""


def _copy(name: str, tmp: Path) -> Path:
    """The example blueprint (with its included folder) copied into `tmp`."""
    shutil.copy(REPO / "blueprints" / f"{name}.yaml", tmp / f"{name}.yaml")
    if (REPO / "blueprints" / name).is_dir():
        shutil.copytree(REPO / "blueprints" / name, tmp / name)
    return tmp / f"{name}.yaml"


def _edit(path: Path, change: Change) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _locked_render(path: Path, release_removed: bool = False) -> dict[str, dict[str, str]]:
    """Analyse with the lock file beside `path` and write the lock afresh, as `render` does; the identities
    of the devices present (and each link end's cable label, from the lock file)."""
    valid = load_valid(path)
    keep = keep_of(valid, release_removed=release_removed)
    analysis = analyse(valid, keep=keep)
    write_lock(path, lock_of(analysis))
    found = identities(analysis.topo)
    lock = read_lock(path)
    assert lock is not None
    found["cables"] = lock.section("cables")
    return found


def _group(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in data["node_groups"] if g["name"] == name)


def _grow(group: str, by: int, rows: list[str] | None = None) -> Change:
    def change(data: dict[str, Any]) -> None:
        _group(data, group)["count"] += by
        if rows:
            data["floor"]["rows"] += [{"name": r, "racks": 2, "rack_type": "generic/air-42u-40kw"} for r in rows]
            _group(data, group)["placement"]["rows"] += rows

    return change


def _grow_row(group: str, by: int, row: int, racks: int) -> Change:
    """`group` grown by `by`, with `racks` more racks in the blueprint's row number `row` to hold them."""

    def change(data: dict[str, Any]) -> None:
        _group(data, group)["count"] += by
        rows = data["floor"]["rows"]
        rows[row]["racks"] += racks
        placement = _group(data, group)["placement"]
        if "racks" in placement:  # the new racks are named after the row's last one
            first = rows[row]["racks"] - racks + 1
            placement["racks"] += [f"{rows[row]['name']}{n:02d}" for n in range(first, first + racks)]

    return change


def _shrink(group: str, by: int) -> Change:
    def change(data: dict[str, Any]) -> None:
        _group(data, group)["count"] -= by

    return change


def _take_out(group: str, index: int) -> Change:
    """The node `index` of `group` taken out of the middle (`absent`), the group one smaller."""

    def change(data: dict[str, Any]) -> None:
        _group(data, group)["count"] -= 1
        _group(data, group).setdefault("absent", []).append(index)

    return change


def _take_out_many(group: str, indexes: list[int], racks: list[str] | None = None) -> Change:
    """The nodes `indexes` of `group` taken out (a rack emptied); with `racks`, the group placed there only."""

    def change(data: dict[str, Any]) -> None:
        for index in indexes:
            _take_out(group, index)(data)
        if racks is not None:
            _group(data, group)["placement"]["racks"] = racks

    return change


def _fitted(change: Change) -> Change:
    """`change`, then each workload of the examples with a `gpu` group of 8-GPU nodes cut to the GPUs left (as
    the pull request that shrinks the group would: a workload needing more GPUs than there are is an error)."""

    def fitted(data: dict[str, Any]) -> None:
        change(data)
        gpus = 8 * _group(data, "gpu")["count"]
        for workload in data.get("workloads", []):
            if workload["kind"] != "training":
                workload["replicas"] = min(workload["replicas"], gpus // workload["gpus_per_replica"])
            while workload["kind"] == "training" and workload["gpus"] > gpus:
                workload["gpus"] //= 2  # data parallel halved: the global batch stays a multiple of it

    return fitted


def _reverse_groups(data: dict[str, Any]) -> None:
    data["node_groups"].reverse()


def _reverse_networks(data: dict[str, Any]) -> None:
    """The networks in reverse order (those of an included file written into the blueprint, reversed)."""
    if "fabrics" not in data:
        included = "gb200-nvl72/fabrics.yaml"
        data["include"].remove(included)
        data["fabrics"] = yaml.safe_load((REPO / "blueprints" / included).read_text(encoding="utf-8"))["fabrics"]
    data["fabrics"] = dict(reversed(data["fabrics"].items()))


def _reverse_rows(data: dict[str, Any]) -> None:
    data["floor"]["rows"].reverse()


def _reverse_racks(group: str) -> Change:
    def change(data: dict[str, Any]) -> None:
        _group(data, group)["placement"]["racks"].reverse()

    return change


def _more_racks(data: dict[str, Any]) -> None:
    data["floor"]["rows"][-1]["racks"] += 1


def _slower_storage_nodes(data: dict[str, Any]) -> None:
    """Two nodes with 100G storage ports (generic/cpu-1u) join the storage leaves, whose nodes all had 400G
    ports: every cage of the leaf is then counted as split for 100G (expand/bonds.py)."""
    data["node_groups"].append(
        {"name": "cpu", "model": "generic/cpu-1u", "count": 2, "role": "storage", "placement": {"racks": ["N03"]}}
    )
    for network in ("storage", "inband"):
        data["fabrics"][network]["node_groups"].append("cpu")


CASES: dict[str, list[tuple[str, Change]]] = {
    "h200-training-pod": [
        ("grow gpu by 5", _grow("gpu", 5, ["C"])),
        ("grow mgmt by 1", _grow("mgmt", 1)),
        ("shrink gpu by 4", _shrink("gpu", 4)),
        ("shrink gpu by 1", _fitted(_shrink("gpu", 1))),
        ("take gpu010 out", _take_out("gpu", 10)),
        ("empty rack A02", _take_out_many("gpu", [4, 5, 6])),
        ("reorder groups", _reverse_groups),
        ("reorder rows", _reverse_rows),
        ("add a rack", _more_racks),
        ("add slower storage nodes", _slower_storage_nodes),
    ],
    "l40s-inference": [
        ("grow inf by 4", _grow_row("inf", 4, 0, 2)),
        ("shrink inf by 3", _shrink("inf", 3)),
        ("take inf003 out", _take_out("inf", 3)),
        ("take rack R01 out", _take_out_many("inf", [1, 2, 3, 4], ["R02"])),
        ("reorder groups", _reverse_groups),
        ("reorder racks", _reverse_racks("inf")),
        ("add a rack", _more_racks),
    ],
    "gb200-nvl72": [
        ("grow login by 2", _grow("login", 2)),
        ("shrink login by 2", _shrink("login", 2)),
        ("take gb010 out", _take_out("gb", 10)),
        ("take login002 out", _take_out("login", 2)),
        ("reorder networks", _reverse_networks),
        ("reorder groups", _reverse_groups),
        ("reorder rows", _reverse_rows),
        ("add a rack", _more_racks),
    ],
    "b200-spectrum-x": [
        ("grow gpu by 2", _grow_row("gpu", 2, 0, 1)),
        ("shrink gpu by 2", _fitted(_shrink("gpu", 2))),
        ("take gpu003 out", _fitted(_take_out("gpu", 3))),
        ("empty rack A02", _fitted(_take_out_many("gpu", [3, 4]))),
        ("reorder groups", _reverse_groups),
        ("reorder networks", _reverse_networks),
        ("reorder rows", _reverse_rows),
        ("add a rack", _more_racks),
    ],
    "mi300x-roce": [
        ("grow gpu by 2", _grow_row("gpu", 2, 0, 1)),
        ("shrink gpu by 1", _fitted(_shrink("gpu", 1))),
        ("take gpu002 out", _fitted(_take_out("gpu", 2))),
        ("empty rack A01", _fitted(_take_out_many("gpu", [1, 2]))),
        ("reorder groups", _reverse_groups),
        ("reorder networks", _reverse_networks),
        ("reorder rows", _reverse_rows),
        ("add a rack", _more_racks),
    ],
}
PORTS_MOVED: dict[tuple[str, str], set[str]] = {}
"""Ports a change re-patches by design: none. (The UFM pair, which the pod's blueprint puts in the free node slot
of the last scalable unit, keeps that slot when the group grows: fabric/kept_managers.py.)"""
OLD_LEAVES = [f"compute-leaf{n:03d}" for n in range(1, 9)]
OLD_SPINES, NEW_SPINES = ([f"compute-spine{n:03d}" for n in spines] for spines in (range(1, 5), range(5, 9)))
TRUNKS_MOVED = {
    ("h200-training-pod", "grow gpu by 5"): {(leaf, spine): 4 for leaf in OLD_LEAVES for spine in OLD_SPINES}
}
"""Leaf-to-spine cables a growth re-patches by design, per (leaf, spine it leaves), by hand: the pod's one scalable
unit has 8 rail leaves of QM9700 (64 NDR ports), each with 32 node ports and, non-blocking, 32 uplinks; 4 spines
take the 256 uplinks (64 ports each), 8 per leaf and spine. gpu032 opens a second unit (the first's 32 slots hold
31 nodes and the UFM pair): 16 leaves, 512 uplinks, 8 spines, 4 per leaf and spine. Each old leaf keeps 4 of its 8
cables to each old spine on their ports and moves the other 4 (from the same leaf ports) to the new spines 5-8:
8 x 4 x 4 = 128 move, 128 stay. Before the mesh kept the lock's cables, 252 of the 256 moved."""


def _trunk_moves(moved: dict[str, list[dict[str, str]]]) -> dict[tuple[str, str], int]:
    """Moved switch-to-switch cables counted per (lower switch, upper switch the lock held it on)."""
    out: dict[tuple[str, str], int] = {}
    for move in moved.get("trunks", []):
        pair = (move["key"].partition("/")[2].partition(":")[0], move["old"].partition(":")[0])
        out[pair] = out.get(pair, 0) + 1
    return out


@pytest.mark.parametrize(("name", "label"), [(name, label) for name, cases in CASES.items() for label, _ in cases])
def test_no_kept_identity_moves(name: str, label: str, tmp_path: Path) -> None:
    change = dict(CASES[name])[label]
    path = _copy(name, tmp_path)
    before = _locked_render(path)
    _edit(path, change)
    after = _locked_render(path)
    text = lock_path(path).read_text(encoding="utf-8")  # with its holes, held lines and ASNs: byte for byte
    assert lock_text(parse_lock(text).blueprint, parse_lock(text).sections) == text
    moved = moves(before, after)
    assert {m["key"] for m in moved.get("ports", [])} == PORTS_MOVED.get((name, label), set())
    assert _trunk_moves(moved) == TRUNKS_MOVED.get((name, label), {})
    assert all(m["new"].partition(":")[0] in NEW_SPINES for m in moved.get("trunks", []))  # the surplus only
    assert not any(moved.get(section) for section in KEPT if section not in ("ports", "trunks")), moved
    # every device the change kept still has every identity it had, host by host
    by_design = PORTS_MOVED.get((name, label), set()) | {m["key"] for m in moved.get("trunks", [])}
    for section in KEPT:
        kept = {k: v for k, v in before[section].items() if k in after[section]}
        changed = {k for k in kept if kept[k] != after[section][k]}
        assert changed <= by_design, (section, sorted(changed)[:5])


def test_growing_a_group_moved_addresses_without_the_lock_and_none_with_it(tmp_path: Path) -> None:
    """The issue's case: 5 more nodes in the first group renumber every host after it without the lock."""
    path = _copy("h200-training-pod", tmp_path)
    before = _locked_render(path)
    _edit(path, _grow("gpu", 5, ["C"]))
    unlocked = identities(analyse(load_valid(path), keep=Keep()).topo)
    assert len(moves(before, unlocked).get("addresses", [])) > 50
    after = _locked_render(path)
    assert moves(before, after).get("addresses", []) == []
    assert after["addresses"]["inband/mgmt001"] == before["addresses"]["inband/mgmt001"] == "10.120.0.33"
    new = [k for k in after["addresses"] if k not in before["addresses"]]
    assert len(new) > 5 and len(set(after["addresses"].values())) == len(after["addresses"])


def test_removed_devices_keep_their_addresses_reserved_and_get_them_back(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    before = _locked_render(path)
    _edit(path, _shrink("inf", 2))
    _locked_render(path)
    lock = read_lock(path)
    assert lock is not None and set(lock.section("held")) == {"inf007", "inf008"}
    assert lock.section("addresses")["inband/inf008"] == before["addresses"]["inband/inf008"]
    _edit(path, _grow("inf", 2))
    again = _locked_render(path)
    assert again["addresses"] == before["addresses"]
    lock = read_lock(path)
    assert lock is not None and lock.section("held") == {}


def test_released_identities_are_given_up(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    _locked_render(path)
    _edit(path, _shrink("inf", 2))
    _locked_render(path, release_removed=True)
    lock = read_lock(path)
    assert lock is not None and lock.section("held") == {}
    assert not any("inf008" in key for key in lock.section("addresses"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_committed_lock_file_round_trips_byte_identically(name: str) -> None:
    path = REPO / "blueprints" / f"{name}.lock.yaml"
    text = path.read_text(encoding="utf-8")
    lock = parse_lock(text, str(path))
    assert lock_text(lock.blueprint, lock.sections) == text
    valid = load_valid(REPO / "blueprints" / f"{name}.yaml")
    keep = keep_of(valid)
    assert lock_of(analyse(valid, keep=keep)) == text


def test_a_forced_renumber_is_refused_by_plan_and_render_and_allowed_by_the_flag(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    out = tmp_path / "out"
    assert run_cli("render", str(path), "-o", str(out)).returncode == 0
    assert lock_path(path).is_file()

    def new_pool(data: dict[str, Any]) -> None:
        fabric = next(f for f in data["fabrics"].values() if f["kind"] == "inband")
        fabric["ipv4_pool"] = "10.99.0.0/24"

    _edit(path, new_pool)
    for command in (("plan", str(path)), ("render", str(path), "-o", str(out))):
        refused = run_cli(*command)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert codes.IDENTITY_MOVES in refused.stdout and "->" in refused.stdout
        assert "Traceback" not in refused.stderr
    allowed = run_cli("render", str(path), "-o", str(out), "--allow-renumber")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert f"warning {codes.IDENTITY_MOVES}" in allowed.stdout
    assert "10.99.0." in lock_path(path).read_text(encoding="utf-8")
    assert run_cli("render", str(path), "-o", str(out), "--check").returncode == 0


BROKEN = [
    ("version: 2\n", "'version: 1' is missing"),
    ("version: 1\naddresses:\n  inband/a: 10.0.0.300\n", ":3:1"),
    ("version: 1\naddresses:\n  inband/a: 10.0.0.3\n  inband/a: 10.0.0.4\n", "given twice"),
    ("version: 1\nadresses:\n", "unknown top-level key"),
    ("version: 1\n    x: y\n", "outside a section"),
    ("version: 1\nhosts:\n  gpu001 gpu 1\n", "expected '  key: value'"),
    ("version: 1\nracks:\n  gpu001: A01\n", "RACK U<n>"),
    ("version: 1\nhosts:\n  " + "x" * 500 + ": a 1\n", "longer than"),
    ("\x00\x01 binary", "expected 'key: value'"),
]


@pytest.mark.parametrize(("text", "said"), BROKEN)
def test_a_broken_lock_file_is_an_error_with_its_line(text: str, said: str) -> None:
    with pytest.raises(BlueprintError) as caught:
        parse_lock(text, "x.lock.yaml")
    findings = caught.value.findings
    assert findings and all(f.code == codes.LOCK_UNREADABLE for f in findings)
    assert any(said in f.message or said in str(f.location) for f in findings), [f.as_text() for f in findings]


def test_a_broken_lock_file_stops_the_cli_with_file_and_line(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    lock_path(path).write_text("version: 1\naddresses:\n  inband/inf001: nope\n", encoding="utf-8")
    for command in ("plan", "check"):
        result = run_cli(command, str(path))
        assert result.returncode == 1
        assert "l40s-inference.lock.yaml:3:1: error CF-IDENT-003" in result.stdout
        assert "Traceback" not in result.stderr + result.stdout


def test_a_lock_file_is_read_with_bounds(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    lock_path(path).mkdir()
    with pytest.raises(BlueprintError) as caught:
        read_lock(path)
    assert "cannot read the lock file" in caught.value.findings[0].message


def test_a_node_taken_out_of_the_middle_renames_none_and_is_held(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    before = _locked_render(path)
    _edit(path, _take_out("inf", 3))
    after = _locked_render(path)
    assert "inf003" not in after["hosts"] and after["hosts"]["inf008"] == "inf 8"
    assert {k: v for k, v in after["addresses"].items()} == {
        k: v for k, v in before["addresses"].items() if not k.partition("/")[2].startswith("inf003")
    }
    lock = read_lock(path)
    assert lock is not None and lock.section("held") == {"inf003": "removed"}


def test_a_released_hole_keeps_the_others_in_place_and_a_new_node_takes_it(tmp_path: Path) -> None:
    path = _copy("l40s-inference", tmp_path)
    before = _locked_render(path)
    _edit(path, _take_out("inf", 3))
    _locked_render(path)
    released = _locked_render(path, release_removed=True)
    lock = read_lock(path)
    assert lock is not None and lock.section("held") == {} and "inf003" not in lock.section("hosts")
    old_ports = {k: v for k, v in before["ports"].items() if "/inf003:" in k}
    assert old_ports and set(old_ports.values()) <= set(lock.section("ports").values())  # the hole, kept
    assert all(released["ports"][k] == v for k, v in before["ports"].items() if k in released["ports"])
    _edit(path, _grow("inf", 1))  # inf009: a new node of the same width takes the hole
    grown = _locked_render(path)
    assert {k.replace("inf009", "inf003"): v for k, v in grown["ports"].items() if "/inf009:" in k} == old_ports
    assert all(grown["ports"][k] == v for k, v in before["ports"].items() if k in grown["ports"] and "inf003" not in k)


def test_numbers_the_lock_holds_are_kept_and_a_new_one_takes_a_free_one() -> None:
    """Node groups in the pod, in blueprint order: gpu 0, mgmt 1, login 2, ufm 3, stor 4. The lock gives gpu 4
    and a group that is gone 0: stor, whose place 4 is gpu's, takes the lowest number no group holds (5), the
    others their places; the gone group's number stays in the next lock."""
    valid = load_valid(REPO / "blueprints" / "h200-training-pod.yaml")
    lock = parse_lock("version: 1\nblueprint: h200-training-pod\nnumbers:\n  group/ghost: 0\n  group/gpu: 4\n")
    analysis = analyse(valid, keep=Keep(lock=lock))
    numbers = analysis.topo.numbers
    groups = {key: n for key, n in numbers.items() if key.startswith("group/")}
    assert groups == {"group/gpu": 4, "group/mgmt": 1, "group/login": 2, "group/ufm": 3, "group/stor": 5}
    assert {numbers[f"network/{n}"] for n in ("compute", "storage", "inband", "oob")} == {0, 1, 2, 3}
    assert parse_lock(lock_of(analysis)).section("numbers")["group/ghost"] == "0"


def test_a_bond_the_lock_holds_is_kept_and_a_new_node_on_its_number_takes_the_next_free() -> None:
    """gpu002 holds bond 1 on the storage pair (gpu001's place): it keeps it, gpu001 (new to the lock's bonds)
    takes the next number free, and no two nodes share a bond."""
    path = REPO / "blueprints" / "h200-training-pod.yaml"
    valid = load_valid(path)
    text = "version: 1\nblueprint: h200-training-pod\nbonds:\n  storage-leaf001/gpu002: 1\n"
    bonds = analyse(valid, keep=Keep(lock=parse_lock(text))).topo.bonds["storage-leaf001"]
    fresh = analyse(valid).topo.bonds["storage-leaf001"]
    assert fresh["gpu001"] == 1 and fresh["gpu002"] != 1  # without the lock: by port place
    assert bonds["gpu002"] == 1 and bonds["gpu001"] == 2
    assert len(set(bonds.values())) == len(bonds)


def test_leaf_spine_cables_that_must_move_are_reported_by_plan_render_and_diff(tmp_path: Path) -> None:
    """The pod grown into a second scalable unit: `plan` and `render` warn CF-IDENT-006 with the count and the
    switches (TRUNKS_MOVED: 128), and `diff` against the render before lists each of the 128 cables."""
    path = _copy("h200-training-pod", tmp_path)
    out = tmp_path / "out"
    assert run_cli("render", str(path), "-o", str(out)).returncode == 0
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(path, old / path.name)
    shutil.copy(lock_path(path), lock_path(old / path.name))
    _edit(path, _grow("gpu", 5, ["C"]))
    for command in (("plan", str(path)), ("render", str(path), "-o", str(out))):
        result = run_cli(*command)
        assert result.returncode == 0, result.stdout + result.stderr
        said = f"warning {codes.TRUNKS_REPATCHED}: 128 switch-to-switch cables the lock file holds move"
        assert said in result.stdout and "from compute-spine001 (32)" in result.stdout
        assert "to compute-spine005 (32), compute-spine006 (32), compute-spine007 (32)" in result.stdout
    diff = diff_specs(str(old / path.name), str(path))
    trunk_moves = diff["identity_moves"]["trunks"]
    assert _trunk_moves(diff["identity_moves"]) == TRUNKS_MOVED[("h200-training-pod", "grow gpu by 5")]
    assert "### Switch-to-switch cables re-patched (128)" in diff_markdown(diff)
    assert len(trunk_moves) == 128


def _expanded(path: Path) -> ExpandContext:
    """The expand stage's context after every expander, with the lock file beside `path`."""
    valid = load_valid(path)
    ctx = ExpandContext(valid, Topology(valid.blueprint.name), keep=keep_of(valid))
    for expander in EXPANDERS:
        expander(ctx)
    return ctx


def test_a_mesh_the_lock_holds_whole_is_not_read_again_and_a_cable_patched_by_hand_is_found(tmp_path: Path) -> None:
    path = _copy("h200-training-pod", tmp_path)
    shutil.copy(lock_path(REPO / "blueprints" / "h200-training-pod.yaml"), lock_path(path))
    ctx = _expanded(path)
    assert ctx.keep.lock is not None
    held = ctx.keep.lock.section("trunks")
    meshed = sum(1 for key in held if key.startswith("compute/"))  # the rest: the in-band leaf pairs' peer links
    assert sum(map(len, ctx.trunks_as_held)) == meshed == 256  # a render after a render: every mesh as held
    assert trunks_moved(ctx.topo, ctx.keep.lock, PATCHED_TIERS, ctx.trunks_as_held) is None
    # one cable of the lock patched elsewhere by hand: the pod's one mesh is laid out by kept_mesh's loop
    text = lock_path(path).read_text(encoding="utf-8")
    first = next(line for line in text.splitlines() if line.startswith("  compute/compute-leaf001:"))
    key, value = first.strip().split(": ")
    lock_path(path).write_text(text.replace(first, f"  {key}: {value.partition(':')[0]}:ib64/2"), encoding="utf-8")
    ctx = _expanded(path)
    assert ctx.keep.lock is not None
    assert ctx.trunks_as_held == []
    found = trunks_moved(ctx.topo, ctx.keep.lock, PATCHED_TIERS, ctx.trunks_as_held)
    assert (
        found is not None
        and f"1 switch-to-switch cables the lock file holds move to other ports ({len(held) - 1} stay)"
        in (found.message)
    )
