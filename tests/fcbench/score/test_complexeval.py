"""ComplexEval: the multi-step protocol driven by scripted models on the bundled ComplexFuncBench
example (3 samples: Cross-12 with 4 steps / 5 calls, Hotels-7 with 2, Car-Rental-3 with 1)."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from fcbench.environments.recorded import UNKNOWN_CALL_RESPONSE, RecordedEnvironment, RecordedStore
from fcbench.formats import Rejected, read_samples
from fcbench.sample import Call, Sample, Tool
from fcbench.score import METRICS
from fcbench.score.complexeval import (
    COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS,
    ERROR_TYPES,
    ComplexEvalOptions,
    ComplexEvalSession,
    ResponseJudgeInput,
    SessionFinished,
    naive_completeness_judge,
    naive_correctness_judge,
    parameter_type,
    response_match_layer,
    run_trajectory,
    score_complexeval,
    score_trajectory,
    typed_difference,
    typed_difference_layer,
    value_in_text,
)
from fcbench.score.matching import MatchLayer, match_call

EXAMPLE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"


@cache
def _samples() -> tuple[Sample, ...]:
    items = list(read_samples(Path(EXAMPLE), "complexfuncbench"))
    assert not [item for item in items if isinstance(item, Rejected)]
    return tuple(items)


def sample(sample_id: str) -> Sample:
    return copy.deepcopy(next(s for s in _samples() if s.id == sample_id))


def gold_turns(s: Sample) -> list[list[dict[str, Any]]]:
    """A perfect model: each gold step as one turn of calls, written as a model would."""
    return [[{"name": c.name, "arguments": dict(c.arguments)} for c in step] for step in s.calls]


def final_text(s: Sample) -> str:
    return s.meta["complexfuncbench"]["final_response"]


def with_arguments(s: Sample, step: int, index: int = 0, **changes: Any) -> list[list[dict[str, Any]]]:
    """The gold turns with one call's arguments changed (a value None removes the argument)."""
    turns = gold_turns(s)
    arguments = turns[step][index]["arguments"]
    for name, value in changes.items():
        if value is None:
            arguments.pop(name)
        else:
            arguments[name] = value
    return turns


# --------------------------------------------------------------------------------- scripted models


def test_perfect_model_succeeds_on_every_example_sample() -> None:
    trajectories = {s.id: gold_turns(s) + [final_text(s)] for s in _samples()}
    report = score_complexeval(_samples(), trajectories)
    assert report.summary["n"] == 3
    assert report.summary["success_rate"] == 1.0
    assert report.summary["call_accuracy"] == 1.0
    assert report.summary["errors"] == {kind: 0 for kind in ERROR_TYPES}
    assert [item["n_gold_calls"] for item in report.items] == [5, 2, 1]
    assert set(report.summary["by_domain"]) == {"Cross", "Hotels", "Car-Rental"}
    assert all(d["success_rate"] == 1.0 for d in report.summary["by_domain"].values())


def test_session_answers_matched_calls_with_the_gold_responses_and_advances_step_by_step() -> None:
    s = sample("Cross-12")
    session = ComplexEvalSession(s)
    assert [c.label for c in session.current_gold] == ["call_1", "call_2"]
    responses = session.respond(gold_turns(s)[0])
    assert responses == [s.calls[0][0].response, s.calls[0][1].response]
    assert responses[1]["data"][0]["id"] == "MEL.CITY"
    assert [c.label for c in session.current_gold] == ["call_3"]
    for turn in gold_turns(s)[1:]:
        session.respond(turn)
    assert not session.finished  # every gold call matched, but the model has not answered yet
    session.stop(final_text(s))
    assert session.finished and session.record.success
    assert session.record.matched_labels == ["call_1", "call_2", "call_3", "call_4", "call_5"]
    with pytest.raises(SessionFinished):
        session.respond(gold_turns(s)[0])


