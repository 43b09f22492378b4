"""Pydantic models of the blueprint, one module per domain.

The model modules (and catalog/models.py) leave out `from __future__ import annotations`: pydantic then takes
each field's annotation as the object Python made, rather than evaluating some 300 strings at every start-up.
A method that returns its own class says `Self`.
"""

from .blueprint import Blueprint, CatalogFile, PowerPlanning, Suppression
from .fabric import ComputeFabric, Fabric, InbandFabric, OobFabric, StorageFabric
from .nodes import NodeGroup, Placement
from .resilience import Resilience, Tolerance
from .site import Floor, Row, Site
from .slurm import Partition, Slurm
from .workload import InferenceService, ModelShape, ModelShapeFields, Prices, TrainingJob, Workload

__all__ = [
    "Blueprint",
    "CatalogFile",
    "ComputeFabric",
    "Fabric",
    "Floor",
    "InbandFabric",
    "InferenceService",
    "ModelShape",
    "ModelShapeFields",
    "NodeGroup",
    "OobFabric",
    "Partition",
    "Placement",
    "PowerPlanning",
    "Prices",
    "Resilience",
    "Row",
    "Site",
    "Slurm",
    "StorageFabric",
    "Suppression",
    "Tolerance",
    "TrainingJob",
    "Workload",
]
