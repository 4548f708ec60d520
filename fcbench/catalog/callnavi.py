"""CallNavi tool catalogs converted to canonical `Tool`s and back, exactly (pure, no I/O).

CallNavi publishes each domain's APIs twice:

* `APIs/<domain>.json`, the *api_ports* form: `{"api_ports": [{name, parameters, description,
  returnParameter}]}` where `parameters` maps a name to a free-text type (`"string"`, `"int"`,
  `"list"`), to an enumeration spelled with slashes (`"VISA/MASTER/AMEX/JCB"`), to a nested map
  of the same kind, or (once) to example values; in the telecommunications domain `parameters` is
  a bare list of names. `returnParameter` is a name -> type map, a single output name, or a list
  of output names.
* `APISchema/<domain>.json`, the *APISchema* form: the same specs with `parameters` turned into
  JSON Schema by a schema generator (genson: `$schema` URI, every property `required`, sorted).
  Where api_ports had a list of names, the generator described the list itself
  (`{"type": "array", "items": {"type": "string"}}`), so the names are lost in that form.

Canonical tools always get an object schema for `parameters` (what function-calling models and
the rest of fcbench expect). Whatever is needed to give the published spec back exactly is kept
under `tool.meta["callnavi"]`, and nothing more.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from fcbench.catalog.types import SOURCE_TYPE_KEY, schema_for_type_text
from fcbench.json_values import json_type_name
from fcbench.sample import Tool

META_KEY = "callnavi"
SPEC_KEYS = ("name", "description", "parameters", "returnParameter")

# Keys of `tool.meta["callnavi"]`.
SCHEMA_URI = "schema_uri"  # the `$schema` line of an APISchema parameters object
SOURCE_PARAMETERS_SCHEMA = "parameters_schema"  # APISchema parameters that are not an object schema
PARAMETERS_FORM = "parameters_form"  # "names" when api_ports listed parameter names only
RETURN_FORM = "return_form"  # "name" / "names" when returnParameter gave output names only
EXTRA_FIELDS = "extra_fields"  # spec keys CallNavi may add that canonical tools have no field for

# A non-string example value written where api_ports expects a type (60000 for a salary).
SOURCE_VALUE_KEY = "x-source-value"
OPEN_ENUM_MARK = "..."  # "cat/dog/..." lists examples, not every allowed value

NAMES_FORM = "names"
NAME_FORM = "name"


# ------------------------------------------------------------------------------------ shared pieces
def _extra_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in spec.items() if key not in SPEC_KEYS}


def _new_tool(spec: Mapping[str, Any], parameters: dict[str, Any], meta: dict[str, Any]) -> Tool:
    extra = _extra_fields(spec)
    if extra:
        meta[EXTRA_FIELDS] = copy.deepcopy(extra)
    fields: dict[str, Any] = {"name": spec["name"], "parameters": parameters}
    if "description" in spec:
        fields["description"] = spec["description"]
    if "returnParameter" in spec:
        fields["returns"] = _returns_from_return_parameter(spec["returnParameter"], meta)
    if meta:  # after the returns: reading returnParameter may record its form
        fields["meta"] = {META_KEY: meta}
    return Tool(**fields)


def _callnavi_meta(tool: Tool) -> dict[str, Any]:
    meta = tool.meta.get(META_KEY)
    return meta if isinstance(meta, dict) else {}


def _spec_skeleton(tool: Tool) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name, "description": tool.description}
    spec.update(copy.deepcopy(_callnavi_meta(tool).get(EXTRA_FIELDS, {})))
    return spec


def _type_text(schema: Mapping[str, Any]) -> Any:
    """The free-text type a property schema came from (inverse of `schema_for_type_text`)."""
    if SOURCE_VALUE_KEY in schema:
        return schema[SOURCE_VALUE_KEY]
    if SOURCE_TYPE_KEY in schema:
        return schema[SOURCE_TYPE_KEY]
    declared = schema.get("type")
    if isinstance(declared, list):
        return " or ".join(str(name) for name in declared)
    if isinstance(declared, str):
        return declared
    return "any"


# ---------------------------------------------------------------------------------- returnParameter
def _returns_from_return_parameter(value: Any, meta: dict[str, Any]) -> dict[str, Any]:
    """Outputs as an object schema. A bare output name (or list of names) says no type: `{}`."""
    if isinstance(value, dict):
        return {"type": "object", "properties": {name: _port_value_schema(text) for name, text in value.items()}}
    if isinstance(value, str):
        meta[RETURN_FORM] = NAME_FORM
        return {"type": "object", "properties": {value: {}}}
    if isinstance(value, list) and all(isinstance(name, str) for name in value):
        meta[RETURN_FORM] = NAMES_FORM
        return {"type": "object", "properties": {name: {} for name in value}}
    raise ValueError(f"returnParameter must be a map, a name or a list of names, not {value!r}")


def _return_parameter_from_returns(returns: Mapping[str, Any], meta: Mapping[str, Any]) -> Any:
    properties: dict[str, Any] = returns.get("properties") or {}
    form = meta.get(RETURN_FORM)
    if form == NAME_FORM and len(properties) == 1:
        return next(iter(properties))
    if form == NAMES_FORM:
        return list(properties)
    return {name: _port_value(schema) for name, schema in properties.items()}


# ------------------------------------------------------------------------------- api_ports form
def _slash_enumeration_schema(text: str) -> dict[str, Any] | None:
    """`"A/B/C/D"` lists the allowed values; `"cat/dog/..."` only gives examples."""
    parts = [part.strip() for part in text.split("/")]
    if len(parts) < 2 or not all(parts):
        return None
    if parts[-1] == OPEN_ENUM_MARK:
        return {"type": "string", "examples": parts[:-1], SOURCE_TYPE_KEY: text}
    return {"type": "string", "enum": parts, SOURCE_TYPE_KEY: text}


def _port_value_schema(value: Any) -> dict[str, Any]:
    """Schema for one api_ports parameter value: a type text, a nested map, or an example value."""
    if isinstance(value, dict):
        return _object_schema_from_port_map(value)
    if isinstance(value, str):
        return _slash_enumeration_schema(value) or schema_for_type_text(value)
    # An example value in place of a type (createEmploymentContract's `"salary": 60000`).
    return {"type": json_type_name(value), "examples": [value], SOURCE_VALUE_KEY: value}


def _object_schema_from_port_map(parameters: Mapping[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: _port_value_schema(value) for name, value in parameters.items()},
    }
    if parameters:
        # CallNavi's own APISchema form marks every parameter required; api_ports says the same
        # by having no notion of optional parameters.
        schema["required"] = list(parameters)
    return schema


def _port_value(schema: Mapping[str, Any]) -> Any:
    """Inverse of `_port_value_schema`."""
    if SOURCE_VALUE_KEY in schema or SOURCE_TYPE_KEY in schema:
        return _type_text(schema)
    if schema.get("type") == "object" and isinstance(schema.get("properties"), dict):
        return {name: _port_value(sub) for name, sub in schema["properties"].items()}
    return _type_text(schema)


def tool_from_api_port(spec: Mapping[str, Any]) -> Tool:
    meta: dict[str, Any] = {}
    parameters = spec.get("parameters", {})
    if isinstance(parameters, list):
        if not all(isinstance(name, str) for name in parameters):
            raise ValueError(f"{spec['name']}: parameter names must be strings")
        meta[PARAMETERS_FORM] = NAMES_FORM
        # Names without types: each property accepts any value.
        schema: dict[str, Any] = {"type": "object", "properties": {name: {} for name in parameters}}
        if parameters:
            schema["required"] = list(parameters)
    elif isinstance(parameters, dict):
        schema = _object_schema_from_port_map(parameters)
    else:
        raise ValueError(f"{spec['name']}: parameters must be a map or a list of names")
    return _new_tool(spec, schema, meta)


def tools_from_api_ports(doc: Mapping[str, Any]) -> list[Tool]:
    """Canonical tools of an `APIs/<domain>.json` document (`{"api_ports": [...]}`)."""
    ports = doc.get("api_ports")
    if not isinstance(ports, list):
        raise ValueError('an api_ports document is an object with an "api_ports" list')
    return [tool_from_api_port(spec) for spec in ports]


def _port_parameters(tool: Tool, meta: Mapping[str, Any]) -> Any:
    """api_ports `parameters`: a list of names where the source gave names only, else a map."""
    properties: dict[str, Any] = tool.parameters.get("properties") or {}
    source_schema = meta.get(SOURCE_PARAMETERS_SCHEMA)
    from_name_list = isinstance(source_schema, dict) and source_schema.get("type") == "array"
    if meta.get(PARAMETERS_FORM) == NAMES_FORM or from_name_list:
        return list(properties)
    return {name: _port_value(schema) for name, schema in properties.items()}


def tool_to_api_port(tool: Tool) -> dict[str, Any]:
    meta = _callnavi_meta(tool)
    spec = _spec_skeleton(tool)
    spec["parameters"] = _port_parameters(tool, meta)
    if tool.returns is not None:
        spec["returnParameter"] = _return_parameter_from_returns(tool.returns, meta)
    return spec


def tools_to_api_ports(tools: list[Tool]) -> dict[str, Any]:
    """The `{"api_ports": [...]}` document for tools (exact inverse of `tools_from_api_ports`)."""
    return {"api_ports": [tool_to_api_port(tool) for tool in tools]}


# ------------------------------------------------------------------------------- APISchema form
def _object_parameters_from_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    parameters = {key: copy.deepcopy(value) for key, value in schema.items() if key != "$schema"}
    # The generator leaves `properties` out when a function takes none; canonical always has it.
    parameters.setdefault("properties", {})
    return parameters


def _parameters_from_array_schema(schema: Mapping[str, Any], names: list[str] | None) -> dict[str, Any]:
    """An array schema describes the list of parameter NAMES (see module doc): every parameter
    takes a value of the item schema. With the names (from api_ports) they become properties;
    without them, any property name is allowed with that value schema."""
    value_schema = copy.deepcopy(schema.get("items", {}))
    if names is None:
        return {"type": "object", "properties": {}, "additionalProperties": value_schema}
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {name: copy.deepcopy(value_schema) for name in names},
    }
    if names:
        parameters["required"] = list(names)
    return parameters


def tool_from_api_schema(spec: Mapping[str, Any], parameter_names: list[str] | None = None) -> Tool:
    meta: dict[str, Any] = {}
    schema = spec.get("parameters", {})
    if not isinstance(schema, dict):
        raise ValueError(f"{spec['name']}: parameters must be a JSON Schema object")
    if schema.get("type", "object") == "object":
        parameters = _object_parameters_from_schema(schema)
        if "$schema" in schema:
            meta[SCHEMA_URI] = schema["$schema"]
    else:
        parameters = _parameters_from_array_schema(schema, parameter_names)
        meta[SOURCE_PARAMETERS_SCHEMA] = copy.deepcopy(schema)
    return _new_tool(spec, parameters, meta)


def tools_from_api_schema(
    specs: list[dict[str, Any]], parameter_names: Mapping[str, list[str]] | None = None
) -> list[Tool]:
    """Canonical tools of an `APISchema/<domain>.json` list.

    `parameter_names` (tool name -> names, see `parameter_names_from_api_ports`) restores the names
    the generator lost where api_ports listed names only.
    """
    names = parameter_names or {}
    return [tool_from_api_schema(spec, names.get(spec["name"])) for spec in specs]


def parameter_names_from_api_ports(doc: Mapping[str, Any]) -> dict[str, list[str]]:
    """Tool name -> parameter names, for the api_ports specs that give names only."""
    return {
        spec["name"]: list(spec["parameters"])
        for spec in doc.get("api_ports", [])
        if isinstance(spec, dict) and isinstance(spec.get("parameters"), list)
    }


def _schema_from_parameters(tool: Tool) -> dict[str, Any]:
    meta = _callnavi_meta(tool)
    if SOURCE_PARAMETERS_SCHEMA in meta:
        return copy.deepcopy(meta[SOURCE_PARAMETERS_SCHEMA])
    schema: dict[str, Any] = {}
    if SCHEMA_URI in meta:
        schema["$schema"] = meta[SCHEMA_URI]
    schema.update(copy.deepcopy(tool.parameters))
    if schema.get("properties") == {} and "required" not in schema:
        del schema["properties"]  # the generator's spelling of "no parameters"
    return schema


def tool_to_api_schema(tool: Tool) -> dict[str, Any]:
    spec = _spec_skeleton(tool)
    spec["parameters"] = _schema_from_parameters(tool)
    if tool.returns is not None:
        spec["returnParameter"] = _return_parameter_from_returns(tool.returns, _callnavi_meta(tool))
    return spec


def tools_to_api_schema(tools: list[Tool]) -> list[dict[str, Any]]:
    """The `APISchema/<domain>.json` list for tools (exact inverse of `tools_from_api_schema`)."""
    return [tool_to_api_schema(tool) for tool in tools]
