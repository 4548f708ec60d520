"""NESTful tool specs <-> `Tool` (pure, no I/O), both published spellings.

v2 (data_v2, `tools` of each sample) comes in two shapes:
- flat: `parameters` is `{name: {type, description, ...}}` with free-text types ("int or float",
  "list of float") and the output under `output_parameters` or, in some files, `output_parameter`;
- JSON Schema: `parameters` is already `{"type": "object", "properties", "required"}` and the output
  is `{"properties": {...}}` (the code samples of `toy_data.jsonl`).
v1 (data_v1, `executable-spec.json`) is RapidAPI-style: `query_parameters` (or `path_parameters`)
with a per-parameter `required` flag, HTTP fields (method, endpoint, host, url, output_parser) and
nested `output_parameters`.

Everything is converted to JSON Schema so scorers and environments read one shape; what JSON Schema
cannot say (which spelling, which form, a missing flag) is kept in `Tool.meta["nestful"]` and in
`x-` keywords of the property schemas, so `tools_to_nestful(tools_from_nestful(specs)) == specs`.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from fcbench.catalog.types import SOURCE_TYPE_KEY, schema_for_type_text
from fcbench.sample import Tool

META_KEY = "nestful"

# Keywords added to property schemas so the inverse is exact.
OWN_KEYS_KEY = "x-nestful-own-keys"  # source keys that collide with keys derived from the type text
ENUM_SPELLING_KEY = "x-nestful-enum-key"  # `allowed_values` / `possible_values` mapped to `enum`

_ENUM_SPELLINGS = ("allowed_values", "possible_values")
_OUTPUT_KEYS = ("output_parameters", "output_parameter")
_V1_PARAMETER_GROUPS = ("query_parameters", "path_parameters")
# HTTP facts an environment needs to call the API: kept at the top of Tool.meta, not hidden in
# the round-trip bookkeeping.
V1_HTTP_KEYS = ("method", "endpoint", "host", "url", "output_parser")

# Keys each converter maps itself; the output key it reads is added per spec (only the first of
# `_OUTPUT_KEYS` present is the output: should both appear, the other is kept verbatim).
_V2_KNOWN_KEYS = {"name", "description", "parameters"}
_V1_KNOWN_KEYS = {"name", "description", *_V1_PARAMETER_GROUPS, *V1_HTTP_KEYS}
_BASIC_MATH_ARGUMENT = re.compile(r"arg_\d+")


# ---------------------------------------------------------------- property schemas (recursive)


def _convert_nested(key: str, value: Any, convert: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """Apply `convert` to the sub-schemas a keyword holds (nested output objects, list items)."""
    if key == "properties" and isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
        return {name: convert(sub) for name, sub in value.items()}
    if key in ("items", "additionalProperties") and isinstance(value, dict):
        return convert(value)
    if key == "prefixItems" and isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return [convert(sub) for sub in value]
    return value


def property_from_nestful(spec: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema for one NESTful parameter spec; free-text types become JSON Schema types.

    Keys keep their source order (the schema keywords derived from `type` take its place), so the
    inverse gives back the same order: prediction files store tools as JSON text, and equal text
    needs equal key order.
    """
    type_text = spec.get("type")
    derived: dict[str, Any] = schema_for_type_text(type_text) if isinstance(type_text, str) else {}
    schema: dict[str, Any] = {}
    own_keys: list[str] = []
    for key, value in spec.items():
        if key == "type":
            schema.update(derived if isinstance(type_text, str) else {"type": value})
            continue
        if (
            key in _ENUM_SPELLINGS
            and isinstance(value, list)
            and "enum" not in spec
            and ENUM_SPELLING_KEY not in schema
        ):
            schema["enum"] = value
            schema[ENUM_SPELLING_KEY] = key
            continue
        if key in derived:
            own_keys.append(key)  # e.g. `items` written beside "list of float": the source wins
        schema[key] = _convert_nested(key, value, property_from_nestful)
    if own_keys:
        schema[OWN_KEYS_KEY] = own_keys
    return schema


