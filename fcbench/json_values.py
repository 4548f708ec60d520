"""Walking and normalising JSON values (pure): the one place for what many checks need.

- `normalise_json`: numbers in one spelling (1.0 -> 1, -0.0 -> 0; bool stays bool), so call keys,
  signatures and recordings do not depend on how a number was written.
- `json_leaves` / `json_leaves_with_paths`: every scalar inside a JSON value, depth first (dict
  values in order, list items in order), optionally with its path of keys and indexes.
- `json_type_name`: the JSON Schema type of a value ("integer", "array", ...).
"""

from __future__ import annotations

from typing import Any, Iterator

JsonPath = tuple[str | int, ...]


_JSON_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: bool is a subclass of int
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
    (type(None), "null"),
)


def json_type_name(value: Any) -> str:
    """The JSON Schema type of a Python value as JSON parsing gives it ("string" for anything else)."""
    return next((name for kind, name in _JSON_TYPE_NAMES if isinstance(value, kind)), "string")


def normalise_json(value: Any) -> Any:
    """A JSON value with integral floats as ints and dict keys as strings (bool stays bool)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(key): normalise_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise_json(item) for item in value]
    return value


def json_leaves_with_paths(value: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, Any]]:
    """Every scalar inside a JSON value with the keys and indexes leading to it."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_leaves_with_paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_leaves_with_paths(item, path + (index,))
    else:
        yield path, value


def json_leaves(value: Any) -> Iterator[Any]:
    """Every scalar inside a JSON value (dict values and list items, depth first)."""
    return (leaf for _, leaf in json_leaves_with_paths(value))
