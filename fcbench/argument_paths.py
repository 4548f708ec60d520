"""Leaves of nested arguments, named by paths: `entities[0].name`, `observations[0].contents[0]` (pure).

Most tools take flat arguments (`departDate`, `adults`); MCP tools often take lists of objects (the
memory server's `create_entities({"entities": [{"name", "entityType", "observations": [...]}]})`).
Where a value pool fills, or an earlier output feeds, a value inside such an argument, it names the
place with the same path syntax a `$label.path$` reference uses inside an output: keys after dots,
list positions in brackets.

A name is read as a path only when it is one (a key, then `[n]` or `.key` parts); a plain
parameter name, including OpenAPI names such as `page[limit]`, is a top-level key.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Mapping

_PATH = re.compile(r"^[A-Za-z_][\w-]*(?:\[\d+\]|\.[A-Za-z_][\w-]*)+$")
_PART = re.compile(r"\[(?P<index>\d+)\]|\.(?P<key>[A-Za-z_][\w-]*)")


def parse_argument_path(name: str) -> tuple[str | int, ...]:
    """`entities[0].name` -> ("entities", 0, "name"); a plain name -> (name,)."""
    if not _PATH.match(name):
        return (name,)
    head = re.match(r"^[A-Za-z_][\w-]*", name)
    assert head is not None
    parts: list[str | int] = [head.group(0)]
    for match in _PART.finditer(name, head.end()):
        parts.append(int(match.group("index")) if match.group("index") is not None else match.group("key"))
    return tuple(parts)


def is_argument_path(name: str) -> bool:
    return len(parse_argument_path(name)) > 1


def get_argument(arguments: Mapping[str, Any], name: str) -> Any:
    """The value at `name` (a plain key or a path); KeyError when the arguments do not reach it."""
    if name in arguments or not is_argument_path(name):
        return arguments[name]
    value: Any = arguments
    for part in parse_argument_path(name):
        try:
            value = value[part]
        except (LookupError, TypeError):
            raise KeyError(name) from None
    return value


def has_argument(arguments: Mapping[str, Any], name: str) -> bool:
    try:
        get_argument(arguments, name)
    except KeyError:
        return False
    return True


def with_argument(arguments: Mapping[str, Any], name: str, value: Any) -> dict[str, Any]:
    """A copy of the arguments with `value` at `name`, creating the lists and objects on the way
    (a list grows to the position, padded with None)."""
    updated = copy.deepcopy(dict(arguments))
    parts = parse_argument_path(name)
    if len(parts) == 1:
        updated[name] = value
        return updated
    node: Any = updated
    for part, following in zip(parts, parts[1:]):
        fresh: Any = [] if isinstance(following, int) else {}
        if isinstance(part, int):
            while len(node) <= part:
                node.append(None)
            if not isinstance(node[part], (list, dict)):
                node[part] = fresh
            node = node[part]
        else:
            if not isinstance(node.get(part), (list, dict)):
                node[part] = fresh
            node = node[part]
    last = parts[-1]
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = value
    return updated


def argument_schema(parameters: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The JSON Schema of the value at `name` (a parameter or a path) in a tool's `parameters`
    schema; {} where the schema does not say."""
    properties = parameters.get("properties") or {}
    if name in properties or not is_argument_path(name):
        found = properties.get(name)
        return found if isinstance(found, dict) else {}
    schema: Any = parameters
    for part in parse_argument_path(name):
        if isinstance(part, int):
            schema = schema.get("items") if isinstance(schema, dict) else None
        else:
            schema = (schema.get("properties") or {}).get(part) if isinstance(schema, dict) else None
        if not isinstance(schema, dict):
            return {}
    return schema


def nest_arguments(leaves: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments from values by name or path, in the order given (`{"entities[0].name": "A"}` ->
    `{"entities": [{"name": "A"}]}`)."""
    arguments: dict[str, Any] = {}
    for name, value in leaves.items():
        arguments = with_argument(arguments, name, value)
    return arguments
