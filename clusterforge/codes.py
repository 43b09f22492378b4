"""Every finding code: its severity, a title, what to do about it and an example message.

Code uses the constants (`codes.RACK_POWER_OVER_FEEDS`), never the literal string. To add a code, add one
`_code(...)` line in its family below and run `python tests/regen.py codes` (docs/codes.md is generated from
this module; a test checks it is fresh). A new family also needs a line in FAMILIES.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import Severity

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(frozen=True)
class CodeInfo:
    code: str
    severity: Severity
    """The severity the finding is reported with (PORT-002 alone is `info` in some cases, see its action)."""
    title: str
    action: str
    """What the user does about it."""
    example: str
    """A message as the CLI prints it after `<severity> <code>: `."""

    @property
    def family(self) -> str:
        return self.code.split("-")[1]


REGISTRY: dict[str, CodeInfo] = {}

FAMILIES = {
    "YAML": "Reading the blueprint files",
    "LIMIT": "Size limits",
    "SCHEMA": "Blueprint schema",
    "CAT": "Catalog files",
    "REF": "References between blueprint and catalog",
    "NAME": "Names",
    "ADDR": "Addresses",
    "IDENT": "Stable identity (the lock file)",
    "MGMT": "Management reachability (the network Ansible uses)",
    "MIGRATE": "Blueprint versions (clusterforge migrate)",
    "SPACE": "Rack space",
    "WEIGHT": "Rack weight",
    "POWER": "Power",
    "COOL": "Cooling",
    "NVLINK": "NVLink domains",
    "FABRIC": "Fabric expansion",
    "PORT": "Switch and node ports",
    "NET": "Host network interfaces",
    "OVERSUB": "Oversubscription",
    "CABLE": "Cabling",
    "WORK": "Workload fit",
    "SLURM": "Slurm",
    "FAIL": "Single failures (resilience)",
    "SPOF": "Single points of failure",
    "SUPPRESS": "Suppressions",
    "RENDER": "Rendering",
    "OUT": "The output folder",
    "DIFF": "diff",
    "EXPORT": "export",
    "VERIFY": "verify: the built fabric against the plan",
    "ACCEPT": "accept: burn-in results against the plan",
}


def _code(code: str, severity: Severity, title: str, action: str, example: str) -> str:
    if code in REGISTRY:
        raise ValueError(f"finding code {code} is registered twice")
    REGISTRY[code] = CodeInfo(code, severity, title, action, example)
    return code


# fmt: off
# --- reading the blueprint files (loader, yamlsafe)
YAML_SYNTAX = _code("CF-YAML-001", ERROR, "YAML cannot be parsed", "fix the YAML at the line shown", "YAML syntax error: expected the node content, but found '-'")
YAML_DUPLICATE_KEY = _code("CF-YAML-002", ERROR, "a key appears twice in one mapping", "keep one of the two keys", "duplicate key 'count'")
YAML_NOT_A_MAPPING = _code("CF-YAML-003", ERROR, "the file is not a mapping of keys to values", "start the file with `version: 1` and the blueprint's keys", "a blueprint file must be a mapping of keys to values, this one is empty")
YAML_TOO_LARGE = _code("CF-YAML-004", ERROR, "the file or its aliases expand beyond the size limits", "write the values out; a blueprint needs no alias bombs or multi-MiB files", "document expands to more than 500000 values (too many aliases, or a file far larger than a blueprint)")
YAML_INCLUDE = _code("CF-YAML-005", ERROR, "a file or an include cannot be read (missing, cycle, too deep)", "fix the path in `include`, or break the cycle", "include cycle: include-cycle/blueprint.yaml -> include-cycle/more.yaml -> include-cycle/blueprint.yaml")
YAML_INCLUDE_CONFLICT = _code("CF-YAML-006", ERROR, "two files define the same key", "define the key in one file only", "'site.name' is defined twice (first at include-conflict/blueprint.yaml:3:8)")

# --- size limits (bounds), checked before any name, port or link is made
TOO_LARGE = _code("CF-LIMIT-001", ERROR, "more nodes or racks than clusterforge plans in one blueprint", "split the cluster into several blueprints (one per building block or hall)", "the blueprint asks for 400,000 nodes in 2 groups; clusterforge plans at most 250,000")
TOO_MANY_PORTS = _code("CF-LIMIT-002", ERROR, "more server ports than clusterforge plans in one blueprint", "split the cluster, or use servers with fewer ports", "the blueprint asks for 6,700,062 server ports; clusterforge plans at most 4,000,000")
TOO_MUCH_INPUT = _code("CF-LIMIT-003", ERROR, "a blueprint reads more files or bytes than one run reads (includes and catalogs, repeats counted)", "include or name each file once; split the cluster into several blueprints", "will not read f9.yaml: it would make more than 256 file reads in one run (repeats counted)")

# --- blueprint schema (schema_errors)
SCHEMA_UNKNOWN_KEY = _code("CF-SCHEMA-001", ERROR, "unknown key", "fix the spelling (the message suggests the closest key) or remove the key", "unknown key 'placment' in node_groups[0] (did you mean 'placement'?)")
SCHEMA_MISSING = _code("CF-SCHEMA-002", ERROR, "a required field or a fabric's `kind` is missing", "add the field", "missing required field 'name' in the top level")
SCHEMA_CHOICE = _code("CF-SCHEMA-003", ERROR, "a value is not one of the allowed words", "use one of the values the message lists", "fabrics.oob: invalid kind 'obb' (did you mean 'oob'?)")
SCHEMA_RANGE = _code("CF-SCHEMA-004", ERROR, "a number or list is out of its range", "use a value within the limits shown (docs/reference.md lists them)", "node_groups[0].count: input should be less than or equal to 200000 (got 10000000)")
SCHEMA_VALUE = _code("CF-SCHEMA-005", ERROR, "a value has the right type but is not valid", "write the value in the form the message asks for", "fabrics.compute.oversubscription: must be a ratio such as '1:1' or '2:1', or a number >= 1")
SCHEMA_TYPE = _code("CF-SCHEMA-006", ERROR, "a value has the wrong type", "write a value of the type shown (a number, a list, a mapping)", "node_groups[0].count: input should be a valid integer (got 'four')")

# --- catalog files (catalog/loader)
CATALOG_UNREADABLE = _code("CF-CAT-001", ERROR, "a catalog file cannot be read", "fix the path in `catalogs` (relative to the blueprint)", "cannot read catalog file no-such-catalog.yaml: No such file or directory (catalogs[0])")
CATALOG_SECTION = _code("CF-CAT-002", ERROR, "a catalog file has an unknown or malformed section", "use the sections servers, switches, gpus, nics, racks, equipment, cables, optics, models", "unknown catalog section 'switchs' (did you mean 'switches'?)")
CATALOG_KEY = _code("CF-CAT-003", ERROR, "a catalog key is not 'vendor/model' in lowercase", "rename the entry, e.g. `acme/gpu-box`", "catalog key 'ACME/GPU-Box' must be 'vendor/model' in lowercase")
CATALOG_NETBOX = _code("CF-CAT-004", ERROR, "a NetBox device type cannot be used", "give the device type the field the message names (e.g. a power port's maximum_draw)", "cannot use NetBox device type: power port 'PSU1' has no maximum_draw")
CATALOG_REFERENCE = _code("CF-CAT-005", ERROR, "a catalog entry refers to an unknown entry", "fix the key, or add the entry it refers to", "acme/gpu-box: unknown gpu 'nvidia/h10' (did you mean 'nvidia/h100'?)")

# --- references between the blueprint and the catalog (references)
UNKNOWN_MODEL = _code("CF-REF-002", ERROR, "unknown catalog model", "fix the key (the message suggests the closest) or add the model in a user catalog", "unknown server model 'nvidia/dgx-h10' in node_groups[0].model (did you mean 'nvidia/dgx-h100'?)")
UNKNOWN_NAME = _code("CF-REF-003", ERROR, "unknown node group or fabric", "use a name the blueprint defines", "unknown node group 'gpus' in fabrics.compute.node_groups[0] (did you mean 'gpu'?)")
UNKNOWN_RACK = _code("CF-REF-004", ERROR, "unknown row or rack", "use a row name from floor.rows, or a rack name such as A01", "unknown row 'B' in node_groups[0].placement.rows[0]")
UNKNOWN_HOST = _code("CF-REF-005", ERROR, "a Slurm controller is not a host of the blueprint", "name a host the node groups create", "unknown host 'mgmt001' in slurm.controllers[0] (did you mean 'gpu001'?)")
MODEL_OF_WRONG_KIND = _code("CF-REF-006", ERROR, "a catalog model of the wrong kind", "use a server where a server is asked for, a switch for a switch", "'nvidia/qm9700' in node_groups[0].model is a switch, not a server model")
TECHNOLOGY_MISMATCH = _code("CF-REF-007", ERROR, "switch technology differs from the fabric's", "pick switches of the fabric's technology; roce settings only on Ethernet", "leaf switch 'nvidia/sn5600' is ethernet, but fabric 'compute' is infiniband")
UNKNOWN_NCCL_VARIABLE = _code("CF-REF-008", ERROR, "unknown NCCL environment variable", "fix the name (the message suggests the closest documented one)", "unknown NCCL variable 'NCCL_IB_HCAS' in node_groups[0].nccl.NCCL_IB_HCAS (did you mean 'NCCL_IB_HCA'?)")
RESERVED_PORTS_LEAVE_NONE = _code("CF-REF-009", ERROR, "`reserved_ports` keeps every data port of a switch model free", "reserve fewer ports than the switch has, or pick a larger switch", "reserved_ports.spine keeps 64 ports free on every spine, but nvidia/qm9700 has 64 ports in its smallest data port group")

# --- names (references)
DUPLICATE_NAME = _code("CF-NAME-001", ERROR, "a name or host name is used twice", "rename one of them, or change a hostname pattern", "duplicate node group 'gpu' in node_groups[1].name (also in node_groups[0].name)")
INVALID_HOST_NAME = _code("CF-NAME-002", ERROR, "a hostname pattern gives an invalid host name", "use lowercase letters, digits and hyphens (RFC 1123)", "host name 'GPU_1' from node_groups[0].hostname is not a valid host name")

# --- addresses (expand/addressing, references)
POOL_TOO_SMALL = _code("CF-ADDR-001", ERROR, "an address pool is too small", "use a pool of at least the prefix the hint gives", "network 'compute': pool 10.0.0.0/26 has 62 host addresses, 256 are needed")
POOLS_OVERLAP = _code("CF-ADDR-002", ERROR, "two networks' pools overlap", "give each network its own pool", "ipv4_pool 10.0.0.0/16 of 'oob' overlaps 10.0.0.0/24 of 'compute'")
ADDRESS_SUBNET_DISAGREE = _code("CF-ADDR-003", ERROR, "an address, its gateway and its subnet disagree", "report it: the addressing of clusterforge or of a site's change to it is wrong", "network 'inband': gpu001 address 10.120.1.2 has its gateway 10.120.0.1 outside its subnet 10.120.1.0/24")
GATEWAY_HELD_BY_NOTHING = _code("CF-ADDR-005", ERROR, "a gateway the rendered files point at is held by no rendered device", "set uplink_to on the out-of-band network (its leaves then hold the gateway), or declare it external with gateway: <the pool's first address> when the site's router holds it", "network 'oob': 13 devices (BMCs and switch management ports) point at gateway 10.42.0.1, which no rendered device holds")
ADDRESS_ON_TWO_INTERFACES = _code("CF-ADDR-004", ERROR, "one address on two interfaces", "give each network its own pool; report it if the pools are apart", "address 10.120.0.2 is on 2 interfaces: gpu001 on 'inband', gpu002 on 'storage'")
HEAD_NODES_OFF_THE_OOB = _code("CF-ADDR-006", WARNING, "head nodes with no leg on the out-of-band network and no rendered route to it", "set uplink_to: <the in-band network> on the out-of-band network (its leaves then route between the two), or suppress with the site's routing as the reason", "network 'oob': head nodes mgmt001, mgmt002 have no leg on it and no rendered route to it (its gateway is the site's router 10.42.0.1): BCM, Ansible and UFM on them reach no BMC unless the site routes between the in-band and out-of-band networks")

IDENTITY_MOVES = _code("CF-IDENT-001", ERROR, "a change would renumber or rename a device the lock file holds", "change the blueprint so the device keeps its identity (grow at the end of a group, keep pools and names), or pass --allow-renumber when the move is wanted", "2 identities the lock file holds would change: inband mgmt001 10.120.0.33 -> 10.99.0.2; host gpu001 renamed node001")
IDENTITY_REPATCHED = _code("CF-IDENT-002", WARNING, "a device moves to another rack slot, or a cable to other ports", "re-patch or move it as listed, or change the blueprint so it stays where the lock file has it", "2 devices or cables the lock file holds move: compute-spine001 moves from N01 U33 to N01 U25; compute/gpu033:ib0 re-patched from compute-leaf003:p5 to compute-leaf004:p1")
LOCK_UNREADABLE = _code("CF-IDENT-003", ERROR, "the lock file cannot be read", "fix the line shown, or delete the lock file to assign every identity afresh (`git checkout` it back otherwise)", "cannot read the lock file: it is larger than 1024 MiB")
IDENTITY_NO_ROOM = _code("CF-IDENT-004", ERROR, "the addresses the lock file holds leave no free address for a new interface", "release the held identities of removed devices (render --release-removed), or use a larger pool", "network 'inband': subnet 10.120.0.0/28 has no free address for gpu040 (the lock file holds 13 of it)")
ADDRESS_PIN = _code("CF-IDENT-005", ERROR, "an address pinned in the blueprint cannot be applied", "pin an address of the interface's subnet that is not its network, gateway or broadcast address, on one interface only, keyed network/host or network/host:port", "address pin inband/gpu002: 10.120.0.1 is reserved in 10.120.0.0/24 (its gateway or switch addresses)")
TRUNKS_REPATCHED = _code("CF-IDENT-006", WARNING, "switch-to-switch cables the lock file holds move to other ports: the fabric changed shape", "re-patch the cables as `clusterforge diff` lists them (under 'Switch-to-switch cables re-patched') before the new switch configurations are applied, or keep the fabric's shape", "128 switch-to-switch cables the lock file holds move to other ports (132 stay): fabric 'compute': on compute-leaf001 (16), compute-leaf002 (16), compute-leaf003 (16), compute-leaf004 (16) and 4 more, from compute-spine001 (32), compute-spine002 (32), compute-spine003 (32), compute-spine004 (32) to compute-spine005 (32), compute-spine006 (32), compute-spine007 (32), compute-spine008 (32)")

MANAGED_ON_BMC = _code("CF-MGMT-001", ERROR, "a node group on no in-band network names no management network", "attach the group to an in-band network, or name the network Ansible uses in the group's management_network (the out-of-band network to reach it on its BMCs)", "node group 'gpu' is on no in-band network and names no management_network: Ansible would reach its nodes on their BMC addresses (network 'oob'), not on storage network 'storage'")
UNREACHABLE_GROUP = _code("CF-MGMT-002", ERROR, "a node group has no network Ansible can reach it on", "attach the group to an in-band or out-of-band network, or name one in management_network", "node group 'gpu' is on no in-band or out-of-band network: Ansible cannot reach its nodes")
WRONG_MANAGEMENT_NETWORK = _code("CF-MGMT-003", ERROR, "management_network names a network the group is not on, or a compute fabric", "name an in-band, out-of-band or storage network the group is attached to", "node group 'gpu': management_network 'compute' is a compute fabric; name an in-band, out-of-band or storage network the group is on")
OLDER_VERSION = _code("CF-MIGRATE-001", WARNING, "an older blueprint version is read as it meant, and the current version means it otherwise", "run `clusterforge migrate BLUEPRINT --write` to write down what the older version left implicit", "blueprint version 1: node group 'gpu' is on no in-band network and is reached on its BMCs (network 'oob'), as version 1 did implicitly; version 2 needs management_network: oob")

# --- rack space (expand/placement, expand/fabric, expand/oob, checks/space)
SWITCHES_DO_NOT_FIT = _code("CF-SPACE-001", ERROR, "switches do not fit their racks", "add racks to switch_racks", "fabric 'compute': 12 switches (12 U) do not fit in racks N01 (rack space filled N01 (1 U kept per rack for its out-of-band switch))")
NODES_DO_NOT_FIT = _code("CF-SPACE-002", ERROR, "the nodes of a group do not fit their racks", "add racks, allow more rows or racks in placement, or raise per_rack", "node group 'gpu': room for 40 of 99 nodes in rows A (per_rack 4 filled 10 racks)")
WRONG_RACK_TYPE = _code("CF-SPACE-003", ERROR, "a rack-scale system is placed in racks of another type", "place the group in racks of the model's rack type", "node group 'nvl72': nvidia/gb200-nvl72-tray must sit in nvidia/gb200-nvl72 racks, but A01 are not")
OUTSIDE_RACK = _code("CF-SPACE-010", ERROR, "a device lies outside its rack", "lower the device or use a taller rack type", "gpu001 at U40 (8U) is outside the 42U rack A01")
OVERLAPPING_DEVICES = _code("CF-SPACE-011", ERROR, "two devices occupy the same U", "move one of them", "gpu002 and gpu001 both occupy U3 of rack A01")
IN_RESERVED_U = _code("CF-SPACE-012", ERROR, "a device occupies a reserved U", "move it, or change the rack type's reserved U", "gpu002 occupies reserved U46 of rack A01")

# --- rack weight (checks/weight)
RACK_TOO_HEAVY = _code("CF-WEIGHT-001", ERROR, "rack load over its limit", "spread the heaviest devices over more racks", "rack A01 carries 1520 kg, more than its 1361 kg limit")
RACK_NEAR_WEIGHT_LIMIT = _code("CF-WEIGHT-002", WARNING, "rack load above 90% of its limit", "leave headroom, or accept it with a suppression", "rack A01 carries 1260 kg, 93% of its 1361 kg limit")

# --- power (checks/power)
RACK_POWER_OVER_FEEDS = _code("CF-POWER-001", ERROR, "rack draw over its usable feed power", "move nodes to other racks, or lower per_rack", "rack A01 plans 44.2 kW, more than the 36.2 kW its feeds can carry (2 x 3-phase 415 V 63 A, 2N, 80% derated)")
RACK_POWER_NEAR_LIMIT = _code("CF-POWER-002", WARNING, "rack draw above 90% of its usable feed power", "leave 10% headroom for growth and inrush, or accept it with a suppression", "rack A01 plans 34.1 kW, 94% of the 36.2 kW its feeds can carry")
PSU_REDUNDANCY = _code("CF-POWER-003", ERROR, "N of N+M PSUs cannot carry the device", "lower power.load_factor to the measured peak, or pick a model with larger PSUs", "8 nvidia/dgx-h100 in 'gpu': 4 of 6 PSUs (13.2 kW) cannot carry the planned 14.3 kW, so N+2 redundancy does not hold")
SHELVES_SIDE_LOSS = _code("CF-POWER-005", ERROR, "the power shelves left when one side fails cannot carry the rack", "lower power.load_factor for the trays to the measured peak, or use a rack type with more shelves per side", "rack A01: when one side fails, 4 of 8 power shelves (132.0 kW) remain for 140.0 kW of trays and switch trays")
SHELVES_SIDE_LOSS_NO_SPARE = _code("CF-POWER-006", WARNING, "after one side fails, the power shelves left have no spare PSU", "accept it (one more PSU failure then throttles the rack), or lower power.load_factor for the trays", "4 racks (A01, A02, A03, A04): when one side fails, the 4 power shelves left carry 117.0 kW on 24 PSUs (132.0 kW); with one PSU per shelf kept spare (5+1) they carry 110.0 kW")
FEED_LOSS = _code("CF-POWER-004", WARNING, "the PSUs left after losing one feed cannot carry the device", "set power.load_factor for the class to the measured peak, or use racks with more feeds", "32 supermicro/sys-821ge-tnhr-h200 in 'gpu': when one feed is lost, 3 of 6 PSUs (9.0 kW) remain for a planned 10.2 kW; the nodes throttle or stop (racks A01, A02, A03, A04, A05, A06, ...)")
PDU_OUTLETS_SHORT = _code("CF-POWER-007", WARNING, "a rack PDU has fewer outlets than the PSUs on its feed", "use PDUs with more outlets (procurement.pdu_outlets), or more feeds per rack", "2 racks need more outlets on one PDU than its 24: A01 (27), A02 (27)")

# --- cooling (checks/cooling)
RACK_AIR_OVER = _code("CF-COOL-001", ERROR, "heat to air over the rack's air (or rear-door) capacity", "fewer nodes per rack, a rear-door or liquid-cooled rack type", "rack A01 rejects 48.9 kW to air, more than the 40 kW air cooling can take")
RACK_LIQUID_OVER = _code("CF-COOL-002", ERROR, "heat to coolant over the rack's loop", "fewer liquid-cooled nodes per rack, or a rack type with a larger loop", "rack A01 sends 65.3 kW to coolant, more than its 50 kW loop")
LIQUID_WITHOUT_LOOP = _code("CF-COOL-003", ERROR, "liquid-cooled devices in a rack without a coolant loop", "place liquid-cooled models in a liquid-cooled rack type", "rack A01 holds liquid-cooled devices (16.3 kW to coolant) but has no coolant loop")
ROW_CDU_OVER = _code("CF-COOL-004", ERROR, "a row sends more heat to coolant than its CDU takes", "raise the row's cdu_kw to the CDU's rating, or spread the racks over rows", "row A sends 104.5 kW to coolant, more than its 100 kW CDU")
HALL_COOLING_OVER = _code("CF-COOL-005", ERROR, "the hall's heat over its cooling", "fewer racks, or raise site.hall_cooling_kw to the hall's real capacity", "the hall takes 112.4 kW of heat, more than its 100 kW of cooling")
AIRFLOW_MISMATCH = _code("CF-COOL-006", WARNING, "a switch model is not sold with the airflow its ports' aisle needs", "order the model with the other airflow, turn the switches round (floor.switch_ports_face), or pick another model", "nvidia/acme-sw in 'compute' (4 switches) needs C2P airflow (ports face the cold aisle); the catalog lists P2C only")

# --- NVLink domains (expand/nvlink)
NVLINK_DOMAIN_SPLIT = _code("CF-NVLINK-001", ERROR, "an NVLink domain is split over racks", "place a whole domain's nodes per rack", "NVLink domain 1 of group 'nvl72' spans racks A01, A02")
SLURM_WITHOUT_IMEX = _code("CF-SLURM-001", WARNING, "multi-node NVLink domains with a Slurm release that cannot give jobs IMEX channels", "set slurm.version to the release the cluster runs, 24.05 or later for switch/nvidia_imex, or create IMEX channels in a job prolog", "Slurm 22.05 has no switch/nvidia_imex: jobs on the 4 multi-node NVLink domains (gb[001-072]) get no IMEX channel, so their GPUs cannot share memory across nodes")
SLURM_PARTITION_WITHOUT_BLOCK = _code("CF-SLURM-002", ERROR, "a Slurm partition has no node in an NVLink domain under topology/block", "use slurm.topology 'tree', which places jobs on every node, or leave the partition out", "topology 'block': partition 'cpu' (login[001-002]) has no node in an NVLink domain, so it is in no block and Slurm's topology/block gives it no job")
SLURM_NODES_WITHOUT_BLOCK = _code("CF-SLURM-003", WARNING, "nodes of a Slurm partition are in no NVLink domain under topology/block", "use slurm.topology 'tree', or leave the node groups without NVLink domains out of the partition", "topology 'block': login[001-002] of partition 'mixed' are in no NVLink domain, so in no block: Slurm's topology/block gives them no job")
SLURM_BLOCKS_NONE = _code("CF-SLURM-004", WARNING, "Slurm topology 'block' without NVLink domains or a block size: no block is configured", "set slurm.block_size (nodes per block, e.g. the nodes of one leaf switch), or use topology 'tree'", "topology 'block' makes no block: the partitions' nodes (inf[001-008]) are in no multi-node NVLink domain and slurm.block_size is not set, so slurmctld reports 'No blocks configured' and schedules as if flat")
NVLINK_DOMAIN_PARTIAL = _code("CF-NVLINK-002", WARNING, "an NVLink domain is not full", "use a multiple of the domain's nodes to fill every domain", "NVLink domain 1 of group 'nvl72' holds 12 of 18 nodes (48 of 72 GPUs)")

# --- fabric expansion (expand/fabric, expand/oob)
NO_PORTS_OF_ROLE = _code("CF-FABRIC-001", ERROR, "a listed node group has no ports of the network's role", "remove the group from the network's node_groups, or pick a model with such ports", "node group 'mgmt' (supermicro/sys-121h-tnr) has no storage ports for fabric 'storage'")
NO_DATA_PORTS = _code("CF-FABRIC-002", ERROR, "a switch model has no data ports", "pick a switch model with data ports for the tier", "fabric 'compute': leaf switch acme/mgmt-switch has no data ports")
NIC_FASTER_THAN_LEAF = _code("CF-FABRIC-003", WARNING, "node ports faster than the leaf's ports", "pick a leaf switch with ports at the NICs' speed", "fabric 'compute': 400G node ports run at 100G on nvidia/sn4600c")
MANAGER_WITHOUT_PORT = _code("CF-FABRIC-004", ERROR, "a subnet manager finds no free node slot and no reserved port", "leave one node out of a scalable unit so the manager takes its leaf ports, or set reserved_ports", "fabric 'compute': subnet manager ufm001 finds no free node slot on a leaf and no free reserved port")
TOO_FEW_TIERS = _code("CF-FABRIC-005", ERROR, "the fabric needs more tiers or switch models than given", "use tiers: auto, 2 or 3, and give spine (and core) models", "fabric 'compute': one nvidia/qm9700 holds 64 ports, 256 are needed")
NO_OOB_UPLINK_PORT = _code("CF-FABRIC-006", ERROR, "no free leaf port for the out-of-band switches' uplinks", "give the uplink network a leaf with more ports, or a spine tier", "the leaves of 'inband' have no free port for the uplinks of 8 out-of-band switches (oob-A01, oob-A02, oob-A03, ...)")
OUT_OF_PORTS = _code("CF-FABRIC-007", ERROR, "a switch runs out of ports while the fabric is wired", "lower reserved_ports, or pick a switch model with more ports", "fabric 'compute': out of ports wiring compute-leaf001 to compute-spine001")
FABRIC_WITHOUT_NODES = _code("CF-FABRIC-008", WARNING, "a fabric has no nodes attached", "attach node groups, or remove the fabric", "fabric 'storage' has no nodes attached")
SCALABLE_UNIT_SPLIT = _code("CF-FABRIC-009", WARNING, "a scalable unit is split over two or more leaves of a rail", "lower scalable_unit to what one leaf takes, or reserve no leaf ports: a subnet manager takes the leaf ports of a node left out", "fabric 'compute': a scalable unit of 32 nodes is split over 2 leaves per rail, since a nvidia/qm9700 leaf takes 31 nodes at 1:1 with its reserved ports")
SWITCHES_MOSTLY_IDLE = _code("CF-FABRIC-010", WARNING, "switches use under half of their ports", "use a smaller switch model, size uplinks for the nodes present (uplinks_for: present), or plan the growth that fills them", "fabric 'inband': 1 spine switch uses under half of their ports, inband-spine001 26 of 64")
LEAF_UP_OVER_DOWN = _code("CF-FABRIC-011", INFO, "leaves with more uplink than downlink bandwidth", "expected in a partly filled scalable unit when uplinks are sized as planned; set uplinks_for: present to size for the nodes present", "fabric 'compute': 6 leaves have more uplink than downlink bandwidth, compute-leaf003 12.4 Tb/s down, 12.8 Tb/s up (uplinks are sized for the planned downlinks, so the fabric grows without recabling)")
SEPARATE_PLANES = _code("CF-FABRIC-012", INFO, "a fabric is several disjoint planes", "set planes: one (the default) for a single connected fabric, or keep per-rail planes on purpose", "fabric 'compute' is 8 separate planes (InfiniBand subnets, each with its own subnet manager); traffic between rails crosses inside the nodes")
NOT_A_FAT_TREE = _code("CF-FABRIC-013", WARNING, "an InfiniBand fabric is not a fat tree (OpenSM's fat-tree routing refuses it)", "give every leaf the same number of links to each spine of its group (and each spine to its core group), e.g. a spine count that divides the leaves' uplinks; the rendered OpenSM configuration routes it with updn meanwhile", "fabric 'compute' is not a fat tree: compute-leaf003 has no link to compute-spine002; OpenSM's fat-tree routing refuses it, so the rendered OpenSM configuration routes it with updn")
BOND_ON_ONE_LEAF = _code("CF-FABRIC-014", ERROR, "a dual-homed node's bond has every member on one leaf", "wire each bond member to a different leaf of the node's pair", "fabric 'inband' is dual-homed (mlag), but 1 node has every bond member on one leaf: gpu001")
BOND_SINGLE_HOMED = _code("CF-FABRIC-015", WARNING, "storage or in-band bonds land every member on one leaf", "set dual_homing: mlag (or evpn-mh with a spine tier) on the network", "fabric 'inband': 42 nodes bond every member to one leaf, which is lost with that leaf: gpu001, gpu002, gpu003, ...")
BOND_ON_ONE_CAGE = _code("CF-FABRIC-016", WARNING, "two bond members share one switch cage (a twin-port optic or breakout cable)", "set dual_homing: mlag so the members go to different leaves", "fabric 'inband': 10 nodes have two bond members in one switch cage (a twin-port optic or breakout cable fails as one): inf001, inf002, inf003, ...")
SWITCH_SM_TOO_MANY_NODES = _code("CF-FABRIC-018", ERROR, "a subnet manager on the switches is asked to manage more nodes than it can", "run the subnet manager on hosts (subnet_manager: hosts, with UFM or OpenSM hosts of role subnet-manager)", "fabric 'compute': the switches' subnet manager manages up to 2048 nodes (MLNX-OS user manual), this subnet has 2312 (2048 host ports and 264 switches)")
LEAF_PAIR_INCOMPLETE = _code("CF-FABRIC-017", ERROR, "a leaf pair lacks its partner or, under MLAG, its peer links", "re-render: clusterforge wires pairs with two peer links; a site template or edit removed them", "fabric 'inband': leaf pair 1 has 0 peer links (MLAG needs 2)")

# --- ports (checks/ports)
SWITCH_OVER_RADIX = _code("CF-PORT-001", ERROR, "a switch uses more ports than it has", "report it: expansion should never wire past a switch's ports", "compute-leaf001 uses 66 of its 64 'osfp' ports")
UNCONNECTED_PORTS = _code("CF-PORT-002", WARNING, "node ports left unconnected (info when the group is not attached to that network on purpose)", "attach the group to a network of the ports' role, or accept it", "node group 'mgmt' leaves 6 storage ports unconnected: the group is not attached to the storage network")

# --- host network interfaces (checks/interfaces)
INTERFACE_NAME_UNKNOWN = _code("CF-NET-001", WARNING, "node ports whose interface name is not known (netplan leaves them out until they are bound)", "run `clusterforge bind BLUEPRINT FACTS...` on what the nodes report (ip -j link, ibdev2netdev, Ansible facts) and include the file it writes, or give the model's interface_names or bus_ids and interface_naming in a catalog file", "node group 'gpu' (supermicro/sys-821ge-tnhr-h200 on ubuntu): 31 nodes have ports with no known interface name: ib1, ib2, ib3, ... (12 ports); netplan leaves them out until they are bound")

FACTS_UNREADABLE = _code("CF-NET-002", ERROR, "`bind`: a facts file cannot be read or is not what the tool prints", "give `ip -details -json link show`, `ibdev2netdev` or Ansible `setup` JSON output, one node per file named <node>.<anything>", "facts/gpu001.ip-link.json:3:7: not JSON: Expecting ',' delimiter")

NCCL_MAY_USE_STORAGE = _code("CF-NET-003", WARNING, "NCCL_IB_HCA cannot be set while the nodes have RDMA-capable storage or in-band NICs: NCCL may send collectives over them", "bind the nodes (`clusterforge bind` with ibdev2netdev output) so every node's compute RDMA devices are known, give the port group's devices in a catalog file, or set NCCL_IB_HCA in the group's nccl settings", "node group 'gpu' (supermicro/sys-821ge-tnhr-h200): the RDMA devices of its compute ports are not known, and its ports stor1-2 (nvidia/connectx-7-2p-400g) are RDMA-capable: NCCL_IB_HCA is not set, so NCCL may use them")

BREAKOUT_NOT_ALLOWED = _code("CF-PORT-003", ERROR, "a switch cage split in a way the switch's breakout table does not allow, or a cage the table disables is cabled", "report it: expansion follows the catalog's breakout_modes; a site catalog or template changed the ports", "inband-leaf001 (nvidia/sn4600c): swp2 splits 4x, which the breakout table allows on odd cages only")

# --- oversubscription (checks/ports)
OVERSUBSCRIBED = _code("CF-OVERSUB-001", WARNING, "switches above the oversubscription target", "add uplinks (a lower target, fewer nodes per leaf), or raise the target", "fabric 'compute': 1 leaf switches above the 1:1 target, worst compute-leaf001 at 1.06:1")

# --- cabling (expand/cabling)
NO_CABLE_REACHES = _code("CF-CABLE-001", ERROR, "no cable media reaches a run", "move the switches closer (switch_racks) or add a media type to the catalog", "no cable media reaches 612.3 m at 400G between gpu001:ib1 and compute-leaf001:p1")
ENDS_CANNOT_MEET = _code("CF-CABLE-002", WARNING, "link ends that no catalog part can join (lane rate, lanes, connector); the links are left out of the cabling plan and the BOM", "connect the ports to a switch whose ports run their lane rate (a QSFP28 port is 4 x 25G), or add the part to a site catalog", "fabric 'inband': 4 100G links between nvidia/sn2201 (QSFP28) and nvidia/sn5600 (OSFP, 4 ports per cage) cannot be cabled, no common lane rate: QSFP28 runs 100G as 4 x 25G, OSFP, 4 ports per cage as 1 x 100G or 2 x 50G (oob-sw001:uplink4-inband-leaf002:swp25s2, ...)")

# --- workload fit (checks/workloads)
WORKLOAD_TOO_MANY_GPUS = _code("CF-WORK-001", ERROR, "a workload needs more GPUs than its node groups have", "add nodes, or run it on fewer GPUs", "training job 'big' needs 5000 GPUs, node groups gpu have 248")
WORKLOAD_LAYOUT = _code("CF-WORK-002", ERROR, "the parallel sizes do not divide the GPUs or the batch", "make tensor x pipeline x context x data parallel equal the GPUs, and the global batch a multiple of data parallel x micro batch x sequence", "training job 'big': tensor 8 x pipeline 4 x context 1 x data 8 = 256 GPUs, but the job has 248")
WORKLOAD_TP_OVER_NVLINK = _code("CF-WORK-003", WARNING, "a tensor-parallel group is larger than an NVLink domain", "keep tensor parallel within the NVLink domain; add pipeline or data parallel instead", "training job 'big': tensor parallel 16 spans 2 NVLink domains of 8 GPUs, so its per-layer collectives cross the fabric at 50 GB/s instead of NVLink's 450 GB/s")
WORKLOAD_TRAINING_MEMORY = _code("CF-WORK-004", ERROR, "a training job does not fit in GPU memory", "take the layout the hint gives (more tensor or pipeline parallel, a higher ZeRO stage, recomputation)", "training job 'big' needs 212 GB per GPU, 127 GB are usable (weights 17.6, gradients 17.6, optimizer 52.9, activations 124)")
WORKLOAD_INFERENCE_MEMORY = _code("CF-WORK-005", ERROR, "an inference replica cannot hold its weights and KV cache", "lower the concurrency or context, or give each replica more GPUs (the hint says how many)", "inference service 'chat' needs 240 GB per replica for weights and 64 sessions of 16,384 tokens, 173 GB are usable")
WORKLOAD_TTFT = _code("CF-WORK-006", WARNING, "time to first token above its target", "give each replica more GPUs, use a faster precision, or accept a longer target", "inference service 'chat': time to first token 1,560 ms for 16,384 tokens, target 500 ms")
WORKLOAD_DECODE_RATE = _code("CF-WORK-007", WARNING, "decode tokens/s per session below its target", "fewer sessions per replica, or more GPUs per replica (the hint says how many)", "inference service 'chat': 9.1 tokens/s per session at 64 sessions, target 20")
WORKLOAD_GPUS_TOGETHER = _code("CF-WORK-008", WARNING, "the workloads together need more GPUs than their node groups have", "run them at different times on purpose, or add nodes", "workloads on gpu need 264 GPUs together, the node groups have 248 (pretrain 248, eval 16)")
WORKLOAD_SHAPE_UNKNOWN = _code("CF-WORK-009", INFO, "a workload gives only its parameter count", "name a catalog model (model: meta/llama-3-70b) or write its shape, so KV cache and activations are counted", "workload 'pretrain' gives only model_params_b: KV cache and activations are not counted")

# --- single points of failure every blueprint is checked for (checks/single_points.py)
SINGLE_SPINE = _code("CF-SPOF-001", WARNING, "a fabric plane's leaves reach each other through one spine", "add a second spine (the leaves' uplinks split over both), or suppress with the reason", "fabric 'storage': one spine (storage-spine001) carries all traffic between its 2 leaves: when it fails or is upgraded, the leaves are cut off from each other")
SINGLE_SUBNET_MANAGER = _code("CF-SPOF-002", WARNING, "an InfiniBand fabric has one subnet manager", "add a second subnet-manager node on the fabric (OpenSM or UFM in standby), or suppress with the reason", "fabric 'compute': one subnet manager (ufm001): when it fails no standby takes over, and the subnet cannot bring up a port or route around a failed link until it is back")
SINGLE_MANAGEMENT_SWITCH = _code("CF-SPOF-003", WARNING, "one switch on the management path every node or management port needs", "dual-home the in-band network on a leaf pair, land the out-of-band uplinks on both leaves of a pair, or suppress with the reason", "network 'inband': every node's in-band link lands on one switch (inband-leaf001): when it fails, no node can be reached to manage")

# --- single failures against the blueprint's resilience tolerance (failures/, checks/resilience.py)
FAILURE_BISECTION = _code("CF-FAIL-001", WARNING, "a single failure takes more of a fabric's bisection than the blueprint tolerates", "add spines or uplinks (more, smaller upper-tier switches lose less each), or raise resilience max_bisection_loss", "4 of 4 spine switch failures exceed max_bisection_loss 0.125: losing compute-spine001 takes 25.0% of the bisection of fabric 'compute' (38.4 of 51.2 Tb/s left)")
FAILURE_GPUS_LOST = _code("CF-FAIL-002", WARNING, "a single failure takes out more GPUs than the blueprint tolerates", "spread what the element carries (dual-homing, leaves in two racks, PSUs on two feeds), or raise resilience max_gpus_lost", "22 of 24 cable bundle (rack to rack) failures exceed max_gpus_lost 0: losing A01~N01 takes 24 GPUs lost")
FAILURE_GPUS_DEGRADED = _code("CF-FAIL-003", WARNING, "a single failure leaves more GPUs degraded or throttled than the blueprint tolerates", "give the nodes PSUs enough on one feed, dual-home their ports, or raise resilience max_gpus_degraded", "2 of 2 feed (hall-wide) failures exceed max_gpus_degraded 0: losing feed A leaves 248 GPUs degraded or throttled")
FAILURE_RACKS_DOWN = _code("CF-FAIL-004", WARNING, "a single failure takes more racks down than the blueprint tolerates", "feed the rack from more feeds (2N), keep its load under what one side carries, or raise resilience max_racks_down", "3 of 3 row failures exceed max_racks_down 0: losing row A takes 6 racks down (A01, A02, A03, A04, A05, A06)")
FAILURE_NVLINK_BROKEN = _code("CF-FAIL-005", WARNING, "a single failure breaks more NVLink domains than the blueprint tolerates", "keep spare trays in the domain (schedule 64 of 72 GPUs), or raise resilience max_nvlink_domains_broken", "72 of 72 node failures exceed max_nvlink_domains_broken 0: losing gb001 leaves 1 NVLink domains broken")
FAILURE_WORKLOADS = _code("CF-FAIL-006", WARNING, "after a single failure a workload no longer has its GPUs", "keep spare nodes beyond what the workloads need, or run smaller jobs", "31 of 31 node failures exceed workloads_must_fit: after losing gpu001, llama3-70b-eval: 0 of 2 replicas left: misses its targets at 32 concurrent requests")
FAILURE_NO_SUBNET_MANAGER = _code("CF-FAIL-007", WARNING, "a single failure leaves an InfiniBand subnet without a subnet manager", "run a standby subnet manager on a second host (UFM high availability)", "1 of 1 subnet manager failures exceed subnet_manager_left: losing ufm001 leaves 1 InfiniBand subnet(s) without a running subnet manager")

# --- suppressions (checks)
UNUSED_SUPPRESSION = _code("CF-SUPPRESS-001", WARNING, "a suppression matches no finding", "remove it, or fix its code or target", "suppression of CF-POWER-002 for 'A01' matches no finding")

# --- rendering (render)
RENDER_FAILED = _code("CF-RENDER-001", ERROR, "a template failed (usually a site's override)", "fix the override template: an undefined name or a syntax error", "rendering slurm failed: UndefinedError: 'no_such_value' is undefined")
RENDER_INCONSISTENT = _code("CF-RENDER-002", ERROR, "the rendered families disagree with each other or the topology", "render without --templates to compare; a template override dropped or changed something", "rendered files disagree: slurm/slurm.conf NodeName lacks 32 expected hosts (gpu001, ...)")

# --- the output folder (writer)
OUTPUT_NOT_OURS = _code("CF-OUT-001", ERROR, "the output folder holds files clusterforge did not write", "render into a new or empty folder, or pass --force (files of the same path are replaced, nothing else is deleted)", "this folder holds files that clusterforge did not write (no manifest.json of an earlier render); nothing was written")
OUTPUT_WOULD_REPLACE = _code("CF-OUT-002", ERROR, "a rendered file would replace a file the previous render did not write", "move the file away, or pass --force to replace it", "the render would replace 1 file(s) that the previous render did not write: handoff/notes.md; nothing was written")
OUTPUT_UNWRITABLE = _code("CF-OUT-003", ERROR, "the output folder cannot be written (read-only, full, a mount point)", "free space, mount the file system writable, or render elsewhere; the folder is as it was", "cannot write the output: Read-only file system (/mnt/out); the folder is as it was")
OUTPUT_PATH_UNSAFE = _code("CF-OUT-004", ERROR, "a rendered path would leave the output folder or is not a plain file name", "a bug or a hostile template: report it with the blueprint", "refusing to write '../escaped.svg': part '..' is not a plain file name (letters, digits, '.', '_', '+', '-'; not starting with '.'; at most 128)")
OUTPUT_BUSY = _code("CF-OUT-005", ERROR, "another render holds the output folder's lock", "wait for the other render to finish, then run again", "another clusterforge render is writing next to this folder")

# --- diff and export (diff, export)
GIT_REVISION_UNREADABLE = _code("CF-DIFF-001", ERROR, "`diff` cannot read a Git revision", "give a revision `git rev-parse` knows and a path relative to the repository", "cannot read Git revision 'no-such-branch' of OLD 'no-such-branch:blueprints/x.yaml': it names no commit or tree of the repository (git rev-parse --verify)")
GRAPHVIZ_MISSING = _code("CF-EXPORT-001", ERROR, "`export --format svg` without Graphviz installed", "install graphviz (apt-get install graphviz) or use --format dot", "Graphviz 'dot' is not installed")
GRAPHVIZ_FAILED = _code("CF-EXPORT-002", ERROR, "Graphviz failed", "export --format dot writes the graph without Graphviz", "Graphviz 'dot' failed with exit status 1: syntax error in line 1")

# --- verify (verify)
VERIFY_MISSING = _code("CF-VERIFY-001", ERROR, "a planned cable was not discovered", "plug the cable in at both ends shown (rack, U, device, port), or replace it if the link stays down", "missing cable compute-00012 (node-leaf, rail 4): A02 U1 gpu004 ib4 to N01 U38 compute-leaf004 ib2/2 (IB port 4)")
VERIFY_UNEXPECTED = _code("CF-VERIFY-002", ERROR, "a discovered link is no planned cable", "remove the cable, or move it to the port the plan gives", "unexpected cable: N01 U41 compute-leaf001 ib1/1 (IB port 1) to N01 U40 compute-leaf002 ib1/1 (IB port 1) (compute-leaf001 ib1/1 should hold compute-00001; compute-leaf002 ib1/1 should hold compute-00002)")
VERIFY_SWAPPED = _code("CF-VERIFY-003", ERROR, "two planned cables are swapped", "exchange the two cables at the device shown", "swapped: cables compute-00001 and compute-00009 are exchanged at N01 U41 compute-leaf001 ib1/1 (IB port 1) and ib1/2; each port holds the other's cable")
VERIFY_WRONG_RAIL = _code("CF-VERIFY-004", ERROR, "a host port is cabled to a leaf of another rail", "move the cable to the leaf of the port's rail (the cable label says where)", "wrong rail: A01 U1 gpu001 ib2 (rail 2, cable compute-00002) is cabled to N01 U41 compute-leaf001 ib2/1 (IB port 3) (a rail 1 leaf)")
VERIFY_NOT_FAT_TREE = _code("CF-VERIFY-005", ERROR, "the discovered InfiniBand fabric is not a fat tree", "fix the missing leaf-spine cables listed with it; OpenSM falls back to min-hop routing until then", "not a fat tree as cabled: compute-leaf003 has no link to compute-spine002; OpenSM's fat-tree routing will refuse it")
VERIFY_UNREADABLE = _code("CF-VERIFY-006", ERROR, "a discovered file cannot be read", "give the file ibnetdiscover or lldpctl -f json wrote", "fabric.txt: no Switch or Ca lines: not ibnetdiscover output")
VERIFY_NO_SUCH_PORT = _code("CF-VERIFY-007", ERROR, "a discovered link is on a port number the planned switch model does not have", "check that the switch is the planned model, and the capture is of this fabric", "no such port: N01 U39 compute-leaf003 IB port 200 (a nvidia/qm9700 has ports 1-128) holds a link to B05 U1 gpu031 ib3")
# --- accept (accept)
ACCEPT_UNREADABLE = _code("CF-ACCEPT-001", ERROR, "a result file cannot be read (not a regular file, too large, not text, no burn-in header)", "give the files the rendered burn-in jobs wrote, whole; a job's first line names its test", "cannot read it: it is larger than 8 MiB")
ACCEPT_MALFORMED = _code("CF-ACCEPT-002", ERROR, "a result file is not the tool output its header names, or stops early", "run the test again: a cut-short or damaged file is never taken as a pass", "the nccl-tests output stops before its '# Avg bus bandwidth' line: cut short")
ACCEPT_NOT_PLANNED = _code("CF-ACCEPT-003", ERROR, "a result names a node group, nodes, rail or fabric the plan does not have", "give the results of this blueprint's burn-in jobs, or render again after changing the blueprint", "nodes gpu099 are not 2 nodes of group gpu")
ACCEPT_COLLECTIVE_LOW = _code("CF-ACCEPT-004", ERROR, "a collective below its floor", "look at the pair and node results with it (they name the node or cable); mend and run the job again", "leaf all_reduce on gpu[001-031]: 301.2 GB/s busbw, floor 320.0 (expected 400.0, bound by the NICs of an NVLink domain)")
ACCEPT_RAIL_LOW = _code("CF-ACCEPT-005", ERROR, "one rail of a node below floor in the pair tests", "reseat or replace the cable named (then the transceivers, then the NIC), and run the node's job again", "rail 3 of gpu004 below floor: 21.9 GB/s with gpu003, 22.0 GB/s with gpu005; floor 40.0 (one port, 50.0 GB/s): cable compute-00123 (A01 U25 gpu004 ib3 to N01 U38 compute-leaf003 ib1/4), or its NIC or transceiver")
ACCEPT_LEAF_UPLINKS = _code("CF-ACCEPT-006", ERROR, "pairs across the spine through one leaf below floor", "check the leaf's uplink cables (ibdiagnet, iblinkinfo) and the routing; mend and run the spine job again", "every one of the 4 rail-1 pairs across the spine through compute-leaf005 is below floor (lowest 18.2 GB/s, floor 40.0) while pairs under it pass: its uplinks (compute-00301, compute-00302, compute-00303, compute-00304 and 12 more)")
ACCEPT_GPU_DIAGNOSTIC = _code("CF-ACCEPT-007", ERROR, "a DCGM diagnostic failed", "drain the node and have the GPU or its board replaced under warranty; run the node's job again", "DCGM Hardware test 'Memory' failed on gpu007 GPU 5: A memory mismatch was detected on GPU 5")
ACCEPT_NVLINK_COPY_LOW = _code("CF-ACCEPT-008", ERROR, "GPU-to-GPU copies in a node below floor (nvbandwidth)", "reseat the GPU baseboard or have it replaced; run the node's job again", "7 GPU pairs of gpu009 copy below floor 360.0 GB/s (GPU 2-0 120.3, ...): GPU 2's NVLink")
ACCEPT_FABRIC_STATE = _code("CF-ACCEPT-009", ERROR, "a GPU is not on the NVLink fabric (nvidia-smi -q Fabric section)", "check the fabric manager, the NVLink switch trays and IMEX on the domain; run the domain's jobs again", "GPU 2 of gb020 is not on the NVLink fabric: Health Unhealthy (fabric manager, NVLink switch trays, IMEX)")
ACCEPT_PORT_ERROR = _code("CF-ACCEPT-010", ERROR, "ibdiagnet reports an error on a port (BER, error counters, cable)", "clean or replace the cable named, then its transceivers; run ibdiagnet again", "ibdiagnet: compute-leaf002/P7 - Symbol BER 2.1e-11 is higher than the threshold 1e-12: cable compute-00062 (A02 U17 gpu007 ib2 to N01 U40 compute-leaf002 ib2/1)")
ACCEPT_TEST_FAILED = _code("CF-ACCEPT-011", ERROR, "a test exited with an error or found wrong values", "read the job's output for the node named; mend and run the job again", "dcgm on gpu012 exited with status 226")
ACCEPT_RAIL_LEAF = _code("CF-ACCEPT-013", ERROR, "every pair on one rail under one leaf below floor", "check that leaf switch (port speed and width, firmware, its configuration) before any of the node cables", "every one of the 31 rail-4 pairs under compute-leaf004 is below floor (lowest 12.0 GB/s, floor 40.0): the leaf switch, not the 31 node cables")
ACCEPT_UNTESTED = _code("CF-ACCEPT-012", WARNING, "planned nodes without a result of every test their jobs run", "run their burn-in jobs and give accept the results, or --partial to judge a re-test alone", "2 planned nodes lack results: gpu[030-031] (gpu030: dcgm, rail 1 with gpu029, rail 1 with gpu031, rail 2 with gpu029, 13 more)")
# fmt: on
