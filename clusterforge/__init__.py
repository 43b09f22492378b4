"""clusterforge: GPU cluster blueprints as code.

The stages as a library: `load_blueprint` -> `validate` -> `expand` -> `check` -> `render` -> `write_tree`.
"""

__version__ = "0.1.0"

from .checks import run_checks as check  # noqa: E402
from .errors import BlueprintError, CatalogError, ClusterforgeError, Finding, Severity  # noqa: E402
from .expand import Topology, expand  # noqa: E402
from .loader import load_blueprint  # noqa: E402
from .render import render  # noqa: E402
from .validate import ValidBlueprint, validate  # noqa: E402
from .writer import write_tree  # noqa: E402

__all__ = [
    "BlueprintError", "CatalogError", "ClusterforgeError", "Finding", "Severity", "Topology", "ValidBlueprint",
    "__version__", "check", "expand", "load_blueprint", "render", "validate", "write_tree",
]
