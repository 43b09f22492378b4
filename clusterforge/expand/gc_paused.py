"""Python's cycle collector paused while a stage builds a large object graph.

Expansion and the checks make millions of links, tuples and lists that form no reference cycles; the
collector still walks the whole growing heap again and again as it grows (about a third of expansion at
100,000 GPUs). Reference counting frees everything as before; only cycles wait until the pause ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Collector off for the block, then back as it was (a caller that turned it off keeps it off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
