"""Slurm settings: cluster, controllers, partitions and the topology plugin."""

import re
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from .base import Count, HostName, Identifier, Strict

_SLURM_TIME = re.compile(r"^(INFINITE|UNLIMITED|\d+|\d+:\d{2}(:\d{2})?|\d+-\d{1,2}(:\d{2}(:\d{2})?)?)$")
_PARTITION = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


class Partition(Strict):
    name: str
    """Partition name (lowercase letters, digits, '-', '_')."""
    node_groups: list[Identifier] = Field(min_length=1)
    """Node groups whose nodes form the partition."""
    default: bool = False
    """The partition jobs go to when they name none."""
    max_time: str = "INFINITE"
    """Slurm time limit: INFINITE, minutes, HH:MM:SS or D-HH:MM:SS."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _PARTITION.fullmatch(value):
            raise ValueError("must start with a lowercase letter and hold lowercase letters, digits, '-', '_'")
        return value

    @field_validator("max_time")
    @classmethod
    def _check_time(cls, value: str) -> str:
        if not _SLURM_TIME.fullmatch(value):
            raise ValueError("must be INFINITE, minutes, HH:MM:SS or D-HH:MM:SS")
        return value


SlurmVersion = Literal["22.05", "23.02", "23.11", "24.05", "24.11", "25.05"]
BLOCK_SINCE = "24.05"
"""topology/block came with 23.11, its BlockSizes line with 24.05; clusterforge always writes BlockSizes."""
IMEX_SINCE = "24.05"
"""switch/nvidia_imex (an IMEX channel per job on multi-node NVLink systems) came with Slurm 24.05."""


def at_least(version: str, release: str) -> bool:
    """'24.11' is at least '24.05'."""
    return tuple(map(int, version.split("."))) >= tuple(map(int, release.split(".")))


class Slurm(Strict):
    version: SlurmVersion = "24.11"
    """Slurm release the files are written for: settings a release does not know are left out (22.05 has no
    topology/block and no switch/nvidia_imex, and its slurmctld refuses them)."""
    cluster_name: Identifier
    """Slurm ClusterName."""
    controllers: list[HostName] = Field(min_length=1, max_length=4)
    """Host names of slurmctld hosts, primary first; each must be a node of the blueprint."""
    topology: Literal["tree", "block", "none"] = "tree"
    """topology/tree from the compute fabric, topology/block from NVLink domains (Slurm 23.11+)."""
    block_size: Count | None = None
    """Nodes per block for topology 'block'; default: the nodes of one NVLink domain."""
    partitions: list[Partition] = Field(min_length=1)
    """Partitions, in the order slurm.conf lists them."""

    @model_validator(mode="after")
    def _block_needs_release(self) -> Self:
        if self.topology == "block" and not at_least(self.version, BLOCK_SINCE):
            raise ValueError(
                f"topology 'block' needs Slurm {BLOCK_SINCE} or later (BlockSizes), not {self.version}: "
                "set version to the release the cluster runs, or use topology 'tree'"
            )
        return self

    @model_validator(mode="after")
    def _one_default(self) -> Self:
        defaults = [p.name for p in self.partitions if p.default]
        if len(defaults) > 1:
            raise ValueError(f"only one partition may be the default, not {', '.join(defaults)}")
        return self
