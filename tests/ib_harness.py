"""Bring a rendered InfiniBand subnet up in the real tools: `ibsim` simulates the fabric from topology.net,
OpenSM (through the umad2sim preload) configures it with the rendered opensm.conf, and `ibnetdiscover -p`
lists the links as discovered. Each simulation gets a socket name of its own (IBSIM_SOCKNAME), so nothing
else on the machine is reached.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("ibsim", "opensm", "ibnetdiscover")
ERR_LINE = re.compile(r"\bERR [0-9A-F]{4}\b")


def preload() -> str:
    """The umad2sim library that sends the tools' MADs to ibsim instead of /dev/umad."""
    listing = subprocess.run(["dpkg", "-L", "libumad2sim0"], capture_output=True, text=True, check=True).stdout
    return next(line for line in listing.splitlines() if line.endswith("libumad2sim.so"))


def require_tools() -> None:
    """Fail (never skip) when the tools are missing: tests/apt-packages.txt installs them."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    assert not missing, f"{', '.join(missing)} missing: install ibsim-utils opensm infiniband-diags"


def limits(net: str) -> list[str]:
    """ibsim's table sizes (defaults 2048 nodes, 256 switches, 13312 ports) raised to fit the file."""
    nodes = net.count("\nHca ") + net.count("\nSwitch ")
    switches = net.count("\nSwitch ")
    ports = sum(int(n) for n in re.findall(r"^(?:Hca|Switch) (\d+) ", net, re.M)) + nodes
    return ["-N", str(max(2048, nodes + 16)), "-S", str(max(256, switches + 8)), "-P", str(max(13312, ports + 64))]


@dataclass
class SubnetRun:
    opensm_rc: int
    opensm_log: str
    discovered: str
    """`ibnetdiscover -p` output."""

    def errors(self) -> list[str]:
        return [line for line in self.opensm_log.splitlines() if ERR_LINE.search(line)]


class Simulator:
    """`ibsim -s` on a topology file, stopped on exit."""

    def __init__(self, net_file: Path, work: Path) -> None:
        self.net_file, self.work = net_file, work
        self.env = {**os.environ, "IBSIM_SOCKNAME": f"cf{os.getpid()}{time.monotonic_ns() % 10**9}"}
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Simulator:
        net = self.net_file.read_text(encoding="utf-8")
        self.process = subprocess.Popen(
            ["ibsim", "-s", "-n", *limits(net), str(self.net_file)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
        )
        assert self.process.stdout is not None
        seen = []
        for line in self.process.stdout:  # ibsim prints its parse warnings, then this line
            seen.append(line)
            if "Network simulator ready" in line:
                return self
        raise AssertionError("ibsim did not start:\n" + "".join(seen[-20:]))

    def __exit__(self, *_: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def client(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "LD_PRELOAD": preload(), "OSM_TMP_DIR": str(self.work), "OSM_CACHE_DIR": str(self.work)}
        return subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=600, check=False)


def local_conf(conf: str, folder: Path) -> str:
    """The rendered opensm.conf with its /etc/opensm files read from the rendered folder."""
    for name in ("root-guids.conf", "partitions.conf", "io-guids.conf"):
        conf = conf.replace(f"/etc/opensm/{name}", str(folder / name))
    return conf


def bring_up(folder: Path, work: Path, net_file: Path | None = None, conf_file: Path | None = None) -> SubnetRun:
    """Simulate `folder`'s topology.net (or `net_file`), run OpenSM once with the master's configuration (or
    `conf_file`), then discover the fabric."""
    work.mkdir(parents=True, exist_ok=True)
    conf = conf_file or sorted(folder.glob("opensm*.conf"))[0]
    local = work / "opensm.conf"
    local.write_text(local_conf(conf.read_text(encoding="utf-8"), folder), encoding="utf-8")
    log = work / "opensm.log"
    with Simulator(net_file or folder / "topology.net", work) as sim:
        done = sim.client("opensm", "-F", str(local), "-o", "-e", "-f", str(log))
        discovered = sim.client("ibnetdiscover", "-p")
    assert discovered.returncode == 0, discovered.stderr
    return SubnetRun(done.returncode, log.read_text(encoding="utf-8", errors="replace"), discovered.stdout)