def property_to_nestful(schema: dict[str, Any]) -> dict[str, Any]:
    """Exact inverse of `property_from_nestful` (a plain JSON Schema property also works)."""
    source_type = schema.get(SOURCE_TYPE_KEY)
    derived = schema_for_type_text(source_type) if isinstance(source_type, str) else {}
    own_keys = set(schema.get(OWN_KEYS_KEY, ()))
    enum_spelling = schema.get(ENUM_SPELLING_KEY)
    spec: dict[str, Any] = {}
    for key, value in schema.items():
        if key in derived and key not in own_keys:
            # Produced from the type text (always with `x-source-type`): the text goes back
            # where the first of those keys stands.
            spec.setdefault("type", source_type)
        elif key in (OWN_KEYS_KEY, ENUM_SPELLING_KEY):
            continue
        elif key == "enum" and enum_spelling:
            spec[enum_spelling] = value
        else:
            spec[key] = _convert_nested(key, value, property_to_nestful)
    return spec


def _object_schema(properties: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _is_json_schema_object(value: dict[str, Any]) -> bool:
    """`{"type": "object", "properties": {...}}`; a flat map never has a string under `type`
    (a parameter named `type` would hold a dict)."""
    return value.get("type") == "object" and isinstance(value.get("properties"), dict)


def _is_properties_wrapper(value: dict[str, Any]) -> bool:
    """The code samples' output: `{"properties": {name: schema}}` (a flat output named
    `properties` would hold a property spec whose values are strings, not schemas)."""
    properties = value.get("properties")
    return (
        set(value) <= {"type", "properties", "required"}
        and isinstance(properties, dict)
        and all(isinstance(sub, dict) for sub in properties.values())
    )


def _require_dict(value: Any, what: str, tool_name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"tool {tool_name!r}: {what} is {type(value).__name__}, expected an object")
    return value


# ---------------------------------------------------------------- outputs (v1 and v2)


def _returns_from_output(output: dict[str, Any], bookkeeping: dict[str, Any]) -> dict[str, Any]:
    if _is_properties_wrapper(output):
        bookkeeping["output_form"] = "schema"
        if "type" not in output:
            bookkeeping["output_type_implicit"] = True
        return {"type": "object", **output}
    return _object_schema({name: property_from_nestful(spec) for name, spec in output.items()}, [])


def _output_from_returns(returns: dict[str, Any], bookkeeping: dict[str, Any]) -> dict[str, Any]:
    if bookkeeping.get("output_form") == "schema":
        output = dict(returns)
        if bookkeeping.get("output_type_implicit"):
            output.pop("type", None)
        return output
    properties = returns.get("properties")
    if isinstance(properties, dict):
        return {name: property_to_nestful(schema) for name, schema in properties.items()}
    # A returns schema from another format that is not an object: NESTful names it `result`.
    return {"result": property_to_nestful(returns)}


def _output_key(spec: dict[str, Any]) -> str | None:
    return next((key for key in _OUTPUT_KEYS if key in spec), None)


def _split_output(spec: dict[str, Any], tool_name: str, bookkeeping: dict[str, Any]) -> dict[str, Any] | None:
    key = _output_key(spec)
    if key is None:
        return None
    bookkeeping["output_key"] = key
    return _returns_from_output(_require_dict(spec[key], key, tool_name), bookkeeping)


def _write_output(tool: Tool, bookkeeping: dict[str, Any], spec: dict[str, Any]) -> None:
    if tool.returns is not None:
        spec[bookkeeping.get("output_key", "output_parameters")] = _output_from_returns(tool.returns, bookkeeping)


def _common_from_spec(spec: dict[str, Any], known_keys: set[str], bookkeeping: dict[str, Any]) -> str:
    """Name and description; unknown keys kept verbatim in the bookkeeping."""
    name = spec.get("name")
    if not isinstance(name, str):
        raise ValueError(f"tool spec without a string `name` (keys: {sorted(spec)})")
    if "description" not in spec:
        bookkeeping["description_absent"] = True
    output_key = _output_key(spec)
    mapped = known_keys | {output_key} if output_key else known_keys
    extra = {key: value for key, value in spec.items() if key not in mapped}
    if extra:
        bookkeeping["extra"] = extra
    return name


def _common_to_spec(tool: Tool, bookkeeping: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name}
    if tool.description or not bookkeeping.get("description_absent"):
        spec["description"] = tool.description
    return spec


# ---------------------------------------------------------------- v2


def tool_from_nestful(spec: dict[str, Any]) -> Tool:
    """One NESTful v2 tool spec as a Tool. Raises ValueError on a spec that is not one."""
    bookkeeping: dict[str, Any] = {}
    name = _common_from_spec(spec, _V2_KNOWN_KEYS, bookkeeping)
    raw_parameters = _require_dict(spec.get("parameters", {}), "parameters", name)
    if "parameters" not in spec:
        bookkeeping["parameters_absent"] = True
    if _is_json_schema_object(raw_parameters):
        bookkeeping["parameters_form"] = "schema"
        parameters = dict(raw_parameters)
    else:
        for param_name, param in raw_parameters.items():
            _require_dict(param, f"parameter {param_name!r}", name)
        # The flat form has no `required`. Every parameter is taken as required: NESTful's
        # functions are called with all their listed arguments (every gold call in the published
        # files passes each one), and the flat writer drops `required`, so the round trip is exact.
        parameters = _object_schema(
            {param_name: property_from_nestful(param) for param_name, param in raw_parameters.items()},
            list(raw_parameters),
        )
    returns = _split_output(spec, name, bookkeeping)
    tool = Tool(
        name=name,
        description=spec.get("description", ""),
        parameters=parameters,
        returns=returns,
        meta={META_KEY: bookkeeping},
    )
    return _remembering_key_order(tool, spec, tool_to_nestful)


def tool_to_nestful(tool: Tool) -> dict[str, Any]:
    """Exact inverse of `tool_from_nestful`; a Tool from another format gets the flat form."""
    bookkeeping = _bookkeeping(tool)
    spec = _common_to_spec(tool, bookkeeping)
    if not bookkeeping.get("parameters_absent"):
        if bookkeeping.get("parameters_form") == "schema":
            spec["parameters"] = dict(tool.parameters)
        else:
            properties = tool.parameters.get("properties") or {}
            spec["parameters"] = {name: property_to_nestful(schema) for name, schema in properties.items()}
    _write_output(tool, bookkeeping, spec)
    spec.update(bookkeeping.get("extra", {}))
    return _in_key_order(spec, bookkeeping)


def tools_from_nestful(specs: list[dict[str, Any]]) -> list[Tool]:
    return [tool_from_nestful(_require_dict(spec, "spec", "?")) for spec in specs]


def tools_to_nestful(tools: list[Tool]) -> list[dict[str, Any]]:
    return [tool_to_nestful(tool) for tool in tools]


def optional_parameters_lost_in_flat_form(tool: Tool) -> bool:
    """True when writing the v2 flat form would turn optional parameters into required ones."""
    if _bookkeeping(tool).get("parameters_form") == "schema":
        return False
    properties = tool.parameters.get("properties") or {}
    return set(tool.parameters.get("required") or []) != set(properties)


# ---------------------------------------------------------------- v1 (RapidAPI-style spec)


def tool_from_nestful_v1(spec: dict[str, Any]) -> Tool:
    """One `executable-spec.json` entry as a Tool. Raises ValueError on a spec that is not one."""
    bookkeeping: dict[str, Any] = {}
    name = _common_from_spec(spec, _V1_KNOWN_KEYS, bookkeeping)
    properties: dict[str, dict[str, Any]] = {}
    required: list[str] = []
    groups = [group for group in _V1_PARAMETER_GROUPS if group in spec]
    bookkeeping["parameter_groups"] = groups
    without_flag: list[str] = []
    for group in groups:
        for param_name, param in _require_dict(spec[group], group, name).items():
            param = dict(_require_dict(param, f"parameter {param_name!r}", name))
            if group != "query_parameters":
                bookkeeping.setdefault("group_of", {})[param_name] = group
            flag = param.pop("required", None) if isinstance(param.get("required"), bool) else None
            if flag is None:
                without_flag.append(param_name)
            elif flag:
                required.append(param_name)
            properties[param_name] = property_from_nestful(param)
    if without_flag:
        bookkeeping["without_required_flag"] = without_flag
    returns = _split_output(spec, name, bookkeeping)
    meta: dict[str, Any] = {key: spec[key] for key in V1_HTTP_KEYS if key in spec}
    meta[META_KEY] = bookkeeping
    tool = Tool(
        name=name,
        description=spec.get("description", ""),
        parameters=_object_schema(properties, required),
        returns=returns,
        meta=meta,
    )
    return _remembering_key_order(tool, spec, tool_to_nestful_v1)


def tool_to_nestful_v1(tool: Tool) -> dict[str, Any]:
    """Exact inverse of `tool_from_nestful_v1`; other tools get `query_parameters` with flags."""
    bookkeeping = _bookkeeping(tool)
    spec = _common_to_spec(tool, bookkeeping)
    # Published order: HTTP fields, parameters, then how to read the output.
    spec.update({key: tool.meta[key] for key in V1_HTTP_KEYS if key in tool.meta and key != "output_parser"})
    group_of = bookkeeping.get("group_of", {})
    without_flag = set(bookkeeping.get("without_required_flag", ()))
    required = set(tool.parameters.get("required") or [])
    for group in bookkeeping.get("parameter_groups", ["query_parameters"]):
        spec[group] = {}
    for param_name, schema in (tool.parameters.get("properties") or {}).items():
        param = property_to_nestful(schema)
        if param_name in required or param_name not in without_flag:
            param["required"] = param_name in required
        spec.setdefault(group_of.get(param_name, "query_parameters"), {})[param_name] = param
    if "output_parser" in tool.meta:
        spec["output_parser"] = tool.meta["output_parser"]
    _write_output(tool, bookkeeping, spec)
    spec.update(bookkeeping.get("extra", {}))
    return _in_key_order(spec, bookkeeping)


def tools_from_nestful_v1(specs: list[dict[str, Any]]) -> list[Tool]:
    return [tool_from_nestful_v1(_require_dict(spec, "spec", "?")) for spec in specs]


def tools_to_nestful_v1(tools: list[Tool]) -> list[dict[str, Any]]:
    return [tool_to_nestful_v1(tool) for tool in tools]


# ---------------------------------------------------------------- shared


def _remembering_key_order(tool: Tool, spec: dict[str, Any], to_nestful: Callable[[Tool], dict[str, Any]]) -> Tool:
    """Record the spec's key order when the writer's natural order differs (the code samples'
    specs are key-sorted); JSON-encoded `tools` fields are only given back exactly in that order."""
    if list(to_nestful(tool)) != list(spec):
        tool.meta[META_KEY]["key_order"] = list(spec)
    return tool


def _in_key_order(spec: dict[str, Any], bookkeeping: dict[str, Any]) -> dict[str, Any]:
    order = bookkeeping.get("key_order")
    if not order:
        return spec
    ordered = {key: spec[key] for key in order if key in spec}
    ordered.update({key: value for key, value in spec.items() if key not in ordered})
    return ordered


def _bookkeeping(tool: Tool) -> dict[str, Any]:
    value = tool.meta.get(META_KEY)
    return value if isinstance(value, dict) else {}


def is_basic_math_tool(tool: Tool) -> bool:
    """A function of NESTful's `basic_functions.py`: positional `arg_N` inputs and one `result`.

    Decided from the shape, not from a name list, because the published files offer 40 such
    functions under varying subsets; code tools always have named inputs and `output_0`.
    """
    properties = tool.parameters.get("properties") or {}
    outputs = (tool.returns or {}).get("properties") or {}
    return (
        bool(properties)
        and all(_BASIC_MATH_ARGUMENT.fullmatch(name) for name in properties)
        and list(outputs) == ["result"]
    )
