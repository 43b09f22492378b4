"""Shared pydantic base and small field types used by the blueprint and catalog models."""

import re
import unicodedata
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, GetJsonSchemaHandler, PlainValidator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from .docstrings import field_docstring

MAX_COUNT = 200_000  # no blueprint count goes above this: 100k GPUs is the design ceiling


class Strict(BaseModel):
    """Frozen, rejects unknown keys; every model of the blueprint and catalog derives from it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The JSON Schema with each field's docstring as its description (read only when a schema is made)."""
        json_schema = handler(core_schema)
        for name, prop in handler.resolve_ref_schema(json_schema).get("properties", {}).items():
            doc = field_docstring(cls, name)
            if doc is not None:
                prop.setdefault("description", doc)
        return json_schema


_IDENT = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_CATALOG_KEY = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}/[a-z0-9][a-z0-9._+-]{0,63}")
RACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
_PORT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,15}")
_HOST_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_NCCL_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_NCCL_VALUE = re.compile(r"[A-Za-z0-9_.,:;^/+@%=-]{1,256}")
_NOT_TEXT = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories that are not one line of visible text: controls (newline, NUL, escape), format
characters (bidirectional overrides), surrogates, private use, unassigned, line and paragraph separators."""


def _matching(pattern: re.Pattern[str], message: str) -> AfterValidator:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(message)
        return value

    return AfterValidator(check)


def plain_text(value: str) -> str:
    """One line of visible text: what any output format can carry once escaped for it."""
    for char in value:
        if unicodedata.category(char) in _NOT_TEXT:
            raise ValueError(f"must be one line of visible text; it holds the character U+{ord(char):04X}")
    return value


Identifier = Annotated[
    str,
    _matching(
        _IDENT,
        "must start with a lowercase letter and hold only lowercase letters, digits, '-' and '_' "
        "(at most 63 characters)",
    ),
]
CatalogKey = Annotated[
    str, _matching(_CATALOG_KEY, "must be a catalog key of the form 'vendor/model', lowercase, e.g. 'nvidia/qm9700'")
]
RackName = Annotated[str, _matching(RACK_NAME, "must be letters, digits, '-' or '_' (at most 32 characters)")]
PortName = Annotated[
    str, _matching(_PORT_NAME, "must start with a letter and hold letters, digits, '-' or '_' (at most 16 characters)")
]
HostName = Annotated[
    str,
    _matching(
        _HOST_NAME,
        "must be a host name: lowercase letters, digits and '-', "
        "not starting or ending with '-' (at most 63 characters)",
    ),
]
NcclName = Annotated[str, _matching(_NCCL_NAME, "must be an NCCL variable name in capitals, e.g. NCCL_DEBUG")]


def _nccl_value(value: object) -> str | int | float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError("must be a number or a string")
    if isinstance(value, str) and not _NCCL_VALUE.fullmatch(value):
        raise ValueError(
            "must be an NCCL setting without spaces, quotes or '#' "
            "(letters, digits and _ . , : ; ^ / + @ % = -; at most 256 characters)"
        )
    return value


NcclValue = Annotated[str | int | float, PlainValidator(_nccl_value, json_schema_input_type=str | int | float)]
Text = Annotated[str, Field(max_length=500), AfterValidator(plain_text)]
"""Free text (descriptions, reasons): one line, no control characters."""
Label = Annotated[str, Field(max_length=120), AfterValidator(plain_text)]
"""A short name as people write it (site, vendor, product)."""
Count = Annotated[int, Field(ge=1, le=MAX_COUNT)]
NonNegativeCount = Annotated[int, Field(ge=0, le=MAX_COUNT)]

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Share = Annotated[float, Field(gt=0.0, le=1.0)]
"""A share that divides something (utilisation, efficiency): above 0."""
Headroom = Annotated[float, Field(ge=0.0, lt=1.0)]
"""A share kept free: below 1, so something is left."""
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