def test_parallel_calls_in_any_order_match_and_responses_follow_the_model_order() -> None:
    s = sample("Cross-12")
    turns = gold_turns(s)
    turns[0].reverse()  # Melbourne first, then Sydney
    session = ComplexEvalSession(s)
    responses = session.respond(turns[0])
    assert responses == [s.calls[0][1].response, s.calls[0][0].response]
    verdict = score_trajectory(s, turns + [final_text(s)])
    assert verdict.success and verdict.call_accuracy == 1.0


def test_model_that_stops_early() -> None:
    s = sample("Cross-12")
    verdict = score_trajectory(s, gold_turns(s)[:2] + ["Here is what I found."])
    assert not verdict.success
    assert verdict.error_type == "stop_early"
    assert verdict.n_correct_calls == 3 and verdict.call_accuracy == pytest.approx(3 / 5)
    assert verdict.record.remaining_labels == ["call_4", "call_5"]
    assert verdict.completeness == 1  # answered, but not everything asked for was fetched


def test_model_that_stops_without_text_stops_early_with_completeness_zero() -> None:
    s = sample("Hotels-7")
    verdict = score_trajectory(s, gold_turns(s)[:1] + [[]])
    assert verdict.error_type == "stop_early" and verdict.record.stop_reason == "no_calls"
    assert verdict.completeness == 0 and verdict.correctness == 0


def test_model_calling_a_wrong_function_gets_the_fixed_error_and_the_session_ends() -> None:
    s = sample("Hotels-7")
    wrong = [{"name": "Search_Hotels", "arguments": {"dest_id": "2390", "search_type": "district",
                                                      "arrival_date": "2025-03-03", "departure_date": "2025-03-06"}}]
    session = ComplexEvalSession(s)
    assert session.respond(wrong) == [UNKNOWN_CALL_RESPONSE]
    assert session.finished and session.record.stop_reason == "off_path"
    verdict = score_trajectory(s, [wrong] + gold_turns(s) + ["done"])  # later turns are never asked for
    assert verdict.error_type == "func_error"
    assert verdict.n_correct_calls == 0
    assert verdict.record.judgements()[0].to_json()["error_type"] == "func_error"


def test_unknown_function_is_a_format_error_the_model_may_correct() -> None:
    s = sample("Hotels-7")
    typo = [{"name": "Search_Hotel_Destinations", "arguments": {"query": "Shibuya"}}]
    session = ComplexEvalSession(s)
    assert session.respond(typo) == [{"error": "Function Search_Hotel_Destinations is not defined in the function list."}]
    assert not session.finished  # a format error is fed back, not fatal
    verdict = score_trajectory(s, [typo] + gold_turns(s) + ["done"])
    assert verdict.success  # corrected, so forgiven
    assert verdict.record.turns[0][0].error_type == "func_error"


def test_model_omitting_a_parameter() -> None:
    s = sample("Car-Rental-3")
    # currency_code is optional in the schema, so the call runs but does not match the gold call.
    verdict = score_trajectory(s, with_arguments(s, 0, currency_code=None) + ["done"])
    assert verdict.error_type == "param_missing"
    assert verdict.error_detail == "Missing parameter currency_code in prediction."
    # pick_up_date is required: the format check answers with ComplexEval's message.
    session = ComplexEvalSession(s)
    [response] = session.respond(with_arguments(s, 0, pick_up_date=None)[0])
    assert response["error"].startswith("Function Search_Car_Rentals requires parameters")
    assert "['pick_up_date']" in response["error"]
    assert session.record.turns[0][0].error_type == "param_missing"
    session.stop("I could not search.")
    assert session.record.error_type == "param_missing"  # the last call turn failed


def test_model_hallucinating_a_parameter_or_a_value() -> None:
    s = sample("Cross-12")
    # A parameter the schema does not have.
    extra = with_arguments(s, 2, maxPrice=300)[:3]  # the format error is fed back; the model gives up
    verdict = score_trajectory(s, extra + ["No flight found."])
    assert verdict.error_type == "hallucination" and verdict.record.stop_reason == "final_text"
    assert verdict.record.turns[2][0].response == {"error": "Function Search_Flights does not have parameters ['maxPrice']."}
    # A schema parameter the gold call does not use.
    assert score_trajectory(s, with_arguments(s, 2, returnDate="2024-11-20") + ["x"]).error_type == "hallucination"
    # A wrong value found nowhere in the conversation: invented, not misread.
    invented = score_trajectory(s, with_arguments(s, 2, departDate="2024-11-16") + ["x"])
    assert invented.error_type == "hallucination"
    assert invented.error_detail == "Parameter departDate value is not grounded in the conversation."


