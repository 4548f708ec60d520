"""BFCL function docs <-> canonical `Tool` specs.

BFCL writes parameter schemas in a Python flavour of JSON Schema: `"type": "dict"`, `"float"`,
`"tuple"`, `"any"`. They become JSON Schema types (`object`, `number`, `array`, no type) with the
source spelling kept under `x-source-type` (see `fcbench.catalog.types`), at every depth
(properties, items), so `tools_to_bfcl(tools_from_bfcl(f)) == f` exactly. Multi-turn func docs
also carry a `response` schema, which becomes `Tool.returns`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fcbench.catalog.types import SOURCE_TYPE_KEY, schema_for_type_text
from fcbench.sample import Tool

_FUNCTION_KEYS = ("name", "description", "parameters", "response")
_EXTRA_KEYS_META = "bfcl_extra"  # tool.meta key for function-doc keys no Tool field holds
CLASS_META = "bfcl_class"  # tool.meta key naming the multi-turn class a func doc belongs to

# Multi-turn items name the classes they involve; the func docs are one file per class. The file
# for each class was found by reading the docs' descriptions ("This tool belongs to the TwitterAPI"
# is posting_api.json, "the trading system" is trading_bot.json...).
MULTI_TURN_CLASS_FILES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
    "WebSearchAPI": "web_search.json",
    "MemoryAPI_kv": "memory_kv.json",
    "MemoryAPI_vector": "memory_vector.json",
    "MemoryAPI_rec_sum": "memory_rec_sum.json",
}


def schema_from_bfcl(schema: Any) -> Any:
    """A BFCL schema node as JSON Schema, recursively; non-dict nodes are returned as they are."""
    if isinstance(schema, list):  # tuple-style `items: [{...}, {...}]`
        return [schema_from_bfcl(node) for node in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: value for key, value in schema.items() if key != "type"}
    if isinstance(schema.get("type"), str):
        converted.update(schema_for_type_text(schema["type"]))
    elif "type" in schema:
        converted["type"] = schema["type"]
    return _map_children(converted, schema_from_bfcl)


def schema_to_bfcl(schema: Any) -> Any:
    """Inverse of `schema_from_bfcl`: source spellings put back from `x-source-type`."""
    if isinstance(schema, list):
        return [schema_to_bfcl(node) for node in schema]
    if not isinstance(schema, dict):
        return schema
    converted = dict(schema)
    if SOURCE_TYPE_KEY in converted:
        converted["type"] = converted.pop(SOURCE_TYPE_KEY)
    return _map_children(converted, schema_to_bfcl)


def _map_children(schema: dict[str, Any], convert: Any) -> dict[str, Any]:
    # Only places that hold schemas are walked: `default`/`enum` values are data and stay as they are.
    if isinstance(schema.get("properties"), dict):
        schema["properties"] = {name: convert(node) for name, node in schema["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), (dict, list)):
            schema[key] = convert(schema[key])
    return schema


def tool_from_bfcl(function: dict[str, Any], class_name: str | None = None) -> Tool:
    meta: dict[str, Any] = {}
    extra = {key: value for key, value in function.items() if key not in _FUNCTION_KEYS}
    if extra:
        meta[_EXTRA_KEYS_META] = extra
    if class_name is not None:
        meta[CLASS_META] = class_name
    tool = Tool(name=function["name"], description=function.get("description", ""))
    if meta:
        tool.meta = meta
    if "parameters" in function:
        tool.parameters = schema_from_bfcl(function["parameters"])
    if "response" in function:
        tool.returns = schema_from_bfcl(function["response"])
    return tool


def tool_to_bfcl(tool: Tool) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": schema_to_bfcl(tool.parameters),
    }
    if tool.returns is not None:
        function["response"] = schema_to_bfcl(tool.returns)
    function.update(tool.meta.get(_EXTRA_KEYS_META, {}))
    return function


def tools_from_bfcl(functions: list[dict[str, Any]]) -> list[Tool]:
    return [tool_from_bfcl(function) for function in functions]


def tools_to_bfcl(tools: list[Tool]) -> list[dict[str, Any]]:
    return [tool_to_bfcl(tool) for tool in tools]


def parameter_order(tool: Tool) -> list[str]:
    """Parameter names in declaration order: how positional arguments map to names."""
    properties = tool.parameters.get("properties")
    return list(properties) if isinstance(properties, dict) else []


def read_multi_turn_tools(doc_dir: Path, class_names: list[str]) -> dict[str, list[Tool]]:
    """Load the func docs of the named classes: {class name: its tools}. Raises KeyError for a
    class with no known doc file and OSError/ValueError for a missing or broken doc file."""
    tools_by_class: dict[str, list[Tool]] = {}
    for class_name in class_names:
        doc_path = doc_dir / MULTI_TURN_CLASS_FILES[class_name]
        functions = _read_doc_lines(doc_path)
        tools_by_class[class_name] = [tool_from_bfcl(function, class_name) for function in functions]
    return tools_by_class


def _read_doc_lines(path: Path) -> list[dict[str, Any]]:
    functions = []
    with open(path, encoding="utf-8") as handle:
        for line_no, text in enumerate(handle, start=1):
            if text.strip():
                try:
                    functions.append(json.loads(text))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from None
    return functions
