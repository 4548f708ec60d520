"""Tool catalogs: shape detection, loading the published files, and the linter's findings."""

from __future__ import annotations

import json

import pytest

from fcbench.catalog import ToolsShape, detect_tools_shape, load_tools_file
from fcbench.catalog.lint import (
    Code,
    Severity,
    count_by_code,
    description_similarity,
    has_errors,
    lint_tools,
    normalised_name,
    shared_boilerplate,
)
from fcbench.errors import UserError
from fcbench.jsonl import write_json_lines
from fcbench.sample import Call, Sample, Tool, sample_to_dict
from conftest import EXTERNAL

# ------------------------------------------------------------------------------ detection (inline)
OPENAI_BARE = {"name": "get_weather", "description": "Weather for a city.",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
BFCL_FUNCTION = {"name": "area", "description": "Area of a triangle.",
                 "parameters": {"type": "dict", "properties": {"base": {"type": "float"}}, "required": ["base"]}}
NESTFUL_V2_TOOL = {"name": "add", "description": "adds two numbers",
                   "parameters": {"arg_0": {"type": "int or float", "description": "first"}},
                   "output_parameter": {"result": {"type": "int or float"}}}
NESTFUL_V1_TOOL = {"name": "Search", "description": "Search flights.", "method": "GET", "endpoint": "/s",
                   "query_parameters": {"q": {"type": "string", "required": True}}, "output_parameters": {}}
CALLNAVI_PORT = {"name": "getAccountID", "parameters": {"customerID": "string"},
                 "description": "Retrieves the account ID.", "returnParameter": {"AccountID": "string"}}
CALLNAVI_SCHEMA_TOOL = {"name": "getAccountID", "description": "Retrieves the account ID.",
                        "parameters": {"$schema": "http://json-schema.org/schema#", "type": "object",
                                       "properties": {"customerID": {"type": "string"}}},
                        "returnParameter": {"AccountID": "string"}}


@pytest.mark.parametrize(("document", "shape"), [
    ([{"type": "function", "function": OPENAI_BARE}], ToolsShape.OPENAI),
    ([OPENAI_BARE], ToolsShape.OPENAI),
    ([BFCL_FUNCTION], ToolsShape.BFCL_FUNCTIONS),
    ([OPENAI_BARE, BFCL_FUNCTION], ToolsShape.BFCL_FUNCTIONS),  # BFCL spelling anywhere: a BFCL list
    ([{"id": "simple_0", "question": [[{"role": "user", "content": "q"}]], "function": [BFCL_FUNCTION]}],
     ToolsShape.BFCL_QUESTIONS),
    ([NESTFUL_V2_TOOL], ToolsShape.NESTFUL_V2),
    ([{"sample_id": "s", "input": "q", "output": [], "tools": [NESTFUL_V2_TOOL]}], ToolsShape.NESTFUL_V2_SAMPLES),
    ([NESTFUL_V1_TOOL], ToolsShape.NESTFUL_V1),
    ({"api_ports": [CALLNAVI_PORT]}, ToolsShape.CALLNAVI_API_PORTS),
    ([CALLNAVI_PORT], ToolsShape.CALLNAVI_API_PORTS),
    ([CALLNAVI_SCHEMA_TOOL], ToolsShape.CALLNAVI_API_SCHEMA),
    ({"id": "s1", "messages": [], "tools": [], "calls": []}, ToolsShape.CANONICAL_SAMPLES),  # one-line JSONL
])
def test_detects_each_published_shape(document, shape):
    assert detect_tools_shape(document) is shape


@pytest.mark.parametrize("document", [
    [], {}, [1, 2], {"api_ports": "x"}, [{"description": "no name"}],
    [NESTFUL_V1_TOOL, CALLNAVI_SCHEMA_TOOL],  # two publishers mixed: nobody's shape
    [{"id": "q", "ground_truth": {"API": []}}],  # CallNavi questions hold no tools
])
def test_unknown_shapes_are_not_guessed(document):
    assert detect_tools_shape(document) is None


# ----------------------------------------------------------------------------- loading real files
@pytest.mark.parametrize(("relative", "count"), [
    ("callnavi/APISchema/bank.json", 96),
    ("callnavi/APIs/telecommunications.json", 101),
    ("nestful/v1/executable-spec.json", 39),
    ("bfcl/multi_turn_func_doc/math_api.json", 17),
    ("nestful/toy_data.jsonl", 38),  # distinct tool specs over the samples
    ("bfcl/BFCL_v4_simple_python.json", 400),
])
def test_loads_published_catalogs(relative, count):
    tools = load_tools_file(EXTERNAL / relative)
    assert len(tools) == count
    assert all(isinstance(tool, Tool) and tool.name for tool in tools)


def test_callnavi_catalog_is_normalised_to_json_schema():
    tools = {tool.name: tool for tool in load_tools_file(EXTERNAL / "callnavi/APIs/bank.json")}
    account = tools["getAccountID"]
    assert account.parameters["properties"]["customerID"]["type"] == "string"
    assert account.description == "Retrieves the unique account ID associated with a given customer ID."


def test_canonical_samples_give_the_union_of_their_tools(tmp_path):
    weather = Tool(name="weather", description="Weather for a city.")
    time_v1 = Tool(name="time", description="Current time.")
    time_v2 = Tool(name="time", description="Current time in a zone.")
    samples = [
        Sample(id="a", messages=[{"role": "user", "content": "q"}], tools=[weather, time_v1],
               calls=[[Call(label="c1", name="weather")]]),
        Sample(id="b", messages=[{"role": "user", "content": "q"}], tools=[weather, time_v2], calls=[]),
    ]
    path = tmp_path / "samples.jsonl"
    write_json_lines(path, [sample_to_dict(sample) for sample in samples])
    tools = load_tools_file(path)
    # identical specs merge; two different specs under one name both stay, for the linter to flag
    assert [tool.description for tool in tools] == ["Weather for a city.", "Current time.", "Current time in a zone."]
    assert [f.code for f in lint_tools(tools) if f.code is Code.DUPLICATE_TOOL_NAME] == [Code.DUPLICATE_TOOL_NAME]


def test_unknown_shape_and_mostly_broken_files_are_user_errors_naming_the_file(tmp_path):
    with pytest.raises(UserError, match=r"Questions/bank\.json: not a tool catalog"):
        load_tools_file(EXTERNAL / "callnavi/Questions/bank.json")
    broken = tmp_path / "tools.jsonl"
    broken.write_text(json.dumps(BFCL_FUNCTION) + "\n{not json\n[1,\n", encoding="utf-8")  # 2 bad lines of 3
    with pytest.raises(UserError, match=r"tools\.jsonl: 2 of 3 lines are unreadable .* first: line 2: not valid JSON"):
        load_tools_file(broken)
    with pytest.raises(UserError, match="no such file"):
        load_tools_file(tmp_path / "missing.json")


# ---------------------------------------------------------------------------------- lint (inline)
def _tool(name: str, description: str = "A description long enough to pass.", **parameters) -> Tool:
    schema = {"type": "object", "properties": parameters.pop("properties", {})}
    schema.update(parameters)
    return Tool(name=name, description=description, parameters=schema)


def _codes(tools: list[Tool]) -> list[tuple[str, str | None, Code]]:
    return [(f.tool, f.parameter, f.code) for f in lint_tools(tools)]


def test_clean_tool_has_no_findings():
    tool = _tool("get_weather", properties={"city": {"type": "string", "description": "City name."}},
                 required=["city"])
    assert lint_tools([tool]) == []


def test_description_findings():
    assert _codes([_tool("a", "")]) == [("a", None, Code.MISSING_DESCRIPTION)]
    assert _codes([_tool("b", "Gets it.")]) == [("b", None, Code.SHORT_DESCRIPTION)]
    finding = lint_tools([_tool("a", "  ")])[0]
    assert finding.severity is Severity.ERROR and finding.as_dict()["severity"] == "error"


def test_parameter_findings_including_nested_objects():
    tool = _tool("book", properties={
        "when": {"type": "string"},
        "anything": {"description": "Any value."},
        "from_bfcl": {"description": "Converted from BFCL any.", "x-source-type": "any"},
        "choice": {"enum": ["a", "b"], "description": "One of two."},
        "filters": {"type": "object", "description": "Filters.", "required": ["max_price"],
                    "properties": {"min_price": {"type": "number", "description": "Lowest."}}},
    }, required=["when", "guests"])
    assert _codes([tool]) == [
        ("book", "when", Code.PARAMETER_WITHOUT_DESCRIPTION),
        ("book", "anything", Code.UNTYPED_PARAMETER),
        ("book", "from_bfcl", Code.UNTYPED_PARAMETER),
        ("book", "filters.max_price", Code.REQUIRED_NOT_IN_PROPERTIES),
        ("book", "guests", Code.REQUIRED_NOT_IN_PROPERTIES),
    ]


def test_parameter_names_differing_only_by_case_or_separator():
    described = {"type": "string", "description": "An id."}
    tool = _tool("t", properties={"accountID": described, "accountId": described, "account_id": described,
                                  "name": described})
    findings = lint_tools([tool])
    assert [(f.parameter, f.code) for f in findings] == [("accountID", Code.SIMILAR_PARAMETER_NAMES)]
    assert "accountID, accountId, account_id" in findings[0].message
    assert normalised_name("Account-Id") == "accountid"


def test_duplicate_tool_names_and_overlapping_tools():
    first = _tool("getAccountID", "Retrieves the unique account ID associated with a given customer ID.",
                  properties={"customerID": {"type": "string", "description": "Customer."}})
    second = _tool("getCustomerID", "Retrieves the unique Customer ID associated with a given account ID.",
                   properties={"customerID": {"type": "string", "description": "Customer."}})
    other_parameters = _tool("getCustomerIDByName", second.description,
                             properties={"name": {"type": "string", "description": "Name."}})
    duplicate = _tool("getAccountID", "Another spec with the same name, for a test.")
    findings = lint_tools([first, second, other_parameters, duplicate])
    assert [(f.tool, f.code) for f in findings] == [
        ("getAccountID", Code.DUPLICATE_TOOL_NAME),
        ("getAccountID", Code.OVERLAPPING_TOOLS),
    ]
    assert "'getCustomerID'" in findings[1].message
    assert has_errors(findings)
    assert count_by_code(findings) == {"duplicate-tool-name": 1, "overlapping-tools": 1}


def test_one_changed_word_is_not_an_overlap():
    # Character similarity is high (94-96) but the meaning is opposite: below the 97 threshold.
    assert 90 < description_similarity("Enables VoLTE for the line.", "Disables VoLTE for the line.") < 97
    assert description_similarity("", "") == 100


def test_shared_boilerplate_is_whole_sentences_only():
    prefix = "This tool belongs to the Math API. Tool description:"
    assert shared_boilerplate([f"{prefix} Find the max.", f"{prefix} Find the min."]) == prefix
    assert shared_boilerplate(["Find the maximum value.", "Find the minimum value."]) == ""


# ------------------------------------------------------------------------------ lint (real files)
def test_callnavi_bank_overlap_is_found():
    tools = load_tools_file(EXTERNAL / "callnavi/APISchema/bank.json")
    findings = lint_tools(tools)
    overlaps = [f for f in findings if f.code is Code.OVERLAPPING_TOOLS]
    assert [(f.tool, f.message.split("'")[1]) for f in overlaps] == [("getAccountID", "getCustomerID")]
    assert count_by_code(findings) == {"parameter-without-description": 159, "overlapping-tools": 1}
    assert not has_errors(findings)


def test_bfcl_multi_turn_boilerplate_does_not_make_max_and_min_overlap():
    tools = load_tools_file(EXTERNAL / "bfcl/multi_turn_func_doc/math_api.json")
    assert {"max_value", "min_value"} <= {tool.name for tool in tools}
    assert lint_tools(tools) == []
    vehicle = lint_tools(load_tools_file(EXTERNAL / "bfcl/multi_turn_func_doc/vehicle_control.json"))
    assert [(f.tool, f.code) for f in vehicle] == [("get_outside_temperature_from_google", Code.OVERLAPPING_TOOLS)]


def test_bfcl_required_not_declared_and_any_typed_parameters():
    parallel = lint_tools(load_tools_file(EXTERNAL / "bfcl/BFCL_v4_parallel.json"))
    undeclared = [f.parameter for f in parallel if f.code is Code.REQUIRED_NOT_IN_PROPERTIES]
    assert undeclared == ["population.adults", "population.children", "population.singles"]
    multiple = lint_tools(load_tools_file(EXTERNAL / "bfcl/BFCL_v4_multiple.json"))
    untyped = [(f.tool, f.parameter) for f in multiple if f.code is Code.UNTYPED_PARAMETER]
    assert untyped == [("random_forest.train", "data")]


def test_nestful_v1_free_text_types_are_untyped():
    findings = lint_tools(load_tools_file(EXTERNAL / "nestful/v1/executable-spec.json"))
    assert [(f.tool, f.parameter) for f in findings if f.code is Code.UNTYPED_PARAMETER] == [
        ("WeatherAPI.com_Forecast_Weather_API", "dt"),
        ("Spotify_Scraper_List_Artist_Albums_Singles", "type"),
    ]


def test_every_published_catalog_loads_and_lints():
    catalogs = sorted((EXTERNAL / "callnavi").glob("API*/*.json")) + sorted(
        (EXTERNAL / "bfcl/multi_turn_func_doc").glob("*.json"))
    assert len(catalogs) == 32
    for catalog in catalogs:
        findings = lint_tools(load_tools_file(catalog))
        assert all(f.tool and f.message for f in findings), catalog


def test_a_broken_line_of_a_json_lines_catalog_is_skipped_and_named(tmp_path):
    from typer.testing import CliRunner

    from fcbench.cli import app

    from pathlib import Path

    tools = json.loads((Path(__file__).resolve().parents[3] / "datasets" / "travel" / "tools.json").read_text())
    path = tmp_path / "tools.jsonl"
    path.write_text("\n".join([json.dumps(tool) for tool in tools[:3]] + ["{broken"] +
                              [json.dumps(tool) for tool in tools[3:6]]) + "\n")
    bad: list[str] = []
    assert [tool.name for tool in load_tools_file(path, bad)] == [tool["function"]["name"] if "function" in tool
                                                                  else tool["name"] for tool in tools[:6]]
    assert bad == [f"{path}:4: not valid JSON (Expecting property name enclosed in double quotes at column 2)"]
    result = CliRunner().invoke(app, ["lint-tools", str(path), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["unreadable_lines"] == bad
    assert CliRunner().invoke(app, ["lint-tools", str(path), "--strict"]).exit_code == 1
