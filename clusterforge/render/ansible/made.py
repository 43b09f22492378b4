"""What the Ansible family remembers of what it rendered, carried from the process that rendered it to the one
that runs the consistency check (pipeline.render_blueprint renders it beside the checks).

The consistency check compares the inventory and the host data with the topology; it reads them from what the
family was made of instead of parsing the files again (0.2 s at 100,000 GPUs, some 3 s at 1,000,000) when the
files are exactly those texts. Across processes the structures go without the texts: the receiver has the
files already.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...expand.topology import Topology
from .ansible import INVENTORY, inventory_as_made, made_inventory, remember_inventory
from .host_data import HostFacts, host_data_as_made, made_host_data, remember_host_data

Carried = tuple[tuple[int, dict[str, Any]] | None, tuple[list[str], dict[str, HostFacts]] | None]
"""The inventory's groups with the length of the JSON text at the start of its file, and the host data files'
paths with each host's facts; None for what the files do not hold as made."""


def carried_made(topo: Topology, files: Mapping[str, str]) -> Carried:
    """What the family remembers for `topo`, where `files` (as written) are its texts."""
    inventory, host_data = made_inventory(topo), made_host_data(topo)
    text = files.get(INVENTORY)
    groups = None if inventory is None or text is None else inventory_as_made(topo, text)
    paths = [] if host_data is None else list(host_data[0])
    facts = None if host_data is None else host_data_as_made(topo, files, paths)
    return (
        None if inventory is None or groups is None else (len(inventory[0]), groups),
        None if facts is None else (paths, facts),
    )


def adopt_made(topo: Topology, carried: Carried, files: Mapping[str, str]) -> None:
    """Remember for `topo` what another process's family remembered, its texts taken from `files`."""
    inventory, host_data = carried
    if inventory is not None:
        length, groups = inventory
        remember_inventory(topo, files[INVENTORY][:length], groups)
    if host_data is not None:
        paths, facts = host_data
        remember_host_data(topo, {path: files[path] for path in paths}, facts)
