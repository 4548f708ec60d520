"""NESTful v1 and v2 adapter and catalog, on the published files as they are."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import EXTERNAL, read_all, through_canonical

from fcbench.catalog.nestful import (
    tool_from_nestful,
    tool_to_nestful,
    tools_from_nestful,
    tools_from_nestful_v1,
    tools_to_nestful,
    tools_to_nestful_v1,
)
from fcbench.formats import FormatError, FormatOptions, Rejected, read_samples, write_samples
from fcbench.references import parse_reference
from fcbench.sample import Call, Difficulty, Sample, path_shape, sample_to_dict
from fcbench.checks.validate import validate_record

NESTFUL = EXTERNAL / "nestful"
V1_DATA = NESTFUL / "v1" / "executable-data.json"
V1_SPEC = NESTFUL / "v1" / "executable-spec.json"
TOY = NESTFUL / "toy_data.jsonl"
ICL = NESTFUL / "icl_examples.json"
PREDICTIONS = sorted((NESTFUL / "predictions").glob("*.jsonl"))
V2_FILES = [TOY, ICL, *PREDICTIONS]
ENCODED_FIELDS = ("output", "tools", "gold_answer")


def raw_records(path: Path) -> list[Any]:
    """The file parsed as plain JSON: one array, or one value per non-blank line."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def round_trip(path: Path, tmp_path: Path, options: FormatOptions = FormatOptions()) -> tuple[Path, list[str]]:
    """Published file -> samples -> canonical JSONL -> samples -> NESTful file of the same kind."""
    samples = through_canonical(read_all(path, "nestful", options), tmp_path)
    written = tmp_path / "written" / path.name
    warnings = write_samples(samples, written, "nestful", options)
    return written, warnings


# ------------------------------------------------------------------ lossless round trips


def test_v1_data_and_spec_round_trip_exactly(tmp_path: Path) -> None:
    spec_out = tmp_path / "spec-out.json"
    written, warnings = round_trip(V1_DATA, tmp_path, FormatOptions(tools_out=spec_out))
    assert warnings == []
    assert raw_records(written) == raw_records(V1_DATA)
    assert raw_records(spec_out) == raw_records(V1_SPEC)


@pytest.mark.parametrize("path", V2_FILES, ids=lambda p: p.name)
def test_v2_file_round_trips_exactly(path: Path, tmp_path: Path) -> None:
    written, warnings = round_trip(path, tmp_path)
    assert warnings == []
    assert raw_records(written) == raw_records(path)


@pytest.mark.parametrize("path", PREDICTIONS, ids=lambda p: p.name)
def test_json_encoded_fields_come_back_as_the_same_strings(path: Path, tmp_path: Path) -> None:
    written, _ = round_trip(path, tmp_path)
    for original, rewritten in zip(raw_records(path), raw_records(written), strict=True):
        for field in ENCODED_FIELDS:
            assert isinstance(rewritten[field], str)
            assert rewritten[field] == original[field]


@pytest.mark.parametrize(
    ("path", "count"),
    [(V1_DATA, 85), (TOY, 4), (ICL, 3)] + [(p, 10 if p.stem.endswith("8bit") else 100) for p in PREDICTIONS],
    ids=lambda value: value.name if isinstance(value, Path) else str(value),
)
def test_every_sample_reads_and_validates(path: Path, count: int) -> None:
    samples = read_all(path, "nestful")
    assert len(samples) == count
    problems = {sample.id: validate_record(sample_to_dict(sample)) for sample in samples}
    assert {sample_id: found for sample_id, found in problems.items() if found} == {}


# ------------------------------------------------------------------ specific values


def test_toy_first_sample_is_a_nine_call_nested_math_path() -> None:
    first = read_all(TOY, "nestful")[0]
    assert first.id == "a5ae1249-7f33-4d40-8ad1-914a0623e3bd"
    assert first.messages == [{"role": "user", "content": first.messages[0]["content"]}]
    assert first.messages[0]["content"].startswith("The population of a town is 10000.")
    assert [[call.label for call in step] for step in first.calls] == [[f"var_{n}"] for n in range(1, 10)]
    shape = path_shape(first)
    assert (shape.difficulty, shape.n_calls, shape.n_steps) == (Difficulty.NESTED, 9, 9)
    assert first.calls[1][0].arguments == {"arg_0": 10000, "arg_1": "$var_1.result$"}
    assert first.answer == 6400.0
    assert first.domain == "math"


