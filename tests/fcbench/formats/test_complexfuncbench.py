"""ComplexFuncBench adapter: the hand-written fixture (modelled on the paper's Sydney-Melbourne
annotation example) read, written back, and checked field by field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXTERNAL, REPO, read_all, through_canonical

from fcbench.formats import FormatError, Rejected, read_samples, write_samples
from fcbench.sample import Call, Difficulty, Sample, Tool, path_shape, sample_to_dict
from fcbench.checks.validate import validate_record

# The bundled example of the README doubles as this adapter's fixture.
FIXTURE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"


def _strict(value: object) -> str:
    """JSON text with sorted keys: equal only when values AND types agree (True != 1, 1 != 1.0)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _by_id(samples: list[Sample]) -> dict[str, Sample]:
    return {sample.id: sample for sample in samples}


def _write_items(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def test_fixture_goes_through_canonical_and_back_unchanged(tmp_path):
    samples = read_all(FIXTURE, "complexfuncbench")
    assert [s.id for s in samples] == ["Cross-12", "Hotels-7", "Car-Rental-3"]
    again = through_canonical(samples, tmp_path)
    out = tmp_path / "back.jsonl"
    warnings = write_samples(again, out, "complexfuncbench")
    assert warnings == []
    assert [_strict(item) for item in _lines(out)] == [_strict(item) for item in _lines(FIXTURE)]


def test_sydney_melbourne_item_is_a_four_step_path_with_responses():
    trip = _by_id(read_all(FIXTURE, "complexfuncbench"))["Cross-12"]
    assert trip.domain == "Cross"
    assert trip.messages[0]["role"] == "user" and "Royal Botanic Gardens" in trip.messages[0]["content"]
    assert len(trip.messages) == 1
    assert [[call.name for call in step] for step in trip.calls] == [
        ["Search_Flight_Location", "Search_Flight_Location"],
        ["Location_to_Lat_Long"],
        ["Search_Flights"],
        ["Search_Hotels_By_Coordinates"],
    ]
    assert [call.label for call in trip.all_calls()] == ["call_1", "call_2", "call_3", "call_4", "call_5"]
    sydney, melbourne = trip.calls[0]
    assert sydney.arguments == {"query": "Sydney"} and melbourne.arguments == {"query": "Melbourne"}
    assert sydney.response["data"][0]["id"] == "SYD.AIRPORT"
    assert melbourne.response["data"][0]["id"] == "MEL.CITY"
    flights = trip.calls[2][0]
    # ComplexFuncBench arguments are the literal values copied from earlier responses.
    assert flights.arguments["fromId"] == sydney.response["data"][0]["id"]
    assert flights.arguments["toId"] == melbourne.response["data"][0]["id"]
    assert flights.response["data"]["flightOffers"][0]["priceBreakdown"]["total"]["units"] == 198
    location = trip.calls[1][0].response["data"][0]["geometry"]["location"]
    hotel_args = trip.calls[3][0].arguments
    assert (hotel_args["latitude"], hotel_args["longitude"]) == (location["lat"], location["lng"]) == (-37.8303689, 144.9796056)
    shape = path_shape(trip)
    # literal arguments: no call reads another through a reference, so the path is "multiple"
    assert shape.difficulty is Difficulty.MULTIPLE
    assert (shape.n_steps, shape.n_calls, shape.nesting_depth) == (4, 5, 0)
    assert trip.meta["complexfuncbench"]["final_response"].startswith("The cheapest economy flight")
    assert trip.provenance.source_format == "complexfuncbench"


def test_tools_are_json_schema_function_specs():
    trip = _by_id(read_all(FIXTURE, "complexfuncbench"))["Cross-12"]
    tools = {tool.name: tool for tool in trip.tools}
    assert list(tools) == ["Search_Flight_Location", "Location_to_Lat_Long", "Search_Flights",
                           "Search_Hotels_By_Coordinates", "Get_Min_Price"]
    search = tools["Search_Flights"]
    assert search.parameters["required"] == ["fromId", "toId", "departDate"]
    assert search.parameters["properties"]["sort"]["enum"] == ["BEST", "CHEAPEST", "FASTEST"]
    assert search.meta == {}  # bare specs with all usual keys need nothing remembered


def test_single_domain_and_single_call_items():
    samples = _by_id(read_all(FIXTURE, "complexfuncbench"))
    hotels, cars = samples["Hotels-7"], samples["Car-Rental-3"]
    assert hotels.domain == "Hotels" and path_shape(hotels).difficulty is Difficulty.MULTIPLE
    assert hotels.calls[1][0].arguments["dest_id"] == hotels.calls[0][0].response["data"][0]["dest_id"] == "2390"
    assert cars.domain == "Car-Rental" and path_shape(cars).difficulty is Difficulty.SINGLE
    assert cars.calls[0][0].response["data"]["count"] == 2
    assert sample_to_dict(cars)["difficulty"] == "single"


def test_every_sample_validates():
    for sample in read_all(FIXTURE, "complexfuncbench"):
        assert validate_record(sample_to_dict(sample)) == [], sample.id


def _built_sample(second_arguments: dict) -> Sample:
    return Sample(
        id="Flights-1",
        messages=[{"role": "user", "content": "Fly me from Sydney."}],
        tools=[Tool(name="Search_Flight_Location"), Tool(name="Search_Flights")],
        calls=[
            [Call(label="call_1", name="Search_Flight_Location", arguments={"query": "Sydney"},
                  response={"status": True, "data": [{"id": "SYD.AIRPORT"}, {"id": "SYD.CITY"}]})],
            [Call(label="call_2", name="Search_Flights", arguments=second_arguments)],
        ],
    )


def test_writer_resolves_references_from_recorded_responses(tmp_path):
    sample = _built_sample({"fromId": "$call_1.data[0].id$", "via": ["$call_1.data[-1].id$"], "toId": "MEL.CITY"})
    out = tmp_path / "out.jsonl"
    warnings = write_samples([sample], out, "complexfuncbench")
    [item] = _lines(out)
    assert item["conversations"][3]["function_call"][0]["arguments"] == {
        "fromId": "SYD.AIRPORT", "via": ["SYD.CITY"], "toId": "MEL.CITY"}
    assert "2 references replaced by the value from the recorded response" in warnings[0]
    assert not any("could not be resolved" in w for w in warnings)
    # the unanswered last call and the missing final answer are reported, not hidden
    assert "1 calls without a recorded observation" in warnings
    assert item["conversations"][-1]["role"] == "assistant" and "function_call" in item["conversations"][-1]


def test_writer_keeps_unresolvable_references_literally_and_counts_them(tmp_path):
    sample = _built_sample({"fromId": "$call_1.data[7].id$", "toId": "$call_9.id$"})
    out = tmp_path / "out.jsonl"
    warnings = write_samples([sample], out, "complexfuncbench")
    [item] = _lines(out)
    assert item["conversations"][3]["function_call"][0]["arguments"] == {
        "fromId": "$call_1.data[7].id$", "toId": "$call_9.id$"}
    assert any(w.startswith("2 references to earlier outputs could not be resolved") for w in warnings)


def test_broken_line_is_rejected_with_its_line_number(tmp_path):
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], '{"id": "Hotels-9", "conversations": [', *lines[1:]]) + "\n", encoding="utf-8")
    items = list(read_samples(broken, "complexfuncbench"))
    rejected = [item for item in items if isinstance(item, Rejected)]
    assert [item.id for item in items if isinstance(item, Sample)] == ["Cross-12", "Hotels-7", "Car-Rental-3"]
    assert len(rejected) == 1
    assert rejected[0].source == f"{broken}:2"
    assert rejected[0].reason.startswith("not valid JSON")


