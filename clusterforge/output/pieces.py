"""A file's text in pieces, made as they are read, for a text too large to be made whole.

At 1,000,000 GPUs cabling.csv is 1.4 GB and links.csv 0.9 GB. Made whole, each is its lines (or cells) and
then their join, twice the memory at the render's peak. In pieces of some thousand lines made one at a time
as the writer takes them, a piece is written and freed before the next is made: the tables never stand whole
in memory, and the memory of one piece is reused for the next instead of 2.3 GB of fresh pages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")

LINES_PER_PIECE = 8192


class Pieces:
    """The text is the pieces joined, in order; `make` gives them anew at each reading, so whatever it reads
    must stay as it is until the text is written."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[], Iterable[str]]) -> None:
        self._make = make

    def __iter__(self) -> Iterator[str]:
        return iter(self._make())


FileText = str | Pieces
"""What a renderer gives for a file."""


def whole(text: FileText) -> str:
    return text if isinstance(text, str) else "".join(text)


def length(text: FileText) -> int:
    """Characters in the text (a Pieces is made to count it)."""
    return len(text) if isinstance(text, str) else sum(map(len, text))


def batches(items: Iterable[T], size: int | None = None) -> Iterator[list[T]]:
    """`items` in lists of `size` (LINES_PER_PIECE unless given; the last one shorter)."""
    size = size or LINES_PER_PIECE
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch
