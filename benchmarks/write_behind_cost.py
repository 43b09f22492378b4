"""What handing a render's files to the write-behind process costs the render, against a pipe.

    python benchmarks/write_behind_cost.py [--gb 4.4] [--work DIR]    # DIR: where the files go (a temporary folder)

A million-GPU render sends 4.4 GB in 192,288 files to the process that writes them (write_behind.py), four
fifths of the bytes in large files (the cable tables, InfiniBand topologies) and the rest in small ones (netplan
files, host variables). Here files of that mix (4 kB and 32 MB) go once through `StagedTree.write_behind`, as a
render sends them, and once through a plain pipe to a process that reads and drops them, encoded and batched
the same way. Printed for each: the render's own CPU seconds (user and system) and the other process's
(through the ring it also creates, writes and hashes the files; through the pipe it only reads). The pipe is
how the files went before the ring of shared memory: each megabyte takes the kernel fresh pages to copy into
and out of (the README, Speed, has what that cost whole renders).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from clusterforge.heap import keep_freed_memory
from clusterforge.write_behind import BATCH
from clusterforge.write_behind_child import FRAME, write_all
from clusterforge.writer import StagedTree, _encoded_pieces

SMALL, LARGE = 4_000, 32 << 20
"""A small file's bytes (a netplan file, a host's variables) and a large one's (a slice of the cable table)."""


def files(total: int) -> Iterator[tuple[str, str]]:
    """Paths and texts adding up to `total` bytes: a fifth in small files, the rest in large ones."""
    small, large = "s" * SMALL, "l" * LARGE
    for i in range(int(total * 0.2) // SMALL):
        yield f"small/{i // 10_000}/{i}.yaml", small
    for i in range(max(1, int(total * 0.8) // LARGE)):
        yield f"large/{i}.csv", large


def through_ring(total: int, work: Path) -> Callable[[], None]:
    """The files through the render's own path; what is returned removes them (not measured)."""
    staged = StagedTree(work / "ring")
    staged.write_behind()
    for rel, text in files(total):
        staged.put(rel, text)
    assert len(staged.digests) == len(staged)  # waits for every file to be written
    return lambda: staged.__exit__(None, None, None)


def through_pipe(total: int, _work: Path) -> Callable[[], None]:
    """The same frames into a pipe, encoded and batched as the render sends them (a piece of a batch or more
    on its own), to a child that reads and drops them."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(write_end)
        while os.read(read_end, 1 << 20):
            pass
        os._exit(0)
    os.close(read_end)
    batch = bytearray()
    for rel, text in files(total):
        path = rel.encode()
        batch += FRAME.pack(b"F", len(path)) + path
        for piece in _encoded_pieces(text):
            if len(piece) >= BATCH:
                write_all(write_end, batch)
                del batch[:]
                write_all(write_end, FRAME.pack(b"D", len(piece)))
                write_all(write_end, piece)
                continue
            batch += FRAME.pack(b"D", len(piece)) + piece
            if len(batch) >= BATCH:
                write_all(write_end, batch)
                del batch[:]
        batch += FRAME.pack(b"E", 0)
    write_all(write_end, batch)
    os.close(write_end)
    os.waitpid(child, 0)
    return lambda: None


def measured(name: str, send: Callable[[int, Path], Callable[[], None]], total: int, work: Path) -> None:
    here, children, start = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
        time.time(),
    )
    clean_up = send(total, work)
    wall = time.time() - start
    here_after = resource.getrusage(resource.RUSAGE_SELF)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, system = here_after.ru_utime - here.ru_utime, here_after.ru_stime - here.ru_stime
    other = children_after.ru_utime + children_after.ru_stime - children.ru_utime - children.ru_stime
    print(
        f"{name:5s} {total / 1e9:.1f} GB: the render {user + system:5.2f} CPU s ({user:.2f} user, "
        f"{system:.2f} system); "
        f"the other process {other:5.2f} CPU s; {wall:5.1f} s wall"
    )
    clean_up()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--gb", type=float, default=4.4, help="bytes to send, in GB (default: a 1,000,000-GPU render's)"
    )
    parser.add_argument("--work", type=Path, help="folder for the files written (default: a temporary one)")
    args = parser.parse_args()
    keep_freed_memory()  # as a render does
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        for name, send in (("ring", through_ring), ("pipe", through_pipe)):
            measured(name, send, int(args.gb * 1e9), Path(work))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