def test_a_bfcl_file_is_refused_as_a_whole():
    # One clear error instead of 400 identical rejects: the user picked the wrong format.
    bfcl = EXTERNAL / "bfcl" / "BFCL_v4_simple_python.json"
    with pytest.raises(FormatError, match=r"BFCL_v4_simple_python\.json: not a ComplexFuncBench file"):
        list(read_samples(bfcl, "complexfuncbench"))


def _fixture_item(item_id: str) -> dict:
    return next(item for item in _lines(FIXTURE) if item["id"] == item_id)


def test_item_with_mismatched_observation_is_rejected(tmp_path):
    item = _fixture_item("Cross-12")
    item["conversations"][2]["content"].pop()  # two parallel calls, one response
    path = _write_items(tmp_path / "bad.jsonl", [_fixture_item("Hotels-7"), item])
    [good, bad] = list(read_samples(path, "complexfuncbench"))
    assert isinstance(good, Sample)
    assert isinstance(bad, Rejected) and bad.source.endswith(":2")
    assert bad.reason == "conversations[2].content must list one response per call of the step (2)"


def test_unusual_but_valid_items_survive_exactly(tmp_path):
    """Extra keys, a null response and a path cut before its observation all come back as written."""
    extra_keys = _fixture_item("Hotels-7")
    extra_keys["conversations"][1]["content"] = None  # an assistant call turn that also says content: null
    extra_keys["source"] = "annotator-3"
    null_response = _fixture_item("Car-Rental-3")
    null_response["conversations"][2]["content"] = [None]
    unanswered = _fixture_item("Car-Rental-3")
    unanswered["id"] = "Car-Rental-4"
    del unanswered["conversations"][2:]
    path = _write_items(tmp_path / "odd.jsonl", [extra_keys, null_response, unanswered])
    samples = read_all(path, "complexfuncbench")
    assert samples[0].meta["complexfuncbench"]["extra"] == {"source": "annotator-3"}
    assert "response" in samples[1].calls[0][0].model_fields_set and samples[1].calls[0][0].response is None
    assert "response" not in samples[2].calls[0][0].model_fields_set
    out = tmp_path / "out.jsonl"
    warnings = write_samples(through_canonical(samples, tmp_path), out, "complexfuncbench")
    assert [_strict(item) for item in _lines(out)] == [_strict(item) for item in (extra_keys, null_response, unanswered)]
    assert "1 calls without a recorded observation" in warnings
    assert any(w.startswith("1 samples without a final assistant answer") for w in warnings)


def test_later_user_turn_is_rejected_not_dropped(tmp_path):
    item = _fixture_item("Hotels-7")
    item["conversations"].insert(3, {"role": "user", "content": "Actually, make it two adults."})
    [rejected] = list(read_samples(_write_items(tmp_path / "multi.jsonl", [item]), "complexfuncbench"))
    assert isinstance(rejected, Rejected)
    assert "conversations[3]: unexpected turn (role 'user')" in rejected.reason
