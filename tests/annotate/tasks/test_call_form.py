"""The call forms (annotate/tasks/forms.py) and how pull reads them beside the raw JSON. No server."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

import pytest

from annotate.tasks.forms import (NO_CALL, FormLayout, catalog_parameters, decode_argument, form_prefill, form_xml,
                                formable_tools, read_form, reference_options, slot_count)
from annotate.studio.label_configs import SENIOR, contract_problems, load_config, sdk_problems, with_forms
from annotate.tasks.json_errors import describe_json_error
from annotate.tasks.problems import ProblemCode
from annotate.exchange.push import with_model_version
from annotate.tasks.render import feedback_html, readable_time
from annotate.tasks.single import (DEFAULT_MODEL_VERSION, SeniorAnswer, build_senior_correction, format_path_json,
                            read_result, senior_task)
from ls_fixtures import drafts, travel_environment, travel_tools  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def layout(travel_tools):  # noqa: F811
    return FormLayout(8, formable_tools(travel_tools))


def _values(results):
    return read_result(results)


def test_generated_config_is_valid_and_has_one_field_per_parameter(layout, travel_tools) -> None:  # noqa: F811
    xml = with_forms(load_config(SENIOR), form_xml(layout))
    assert sdk_problems(xml) == [] and contract_problems(xml, SENIOR) == []
    root = ElementTree.fromstring(xml)
    named = {element.get("name"): element for element in root.iter() if element.get("name")}
    tool_picker = named["c3_tool"]
    assert tool_picker.tag == "Choices" and tool_picker.get("layout") == "select"
    assert [choice.get("value") for choice in tool_picker] == [NO_CALL] + [tool.name for tool in travel_tools]
    # one control per distinct parameter in every slot; an enum is a drop-down of its values
    distinct = {name for tool in travel_tools for name in tool.parameters["properties"]}
    slot_params = {name for name in named if name.startswith("c3__")}
    assert len(slot_params) == len(catalog_parameters(travel_tools)) and len(slot_params) >= len(distinct)
    cabin = next(element for name, element in named.items() if name.startswith("c3__cabinClass"))
    assert [choice.get("value") for choice in cabin] == ["ECONOMY", "PREMIUM_ECONOMY", "BUSINESS", "FIRST"]
    assert named["c3__adults"].tag == "TextArea" and named["c3__adults"].get("rows") == "1"
    assert named["c3_step"].tag == "Number"
    # the fields of Search_Hotels show only while it is picked, with types, "required" and help
    hotel_views = [view for view in root.iter("View") if view.get("whenTagName") == "c3_tool"
                   and view.get("whenChoiceValue") == "Search_Hotels"]
    help_text = " ".join(header.get("value", "") for view in hotel_views for header in view.iter("Header"))
    assert "dest_id * (string, required): Destination id" in help_text and "adults (integer)" in help_text
    assert named["c3_ref1"].get("value") == "$ref_options"


def test_prefilled_forms_read_back_as_the_draft_path(drafts, layout) -> None:  # noqa: F811
    for draft in drafts.values():
        form = read_form(_values(form_prefill(draft.calls, layout)), draft.tools)
        assert form.problems == []
        assert [[(c.label, c.name, c.arguments) for c in step] for step in form.steps] == \
               [[(c.label, c.name, c.arguments) for c in step] for step in draft.calls]


def test_task_carries_reference_options_and_one_model_version(drafts, layout) -> None:  # noqa: F811
    task = senior_task(drafts["hotels-paris"], form=layout)
    references = [option["value"] for option in task["data"]["ref_options"]]
    assert "var_1.data[2].dest_id" in references and "var_2.data.hotels[0].hotel_id" in references
    assert not any(reference.startswith("$") for reference in references)  # Label Studio reads `$x` as a field
    assert task["predictions"][0]["model_version"] == DEFAULT_MODEL_VERSION
    relabelled = with_model_version({"data": {}, "predictions": [{"model_version": "gpt-4o-mini", "result": []}]},
                                    "draft")
    assert relabelled["predictions"][0]["model_version"] == "draft"
    assert slot_count(list(drafts.values())) == 8
    assert len(reference_options(drafts["hotels-paris"].all_calls(), limit=5)) == 5


def test_argument_values_follow_the_schema_type() -> None:
    assert decode_argument("2", {"type": "integer"}) == (2, None)
    assert decode_argument("007", {"type": "string"}) == ("007", None)
    assert decode_argument("$var_1.data[0].hotel_id$", {"type": "integer"}) == ("$var_1.data[0].hotel_id$", None)
    value, problem = decode_argument("two", {"type": "integer"})
    assert value is None and "is not a integer" in problem


def _answer(draft, layout, edit_form=None, path_text=None, verdict="fix"):
    results = form_prefill(draft.calls, layout)
    for result in results:
        if edit_form and result["from_name"] in edit_form:
            result["value"] = {"text": [edit_form[result["from_name"]]]}
    values = read_result(results)
    return SeniorAnswer(verdict=verdict, query=draft.messages[-1]["content"],
                        path_text=path_text if path_text is not None else format_path_json(draft.calls),
                        form={name: value for name, value in values.items()})


def test_pull_uses_the_edited_side_and_refuses_conflicts(drafts, layout) -> None:  # noqa: F811
    draft = drafts["hotels-rome-wrong"]
    # neither changed: the draft's path
    untouched = build_senior_correction(draft, _answer(draft, layout, verdict="accept"))
    assert untouched.problems == [] and untouched.sample.calls[0][0].arguments == {"query": "Paris"}
    # the form changed: its path
    form_fix = build_senior_correction(draft, _answer(draft, layout, {"c1__query": "Rome"}))
    assert form_fix.problems == [] and form_fix.sample.calls[0][0].arguments == {"query": "Rome"}
    assert form_fix.sample.calls[1][0].arguments["search_type"] == "$var_1.data[0].search_type$"
    # the raw JSON changed: its path
    raw_text = format_path_json(draft.calls).replace('"Paris"', '"Roma"')
    raw_fix = build_senior_correction(draft, _answer(draft, layout, path_text=raw_text))
    assert raw_fix.problems == [] and raw_fix.sample.calls[0][0].arguments == {"query": "Roma"}
    # both changed the same way: fine; differently: refused with the reason
    same = build_senior_correction(draft, _answer(draft, layout, {"c1__query": "Roma"}, raw_text))
    assert same.problems == []
    conflict = build_senior_correction(draft, _answer(draft, layout, {"c1__query": "Rome"}, raw_text))
    assert [problem.code for problem in conflict.problems] == [ProblemCode.CONFLICTING_EDITS]
    assert "undo one of them" in conflict.problems[0].message
    # a form value of the wrong type is the annotator's to fix, named by call and argument
    bad = build_senior_correction(drafts["hotels-paris"], _answer(drafts["hotels-paris"], layout,
                                                                    {"c2_label": ""}))
    assert [problem.code for problem in bad.problems] == [ProblemCode.BAD_FORM]
    assert "call 2 (Search_Hotels): the label is empty" in bad.problems[0].message


def test_a_picked_reference_is_the_argument(drafts, layout) -> None:  # noqa: F811
    draft = drafts["hotels-paris"]
    values = read_result(form_prefill(draft.calls, layout))
    values.update({"c2_ref2_to": ["dest_id"], "c2_ref2": ["var_1.data[2].dest_id"]})
    form = read_form(values, draft.tools)
    assert form.problems == [] and form.steps[1][0].arguments["dest_id"] == "$var_1.data[2].dest_id$"
    values.update({"c2_ref2_to": ["cabinClass"]})
    assert "a reference is picked for 'cabinClass', which Search_Hotels does not take" in read_form(
        values, draft.tools).problems[0]


def test_reordering_and_removing_calls_by_step_number(drafts, layout) -> None:  # noqa: F811
    draft = drafts["two-cities"]  # two parallel calls in step 1
    values = read_result(form_prefill(draft.calls, layout))
    values["c2_step"] = 2  # the second call now runs after the first
    assert [[c.label for c in step] for step in read_form(values, draft.tools).steps] == [["var_1"], ["var_2"]]
    values["c1_tool"] = [NO_CALL]  # removed
    assert [[c.label for c in step] for step in read_form(values, draft.tools).steps] == [["var_2"]]


def _json_error(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return describe_json_error(text, exc)
    raise AssertionError("valid JSON")


def test_json_errors_name_the_missing_bracket_and_where() -> None:
    missing = '[\n  [\n    {"label": "var_1", "name": "A", "arguments": {}}\n  ,\n  [{"label": "var_2"}]\n]'
    message = _json_error(missing)
    assert message.startswith("a closing ']' is missing: the bracket '[' opened at line 1 column 1 is never closed")
    assert "(the JSON reader stopped at line 6 column 2)" in message
    assert "Expecting" not in message
    mismatched = _json_error('[{"a": 1]')
    assert "bracket ']' at line 1 column 9 does not match the brace '{' opened at line 1 column 2" in mismatched
    comma = _json_error('[\n  {"a": 1 "b": 2}\n]')
    assert comma == "Expecting ',' delimiter at line 2 column 11"  # brackets balanced: the reader's own words


def test_feedback_shows_a_readable_time() -> None:
    assert readable_time("2026-11-25T08:41:07.123456Z") == "2026-11-25 08:41 UTC"
    assert "08:41 UTC" in feedback_html(["x"], "2026-11-25T08:41:07.123456Z")
    assert ".123456" not in feedback_html(["x"], "2026-11-25T08:41:07.123456Z")
