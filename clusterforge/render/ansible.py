"""ansible output family: inventory, group vars, the site playbook and its roles, under `ansible/`.

The roles only copy: every host's list of files (source in the output folder, destination under
`cf_root`) is computed here, from the same path functions (paths.py) the Slurm and NCCL families use.
"""

from __future__ import annotations

from ..validate import ValidBlueprint
from .ansible_model import all_vars, build_inventory
from .context import RenderContext
from .nccl import nccl_groups
from .slurm import slurm_paths

# Files of the family that are the same for every blueprint: template -> output path.
STATIC = {
    "ansible/site.yml.j2": "ansible/site.yml",
    "ansible/roles/cf_slurm/tasks/main.yml.j2": "ansible/roles/cf_slurm/tasks/main.yml",
    "ansible/roles/cf_nccl/tasks/main.yml.j2": "ansible/roles/cf_nccl/tasks/main.yml",
}


def installable_paths(valid: ValidBlueprint) -> set[str]:
    """What the Slurm and NCCL families render for this blueprint, from their own plans, so no role copies
    a file that does not exist (the consistency check proves it on the combined output)."""
    rendered = set(slurm_paths(valid))
    for entry in nccl_groups(valid):
        rendered.update(p for p in (entry.conf, entry.topology) if p is not None)
    return rendered


def render_ansible(ctx: RenderContext) -> dict[str, str]:
    model = {"cluster": ctx.valid.blueprint.name}
    files = {
        "ansible/inventory.yml": ctx.render("ansible/inventory.yml.j2", {
            **model, "inventory": build_inventory(ctx.valid, ctx.topo, installable_paths(ctx.valid))}),
        "ansible/group_vars/all.yml": ctx.render("ansible/group_vars/all.yml.j2", {
            **model, "vars": all_vars(ctx.valid)}),
    }
    for template, path in STATIC.items():
        files[path] = ctx.render(template, model)
    return dict(sorted(files.items()))