def test_model_with_a_wrong_but_grounded_value() -> None:
    s = sample("Cross-12")
    # MEL.AIRPORT is in the Melbourne look-up's response: a real id, but not the city the user asked.
    verdict = score_trajectory(s, with_arguments(s, 2, toId="MEL.AIRPORT") + ["x"])
    assert verdict.error_type == "value_error"
    assert verdict.error_detail == "Parameter toId value do not equal to golden."
    assert verdict.n_correct_calls == 3
    report = score_complexeval([s], {s.id: with_arguments(s, 2, toId="MEL.AIRPORT") + ["x"]})
    # location parameters judged: three look-up queries, fromId and toId (the session ends there)
    assert report.summary["param_type_counts"]["location"] == {"errors": 1, "total": 5}
    assert report.summary["param_type_error_rate"]["location"] == pytest.approx(1 / 5)
    assert report.summary["param_type_error_rate"]["date"] == 0.0


def test_wrong_json_type_is_a_value_error_with_the_format_message() -> None:
    s = sample("Car-Rental-3")
    session = ComplexEvalSession(s)
    [response] = session.respond(with_arguments(s, 0, driver_age="45")[0])
    assert response == {"error": "Parameter driver_age of function Search_Car_Rentals should be an integer, but string is provided."}
    assert session.record.turns[0][0].error_type == "value_error"


def test_calls_after_the_gold_path_is_complete_are_func_errors() -> None:
    s = sample("Car-Rental-3")
    turns = gold_turns(s)
    verdict = score_trajectory(s, turns + turns + ["done"])
    assert verdict.error_type == "func_error" and verdict.record.stop_reason == "after_complete"
    assert verdict.n_correct_calls == 1


def test_optional_lookups_may_be_skipped() -> None:
    s = sample("Cross-12")
    options = ComplexEvalOptions(optional_functions=COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS)
    session = ComplexEvalSession(s, options)
    # Steps 1 and 2 only hold look-ups, so the flight search is callable at once.
    assert [c.label for c in session.current_gold] == ["call_1", "call_2", "call_3", "call_4"]
    verdict = score_trajectory(s, gold_turns(s)[2:] + [final_text(s)], options)
    assert verdict.success and verdict.call_accuracy == pytest.approx(2 / 5)


def test_without_optional_functions_skipping_a_lookup_goes_off_path() -> None:
    s = sample("Cross-12")
    verdict = score_trajectory(s, gold_turns(s)[2:] + ["x"])
    assert verdict.record.stop_reason == "off_path" and verdict.error_type == "func_error"


def test_response_based_layer_with_a_recorded_environment() -> None:
    s = sample("Hotels-7")
    gold = s.calls[0][0]
    store = RecordedStore.from_samples([s])
    store.add(gold.name, {"query": "Shibuya, Tokyo"}, gold.response)  # the API answers both alike
    options = ComplexEvalOptions(layers=[response_match_layer(RecordedEnvironment(store))])
    turns = gold_turns(s)
    turns[0][0]["arguments"]["query"] = "Shibuya, Tokyo"
    verdict = score_trajectory(s, turns + ["done"], options)
    assert verdict.success
    assert verdict.record.turns[0][0].layer == "response"
    assert score_trajectory(s, turns + ["done"]).error_type == "value_error"  # without the layer


