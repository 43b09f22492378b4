"""`clusterforge lab check`: day one and day two proven on the twin.

Day one: a dry run (--check) on the fresh nodes and the first playbook run failed nowhere; the network as
rendered (every interface netplan names present and matched, every address where netplan puts it, one default
route, who must reach whom on each subnet and who must not: a node off a network, and the world outside the
lab); Slurm (every twin node idle, a job across all of them, each node's GPUs as gres, the topology as
slurmctld reports it); the files (NCCL) and the pinned GPU stack (installed at the pinned version, not the
newer one the repository also offers; held; services active). Day two: a second playbook run changes nothing.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..render import paths
from . import containers, network
from .play import read_recap
from .repo import pinned_version, software_groups
from .shape import Shape, read_shape
from .twin import CHECK_LOG, State, play

OUTSIDE = "192.0.2.1"
"""An address outside every lab subnet (TEST-NET-1): no node may reach it."""
SLURM_WAIT = 120.0


@dataclass(frozen=True)
class Result:
    name: str
    ok: bool
    detail: str
    seconds: float = 0.0


def check_lab(work: Path, say: Callable[[str], None] = print) -> list[Result]:
    state = State.load(work)
    shape = read_shape(state.out)
    results = []
    for name, check in CHECKS:
        start = time.monotonic()
        try:
            ok, detail = check(state, shape)
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            ok, detail = False, str(exc)
        result = Result(name, ok, detail, round(time.monotonic() - start, 1))
        say(f"{'ok  ' if ok else 'FAIL'} {name:<22} {result.seconds:5.1f} s  {detail}")
        results.append(result)
    return results


def first_play(state: State, _shape: Shape) -> tuple[bool, str]:
    recap = read_recap((state.work / "play.log").read_text(encoding="utf-8"))
    bad = [h for h, r in recap.items() if r.failed or r.unreachable]
    changed = sum(r.changed for r in recap.values())
    return not bad and set(recap) >= set(state.nodes), f"{len(recap)} hosts, {changed} changes, failed: {bad or 'none'}"


def check_mode(state: State, _shape: Shape) -> tuple[bool, str]:
    """`ansible-playbook --check` on the fresh nodes (before the first run) failed nowhere."""
    recap = read_recap((state.work / CHECK_LOG).read_text(encoding="utf-8"))
    bad = [h for h, r in recap.items() if r.failed or r.unreachable]
    ok = not bad and set(recap) >= set(state.nodes)
    return ok, f"{len(recap)} hosts, failed: {bad or 'none'} ({CHECK_LOG})"


def second_play(state: State, _shape: Shape) -> tuple[bool, str]:
    recap = play(state, "play-again.log")
    changed = {h: r.changed for h, r in recap.items() if r.changed}
    return not changed, f"changed: {changed or 'nothing'} (play-again.log)"


def isolation(state: State, _shape: Shape) -> tuple[bool, str]:
    network.assert_isolated(state.namespaces, [*state.subnets, *state.pools], state.switches.values())
    return True, f"{len(state.namespaces)} namespaces, no link or route out"


def addresses(state: State, shape: Shape) -> tuple[bool, str]:
    """Every rendered address is on the node (a bond's on its first member where the kernel lacks bonding) and
    each node has at most one default route."""
    problems = []
    for name in state.nodes:
        ns = state.node_ns[name]
        have = set(re.findall(r"inet (\S+)", network.ip("-4", "-o", "addr", ns=ns)))
        want = {p.address for p in shape.node(name).ports if p.address}
        want.add(f"{shape.node(name).address}/{ipaddress.ip_network(_inband_subnet(shape, name)).prefixlen}")
        problems += [f"{name}: {a} missing" for a in sorted(want - have)]
        defaults = network.ip("-4", "route", "show", "default", ns=ns).strip().splitlines()
        if len(defaults) > 1:
            problems.append(f"{name}: {len(defaults)} default routes")
    return not problems, "; ".join(problems) or f"{len(state.nodes)} nodes as rendered, one default route each"


def interface_names(state: State, shape: Shape) -> tuple[bool, str]:
    """Every interface the rendered netplan configures is matched (the twin's ports were bound from its
    facts) and exists in the node under the name netplan gives it; where the node has a RoCE QoS script, its
    unit ran (mlnx_qos on each of those names: the lab's stand-in fails on a name the node lacks)."""
    problems, count, qos_nodes = [], 0, 0
    for name in state.nodes:
        out = containers.run(state.running(name), "ip", "-j", "link", "show").stdout
        present = {link.get("ifname") for link in json.loads(out or "[]")}
        for port in shape.node(name).ports:
            count += 1
            if not port.matched:
                problems.append(f"{name}: {port.key} not matched (planned name)")
            if port.name not in present:
                problems.append(f"{name}: {port.name} ({port.key}) not in the node")
        if (state.out / paths.roce_qos_script(name)).exists():
            qos = containers.run(state.running(name), "systemctl", "is-active", "clusterforge-roce-qos").stdout.strip()
            qos_nodes += 1
            if qos != "active":
                problems.append(f"{name}: clusterforge-roce-qos {qos}")
    done = f"{count} ports matched and present by their netplan names, RoCE QoS active on {qos_nodes} nodes"
    return not problems, "; ".join(problems) or done


def _inband_subnet(shape: Shape, name: str) -> str:
    node = shape.node(name)
    return next(
        p.segment
        for p in node.ports
        if p.segment and ipaddress.ip_address(node.address) in ipaddress.ip_network(p.segment)
    )


def ping_pairs(state: State, shape: Shape) -> Iterator[tuple[str, str, bool]]:
    """(from node, to address, must reach): an address on a subnet the node is on must answer; one on a
    network the node has no port on must not; nor may the outside world."""
    on: dict[str, set[str]] = {n: {p.segment for p in shape.node(n).ports if p.segment} for n in state.nodes}
    nets = {n: {shape.segments[s].network for s in subnets} for n, subnets in on.items()}
    targets = []
    for name in state.nodes:
        node = shape.node(name)
        targets.append((name, node.address, _inband_subnet(shape, name)))
        targets += [(name, p.address.split("/")[0], p.segment) for p in node.ports if p.address and p.segment]
    for source in state.nodes:
        yield source, OUTSIDE, False
        for owner, address, subnet in targets:
            if owner == source:
                continue
            if subnet in on[source]:
                yield source, address, True
            elif shape.segments[subnet].network not in nets[source]:
                yield source, address, False


def ping_matrix(state: State, shape: Shape) -> tuple[bool, str]:
    pairs = list(ping_pairs(state, shape))

    def ping(pair: tuple[str, str, bool]) -> bool:
        # what must answer gets three tries (a loaded machine can lose the first to ARP), what must not one
        source, address, must = pair
        tries = ("-c3", "-i0.3", "-W2") if must else ("-c1", "-W1")
        return containers.run(state.running(source), "ping", *tries, "-q", address).returncode == 0

    with ThreadPoolExecutor(8) as pool:
        answered = list(pool.map(ping, pairs))
    wrong = [
        f"{s} -> {a} {'unreachable' if must else 'reachable'}"
        for (s, a, must), got in zip(pairs, answered, strict=True)
        if got != must
    ]
    must = sum(1 for _, _, m in pairs if m)
    detail = f"{must} must reach, {len(pairs) - must} must not (outside: {OUTSIDE})"
    return not wrong, detail if not wrong else f"{len(wrong)} wrong: " + "; ".join(wrong[:10])


def _controller(state: State, shape: Shape) -> containers.Running:
    first = next(n for n in state.nodes if shape.node(n).controller)
    return state.running(first)


def _slurmd_nodes(state: State, shape: Shape) -> list[str]:
    return [n for n in state.nodes if shape.node(n).slurmd]


def slurm_idle(state: State, shape: Shape) -> tuple[bool, str]:
    nodes = _slurmd_nodes(state, shape)
    ctl = _controller(state, shape)
    deadline = time.monotonic() + SLURM_WAIT
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        out = containers.run(ctl, "sinfo", "-h", "-N", "-n", ",".join(nodes), "-o", "%N %t").stdout
        states = dict(line.split() for line in out.splitlines() if line.strip())
        if states and all(states.get(n) == "idle" for n in nodes):
            return True, f"{len(nodes)} nodes idle: {', '.join(nodes)}"
        time.sleep(1)
    return False, f"not all idle after {SLURM_WAIT:.0f} s: {states}"


def job_on_every_node(state: State, shape: Shape) -> tuple[bool, str]:
    nodes = _slurmd_nodes(state, shape)
    done = containers.run(
        _controller(state, shape), "srun", "-N", str(len(nodes)), "-w", ",".join(nodes), "hostname", timeout=90
    )
    ran = sorted(done.stdout.split())
    return ran == sorted(nodes), f"srun -N{len(nodes)} hostname: {' '.join(ran) or done.stderr.strip()}"


def gres(state: State, shape: Shape) -> tuple[bool, str]:
    """Each GPU node's Gres as rendered, and a job given all of them sees each (CUDA_VISIBLE_DEVICES)."""
    ctl = _controller(state, shape)
    problems, seen = [], []
    for name in _slurmd_nodes(state, shape):
        count = len(shape.node(name).gpu_files)
        if not count:
            continue
        shown = containers.run(ctl, "scontrol", "show", "node", name).stdout
        match = re.search(r"Gres=gpu:\S*?(\d+)(?:\(|\s|$)", shown)
        job = containers.run(
            ctl, "srun", "-w", name, f"--gres=gpu:{count}", "printenv", "CUDA_VISIBLE_DEVICES", timeout=90
        )
        devices = job.stdout.strip().split(",") if job.stdout.strip() else []
        if not match or int(match.group(1)) != count or len(devices) != count:
            problems.append(f"{name}: Gres {match.group(0) if match else '?'} devices={devices} {job.stderr.strip()}")
        seen.append(f"{name} {count} GPUs, a job sees {len(devices)}")
    return not problems, "; ".join(problems) or ", ".join(seen) or "no GPU node in the twin"


def topology(state: State, shape: Shape) -> tuple[bool, str]:
    path = state.out / "slurm/topology.conf"
    rendered = path.read_text(encoding="utf-8") if path.exists() else ""
    names = re.findall(r"^(?:SwitchName|BlockName)=(\S+)", rendered, re.M)
    shown = containers.run(_controller(state, shape), "scontrol", "show", "topology").stdout
    missing = [n for n in names if n not in shown]
    first = shown.strip().splitlines()[0] if shown.strip() else "(none)"
    return bool(shown.strip()) and not missing, f"{len(names)} rendered, missing {missing}" if missing else first


def nccl_files(state: State, shape: Shape) -> tuple[bool, str]:
    """Each GPU node's NCCL files are in place, and its nccl.conf's NCCL_IB_HCA names the RDMA devices its
    compute ports were bound to (never a storage NIC's: every port of the twin is bound, lab.bindings.yaml)."""
    by_group = _yaml(state.out / "ansible/roles/cf_nccl/vars/main.yml").get("cf_nccl_by_group") or {}
    bindings = _yaml(state.work / "lab.bindings.yaml").get("bindings") or {}
    problems, count, hca_nodes = [], 0, 0
    for name in state.nodes:
        for entry in (by_group.get(shape.node(name).vars.get("cf_node_group")) or {}).get("files", []):
            want = hashlib.sha256((state.out / entry["src"]).read_bytes()).hexdigest()
            got = containers.run(state.running(name), "sha256sum", "/" + entry["dest"]).stdout.split()
            count += 1
            if not got or got[0] != want:
                problems.append(f"{name}: /{entry['dest']} differs or is missing")
            elif entry["dest"].endswith(("nccl.conf", "rccl.conf")):
                hca_nodes += 1
                problems += _hca_problems(name, (state.out / entry["src"]).read_text(), bindings.get(name) or {})
    return not problems, "; ".join(problems) or f"{count} files in place, NCCL_IB_HCA bound on {hca_nodes} nodes"


def _hca_problems(node: str, conf: str, bound: dict[str, Any]) -> list[str]:
    line = next((line for line in conf.splitlines() if line.startswith("NCCL_IB_HCA=")), None)
    if line is None:
        return [f"{node}: NCCL_IB_HCA not set"]
    devices = {item.split(":")[0] for item in line.removeprefix("NCCL_IB_HCA=").lstrip("=").split(",")}
    rdma = {str(port.get("rdma")) for port in bound.values() if port.get("rdma")}
    stray = sorted(devices - rdma)
    return [f"{node}: NCCL_IB_HCA names {', '.join(stray)}, not bound devices of the node"] if stray else []


def gpu_stack(state: State, shape: Shape) -> tuple[bool, str]:
    groups = software_groups(state.out)
    problems, count = [], 0
    for name in state.nodes:
        node = shape.node(name)
        group = groups.get(str(node.vars.get("cf_node_group"))) or {}
        specs = group.get("packages") or []
        if not specs:
            continue
        running = state.running(name)
        names = [s.split("=", 1)[0] for s in specs]
        shown = containers.run(running, "dpkg-query", "-W", "-f", "${Package} ${Version}\\n", *names).stdout
        versions = dict(line.split() for line in shown.splitlines() if line.strip())
        held = set(containers.run(running, "apt-mark", "showhold").stdout.split())
        for spec in specs:
            package, pattern = spec.split("=", 1)
            if versions.get(package) != pinned_version(pattern):
                problems.append(f"{name}: {package} {versions.get(package, 'missing')} (pinned {pattern})")
            if package not in held:
                problems.append(f"{name}: {package} not held")
        services = list(group.get("services") or []) + (["nvidia-imex"] if node.vars.get("cf_imex_files") else [])
        for service in services:
            active = containers.run(running, "systemctl", "is-active", service).stdout.strip()
            if active != "active":
                problems.append(f"{name}: {service} {active}")
        count += len(specs) + len(services)
    return not problems, "; ".join(problems) or f"{count} packages and services as pinned"


def _yaml(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})


CHECKS: list[tuple[str, Callable[[State, Shape], tuple[bool, str]]]] = [
    ("--check on fresh nodes", check_mode),
    ("first playbook run", first_play),
    ("isolation", isolation),
    ("addresses", addresses),
    ("interface names", interface_names),
    ("ping matrix", ping_matrix),
    ("gpu stack", gpu_stack),
    ("nccl files", nccl_files),
    ("slurm idle", slurm_idle),
    ("job on every node", job_on_every_node),
    ("gres", gres),
    ("topology", topology),
    ("second run, no change", second_play),
]
