"""ansible output family: inventory, group vars, the site playbook and its roles, under `ansible/`.

The roles only copy: every host's list of files (source in the output folder, destination under
`cf_root`) is computed here, from the same path functions (paths.py) the Slurm and NCCL families use.
"""

from __future__ import annotations

from .ansible_model import all_vars, build_inventory
from .context import RenderContext
from .nccl import render_nccl
from .slurm import render_slurm

# Files of the family that are the same for every blueprint: template -> output path.
STATIC = {
    "ansible/site.yml.j2": "ansible/site.yml",
    "ansible/roles/cf_slurm/tasks/main.yml.j2": "ansible/roles/cf_slurm/tasks/main.yml",
    "ansible/roles/cf_nccl/tasks/main.yml.j2": "ansible/roles/cf_nccl/tasks/main.yml",
}


def installable_paths(ctx: RenderContext) -> set[str]:
    """What the Slurm and NCCL families render for this blueprint, so no role copies a file that does
    not exist. A failure here is left for that family's own turn in `render()` to report."""
    rendered: set[str] = set()
    for renderer in (render_slurm, render_nccl):
        try:
            rendered.update(renderer(ctx))
        except Exception:  # reported, under the right family name, when that family runs
            continue
    return rendered


def render_ansible(ctx: RenderContext) -> dict[str, str]:
    model = {"cluster": ctx.valid.blueprint.name}
    files = {
        "ansible/inventory.yml": ctx.render("ansible/inventory.yml.j2", {
            **model, "inventory": build_inventory(ctx.valid, ctx.topo, installable_paths(ctx))}),
        "ansible/group_vars/all.yml": ctx.render("ansible/group_vars/all.yml.j2", {
            **model, "vars": all_vars(ctx.valid)}),
    }
    for template, path in STATIC.items():
        files[path] = ctx.render(template, model)
    return dict(sorted(files.items()))
