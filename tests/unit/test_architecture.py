"""Imports point one way down the stages (docs/architecture.md): a module imports only modules of its own
layer or a lower one, and the machinery (output/, runtime/) knows nothing of the domain beyond the
foundation's interface. Read from the source with `ast`, so imports inside functions count too."""

from __future__ import annotations

import ast

from helpers import REPO

PACKAGE = REPO / "clusterforge"

# Lowest first. A module belongs to the first entry whose name is it or its package.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("version", "errors", "codes", "codes_doc", "inputs", "yamlsafe", "schema_errors")),
    ("machinery", ("output", "runtime")),
    ("model and catalog", ("model", "catalog", "physical", "schema_doc", "catalog_view")),
    ("load and validate", ("loader", "bounds", "references", "validate", "lockfile", "fragments")),
    ("expand", ("expand", "graph", "gateways", "ifnames")),
    ("workload", ("workload",)),
    ("check", ("checks", "failures")),
    ("plan", ("plan",)),
    ("render", ("render", "export")),
    ("pipeline", ("pipeline",)),
    ("schedule", ("schedule",)),
    ("commands", ("diff", "verify", "accept", "lab", "bind", "migrate")),
    ("cli", ("cli", "__main__", "__init__")),
]


MACHINERY = ("output", "runtime")
"""Packages that would serve any program writing a tree of files in stages: no blueprint, topology or family."""
INTERFACE = ("errors", "codes", "inputs", "version")
"""What the machinery may import of the rest: the errors it raises (with their codes), the input policy it reads
files back with, the version it writes into the manifest."""


def layer_of(module: str) -> int:
    """`module` is dotted below the package: 'expand.fabric', 'cli'."""
    first = module.split(".")[0]
    for rank, (_, names) in enumerate(LAYERS):
        if first in names:
            return rank
    raise AssertionError(f"clusterforge.{module} is in no layer: add it to LAYERS (and docs/architecture.md)")


def module_name(path: str) -> str:
    rel = path.removesuffix(".py").replace("/", ".")
    return rel.removesuffix(".__init__") if rel != "__init__" else "__init__"


def imports_of(path: str) -> set[str]:
    """Package-relative names of the clusterforge modules a file imports."""
    here = module_name(path).split(".")
    is_package = path.endswith("__init__.py")
    found: set[str] = set()
    for node in ast.walk(ast.parse((PACKAGE / path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here if is_package else here[:-1]
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            if base == ["__init__"]:
                base = []
            target = [*base, *(node.module.split(".") if node.module else [])]
            if target:
                found.add(".".join(target))
            else:  # `from . import codes`
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found.update(n.removeprefix("clusterforge.") for n in names if n.startswith("clusterforge."))
    return found


def test_imports_point_down() -> None:
    upward = []
    for file in sorted(PACKAGE.rglob("*.py")):
        path = file.relative_to(PACKAGE).as_posix()
        source = module_name(path)
        for target in sorted(imports_of(path)):
            if layer_of(target) > layer_of(source):
                upward.append(
                    f"{source} ({LAYERS[layer_of(source)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
                )
    assert upward == [], "\n".join(upward)


def test_the_import_reader_sees_relative_and_nested_imports() -> None:
    assert imports_of("checks/figures.py") == {"catalog", "catalog.models", "expand.topology", "model", "physical"}
    assert {"codes", "physical", "checks.context", "checks.figures"} <= imports_of("checks/power.py")
    assert "errors" in imports_of("references.py")  # also imported inside a function there
    assert {"checks", "render", "output.writer", "plan"} <= imports_of("pipeline.py")
    assert layer_of("render.nccl") > layer_of("plan") > layer_of("checks.power") > layer_of("expand.fabric")
    # what the rule forbids: the physical rules reaching up into expansion, a check into rendering
    assert layer_of("expand.placement") > layer_of("physical") and layer_of("render") > layer_of("checks")


def machinery_strays(imports: dict[str, set[str]]) -> list[str]:
    """`module imports target` for each machinery module's import of the domain (`imports`: module -> targets)."""
    allowed = (*MACHINERY, *INTERFACE)
    return [
        f"{module} imports {target}"
        for module, targets in sorted(imports.items())
        if module.split(".")[0] in MACHINERY
        for target in sorted(targets)
        if target.split(".")[0] not in allowed
    ]


def test_the_machinery_imports_no_domain() -> None:
    imports = {}
    for package in MACHINERY:
        for file in sorted((PACKAGE / package).rglob("*.py")):
            path = file.relative_to(PACKAGE).as_posix()
            imports[module_name(path)] = imports_of(path)
    assert {"output.writer", "output.write_behind", "runtime.forked"} <= imports.keys()
    assert machinery_strays(imports) == []
    # what the rule forbids: the writer reaching into the render stage or the topology
    assert machinery_strays({"output.writer": {"errors", "render.pieces", "expand.topology"}}) == [
        "output.writer imports expand.topology",
        "output.writer imports render.pieces",
    ]
