"""What handing a render's files to the write-behind process costs the render, against a pipe.

    python benchmarks/write_behind_cost.py [--gb 4.4] [--work DIR]    # DIR: where the files go (a temporary folder)

A million-GPU render sends 4.4 GB in 192,288 files to the process that writes them (output/write_behind.py), four
fifths of the bytes in large files (the cable tables, InfiniBand topologies) and the rest in small ones (netplan
files, host variables). Here files of that mix (4 kB and 32 MB) go through `StagedTree.put` as a render sends
them, once into the ring and once, framed and batched the same way, through a plain pipe to a process that
reads and drops them: how the files went before the ring, each megabyte taking the kernel fresh pages to copy
into and out of (docs/speed.md has what that cost whole renders). Printed for each: the render's own CPU
seconds (user and system) and the other process's (through the ring it also creates, writes and hashes the
files; through the pipe it only reads).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from clusterforge.output.write_behind import WriteBehind
from clusterforge.output.write_behind_child import write_all
from clusterforge.output.writer import StagedTree
from clusterforge.runtime.heap import keep_freed_memory

SMALL, LARGE = 4_000, 32 << 20
"""A small file's bytes (a netplan file, a host's variables) and a large one's (a slice of the cable table)."""


def files(total: int) -> Iterator[tuple[str, str]]:
    """Paths and texts adding up to `total` bytes: a fifth in small files, the rest in large ones."""
    small, large = "s" * SMALL, "l" * LARGE
    for i in range(int(total * 0.2) // SMALL):
        yield f"small/{i // 10_000}/{i}.yaml", small
    for i in range(max(1, int(total * 0.8) // LARGE)):
        yield f"large/{i}.csv", large


class ThroughPipe(WriteBehind):
    """WriteBehind's frames, batched as it batches them, into a pipe to a forked process that reads and drops
    them: how the files went before the ring."""

    def __init__(self) -> None:  # no ring and no writing process: `send` and `_flush` only need these
        read_end, self._pipe = os.pipe()
        self._child = os.fork()
        if self._child == 0:
            os.close(self._pipe)
            while os.read(read_end, 1 << 20):
                pass
            os._exit(0)
        os.close(read_end)
        self._batch = bytearray()

    def _write(self, data: bytes | bytearray) -> None:
        write_all(self._pipe, data)

    def finish(self) -> list[tuple[str, str]]:
        self._flush()
        os.close(self._pipe)
        os.waitpid(self._child, 0)
        return []

    def stop(self) -> None:
        pass


def measured(name: str, through_pipe: bool, total: int, work: Path) -> None:
    """Send `total` bytes of files through `StagedTree.put`, into the ring or a pipe, and print what it cost."""
    with StagedTree(work / name) as staged:
        here, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.time()
        if through_pipe:
            staged.begin()
            staged._behind = ThroughPipe()
        else:
            staged.write_behind()
        for rel, text in files(total):
            staged.put(rel, text)
        staged.digests  # noqa: B018 (waits for every file to be sent and, through the ring, written)
        wall = time.time() - start
        here_after = resource.getrusage(resource.RUSAGE_SELF)
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = here_after.ru_utime - here.ru_utime, here_after.ru_stime - here.ru_stime
    other = children_after.ru_utime + children_after.ru_stime - children.ru_utime - children.ru_stime
    print(
        f"{name:5s} {total / 1e9:.1f} GB: the render {user + system:5.2f} CPU s ({user:.2f} user, "
        f"{system:.2f} system); the other process {other:5.2f} CPU s; {wall:5.1f} s wall"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--gb", type=float, default=4.4, help="bytes to send, in GB (default: a 1,000,000-GPU render's)"
    )
    parser.add_argument("--work", type=Path, help="folder for the files written (default: a temporary one)")
    args = parser.parse_args()
    keep_freed_memory()  # as a render does
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        for name, through_pipe in (("ring", False), ("pipe", True)):
            measured(name, through_pipe, int(args.gb * 1e9), Path(work))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