def test_toy_code_sample_keeps_json_schema_tools_and_output_references() -> None:
    code = read_all(TOY, "nestful")[1]
    assert code.domain == "code"
    assert [call.label for step in code.calls for call in step] == ["var1", "var2"]
    assert code.calls[1][0].arguments == {"string": "$var1.output_0$"}
    assert code.answer == [-1, 0, 0]
    count_the_word = next(tool for tool in code.tools if tool.name == "count_the_word")
    assert count_the_word.parameters["required"] == ["string"]
    assert count_the_word.returns == {
        "type": "object",
        "properties": {"output_0": count_the_word.returns["properties"]["output_0"]},
    }
    assert count_the_word.returns["properties"]["output_0"]["type"] == "array"


def test_v1_references_are_kept_and_var_result_is_not_a_call() -> None:
    first = read_all(V1_DATA, "nestful")[0]
    assert first.id == "nestful-v1-0001"
    assert first.domain == "rapidapi"
    assert [call.name for call in first.all_calls()] == [
        "SkyScrapperSearchAirport",
        "SkyScrapperSearchAirport",
        "SkyScrapperFlightSearch",
        "TripadvisorSearchLocation",
        "TripadvisorSearchHotels",
    ]
    flight_search = first.calls[2][0]
    assert flight_search.label == "var3"
    assert flight_search.arguments["originSkyId"] == "$var1.skyId$"
    reference = parse_reference(flight_search.arguments["originSkyId"])
    assert reference is not None and (reference.label, reference.path) == ("var1", ("skyId",))
    assert first.meta["nestful"]["result_call"] == {
        "name": "var_result",
        "arguments": {"flights": "$var3$", "hotels": "$var5$"},
    }
    assert len(first.tools) == 39


def test_v1_spec_becomes_json_schema_with_required_and_http_meta() -> None:
    tools = {tool.name: tool for tool in read_all(V1_DATA, "nestful")[0].tools}
    flights = tools["SkyScrapperFlightSearch"]
    assert flights.meta["method"] == "GET"
    assert flights.meta["host"] == "sky-scrapper.p.rapidapi.com"
    assert flights.meta["endpoint"] == "/api/v2/flights/searchFlightsComplete"
    required = flights.parameters["required"]
    assert {"originSkyId", "destinationSkyId", "date"} <= set(required)
    assert "returnDate" not in required
    assert flights.parameters["properties"]["cabinClass"]["enum"] == ["economy", "premium_economy", "business", "first"]
    # `allowed_values` is given to scorers as `enum`, its spelling kept for the way back.
    assert flights.parameters["properties"]["sortBy"]["enum"][0] == "best"
    # Capitalised RapidAPI spellings become JSON Schema types.
    product_search = tools["Real-Time_Product_Search_Search"]
    assert product_search.parameters["properties"]["page"]["type"] == "number"
    assert product_search.parameters["properties"]["page"]["x-source-type"] == "Number"


def test_v1_spec_catalog_round_trips_alone() -> None:
    specs = json.loads(V1_SPEC.read_text(encoding="utf-8"))
    assert len(specs) == 39
    assert tools_to_nestful_v1(tools_from_nestful_v1(specs)) == specs


def test_icl_answers_and_mixed_label_styles() -> None:
    samples = read_all(ICL, "nestful")
    assert [sample.answer for sample in samples[:2]] == [130.0, 75.0]
    assert samples[2].answer == {"Hello": 1, "world!": 1, "How": 1, "are": 1, "you?": 1}
    assert [sample.domain for sample in samples] == ["math", "math", "code"]
    assert samples[0].calls[3][0].arguments == {"arg_0": "$var_2.result$", "arg_1": "$var_3.result$"}


def test_prediction_answers_are_decoded_and_model_output_kept() -> None:
    cot = NESTFUL / "predictions" / "nestful_0-qwen3-8b-8bit-cot.jsonl"
    samples = read_all(cot, "nestful")
    first = samples[0]
    assert first.id == "3a4b7b77-f0a1-4537-8623-432023f545bb"
    assert first.answer == 40.0  # the file says "40.0" (a JSON-encoded number)
    assert samples[19].answer is True  # line 20: "true"
    assert samples[21].answer == "0009"  # line 22: "\"0009\"", a string answer
    assert samples[5].answer == [5, 4]
    assert isinstance(first.meta["nestful"]["extra_fields"]["generated_text"], str)
    assert first.meta["nestful"]["json_encoded"] == ["output", "tools", "gold_answer"]
    assert [[call.label for call in step] for step in first.calls] == [["var_1"], ["var_2"], ["var_3"]]
    # README of the predictions: 79 math samples (basic_functions.py only) and 21 code samples.
    assert Counter(sample.domain for sample in samples) == {"math": 79, "code": 21}


