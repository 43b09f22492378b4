"""render/made.py: what the Ansible family remembers goes to another process without its texts and comes back
the same; files that are not the texts it made carry nothing (the consistency check then reads the files)."""

from __future__ import annotations

import pickle
import sys

from helpers import REPO

from clusterforge.expand.topology import Topology
from clusterforge.pipeline import analyse, load_valid
from clusterforge.render import RenderContext
from clusterforge.render.ansible.ansible import INVENTORY, made_inventory, render_ansible
from clusterforge.render.ansible.host_data import made_host_data
from clusterforge.render.ansible.made import adopt_made, carried_made

ANSIBLE = sys.modules["clusterforge.render.ansible.ansible"]
HOST_DATA = sys.modules["clusterforge.render.ansible.host_data"]


def _rendered() -> tuple[Topology, dict[str, str]]:
    analysis = analyse(load_valid(REPO / "blueprints/h200-training-pod.yaml"))
    return analysis.topo, render_ansible(RenderContext(analysis.valid, analysis.topo, analysis.findings))


def test_what_was_made_crosses_over_and_comes_back_the_same() -> None:
    topo, files = _rendered()
    inventory, host_data = made_inventory(topo), made_host_data(topo)
    assert inventory is not None and host_data is not None
    carried = pickle.loads(pickle.dumps(carried_made(topo, files)))
    ANSIBLE._MADE.clear()
    HOST_DATA._MADE.clear()
    adopt_made(topo, carried, files)
    assert made_inventory(topo) == inventory
    assert made_host_data(topo) == host_data


def test_files_changed_after_they_were_made_carry_nothing() -> None:
    topo, files = _rendered()
    changed = dict(files)
    changed[INVENTORY] = " " + files[INVENTORY]
    host_data_path = next(path for path in files if path.startswith("ansible/host_data/"))
    changed[host_data_path] = files[host_data_path].replace("{", "{ ", 1)
    assert carried_made(topo, changed) == (None, None)
