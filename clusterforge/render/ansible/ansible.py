"""ansible output family: inventory, group vars, per-rack host data, the site playbook and its roles, under
`ansible/`.

The roles only copy: every host's list of files (source in the output folder, destination under
`cf_root`) is computed here, from the same path functions (paths.py) the Slurm and NCCL families use.
"""

from __future__ import annotations

from ...expand.topology import Topology
from ...validate import ValidBlueprint
from .. import paths
from ..context import RenderContext
from ..nccl.nccl import nccl_groups, pinned_ports
from ..rendered import Rendered
from ..slurm.slurm import slurm_paths
from ..software.software import hosts_text
from .ansible_model import (
    all_vars,
    build_inventory,
    cluster_vars,
    nccl_role_vars,
    slurm_role_vars,
    software_role_vars,
)
from .host_data import host_data_files
from .inventory_json import factored, factored_json
from .made import Made, MadeHostData, MadeInventory
from .yaml_text import text_mapping_yaml

INVENTORY = "ansible/inventory.json"
HOSTS_VARS = "ansible/roles/cf_hosts/vars/main.yml"


# Files of the family that are the same for every blueprint: template -> output path.
STATIC = {
    "ansible/site.yml.j2": "ansible/site.yml",
    "ansible/roles/cf_slurm/tasks/main.yml.j2": "ansible/roles/cf_slurm/tasks/main.yml",
    "ansible/roles/cf_nccl/tasks/main.yml.j2": "ansible/roles/cf_nccl/tasks/main.yml",
    "ansible/roles/cf_network/tasks/main.yml.j2": "ansible/roles/cf_network/tasks/main.yml",
    "ansible/roles/cf_imex/tasks/main.yml.j2": "ansible/roles/cf_imex/tasks/main.yml",
    "ansible/roles/cf_software/tasks/main.yml.j2": "ansible/roles/cf_software/tasks/main.yml",
    "ansible/roles/cf_hosts/tasks/main.yml.j2": "ansible/roles/cf_hosts/tasks/main.yml",
    "ansible/roles/cf_slurm/handlers/main.yml.j2": "ansible/roles/cf_slurm/handlers/main.yml",
    "ansible/roles/cf_slurm/defaults/main.yml.j2": "ansible/roles/cf_slurm/defaults/main.yml",
    "ansible/roles/cf_network/handlers/main.yml.j2": "ansible/roles/cf_network/handlers/main.yml",
    "ansible/roles/cf_network/files/netplan_check.py.j2": "ansible/roles/cf_network/files/netplan_check.py",
    "ansible/roles/cf_imex/handlers/main.yml.j2": "ansible/roles/cf_imex/handlers/main.yml",
}


def installable_paths(valid: ValidBlueprint, topo: Topology) -> set[str]:
    """What hosts need of the Slurm and NCCL families' files, from those families' own plans, so no role
    copies a file that does not exist (the consistency check proves it on the combined output). An NCCL
    topology file with placeholder addresses is not installed: nothing on the host would read it."""
    rendered = set(slurm_paths(valid))
    for entry in nccl_groups(valid, topo):
        rendered.add(entry.conf)
        if entry.installs_topology and entry.topology is not None:
            rendered.add(entry.topology)
        if pinned_ports(entry.server):
            rendered.add(paths.udev_rails(entry.group.model))
    return rendered


def render_ansible(ctx: RenderContext) -> Rendered:
    """The family's files, with what the inventory and the host data were made from (render/ansible/made.py)."""
    model = {"cluster": ctx.valid.blueprint.name}
    inventory = build_inventory(ctx.valid, ctx.topo)
    rendered = installable_paths(ctx.valid, ctx.topo)
    data = {
        "ansible/group_vars/all.yml": all_vars(ctx.valid),
        "ansible/cluster.yml": cluster_vars(ctx.valid),
        "ansible/roles/cf_slurm/vars/main.yml": slurm_role_vars(rendered),
        "ansible/roles/cf_nccl/vars/main.yml": nccl_role_vars(ctx.valid, rendered),
        "ansible/roles/cf_software/vars/main.yml": software_role_vars(ctx.valid),
    }
    groups = factored(inventory)
    text = factored_json(groups)
    files = {INVENTORY: ctx.render("ansible/inventory.json.j2", {**model, "inventory": text})}
    for path, values in data.items():
        files[path] = ctx.render(f"{path}.j2", {**model, "vars": values})
    hosts_block = hosts_text(ctx).rstrip()
    files[HOSTS_VARS] = ctx.render(
        f"{HOSTS_VARS}.j2",
        # the block written as YAML here: PyYAML's emitter takes seconds over a large cluster's hosts; `vars`
        # stays for a site's override template that writes `vars | to_yaml`, as the role-vars templates do
        {
            **model,
            "vars": {"cf_hosts_block": hosts_block},
            "vars_yaml": text_mapping_yaml("cf_hosts_block", hosts_block),
        },
    )
    for template, path in STATIC.items():
        files[path] = ctx.render(template, model)
    host_data, facts = host_data_files(ctx.topo)
    files.update(host_data)
    made = Made(MadeInventory(INVENTORY, text, groups["all"]["children"]), MadeHostData(host_data, facts))
    return Rendered(dict(sorted(files.items())), made)
