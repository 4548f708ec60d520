"""MCP `tools/list` answers -> canonical tools (pure).

One catalog tool per MCP tool. What the server says is kept as it is: the input schema becomes the
tool's `parameters`, a declared output schema its `returns`, and everything else the protocol
gives (title, annotations such as `readOnlyHint`, execution, icons, `_meta`) goes in the catalog
record's `mcp` block with the server's name and the tool's name on that server, which the `mcp`
environment reads to route a call.

What cannot be used is listed, never silently dropped (`McpImportNote`):
- an input schema that is not a JSON Schema object schema (not an object, `type` other than
  `object`, or refused by the metaschema of the draft it declares): the tool is not imported;
- an output schema the metaschema refuses: the tool is imported without `returns`;
- a name a function-calling API refuses (`^[a-zA-Z0-9_-]{1,64}$`) is rewritten, and a name another
  server already uses is prefixed with the server's name; the tool keeps its own name on its
  server.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from fcbench.sample import Tool

MAX_NAME_LENGTH = 64  # OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_MCP_KEYS = ("title", "annotations", "execution", "icons", "_meta")  # kept in the catalog record's `mcp` block


@dataclass(frozen=True)
class McpImportNote:
    severity: str  # "error": the tool is not imported; "note": it is, changed as said
    server: str
    tool: str
    message: str

    def describe(self) -> str:
        return f"{self.severity}: {self.server}/{self.tool}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "server": self.server, "tool": self.tool, "message": self.message}


@dataclass
class McpImport:
    tools: list[Tool] = field(default_factory=list)
    notes: list[McpImportNote] = field(default_factory=list)

    @property
    def errors(self) -> list[McpImportNote]:
        return [note for note in self.notes if note.severity == "error"]


def schema_problem(schema: Any, *, object_schema: bool) -> str | None:
    """Why a schema cannot be used as JSON Schema (its declared draft's metaschema, else 2020-12), or None."""
    from jsonschema import exceptions, validators

    if not isinstance(schema, dict):
        return f"not a JSON object but {type(schema).__name__}"
    if object_schema and schema.get("type", "object") != "object":
        return f"an input schema must describe an object, this one has type {schema.get('type')!r}"
    declared = schema.get("$schema")
    if declared is not None and not isinstance(declared, str):
        return "$schema is not a string"
    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path)
        return f"not valid JSON Schema{f' at {where}' if where else ''}: {exc.message}"
    return None


def catalog_name(name: str) -> str:
    """A name function-calling APIs accept, as close to the server's as possible."""
    if _NAME.match(name):
        return name
    cleaned = _NOT_NAME.sub("_", name).strip("_") or "tool"
    return cleaned[:MAX_NAME_LENGTH]


def import_tools(server: str, listing: Iterable[Mapping[str, Any]], taken: set[str] | None = None) -> McpImport:
    """The tools of one server's `tools/list` (wire JSON, every page); `taken` holds the names other
    servers' tools already have (updated here)."""
    taken = taken if taken is not None else set()
    imported = McpImport()
    for raw in listing:
        original = raw.get("name")
        if not isinstance(original, str) or not original:
            imported.notes.append(McpImportNote("error", server, str(original), "a tool without a name: not imported"))
            continue
        problem = schema_problem(raw.get("inputSchema"), object_schema=True)
        if problem is not None:
            imported.notes.append(McpImportNote("error", server, original, f"input schema {problem}: not imported"))
            continue
        name = catalog_name(original)
        if name != original:
            imported.notes.append(McpImportNote("note", server, original, f"renamed {name!r}: function names may hold only "
                                                f"letters, digits, '_' and '-', at most {MAX_NAME_LENGTH}"))
        if name in taken:
            prefixed = catalog_name(f"{server}_{name}")
            imported.notes.append(McpImportNote("note", server, original, f"another server has a tool {name!r}: "
                                                f"imported as {prefixed!r}"))
            name = prefixed
        if name in taken:
            imported.notes.append(McpImportNote("error", server, original, f"the name {name!r} is taken twice: not imported"))
            continue
        taken.add(name)
        returns = raw.get("outputSchema")
        if returns is not None:
            output_problem = schema_problem(returns, object_schema=False)
            if output_problem is not None:
                imported.notes.append(McpImportNote("note", server, original, f"output schema {output_problem}: "
                                                    "imported without one"))
                returns = None
        description = raw.get("description") or ""
        if not description:
            imported.notes.append(McpImportNote("note", server, original, "no description: a model sees only the name"))
        mcp = {"server": server, "tool": original}
        mcp.update({key: copy.deepcopy(raw[key]) for key in _MCP_KEYS if key in raw})
        meta: dict[str, Any] = {"mcp": mcp}
        imported.tools.append(Tool(name=name, description=description, parameters=copy.deepcopy(raw["inputSchema"]),
                                   returns=copy.deepcopy(returns) if isinstance(returns, dict) else None, meta=meta))
    return imported


def read_only(tools: Iterable[Tool]) -> bool:
    """Whether a server says every one of its tools only reads (annotations `readOnlyHint`): then
    its answers depend on the call alone and it needs no per-sample state."""
    tools = list(tools)
    return bool(tools) and all((tool.meta.get("mcp", {}).get("annotations") or {}).get("readOnlyHint") is True
                               for tool in tools)


def catalog_record(tool: Tool) -> dict[str, Any]:
    """A tool as tools.json writes it: an OpenAI-style spec plus `domain` (its server, which stage1
    mixes domains by: edit freely) and the `mcp` block the environment routes by."""
    record: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    if tool.returns is not None:
        record["returns"] = tool.returns
    record["domain"] = tool.meta["mcp"]["server"]
    record["mcp"] = tool.meta["mcp"]
    return record
