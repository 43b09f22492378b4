"""Blueprints built by Hypothesis from the blueprint's JSON Schema (`clusterforge schema`), not from the examples.

Each case walks the schema from the root: every required property and a third of the optional ones, values
inside the schema's bounds, enums and patterns. What the schema cannot say (which strings name something, the
rules between fields that the models' validators keep) comes from a small world drawn first: rows and their
racks, node groups and their hosts, fabrics, and the real catalog's keys by kind (servers by role, switches by
technology, rack types, model shapes), so that most cases get past validation into expansion, checks and
rendering. Near-valid: half the cases carry no fault; the others carry at most two, each a value outside the
schema (beyond a bound, the wrong type, hostile text), a required property left out, an unknown key, or a rule
between fields left unkept.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import cache
from typing import Any

from fuzzing import FLOATS, HOSTILE_TEXT, INTEGERS, values
from hypothesis import strategies as st

from clusterforge import codes
from clusterforge.catalog import ModelShapeEntry, RackType, Server, Switch, load_catalog
from clusterforge.model.nccl import nccl_variables
from clusterforge.schema_doc import blueprint_schema

Json = dict[str, Any]

ROLES = ["compute", "login", "storage", "management", "subnet-manager"]
TEXT = ["", "one line", "GPU pod, row A: 8 racks", "x" * 120, "<b>&amp;</b> | =1+1 {{ x }}", "日本 é"]
NAMES = ["main", "train", "serve", "debug", "a", "x-1", "long_name-2"]
NCCL_VALUES = [0, 1, 2, 4, "mlx5_0", "^lo,docker", "INFO", "NVL", 0.5]
FABRIC_MODELS = {"compute": "ComputeFabric", "storage": "StorageFabric", "inband": "InbandFabric", "oob": "OobFabric"}
_NO_HINT = object()


@cache
def schema() -> Json:
    return blueprint_schema()


def definition(name: str) -> Json:
    return schema()["$defs"][name] if name != "Blueprint" else schema()


@cache
def catalog_keys() -> dict[str, list[str]]:
    catalog = load_catalog()
    servers = catalog.keys_of(Server)
    switches = catalog.keys_of(Switch)
    return {
        "gpu_server": [k for k in servers if catalog.require(k, Server).gpus is not None],
        "cpu_server": [k for k in servers if catalog.require(k, Server).gpus is None],
        "infiniband": [k for k in switches if catalog.require(k, Switch).technology == "infiniband"],
        "ethernet": [k for k in switches if catalog.require(k, Switch).technology == "ethernet"],
        "rack": catalog.keys_of(RackType),
        "shape": catalog.keys_of(ModelShapeEntry),
    }


@dataclass
class Row:
    name: str
    racks: int
    rack_type: str
    rack_names: str


@dataclass
class Group:
    name: str
    model: str
    role: str
    count: int
    hostname: str


@dataclass
class World:
    """The names a case refers to, drawn before the blueprint so that references mostly resolve."""

    rows: list[Row]
    groups: list[Group]
    fabrics: dict[str, str]
    """name -> kind"""

    @property
    def racks(self) -> list[str]:
        return [r.rack_names.format(row=r.name, index=i) for r in self.rows for i in range(1, r.racks + 1)]

    @property
    def group_names(self) -> list[str]:
        return [g.name for g in self.groups]

    @property
    def gpu_groups(self) -> list[str]:
        return [g.name for g in self.groups if g.model in catalog_keys()["gpu_server"]]

    @property
    def hosts(self) -> list[str]:
        return [g.hostname.format(group=g.name, index=i) for g in self.groups for i in range(1, min(g.count, 2) + 1)]


@st.composite
def worlds(draw: st.DrawFn) -> World:
    keys = catalog_keys()
    rows = [
        Row(
            name,
            draw(st.integers(1, 8)),
            draw(st.sampled_from([*keys["rack"], "generic/rear-door-48u-60kw", "generic/air-42u-40kw"])),
            draw(st.sampled_from(["{row}{index:02d}", "{row}{index:02d}", "{row}-{index:03d}"])),
        )
        for name in draw(st.lists(st.sampled_from("ABCDNR"), min_size=1, max_size=3, unique=True))
    ]
    names = draw(
        st.lists(st.sampled_from(["gpu", "cpu", "login", "mgmt", "stor", "ufm", "gb"]), min_size=1, max_size=4)
    )
    groups = []
    for i, name in enumerate(dict.fromkeys(names)):
        role = "compute" if i == 0 else draw(st.sampled_from(ROLES))
        kind = "gpu_server" if role == "compute" and draw(st.integers(0, 5)) else "cpu_server"
        groups.append(
            Group(
                name,
                draw(st.sampled_from(keys[kind])),
                role,
                draw(st.integers(1, 8) | st.integers(1, 8) | st.integers(1, 8) | st.integers(1, 40)),
                draw(
                    st.sampled_from(
                        ["{group}{index:03d}", "{group}{index:03d}", "{group}-{index}"] + ["n{index:05d}"] * (i == 0)
                    )
                ),
            )
        )
    kinds = draw(st.lists(st.sampled_from(list(FABRIC_MODELS)), max_size=4, unique=True))
    return World(rows, groups, {kind if draw(st.integers(0, 4)) else f"{kind}-net": kind for kind in kinds})


def _resolve(node: Json) -> tuple[str | None, Json]:
    ref = node.get("$ref")
    if ref is None:
        return None, node
    name = ref.rsplit("/", 1)[1]
    return name, definition(name)


class Walk:
    """One case: the schema walked with `draw`, references from `world`, a fault at about one chance in
    `fault_rate` (0: none), at most two."""

    def __init__(self, draw: st.DrawFn, world: World, fault_rate: int):
        self.draw = draw
        self.world = world
        self.fault_rate = fault_rate
        self.faults_left = 2

    def chance(self, one_in: int) -> bool:
        return self.draw(st.integers(0, one_in - 1)) == 0

    def fault(self) -> bool:
        if self.faults_left and self.fault_rate and self.chance(self.fault_rate):
            self.faults_left -= 1
            return True
        return False

    def subset(self, items: list[str]) -> list[str]:
        return (
            self.draw(st.lists(st.sampled_from(items), min_size=1, max_size=len(items), unique=True)) if items else []
        )

    # --- the schema's own shapes

    def model(self, name: str, fixed: Json | None = None) -> Json:
        """An object of the model `name`: `fixed` fields as given, the others drawn."""
        node = definition(name)
        fixed = fixed or {}
        required = set(node.get("required", []))
        out: Json = {}
        for prop, sub in node.get("properties", {}).items():
            if prop in fixed:
                out[prop] = fixed[prop]
            elif prop in required:
                if not self.fault():
                    out[prop] = self.value(sub, name, prop)
            elif self.chance(3):
                out[prop] = self.value(sub, name, prop)
        if self.fault():
            out[self.draw(st.sampled_from(["x", "Name", "count ", *HOSTILE_TEXT[:6]]))] = self.draw(values)
        if not self.fault():
            self.keep_rules(name, out)
        return out

    def value(self, node: Json, owner: str, prop: str) -> Any:
        """A value for `node`, the schema of property `prop` of the model `owner`."""
        if self.fault():
            return self.wrong(node)
        hinted = self.hint(owner, prop)
        return self.plain(node, owner, prop) if hinted is _NO_HINT else hinted

    def plain(self, node: Json, owner: str, prop: str) -> Any:
        name, node = _resolve(node)
        if name is not None:
            return self.model(name)
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return self.draw(st.sampled_from(node["enum"]))
        options = node.get("anyOf") or node.get("oneOf")
        if options:
            concrete = [o for o in options if o.get("type") != "null"]
            if len(concrete) < len(options) and self.chance(4):
                return None
            return self.value(self.draw(st.sampled_from(concrete or options)), owner, prop)
        kind = node.get("type")
        if kind == "boolean":
            return self.draw(st.booleans())
        if kind == "integer":
            low = node.get("minimum", node.get("exclusiveMinimum", -1) + 1)
            high = node.get("maximum", node.get("exclusiveMaximum", low + 1001) - 1)
            return self.draw(st.integers(low, min(high, low + 64)) | st.integers(low, high))
        if kind == "number":
            return self.number(node)
        if kind == "string":
            return self.text(node)
        if kind == "array":
            low = node.get("minItems", 0)
            count = self.draw(st.integers(low, min(node.get("maxItems", low + 3), low + 3)))
            return [self.value(node.get("items", {}), owner, prop) for _ in range(count)]
        if kind == "object":
            return self.mapping(node, prop)
        return self.draw(values)

    def number(self, node: Json) -> float:
        """Round numbers inside the bounds mostly, any float inside them sometimes."""
        low = float(node["minimum"] if "minimum" in node else node.get("exclusiveMinimum", 0.0))
        high = float(node["maximum"] if "maximum" in node else node.get("exclusiveMaximum", low + 100_000.0))

        def inside(x: float) -> bool:
            return low <= x <= high and x not in (node.get("exclusiveMinimum"), node.get("exclusiveMaximum"))

        nice = [x for x in (low, high, (low + high) / 2, low + 1, 0.5, 1.0, 1.35, 2.0, 40.0, 600.0) if inside(x)]
        number = self.draw(st.floats(low, high, allow_nan=False, allow_infinity=False))
        if not nice or (self.chance(4) and inside(number)):
            return number if inside(number) else (low + high) / 2
        return self.draw(st.sampled_from(nice))

    def text(self, node: Json) -> str:
        if "pattern" in node:
            text = self.draw(st.from_regex(node["pattern"], fullmatch=True, alphabet=st.characters(codec="ascii")))
            return text[: node.get("maxLength", len(text))]
        if node.get("format") == "ipv4network":
            return self.pool()
        return self.draw(st.sampled_from(TEXT)).ljust(node.get("minLength", 0), ".")[: node.get("maxLength", 500)]

    def mapping(self, node: Json, prop: str) -> Json:
        """A mapping of keys the blueprint may use (NCCL variables, catalog keys, switch names) to values."""
        keys: list[str] = (node.get("propertyNames") or {}).get("enum") or []
        if prop == "nccl":
            keys = sorted(nccl_variables())
        elif prop == "price_list":
            keys = [k for kind in catalog_keys().values() for k in kind]
        elif prop == "switches":
            keys = [
                f"{fabric}-{tier}{i:03d}" for fabric in self.world.fabrics for tier in ("leaf", "spine") for i in (1, 2)
            ]
        sub = next(iter(node.get("patternProperties", {}).values()), node.get("additionalProperties", {}))
        if not keys or not isinstance(sub, dict):
            return {}
        chosen = self.draw(st.lists(st.sampled_from(keys), max_size=3, unique=True))
        if prop == "nccl":
            return {key: self.draw(st.sampled_from(NCCL_VALUES)) for key in chosen}
        return {key: self.value(sub, prop, key) for key in chosen}

    def wrong(self, node: Json) -> Any:
        """A value the schema refuses, mostly: beyond a bound, of another type, hostile text."""
        _, node = _resolve(node)
        choices: list[Any] = [self.draw(values), self.draw(st.sampled_from(HOSTILE_TEXT))]
        bounds = [node[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in node]
        if bounds:
            bound = self.draw(st.sampled_from(bounds))
            choices += [bound - 1, bound + 1, bound - 0.5, bound + 0.5, -bound]
        choices += [self.draw(st.sampled_from(INTEGERS)), self.draw(st.sampled_from(FLOATS)), None, [], {}, True]
        return self.draw(st.sampled_from(choices))

    def pool(self) -> str:
        """Networks of 10.x.y.0/16 to /26, which mostly hold the cluster and mostly do not overlap."""
        if self.fault():
            return self.draw(st.sampled_from(["10.0.0.0/8", "192.168.0.0/30", "0.0.0.0/0", "10.0.0.1/24", "::/0"]))
        address = ipaddress.ip_address(f"10.{self.draw(st.integers(0, 255))}.{self.draw(st.integers(0, 255))}.0")
        return str(ipaddress.ip_network((address, self.draw(st.integers(16, 26))), strict=False))

    # --- what the schema cannot say: names, references, and the rules between fields

    def hint(self, owner: str, prop: str) -> Any:
        world = self.world
        keys = catalog_keys()
        match owner, prop:
            case ("Blueprint" | "TrainingJob" | "InferenceService" | "Partition" | "IbPartition", "name"):
                return self.draw(st.sampled_from(NAMES))
            case ("Slurm", "cluster_name"):
                return self.draw(st.sampled_from(NAMES))
            case ("ComputeFabric", "node_groups"):
                return self.subset(world.gpu_groups or world.group_names)
            case (_, "node_groups"):
                return self.subset(world.group_names)
            case ("Placement", "rows"):
                return self.subset([r.name for r in world.rows])
            case ("Placement", "racks") | (_, "switch_racks"):
                return self.subset(world.racks)
            case ("Placement", "per_rack"):
                return self.draw(st.integers(1, 8))
            case ("Slurm", "controllers"):
                return self.subset(world.hosts)[:4]
            case ("ReservedPorts", "leaf" | "spine" | "core") | ("switches", _):  # a mapping's values: (its name, key)
                return self.draw(st.integers(0, 4))
            case ("Slurm", "block_size"):
                return self.draw(st.integers(1, 36))
            case (fabric, "leaf" | "spine" | "core") if fabric.endswith("Fabric"):
                return self.draw(st.sampled_from(keys["infiniband"] + keys["ethernet"]))
            case ("OobFabric", "switch"):
                return self.draw(st.sampled_from(keys["ethernet"]))
            case ("OobFabric", "uplink_to"):
                return self.draw(st.sampled_from([*world.fabrics, "oob"]))
            case ("TrainingJob" | "InferenceService", "model"):
                return self.draw(st.sampled_from(keys["shape"]))
            case ("TrainingJob", "gpus"):
                return self.draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
            case ("InferenceService", "replicas" | "gpus_per_replica"):
                return self.draw(st.sampled_from([1, 2, 4, 8]))
            case ("TrainingJob", "tensor_parallel" | "pipeline_parallel" | "context_parallel" | "expert_parallel"):
                return self.draw(st.sampled_from([1, 1, 2, 4, 8]))
            case ("Suppression", "code"):
                return self.draw(st.sampled_from(sorted(codes.REGISTRY)))
            case ("Suppression", "target"):
                return self.draw(st.sampled_from([None, *world.group_names, *world.racks[:3], *world.fabrics]))
            case ("NodeGroup", "hostname") | ("Row", "rack_names"):  # drawn with the world; here only as a fault
                return self.draw(st.sampled_from(["{index}", "{row}", "{group}", "{nope}", "x"]))
            case (_, "oversubscription"):
                return self.draw(st.sampled_from(["1:1", "2:1", "1.5:1", "3:1", 1.0, 2, 4.0]))
            case (_, "currency"):
                return self.draw(st.sampled_from(["USD", "EUR"]))
            case ("Partition", "max_time"):
                return self.draw(st.sampled_from(["INFINITE", "60", "02:00:00", "7-00:00:00", "1:00"]))
            case ("Software", "nvidia_driver"):
                return self.draw(st.sampled_from([None, "570.172.08", "550.54"]))
            case ("Software", "cuda"):
                return self.draw(st.sampled_from([None, "12.8", "12.4"]))
            case ("Software", "dcgm" | "doca_ofed"):
                return self.draw(st.sampled_from([None, "4.2.3", "2.10.0"]))
            case ("Floor", "rack_pitch_mm" | "row_pitch_mm"):
                return self.draw(st.sampled_from([600, 800, 2400, 1, 0.5]))
        return _NO_HINT

    def keep_rules(self, owner: str, out: Json) -> None:
        """The rules between a model's fields that the schema does not carry (validators in the models)."""
        if owner == "Placement" and out.get("rows") and out.get("racks"):
            del out[self.draw(st.sampled_from(["rows", "racks"]))]
        elif owner in ("TrainingJob", "InferenceService"):
            given = [k for k in ("model", "shape", "model_params_b") if out.get(k) is not None]
            for key in given[1:]:
                del out[key]
            if not given:
                out["model_params_b"] = 8.0
        elif owner == "ModelShape" and (out.get("experts") is None) != (out.get("experts_per_token") is None):
            out.pop("experts", None)
            out.pop("experts_per_token", None)
        elif owner == "Prices" and out.get("gpu_hour") is None and out.get("capex_per_gpu") is None:
            out["gpu_hour"] = 2.0
        elif owner in ("ComputeFabric", "StorageFabric", "InbandFabric"):
            self.keep_fabric_rules(owner, out)
        elif owner == "RoCE" and out.get("qos") is None:
            out.pop("traffic_class", None)
        elif owner == "Blueprint":
            for i, workload in enumerate(listed(out.get("workloads"))):
                if isinstance(workload, dict) and i:
                    workload["name"] = f"{workload.get('name', 'w')}{i}"
        elif owner == "Slurm":
            if out.get("topology") == "block" and out.get("version") in ("22.05", "23.02", "23.11"):
                out["version"] = "24.11"
            for i, partition in enumerate(listed(out.get("partitions"))):
                if isinstance(partition, dict):
                    partition["name"] = f"{partition.get('name', 'p')}{i or ''}"
                    if i:
                        partition.pop("default", None)

    def keep_fabric_rules(self, owner: str, out: Json) -> None:
        technology: str = out["technology"] if out.get("technology") in ("infiniband", "ethernet") else "ethernet"
        if technology == "infiniband":
            out.pop("roce", None)
            out.pop("rail_addressing", None)
        else:
            out.pop("partitions", None)
        if owner == "ComputeFabric" or technology == "infiniband" or out.get("dual_homing") == "evpn-mh":
            out.pop("dual_homing", None)
        switches = catalog_keys()[technology]
        for tier in ("leaf", "spine", "core"):
            if out.get(tier) is not None and out[tier] not in switches:
                out[tier] = self.draw(st.sampled_from(switches))
        if out.get("tiers") in (2, 3, "auto", None) and not out.get("spine") and not self.chance(4):
            out["spine"] = out.get("leaf")
        if out.get("tiers") == 3 and not out.get("core"):
            out["core"] = out.get("leaf")
        for i, partition in enumerate(listed(out.get("partitions"))):
            if isinstance(partition, dict):
                partition |= {"name": f"p{i}", "pkey": i + 2}

    def blueprint(self) -> Json:
        world = self.world
        rows = [
            self.model(
                "Row",
                {"name": r.name, "racks": r.racks, "rack_type": r.rack_type, "rack_names": r.rack_names},
            )
            for r in world.rows
        ]
        groups = [
            self.model(
                "NodeGroup",
                {"name": g.name, "model": g.model, "role": g.role, "count": g.count, "hostname": g.hostname},
            )
            for g in world.groups
        ]
        fabrics = {}
        for name, kind in world.fabrics.items():
            fixed: Json = {"kind": kind}
            if kind != "oob":
                technology = self.draw(
                    st.sampled_from(["infiniband", "ethernet"]) if kind != "inband" else st.just("ethernet")
                )
                fixed |= {"technology": technology, "leaf": self.draw(st.sampled_from(catalog_keys()[technology]))}
            fabrics[name] = self.model(FABRIC_MODELS[kind], fixed)
        data = self.model(
            "Blueprint",
            {"version": 1, "floor": self.model("Floor", {"rows": rows}), "node_groups": groups, "fabrics": fabrics},
        )
        data.pop("include", None)  # read by the loader, which a case built in code does not go through
        if not self.chance(20):
            data.pop("catalogs", None)
        if "slurm" not in data and self.chance(2):
            data["slurm"] = self.model("Slurm")
        return data


def listed(value: Any) -> list[Any]:
    """`value` if it is a list (a fault may have put anything there), else no items."""
    return value if isinstance(value, list) else []


@st.composite
def schema_blueprints(draw: st.DrawFn) -> dict[str, Any]:
    """A blueprint's data built from the schema: near-valid, with real catalog keys and resolving references."""
    world = draw(worlds())
    return Walk(draw, world, draw(st.sampled_from([0, 0, 25, 60]))).blueprint()
