"""clusterforge: GPU cluster blueprints as code.

The stages as a library: `load_blueprint` -> `validate` -> `expand` -> `check` -> `render` -> `write_tree`.
"""

__version__ = "0.1.0"

from .checks import run_checks as check
from .errors import BlueprintError, CatalogError, ClusterforgeError, Finding, Severity
from .expand import Topology, expand
from .loader import load_blueprint
from .render import render
from .validate import ValidBlueprint, validate
from .writer import write_tree

__all__ = [
    "BlueprintError", "CatalogError", "ClusterforgeError", "Finding", "Severity", "Topology", "ValidBlueprint",
    "__version__", "check", "expand", "load_blueprint", "render", "validate", "write_tree",
]
