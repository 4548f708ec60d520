"""OpenAI-style function specs <-> canonical `Tool` (pure).

Published catalogs write function specs two ways: bare (`{"name", "description", "parameters"}`,
as ComplexFuncBench does) or wrapped the way the Chat Completions `tools=[...]` argument wants them
(`{"type": "function", "function": {...}}`). Both are read; which form a spec had, which of the
usual keys it lacked and any keys beyond them are remembered under `tool.meta["openai"]`, so that
`tools_to_openai` gives back exactly what was read.

`openai_tool_param` is different: it builds what the openai SDK should be sent, so it drops
everything fcbench adds for its own bookkeeping (meta, returns, `x-*` schema keywords).
"""

from __future__ import annotations

import copy
from typing import Any

from fcbench.sample import Tool

META_KEY = "openai"

# Keys of a function spec that map onto `Tool` fields; anything else is kept verbatim in meta.
_DESCRIPTION = "description"
_PARAMETERS = "parameters"
_RETURNS = "returns"  # not an OpenAI key: a JSON Schema of the response, as fcbench catalogs write it

# JSON Schema keywords whose value maps names to subschemas: their keys are property names, not
# keywords, so a property called "x-api-key" must survive `strip_extension_keys`.
_NAMED_SUBSCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
# Keywords whose value is one subschema (or, for legacy `items`, possibly a list of them).
_SINGLE_SUBSCHEMA = frozenset({
    "items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties",
    "contains", "propertyNames", "not", "if", "then", "else",
})
_LIST_OF_SUBSCHEMAS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})


class OpenAISpecError(ValueError):
    """A function spec that cannot become a `Tool` (no usable name)."""


def is_wrapped_spec(spec: dict[str, Any]) -> bool:
    return spec.get("type") == "function" and isinstance(spec.get("function"), dict)


def tool_from_openai(spec: dict[str, Any]) -> Tool:
    """One spec (bare or wrapped) to a `Tool`, remembering what is needed to give it back exactly."""
    if not isinstance(spec, dict):
        raise OpenAISpecError(f"a function spec must be an object, got {type(spec).__name__}")
    wrapped = is_wrapped_spec(spec)
    function = spec["function"] if wrapped else spec
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise OpenAISpecError(f"function spec without a string 'name': {sorted(function)}")

    # Only what differs from the default (a bare spec with name, description and parameters) is kept.
    memory: dict[str, Any] = {"wrapped": True} if wrapped else {}
    fields: dict[str, Any] = {"name": name}
    absent: list[str] = []
    extra: dict[str, Any] = {}
    for key, expected_type in ((_DESCRIPTION, str), (_PARAMETERS, dict)):
        if key not in function:
            absent.append(key)  # the Tool default would otherwise be written back
        elif isinstance(function[key], expected_type):
            fields[key] = copy.deepcopy(function[key])
        else:
            extra[key] = copy.deepcopy(function[key])  # e.g. a null description: keep as written
    if isinstance(function.get(_RETURNS), dict):  # fcbench's own catalogs describe responses too
        fields[_RETURNS] = copy.deepcopy(function[_RETURNS])
    extra.update({k: copy.deepcopy(v) for k, v in function.items()
                  if k not in ("name", _DESCRIPTION, _PARAMETERS) and not (k == _RETURNS and _RETURNS in fields)})
    if absent:
        memory["absent"] = absent
    if extra:
        memory["extra"] = extra
    if wrapped:
        wrapper_extra = {k: copy.deepcopy(v) for k, v in spec.items() if k not in ("type", "function")}
        if wrapper_extra:
            memory["wrapper_extra"] = wrapper_extra
    if memory:
        fields["meta"] = {META_KEY: memory}
    return Tool(**fields)


def tools_from_openai(specs: list[dict[str, Any]]) -> list[Tool]:
    """Bare and wrapped specs, in any mix, to `Tool`s (order kept)."""
    return [tool_from_openai(spec) for spec in specs]


def _function_dict(tool: Tool) -> dict[str, Any]:
    """The bare function spec: as it was read when the tool came from an OpenAI-style spec."""
    memory = tool.meta.get(META_KEY, {})
    absent = set(memory.get("absent", []))
    extra = memory.get("extra", {})
    function: dict[str, Any] = {"name": tool.name}
    if _DESCRIPTION not in absent and _DESCRIPTION not in extra:
        function[_DESCRIPTION] = tool.description
    if _PARAMETERS not in absent and _PARAMETERS not in extra:
        function[_PARAMETERS] = copy.deepcopy(tool.parameters)
    if tool.returns is not None and _RETURNS not in extra:
        function[_RETURNS] = copy.deepcopy(tool.returns)
    function.update(copy.deepcopy(extra))
    return function


def tool_to_openai(tool: Tool, wrapped: bool | None = None) -> dict[str, Any]:
    """`wrapped=None` gives the form the spec was read in (bare when the tool came from elsewhere)."""
    memory = tool.meta.get(META_KEY, {})
    if wrapped is None:
        wrapped = bool(memory.get("wrapped", False))
    function = _function_dict(tool)
    if not wrapped:
        return function
    return {"type": "function", "function": function, **copy.deepcopy(memory.get("wrapper_extra", {}))}


def tools_to_openai(tools: list[Tool], wrapped: bool | None = None) -> list[dict[str, Any]]:
    """Specs for a catalog file: `wrapped` forces one form; None keeps each tool's original form."""
    return [tool_to_openai(tool, wrapped) for tool in tools]


def strip_extension_keys(schema: Any) -> Any:
    """A copy of a JSON Schema without `x-*` keywords, walking only real subschema positions."""
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-"):
            continue
        if key in _NAMED_SUBSCHEMAS and isinstance(value, dict):
            cleaned[key] = {name: strip_extension_keys(sub) for name, sub in value.items()}
        elif key in _SINGLE_SUBSCHEMA:
            cleaned[key] = [strip_extension_keys(s) for s in value] if isinstance(value, list) else strip_extension_keys(value)
        elif key in _LIST_OF_SUBSCHEMAS and isinstance(value, list):
            cleaned[key] = [strip_extension_keys(sub) for sub in value]
        else:
            cleaned[key] = copy.deepcopy(value)  # enum, default, examples...: values, never walked
    return cleaned


def openai_tool_param(tool: Tool) -> dict[str, Any]:
    """The `tools=[...]` entry the openai SDK expects; fcbench-only data (meta, returns, x-*) left out."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": strip_extension_keys(tool.parameters),
        },
    }
