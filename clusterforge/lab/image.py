"""The node image of the lab: a Debian 13 (trixie) tree made by debootstrap, built once and cached.

The image is what the site's OS install leaves on a node: systemd, networkd, ssh with the lab's key, Python for
Ansible, netplan. Slurm and munge are not installed: the playbook installs them. Their packages (and what they
need that the image lacks) are downloaded once beside the image, for the lab's own apt repository, since the
twin's nodes have no route out. Built into a scratch folder and renamed into place under a lock, so parallel
runs build it at most once; a failed build raises (nothing is skipped).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SUITE = "trixie"
BASE_PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "openssh-server",
    "python3",
    "python3-apt",
    "iproute2",
    "iputils-ping",
    "netplan.io",
    "procps",
    "sudo",
)
"""What an OS install gives every node (ssh, Python for Ansible, networkd and netplan)."""
SLURM_PACKAGES = ("slurmd", "slurmctld", "slurm-client", "munge")
"""What the playbook installs from the lab's repository (downloaded with all they need)."""
SSH_KEY = "id_ed25519"


class ImageError(RuntimeError):
    """The image cannot be built (debootstrap, the package download or the key failed)."""


@dataclass(frozen=True)
class Image:
    root: Path
    """The node tree every container starts from (read only: each node writes into its own overlay)."""
    debs: Path
    """The Slurm and munge packages with what they need, for the lab's repository."""
    key: Path
    """The private ssh key whose public half is root's authorized key in the image."""


def default_cache() -> Path:
    return Path(os.environ.get("CLUSTERFORGE_LAB_CACHE") or Path.home() / ".cache" / "clusterforge" / "lab")


def image_name() -> str:
    """Named by its suite and packages, so a cache built with other packages is never taken for this one."""
    digest = hashlib.sha256(" ".join((SUITE, *BASE_PACKAGES, "|", *SLURM_PACKAGES)).encode()).hexdigest()[:10]
    return f"{SUITE}-node-{digest}"


def _run(argv: list[str], what: str, timeout: float = 1800) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise ImageError(f"{what} failed ({result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-3000:]}")


def base_image(cache: Path) -> Image:
    """The cached image, built on first use (about 150 s and 450 MB here)."""
    cache.mkdir(parents=True, exist_ok=True)
    name = image_name()
    done = Image(root=cache / name / "root", debs=cache / name / "debs", key=cache / name / SSH_KEY)
    with open(cache / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (cache / name / ".complete").exists():
            return done
        scratch = cache / f"{name}.building"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        build(scratch)
        (scratch / ".complete").write_text("", encoding="utf-8")
        shutil.rmtree(cache / name, ignore_errors=True)
        scratch.rename(cache / name)
    return done


def build(folder: Path) -> None:
    """debootstrap the tree into folder/root, download the Slurm packages into folder/debs, make the key."""
    root = folder / "root"
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    _run([debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", SUITE, str(root)], "debootstrap")
    archives = root / "var/cache/apt/archives"
    _run(["chroot", str(root), "apt-get", "clean"], "apt-get clean")  # debootstrap's own packages
    _run(
        [
            "chroot",
            str(root),
            "apt-get",
            "install",
            "-y",
            "-qq",
            "--download-only",
            "--no-install-recommends",
            *SLURM_PACKAGES,
        ],
        "downloading the Slurm packages",
    )
    debs = folder / "debs"
    debs.mkdir()
    for deb in archives.glob("*.deb"):
        shutil.move(str(deb), debs / deb.name)
    _run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "clusterforge-lab", "-f", str(folder / SSH_KEY)],
        "ssh-keygen",
    )
    prepare(root, (folder / f"{SSH_KEY}.pub").read_text(encoding="utf-8"))


def prepare(root: Path, public_key: str) -> None:
    """What the OS install leaves: root's ssh key, networkd on, no apt timers, no name of its own yet."""
    (root / "etc/hosts").write_text("127.0.0.1 localhost\n", encoding="utf-8")
    (root / "etc/hostname").write_text("", encoding="utf-8")
    ssh = root / "root/.ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    (ssh / "authorized_keys").write_text(public_key, encoding="utf-8")
    (ssh / "authorized_keys").chmod(0o600)
    for unit in ("systemd-networkd.service", "ssh.service"):
        _run(["chroot", str(root), "systemctl", "enable", unit], f"enabling {unit}")
    for unit in ("apt-daily.timer", "apt-daily-upgrade.timer", "systemd-resolved.service"):
        subprocess.run(["chroot", str(root), "systemctl", "mask", unit], capture_output=True, check=False)
    (root / "etc/apt/sources.list").write_text("", encoding="utf-8")
    for stale in (root / "etc/apt/sources.list.d").glob("*"):
        stale.unlink()
