"""`clusterforge lab up|check|down`: the twin's life. `up` renders the blueprint into the work folder, builds
(or takes from the cache) the node image, writes the apt repository, plugs the network, binds the nodes' ports
from the facts their namespaces report and renders again (facts.py), boots the containers, waits for ssh and
runs the playbook; `check` proves day one and two on it (checks.py); `down` removes all of it.
What `up` made is written to lab.json in the work folder as it is made, so `down` finds it even after a failed
`up`, and ends only the processes the lab started (by their ids).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..pipeline import analyse, render_files
from ..validate import ValidBlueprint
from . import containers, facts, network
from .image import Image, base_image
from .play import close_ssh, failed_tasks, failures, run_playbook
from .repo import build_repo
from .shape import Shape, read_shape, subset

STATE = "lab.json"
CHECK_LOG = "play-check.log"
"""The `ansible-playbook --check` run on the fresh nodes, before the first real one."""
INOTIFY = Path("/proc/sys/fs/inotify/max_user_instances")
INOTIFY_PER_NODE = 16
"""inotify instances a booted node takes (systemd, networkd, logind, ...); the host's default of 128 stops
the 17th container's systemd."""

Say = Callable[[str], None]


class LabError(RuntimeError):
    """The twin could not be brought up, checked or taken down; the message says which step and why."""


@dataclass
class State:
    work: Path
    prefix: str = ""
    blueprint: str = ""
    nodes: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    switches: dict[str, str] = field(default_factory=dict)
    deploy_ns: str = ""
    subnets: list[str] = field(default_factory=list)
    pools: list[str] = field(default_factory=list)
    """The address pools of the twin's networks: a node's route to one (a rail port's route to the other
    rails) goes through a lab gateway and stays inside the lab."""
    node_ns: dict[str, str] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    mounts: list[str] = field(default_factory=list)
    inotify_was: int | None = None
    image: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def out(self) -> Path:
        return self.work / "render"

    def save(self) -> None:
        data = {k: v for k, v in self.__dict__.items() if k != "work"}
        (self.work / STATE).write_text(json.dumps(data, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, work: Path) -> State:
        path = work / STATE
        if not path.exists():
            raise LabError(f"no lab in {work} (no {STATE}): run `clusterforge lab up` first")
        return cls(work=work, **json.loads(path.read_text(encoding="utf-8")))

    def running(self, name: str) -> containers.Running:
        return containers.Running(name, self.pids[name], self.work / "nodes" / name / "root")

    def the_image(self) -> Image:
        return Image(root=Path(self.image["root"]), debs=Path(self.image["debs"]), key=Path(self.image["key"]))


@contextmanager
def step(state: State, name: str, say: Say) -> Iterator[None]:
    start = time.monotonic()
    yield
    state.timings[name] = round(time.monotonic() - start, 1)
    state.save()
    say(f"{name:<28} {state.timings[name]:6.1f} s")


def require_root() -> None:
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, overlay mounts, systemd-nspawn)")
    for tool in ("systemd-nspawn", "debootstrap", "nsenter", "dpkg-scanpackages"):
        if not shutil.which(tool) and not Path("/usr/sbin", tool).exists():
            raise LabError(f"{tool} not found: apt-get install systemd-container debootstrap dpkg-dev")


def up(
    valid: ValidBlueprint,
    work: Path,
    cache: Path,
    nodes: int | None = None,
    scale: bool = False,
    say: Say = print,
) -> State:
    """Bring the twin of the blueprint `valid` up in `work` (which must hold no running lab)."""
    require_root()
    if (work / STATE).exists():
        raise LabError(f"{work} holds a lab: `clusterforge lab down` it first")
    work.mkdir(parents=True, exist_ok=True)
    state = State(work=work, prefix=network.lab_prefix(str(work.resolve())), blueprint=str(valid.path))
    state.save()
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        _up(state, valid, cache, nodes, scale, say)
    except BaseException:
        say("bring-up failed: taking down what was made")
        down(work, say=lambda _line: None)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    return state


def _terminated(_signum: int, _frame: object) -> None:
    raise LabError("terminated")


def _up(state: State, valid: ValidBlueprint, cache: Path, nodes: int | None, scale: bool, say: Say) -> None:
    with step(state, "render", say):
        topo = analyse(valid).topo
        shape = _render(state, facts.as_planned(valid, topo))
        state.nodes = subset(shape, nodes, scale)
    say(f"twin of {len(state.nodes)} of {len(shape.nodes)} nodes: {', '.join(state.nodes)}")
    with step(state, "node image", say):
        image = base_image(cache)
        state.image = {"root": str(image.root), "debs": str(image.debs), "key": str(image.key)}
    with step(state, "apt repository", say):
        build_repo(state.out, image.debs, state.work / "repo")
    with step(state, "network", say):
        devices = facts.plan_devices(valid, topo, state.nodes)
        _network(state, shape, {(n, p): d.name for n, ports in devices.items() for p, d in ports.items()})
    with step(state, "bind, render again", say):
        captured = facts.capture(devices, state.node_ns, state.work / "facts")
        bound = facts.bind_twin(valid, topo, captured, state.work / "lab.bindings.yaml")
        shape = _render(state, bound)
    with step(state, "containers up (ssh open)", say):
        _containers(state, shape, image)
    with step(state, "playbook --check (fresh)", say):
        # a dry run on the fresh nodes first, as a site would before its first real run (lab check reads it)
        run_playbook(
            state.out, state.nodes, state.deploy_ns, image.key, state.work, state.work / CHECK_LOG, ["--check"]
        )
    with step(state, "playbook", say):
        play(state, "play.log")


