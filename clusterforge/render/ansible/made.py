"""What the Ansible family made its files from ("made" facts), returned with its files: the consistency check
reads the inventory's groups and each host's facts from them instead of parsing the files again (0.2 s at
100,000 GPUs, some 3 s at 1,000,000), when the files are exactly the texts made. A family rendered in another
process sends them back without the texts (`carried`): the receiver has the files already (`adopted`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from .host_data import HostFacts


@dataclass(frozen=True)
class MadeInventory:
    path: str
    text: str
    """The JSON text the inventory's template was given."""
    groups: dict[str, Any]
    """`all.children`, shared vars factored, as the text was written from them."""


@dataclass(frozen=True)
class MadeHostData:
    texts: dict[str, str]
    """The host data files' texts by path."""
    facts: dict[str, HostFacts]
    """Each host's facts, as the texts were written from them."""


@dataclass(frozen=True)
class Made:
    inventory: MadeInventory | None = None
    host_data: MadeHostData | None = None

    def merged(self, other: Made | None) -> Made:
        """These facts with those `other` has."""
        if other is None:
            return self
        return Made(other.inventory or self.inventory, other.host_data or self.host_data)

    def inventory_groups(self, path: str, text: str) -> dict[str, Any] | None:
        """The groups the inventory file `text` was written from, when it is the JSON text made (and at most
        white space after it); else None."""
        made = self.inventory
        if made is None or made.path != path or not text.startswith(made.text) or text[len(made.text) :].strip():
            return None
        return made.groups

    def host_facts(self, files: Mapping[str, str], paths: Collection[str]) -> dict[str, HostFacts] | None:
        """Each host's facts, when the files at `paths` are exactly the host data files made; else None."""
        made = self.host_data
        if made is None or len(made.texts) != len(paths) or not all(made.texts.get(p) == files[p] for p in paths):
            return None
        return made.facts


Carried = tuple[tuple[str, int, dict[str, Any]] | None, tuple[list[str], dict[str, HostFacts]] | None]
"""The inventory's path, the length of the JSON text at the start of its file and its groups; the host data
files' paths with each host's facts; None for what the files do not hold as made."""


def carried(made: Made, files: Mapping[str, str]) -> Carried:
    """`made` without its texts, where `files` (as written) are the family's texts, for another process."""
    inventory = made.inventory
    text = None if inventory is None else files.get(inventory.path)
    groups = None if inventory is None or text is None else made.inventory_groups(inventory.path, text)
    paths = [] if made.host_data is None else list(made.host_data.texts)
    facts = None if made.host_data is None else made.host_facts(files, paths)
    return (
        None if inventory is None or groups is None else (inventory.path, len(inventory.text), groups),
        None if facts is None else (paths, facts),
    )


def adopted(carried: Carried, files: Mapping[str, str]) -> Made:
    """What another process's family made, its texts taken from `files`."""
    inventory, host_data = carried
    return Made(
        None if inventory is None else MadeInventory(inventory[0], files[inventory[0]][: inventory[1]], inventory[2]),
        None if host_data is None else MadeHostData({path: files[path] for path in host_data[0]}, host_data[1]),
    )
