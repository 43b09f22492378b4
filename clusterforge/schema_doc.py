"""The blueprint's JSON Schema, and a Markdown reference generated from it (one schema, many uses)."""

from __future__ import annotations

import json
from typing import Any

from .codes_doc import table_cell
from .model import Blueprint

SCHEMA_ID = "https://clusterforge.dev/schema/blueprint-v1.json"


def blueprint_schema() -> dict[str, Any]:
    schema = Blueprint.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "clusterforge blueprint, format version 1"
    return schema


def _type_text(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return " | ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    for union in ("anyOf", "oneOf"):
        if union in prop:
            return " or ".join(_type_text(p) for p in prop[union] if p.get("type") != "null")
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type_text(prop.get('items', {}))}"
    if kind == "object" and "additionalProperties" in prop:
        return f"mapping of name to {_type_text(prop['additionalProperties'])}"
    limits = [
        f"{word} {prop[key]}"
        for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("pattern", "matching"))
        if key in prop
    ]
    return kind + (f" ({', '.join(limits)})" if limits else "")


def _model_section(name: str, model: dict[str, Any]) -> list[str]:
    lines = [f"## {name}", ""]
    if model.get("description"):
        lines += [model["description"], ""]
    lines += ["| field | type | default | description |", "|---|---|---|---|"]
    required = set(model.get("required", []))
    for field, prop in model.get("properties", {}).items():
        if field in required:
            default = "required"
        else:
            default = f"`{json.dumps(prop['default'])}`" if "default" in prop else "optional"
        cells = (_type_text(prop), default, prop.get("description", ""))
        lines.append(f"| `{field}` | " + " | ".join(map(table_cell, cells)) + " |")
    return [*lines, ""]


def reference_markdown() -> str:
    schema = blueprint_schema()
    lines = [
        "# Blueprint reference (format version 1)",
        "",
        "Generated from the pydantic models by `clusterforge schema --format markdown`; "
        "do not edit by hand. The guide is [blueprint.md](blueprint.md).",
        "",
    ]
    lines += _model_section("Blueprint", schema)
    for name, model in sorted(schema["$defs"].items()):
        lines += _model_section(name, model)
    return "\n".join(lines).rstrip() + "\n"
