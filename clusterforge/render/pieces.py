"""A file's text in pieces, for a text too large to be made whole.

At 1,000,000 GPUs cabling.csv is 1.4 GB and links.csv 0.9 GB. Made whole, each is its lines (or cells) and
then their join, twice the memory at the render's peak; in pieces of some thousand lines, a piece's lines are
freed (and their memory reused for the next piece's) as soon as it is joined, and the writer writes the pieces
one after the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")

LINES_PER_PIECE = 8192


class Pieces(list[str]):
    """The text is the pieces joined, in order."""


FileText = str | Pieces
"""What a renderer gives for a file."""


def whole(text: FileText) -> str:
    return text if isinstance(text, str) else "".join(text)


def length(text: FileText) -> int:
    """Characters in the text."""
    return len(text) if isinstance(text, str) else sum(map(len, text))


def batches(items: Iterable[T], size: int | None = None) -> Iterator[list[T]]:
    """`items` in lists of `size` (LINES_PER_PIECE unless given; the last one shorter)."""
    size = size or LINES_PER_PIECE
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch
