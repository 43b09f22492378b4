"""render/ansible/made.py: what the Ansible family made its files from goes to another process without its texts
and comes back the same; files that are not the texts it made carry nothing (the consistency check then reads
the files)."""

from __future__ import annotations

import pickle

from helpers import REPO

from clusterforge.output.pieces import whole
from clusterforge.pipeline import analyse, load_valid
from clusterforge.render import FAMILIES, RenderContext, render_in_order
from clusterforge.render.ansible.ansible import INVENTORY, render_ansible
from clusterforge.render.ansible.made import Made, MadeInventory, adopted, carried
from clusterforge.render.consistency import consistency_findings


def _rendered() -> tuple[Made, dict[str, str]]:
    analysis = analyse(load_valid(REPO / "blueprints/h200-training-pod.yaml"))
    files, made = render_ansible(RenderContext.before_checks(analysis.valid, analysis.topo))
    assert made is not None and made.inventory is not None and made.host_data is not None
    return made, dict(files)  # type: ignore[arg-type]  # the family's texts are whole


def test_what_was_made_crosses_over_and_comes_back_the_same() -> None:
    made, files = _rendered()
    assert adopted(pickle.loads(pickle.dumps(carried(made, files))), files) == made


def test_what_is_carried_holds_no_text() -> None:
    made, files = _rendered()
    assert len(pickle.dumps(carried(made, files))) < len(pickle.dumps(made)) / 2


def test_files_changed_after_they_were_made_carry_nothing() -> None:
    made, files = _rendered()
    changed = dict(files)
    changed[INVENTORY] = " " + files[INVENTORY]
    host_data_path = next(path for path in files if path.startswith("ansible/host_data/"))
    changed[host_data_path] = files[host_data_path].replace("{", "{ ", 1)
    assert carried(made, changed) == (None, None)
    assert made.inventory_groups(INVENTORY, changed[INVENTORY]) is None
    assert made.host_facts(changed, list(made.host_data.texts if made.host_data else [])) is None


def test_the_check_reads_the_made_facts_where_the_files_are_their_texts() -> None:
    """With the made facts the check does not parse the files: facts that disagree with the topology are found
    when the files are their texts."""
    analysis = analyse(load_valid(REPO / "blueprints/h200-training-pod.yaml"))
    files: dict[str, str] = {}
    ctx = RenderContext(analysis.valid, analysis.topo, analysis.findings)
    made = render_in_order(ctx, FAMILIES, lambda path, text: files.__setitem__(path, whole(text)), files)
    assert made.inventory is not None
    groups = dict(made.inventory.groups, nodes={"hosts": {"stranger": {}}})
    wrong = Made(MadeInventory(INVENTORY, made.inventory.text, groups), made.host_data)
    assert not consistency_findings(analysis.valid, analysis.topo, files, made)
    found = consistency_findings(analysis.valid, analysis.topo, files, wrong)
    assert any("stranger" in f.message for f in found)
    assert not consistency_findings(analysis.valid, analysis.topo, files), "the files, read, say what was made"
