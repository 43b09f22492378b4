"""clusterforge: GPU cluster blueprints as code."""

__version__ = "0.1.0"

from .errors import BlueprintError, CatalogError, ClusterforgeError, Finding, Severity
from .loader import load_blueprint
from .validate import ValidBlueprint, validate

__all__ = [
    "BlueprintError", "CatalogError", "ClusterforgeError", "Finding", "Severity", "ValidBlueprint",
    "__version__", "load_blueprint", "validate",
]
