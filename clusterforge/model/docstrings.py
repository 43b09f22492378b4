"""Field docstrings (a string right under an annotated field) read from a model's source when asked for.

They become the field descriptions of the JSON Schema (`Strict.__get_pydantic_json_schema__`), as pydantic's
`use_attribute_docstrings` would make them; that option reads and parses each model's source while the class
is built, which made a fifth of every command's start-up, though only the `schema` command shows them.
"""

from __future__ import annotations

import ast
import inspect
import sys
from functools import cache


@cache
def _module_docstrings(module: str) -> dict[str, dict[str, str]]:
    """{class name: {field: docstring}} of the top-level classes of a module's source."""
    path = getattr(sys.modules[module], "__file__", None)
    if path is None:
        return {}
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    return {node.name: _class_docstrings(node) for node in tree.body if isinstance(node, ast.ClassDef)}


def _class_docstrings(node: ast.ClassDef) -> dict[str, str]:
    docs: dict[str, str] = {}
    for field, after in zip(node.body, node.body[1:], strict=False):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[field.target.id] = inspect.cleandoc(after.value.value)
    return docs


def field_docstring(cls: type, field: str) -> str | None:
    """The docstring under `field` in the class of `cls`'s bases that declares it last (pydantic takes an
    inherited field as its base declared it, and a redeclared one as the subclass declares it)."""
    for klass in cls.__mro__:
        if field in inspect.get_annotations(klass):
            if klass.__qualname__ != klass.__name__:  # not a top-level class: not read
                return None
            return _module_docstrings(klass.__module__).get(klass.__name__, {}).get(field)
    return None
