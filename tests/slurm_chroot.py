"""Slurm 24.11 (and udev 257) for the tests: a Debian 13 (trixie) chroot, built once and cached.

Debian 12 ships Slurm 22.05, which has neither topology/block nor switch/nvidia_imex, and udev 252, which has
no `udevadm verify`. The chroot is made by `debootstrap --variant=minbase --include=slurmctld,slurm-client,udev
trixie` (about 90 s and 300 MB) into a cache
folder that outlives the test run (CLUSTERFORGE_TEST_CACHE, else ~/.cache/clusterforge-tests); it is built
into a scratch folder and renamed into place, under a lock, so parallel runs build it at most once.
`Slurmctld2411` starts the chroot's slurmctld on loopback with the same wrapper as the 22.05 harness.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from slurm_harness import Slurmctld

SUITE = "trixie"
PACKAGES = ("slurmctld", "slurm-client", "udev")
CHROOT_NAME = f"{SUITE}-{'-'.join(PACKAGES)}"
"""Named by its packages, so a cache built with other packages is never taken for this one."""


def cache_dir() -> Path:
    base = os.environ.get("CLUSTERFORGE_TEST_CACHE") or str(Path.home() / ".cache" / "clusterforge-tests")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def trixie_root() -> Path:
    """The cached chroot, built by debootstrap on first use; fails (never skips) when it cannot be built."""
    cache = cache_dir()
    root = cache / CHROOT_NAME
    with open(cache / f"{CHROOT_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / ".complete").exists():
            return root
        debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
        scratch = cache / f"{CHROOT_NAME}.building"
        shutil.rmtree(scratch, ignore_errors=True)
        result = subprocess.run(
            [debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(scratch)],
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"debootstrap failed ({result.returncode}):\n{result.stdout[-3000:]}{result.stderr}")
        (scratch / "etc/hosts").write_text("127.0.0.1 localhost\n", encoding="utf-8")
        (scratch / ".complete").write_text("", encoding="utf-8")
        shutil.rmtree(root, ignore_errors=True)
        scratch.rename(root)
    return root


def slurm_version(root: Path) -> str:
    result = subprocess.run(["chroot", str(root), "slurmctld", "-V"], capture_output=True, text=True, check=True)
    return result.stdout.strip()


class Slurmctld2411(Slurmctld):
    """The chroot's slurmctld on loopback, with the same wrapper and checks as the 22.05 harness.

    Its folder lies inside the chroot (removed on exit). Each command runs in a private mount namespace
    (`unshare --mount`) that mounts /proc into the chroot and then chroots: the mount is seen by that process
    alone and goes with it, so parallel runs sharing the cached chroot never unmount each other's /proc.
    The daemon is stopped by its PID (unshare, sh and chroot exec into it)."""

    def __init__(self, chroot: Path, rendered: Path) -> None:
        scratch = chroot / "cf-test"
        scratch.mkdir(exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="slurm-", dir=scratch))
        self.prefix = (
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"',
            str(chroot),
        )
        super().__init__(rendered, root, inner=Path("/") / root.relative_to(chroot))

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        shutil.rmtree(self.root, ignore_errors=True)


if __name__ == "__main__":  # build the cache ahead of a test run: python tests/slurm_chroot.py
    built = trixie_root()
    print(built, slurm_version(built))
