"""Cross-reference checks on a schema-valid blueprint: catalog models, names, groups, racks, hosts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from . import codes
from .catalog import Catalog, ModelShapeEntry, RackType, Server, Sourced, StorageSystem, Switch
from .errors import DataPath, Finding, Severity
from .model import Blueprint, OobFabric
from .model.fabric import LeafSpineFabric
from .model.naming import is_hostname
from .model.nccl import nccl_variables
from .schema_errors import did_you_mean


def _error(code: str, message: str, path: DataPath, hint: str | None = None) -> Finding:
    return Finding(code, Severity.ERROR, message, path, None, hint)


def _unknown(code: str, what: str, name: str, choices: Iterable[str], path: DataPath) -> Finding:
    choices = sorted(choices)
    guess = did_you_mean(name, choices)
    message = f"unknown {what} '{name}' in {_fmt(path)}" + (f" (did you mean '{guess}'?)" if guess else "")
    hint = (
        None
        if guess
        else (f"known: {', '.join(choices[:12])}" + (", ..." if len(choices) > 12 else "") if choices else None)
    )
    return _error(code, message, path, hint)


def _fmt(path: DataPath) -> str:
    from .errors import format_path

    return format_path(path)


def catalog_ref(catalog: Catalog, key: str, kind: type[Sourced], what: str, path: DataPath) -> Iterator[Finding]:
    entry = catalog.entries.get(key)
    if entry is None:
        yield _unknown(codes.UNKNOWN_MODEL, what, key, catalog.keys_of(kind), path)
    elif not isinstance(entry, kind):
        yield _error(
            codes.MODEL_OF_WRONG_KIND,
            f"'{key}' in {_fmt(path)} is a {entry.__class__.__name__.lower()}, not a {what}",
            path,
        )


def _duplicates(names: Iterable[tuple[str, DataPath]], what: str) -> Iterator[Finding]:
    seen: dict[str, DataPath] = {}
    for name, path in names:
        if name in seen:
            yield _error(
                codes.DUPLICATE_NAME, f"duplicate {what} '{name}' in {_fmt(path)} (also in {_fmt(seen[name])})", path
            )
        else:
            seen[name] = path


def reference_findings(bp: Blueprint, catalog: Catalog) -> list[Finding]:
    checks = (_floor, _node_groups, _hosts, _fabrics, _pools, _slurm, _workloads, _nccl)
    return [finding for check in checks for finding in check(bp, catalog)]


def rack_names(bp: Blueprint) -> list[str]:
    return [row.rack_name(i) for row in bp.floor.rows for i in range(1, row.racks + 1)]


def _floor(bp: Blueprint, catalog: Catalog) -> Iterator[Finding]:
    for r, row in enumerate(bp.floor.rows):
        yield from catalog_ref(catalog, row.rack_type, RackType, "rack type", ("floor", "rows", r, "rack_type"))
    yield from _duplicates(((row.name, ("floor", "rows", r, "name")) for r, row in enumerate(bp.floor.rows)), "row")
    racks = [
        (row.rack_name(i), ("floor", "rows", r, "rack_names"))
        for r, row in enumerate(bp.floor.rows)
        for i in range(1, row.racks + 1)
    ]
    yield from _duplicates(racks, "rack name")


def _node_groups(bp: Blueprint, catalog: Catalog) -> Iterator[Finding]:
    rows = {row.name for row in bp.floor.rows}
    racks = set(rack_names(bp))
    yield from _duplicates(((g.name, ("node_groups", i, "name")) for i, g in enumerate(bp.node_groups)), "node group")
    for i, group in enumerate(bp.node_groups):
        base: DataPath = ("node_groups", i)
        yield from catalog_ref(catalog, group.model, Server, "server model", (*base, "model"))
        for j, row in enumerate(group.placement.rows or []):
            if row not in rows:
                yield _unknown(codes.UNKNOWN_RACK, "row", row, rows, (*base, "placement", "rows", j))
        for j, rack in enumerate(group.placement.racks or []):
            if rack not in racks:
                yield _unknown(codes.UNKNOWN_RACK, "rack", rack, racks, (*base, "placement", "racks", j))
        if group.management_network is not None and group.management_network not in bp.fabrics:
            path = (*base, "management_network")
            yield _unknown(codes.UNKNOWN_NAME, "fabric", group.management_network, bp.fabrics, path)


def _hosts(bp: Blueprint, _catalog: Catalog) -> Iterator[Finding]:
    owner: dict[str, int] = {}
    for i, group in enumerate(bp.node_groups):
        path: DataPath = ("node_groups", i, "hostname")
        names = group.hostnames()
        bad = next((n for n in names if not is_hostname(n)), None)
        if bad is not None:
            yield _error(
                codes.INVALID_HOST_NAME,
                f"host name '{bad}' from {_fmt(path)} is not a valid host name",
                path,
                "host names are lowercase letters, digits and '-', at most 63 characters",
            )
            continue
        repeated = [n for n, c in Counter(names).items() if c > 1]
        if repeated:
            yield _error(
                codes.DUPLICATE_NAME,
                f"pattern in {_fmt(path)} gives '{repeated[0]}' more than once",
                path,
                "include {index} in the pattern",
            )
        clash = next((n for n in names if n in owner and bp.node_groups[owner[n]].name != group.name), None)
        if clash is not None:
            other = bp.node_groups[owner[clash]].name
            yield _error(
                codes.DUPLICATE_NAME, f"host name '{clash}' of group '{group.name}' is also in group '{other}'", path
            )
        owner.update((n, i) for n in names)


def _group_refs(bp: Blueprint, names: list[str] | None, path: DataPath) -> Iterator[Finding]:
    known = [g.name for g in bp.node_groups]
    for j, name in enumerate(names or []):
        if name not in known:
            yield _unknown(codes.UNKNOWN_NAME, "node group", name, known, (*path, j))


def _fabrics(bp: Blueprint, catalog: Catalog) -> Iterator[Finding]:
    racks = set(rack_names(bp))
    for name, fabric in bp.fabrics.items():
        base: DataPath = ("fabrics", name)
        yield from _group_refs(bp, fabric.node_groups, (*base, "node_groups"))
        for j, rack in enumerate(fabric.switch_racks or []):
            if rack not in racks:
                yield _unknown(codes.UNKNOWN_RACK, "rack", rack, racks, (*base, "switch_racks", j))
        if isinstance(fabric, OobFabric):
            yield from catalog_ref(catalog, fabric.switch, Switch, "switch model", (*base, "switch"))
            if fabric.uplink_to is not None and fabric.uplink_to not in bp.fabrics:
                yield _unknown(codes.UNKNOWN_NAME, "fabric", fabric.uplink_to, bp.fabrics, (*base, "uplink_to"))
            continue
        yield from _tier_models(fabric, catalog, base)
        for j, partition in enumerate(fabric.partitions):
            yield from _group_refs(bp, partition.node_groups, (*base, "partitions", j, "node_groups"))


def _pools(bp: Blueprint, _catalog: Catalog) -> Iterator[Finding]:
    """Every pool (host pools and switch loopback pools) apart from every other."""
    named = [(name, "ipv4_pool", fabric.ipv4_pool) for name, fabric in bp.fabrics.items()]
    for name, fabric in bp.fabrics.items():
        if isinstance(fabric, LeafSpineFabric) and fabric.loopback_pool is not None:
            named.append((name, "loopback_pool", fabric.loopback_pool))
    for i, (name, field, pool) in enumerate(named):
        for other, other_field, other_pool in named[:i]:
            if pool.overlaps(other_pool):
                yield _error(
                    codes.POOLS_OVERLAP,
                    f"{field} {pool} of '{name}' overlaps {other_pool} of '{other}'"
                    + ("" if other_field == "ipv4_pool" else f" ({other_field})"),
                    ("fabrics", name, field),
                )


def _tier_models(fabric: LeafSpineFabric, catalog: Catalog, base: DataPath) -> Iterator[Finding]:
    for tier in ("leaf", "spine", "core"):
        key = getattr(fabric, tier)
        if key is None:
            continue
        found = list(catalog_ref(catalog, key, Switch, "switch model", (*base, tier)))
        yield from found
        switch = catalog.get(key, Switch)
        reserved = getattr(fabric.reserved_ports, tier)
        smallest = min((g.count for g in switch.ports if g.role != "oob"), default=0) if switch else 0
        if not found and switch is not None and reserved and reserved >= smallest:
            yield _error(
                codes.RESERVED_PORTS_LEAVE_NONE,
                f"reserved_ports.{tier} keeps {reserved} ports free on every "
                f"{tier}, but {key} has {smallest} ports in its smallest data port group",
                (*base, "reserved_ports", tier),
            )
        if not found and switch is not None and switch.technology != fabric.technology:
            yield _error(
                codes.TECHNOLOGY_MISMATCH,
                f"{tier} switch '{key}' is {switch.technology}, but fabric '{base[-1]}' is {fabric.technology}",
                (*base, tier),
            )


def _slurm(bp: Blueprint, _catalog: Catalog) -> Iterator[Finding]:
    if bp.slurm is None:
        return
    hosts = {h for g in bp.node_groups for h in g.hostnames()}
    for j, host in enumerate(bp.slurm.controllers):
        if host not in hosts:
            yield _unknown(codes.UNKNOWN_HOST, "host", host, hosts, ("slurm", "controllers", j))
    for p, partition in enumerate(bp.slurm.partitions):
        yield from _group_refs(bp, partition.node_groups, ("slurm", "partitions", p, "node_groups"))
    yield from _duplicates(
        ((p.name, ("slurm", "partitions", i, "name")) for i, p in enumerate(bp.slurm.partitions)), "partition"
    )


def _workloads(bp: Blueprint, catalog: Catalog) -> Iterator[Finding]:
    for w, workload in enumerate(bp.workloads):
        yield from _group_refs(bp, workload.node_groups, ("workloads", w, "node_groups"))
        if workload.model is not None:
            yield from catalog_ref(catalog, workload.model, ModelShapeEntry, "model shape", ("workloads", w, "model"))
        storage = getattr(workload, "checkpoint_storage", None)
        if storage is not None:
            path = ("workloads", w, "checkpoint_storage", "model")
            yield from catalog_ref(catalog, storage.model, StorageSystem, "storage system", path)
    yield from _duplicates(((w.name, ("workloads", i, "name")) for i, w in enumerate(bp.workloads)), "workload")


def _nccl(bp: Blueprint, _catalog: Catalog) -> Iterator[Finding]:
    known = nccl_variables()
    for i, group in enumerate(bp.node_groups):
        for name in group.nccl:
            if name not in known:
                yield _unknown(
                    codes.UNKNOWN_NCCL_VARIABLE, "NCCL variable", name, known, ("node_groups", i, "nccl", name)
                )
