"""Tool catalogs: load a file of tool specs in any published shape as a list of canonical `Tool`s.

Benchmarks publish their tools in many shapes (OpenAI tool lists, BFCL function lists or question
files, NESTful flat specs, CallNavi `api_ports` or JSON-Schema lists, or the tools carried by
canonical samples). `detect_tools_shape` decides which one a parsed document is (pure, so it is
tested on tiny inline examples); `load_tools_file` reads the file and hands the document to the
converter that owns that shape. The converters live in sibling modules and are imported lazily so
that loading one shape never requires the others.
"""

from __future__ import annotations

import json
import logging
from enum import Enum
from pathlib import Path
from typing import Any, Callable

from fcbench.errors import UserError
from fcbench.jsonl import iter_json_lines
from fcbench.sample import Tool, sample_from_dict

# Type spellings only BFCL uses in its parameter schemas (JSON Schema would say object/number/array).
_BFCL_ONLY_TYPES = {"dict", "float", "tuple", "any"}


class ToolsShape(str, Enum):
    CANONICAL_SAMPLES = "fcbench samples"
    OPENAI = "OpenAI tools"
    BFCL_FUNCTIONS = "BFCL functions"
    BFCL_QUESTIONS = "BFCL questions"
    NESTFUL_V2 = "NESTful v2 specs"
    NESTFUL_V2_SAMPLES = "NESTful v2 samples"
    NESTFUL_V1 = "NESTful v1 specs"
    CALLNAVI_API_PORTS = "CallNavi api_ports"
    CALLNAVI_API_SCHEMA = "CallNavi APISchema"


# ------------------------------------------------------------------------------------------ detection
def detect_tools_shape(document: Any) -> ToolsShape | None:
    """Which tool-file shape a parsed JSON document (object, or list of records) is; None if unknown."""
    if isinstance(document, dict):
        if isinstance(document.get("api_ports"), list):
            return ToolsShape.CALLNAVI_API_PORTS
        document = [document]  # a JSON Lines file holding a single record
    if not isinstance(document, list) or not document or not all(isinstance(r, dict) for r in document):
        return None
    record_shapes = {_record_shape(record) for record in document}
    if len(record_shapes) == 1:
        return record_shapes.pop()
    # A list mixing JSON-Schema `object` tools with BFCL-spelled ones is a BFCL list: BFCL's
    # converter understands both spellings, the OpenAI one would keep `dict`/`float` as they are.
    if record_shapes == {ToolsShape.OPENAI, ToolsShape.BFCL_FUNCTIONS}:
        return ToolsShape.BFCL_FUNCTIONS
    return None


def _record_shape(record: dict[str, Any]) -> ToolsShape | None:
    if {"messages", "tools", "calls"} <= record.keys():
        return ToolsShape.CANONICAL_SAMPLES
    if "question" in record and isinstance(record.get("function"), list):
        return ToolsShape.BFCL_QUESTIONS
    if "input" in record and isinstance(record.get("tools"), list):
        return ToolsShape.NESTFUL_V2_SAMPLES
    return _tool_spec_shape(record)


def _tool_spec_shape(spec: dict[str, Any]) -> ToolsShape | None:
    """The shape of one tool spec, from the keys each publisher uses and no other does."""
    if spec.get("type") == "function" and isinstance(spec.get("function"), dict):
        return ToolsShape.OPENAI
    if not isinstance(spec.get("name"), str):
        return None
    if "query_parameters" in spec or "path_parameters" in spec:
        return ToolsShape.NESTFUL_V1
    parameters = spec.get("parameters", {})
    if "returnParameter" in spec:  # CallNavi's spelling; its two files differ in `parameters`
        return ToolsShape.CALLNAVI_API_SCHEMA if _is_json_schema(parameters) else ToolsShape.CALLNAVI_API_PORTS
    if not isinstance(parameters, dict):
        return None
    if "output_parameters" in spec or "output_parameter" in spec:
        return ToolsShape.NESTFUL_V2
    if not _is_json_schema(parameters):
        return ToolsShape.NESTFUL_V2 if _is_flat_parameter_map(parameters) else None
    if _uses_bfcl_types(parameters):
        return ToolsShape.BFCL_FUNCTIONS
    return ToolsShape.OPENAI


def _is_json_schema(parameters: Any) -> bool:
    """A JSON Schema object (CallNavi APISchema, OpenAI, BFCL), not a name -> type map."""
    return isinstance(parameters, dict) and (
        isinstance(parameters.get("type"), str) or "$schema" in parameters or "properties" in parameters
    )


def _is_flat_parameter_map(parameters: dict[str, Any]) -> bool:
    """NESTful v2 style: parameter name -> {type, description}, with no JSON Schema wrapper."""
    return all(isinstance(value, dict) for value in parameters.values())


def _uses_bfcl_types(schema: Any) -> bool:
    if isinstance(schema, dict):
        declared = schema.get("type")
        if isinstance(declared, str) and declared in _BFCL_ONLY_TYPES:
            return True
        return any(_uses_bfcl_types(value) for value in schema.values())
    if isinstance(schema, list):
        return any(_uses_bfcl_types(item) for item in schema)
    return False


