"""Start Debian's real slurmctld on loopback with rendered Slurm files, and ask it questions.

The rendered cluster part names real hosts and private addresses; the test copy drops SlurmctldHost
(the wrapper sets localhost) and gives every node NodeAddr=127.0.0.1, so nothing leaves this machine.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import hostlist

WRAPPER = """\
SlurmctldHost=localhost
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmctldDebug=info
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
Include {root}/cluster.conf
"""


HARNESS_NOISE = re.compile(
    r"Could not open (job|reservation|trigger|node|part) state file|Trying backup state save file"
    r"|mpi/pmix|MPI: Cannot create context|No (job|node|partition|reservation|trigger) state file"
    # slurmctld times gettimeofday() at start; on a loaded machine it logs this, whatever the config
    r"|High latency for \d+ calls to gettimeofday"
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def loopback_copy(cluster_conf: str) -> str:
    """Drop SlurmctldHost; split NodeName ranges so each node gets NodeAddr=127.0.0.1."""
    out = []
    for line in cluster_conf.splitlines():
        if line.startswith("SlurmctldHost="):
            continue
        match = re.match(r"^NodeName=(\S+) (.*)$", line)
        if match:
            for name in hostlist.expand_hostlist(match.group(1)):
                out.append(f"NodeName={name} NodeAddr=127.0.0.1 {match.group(2)}")
            continue
        out.append(line)
    return "\n".join(out) + "\n"


class Slurmctld:
    """Debian's slurmctld on loopback with the rendered files copied under `root`. A subclass may run it in
    another root file system (`prefix` before each command, `inner` the path of `root` as the daemon sees it)."""

    prefix: tuple[str, ...] = ()

    def __init__(self, rendered: Path, root: Path, inner: Path | None = None):
        self.root = root
        inner = inner or root
        for sub in ("state", "spool"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "cluster.conf").write_text(loopback_copy((rendered / "slurm/slurm.conf").read_text()))
        for name in ("gres.conf", "topology.conf", "cgroup.conf"):
            if (rendered / "slurm" / name).exists():
                shutil.copy(rendered / "slurm" / name, root / name)
        (root / "slurm.conf").write_text(WRAPPER.format(root=inner, ctld_port=free_port(), slurmd_port=free_port()))
        self.conf = inner / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Slurmctld:
        with open(self.root / "stderr.log", "wb") as stderr:
            self.process = subprocess.Popen(
                [*self.prefix, "slurmctld", "-D", "-c", "-f", str(self.conf)],
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            self._wait_up(self.process)
        except BaseException:
            self.__exit__()  # the with-statement does not call it when __enter__ fails
            raise
        return self

    def _wait_up(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"slurmctld exited {process.returncode}:\n{self.log()}")
            if "UP" in self.run("scontrol", "ping", check=False):
                return
            time.sleep(0.3)
        raise TimeoutError(f"slurmctld did not answer scontrol ping:\n{self.log()}")

    def __exit__(self, *exc: object) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def run(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            [*self.prefix, *args], env=self.env, capture_output=True, text=True, timeout=60, check=False
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {result.stderr}\n{self.log()}")
        return result.stdout + result.stderr

    def log(self) -> str:
        parts = []
        for name in ("slurmctld.log", "stderr.log"):
            path = self.root / name
            if path.exists():
                parts.append(path.read_text(errors="replace"))
        return "\n".join(parts)

    def complaints(self) -> list[str]:
        """Log lines that mean a config problem slurmctld only logs (unknown nodes in topology.conf, ...),
        less the harness's own noise: a fresh state directory and Debian's MPI plugins."""
        return [
            line
            for line in self.log().splitlines()
            if re.search(r"error:|WARNING|fatal", line) and not HARNESS_NOISE.search(line)
        ]
