"""MCP `tools/list` answers -> catalog tools (pure), on the real servers' answers (notes/mcp_scripts)
and on broken ones: what cannot be used is listed with why, never dropped silently."""

from __future__ import annotations

from fcbench.catalog.mcp import catalog_record, catalog_name, import_tools, read_only, schema_problem

TIME_TOOLS = [
    {"name": "get_current_time", "description": "Get current time in a specific timezones",
     "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]},
     "outputSchema": {"type": "object", "properties": {"datetime": {"type": "string"}}, "required": ["datetime"]},
     "annotations": {"readOnlyHint": True, "destructiveHint": False}},
    {"name": "convert_time", "description": "Convert time between timezones",
     "inputSchema": {"type": "object", "properties": {"time": {"type": "string"}}, "required": ["time"]},
     "outputSchema": {"$defs": {"T": {"type": "object", "properties": {"datetime": {"type": "string"}}}},
                      "type": "object", "properties": {"target": {"$ref": "#/$defs/T"}}},
     "annotations": {"readOnlyHint": True}},
]


def test_schemas_and_annotations_are_kept_as_the_server_gives_them():
    imported = import_tools("time", TIME_TOOLS)
    assert not imported.notes
    get, convert = imported.tools
    assert get.parameters == TIME_TOOLS[0]["inputSchema"] and convert.returns == TIME_TOOLS[1]["outputSchema"]
    assert get.meta["mcp"] == {"server": "time", "tool": "get_current_time",
                               "annotations": {"readOnlyHint": True, "destructiveHint": False}}
    record = catalog_record(get)
    assert record["domain"] == "time" and record["mcp"]["server"] == "time" and record["returns"]["required"] == ["datetime"]
    assert read_only(imported.tools)  # every tool read-only: a stateless server


def test_an_invalid_input_schema_is_listed_not_imported():
    broken = [
        {"name": "bad_type", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer-ish"}}}},
        {"name": "not_object", "inputSchema": {"type": "array", "items": {}}},
        {"name": "no_schema"},
        {"name": "ok", "description": "fine", "inputSchema": {"type": "object", "properties": {}},
         "outputSchema": {"type": "object", "properties": {"x": {"minimum": "zero"}}}},
    ]
    imported = import_tools("broken", broken)
    assert [tool.name for tool in imported.tools] == ["ok"]
    assert imported.tools[0].returns is None  # an output schema the metaschema refuses: imported without it
    errors = {note.tool: note.message for note in imported.errors}
    assert set(errors) == {"bad_type", "not_object", "no_schema"}
    assert "not valid JSON Schema at properties/n/type" in errors["bad_type"]
    assert "must describe an object" in errors["not_object"]
    assert any(note.tool == "ok" and "output schema" in note.message for note in imported.notes)
    assert not read_only(imported.tools)  # no readOnlyHint: treated as stateful


def test_names_a_function_api_refuses_are_rewritten_and_collisions_prefixed():
    assert catalog_name("files.read/v2") == "files_read_v2" and catalog_name("ok-name_1") == "ok-name_1"
    taken: set[str] = set()
    first = import_tools("memory", [{"name": "search", "inputSchema": {"type": "object"}}], taken)
    second = import_tools("files", [{"name": "search", "inputSchema": {"type": "object"}},
                                    {"name": "list.all", "inputSchema": {"type": "object"}}], taken)
    assert [tool.name for tool in first.tools] == ["search"]
    assert [tool.name for tool in second.tools] == ["files_search", "list_all"]
    assert [tool.meta["mcp"]["tool"] for tool in second.tools] == ["search", "list.all"]  # the name on its server
    assert {note.message.split(":")[0] for note in second.notes} >= {"another server has a tool 'search'"}


def test_schema_problem_reads_the_declared_draft():
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"n": {"type": "number", "exclusiveMinimum": 0}}}
    assert schema_problem(draft7, object_schema=True) is None
    assert schema_problem("not a schema", object_schema=False) == "not a JSON object but str"
