"""The twin's nodes: one systemd-nspawn container each, booted in its node's network namespace.

A node's root is an overlay of the cached image (never written) and the node's own folder in the lab's work
folder; on top of the image it gets what the site's OS install would leave: its name, the in-band address on
its first in-band port (a networkd file, which the rendered netplan's files take over from once applied), the
lab's apt repository as its only source, the command the playbook runs to apply netplan here, and a stand-in
for mlnx_qos (the RoCE QoS unit's tool; a veth has no QoS). GPUs are
device files (char 195:N, as the NVIDIA driver's) bound where gres.conf names them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .shape import Node

REPO_IN_NODE = "/srv/clusterforge-lab-repo"
NETPLAN_APPLY = "/usr/local/sbin/clusterforge-lab-netplan-apply"
"""What the playbook runs to apply netplan in the twin (`cf_netplan_apply`): `netplan apply` stops at udev,
which a container has not, and this kernel may lack bonding."""

APPLY_SCRIPT = """\
#!/usr/bin/python3
# clusterforge lab: `netplan apply` without udev. Where the kernel has no bonding, each bond's address,
# routes and MTU go to its first member (the other members stay down), in a copy under /run/netplan that
# shadows the file of the same name in /etc/netplan (left as the playbook wrote it); then netplan generate
# and networkd (a port matched by MAC on the address the veth has: it has no permanent one).
import glob, os, subprocess, yaml
probe = subprocess.run(["ip", "link", "add", "cflabprobe", "type", "bond"], capture_output=True)
subprocess.run(["ip", "link", "del", "cflabprobe"], capture_output=True)
os.makedirs("/run/netplan", exist_ok=True)
for path in glob.glob("/etc/netplan/*.yaml"):
    shadow = os.path.join("/run/netplan", os.path.basename(path))
    if os.path.exists(shadow):
        os.remove(shadow)
    doc = yaml.safe_load(open(path)) or {}
    net = doc.get("network") or {}
    bonds = net.pop("bonds", None) or {}
    if not bonds or probe.returncode == 0:
        continue
    for bond in bonds.values():
        first, *rest = bond.pop("interfaces")
        bond.pop("parameters", None)
        net.setdefault("ethernets", {})[first] = {**(net["ethernets"].get(first) or {}), **bond}
        for other in rest:
            net["ethernets"].pop(other, None)
    with open(os.open(shadow, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        yaml.safe_dump(doc, out, sort_keys=False)
subprocess.run(["netplan", "generate"], check=True)
# a veth has no permanent hardware address (a NIC's is burnt in): match netplan's bound ports on the address it has
for path in glob.glob("/run/systemd/network/*.network"):
    text = open(path).read()
    if "PermanentMACAddress=" in text:
        with open(path, "w") as out:
            out.write(text.replace("PermanentMACAddress=", "MACAddress="))
subprocess.run(["networkctl", "reload"], check=True)
links = [n for n in os.listdir("/sys/class/net") if n != "lo"]
subprocess.run(["networkctl", "reconfigure", *links], check=True)
"""


MLNX_QOS = "/usr/local/sbin/mlnx_qos"
MLNX_QOS_SCRIPT = """\
#!/bin/sh
# clusterforge lab: mlnx_qos (MLNX_OFED/DOCA) stood in for. The twin's NICs are veths, with no QoS to set:
# each call is logged, and a call on an interface the node does not have fails, as mlnx_qos -i would.
ip link show dev "$2" >/dev/null || exit 1
echo "$*" >> /run/clusterforge-lab-mlnx_qos.log
"""


class ContainerError(RuntimeError):
    """A node's root could not be mounted or its container did not boot."""


@dataclass
class Running:
    name: str
    pid: int
    """systemd-nspawn's process id (started by the lab; its child is the container's PID 1)."""
    root: Path

    def leader(self) -> int:
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        found = children.read_text().split() if children.exists() else []
        if not found:
            raise ContainerError(f"{self.name}: the container has no PID 1 (systemd-nspawn {self.pid} ended?)")
        return int(found[0])


def mount_root(image_root: Path, folder: Path) -> Path:
    """An overlay of the image under folder/root (writes land in folder/upper)."""
    for part in ("upper", "work", "root"):
        (folder / part).mkdir(parents=True, exist_ok=True)
    options = f"lowerdir={image_root},upperdir={folder / 'upper'},workdir={folder / 'work'}"
    result = subprocess.run(
        ["mount", "-t", "overlay", "overlay", "-o", options, str(folder / "root")], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise ContainerError(f"overlay mount of {folder / 'root'} failed: {result.stderr.strip()}")
    return folder / "root"


def unmount_root(folder: Path) -> None:
    root = folder / "root"
    if os.path.ismount(root):
        subprocess.run(["umount", "-l", str(root)], capture_output=True, check=False)


def install_node(root: Path, node: Node, inband_port: str, prefixlen: int, gateway: str | None) -> None:
    """What the OS install leaves on `node`: its name, the in-band address (and the in-band gateway, where the
    plan gives one) on its first in-band port, the lab repository as the only apt source."""
    (root / "etc/hostname").write_text(node.name + "\n", encoding="utf-8")
    route = f"Gateway={gateway}\n" if gateway else ""
    (root / "etc/systemd/network/90-install.network").write_text(
        f"[Match]\nName={inband_port}\n[Network]\nAddress={node.address}/{prefixlen}\n{route}", encoding="utf-8"
    )
    (root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file:{REPO_IN_NODE} ./\n", encoding="utf-8")
    for path, text in ((NETPLAN_APPLY, APPLY_SCRIPT), (MLNX_QOS, MLNX_QOS_SCRIPT)):
        script = root / path.lstrip("/")
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(text, encoding="utf-8")
        script.chmod(0o755)


def inband_port(node: Node) -> tuple[str, int]:
    """The port the OS install addresses (the first one on the in-band address's subnet) and the prefix."""
    for port in node.ports:
        if port.segment and ipaddress.ip_address(node.address) in ipaddress.ip_network(port.segment):
            return port.name, ipaddress.ip_network(port.segment).prefixlen
    raise ContainerError(f"{node.name}: no rendered port is on the subnet of its address {node.address}")


def make_gpu_files(folder: Path, files: set[str]) -> dict[str, Path]:
    """A char device 195:N per GPU file gres.conf names (N from the name), in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for name in sorted(files):
        path = folder / Path(name).name
        digits = "".join(c for c in Path(name).name if c.isdigit())
        if not path.exists():
            os.mknod(path, 0o666 | 0o020000, os.makedev(195, int(digits or 0)))
        made[name] = path
    return made


def start(node: Node, root: Path, netns: str, repo: Path, gpu: dict[str, Path], log: Path) -> Running:
    binds = [f"--bind-ro={repo}:{REPO_IN_NODE}"] + [f"--bind={gpu[f]}:{f}" for f in node.gpu_files]
    argv = [
        "systemd-nspawn",
        "--quiet",
        f"--directory={root}",
        "--boot",
        f"--machine={netns}",
        f"--hostname={node.name}",
        "--register=no",
        "--keep-unit",
        "--capability=CAP_NET_ADMIN",
        f"--network-namespace-path=/run/netns/{netns}",
        *binds,
    ]
    env = {**os.environ, "SYSTEMD_NSPAWN_API_VFS_WRITABLE": "network"}
    with open(log, "wb") as console:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    return Running(node.name, process.pid, root)


def run(running: Running, *argv: str, timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess[str]:
    """A command inside the container (all its namespaces)."""
    full = ["nsenter", "-t", str(running.leader()), "-a", *argv]
    result = subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise ContainerError(f"{running.name}: {' '.join(argv)} failed:\n{result.stdout}{result.stderr}")
    return result


def stop(containers: dict[int, str], timeout: float = 30) -> None:
    """End the containers started as these systemd-nspawn process ids (each with its --machine name): each
    one's PID 1 is killed, so the kernel ends the rest and nspawn returns; nspawn itself if it lingers. Only
    those process trees are touched, and only while the id is still that nspawn (an id may have been reused)."""
    ours = {pid: machine for pid, machine in containers.items() if _alive(pid) and _is_nspawn(pid, machine)}
    for pid in ours:
        children = Path(f"/proc/{pid}/task/{pid}/children")
        for child in children.read_text().split() if children.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child), signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in ours) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in ours:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _is_nspawn(pid: int, machine: str) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return False
    return bool(argv) and argv[0].endswith(b"systemd-nspawn") and f"--machine={machine}".encode() in argv


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited:
            return False
    except ChildProcessError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
