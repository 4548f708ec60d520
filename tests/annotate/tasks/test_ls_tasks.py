"""Task <-> sample conversion and the checks on an annotated path, without any server.

An annotation here is the `result` list Label Studio stores, built the way the editor builds it:
the draft's prediction as the starting point, then the annotator's edits and choices.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import pytest

from annotate.review.checks import check_correction
from annotate.studio.label_configs import SENIOR, PredictionValidator, load_config
from annotate.tasks.problems import ProblemCode
from annotate.tasks.single import (DraftUnavailable, JuniorAnswer, SeniorAnswer, ToolCatalog, build_junior_correction,
                            format_path_json,
                            build_senior_correction, choices_result, content_hash, draft_of, format_arguments_json,
                            junior_task, read_result, senior_task, textarea_result)
from fcbench.sample import Sample, sample_to_dict
from ls_fixtures import drafts, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)


def answer(task: dict[str, Any], verdict: str | None = "accept", query: str | None = None, path: str | None = None,
           delete: Sequence[str] = (), drop: Sequence[str] = (), flags: Sequence[str] = ()) -> list[dict[str, Any]]:
    result = [dict(region) for region in task["predictions"][0]["result"]]
    if query is not None:
        result[0] = textarea_result("query", "draft", query)
    if path is not None:
        result[1] = textarea_result("path_json", "draft", path)
    for name, values in (("verdict", [verdict] if verdict else []), ("delete_entries", delete),
                         ("drop_tools", drop), ("error_flags", flags)):
        if values:
            result.append(choices_result(name, "draft", list(values)))
    return result


def corrected(draft: Sample, result: list[dict[str, Any]], environment=None):
    return check_correction(build_senior_correction(draft, SeniorAnswer.from_result(result)), environment)


# ---------------------------------------------------------------------------------------- to task
def test_task_carries_the_whole_draft_keyed_by_id_and_hash(drafts) -> None:
    draft = drafts["hotels-paris"]
    data = senior_task(draft)["data"]
    assert data["sample_id"] == "hotels-paris"
    assert data["draft_hash"] == content_hash(draft) and len(data["draft_hash"]) == 16
    assert data["feedback_html"] == ""
    assert json.loads(json.dumps(data)) == data  # plain JSON, as the import API needs
    rebuilt = draft_of(data)
    assert sample_to_dict(rebuilt) == sample_to_dict(draft.model_copy(deep=True))


def test_catalog_tools_travel_by_hash_and_a_changed_catalog_is_named(drafts, travel_tools) -> None:
    draft = drafts["airports-sydney"]
    catalog = ToolCatalog(travel_tools)
    data = senior_task(draft, catalog=catalog)["data"]
    assert all(set(tool) == {"name", "sha"} for tool in data["tools"]) and len(data["tools"]) == 15
    assert len(json.dumps(data)) < len(json.dumps(senior_task(draft)["data"])) / 2
    assert sample_to_dict(draft_of(data, catalog)) == sample_to_dict(draft.model_copy(deep=True))
    own_tool = draft.tools[0].model_copy(update={"description": "Changed after the catalog was written."})
    mixed = senior_task(draft.model_copy(update={"tools": [own_tool, *draft.tools[1:]]}), catalog=catalog)["data"]
    assert mixed["tools"][0]["description"] == "Changed after the catalog was written."  # not the catalog's: in full
    shrunk = ToolCatalog(travel_tools[1:])
    with pytest.raises(DraftUnavailable, match="tool 'Search_Flight_Location' was pushed as catalog version [0-9a-f]{16}, which the pipeline's tool catalog no longer has"):
        draft_of(data, shrunk)


def test_prediction_prefills_query_and_path_and_is_valid_for_the_config(drafts) -> None:
    validator = PredictionValidator(load_config(SENIOR))
    for draft in drafts.values():
        task = senior_task(draft, model_version="gpt-4o-mini")
        prediction = task["predictions"][0]
        assert prediction["model_version"] == "gpt-4o-mini"
        assert validator.problems(prediction) == []
        values = read_result(prediction["result"])
        assert values["query"] == draft.messages[0]["content"]
        steps = json.loads(values["path_json"])
        assert [[call["label"] for call in step] for step in steps] == [[c.label for c in step] for step in draft.calls]


def test_a_prediction_naming_a_control_the_config_lacks_is_refused() -> None:
    validator = PredictionValidator(load_config(SENIOR))
    problems = validator.problems({"result": [textarea_result("gold_path", "draft", "[]")]})
    assert problems == ["Region 0: 'from_name' 'gold_path' not found in configuration"]


def test_response_entries_and_tools_become_checkboxes_with_the_ambiguous_ones_highlighted(drafts) -> None:
    data = senior_task(drafts["hotels-paris"])["data"]
    values = [option["value"] for option in data["entry_options"]]
    # the destinations (5) and the hotels (5); lists of strings such as amenities are not entries
    assert values == [f"var_1.data[{i}]" for i in range(5)] + [f"var_2.data.hotels[{i}]" for i in range(5)]
    flagged = [option["value"] for option in data["entry_options"] if "⚠" in option["html"]]
    assert flagged == [f"var_1.data[{i}]" for i in range(5)]
    # one warning per (call, argument), the five destinations listed inside each
    assert [(flag["call"], flag["argument"]) for flag in data["ambiguity"]] == [("var_2", "dest_id"),
                                                                               ("var_2", "search_type")]
    assert data["ambiguity"][0]["message"] == (
        "var_2.dest_id is taken from var_1.data[0], but 4 of the 5 entries of var_1.data would give another value: "
        "does the query say which one?")
    assert [candidate["entry"] for candidate in data["ambiguity"][0]["candidates"]] == [f"var_1.data[{i}]"
                                                                                        for i in range(5)]
    assert [option["value"] for option in data["tool_options"]] == [tool.name for tool in drafts["hotels-paris"].tools]
    assert "Likely ambiguous" in data["draft_html"]


def test_text_from_the_sample_is_escaped_in_the_html(drafts) -> None:
    draft = drafts["airports-sydney"].model_copy(
        update={"messages": [{"role": "user", "content": "Sydney <script>alert(1)</script> & co"}]})
    html = senior_task(draft)["data"]["draft_html"]
    assert "<script>" not in html
    assert "Sydney &lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in html


# --------------------------------------------------------------------------------------- back again
def test_accepting_a_draft_whose_value_the_query_does_not_state_is_sent_back(drafts) -> None:
    """The query asks for Rome, the draft searches Paris: accepting it as it is names the argument."""
    outcome = corrected(drafts["hotels-rome-wrong"], answer(senior_task(drafts["hotels-rome-wrong"])))
    assert not outcome.ok
    assert [(p.code.value, p.message.split(":")[0]) for p in outcome.problems] == [("provenance_missing", 'var_1.query="Paris"')]


@pytest.mark.parametrize("sample_id", ["hotels-paris", "airports-sydney", "two-cities"])
def test_accepting_the_prefilled_draft_gives_back_the_draft_exactly(drafts, sample_id) -> None:
    draft = drafts[sample_id]
    outcome = corrected(draft, answer(senior_task(draft)))
    assert outcome.ok, outcome.problems
    gold = sample_to_dict(outcome.sample.model_copy(deep=True))
    # the gold says where each of its values comes from (meta.provenance); the rest is the draft
    provenance = gold["meta"].pop("provenance")
    assert set(provenance) == {call.label for call in draft.all_calls()}
    if not gold["meta"]:
        gold.pop("meta")
    assert gold == sample_to_dict(draft.model_copy(deep=True))


def test_a_fixed_argument_is_re_executed_in_the_environment(drafts, travel_environment) -> None:
    draft = drafts["hotels-rome-wrong"]
    task = senior_task(draft)
    fixed = task["data"]["path_json"].replace('"Paris"', '"Rome"')
    outcome = corrected(draft, answer(task, "fix", path=fixed, flags=["value_error"]), travel_environment)
    assert outcome.ok, outcome.problems
    destinations = outcome.sample.calls[0][0].response["data"]
    assert destinations[0]["name"] == "Rome"
    hotels = outcome.sample.calls[1][0].response["data"]["hotels"]
    assert {hotel["city_name"] for hotel in hotels} == {"Rome"}
    assert outcome.notes == ["call var_2: the environment's response differs from the draft's; the environment's is kept"]


def test_a_changed_call_without_an_environment_is_named(drafts) -> None:
    draft = drafts["hotels-rome-wrong"]
    task = senior_task(draft)
    outcome = corrected(draft, answer(task, "fix", path=task["data"]["path_json"].replace('"Paris"', '"Rome"')))
    assert not outcome.ok
    assert [(p.code, p.message) for p in outcome.problems] == [(
        ProblemCode.NO_RESPONSE, "call var_1 (Search_Hotel_Destination) is new or changed and the pipeline has no "
        "environment to execute it: keep the draft's call or configure an environment")]


def test_rewritten_query_dropped_tool_and_deleted_entries_reach_the_gold_sample(drafts) -> None:
    draft = drafts["hotels-paris"]
    others = [f"var_1.data[{i}]" for i in range(1, 5)]
    outcome = corrected(draft, answer(senior_task(draft), "fix", query="Find a hotel anywhere in the city of Paris, "
                                      "2025-03-01 to 2025-03-03.", delete=others, drop=["Search_Taxi"]))
    assert outcome.ok, outcome.problems
    gold = outcome.sample
    assert gold.messages == [{"role": "user", "content": "Find a hotel anywhere in the city of Paris, 2025-03-01 to 2025-03-03."}]
    assert "Search_Taxi" not in gold.tool_names() and len(gold.tools) == len(draft.tools) - 1
    assert [entry["dest_id"] for entry in gold.calls[0][0].response["data"]] == ["-2004001"]
    assert gold.calls[1][0].response == draft.calls[1][0].response  # still what the kept entry gives


def test_deleting_the_entry_a_reference_reads_makes_the_kept_response_inconsistent(drafts) -> None:
    draft = drafts["hotels-paris"]
    outcome = corrected(draft, answer(senior_task(draft), "fix", delete=["var_1.data[0]"]))
    assert [p.code for p in outcome.problems] == [ProblemCode.INCONSISTENT_RESPONSE]
    assert outcome.problems[0].message == (
        "call var_2 (Search_Hotels): after the deletions its arguments ['dest_id', 'search_type'] read "
        '{"dest_id": "300401", "search_type": "DISTRICT"}, but its response was made with '
        '{"dest_id": "-2004001", "search_type": "CITY"}')


def test_with_the_environment_the_same_deletion_gives_the_district_hotels(drafts, travel_environment) -> None:
    draft = drafts["hotels-paris"]
    # the city deleted alone leaves four Paris districts, and nothing in the query says which one
    # the search reads (the gold audit sends it back); with the three others deleted, one is left
    alone = corrected(draft, answer(senior_task(draft), "fix", delete=["var_1.data[0]"]), travel_environment)
    assert [p.code for p in alone.problems] == [ProblemCode.GOLD_AUDIT] * 2
    assert "var_2.dest_id reads var_1.data[0] of 4 entries" in alone.problems[0].message
    deletions = ["var_1.data[0]", "var_1.data[2]", "var_1.data[3]", "var_1.data[4]"]
    outcome = corrected(draft, answer(senior_task(draft), "fix", delete=deletions), travel_environment)
    assert outcome.ok, outcome.problems
    assert outcome.sample.calls[1][0].response["data"]["destination"]["dest_id"] == "300401"


@pytest.mark.parametrize(("edit", "code", "message"), [
    (lambda p: p.replace('"arguments": {"dest_id"', '"arguments": {{"dest_id"'), ProblemCode.BAD_JSON,
     "the path JSON is not valid JSON: Expecting property name enclosed in double quotes at line 6 column 63"),
    (lambda p: p.replace('"Search_Hotels"', '"Search_Hotelz"'), ProblemCode.UNKNOWN_TOOL, None),
    (lambda p: p.replace("$var_1.data[0].dest_id$", "$var_9.data[0].dest_id$"), ProblemCode.BAD_REFERENCE,
     "call 'var_2' (Search_Hotels): reference $var_9.data[0].dest_id$ unknown_label: no call is labelled 'var_9'"),
    (lambda p: p.replace('"2025-03-01"', '"March 1st"'), ProblemCode.BAD_ARGUMENTS,
     "call var_2 (Search_Hotels): argument arrival_date: 'March 1st' does not match '^\\\\d{4}-\\\\d{2}-\\\\d{2}$'"),
    (lambda p: p.replace('"label": "var_2"', '"label": "var_1"'), ProblemCode.DUPLICATE_LABEL,
     "label 'var_1' is used twice"),
    (lambda p: '{"steps": []}', ProblemCode.BAD_SHAPE, "the path JSON must be a list of steps (a list of lists of calls)"),
    (lambda p: "", ProblemCode.EMPTY_SUBMISSION, "the path JSON is empty"),
])
def test_each_kind_of_bad_path_gets_its_exact_message(drafts, travel_environment, edit, code, message) -> None:
    draft = drafts["hotels-paris"]
    task = senior_task(draft)
    outcome = corrected(draft, answer(task, "fix", path=edit(task["data"]["path_json"])), travel_environment)
    assert not outcome.ok
    assert outcome.problems[0].code == code
    if message is not None:
        assert outcome.problems[0].message == message
    else:
        assert outcome.problems[0].message.startswith("call var_2 uses unknown tool 'Search_Hotelz'; tools: ")


def test_calling_a_dropped_tool_and_ticking_an_unknown_entry_are_problems(drafts) -> None:
    draft = drafts["airports-sydney"]
    outcome = corrected(draft, answer(senior_task(draft), "fix", drop=["Search_Flight_Location"], delete=["var_1.data[7]"]))
    assert [(p.code.value, p.message) for p in outcome.problems] == [
        ("unknown_entry", "response entry var_1.data[7] is not in the draft"),
        ("dropped_tool", "call var_1 uses tool 'Search_Flight_Location', which is ticked to be dropped")]


def test_empty_submission_missing_verdict_and_reject(drafts) -> None:
    draft = drafts["airports-sydney"]
    task = senior_task(draft)
    assert [p.code for p in corrected(draft, []).problems] == [ProblemCode.EMPTY_SUBMISSION]
    assert [p.code for p in corrected(draft, answer(task, verdict=None)).problems] == [ProblemCode.NO_VERDICT]
    notes = textarea_result("notes", "draft", "Sydney is not a question")
    rejected = corrected(draft, answer(task, "reject") + [notes])
    assert [(p.code, p.message) for p in rejected.problems] == [
        (ProblemCode.REJECTED_BY_ANNOTATOR, "the annotator rejected the draft: Sydney is not a question")]
    blank_query = corrected(draft, answer(task, "fix", query="   "))
    assert [p.code for p in blank_query.problems] == [ProblemCode.EMPTY_QUERY]


def test_a_changed_draft_has_a_different_hash(drafts) -> None:
    draft = drafts["airports-sydney"]
    changed = draft.model_copy(update={"messages": [{"role": "user", "content": "Airports of Sydney?"}]})
    assert content_hash(draft) == content_hash(draft.model_copy(deep=True))
    assert content_hash(changed) != content_hash(draft)


# ------------------------------------------------------------------------------------------- junior
def _candidate_without_query_argument(drafts) -> Sample:
    draft = drafts["hotels-paris"]
    first = draft.calls[0][0].model_copy(update={"arguments": {}})
    return draft.model_copy(update={"id": "hotels-paris-v1", "calls": [[first], draft.calls[1]],
                                    "messages": [{"role": "user", "content": "A hotel in Rome, 2025-03-01 to 2025-03-03."}],
                                    "meta": {"stage3": {"needs_arguments": True}}})


def test_junior_task_shows_the_blanks_as_null(drafts) -> None:
    candidate = _candidate_without_query_argument(drafts)
    text = format_arguments_json(candidate.calls, candidate.tools)
    assert json.loads(text)["var_1"] == {"query": None}
    task = junior_task(candidate, drafts["hotels-paris"])
    assert task["data"]["kind"] == "fcbench-stage3-junior"
    html = task["data"]["variant_html"]
    assert "query: Find me a hotel in Paris from 2025-03-01 to 2025-03-03." in html
    assert "Template (worked example)" in html and "&quot;dest_id&quot;: &quot;-2004001&quot;" in html


def test_junior_filling_is_checked_and_executed(drafts, travel_environment) -> None:
    candidate = _candidate_without_query_argument(drafts)
    filled = json.loads(format_arguments_json(candidate.calls, candidate.tools))
    filled["var_1"]["query"] = "Rome"
    result = [textarea_result("arguments_json", "variant", json.dumps(filled)), choices_result("verdict", "variant", ["filled"])]
    outcome = check_correction(build_junior_correction(candidate, JuniorAnswer.from_result(result)), travel_environment)
    assert outcome.ok, outcome.problems
    assert outcome.sample.calls[0][0].arguments == {"query": "Rome"}
    assert outcome.sample.calls[1][0].response["data"]["destination"]["name"] == "Rome"


@pytest.mark.parametrize(("arguments", "code", "message"), [
    ({"var_1": {"query": None}, "var_2": {}}, ProblemCode.BAD_ARGUMENTS, "call var_1: argument 'query' is still null"),
    ({"var_1": {"query": "Rome"}}, ProblemCode.PATH_CHANGED, "the path is fixed: missing calls ['var_2']"),
    ({"var_1": {"query": "Rome"}, "var_2": {}, "var_3": {}}, ProblemCode.PATH_CHANGED,
     "the path is fixed: unknown calls ['var_3']"),
])
def test_junior_answers_that_break_the_fixed_path(drafts, arguments, code, message) -> None:
    candidate = _candidate_without_query_argument(drafts)
    result = [textarea_result("arguments_json", "variant", json.dumps(arguments)), choices_result("verdict", "variant", ["filled"])]
    correction = build_junior_correction(candidate, JuniorAnswer.from_result(result))
    assert [(p.code, p.message) for p in correction.problems] == [(code, message)]


def test_qa_review_task_shows_the_changes_and_keeps_the_gold(drafts) -> None:
    from annotate.studio.label_configs import QA_REVIEW, contract_problems
    from annotate.tasks.single import qa_review_task

    gold = drafts["hotels-rome-wrong"]
    task = qa_review_task(gold, ["argument value fixed: var_1.query"])
    assert "argument value fixed: var_1.query" in task["data"]["review_html"]
    assert sample_to_dict(draft_of(task["data"])) == sample_to_dict(gold.model_copy(deep=True))
    assert contract_problems(load_config(QA_REVIEW), QA_REVIEW) == []
    assert set(QA_REVIEW.data_fields) <= set(task["data"])


def test_every_field_a_config_reads_is_in_the_task_data(drafts) -> None:
    from annotate.studio.label_configs import JUNIOR

    assert SENIOR.data_fields <= set(senior_task(drafts["two-cities"])["data"])
    assert JUNIOR.data_fields <= set(junior_task(drafts["two-cities"])["data"])


def test_junior_fills_a_stage3_style_candidate_without_responses(drafts, travel_environment) -> None:
    """What stage3 writes with `fill: annotators`: literals blanked to null, references kept, no
    responses (nothing ran yet), `meta.stage3.needs_arguments`."""
    from annotate.stage3.junior import needs_arguments
    from fcbench.references import parse_reference
    from fcbench.sample import Call

    template = drafts["hotels-paris"]
    blanked = [[Call(label=c.label, name=c.name,
                     arguments={k: (v if parse_reference(v) else None) for k, v in c.arguments.items()})
                for c in step] for step in template.calls]
    candidate = template.model_copy(update={"id": "hotels-paris-v2", "calls": blanked,
                                            "messages": [{"role": "user", "content": "Berlin, 2025-06-01 to 2025-06-04."}],
                                            "meta": {"stage3": {"variant": 2, "fill": "annotators", "needs_arguments": True}}})
    assert needs_arguments(candidate) and not needs_arguments(template)
    filled = json.loads(format_arguments_json(candidate.calls, candidate.tools))
    assert filled["var_2"]["arrival_date"] is None and filled["var_2"]["dest_id"] == "$var_1.data[0].dest_id$"
    filled["var_1"]["query"] = "Berlin"
    filled["var_2"].update(arrival_date="2025-06-01", departure_date="2025-06-04")
    result = [textarea_result("arguments_json", "variant", json.dumps(filled)),
              choices_result("verdict", "variant", ["filled"])]
    correction = build_junior_correction(candidate, JuniorAnswer.from_result(result))
    assert check_correction(correction).problems[0].code == ProblemCode.NO_RESPONSE  # nothing to keep, no environment
    outcome = check_correction(correction, travel_environment)
    assert outcome.ok, outcome.problems
    assert outcome.sample.calls[1][0].response["data"]["destination"]["name"] == "Berlin"
    assert outcome.sample.calls[1][0].response["data"]["nights"] == 3


def test_an_annotator_marks_an_implied_value_as_derived_with_its_reason(drafts) -> None:
    draft = drafts["hotels-paris"]
    path = json.loads(format_path_json(draft.calls))
    first = path[-1][0]
    name = next(iter(first["arguments"]))
    first["derived"] = {name: "the week the user names, counted from its first day"}
    outcome = corrected(draft, answer(senior_task(draft), "fix", path=json.dumps(path)))
    assert outcome.ok, outcome.problems
    assert outcome.sample.meta["derived"] == [
        {"label": first["label"], "parameter": name, "reason": "the week the user names, counted from its first day"}]
    first["derived"] = {"no_such_argument": "why"}
    bad = corrected(draft, answer(senior_task(draft), "fix", path=json.dumps(path)))
    assert [p.code for p in bad.problems] == [ProblemCode.BAD_SHAPE] and "no_such_argument" in bad.problems[0].message