def test_judges_are_pluggable_and_defaults_are_rule_based() -> None:
    s = sample("Car-Rental-3")
    turns = gold_turns(s)
    verdict = score_trajectory(s, turns + ["A compact car costs USD 999 a week."])
    assert (verdict.completeness, verdict.correctness) == (2, 1)  # 999 was never in a response
    session = run_trajectory(s, turns + ["Pick-up 2024-12-20 at 10:00, drop-off 2024-12-27."])
    given = ResponseJudgeInput(s, session.record.final_text, session.record, session.context_text())
    assert naive_correctness_judge(given) == 2 and naive_completeness_judge(given) == 2
    strict = score_trajectory(s, turns + ["ok"], completeness_judge=lambda g: 0, correctness_judge=lambda g: 1)
    assert (strict.completeness, strict.correctness) == (0, 1)


def test_report_shape_counts_errors_by_sample_and_by_domain() -> None:
    cross, hotels, car = sample("Cross-12"), sample("Hotels-7"), sample("Car-Rental-3")
    lines = [
        {"id": cross.id, "turns": gold_turns(cross)[:3] + ["partial"]},
        {"id": hotels.id, "turns": gold_turns(hotels) + ["done"]},
        {"id": car.id, "turns": with_arguments(car, 0, currency_code="EUR") + ["done"]},
        {"id": "Attraction-99", "turns": ["nothing"]},
    ]
    report = METRICS.get("complexeval").score(_samples(), lines)
    summary = report.summary
    assert summary["n"] == 3
    assert summary["success_rate"] == pytest.approx(1 / 3)
    assert summary["call_accuracy"] == pytest.approx((4 + 2 + 0) / (5 + 2 + 1))
    assert summary["errors"] == {"func_error": 0, "param_missing": 0, "hallucination": 1,
                                 "value_error": 0, "stop_early": 1}
    assert summary["by_domain"]["Hotels"]["success_rate"] == 1.0
    assert summary["by_domain"]["Cross"]["call_accuracy"] == pytest.approx(4 / 5)
    # a trajectory for a sample the gold does not have is listed, never an item
    assert summary["unknown_ids"] == ["Attraction-99"]
    assert report.gold_set["foreign"] == [{"line": 4, "id": "Attraction-99"}]
    assert [item["id"] for item in report.items] == ["Cross-12", "Hotels-7", "Car-Rental-3"]
    assert report.items[2]["error"] == {"type": "hallucination",
                                        "detail": "Parameter currency_code value is not grounded in the conversation."}


def test_a_sample_without_a_trajectory_is_a_failure_with_no_correct_call() -> None:
    cross, hotels = sample("Cross-12"), sample("Hotels-7")
    lines = [{"id": hotels.id, "turns": gold_turns(hotels) + ["done"]},
             {"id": cross.id, "turns": gold_turns(cross) + ["done"]},
             {"id": hotels.id, "turns": ["a second, worse answer"]}]
    report = METRICS.get("complexeval").score(_samples(), lines)
    summary = report.summary
    assert summary["n"] == 3 and summary["success_rate"] == pytest.approx(2 / 3)
    assert summary["call_accuracy"] == pytest.approx((5 + 2) / (5 + 2 + 1))
    assert summary["completeness"] == pytest.approx((2 + 2 + 0) / 3)
    assert summary["missing"] == 1 and summary["param_type_error_rate"] == {}
    assert "not reported: 1 samples have no trajectory" in summary["param_type_error_rate_note"]
    assert [item["id"] for item in report.items] == ["Cross-12", "Hotels-7", "Car-Rental-3"]  # the gold's order
    assert report.items[2]["error"]["type"] == "missing_prediction" and report.items[2]["n_correct_calls"] == 0
    assert report.gold_set["missing"] == ["Car-Rental-3"]
    assert report.gold_set["duplicates"] == [{"line": 3, "id": "Hotels-7", "first": 1}]


# ------------------------------------------------------------------------------- parameter types


@pytest.mark.parametrize(
    ("function", "parameter", "expected"),
    [
        ("Search_Flights", "departDate", "date"),
        ("Search_Flights", "fromId", "location"),
        ("Search_Flights", "sort", "filter"),
        ("Search_Flights", "adults", "number"),
        ("Search_Flights", "currency_code", "other"),
        ("Search_Hotels_By_Coordinates", "latitude", "location"),
        ("Search_Hotels", "dest_id", "location"),
        ("Search_Hotels", "sort_by", "filter"),
        ("Search_Car_Rentals", "pick_up_time", "date"),
        ("Search_Car_Location", "query", "location"),
        ("Search_Hotel_Destination", "query", "location"),
    ],
)
def test_parameter_types_of_the_example_tools(function: str, parameter: str, expected: str) -> None:
    tool = next(t for s in _samples() for t in s.tools if t.name == function)
    assert parameter_type(parameter, tool.parameters["properties"][parameter], function) == expected


