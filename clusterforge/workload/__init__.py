"""Workload fit: will the cluster hold and run its training jobs and inference services, how fast, at what cost.

`fit_workloads` gives one figure set per workload of a valid blueprint (memory per GPU, step time, collectives,
time to first token, decode bound, energy and cost); `checks/workloads.py` turns them into findings. The formulas
and their sources are in docs/workloads.md.
"""

from .fit import InferenceFit, TrainingFit, WorkloadFit, fit_workloads, fits_as_dict
from .report import fit_json, fit_text, fits_text

__all__ = [
    "InferenceFit",
    "TrainingFit",
    "WorkloadFit",
    "fit_json",
    "fit_text",
    "fit_workloads",
    "fits_as_dict",
    "fits_text",
]