# -------------------------------------------------------------------------------------- normalising
def tools_from_document(document: Any, shape: ToolsShape) -> list[Tool]:
    """Canonical tools for a document of a known shape (dispatch to the module owning the shape)."""
    # A one-record JSON Lines file parses as a bare object; only an api_ports document is one.
    is_single_record = isinstance(document, dict) and "api_ports" not in document
    records = [document] if is_single_record else document
    converters: dict[ToolsShape, Callable[[Any], list[Tool]]] = {
        ToolsShape.CANONICAL_SAMPLES: _tools_of_canonical_samples,
        ToolsShape.OPENAI: _from_openai,
        ToolsShape.BFCL_FUNCTIONS: _from_bfcl,
        ToolsShape.BFCL_QUESTIONS: lambda rows: _from_bfcl(_union_of_specs(rows, "function")),
        ToolsShape.NESTFUL_V2: _from_nestful_v2,
        ToolsShape.NESTFUL_V2_SAMPLES: lambda rows: _from_nestful_v2(_union_of_specs(rows, "tools")),
        ToolsShape.NESTFUL_V1: _from_nestful_v1,
        ToolsShape.CALLNAVI_API_PORTS: _from_api_ports,
        ToolsShape.CALLNAVI_API_SCHEMA: _from_api_schema,
    }
    return converters[shape](records)


def _tool_key(tool: Tool) -> str:
    return json.dumps(tool.model_dump(mode="json"), sort_keys=True)


def dedupe_tools(tools: list[Tool]) -> list[Tool]:
    """Keep the first of identical specs; two different specs under one name are both kept, so
    the linter can report the clash instead of one silently winning."""
    seen: set[str] = set()
    unique = []
    for tool in tools:
        key = _tool_key(tool)
        if key not in seen:
            seen.add(key)
            unique.append(tool)
    return unique


def _union_of_specs(records: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The distinct raw specs carried by every record under `key` (question and sample files
    repeat the same function in many records)."""
    seen: set[str] = set()
    specs = []
    for record in records:
        for spec in record.get(key) or []:
            spec_key = json.dumps(spec, sort_keys=True)
            if spec_key not in seen:
                seen.add(spec_key)
                specs.append(spec)
    return specs


def _tools_of_canonical_samples(records: list[dict[str, Any]]) -> list[Tool]:
    return dedupe_tools([tool for record in records for tool in sample_from_dict(record).tools])


def _from_openai(specs: list[dict[str, Any]]) -> list[Tool]:
    from fcbench.catalog.openai import tools_from_openai

    return tools_from_openai(specs)


def _from_bfcl(specs: list[dict[str, Any]]) -> list[Tool]:
    from fcbench.catalog.bfcl import tools_from_bfcl

    return tools_from_bfcl(specs)


def _from_nestful_v2(specs: list[dict[str, Any]]) -> list[Tool]:
    from fcbench.catalog.nestful import tools_from_nestful

    return tools_from_nestful(specs)


def _from_nestful_v1(specs: list[dict[str, Any]]) -> list[Tool]:
    from fcbench.catalog.nestful import tools_from_nestful_v1

    return tools_from_nestful_v1(specs)


def _from_api_ports(document: dict[str, Any] | list[dict[str, Any]]) -> list[Tool]:
    from fcbench.catalog.callnavi import tools_from_api_ports

    # A bare list of ports (copied out of an APIs/ file) is read as the document it came from.
    return tools_from_api_ports(document if isinstance(document, dict) else {"api_ports": document})


def _from_api_schema(specs: list[dict[str, Any]]) -> list[Tool]:
    from fcbench.catalog.callnavi import tools_from_api_schema

    return tools_from_api_schema(specs)


# ------------------------------------------------------------------------------------------- file I/O
def read_json_document(path: Path, bad_lines: list[str] | None = None) -> Any:
    """The file as one JSON value, or as the list of its lines when it is JSON Lines. A bad line
    of a JSON Lines file is skipped (the bad-line policy of fcbench.jsonl) and reported: into
    `bad_lines` as `FILE:LINE: problem`, or as a warning when no list is given."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        text = ""  # one line that is not UTF-8: read line by line below, which names it
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass  # not a single JSON document: try JSON Lines
    records = []
    for line in iter_json_lines(path):
        if line.error:
            problem = f"{path}:{line.line_no}: {line.error}"
            if bad_lines is None:
                logging.getLogger(__name__).warning("skipped %s", problem)
            else:
                bad_lines.append(problem)
            continue
        records.append(line.value)
    return records


def load_tools_file(path: str | Path, bad_lines: list[str] | None = None) -> list[Tool]:
    """Read a tool catalog of any supported shape and return canonical tools (bad lines of a JSON
    Lines catalog as in `read_json_document`)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    if path.suffix == ".py":  # a Python module: its typed functions are the tools
        from fcbench.catalog.python_module import tools_from_python

        return tools_from_python(path).tools
    document = read_json_document(path, bad_lines)
    shape = detect_tools_shape(document)
    if shape is None:
        raise UserError(
            f"{path}: not a tool catalog of a known shape (expected one of: "
            f"{', '.join(s.value for s in ToolsShape)})"
        )
    try:
        return tools_from_document(document, shape)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # A record that looked like the shape but is malformed: a user error naming the file.
        raise UserError(f"{path}: looks like {shape.value} but could not be read: {exc}") from exc