def _render(state: State, valid: ValidBlueprint) -> Shape:
    """Render `valid` into the lab's output folder (replacing what was there) and read the twin's shape."""
    shutil.rmtree(state.out, ignore_errors=True)
    for path, text in render_files(valid).items():
        target = state.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return read_shape(state.out)


def _network(state: State, shape: Shape, veth_names: dict[tuple[str, str], str]) -> None:
    plan = network.plan_network(shape, state.nodes, state.prefix)
    state.namespaces = plan.namespaces
    state.switches = plan.switch_ns
    state.deploy_ns = plan.deploy_ns
    state.node_ns = plan.node_ns
    state.subnets = sorted(plan.bridges)
    state.pools = sorted({shape.pools[n] for n in plan.switch_ns if n in shape.pools})
    state.save()
    network.build(shape, state.nodes, plan, veth_names)
    network.assert_isolated(state.namespaces, [*state.subnets, *state.pools], state.switches.values())


def _containers(state: State, shape: Shape, image: Image) -> None:
    needed = 128 + INOTIFY_PER_NODE * len(state.nodes)
    current = int(INOTIFY.read_text())
    if current < needed:
        state.inotify_was = current
        state.save()
        INOTIFY.write_text(str(needed))
    gpu_files = {f for name in state.nodes for f in shape.node(name).gpu_files}
    gpus = containers.make_gpu_files(state.work / "gpus", gpu_files)
    (state.work / "logs").mkdir(exist_ok=True)
    for name in state.nodes:
        node = shape.node(name)
        folder = state.work / "nodes" / name
        root = containers.mount_root(image.root, folder)
        state.mounts.append(str(folder))
        state.save()
        port, prefixlen = containers.inband_port(node)
        subnet = next(p.segment for p in node.ports if p.name == port)
        gateways = shape.segments[subnet or ""].gateways
        containers.install_node(root, node, port, prefixlen, gateways[0] if gateways else None)
        running = containers.start(
            node, root, state.node_ns[name], state.work / "repo", gpus, state.work / "logs" / f"{name}.console"
        )
        state.pids[name] = running.pid
        state.save()
    for name in state.nodes:
        _wait_ssh(state, shape.node(name).address, name)
    for name in state.nodes:  # an OS install leaves its package lists fetched
        containers.run(state.running(name), "apt-get", "-qq", "update", timeout=300, check=True)


def _wait_ssh(state: State, address: str, name: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    probe = f"import socket; socket.create_connection(('{address}', 22), timeout=1).close()"
    while time.monotonic() < deadline:
        done = subprocess.run(
            ["nsenter", f"--net=/run/netns/{state.deploy_ns}", "python3", "-c", probe], capture_output=True, check=False
        )
        if done.returncode == 0:
            return
        if not containers._alive(state.pids[name]):
            log = (state.work / "logs" / f"{name}.console").read_text(errors="replace")[-2000:]
            raise LabError(f"{name}: the container stopped while booting:\n{log}")
        time.sleep(0.5)
    raise LabError(f"{name}: no ssh on {address} after {timeout:.0f} s (see {state.work}/logs/{name}.console)")


def play(state: State, log_name: str) -> dict[str, Any]:
    """Run the playbook on the twin's nodes; raise LabError when a host failed or was unreachable."""
    log = state.work / log_name
    recap = run_playbook(state.out, state.nodes, state.deploy_ns, state.the_image().key, state.work, log)
    bad = failures(recap)
    missing = sorted(set(state.nodes) - set(recap))
    if bad or missing:
        detail = "\n".join(failed_tasks(log.read_text(encoding="utf-8")))
        raise LabError(f"the playbook failed ({log}): {'; '.join(bad + [f'{m}: no recap' for m in missing])}\n{detail}")
    return recap


def down(work: Path, say: Say = print) -> None:
    """Stop the containers, unmount their roots, delete the namespaces, restore the inotify limit, remove the
    work folder's lab (the render and logs stay). Safe to run twice, and after a failed `up`."""
    state = State.load(work)
    start = time.monotonic()
    close_ssh(work)
    containers.stop({pid: state.node_ns.get(name, "") for name, pid in state.pids.items()})
    for folder in state.mounts:
        containers.unmount_root(Path(folder))
    network.delete(state.namespaces)
    if state.inotify_was is not None:
        INOTIFY.write_text(str(state.inotify_was))
    shutil.rmtree(work / "nodes", ignore_errors=True)
    shutil.rmtree(work / "ssh", ignore_errors=True)
    (work / STATE).unlink()
    say(f"down: {len(state.pids)} containers, {len(state.namespaces)} namespaces in {time.monotonic() - start:.1f} s")


def left_over(prefix: str) -> list[str]:
    """The lab's namespaces still present (for tests and `down`'s own check)."""
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return [e["name"] for e in json.loads(out or "[]") if e["name"].startswith(prefix + "-")]
