"""Shared pydantic base and small field types used by the blueprint and catalog models."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_COUNT = 200_000  # no blueprint count goes above this: 100k GPUs is the design ceiling


class Strict(BaseModel):
    """Frozen, rejects unknown keys; every model of the blueprint and catalog derives from it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


_IDENT = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
_CATALOG_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._+-]*$")
_RACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")


def _identifier(value: str) -> str:
    if not _IDENT.match(value):
        raise ValueError(
            "must start with a lowercase letter and hold only lowercase letters, digits, '-' and '_' "
            "(at most 63 characters)"
        )
    return value


def _catalog_key(value: str) -> str:
    if not _CATALOG_KEY.match(value):
        raise ValueError("must be a catalog key of the form 'vendor/model', lowercase, e.g. 'nvidia/qm9700'")
    return value


def _rack_name(value: str) -> str:
    if not _RACK_NAME.match(value):
        raise ValueError("must be letters, digits, '-' or '_' (at most 32 characters)")
    return value


Identifier = Annotated[str, AfterValidator(_identifier)]
CatalogKey = Annotated[str, AfterValidator(_catalog_key)]
RackName = Annotated[str, AfterValidator(_rack_name)]
Count = Annotated[int, Field(ge=1, le=MAX_COUNT)]
NonNegativeCount = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
PositiveFloat = Annotated[float, Field(gt=0)]