@pytest.mark.parametrize(
    ("parameter", "schema", "expected"),
    [
        ("legs", {"type": "array"}, "legs"),
        ("offerToken", {"type": "string"}, "token"),
        ("productSlug", {"type": "string"}, "slug"),
        ("hotel_id", {"type": "integer"}, "id"),
        ("categories_filter", {"type": "string"}, "filter"),
        ("when", {"type": "string", "format": "date"}, "date"),
        ("languagecode", {"type": "string"}, "other"),
    ],
)
def test_parameter_type_rules(parameter: str, schema: dict[str, Any], expected: str) -> None:
    assert parameter_type(parameter, schema) == expected


def test_value_in_text_grounding_rules() -> None:
    context = 'Flying 2024-11-15 {"lat": -37.8303689, "id": "MEL.CITY"}'
    assert value_in_text("mel.city", context)
    assert value_in_text(-37.8303689, context)
    assert value_in_text(15, context) and not value_in_text(-15, context)  # a date's dash is no sign
    assert value_in_text(["MEL.CITY", 2024], context) and not value_in_text(["MEL.CITY", 7], context)
    assert value_in_text(True, context) and not value_in_text("SYD.CITY", context)


# ------------------------------------------------------------------------------ property tests

SAMPLE_IDS = ["Cross-12", "Hotels-7", "Car-Rental-3"]


@settings(max_examples=30, deadline=None)
@given(sample_id=st.sampled_from(SAMPLE_IDS), data=st.data())
def test_gold_path_in_any_parallel_order_is_perfect(sample_id: str, data: st.DataObject) -> None:
    s = sample(sample_id)
    turns = [data.draw(st.permutations(turn)) for turn in gold_turns(s)]
    verdict = score_trajectory(s, turns + [final_text(s)])
    assert verdict.success and verdict.call_accuracy == 1.0 and verdict.error_type is None


@settings(max_examples=30, deadline=None)
@given(sample_id=st.sampled_from(SAMPLE_IDS), data=st.data(), new_name=st.text(min_size=1, max_size=12))
def test_a_renamed_function_is_never_a_match(sample_id: str, data: st.DataObject, new_name: str) -> None:
    s = sample(sample_id)
    turns = gold_turns(s)
    step = data.draw(st.integers(0, len(turns) - 1))
    index = data.draw(st.integers(0, len(turns[step]) - 1))
    other_names = [t.name for t in s.tools if t.name != turns[step][index]["name"]] + [new_name]
    renamed = data.draw(st.sampled_from(other_names))
    if renamed == turns[step][index]["name"]:
        return
    turns[step][index]["name"] = renamed
    session = run_trajectory(s, turns + ["done"])
    judgement = session.record.turns[step][index]
    assert not judgement.matched and judgement.error_type == "func_error"
    assert not session.record.success


def test_arguments_that_are_not_json_are_fed_back_as_a_format_error() -> None:
    s = sample("Hotels-7")
    session = ComplexEvalSession(s)
    [response] = session.respond([{"function": {"name": "Search_Hotel_Destination", "arguments": "{query: Shibuya"}}])
    assert response["error"].startswith("arguments of 'Search_Hotel_Destination' are not JSON")
    assert not session.finished and session.record.turns[0][0].error_type == "value_error"
    # The OpenAI tool-call shape with JSON-string arguments is accepted as is.
    assert session.respond([{"function": {"name": "Search_Hotel_Destination", "arguments": '{"query": "Shibuya"}'}}]) == [
        s.calls[0][0].response
    ]


