"""The host data files are written from their parts (render/ansible/host_data.py `_HostTexts`); they must be what the
JSON encoder writes of the same entries, and a value with template syntax or a character to escape sends its
rack's file to the encoder, which writes it unsafe and escaped."""

from __future__ import annotations

import json
from dataclasses import replace

from factories import dgx_blueprint

from clusterforge.expand import expand
from clusterforge.render.ansible.host_data import build_host_data, host_data_files, host_data_json, host_data_path
from clusterforge.render.ansible.inventory_json import UNSAFE_KEY


def test_the_written_files_are_the_encoders_text_of_the_entries() -> None:
    topo, _ = expand(dgx_blueprint(64))
    files, _ = host_data_files(topo)
    entries = build_host_data(topo)
    assert files and files.keys() == {host_data_path(rack) for rack in entries}
    for rack, hosts in entries.items():
        assert files[host_data_path(rack)] == host_data_json(hosts)
    first = json.loads(files[host_data_path(next(iter(entries)))])
    rails = next(iter(first.values()))["cf_rails"]
    assert sorted(rails) == [str(r) for r in range(1, 9)] and {"address", "leaf", "leaf_port"} <= rails["1"].keys()


def test_a_port_name_with_template_syntax_is_written_by_the_encoder() -> None:
    topo, _ = expand(dgx_blueprint(64))
    index, link = next((i, x) for i, x in enumerate(topo.links) if x.tier == "node-leaf" and x.rail == 1)
    topo.links[index] = replace(link, b_port="{{ lookup('pipe', 'id') }} <&>")
    rack = topo.devices[link.a].rack
    assert rack is not None
    text = host_data_files(topo)[0][host_data_path(rack)]
    assert text == host_data_json(build_host_data(topo)[rack])
    leaf_port = json.loads(text)[link.a]["cf_rails"]["1"]["leaf_port"]
    assert leaf_port == {UNSAFE_KEY: "{{ lookup('pipe', 'id') }} <&>"}
    assert "\\u003c\\u0026\\u003e" in text and "<" not in text
