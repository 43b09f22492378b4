"""What breaks when one thing fails: the N-1 analysis of fabrics, power and cooling (docs/failures.md).

`analyse_failures` gives, for every element class (a switch per tier, a cable bundle, a subnet manager, a node,
a PSU, a PDU or feed, a CDU, a rack, a row, an NVL72 power shelf and switch tray), the worst single failure and
what it takes away, judged against the blueprint's `resilience:` tolerance.
"""

from .analysis import ClassResult, FailureReport, analyse_failures
from .effects import Effect, FabricEffect, Failure
from .elements import KIND_TITLES, KINDS

__all__ = [
    "KINDS",
    "KIND_TITLES",
    "ClassResult",
    "Effect",
    "FabricEffect",
    "Failure",
    "FailureReport",
    "analyse_failures",
]
