"""The write-behind process (write_behind.py): writes the files a render sends it into one folder, each with
its sha256, while the render goes on.

Run by path with `python -I -S write_behind_child.py FOLDER RING FREED` (FOLDER, RING and FREED descriptors
passed to it): it needs nothing but the standard library, so it starts in milliseconds and shares nothing with
the render's memory but the ring. It writes below FOLDER through folder descriptors only, never through a
symbolic link (`open_folder`), as the render does. The render
puts its bytes into the ring (RING, the descriptor of a shared memory, used round and round)
and says on this process's standard input how far it has put them: positions (`<Q`, bytes put since the
start), each further than the last. This process writes the files straight from the ring and says on FREED
how far it has written them, so that the render can put more there. In that stream of bytes come frames of an
operation byte and a payload length (`<cQ`), then the payload: `F` a new file (its path, relative to FOLDER),
`D` the next bytes of that file, `E` the end of the file. At the end of its input it prints, as JSON, the
digest of each file in the order they came (`{"digests": [[path, sha256], ...]}`); on a failure it prints
`{"error": {...}}` and ends at once, without reading the rest.
"""

import contextlib
import hashlib
import json
import mmap
import os
import struct
import sys
from collections.abc import Iterator
from typing import Protocol

FRAME = struct.Struct("<cQ")
POSITION = struct.Struct("<Q")
FREED_EVERY = 4 << 20
"""Bytes written between two words to the render of how far this process has come (and whenever it has
written all it was told of)."""


class Source(Protocol):
    def read(self, size: int, /) -> bytes: ...

    def views(self, size: int, /) -> Iterator[memoryview]: ...


class Positions:
    """Positions (`POSITION`) that come on a pipe, the latest kept; a read may end inside one, which the next
    read completes. Both ends of the ring read them: the render how far this process has written, this
    process how far the render has put."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.latest = 0
        self._partial = b""

    def read(self) -> bool:
        """Read what has come (waiting until something has); False at the end of the input."""
        said = os.read(self.fd, 1 << 16)
        if not said:
            return False
        said = self._partial + said
        whole = len(said) - len(said) % POSITION.size
        if whole:
            self.latest = POSITION.unpack_from(said, whole - POSITION.size)[0]
        self._partial = said[whole:]
        return True


class RingReader:
    """The bytes the render puts into `ring`, as far as the positions read from `told` say; how far they were
    taken goes to `freed` (every FREED_EVERY bytes, and whenever all that was told is taken)."""

    def __init__(self, ring: memoryview, told: int, freed: int) -> None:
        self._ring, self._told, self._freed_pipe = ring, Positions(told), freed
        self._taken = self._said = 0

    def views(self, size: int, /) -> Iterator[memoryview]:
        """The next `size` bytes (fewer only at the end of the input), a view of the ring at a time, each
        valid until the next is asked for (its bytes are then freed for the render to put more there)."""
        while size and (self._taken < self._told.latest or self._wait()):
            start = self._taken % len(self._ring)
            count = min(size, self._told.latest - self._taken, len(self._ring) - start)
            yield self._ring[start : start + count]
            self._taken += count
            size -= count
            if self._taken - self._said >= FREED_EVERY or self._taken == self._told.latest:
                self._said = self._taken
                write_all(self._freed_pipe, POSITION.pack(self._taken))

    def read(self, size: int, /) -> bytes:
        """The next `size` bytes (fewer only at the end of the input), copied."""
        return b"".join([bytes(view) for view in self.views(size)])

    def _wait(self) -> bool:
        """Read positions until one is further than what was taken; False at the end of the input."""
        while self._told.latest == self._taken:
            if not self._told.read():
                return False
        return True


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """All of `data` into `fd` (a write may take only part of it)."""
    with memoryview(data) as whole:
        view = whole
        while view:
            view = view[os.write(fd, view) :]
        del view


FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""A folder opened with these is the folder of that name, never a symbolic link's target (ELOOP or ENOTDIR)."""
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def open_folder(root: int, folder: str, *, make: bool = False) -> int:
    """A new descriptor of `folder` (a relative path, "" for `root` itself) below the folder descriptor `root`,
    opened a part at a time, each part relative to the one before it and never through a symbolic link,
    whenever one was put there; with `make`, missing parts are made. A part that is not a folder raises
    OSError naming the path up to it."""
    fd = os.open(".", FOLDER_FLAGS, dir_fd=root)
    parts = folder.split("/") if folder else []
    try:
        for i, part in enumerate(parts):
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            try:
                inner = os.open(part, FOLDER_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, "/".join(parts[: i + 1])) from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


class NewFiles:
    """Files created in the folder of the descriptor `root`, each at a path not there before (O_EXCL), their
    folders made as needed; the folder of the last file stays open for the next (a render's files come folder
    by folder)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self._folder, self._fd = "", -1

    def create(self, rel: str) -> int:
        """The open descriptor of the new file `rel`."""
        folder, _, name = rel.rpartition("/")
        if self._fd < 0 or folder != self._folder:
            fd = open_folder(self.root, folder, make=True)
            self.close()
            self._folder, self._fd = folder, fd
        try:
            return os.open(name, NEW_FILE_FLAGS, 0o666, dir_fd=self._fd)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, rel) from None

    def close(self) -> None:
        """Close the folder kept open (the root is the caller's)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def write_files(root: int, source: Source, digests: list[tuple[str, str]]) -> None:
    files = NewFiles(root)
    fd, rel, digest = -1, "", hashlib.sha256()
    while header := source.read(FRAME.size):
        op, size = FRAME.unpack(header)
        if op == b"D":
            for view in source.views(size):
                digest.update(view)
                write_all(fd, view)
        elif op == b"F":
            rel = source.read(size).decode("utf-8")
            fd = files.create(rel)
            digest = hashlib.sha256()
        elif op == b"E":
            os.close(fd)
            fd = -1
            digests.append((rel, digest.hexdigest()))
        else:
            raise ValueError(f"unknown frame {op!r}")


def main() -> int:
    digests: list[tuple[str, str]] = []
    try:
        root, ring_fd, freed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        ring = memoryview(mmap.mmap(ring_fd, 0))  # left open: the process ends with the input
        write_files(root, RingReader(ring, 0, freed), digests)
    except OSError as exc:
        error = {"errno": exc.errno, "strerror": exc.strerror or str(exc), "filename": exc.filename}
        print(json.dumps({"error": error}))
        return 1
    except Exception as exc:  # a broken frame: the render sees it as a failed write
        print(json.dumps({"error": {"errno": None, "strerror": f"{type(exc).__name__}: {exc}", "filename": None}}))
        return 1
    print(json.dumps({"digests": digests}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
