"""Breakouts the switch OS accepts, read back from the rendered NVUE files of every example.

The tables below are quoted from the Cumulus Linux 5.14 user guide, Switch Port Attributes, Breakout Ports
(CumulusNetworks/docs, content/cumulus-linux-514/.../Switch-Port-Attributes.md), independently of the catalog:
- SN4600C: 'Only 32x QSFP28 ports can break out into 4x SFP28. You must disable the adjacent QSFP28 port'
  (25G, 10G, 1G); 'All 64x QSFP28 ports can break out into 2x QSFP28 without disabling ports' (50G); and,
  under Configure a Breakout Port, the SN4600c needs 'the subsequent even-numbered port' disabled for 4x.
- SN5600: 2x = 400G, 4x = 200G on all 64 cages; 100G and 50G as 8x on 32 cages, adjacent disabled; and
  (Configure a Breakout Port) a split port may be set below its split's speed, so 100G also as 4x.
- SN2201 uplinks: 4x (25G, 10G, 1G) or 2x (50G), no port disabled.
On main the SN4600C in-band leaves split `2x` with 25G sub-ports: 25G is one 25G lane, a 2x sub-port two
lanes, and the table lists 25G only as 4x with the neighbour disabled.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from helpers import BLUEPRINTS

from clusterforge.checks.breakouts import _with_sub_ports, check_breakouts
from clusterforge.checks.context import CheckContext
from clusterforge.expand.breakouts import breakouts
from clusterforge.pipeline import analyse, load_valid, render_analysis

# model -> split -> (sub-port speeds in G, only odd cages with the next one disabled)
TABLES = {
    "nvidia/sn4600c": {"2x": ({50}, False), "4x": ({25, 10, 1}, True)},
    "nvidia/sn5600": {"2x": ({400}, False), "4x": ({200, 100}, False), "8x": ({100, 50}, True)},
    "nvidia/sn2201": {"2x": ({50}, False), "4x": ({25, 10, 1}, False)},
}
_MODEL = re.compile(r"^# clusterforge: NVUE configuration of \S+ \(.*, (?P<model>[a-z0-9/-]+)\)$", re.M)


@pytest.fixture(scope="module", params=BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def nvue(request: pytest.FixtureRequest) -> dict[str, str]:
    files = render_analysis(analyse(load_valid(request.param)))
    return {path: text for path, text in files.items() if path.startswith("switches/nvue/")}


def test_every_breakout_is_in_the_models_table(nvue: dict[str, str]) -> None:
    checked = 0
    for path, text in nvue.items():
        match = _MODEL.search(text)
        assert match, path
        table = TABLES.get(match["model"])
        interfaces = yaml.safe_load(text)[0]["set"].get("interface", {})
        for cage, spec in interfaces.items():
            mode = spec.get("link", {}).get("breakout")
            if mode is None or mode == "disabled":
                continue
            assert table is not None and mode in table, (path, cage, mode)
            speeds, odd_only = table[mode]
            number = int(cage.removeprefix("swp"))
            subs = {name: s for name, s in interfaces.items() if name.startswith(f"{cage}s")}
            assert subs and len(subs) <= int(mode[:-1]), (path, cage)
            for name, sub in subs.items():
                assert int(sub["link"]["speed"].removesuffix("G")) in speeds, (path, name, mode)
            if odd_only:
                neighbour = f"swp{number + 1}"
                assert number % 2 == 1, (path, cage, mode)
                assert interfaces.get(neighbour, {}).get("link", {}).get("breakout") == "disabled", (path, cage)
                assert not any(n == neighbour or n.startswith(f"{neighbour}s") for n in interfaces if n != neighbour)
                assert "description" not in interfaces[neighbour]
            checked += 1
    assert checked or not nvue


def test_the_files_name_their_cumulus_release(nvue: dict[str, str]) -> None:
    """`lacp-bypass: on` is the syntax of Cumulus Linux 5.14 and earlier (5.15 user guide, New and Changed
    NVUE Commands: 'bond lacp-bypass on|off' became 'enabled|disabled'); a file using it must say so."""
    for path, text in nvue.items():
        assert "# for Cumulus Linux 5.14 " in text, path
        body = yaml.safe_load(text)[0]["set"]
        for name, spec in body.get("interface", {}).items():
            if "lacp-bypass" in spec.get("bond", {}):
                assert spec["bond"]["lacp-bypass"] is True, (path, name)  # `on` (YAML 1.1), not "enabled"


def test_h200_inband_leaf_runs_25g_as_4x_with_swp2_disabled() -> None:
    files = render_analysis(analyse(load_valid(Path("blueprints/h200-training-pod.yaml"))))
    interfaces = yaml.safe_load(files["switches/nvue/inband-leaf001.yaml"])[0]["set"]["interface"]
    assert interfaces["swp1"]["link"] == {"breakout": "4x"}
    assert [interfaces[f"swp1s{i}"]["link"]["speed"] for i in range(4)] == ["25G"] * 4
    assert interfaces["swp2"]["link"] == {"breakout": "disabled"}
    assert interfaces["swp3"]["link"] == {"breakout": "4x"}


def test_a_split_the_table_does_not_allow_is_found() -> None:
    # the SN4600C splits 4x (25G) only on odd cages, the next one disabled (table above): a 25G in-band node
    # moved from swp1s0 to swp62s0 splits an even cage, whose neighbour swp63 carries nodes of its own
    analysis = analyse(load_valid(next(p for p in BLUEPRINTS if p.stem == "h200-training-pod")))
    link = next(x for x in analysis.topo.links if x.b == "inband-leaf001" and x.b_port == "swp1s0")
    link.b_port = "swp62s0"
    found = [f.message for f in check_breakouts(CheckContext(analysis.valid, analysis.topo))]
    assert found == [
        "inband-leaf001 (nvidia/sn4600c): swp62 splits 4x, which its breakout table does not allow there",
        "inband-leaf001 (nvidia/sn4600c): swp63 is cabled, but its breakout table disables it (its neighbour is split)",
    ]


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def test_the_check_looks_at_every_switch_that_splits_a_cage(blueprint: Path) -> None:
    analysis = analyse(load_valid(blueprint))
    topo, catalog = analysis.topo, analysis.valid.catalog
    split = {
        name
        for name, device in topo.devices.items()
        if device.kind == "switch"
        and breakouts(
            catalog,
            device.model,
            [
                (x.b_port if x.b == name else x.a_port, x.speed_gbps)
                for x in topo.links_of(name)
                if x.tier not in ("oob", "mgmt")
            ],
        )
    }
    assert split  # every example splits cages (in-band or compute leaves)
    assert split <= _with_sub_ports(topo, set(topo.devices))
