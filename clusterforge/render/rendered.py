"""What a renderer returns when its family also made facts for the consistency check (render/ansible/made.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ..output.pieces import FileText
from .ansible.made import Made


class Rendered(NamedTuple):
    files: Mapping[str, FileText]
    made: Made | None = None
