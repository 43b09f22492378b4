"""The breakout of each switch cage whose sub-ports are cabled, by the model's breakout table (catalog
`breakout_modes`, the Cumulus Linux user guide's): the split, whether the table allows it on that cage, and
the next cage disabled where the table says so. Rendered into NVUE (render/nvue_model.py) and checked
(checks/breakouts.py, CF-PORT-003)."""

from __future__ import annotations

import re

from ..catalog import Catalog, Switch
from .ports import cage_split, port_group_of, sub_port_speed

SUB_PORT = re.compile(r"(.*[0-9])s([0-9]+)")
"""A breakout sub-port, 'swp1s0' of cage 'swp1' (Cumulus Linux names)."""


def _next_cage(cage: str) -> str:
    match = re.fullmatch(r"(.*?)([0-9]+)", cage)
    assert match
    return f"{match.group(1)}{int(match.group(2)) + 1}"


def breakouts(catalog: Catalog, model: str, ports: list[tuple[str, float]]) -> dict[str, tuple[str, bool]]:
    """Parent cage -> (breakout, whether the switch's breakout table allows it) for cages whose sub-ports
    ('swp1s0') are cabled, and 'disabled' on the cage after one the table splits only with its neighbour off
    (SN4600C 4x, SN5600 8x). The split follows the table (catalog `breakout_modes`) where the model has one."""
    switch = catalog.require(model, Switch)
    out: dict[str, tuple[str, bool]] = {}
    for name, speed in ports:
        match = SUB_PORT.fullmatch(name)
        group = port_group_of(switch, name) if match else None
        if not match or group is None:
            continue
        sub = sub_port_speed(group, speed)
        mode = group.breakout_mode(sub)
        if mode is None:
            out[match.group(1)] = f"{cage_split(group, speed)[0]}x", not group.breakout_modes
            continue
        cage = match.group(1)
        odd = int(re.sub(r"^.*?([0-9]+)$", r"\1", cage)) % 2 == 1
        out[cage] = mode.mode, mode.cages == "all" or odd
        if mode.disables_next:
            out[_next_cage(cage)] = "disabled", True
    return out
