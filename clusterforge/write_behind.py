"""Files written by a second process while the render goes on (write behind).

Writing a large render's files is mostly the kernel's work: creating 190,000 files and copying 4.4 GB into
the page cache took 24 of 125 s at 1,000,000 GPUs, with the render waiting. Sent through a pipe instead, a
file costs the render one copy into a reused pipe buffer (small files batched into one write); a process of
its own (`write_behind_child.py`, the standard library only, started fresh so that it shares none of the
render's pages) creates the files, writes them and works out their digests on the second CPU.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from .heap import keeping_freed_memory
from .write_behind_child import FRAME, write_all

CHILD = Path(__file__).with_name("write_behind_child.py")
BATCH = 1 << 20
"""Bytes of frames gathered before they go into the pipe: many small files in one system call."""


class WriteBehind:
    """The process writing files into `root`; `send` a file's path and its UTF-8 pieces, `finish` for every
    file's digest in the order sent. Raises OSError (from the process, or when it ended early)."""

    def __init__(self, root: Path) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(CHILD), str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=keeping_freed_memory(os.environ),  # its reads of the pipe come and go a megabyte at a time
        )
        assert self._proc.stdin is not None
        self._pipe = self._proc.stdin.fileno()
        with contextlib.suppress(ImportError, OSError, AttributeError):  # fewer, larger transfers where Linux allows
            import fcntl

            fcntl.fcntl(self._pipe, fcntl.F_SETPIPE_SZ, BATCH)
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

    def _flush(self) -> None:
        if self._batch:
            self._write(self._batch)
            del self._batch[:]

    def _write(self, data: bytes | bytearray) -> None:
        try:
            write_all(self._pipe, data)
        except BrokenPipeError:
            self._collect()  # raises what the process said, or that it ended early
            raise OSError(errno.EIO, "the process writing the files ended early") from None
