"""Files written by a second process while the render goes on (write behind).

Writing a large render's files is mostly the kernel's work: creating the files and copying their bytes into
the page cache, with the render waiting. Instead, a file costs the render one copy into a ring of shared memory
(small files batched into one copy) and a word on a pipe saying how far it has put; a process of its own
(`write_behind_child.py`, the standard library only, started fresh so that it shares none of the render's memory
but the ring) creates the files, writes them straight from the ring and works out their digests on the second
CPU. The ring's pages are touched once and used round and round, where a pipe took the kernel fresh pages to
copy each megabyte into and out of (docs/architecture.md, Scheduling, has the figures;
`benchmarks/write_behind_cost.py` compares the two alone).
"""

from __future__ import annotations

import contextlib
import errno
import json
import mmap
import os
import select
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .write_behind_child import FRAME, POSITION, Positions, write_all

CHILD = Path(__file__).with_name("write_behind_child.py")
RING_BYTES = 256 << 20
"""Bytes the render may put ahead of the files being written: it sends a family's files in a burst (125,000
netplan files, 2.3 GB of cable tables at 1,000,000 GPUs) and goes on rendering while they are written. The
ring's pages, once touched, stay (shared by both processes, counted once): at 1,000,000 GPUs the render's peak
(the cable tables) comes while the kernel holds back the writer (dirty pages over its limit) and the ring is
full."""
BATCH = 1 << 20
"""Bytes of frames gathered before they go into the ring: many small files in one copy."""


def shared_memory(size: int) -> int:
    """The descriptor of `size` bytes of memory that a process it is passed to can map: a memfd where the
    system has them, else an unlinked temporary file."""
    try:
        fd = os.memfd_create("clusterforge-write-behind")
    except AttributeError:
        fd, path = tempfile.mkstemp(prefix="clusterforge-write-behind-")
        os.unlink(path)
    os.ftruncate(fd, size)
    return fd


class WriteBehind:
    """The process writing files into the folder of the descriptor `root`; `send` a file's path and its UTF-8
    pieces, `finish` for every file's digest in the order sent. Raises OSError (from the process, or when it
    ended early)."""

    def __init__(self, root: int) -> None:
        ring_fd = shared_memory(RING_BYTES)
        try:
            freed_pipe, freed_end = os.pipe()
        except OSError:
            os.close(ring_fd)
            raise
        try:
            self._ring = mmap.mmap(ring_fd, RING_BYTES)
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(CHILD), str(root), str(ring_fd), str(freed_end)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                pass_fds=(root, ring_fd, freed_end),
            )
        except OSError:
            os.close(freed_pipe)
            raise
        finally:
            os.close(ring_fd)
            os.close(freed_end)
        assert self._proc.stdin is not None
        self._told_pipe = self._proc.stdin.fileno()
        self._put = self._said = 0
        """Bytes put into the ring, bytes the process was told of (since the start)."""
        self._freed = Positions(freed_pipe)
        """How far the process says it has written."""
        self._batch = bytearray()

    def send(self, rel: str, pieces: Iterable[bytes]) -> None:
        batch = self._batch
        path = rel.encode("utf-8")
        batch += FRAME.pack(b"F", len(path))
        batch += path
        for piece in pieces:
            if len(piece) >= BATCH:
                self._flush()
                self._write(FRAME.pack(b"D", len(piece)))
                self._write(piece)
            else:
                batch += FRAME.pack(b"D", len(piece))
                batch += piece
                if len(batch) >= BATCH:
                    self._flush()
        batch += FRAME.pack(b"E", 0)

    def finish(self) -> list[tuple[str, str]]:
        """Wait for every file to be written; (path, sha256) of each."""
        self._flush()
        return self._collect()

    def _collect(self) -> list[tuple[str, str]]:
        """End the input, then read what the process says: every digest, or why it failed."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            self._proc.stdin.close()
        said = self._proc.stdout.read()
        status = self._proc.wait()
        self._release()
        try:
            answer = json.loads(said)
        except ValueError:
            raise OSError(errno.EIO, f"the process writing the files ended early (exit {status})") from None
        if "error" in answer:
            error = answer["error"]
            raise OSError(error["errno"] or errno.EIO, error["strerror"], error["filename"])
        return [(rel, digest) for rel, digest in answer["digests"]]

    def stop(self) -> None:
        """End the process at once (the render failed: its folder is about to be removed)."""
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._release()

    def _release(self) -> None:
        """Unmap the ring and close the pipe the process answers on (once)."""
        if not self._ring.closed:
            self._ring.close()
            os.close(self._freed.fd)

    def _flush(self) -> None:
        if self._batch:
            self._write(self._batch)
            del self._batch[:]

    def _write(self, data: bytes | bytearray) -> None:
        try:
            self._into_ring(data)
            self._tell()
        except BrokenPipeError:
            self._collect()  # raises what the process said, or that it ended early
            raise OSError(errno.EIO, "the process writing the files ended early") from None

    def _into_ring(self, data: bytes | bytearray) -> None:
        """Copy `data` into the ring after what was put, waiting for the process to write what is there when
        there is no room."""
        size = len(self._ring)
        with memoryview(data) as whole:
            rest = whole
            while rest:
                room = size - (self._put - self._taken)
                if not room:
                    self._tell()  # which may take word that there is room now: then waiting would never end
                    if self._put - self._taken == size:
                        self._take_freed(wait=True)
                    continue
                start = self._put % size
                count = min(len(rest), room, size - start)
                self._ring[start : start + count] = rest[:count]
                self._put += count
                rest = rest[count:]
            del rest

    def _tell(self) -> None:
        """Tell the process how far the ring holds its bytes; take what it has said it wrote meanwhile."""
        if self._said != self._put:
            write_all(self._told_pipe, POSITION.pack(self._put))
            self._said = self._put
        self._take_freed(wait=False)

    @property
    def _taken(self) -> int:
        """Bytes the process has written (since the start), as far as it has said."""
        return self._freed.latest

    def _take_freed(self, *, wait: bool) -> None:
        """Read how far the process has written, waiting for a word from it or not."""
        readable, _, _ = select.select([self._freed.fd], [], [], None if wait else 0)
        if readable and not self._freed.read():
            raise BrokenPipeError(errno.EPIPE, "the process writing the files ended")
