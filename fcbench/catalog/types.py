"""Free-text parameter types of published catalogs mapped to JSON Schema (pure).

BFCL writes `dict`, `float`, `tuple`, `any`; NESTful writes `int or float`, `list of float`;
CallNavi writes `string`, `number`, `array`. Each maps to a JSON Schema fragment. When the JSON
Schema spelling differs from the source spelling, the source spelling is kept under
`x-source-type` so a writer can give the file back exactly as it was.
"""

from __future__ import annotations

import re
from typing import Any

SOURCE_TYPE_KEY = "x-source-type"

_SIMPLE: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "str": {"type": "string"},
    "text": {"type": "string"},
    "integer": {"type": "integer"},
    "int": {"type": "integer"},
    "long": {"type": "integer"},
    "number": {"type": "number"},
    "float": {"type": "number"},
    "double": {"type": "number"},
    "boolean": {"type": "boolean"},
    "bool": {"type": "boolean"},
    "array": {"type": "array"},
    "list": {"type": "array"},
    "tuple": {"type": "array"},
    "set": {"type": "array"},
    "object": {"type": "object"},
    "dict": {"type": "object"},
    "dictionary": {"type": "object"},
    "null": {"type": "null"},
    "none": {"type": "null"},
    "any": {},
}

_LIST_OF = re.compile(r"^(?:list|array|tuple)\s*(?:of|\[)\s*(?P<item>.+?)\]?s?$", re.IGNORECASE)
_ALTERNATIVES = re.compile(r"\s+or\s+|\s*\|\s*|\s*,\s*", re.IGNORECASE)


def schema_for_type_text(text: str | None) -> dict[str, Any]:
    """JSON Schema fragment for a free-text type; unknown spellings give `{}` (any value).

    The source spelling is recorded under `x-source-type` whenever it is not already the JSON
    Schema type name, so nothing is lost.
    """
    if text is None:
        return {}
    schema = _schema_without_source(text.strip())
    if schema.get("type") != text:
        schema[SOURCE_TYPE_KEY] = text
    return schema


def _schema_without_source(text: str) -> dict[str, Any]:
    lowered = text.lower()
    if lowered in _SIMPLE:
        return dict(_SIMPLE[lowered])
    list_match = _LIST_OF.match(lowered)
    if list_match:
        return {"type": "array", "items": _schema_without_source(list_match.group("item"))}
    parts = [part for part in _ALTERNATIVES.split(lowered) if part]
    if len(parts) > 1:
        alternatives = [_schema_without_source(part) for part in parts]
        if all(set(alt) == {"type"} and isinstance(alt["type"], str) for alt in alternatives):
            types = list(dict.fromkeys(alt["type"] for alt in alternatives))
            return {"type": types if len(types) > 1 else types[0]}
        return {"anyOf": alternatives}
    return {}


def json_type_names(schema: dict[str, Any]) -> list[str]:
    """The JSON Schema type names a property schema allows (empty list: any)."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []
