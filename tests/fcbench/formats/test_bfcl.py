"""BFCL adapter and catalog, checked on the published files as they are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fcbench.catalog.bfcl import schema_from_bfcl, tools_from_bfcl, tools_to_bfcl
from fcbench.formats import FormatError, FormatOptions, Rejected, read_samples, write_samples
from fcbench.sample import AcceptableValues, Call, Sample, Tool, sample_to_dict
from fcbench.checks.validate import validate_record
from conftest import EXTERNAL, read_all, through_canonical

BFCL = EXTERNAL / "bfcl"
ITEMS_PER_CATEGORY = {
    "simple_python": 400,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "irrelevance": 240,
    "multi_turn_base": 200,
}


def _json_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _question_file(category: str) -> Path:
    return BFCL / f"BFCL_v4_{category}.json"


def _answer_file(category: str) -> Path | None:
    path = BFCL / f"possible_answer_BFCL_v4_{category}.json"
    return path if path.is_file() else None


def _read_category(category: str) -> list[Sample]:
    return read_all(_question_file(category), "bfcl", FormatOptions(answers=_answer_file(category)))


def _by_id(samples: list[Sample]) -> dict[str, Sample]:
    return {sample.id: sample for sample in samples}


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("category", list(ITEMS_PER_CATEGORY))
def test_published_files_round_trip_through_canonical(category, tmp_path):
    samples = _read_category(category)
    assert len(samples) == ITEMS_PER_CATEGORY[category]
    for sample in samples:
        assert validate_record(sample_to_dict(sample)) == [], sample.id

    back = through_canonical(samples, tmp_path)
    questions_out, answers_out = tmp_path / "questions.json", tmp_path / "answers.json"
    warnings = write_samples(back, questions_out, "bfcl", FormatOptions(answers_out=answers_out))

    assert warnings == []
    assert _json_lines(questions_out) == _json_lines(_question_file(category))
    answer_file = _answer_file(category)
    expected_answers = _json_lines(answer_file) if answer_file else []
    assert _json_lines(answers_out) == expected_answers


def test_every_function_doc_maps_to_json_schema_and_back():
    functions = [f for path in sorted(BFCL.glob("BFCL_v4_*.json")) for r in _json_lines(path) for f in r.get("function", [])]
    functions += [f for path in sorted((BFCL / "multi_turn_func_doc").glob("*.json")) for f in _json_lines(path)]
    assert len(functions) == 6466 + 162
    tools = tools_from_bfcl(functions)
    assert tools_to_bfcl(tools) == functions
    python_spellings = {"dict", "float", "tuple", "any"}
    leftover = [t.name for t in tools if _types_used(t.parameters) & python_spellings]
    assert leftover == []


def _types_used(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), str):
            found.add(schema["type"])
        for child in list((schema.get("properties") or {}).values()) + [schema.get("items")]:
            found |= _types_used(child)
    elif isinstance(schema, list):
        for child in schema:
            found |= _types_used(child)
    return found


def test_schema_spellings_are_mapped_recursively():
    bfcl_schema = {
        "type": "dict",
        "properties": {
            "ratio": {"type": "float", "default": 0.5},
            "point": {"type": "tuple", "items": {"type": "float"}},
            "anything": {"type": "any"},
            "nested": {"type": "dict", "properties": {"n": {"type": "integer"}}},
            "pair": {"type": "array", "items": [{"type": "float"}, {"type": "string"}]},
        },
        "required": ["ratio"],
    }
    converted = schema_from_bfcl(bfcl_schema)
    assert converted["type"] == "object"
    assert converted["properties"]["ratio"] == {"type": "number", "x-source-type": "float", "default": 0.5}
    assert converted["properties"]["point"]["type"] == "array"
    assert converted["properties"]["point"]["items"] == {"type": "number", "x-source-type": "float"}
    assert converted["properties"]["anything"] == {"x-source-type": "any"}
    assert converted["properties"]["nested"]["properties"]["n"] == {"type": "integer"}
    assert converted["properties"]["pair"]["items"][0]["type"] == "number"
    assert tools_to_bfcl(tools_from_bfcl([{"name": "f", "description": "", "parameters": bfcl_schema}])) == [
        {"name": "f", "description": "", "parameters": bfcl_schema}
    ]


# ------------------------------------------------------------------------------ single-turn values


def test_simple_python_0_gold_call_and_acceptable_values():
    sample = _by_id(_read_category("simple_python"))["simple_python_0"]
    assert sample.messages == [{"role": "user", "content": "Find the area of a triangle with a base of 10 units and height of 5 units."}]
    assert [[call.name for call in step] for step in sample.calls] == [["calculate_triangle_area"]]
    call = sample.calls[0][0]
    assert call.label == "call_1"
    assert call.arguments == {"base": 10, "height": 5, "unit": "units"}
    assert sample.acceptable == {"call_1": {
        "base": AcceptableValues(values=[10], may_omit=False),
        "height": AcceptableValues(values=[5], may_omit=False),
        "unit": AcceptableValues(values=["units"], may_omit=True),
    }}
    # ["units", ""]: the omit marker stands last here, unlike most lists, so its place is kept.
    assert sample.meta["bfcl"] == {"omit_at": {"call_1": {"unit": 1}}}
    assert sample.tools[0].parameters["type"] == "object"
    assert sample_to_dict(sample)["difficulty"] == "single"


def test_parallel_item_holds_all_calls_in_one_step():
    sample = _by_id(_read_category("parallel"))["parallel_0"]
    assert len(sample.calls) == 1
    assert [(c.label, c.name, c.arguments) for c in sample.calls[0]] == [
        ("call_1", "spotify.play", {"artist": "Taylor Swift", "duration": 20}),
        ("call_2", "spotify.play", {"artist": "Maroon 5", "duration": 15}),
    ]
    assert sample_to_dict(sample)["difficulty"] == "multiple"


def test_argument_that_may_only_be_omitted_is_left_out_of_arguments():
    samples = _read_category("simple_python") + _read_category("live_simple")
    only_omit = [(s.id, label, arg) for s in samples for label, args in (s.acceptable or {}).items()
                 for arg, accepted in args.items() if accepted.values == [] and accepted.may_omit]
    assert len(only_omit) > 0
    by_id = _by_id(samples)
    for sample_id, label, arg in only_omit:
        call = next(c for c in by_id[sample_id].all_calls() if c.label == label)
        assert arg not in call.arguments


def test_nested_candidates_resolve_to_a_concrete_value_and_come_back_exactly(tmp_path):
    sample = _by_id(_read_category("live_multiple"))["live_multiple_0-0-0"]
    preferences = {"size": "large", "milk_type": "coconut", "sweetness_level": "extra", "temperature": "hot",
                   "special_instructions": "served boiling hot"}
    assert sample.calls[0][0].arguments == {"drink_id": "latte", "new_preferences": preferences}
    assert sample.acceptable["call_1"]["new_preferences"].values == [preferences]
    raw = sample.meta["bfcl"]["candidates"]["call_1"]["new_preferences"]
    assert raw[0]["special_instructions"] == ["served boiling hot", "serve boiling hot", "boiling hot", "served 'boiling hot'"]

    # Once an annotator changes the gold, the stale raw list is no longer written; a dict value is
    # written in BFCL's nested form (one candidate list per key), as its checker expects.
    sample.calls[0][0].arguments["new_preferences"] = {"size": "small", "tags": ["x", "y"]}
    sample.acceptable["call_1"]["new_preferences"] = AcceptableValues(
        values=[{"size": "small", "tags": ["x", "y"]}], may_omit=True)
    answers = tmp_path / "answers.json"
    write_samples([sample], tmp_path / "q.json", "bfcl", FormatOptions(answers_out=answers))
    written = _json_lines(answers)[0]["ground_truth"][0]["ChaDri.change_drink"]["new_preferences"]
    assert written == ["", {"size": ["small"], "tags": [["x", "y"]]}]
    again = read_all(tmp_path / "q.json", "bfcl", FormatOptions(answers=answers))[0]
    assert again.calls[0][0].arguments["new_preferences"] == {"size": "small", "tags": ["x", "y"]}


def test_irrelevance_items_expect_no_call_without_any_answer_file():
    samples = read_all(_question_file("irrelevance"), "bfcl")
    assert len(samples) == 240
    assert all(s.calls == [] and s.acceptable is None and s.meta == {} for s in samples)
    assert {sample_to_dict(s)["difficulty"] for s in samples} == {"none"}


def test_without_answers_reading_refuses_unless_told_no_gold(tmp_path):
    """Silent damage otherwise: 400 samples with no gold calls and no warning."""
    with pytest.raises(FormatError, match="--answers possible_answer_<category>.json, or --no-gold"):
        list(read_samples(_question_file("simple_python"), "bfcl"))
    irrelevance = read_all(_question_file("irrelevance"), "bfcl")  # publishes no answers: nothing to refuse
    assert len(irrelevance) == 240


def test_without_answers_gold_is_marked_unknown_and_nothing_is_pretended(tmp_path):
    samples = read_all(_question_file("simple_python"), "bfcl", FormatOptions(no_gold=True))
    assert all(s.calls == [] and s.meta == {"bfcl": {"gold": "unknown"}} for s in samples)
    answers = tmp_path / "answers.json"
    warnings = write_samples(samples, tmp_path / "q.json", "bfcl", FormatOptions(answers_out=answers))
    assert warnings == []
    assert _json_lines(answers) == []
    assert _json_lines(tmp_path / "q.json") == _json_lines(_question_file("simple_python"))


def test_gold_without_answers_out_is_reported(tmp_path):
    samples = _read_category("parallel")
    warnings = write_samples(samples, tmp_path / "q.json", "bfcl")
    assert warnings == ["200 gold paths not written: no --answers-out file given"]


def test_canonical_sample_from_elsewhere_writes_with_loss_warnings(tmp_path):
    sample = Sample(
        id="x_1", messages=[{"role": "user", "content": "q"}], tools=[Tool(name="f")],
        calls=[[Call(label="a", name="f", arguments={"v": 1}, response={"ok": True})],
               [Call(label="b", name="f", arguments={"v": "$a.ok$"})]],
    )
    answers = tmp_path / "a.json"
    warnings = write_samples([sample], tmp_path / "q.json", "bfcl", FormatOptions(answers_out=answers))
    assert warnings == [
        "1 call responses not written (BFCL has no place for them)",
        "1 single-turn samples with several steps written as one unordered set of calls",
    ]
    assert _json_lines(answers) == [{"id": "x_1", "ground_truth": [{"f": {"v": [1]}}, {"f": {"v": ["$a.ok$"]}}]}]
    assert _json_lines(tmp_path / "q.json")[0]["function"] == [
        {"name": "f", "description": "", "parameters": {"type": "object", "properties": {}}}
    ]


# ------------------------------------------------------------------------------ multi-turn


def test_multi_turn_tools_come_from_the_func_docs_and_cover_every_call():
    samples = _read_category("multi_turn_base")
    questions = {record["id"]: record for record in _json_lines(_question_file("multi_turn_base"))}
    for sample in samples:
        assert sample.tools, sample.id
        tool_names = sample.tool_names()
        assert all(call.name in tool_names for call in sample.all_calls()), sample.id
        assert len(sample.turns) + 1 == len(questions[sample.id]["question"])
    first = _by_id(samples)["multi_turn_base_0"]
    # TwitterAPI (14 docs) + GorillaFileSystem (18 docs) minus the excluded `cp`.
    assert len(first.tools) == 31
    assert "cp" not in first.tool_names()
    cat = next(t for t in first.tools if t.name == "cat")
    assert cat.meta == {"bfcl_class": "GorillaFileSystem"}
    assert cat.returns["properties"]["file_content"]["type"] == "string"
    assert first.meta["bfcl"]["excluded_function"] == ["cp"]
    assert first.meta["bfcl"]["initial_config"]["TwitterAPI"]["username"] == "analyst_pro"


def test_multi_turn_calls_one_per_step_with_positional_arguments_named():
    sample = _by_id(_read_category("multi_turn_base"))["multi_turn_base_0"]
    assert [[c.name for c in step] for step in sample.calls] == [["cd"], ["mkdir"], ["mv"]]
    assert sample.calls[2][0].arguments == {"source": "final_report.pdf", "destination": "temp"}
    assert [t.messages[0]["content"][:30] for t in sample.turns] == [
        "Perform a detailed search usin", "Upon identifying the requisite", "Move 'previous_report.pdf' in "]
    sort_call = sample.turns[1].calls[0][0]
    # `sort('final_report.pdf')`: the positional value is named by the doc's parameter order.
    assert (sort_call.label, sort_call.name, sort_call.arguments) == ("call_6", "sort", {"file_name": "final_report.pdf"})
    assert sample.meta["bfcl"]["call_positional"] == {"call_6": ["file_name"]}
    assert [c.label for c in sample.all_calls()] == [f"call_{i}" for i in range(1, 11)]


def test_unreproducible_call_text_is_kept_verbatim_until_the_call_changes(tmp_path):
    sample = _by_id(_read_category("multi_turn_base"))["multi_turn_base_15"]
    assert sample.meta["bfcl"]["call_text"] == {"call_7": "mean(numbers=[3,16,60])"}
    call = next(c for c in sample.all_calls() if c.label == "call_7")
    assert call.arguments == {"numbers": [3, 16, 60]}

    call.arguments = {"numbers": [3, 16]}
    answers = tmp_path / "answers.json"
    write_samples([sample], tmp_path / "q.json", "bfcl", FormatOptions(answers_out=answers))
    texts = [text for turn in _json_lines(answers)[0]["ground_truth"] for text in turn]
    assert "mean(numbers=[3, 16])" in texts
    assert "mean(numbers=[3,16,60])" not in texts


# ------------------------------------------------------------------------------ errors


def test_possible_answer_file_given_as_question_file_is_a_format_error():
    with pytest.raises(FormatError, match="possible-answer file"):
        list(read_samples(_answer_file("simple_python"), "bfcl"))


def test_other_json_lines_file_is_a_format_error(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"name": "not bfcl"}\n', encoding="utf-8")
    with pytest.raises(FormatError, match="not a BFCL question file"):
        list(read_samples(path, "bfcl"))


def test_missing_and_orphan_answers_are_rejected_with_reasons(tmp_path):
    questions = _json_lines(_question_file("simple_python"))[:3]
    answers = _json_lines(_answer_file("simple_python"))[1:4]
    question_path, answer_path = tmp_path / "q.json", tmp_path / "a.json"
    question_path.write_text("".join(json.dumps(r) + "\n" for r in questions), encoding="utf-8")
    answer_path.write_text("".join(json.dumps(r) + "\n" for r in answers), encoding="utf-8")
    items = list(read_samples(question_path, "bfcl", FormatOptions(answers=answer_path)))
    rejected = [item for item in items if isinstance(item, Rejected)]
    assert [s.id for s in items if isinstance(s, Sample)] == ["simple_python_1", "simple_python_2"]
    assert [(r.source, r.reason) for r in rejected] == [
        (f"{question_path}:1", f"no possible answer for id 'simple_python_0' in {answer_path}"),
        (f"{answer_path}:3", "possible answer for id 'simple_python_3' matches no question"),
    ]


def test_broken_line_is_rejected_and_the_run_goes_on(tmp_path):
    lines = _question_file("irrelevance").read_text(encoding="utf-8").splitlines()[:2]
    path = tmp_path / "q.json"
    path.write_text(lines[0] + "\n{not json\n" + lines[1] + "\n", encoding="utf-8")
    items = list(read_samples(path, "bfcl"))
    assert [type(item).__name__ for item in items] == ["Sample", "Rejected", "Sample"]
    assert items[1].source == f"{path}:2"


def test_multi_turn_file_without_its_func_docs_is_a_format_error(tmp_path):
    shutil.copy(_question_file("multi_turn_base"), tmp_path / "BFCL_v4_multi_turn_base.json")
    with pytest.raises(FormatError, match="multi_turn_func_doc"):
        list(read_samples(tmp_path / "BFCL_v4_multi_turn_base.json", "bfcl", FormatOptions(no_gold=True)))
