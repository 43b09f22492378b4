"""glibc's allocator told to keep freed memory in the process instead of handing it back to the system.

A render frees and allocates gigabytes over its stages (each family's text, the cable table's columns). By
default glibc returns a large free block to the system at once (an `mmap`ed one when it is freed, the top of
the heap once it passes 128 KiB) and the next stage asks for it again: each page then costs a fault and is
zeroed by the kernel once more (a third of a million-GPU render's system time: docs/architecture.md, Memory).
Elsewhere (another C library, no `mallopt`) nothing changes.
"""

from __future__ import annotations

import ctypes
from functools import cache

_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_MAX = -4
_SETTINGS = (  # mallopt option, value
    (_M_MMAP_MAX, 0),  # large blocks from the heap, not from their own mmap that free() unmaps
    (_M_TRIM_THRESHOLD, 2**31 - 1),  # never give the heap's free top back
    (_M_TOP_PAD, 64 << 20),  # grow the heap 64 MiB at a time
)


@cache
def keep_freed_memory() -> bool:
    """Set glibc's `mallopt` for a process that allocates and frees large blocks over and over; once per
    process. True when every setting took."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return all(mallopt(option, value) == 1 for option, value in _SETTINGS)
