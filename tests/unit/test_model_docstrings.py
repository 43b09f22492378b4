"""Field descriptions of the JSON Schema come from the docstrings under the fields, read from the source only
when a schema is made (model/docstrings.py), as pydantic's use_attribute_docstrings would give them."""

from __future__ import annotations

from clusterforge.catalog.models import GPU, Sourced
from clusterforge.model import Blueprint, Site
from clusterforge.model.docstrings import field_docstring


def test_a_field_has_the_docstring_written_under_it() -> None:
    assert field_docstring(GPU, "memory_gb") == "On-package memory (HBM or GDDR) in GB."
    assert field_docstring(GPU, "memory_type") is None  # no docstring under it


def test_an_inherited_field_has_the_docstring_of_the_class_that_declares_it() -> None:
    assert (
        field_docstring(GPU, "vendor")
        == field_docstring(Sourced, "vendor")
        == ("Manufacturer name as printed on the part.")
    )


def test_the_schema_describes_fields_and_models_are_built_without_reading_source() -> None:
    schema = Blueprint.model_json_schema()
    site = schema["$defs"]["Site"]
    documented = [name for name in Site.model_fields if field_docstring(Site, name)]
    assert documented == ["name", "location", "pue", "hall_cooling_kw"]
    for name in documented:
        assert site["properties"][name]["description"] == field_docstring(Site, name)
    assert "use_attribute_docstrings" not in Blueprint.model_config
