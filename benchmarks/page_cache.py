"""Letting the kernel forget what a benchmark wrote, so that the next measured run does not pay for it.

    python benchmarks/page_cache.py FOLDER ...     # writes back and drops FOLDER's files from the page cache

Written files stay in the page cache after the writing process ends. On the 2-core virtual machine that
memory is also the host's, and the host then charges more for every page the next run touches: three
1,000,000-GPU renders in a row, each into its own folder, took 13.7, 28.4 and 53.3 system CPU s for the same
3.52 million page faults (88-89 user s each), with 1.8, 6.5 and 11.2 GiB in the page cache as each started;
with the earlier folders gone, the next took 13.8 s again (2026-12-05). So a benchmark that renders
again drops each measured render's files from the cache (`forget`) once it has measured it. Deleting them
would do too, but on ext4 files created right after many were deleted cost more system time (sizes.py); this
keeps the files, so a later step can still read them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def forget(folder: Path) -> int:
    """Writes back every file under `folder` and asks the kernel to drop its pages from the page cache (a
    page still dirty would stay); returns how many files were asked."""
    os.sync()
    files = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            descriptor = os.open(os.path.join(root, name), os.O_RDONLY | os.O_NOFOLLOW)
            try:
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(descriptor)
            files += 1
    return files


def main() -> None:
    for folder in sys.argv[1:]:
        print(f"{folder}: {forget(Path(folder))} files dropped from the page cache")


if __name__ == "__main__":
    main()
