"""Cross-checks of the rendered files: host names, counts and addresses agree across families.

Runs on every render over the text the renderers wrote (so a site's template override that drops a host or
changes an address is caught too), and compares each family with the topology it was rendered from:

- ansible/inventory.json: every node of the topology is a host under `nodes`, every host is a device of the
  topology, and each host's addresses are the topology's; every file a role copies (its role vars) was
  rendered.
- ansible/host_data/<rack>.json: every host is a node of that rack; the files it lists were rendered.
- slurm/slurm.conf: the nodes are those of the partitions' node groups, partitions name only known nodes,
  and each controller's address is its in-band address; the inventory's slurm groups list the same hosts.
- slurm/gres.conf: exactly the GPU nodes, each with its model's GPU count.
- slurm/topology.conf: every Slurm node sits under exactly one leaf switch (tree) or at most one block.
- nccl/: each GPU node group on a compute fabric has its nccl.conf, NCCL_IB_HCA lists one device per
  compute port (the rails in the host data), and the model's topology file holds the same GPUs and NICs.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import hostlist
import yaml

from .. import codes
from ..catalog import Server
from ..errors import Finding, Severity
from ..expand.nics import bound_hca, group_nodes
from ..expand.topology import Topology
from ..validate import ValidBlueprint
from . import paths
from .ansible.ansible import INVENTORY
from .ansible.ansible_model import interfaces
from .ansible.host_data import HOST_DATA_DIR, HostFacts, host_facts
from .ansible.inventory_json import UNSAFE_KEY
from .ansible.made import Made
from .context import network_of_kind
from .nccl.nccl import hca_devices, nccl_groups

_KEY = re.compile(r"(\w+)=(\S+)")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML has it (the hosts block's role vars are 700 kB at 100,000 GPUs)."""
ROLES, ROLE_VARS = "ansible/roles/", "/vars/main.yml"


def consistency_findings(
    valid: ValidBlueprint, topo: Topology, files: dict[str, str], made: Made | None = None
) -> list[Finding]:
    """The problems between `files` and the topology; what the families `made` their files from is read
    instead of the files where they are exactly its texts."""
    made = made or Made()
    try:
        top = _inventory(made, files)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        top, unreadable = None, [f"{INVENTORY} is not an inventory this check can read: {exc}"]
    else:
        unreadable = []
    try:
        per_host = _host_data(made, files)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        per_host, unreadable = {}, [*unreadable, f"{HOST_DATA_DIR} holds a file this check cannot read: {exc}"]
    problems = [
        *unreadable,
        *_inventory_problems(topo, files, top),
        *_host_data_problems(topo, files, per_host),
        *_slurm_problems(valid, topo, files, top),
        *_nccl_problems(valid, topo, files, per_host),
    ]
    return [
        Finding(
            codes.RENDER_INCONSISTENT,
            Severity.ERROR,
            f"rendered files disagree: {p}",
            hint="a template override or a renderer dropped or changed something; "
            "render without --templates to compare",
        )
        for p in problems
    ]


@lru_cache(maxsize=4096)
def _names(text: str) -> tuple[str, ...]:
    return tuple(hostlist.expand_hostlist(text))


def _sample(names: set[str]) -> str:
    shown = sorted(names)[:5]
    return ", ".join(shown) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _differ(what: str, expected: set[str], found: set[str]) -> Iterator[str]:
    if missing := expected - found:
        yield f"{what} lacks {len(missing)} expected: {_sample(missing)}"
    if extra := found - expected:
        yield f"{what} has {len(extra)} unexpected: {_sample(extra)}"


