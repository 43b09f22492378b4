"""Python's cycle collector paused while a stage builds a large object graph.

Expansion and the checks make millions of links, tuples and lists that form no reference cycles; the
collector still walks the whole growing heap again and again as it grows (about a third of expansion at
100,000 GPUs). Reference counting frees everything as before.

When the pause ends, what is alive is frozen (`gc.freeze`): left on, the collector's next passes would walk
the stage's millions of objects once more each (0.2-0.3 s at 100,000 GPUs per pass), although they live on
for the stages after. A reference cycle among the frozen objects is not freed (about a hundred objects per
render, measured over repeated renders in one process).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Collector off for the block, then back as it was (a caller that turned it off keeps it off), with what
    the block left alive frozen."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
