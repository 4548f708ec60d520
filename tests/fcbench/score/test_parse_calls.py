"""Reading calls out of raw model text: the shapes found in the real NESTful prediction files."""

from __future__ import annotations

import json
from functools import cache

from conftest import EXTERNAL

from fcbench.score.parse_calls import parse_calls, parse_whole_json

PREDICTIONS = EXTERNAL / "nestful" / "predictions"


@cache
def _lines(name: str) -> tuple[dict, ...]:
    with open(PREDICTIONS / name, encoding="utf-8") as handle:
        return tuple(json.loads(line) for line in handle)


def _text(name: str, index: int) -> str:
    return _lines(name)[index]["generated_text"]


VANILLA = "nestful_0-qwen3-8b-8bit-vanilla.jsonl"
COT = "nestful_0-qwen3-8b-8bit-cot.jsonl"
MIXED = "nestful_0-qwen3-8b-8bit.jsonl"  # the 10-line run mixing every shape


def test_vanilla_json_list():
    parsed = parse_calls(_text(VANILLA, 0))
    assert parsed.ok
    assert len(parsed.calls) == 5
    assert parsed.calls[0] == {"name": "add", "label": "$var_1", "arguments": {"arg_0": 20, "arg_1": 80}}
    assert parsed.calls[-1] == {
        "name": "multiply",
        "label": "$var_5",
        "arguments": {"arg_0": 100, "arg_1": "$var_4.result$"},
    }


def test_cot_prose_then_list():
    text = _text(COT, 0)
    assert text.startswith("To solve this problem")
    parsed = parse_calls(text)
    assert [call["name"] for call in parsed.calls] == ["multiply", "add", "add", "divide", "multiply"]
    assert parsed.calls[0]["arguments"] == {"arg_0": 0.25, "arg_1": 80}


def test_cot_list_in_code_fence():
    parsed = parse_calls(_text(COT, 40))
    assert [call["name"] for call in parsed.calls] == ["divide", "multiply", "subtract"]


def test_cot_one_call_list_per_step_is_one_sequence():
    parsed = parse_calls(_text(COT, 23))
    assert [call["label"] for call in parsed.calls] == [f"$var_{i}" for i in range(1, 6)]
    assert parsed.calls[2]["arguments"] == {"arg_0": "$var_1.result$", "arg_1": "$var_2.result$"}


def test_mixed_file_every_line_parses():
    parsed = [parse_calls(line["generated_text"]) for line in _lines(MIXED)]
    assert all(p.ok for p in parsed)
    assert [len(p.calls) for p in parsed] == [4, 10, 1, 2, 1, 2, 1, 1, 1, 1]


def test_mixed_single_object_instead_of_list():
    assert parse_calls(_text(MIXED, 2)).calls == [
        {"name": "add", "label": "$var_1", "arguments": {"arg_0": 1, "arg_1": 1.2}}
    ]


def test_mixed_one_object_per_line():
    calls = parse_calls(_text(MIXED, 3)).calls
    assert [call["name"] for call in calls] == ["find_kth_largest", "convert_to_float_or_string"]
    assert calls[1]["arguments"] == {"input_string": "$var_1.result$"}


def test_mixed_thought_action_text():
    text = _text(MIXED, 7)
    assert text.startswith("Thought:") and "\nAction:\n" in text
    assert parse_calls(text).calls == [
        {"name": "multiply", "label": "$var_1", "arguments": {"arg_0": 60, "arg_1": 0.2777777777777778}}
    ]


def test_mixed_nested_dict_arguments_kept_as_values():
    calls = parse_calls(_text(MIXED, 6)).calls
    assert len(calls) == 1
    assert calls[0]["arguments"]["arg_0"] == {"label": "$var_2", "arguments": {"arg_0": 1}}


def test_cut_off_list_keeps_the_complete_calls():
    text = _text(VANILLA, 14)
    assert text.count('"name"') == 15 and not text.rstrip().endswith("]")
    calls = parse_calls(text).calls
    assert len(calls) == 14  # the 15th call is cut off mid-way
    assert calls[-1] == {"name": "subtract", "label": "$var_14", "arguments": {"arg_0": "$var_13.result$", "arg_1": 3}}


def test_fraction_written_as_python_arithmetic():
    # `"arg_1": 1/7` is not JSON; read as a literal with ast, never evaluated as code.
    calls = parse_calls(_text(VANILLA, 41)).calls
    assert len(calls) == 9
    assert calls[0]["arguments"] == {"arg_0": 1, "arg_1": 1 / 7}
    assert parse_calls(_text(COT, 7)).calls[0]["arguments"] == {"arg_0": 60, "arg_1": 5 / 18}


def test_explicit_empty_list_is_an_answer_not_a_failure():
    text = _text(COT, 13)
    assert text.rstrip().endswith("[]")
    parsed = parse_calls(text)
    assert parsed.ok and parsed.calls == []


def test_unreadable_texts_fail_with_a_reason():
    names_only = parse_calls(_text(COT, 53))  # ["elementwise_division", "max_len_substring_same_char"]
    assert not names_only.ok and names_only.error
    sets = parse_calls(_text(VANILLA, 18))  # {"$var_2.result$"}: a set, in JSON or Python
    assert not sets.ok
    assert not parse_calls("").ok
    assert not parse_calls(None).ok  # type: ignore[arg-type]


def test_think_block_and_tags_are_dropped():
    text = '<think>[{"name": "draft", "arguments": {}}]</think>\n<tool_call>{"name": "add", "arguments": {"arg_0": 1}}</tool_call><|im_end|>'
    assert parse_calls(text).calls == [{"name": "add", "arguments": {"arg_0": 1}}]


def test_openai_tool_calls_shape():
    text = json.dumps(
        {"tool_calls": [{"type": "function", "function": {"name": "add", "arguments": '{"arg_0": 1, "arg_1": 2}'}}]}
    )
    assert parse_calls(text).calls == [{"name": "add", "arguments": {"arg_0": 1, "arg_1": 2}}]


def test_python_style_calls_read_with_ast():
    parsed = parse_calls('[add(arg_0=1, arg_1=2), multiply("$var_1.result$", 3)]')
    assert parsed.calls == [
        {"name": "add", "arguments": {"arg_0": 1, "arg_1": 2}},
        {"name": "multiply", "arguments": {"arg_0": "$var_1.result$", "arg_1": 3}},
    ]


def test_code_in_the_text_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    text = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    assert not parse_calls(text).ok
    assert not parse_calls(f"[{text}]").ok
    assert not marker.exists()


def test_tool_spec_echo_is_not_a_call():
    spec = {"name": "add", "description": "add two numbers", "parameters": {"arg_0": {"type": "int"}}}
    assert not parse_calls(json.dumps(spec)).ok


def test_whole_json_reading_for_compat():
    ok, value = parse_whole_json(_text(VANILLA, 0))
    assert ok and isinstance(value, list) and len(value) == 5
    assert parse_whole_json(_text(COT, 0)) == (False, None)  # prose before the list
    assert parse_whole_json(_text(MIXED, 3)) == (False, None)  # one object per line
    ok, value = parse_whole_json(_text(MIXED, 2))
    assert ok and value["name"] == "add"  # a single object is a JSON value (grounding rejects it later)
    # the reference's second attempt: newlines removed (a raw newline inside a string)
    assert parse_whole_json('[{"name": "f", "arguments": {"s": "a\nb"}}]') == (
        True,
        [{"name": "f", "arguments": {"s": "ab"}}],
    )
