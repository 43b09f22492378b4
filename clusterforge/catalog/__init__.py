"""The hardware catalog: built-in entries plus the user's catalog files."""

from .loader import BUILTIN_FILES, Catalog, load_catalog
from .models import (
    GPU,
    NIC,
    PDU,
    CableMedia,
    Equipment,
    ModelShapeEntry,
    PortGroup,
    RackType,
    Server,
    Sourced,
    StorageSystem,
    Switch,
    Transceiver,
)

__all__ = [
    "BUILTIN_FILES",
    "GPU",
    "NIC",
    "PDU",
    "CableMedia",
    "Catalog",
    "Equipment",
    "ModelShapeEntry",
    "PortGroup",
    "RackType",
    "Server",
    "Sourced",
    "StorageSystem",
    "Switch",
    "Transceiver",
    "load_catalog",
]
