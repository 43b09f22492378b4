"""clusterforge: GPU cluster blueprints as code.

The stages as a library: `load_blueprint` -> `validate` -> `expand` -> `check` -> `build_plan` -> `render`
-> `write_tree`; `analyse` (expand and check once) and `render_analysis` put them together as the CLI does.
"""

import gc as _gc

# Importing makes some 80,000 objects that live on and no garbage: left on, the collector walked them a hundred
# times, and once more at the first allocation after the import. So it is off meanwhile, and what the import made
# is frozen (`gc.freeze`: never walked again), as a stage's objects are (runtime/gc_paused.py).
_collecting = _gc.isenabled()
_gc.disable()
try:
    from .checks import run_checks as check
    from .errors import BlueprintError, CatalogError, ClusterforgeError, Finding, Severity
    from .expand import Topology, expand
    from .loader import load_blueprint
    from .output.writer import write_tree
    from .pipeline import Analysis, analyse, load_valid, render_analysis
    from .plan import Plan, build_plan
    from .render import render
    from .validate import ValidBlueprint, validate
    from .version import __version__
finally:
    _gc.freeze()
    if _collecting:
        _gc.enable()

__all__ = [
    "Analysis",
    "BlueprintError",
    "CatalogError",
    "ClusterforgeError",
    "Finding",
    "Plan",
    "Severity",
    "Topology",
    "ValidBlueprint",
    "__version__",
    "analyse",
    "build_plan",
    "check",
    "expand",
    "load_blueprint",
    "load_valid",
    "render",
    "render_analysis",
    "validate",
    "write_tree",
]