# --------------------------------------------------------------------------- typed differences (no judge)
TRAVEL_SCHEMA = {"type": "object", "properties": {
    "query": {"type": "string"},
    "fromId": {"type": "string"},
    "block_id": {"type": "string"},
    "arrival_date": {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
    "pick_up_time": {"type": "string", "pattern": r"^([01]\d|2[0-3]):[0-5]\d$"},
    "latitude": {"type": "number"},
    "adults": {"type": "integer", "default": 1},
    "price_max": {"type": "number"},
    "radius": {"type": "number", "description": "Search radius in km, 5 by default."},
    "sort_by": {"type": "string", "enum": ["price", "distance"], "default": "distance"},
    "tags": {"type": "array", "items": {"type": "string"}},
}}


@pytest.mark.parametrize("predicted, gold", [
    ({"arrival_date": "2025-11-16"}, {"arrival_date": "2025-11-15"}),  # another date
    ({"pick_up_time": "18:45"}, {"pick_up_time": "17:45"}),  # another time
    ({"adults": 2}, {}),  # another number of people than the default
    ({"latitude": 48.75}, {"latitude": 48.8566}),  # not a rounding of it (48.9 would be)
    ({"sort_by": "price"}, {"sort_by": "distance"}),  # another sort order
    ({"block_id": "BLK_a1"}, {"block_id": "BLK_b2"}),  # another id
    ({"fromId": "LHR.AIRPORT"}, {"fromId": "LGW.AIRPORT"}),  # another airport id
    ({"price_max": 180}, {}),  # a filter on one side only
    ({"query": "Paris"}, {"query": "Paris", "arrival_date": "2025-11-15"}),  # a typed parameter left out
])
def test_typed_differences_are_settled_without_a_judge(predicted: dict, gold: dict) -> None:
    assert typed_difference(predicted, gold, TRAVEL_SCHEMA) is not None


@pytest.mark.parametrize("predicted, gold", [
    ({"query": "NY"}, {"query": "New York"}),  # free text: the judge's question
    ({"fromId": "LHR.AIRPORT"}, {"fromId": "London Heathrow"}),  # an id written as a name
    ({"fromId": "LHR"}, {"fromId": "LHR.AIRPORT"}),  # one id inside the other: maybe a shorter spelling
    ({"latitude": 48.86}, {"latitude": 48.8566}),  # a rounding: judgement
    ({"latitude": 48.8566}, {"latitude": 48.86}),
    ({"arrival_date": "15/11/2025"}, {"arrival_date": "2025-11-15"}),  # not ISO: cannot parse, undecided
    ({"tags": ["a"]}, {"tags": ["b"]}),  # lists are not settled
    ({"query": "Paris", "note": "near the river"}, {"query": "Paris"}),  # free text on one side only
    ({"adults": 1}, {}),  # the default written out: no difference at all
    ({"radius": 5}, {}),  # a default only the description gives: the judge applies it
])
def test_what_needs_judgement_is_left_to_the_judge(predicted: dict, gold: dict) -> None:
    assert typed_difference(predicted, gold, TRAVEL_SCHEMA) is None


def test_typed_difference_layer_sits_before_the_judge_and_never_matches() -> None:
    asked = []
    judge = MatchLayer("llm", lambda predicted, gold, tool: asked.append(predicted.arguments) or True)
    tool = Tool(name="Search", description="", parameters=TRAVEL_SCHEMA)
    gold = Call(label="var_1", name="Search", arguments={"query": "Paris", "arrival_date": "2025-11-15"})
    layers = [typed_difference_layer(), judge]
    settled = match_call({"name": "Search", "arguments": {"query": "Paris", "arrival_date": "2025-11-16"}}, gold,
                         tool, layers=layers)
    judged = match_call({"name": "Search", "arguments": {"query": "Paris, France", "arrival_date": "2025-11-15"}},
                        gold, tool, layers=layers)
    assert (settled.matched, settled.layer, settled.error_type) == (False, "rule_typed", "value_error")
    assert (judged.matched, judged.layer) == (True, "llm")
    assert asked == [{"query": "Paris, France", "arrival_date": "2025-11-15"}]