def test_flat_v2_tool_types_outputs_and_required() -> None:
    spec = json.loads(TOY.read_text(encoding="utf-8").splitlines()[0])["tools"][0]
    tool = tool_from_nestful(spec)
    assert tool.name == "add"
    assert tool.parameters["properties"]["arg_0"]["type"] == ["integer", "number"]
    assert tool.parameters["properties"]["arg_0"]["x-source-type"] == "int or float"
    assert tool.parameters["required"] == ["arg_0", "arg_1"]  # every flat parameter is required
    assert tool.returns is not None and list(tool.returns["properties"]) == ["result"]
    assert tool.meta["nestful"]["output_key"] == "output_parameter"  # this file's spelling
    assert tool_to_nestful(tool) == spec
    listed = tool_from_nestful({"name": "min_number", "parameters": {"arg_0": {"type": "list of float"}}})
    assert listed.parameters["properties"]["arg_0"]["items"] == {"type": "number"}
    assert tools_to_nestful([listed]) == [{"name": "min_number", "parameters": {"arg_0": {"type": "list of float"}}}]


def test_all_v2_tool_specs_round_trip_through_the_catalog() -> None:
    n_specs = 0
    for path in V2_FILES:
        for record in raw_records(path):
            specs = json.loads(record["tools"]) if isinstance(record["tools"], str) else record["tools"]
            assert tools_to_nestful(tools_from_nestful(specs)) == specs
            n_specs += len(specs)
    assert n_specs == 3586


# ------------------------------------------------------------------ errors and losses


def test_a_callnavi_file_is_not_nestful() -> None:
    callnavi = next((EXTERNAL / "callnavi" / "Questions").glob("*.json"))
    with pytest.raises(FormatError, match="not a NESTful file"):
        list(read_samples(callnavi, "nestful"))


def test_v1_data_without_a_spec_needs_tools(tmp_path: Path) -> None:
    alone = tmp_path / "executable-data.json"
    shutil.copyfile(V1_DATA, alone)
    with pytest.raises(FormatError, match="--tools"):
        list(read_samples(alone, "nestful"))
    samples = read_all(alone, "nestful", FormatOptions(tools=V1_SPEC))
    assert len(samples) == 85 and len(samples[0].tools) == 39


def test_one_broken_line_is_rejected_and_the_rest_read(tmp_path: Path) -> None:
    lines = TOY.read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "toy_broken.jsonl"
    broken.write_text("\n".join([lines[0], lines[1][:200], *lines[2:]]) + "\n", encoding="utf-8")
    items = list(read_samples(broken, "nestful"))
    rejected = [item for item in items if isinstance(item, Rejected)]
    assert len(rejected) == 1 and rejected[0].source == f"{broken}:2"
    assert "not valid JSON" in rejected[0].reason
    assert [item.id for item in items if isinstance(item, Sample)] == [
        "a5ae1249-7f33-4d40-8ad1-914a0623e3bd",
        "4c457bfb-c6e5-48ce-890d-b6ac4b2f307b",
        "6ae58ffa-f086-4aa5-9bc9-e2beeec685cc",
    ]


def test_a_record_without_input_is_rejected(tmp_path: Path) -> None:
    records = json.loads(ICL.read_text(encoding="utf-8"))
    del records[1]["input"]
    edited = tmp_path / "icl.json"
    edited.write_text(json.dumps(records), encoding="utf-8")
    items = list(read_samples(edited, "nestful"))
    assert [type(item).__name__ for item in items] == ["Sample", "Rejected", "Sample"]
    assert items[1].source == f"{edited}#1"


def test_responses_and_missing_spec_output_are_warned_with_counts(tmp_path: Path) -> None:
    samples = read_all(V1_DATA, "nestful")
    samples[0].calls[0][0] = Call(label="var1", name="SkyScrapperSearchAirport", arguments={"query": "x"}, response={})
    samples[1].calls[0][0].response = None
    warnings = write_samples(samples, tmp_path / "v1.json", "nestful")
    assert sorted(warnings) == [
        "nestful: 2 calls with a response: NESTful cannot store responses (dropped)",
        "nestful: 39 tools not written: NESTful v1 keeps tools in a spec file (give --tools-out)",
    ]
    assert raw_records(tmp_path / "v1.json")[0]["output"][0]["arguments"] == {"query": "x"}


def test_v1_samples_written_as_v2_keep_calls_and_say_what_is_lost(tmp_path: Path) -> None:
    samples = read_all(V1_DATA, "nestful")
    target = tmp_path / "as_v2.jsonl"
    warnings = write_samples(samples, target, "nestful", FormatOptions(nestful_version="v2"))
    assert "nestful: 85 v1 `var_result` pseudo-calls: NESTful v2 has none (dropped)" in warnings
    first_line = raw_records(target)[0]
    assert first_line["sample_id"] == "nestful-v1-0001"
    assert first_line["output"][0]["label"] == "$var1"
    again = read_all(target, "nestful")
    assert [s.calls for s in again] == [s.calls for s in samples]
    assert again[0].tools[0].returns == samples[0].tools[0].returns
