"""File-system steps the writer builds on: an exclusive lock per output folder, a hold on a folder being
written, and an atomic folder swap."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _renameat2_exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def swap_in(staging: Path, target: Path, old: Path) -> None:
    """Make `staging` the folder at `target`; the previous folder ends up at `old`. Where the kernel can swap
    both in one step, `target` is never missing, even if the process is killed in between."""
    if not target.exists():
        os.rename(staging, target)
        return
    if _renameat2_exchange(staging, target):
        os.rename(staging, old)
        return
    # Two renames; a kill between them leaves the old tree at `old`, which the next run restores.
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old, target)
        raise


class FolderBusy(Exception):
    """Another process holds the lock on the output folder."""


@contextlib.contextmanager
def locked(parent: Path, timeout_s: float = 120.0) -> Iterator[None]:
    """Hold an exclusive lock on `parent` (the folder that holds the output folder) while writing."""
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise FolderBusy(str(parent)) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def hold(folder: Path) -> int:
    """Lock `folder` for as long as the returned descriptor is open (the kernel lets go when the process dies),
    so that `held` tells a folder a running render writes into from one a killed render left behind."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def held(folder: Path) -> bool:
    """Whether a live process holds `folder` (see `hold`)."""
    try:
        os.close(hold(folder))
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False
