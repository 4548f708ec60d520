"""OpenAI-style function specs: exact round trip of bare and wrapped forms, and the SDK tool param."""

from __future__ import annotations

import copy
import json

from conftest import REPO
from openai.types.chat import ChatCompletionToolParam
from pydantic import TypeAdapter

from fcbench.catalog.openai import openai_tool_param, tools_from_openai, tools_to_openai
from fcbench.catalog.types import schema_for_type_text
from fcbench.sample import Tool

FIXTURE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"


def _fixture_functions() -> list[dict]:
    first = json.loads(FIXTURE.read_text(encoding="utf-8").splitlines()[0])
    return first["functions"]


def test_bare_specs_round_trip_exactly():
    specs = _fixture_functions()
    tools = tools_from_openai(copy.deepcopy(specs))
    assert [tool.name for tool in tools][:2] == ["Search_Flight_Location", "Location_to_Lat_Long"]
    assert tools[2].parameters["properties"]["cabinClass"]["enum"][0] == "ECONOMY"
    assert all(tool.meta == {} for tool in tools)
    assert tools_to_openai(tools) == specs
    assert tools_to_openai(tools, wrapped=False) == specs


def test_wrapped_specs_round_trip_exactly_and_can_be_unwrapped():
    bare = _fixture_functions()
    wrapped = [{"type": "function", "function": spec} for spec in copy.deepcopy(bare)]
    wrapped[0]["function"]["strict"] = False  # a key beyond name/description/parameters
    tools = tools_from_openai(copy.deepcopy(wrapped))
    assert tools[0].meta == {"openai": {"wrapped": True, "extra": {"strict": False}}}
    assert tools_to_openai(tools) == wrapped
    assert tools_to_openai(tools, wrapped=False)[1:] == bare[1:]


def test_mixed_forms_and_missing_keys_come_back_as_written():
    specs = [
        {"name": "ping"},  # no description, no parameters: the Tool defaults must not be written back
        {"type": "function", "function": {"name": "echo", "description": None, "parameters": {"type": "object"}}},
        {"name": "now", "description": "Current time.", "parameters": {"type": "object", "properties": {}}},
    ]
    tools = tools_from_openai(copy.deepcopy(specs))
    assert tools[0].description == "" and tools[0].meta == {"openai": {"absent": ["description", "parameters"]}}
    assert tools[1].meta["openai"]["extra"] == {"description": None}
    assert tools_to_openai(tools) == specs


def test_tool_param_drops_fcbench_only_keys():
    number = schema_for_type_text("int or float")
    assert number["x-source-type"] == "int or float"
    tool = Tool(
        name="convert",
        description="Convert an amount.",
        parameters={
            "type": "object",
            "x-source-type": "dict",
            "properties": {
                "amount": number,
                "x-api-key": {"type": "string", "x-source-type": "str"},  # a property NAME, kept
                "rates": {"type": "array", "items": {"anyOf": [number, {"type": "null"}]}},
            },
            "required": ["amount"],
        },
        returns={"type": "number"},
        meta={"openai": {"wrapped": True}, "nestful": {"output_parameters": {"result": "float"}}},
    )
    param = openai_tool_param(tool)
    assert param == {
        "type": "function",
        "function": {
            "name": "convert",
            "description": "Convert an amount.",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": ["integer", "number"]},
                    "x-api-key": {"type": "string"},
                    "rates": {"type": "array", "items": {"anyOf": [{"type": ["integer", "number"]}, {"type": "null"}]}},
                },
                "required": ["amount"],
            },
        },
    }
    assert "x-source-type" in tool.parameters["properties"]["amount"]  # the tool itself is untouched
    assert TypeAdapter(ChatCompletionToolParam).validate_python(param) == param


def test_tool_param_of_every_fixture_tool_is_accepted_by_the_sdk_types():
    adapter = TypeAdapter(ChatCompletionToolParam)
    for tool in tools_from_openai(_fixture_functions()):
        param = openai_tool_param(tool)
        assert adapter.validate_python(param)["function"]["name"] == tool.name
        assert param["function"]["parameters"] == tool.parameters  # nothing to strip in real specs


def test_a_returns_schema_becomes_the_tool_returns_and_is_written_back():
    from fcbench.catalog.openai import tool_from_openai, tool_to_openai

    spec = {"name": "add", "description": "Add.", "parameters": {"type": "object", "properties": {}},
            "returns": {"type": "object", "properties": {"result": {"type": "number"}}}}
    tool = tool_from_openai(spec)
    assert tool.returns == spec["returns"] and not tool.meta
    assert tool_to_openai(tool) == spec
    assert "returns" not in openai_tool_param(tool)["function"]
