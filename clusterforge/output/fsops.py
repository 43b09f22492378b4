"""File-system steps the writer builds on: an exclusive lock per output folder, a hold on a folder being
written, an atomic folder swap, the mount points inside a folder and removing what a killed render left; and a
hold on a file being written (the lock file's temporary), with the removal of those a killed render left.
The folder steps name what they work on by a folder descriptor and a name in it; no step follows a symbolic
link it is given."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Collection, Iterator
from pathlib import Path

from .write_behind_child import FOLDER_FLAGS

_RENAME_EXCHANGE = 2
MOUNTINFO = Path("/proc/self/mountinfo")


def _renameat2_exchange(dir_fd: int, a: str, b: str) -> bool:
    """Swap two names in the folder `dir_fd` in one step (Linux renameat2 RENAME_EXCHANGE); False where the
    system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(dir_fd, os.fsencode(a), dir_fd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def swap_in(dir_fd: int, staging: str, target: str, old: str) -> None:
    """Make `staging` the folder at `target` (names in the folder `dir_fd`); the previous folder ends up at
    `old`. Where the kernel can swap both in one step, `target` is never missing, even if the process is killed
    in between."""
    at = {"src_dir_fd": dir_fd, "dst_dir_fd": dir_fd}
    try:
        os.lstat(target, dir_fd=dir_fd)
    except FileNotFoundError:
        os.rename(staging, target, **at)
        return
    if _renameat2_exchange(dir_fd, staging, target):
        os.rename(staging, old, **at)
        return
    # Two renames; a kill between them leaves the old tree at `old`, which the next run restores.
    os.rename(target, old, **at)
    try:
        os.rename(staging, target, **at)
    except BaseException:
        os.rename(old, target, **at)
        raise


class FolderBusy(Exception):
    """Another process holds the lock on the output folder."""


@contextlib.contextmanager
def locked(parent: Path, timeout_s: float = 120.0) -> Iterator[int]:
    """Hold an exclusive lock on `parent` (the folder that holds the output folder) while writing; the
    descriptor of `parent` the lock is on."""
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
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
        yield fd
    finally:
        os.close(fd)


def hold(folder: str | Path, dir_fd: int | None = None) -> int:
    """Lock `folder` (never a symbolic link's target) for as long as the returned descriptor is open (the kernel
    lets go when the process dies), so that `held` tells a folder a running render writes into from one a
    killed render left behind."""
    return _locked_or_closed(os.open(folder, FOLDER_FLAGS, dir_fd=dir_fd))


def _locked_or_closed(fd: int) -> int:
    """`fd` with an exclusive lock taken on it; closed, and the error raised, when it cannot be."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def held(dir_fd: int, name: str) -> bool:
    """Whether a live process holds the folder `name` in the folder `dir_fd` (see `hold`); never for what is
    not a folder (a file, a link, a FIFO: opened as a folder, it fails at once)."""
    try:
        os.close(hold(name, dir_fd))
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def _unescaped(field: bytes) -> str:
    """A path as /proc/self/mountinfo writes it (space, tab, newline and backslash as octal escapes)."""
    return os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), field))


def mount_points(folder: Path) -> set[str]:
    """Where file systems are mounted at or below `folder` (an absolute path without links), relative to it
    ("" for `folder` itself), as /proc/self/mountinfo lists them (bind mounts of the same file system among
    them); empty where it cannot be read."""
    try:
        lines = MOUNTINFO.read_bytes().splitlines()
    except OSError:
        return set()
    found = set()
    for line in lines:
        fields = line.split(b" ")
        if len(fields) > 4:
            point = _unescaped(fields[4])
            if point == str(folder):
                found.add("")
            elif point.startswith(f"{folder}/".replace("//", "/")):
                found.add(point[len(str(folder)) :].strip("/"))
    return found


def remove(dir_fd: int, name: str, mounts: Collection[str] = ()) -> None:
    """Remove `name` from the folder `dir_fd`, whatever it is: a link (never what it points to), a file, a FIFO,
    a folder with all it holds. A file system mounted inside (by device, or one of `mounts`, relative paths
    from `name`) is left as it is, and so are the folders holding it (OSError: not empty)."""
    st = os.lstat(name, dir_fd=dir_fd)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    fd = os.open(name, FOLDER_FLAGS, dir_fd=dir_fd)
    try:
        _empty(fd, "", st.st_dev, mounts)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dir_fd)


def _empty(fd: int, rel: str, dev: int, mounts: Collection[str]) -> None:
    with os.scandir(fd) as entries:
        inside = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_dir in inside:
        path = f"{rel}/{name}" if rel else name
        if not is_dir:
            if path not in mounts:  # a file bind-mounted there stays
                os.unlink(name, dir_fd=fd)
            continue
        folder = os.open(name, FOLDER_FLAGS, dir_fd=fd)
        try:
            if path in mounts or os.fstat(folder).st_dev != dev:
                continue  # another file system: its folder stays, and so do the ones holding it
            _empty(folder, path, dev, mounts)
        finally:
            os.close(folder)
        os.rmdir(name, dir_fd=fd)


def hold_file(path: Path) -> int:
    """An open descriptor of the regular file `path` with an exclusive lock on it, held until it is closed (the
    kernel lets go when the process dies), so that `remove_stale` tells a file a running render writes from one
    a killed render left behind."""
    return _locked_or_closed(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC))


def remove_stale(folder: Path, prefix: str, older_than_s: float) -> list[str]:
    """Remove the regular files of `folder` named `prefix` and eight `mkstemp` characters that no live process
    holds (`hold_file`) and that nothing wrote for `older_than_s` seconds (a file made a moment ago may not be
    held yet); the names removed. Never follows a link."""
    removed: list[str] = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return removed
    for name in names:
        made_by_mkstemp = name.startswith(prefix) and _TEMPORARY.fullmatch(name[len(prefix) :])
        if made_by_mkstemp and _remove_if_stale(folder / name, older_than_s):
            removed.append(name)
    return removed


_TEMPORARY = re.compile(r"[a-z0-9_]{8}")
"""What `tempfile.mkstemp` puts after its prefix."""


def _remove_if_stale(path: Path, older_than_s: float) -> bool:
    """Removes `path` when it is a regular file, unheld and old enough; whether it did."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or time.time() - info.st_mtime < older_than_s:
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path.unlink()
        return True
    except OSError:  # held by a live process (BlockingIOError), or gone meanwhile
        return False
    finally:
        os.close(fd)