# --- Ansible ---------------------------------------------------------------------------------------------
def _hosts(group: dict[str, Any] | None, inherited: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Every host under an inventory group, with its vars: those written at it over those of the groups
    above it (the writer moves vars a node group's or switch tier's hosts share into that group). A host
    listed with vars wins over the same host listed by name only (the last non-empty wins)."""
    if not group:
        return {}
    chain = {**(inherited or {}), **(group.get("vars") or {})}
    found = {name: {**chain, **(values or {})} for name, values in (group.get("hosts") or {}).items()}
    for child in (group.get("children") or {}).values():
        for name, values in _hosts(child, chain).items():
            if values or name not in found:
                found[name] = values
    return found


def _group_vars(group: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    if not group:
        return
    yield group.get("vars") or {}
    for child in (group.get("children") or {}).values():
        yield from _group_vars(child)


def _unwrap(value: dict[str, Any]) -> Any:
    """Ansible's unsafe value ({"__ansible_unsafe": text}) read as the text it holds."""
    return value[UNSAFE_KEY] if set(value) == {UNSAFE_KEY} else value


def _loads(text: str) -> Any:
    """JSON with Ansible's unsafe values read as their text (looked for only where the text has one)."""
    return json.loads(text, object_hook=_unwrap) if UNSAFE_KEY in text else json.loads(text)


def _inventory(made: Made, files: dict[str, str]) -> dict[str, Any] | None:
    """The inventory's groups (`all.children`): those the renderer wrote it from when the file is the JSON text
    it made of them (tests/test_render_consistency.py proves reading the text gives the same), else read from
    the text (a site's template changed it)."""
    text = files.get(INVENTORY)
    if text is None:
        return None
    groups = made.inventory_groups(INVENTORY, text)
    return read_inventory(text) if groups is None else groups


def read_inventory(text: str) -> dict[str, Any]:
    """The groups (`all.children`) of an inventory file's text."""
    children: dict[str, Any] = _loads(text)["all"]["children"]
    return children


def _inventory_problems(topo: Topology, files: dict[str, str], top: dict[str, Any] | None) -> Iterator[str]:
    if top is None:
        return
    nodes = _hosts(top.get("nodes"))
    yield from _differ(f"{INVENTORY} group nodes", {n.name for n in topo.nodes()}, set(nodes))
    hosts = {**nodes, **_hosts(top.get("switches"))}
    yield from _differ(f"{INVENTORY} hosts vs topology devices", set(hosts) & set(topo.devices), set(hosts))
    addresses = interfaces(topo)[0]  # device -> network -> its address, as text
    for name, host_vars in sorted(hosts.items()):
        own = addresses.get(name, {})
        if "ansible_host" in host_vars and host_vars["ansible_host"] not in own.values():
            yield f"{INVENTORY}: {name} has ansible_host {host_vars['ansible_host']}, not one of its addresses"
        for network, address in sorted((host_vars.get("cf_addresses") or {}).items()):
            real = own.get(network)
            if real is None or real != address:
                yield f"{INVENTORY}: {name} has {network} address {address}, the topology {real}"
    for group_vars in _group_vars({"children": top}):
        for key, value in sorted(group_vars.items()):
            if key.startswith("cf_") and key.endswith("_files"):
                for entry in value:
                    if entry["src"] not in files:
                        yield f"{INVENTORY}: {key} copies {entry['src']}, which was not rendered"
    yield from _role_problems(files)


def _role_problems(files: dict[str, str]) -> Iterator[str]:
    for path in sorted(p for p in files if p.startswith(ROLES) and p.endswith(ROLE_VARS)):
        for src in _copied(yaml.load(files[path], Loader=_LOADER)):
            if src not in files:
                yield f"{path} copies {src}, which was not rendered"


def _copied(value: Any) -> Iterator[str]:
    """Every `src` of the install lists (`{src, dest}` entries) anywhere in `value`."""
    if isinstance(value, dict):
        if isinstance(value.get("src"), str) and "dest" in value:
            yield value["src"]
        for item in value.values():
            yield from _copied(item)
    elif isinstance(value, list):
        for item in value:
            yield from _copied(item)


def _host_data(made: Made, files: dict[str, str]) -> dict[str, HostFacts]:
    """host -> what its host data entry says: as the renderer wrote the files when they are exactly its texts,
    else read from them."""
    prefix = f"{HOST_DATA_DIR}/"
    # the paths first: a staged render reads a text back from the disk when asked for it
    found = [path for path in files if path.startswith(prefix) and path.endswith(".json")]
    facts = made.host_facts(files, found)
    return read_host_data({path: files[path] for path in found}) if facts is None else facts


def read_host_data(files: dict[str, str]) -> dict[str, HostFacts]:
    """host -> its facts, read from the host data files `files` (path -> text)."""
    prefix = f"{HOST_DATA_DIR}/"
    facts: dict[str, HostFacts] = {}
    for path, text in files.items():
        rack = path[len(prefix) : -len(".json")]
        for host, entry in _loads(text).items():
            facts[host] = host_facts(rack, entry)
    return facts


def _host_data_problems(topo: Topology, files: dict[str, str], per_host: dict[str, HostFacts]) -> Iterator[str]:
    for host, (rack, copies, _) in sorted(per_host.items()):
        device = topo.devices.get(host)
        if device is None or device.kind != "node" or device.rack != rack:
            yield f"{HOST_DATA_DIR}/{rack}.json: {host} is not a node of rack {rack}"
        for src in copies:
            if src not in files:
                yield f"{HOST_DATA_DIR}/{rack}.json: {host} copies {src}, which was not rendered"


# --- Slurm -----------------------------------------------------------------------------------------------
def _lines(text: str, keyword: str) -> Iterator[dict[str, str]]:
    for line in text.splitlines():
        if line.startswith(f"{keyword}="):
            yield dict(_KEY.findall(line))


def _slurm_problems(
    valid: ValidBlueprint,
    topo: Topology,
    files: dict[str, str],
    top: dict[str, Any] | None,
) -> Iterator[str]:
    slurm = valid.blueprint.slurm
    conf = files.get(paths.SLURM_CONF)
    if slurm is None or conf is None:
        return
    groups = {g for p in slurm.partitions for g in p.node_groups}
    expected = {n.name for n in topo.nodes() if n.group in groups}
    node_lines = list(_lines(conf, "NodeName"))
    defined = Counter(name for line in node_lines for name in _names(line["NodeName"]))
    yield from _differ(f"{paths.SLURM_CONF} NodeName", expected, set(defined))
    if twice := {n for n, count in defined.items() if count > 1}:
        yield f"{paths.SLURM_CONF} defines {len(twice)} nodes twice: {_sample(twice)}"
    for line in _lines(conf, "PartitionName"):
        if unknown := set(_names(line["Nodes"])) - set(defined):
            yield f"{paths.SLURM_CONF} partition {line['PartitionName']} names unknown nodes: {_sample(unknown)}"
    yield from _controller_problems(valid, topo, conf)
    if top is not None:
        children = (top.get("slurm") or {}).get("children") or {}
        yield from _differ(f"{INVENTORY} group slurm_nodes", set(defined), set(_hosts(children.get("slurm_nodes"))))
        yield from _differ(
            f"{INVENTORY} group slurm_controllers",
            set(slurm.controllers),
            set(_hosts(children.get("slurm_controllers"))),
        )
    yield from _gres_problems(valid, topo, files, set(defined))
    yield from _topology_problems(slurm.topology, files, set(defined))


def _controller_problems(valid: ValidBlueprint, topo: Topology, conf: str) -> Iterator[str]:
    inband = network_of_kind(valid, "inband")
    for line in conf.splitlines():
        if match := re.fullmatch(r"SlurmctldHost=([^(\s]+)(?:\(([^)]*)\))?", line):
            name, address = match.groups()
            real = topo.addresses.get(inband, {}).get(name) if inband else None
            if (str(real) if real else None) != address:
                yield f"{paths.SLURM_CONF}: controller {name} has address {address}, the topology {real}"


def _gres_problems(
    valid: ValidBlueprint,
    topo: Topology,
    files: dict[str, str],
    slurm_nodes: set[str],
) -> Iterator[str]:
    gpus: dict[str, int] = {}
    servers: dict[str, Server] = {}
    for node in topo.nodes():
        if node.model not in servers:
            servers[node.model] = valid.catalog.require(node.model, Server)
        server = servers[node.model]
        if node.name in slurm_nodes and server.gpus is not None:
            gpus[node.name] = server.gpus.count
    text = files.get(paths.SLURM_GRES)
    if text is None:
        if gpus:
            yield f"{paths.SLURM_GRES} is missing, though {len(gpus)} Slurm nodes have GPUs"
        return
    per_list: Counter[str] = Counter()  # a node list (gpu[001-128]) -> its devices, over the lines that name it
    for line in _lines(text, "NodeName"):
        per_list[line["NodeName"]] += len(_names(line["File"])) if "File" in line else int(line.get("Count", "0"))
    devices: Counter[str] = Counter()
    for nodes, count in per_list.items():
        for name in _names(nodes):
            devices[name] += count
    yield from _differ(f"{paths.SLURM_GRES} NodeName", set(gpus), set(devices))
    if wrong := {n for n in set(gpus) & set(devices) if gpus[n] != devices[n]}:
        yield f"{paths.SLURM_GRES} gives nodes other GPU counts than their model: {_sample(wrong)}"


def _topology_problems(mode: str, files: dict[str, str], slurm_nodes: set[str]) -> Iterator[str]:
    text = files.get(paths.SLURM_TOPOLOGY)
    if mode == "none" or text is None:
        if mode != "none":
            yield f"{paths.SLURM_TOPOLOGY} is missing, though the blueprint asks for topology {mode}"
        return
    keyword = "SwitchName" if mode == "tree" else "BlockName"
    placed = Counter(name for line in _lines(text, keyword) if "Nodes" in line for name in _names(line["Nodes"]))
    if mode == "tree":
        yield from _differ(f"{paths.SLURM_TOPOLOGY} leaf switches", slurm_nodes, set(placed))
    elif unknown := set(placed) - slurm_nodes:
        yield f"{paths.SLURM_TOPOLOGY} blocks name unknown nodes: {_sample(unknown)}"
    if twice := {n for n, count in placed.items() if count > 1}:
        yield f"{paths.SLURM_TOPOLOGY} places {len(twice)} nodes twice: {_sample(twice)}"


# --- NCCL ------------------------------------------------------------------------------------------------
def _railed_or_miscounted(topo: Topology, nodes: set[str], hcas: int) -> set[str]:
    """Of `nodes`, whose rails in the host data differ from the HCAs, those that are wrong: a node whose compute
    ports are on rails, or whose compute ports (on a fat-tree of two or more tiers, which has no rails and so
    no `cf_rails`) are not as many as the HCAs. One pass over the links, only when some node differs."""
    railed: set[str] = set()
    ports: Counter[str] = Counter()
    for link in topo.links:
        if link.tier == "node-leaf" and link.a in nodes and topo.fabrics[link.fabric].kind == "compute":
            if link.rail is None:
                ports[link.a] += 1
            else:
                railed.add(link.a)
    return {n for n in nodes if n in railed or ports[n] != hcas}


def _nccl_problems(
    valid: ValidBlueprint,
    topo: Topology,
    files: dict[str, str],
    per_host: dict[str, HostFacts],
) -> Iterator[str]:
    for entry in nccl_groups(valid, topo):
        text = files.get(entry.conf)
        if text is None:
            yield f"{entry.conf} is missing for GPU node group {entry.group.name}"
            continue
        settings = dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
        ports = sum(g.count for g in entry.server.port_groups("compute"))
        hcas = [item.split(":")[0] for item in settings.get("NCCL_IB_HCA", "").lstrip("=").split(",") if item]
        if "NCCL_IB_HCA" in entry.group.nccl:  # the architect chose the devices; nothing to derive it from
            continue
        members = group_nodes(topo, entry.group.name)
        known = hca_devices(entry.server)[1] or bound_hca(valid.blueprint.bindings, members, entry.server) is not None
        if "NCCL_IB_HCA" not in settings:
            if known:
                model = entry.group.model
                yield f"{entry.conf}: NCCL_IB_HCA is missing, though {model}'s devices are known (catalog or bindings)"
            continue  # unknown names: no guess is installed, and the topology file is not installed either
        if not known:
            yield f"{entry.conf}: NCCL_IB_HCA is set from guessed device names of {entry.group.model}"
        if len(hcas) != ports:
            yield f"{entry.conf}: NCCL_IB_HCA lists {len(hcas)} devices, {entry.group.model} has {ports} compute ports"
        if wrong := {n for n in members if (per_host[n].rails if n in per_host else 0) != len(hcas)}:
            wrong = _railed_or_miscounted(topo, wrong, len(hcas))
        if wrong:
            yield f"{HOST_DATA_DIR}: rails of {_sample(wrong)} do not match the {len(hcas)} HCAs of {entry.conf}"
        if entry.topology is not None and entry.topology in files:
            yield from _topology_xml_problems(entry.topology, files[entry.topology], entry.server, hcas)


def _topology_xml_problems(path: str, text: str, server: Server, hcas: list[str]) -> Iterator[str]:
    root = ET.fromstring(text)
    gpus = [p for p in root.iter("pci") if p.get("class") == "0x030200"]
    nets = sorted(net.get("name", "") for net in root.iter("net"))
    expected = server.gpus.count if server.gpus else 0
    if len(gpus) != expected:
        yield f"{path} holds {len(gpus)} GPUs, the model has {expected}"
    if nets != sorted(hcas):
        yield f"{path} names NICs {', '.join(nets)}, NCCL_IB_HCA {', '.join(hcas)}"
