"""Node software the playbook installs and pins: NVIDIA driver, CUDA, DOCA-OFED, DCGM (and, from the driver's
version, Fabric Manager on HGX nodes or IMEX on multi-node NVLink systems)."""

from typing import Annotated

from pydantic import Field

from .base import Strict

DottedVersion = Annotated[str, Field(pattern=r"^\d+(\.\d+){1,3}$", max_length=32)]


class Software(Strict):
    nvidia_driver: Annotated[str, Field(pattern=r"^\d{3}\.\d+(\.\d+)?$", max_length=32)] | None = None
    """NVIDIA data-centre driver version, e.g. 570.172.08; its branch (570) names the packages, and Fabric
    Manager or IMEX is pinned to the same version, as NVIDIA requires."""
    cuda: Annotated[str, Field(pattern=r"^\d+\.\d+$", max_length=16)] | None = None
    """CUDA toolkit release, e.g. 12.8 (package cuda-toolkit-12-8)."""
    doca_ofed: DottedVersion | None = None
    """DOCA-OFED version for ConnectX and BlueField NICs, e.g. 2.10.0 (package doca-ofed)."""
    dcgm: DottedVersion | None = None
    """DCGM version, e.g. 4.2.3 (package datacenter-gpu-manager-4-cuda<major>, needs cuda)."""
