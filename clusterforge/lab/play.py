"""The rendered playbook, run for real over ssh from the twin's deploy host (the in-band switch namespace),
with the rendered inventory unchanged; the lab adds only what a site sets for its own machines (how netplan is
applied here, the site part of slurm.conf a container can run). The recap is read back per host.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .containers import NETPLAN_APPLY

SIMULATION_SLURM = (
    # a container's 2 CPUs and its memory are not the node's: take CPUs, RealMemory and Gres from slurm.conf
    "SlurmdParameters=config_overrides",
    # cgroup v1 (hybrid) hosts give containers no writable controllers (docs/lab.md)
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/affinity",
)
"""Site settings the twin needs where it is not the real machine (appended after the Include, so they win)."""

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)")


class PlayError(RuntimeError):
    """ansible-playbook could not be run, or its recap shows a failed or unreachable host."""


@dataclass(frozen=True)
class Recap:
    ok: int
    changed: int
    unreachable: int
    failed: int
    skipped: int


def lab_vars() -> dict[str, object]:
    return {"cf_netplan_apply": NETPLAN_APPLY, "cf_slurm_site_settings": list(SIMULATION_SLURM)}


def ansible_playbook() -> str:
    """ansible-playbook beside this Python (installed with the package), else on PATH."""
    beside = Path(sys.executable).parent / "ansible-playbook"
    found = str(beside) if beside.exists() else shutil.which("ansible-playbook")
    if not found:
        raise PlayError("ansible-playbook not found (it comes with ansible-core, a dependency of clusterforge)")
    return found


def run_playbook(
    out: Path, hosts: Sequence[str], deploy_ns: str, key: Path, work: Path, log: Path, options: Sequence[str] = ()
) -> dict[str, Recap]:
    """Run ansible/site.yml of `out` on `hosts` (with ansible-playbook `options`, such as --check); the recap
    per host (raises PlayError on no recap)."""
    extra = work / "lab-vars.json"
    extra.write_text(json.dumps(lab_vars()), encoding="utf-8")
    env = {
        **os.environ,
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_PRIVATE_KEY_FILE": str(key),
        "ANSIBLE_REMOTE_USER": "root",
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_FORKS": str(min(max(len(hosts), 1), 25)),
        # no connection masters: a task's module sent through a master that outlived a netplan apply on the
        # node waited for ever for its input (seen on the second run); pipelining keeps one ssh per task
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=no -o UserKnownHostsFile=/dev/null",
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "ssh"),
        "ANSIBLE_HOME": str(work / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(work / "ansible-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
    }
    argv = [
        "nsenter",
        f"--net=/run/netns/{deploy_ns}",
        ansible_playbook(),
        "-i",
        "ansible/inventory.json",
        "ansible/site.yml",
        "--limit",
        ",".join(hosts),
        "-e",
        f"@{extra}",
        *options,
    ]
    with open(log, "w", encoding="utf-8") as output:
        subprocess.run(argv, cwd=out, env=env, stdout=output, stderr=subprocess.STDOUT, check=False, timeout=3600)
    recap = read_recap(log.read_text(encoding="utf-8"))
    if not recap:
        raise PlayError(f"ansible-playbook gave no recap: see {log}")
    return recap


def read_recap(text: str) -> dict[str, Recap]:
    found = {}
    for line in text.split("PLAY RECAP", 1)[-1].splitlines() if "PLAY RECAP" in text else []:
        match = RECAP.match(line.strip())
        if match:
            host, *counts = match.groups()
            found[host] = Recap(*(int(c) for c in counts))
    return found


def failures(recap: dict[str, Recap]) -> list[str]:
    return [
        f"{h}: failed={r.failed} unreachable={r.unreachable}" for h, r in recap.items() if r.failed or r.unreachable
    ]


def close_ssh(work: Path) -> None:
    """End the ssh connection masters the playbook left in the lab's control folder (each by its socket), so
    none outlives the twin's namespaces (a later client would wait on it for ever)."""
    folder = work / "ssh"
    for socket in folder.glob("*") if folder.exists() else []:
        subprocess.run(["ssh", "-o", f"ControlPath={socket}", "-O", "exit", "lab"], capture_output=True, check=False)


def failed_tasks(text: str, limit: int = 8) -> list[str]:
    """The first lines of each failed task of a playbook log (for the message when the play fails)."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.startswith(("fatal:", "failed:")):
            task = next(
                (lines[j] for j in range(i, -1, -1) if lines[j].startswith(("TASK [", "RUNNING HANDLER ["))), ""
            )
            found.append(f"{task}\n    {line[:600]}")
    return found[:limit]
