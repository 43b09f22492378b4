"""The write-behind process (write_behind.py): writes the files a render sends it into one folder, each with
its sha256, while the render goes on.

Run by path with `python -I -S write_behind_child.py FOLDER`: it needs nothing but the standard library, so it
starts in milliseconds and shares nothing with the render's memory. On its standard input come frames of an
operation byte and a payload length (`<cQ`), then the payload: `F` a new file (its path, relative to FOLDER),
`D` the next bytes of that file, `E` the end of the file. At the end of its input it prints, as JSON, the
digest of each file in the order they came (`{"digests": [[path, sha256], ...]}`); on a failure it prints
`{"error": {...}}` and ends at once, without reading the rest.
"""

import hashlib
import json
import os
import struct
import sys
import threading
from collections import deque
from typing import Protocol

FRAME = struct.Struct("<cQ")
AHEAD = 256 << 20
"""Bytes read ahead of the files being written: the render sends a family's files in a burst (125,000 netplan
files, 2.3 GB of cable tables at 1,000,000 GPUs) and goes on rendering while they are written, instead of
waiting for the pipe to empty. They count in the render's memory: at 1,000,000 GPUs its peak (the cable
tables, 7.2 GiB) comes while the kernel holds back the writer (dirty pages over its limit) and the read-ahead
is full."""


class Source(Protocol):
    def read(self, size: int, /) -> bytes: ...


class ReadAhead:
    """A pipe read into memory by a thread of its own, up to `ahead` bytes before what was taken."""

    def __init__(self, fd: int, ahead: int = AHEAD) -> None:
        self._fd, self._ahead = fd, ahead
        self._chunks: deque[memoryview] = deque()
        self._held = 0
        self._ended = False
        self._changed = threading.Condition()
        threading.Thread(target=self._fill, daemon=True).start()

    def _fill(self) -> None:
        while data := os.read(self._fd, 1 << 20):
            with self._changed:
                while self._held > self._ahead:
                    self._changed.wait()
                self._chunks.append(memoryview(data))
                self._held += len(data)
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def read(self, size: int, /) -> bytes:
        """The next `size` bytes (fewer only at the end of the input)."""
        pieces: list[memoryview] = []
        with self._changed:
            while size:
                while not self._chunks and not self._ended:
                    self._changed.wait()
                if not self._chunks:
                    break
                chunk = self._chunks[0]
                if len(chunk) <= size:
                    self._chunks.popleft()
                else:
                    self._chunks[0] = chunk[size:]
                    chunk = chunk[:size]
                pieces.append(chunk)
                size -= len(chunk)
                self._held -= len(chunk)
            self._changed.notify_all()
        return pieces[0].tobytes() if len(pieces) == 1 else b"".join(pieces)


def write_all(fd: int, data: bytes | bytearray) -> None:
    """All of `data` into `fd` (a write may take only part of it)."""
    with memoryview(data) as whole:
        view = whole
        while view:
            view = view[os.write(fd, view) :]
        del view


class NewFiles:
    """Files created in the folder `root`, each at a path not there before (os.O_EXCL), their folders made as
    needed, each once."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._folders: set[str] = set()

    def create(self, rel: str) -> int:
        """The open descriptor of the new file `rel`."""
        folder = rel.rpartition("/")[0]
        if folder not in self._folders:
            os.makedirs(f"{self.root}/{folder}", exist_ok=True)
            self._folders.add(folder)
        return os.open(f"{self.root}/{rel}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)


def write_files(root: str, source: Source, digests: list[tuple[str, str]]) -> None:
    files = NewFiles(root)
    fd, rel, digest = -1, "", hashlib.sha256()
    while header := source.read(FRAME.size):
        op, size = FRAME.unpack(header)
        payload = source.read(size)
        if op == b"D":
            digest.update(payload)
            write_all(fd, payload)
        elif op == b"F":
            rel = payload.decode("utf-8")
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
        write_files(sys.argv[1], ReadAhead(0), digests)
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
