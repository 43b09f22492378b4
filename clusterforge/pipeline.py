"""The stages in order, with an error gate after each: load -> validate -> expand -> check -> render."""

from __future__ import annotations

from pathlib import Path

from .loader import load_blueprint
from .validate import ValidBlueprint, validate


def load_valid(path: Path) -> ValidBlueprint:
    # load: YAML with includes -> raw data + source map (raises BlueprintError)
    loaded = load_blueprint(path)
    # validate: schema, catalog, references (raises BlueprintError with every error found)
    return validate(loaded)
