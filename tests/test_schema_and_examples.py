"""The published JSON Schema accepts every example blueprint; the docs generated from it are fresh."""

from __future__ import annotations

import json

import jsonschema
import pytest
from helpers import BLUEPRINTS, REPO, run_cli

from clusterforge.loader import load_blueprint
from clusterforge.schema_doc import blueprint_schema, reference_markdown

EXAMPLES = [p.name for p in BLUEPRINTS]


def test_there_are_three_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_validates_with_the_cli(name: str) -> None:
    result = run_cli("validate", f"blueprints/{name}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"blueprints/{name}: valid (")


@pytest.mark.parametrize("name", EXAMPLES)
def test_schema_accepts_example(name: str) -> None:
    loaded = load_blueprint(REPO / "blueprints" / name)
    jsonschema.Draft202012Validator(blueprint_schema()).validate(loaded.data)


def test_schema_rejects_unknown_keys() -> None:
    loaded = load_blueprint(REPO / "blueprints" / EXAMPLES[0])
    bad = {**loaded.data, "node_group": []}
    with pytest.raises(jsonschema.ValidationError, match="node_group"):
        jsonschema.Draft202012Validator(blueprint_schema()).validate(bad)


def test_every_schema_field_is_described() -> None:
    schema = blueprint_schema()
    models = {"Blueprint": schema, **schema["$defs"]}
    missing = [
        f"{name}.{field}"
        for name, model in models.items()
        for field, prop in model.get("properties", {}).items()
        if not prop.get("description")
    ]
    assert missing == []


def test_schema_cli_prints_valid_json_schema() -> None:
    result = run_cli("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)


def test_committed_schema_and_reference_are_fresh() -> None:
    """docs/ holds the output of `python tests/regen.py schema`; regenerate after changing a model."""
    committed = json.loads((REPO / "docs" / "blueprint.schema.json").read_text(encoding="utf-8"))
    assert committed == blueprint_schema()
    assert (REPO / "docs" / "reference.md").read_text(encoding="utf-8") == reference_markdown()


def test_readme_shows_current_command_output() -> None:
    """Blocks under `$ command` in README.md or docs/ (wherever a section moved) hold that command's real output
    (`python tests/regen.py readme`)."""
    from regen import readme_blocks, replace_block, showing

    for command, output in readme_blocks().items():
        paths = showing(command)
        assert paths, f"no README.md or docs/*.md shows '$ {command}'"
        for path in paths:
            text = path.read_text(encoding="utf-8")
            assert replace_block(text, command, output) == text, f"{path.name}: output of '{command}' is stale"
