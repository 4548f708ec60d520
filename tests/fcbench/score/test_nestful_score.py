"""NESTful metrics: hand-worked examples, the reference scorer's defects (default vs compat), the
real prediction files against the figures the reference scorer published for them, and win rate
executed in the real python environment."""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Any

import pytest
from conftest import EXTERNAL, REPO

from fcbench.references import parse_reference
from fcbench.sample import Call, Sample, Tool
from fcbench.score.nestful import NestfulScoreError, final_answers_match, environment_executor, score_nestful
from fcbench.score.parse_calls import parse_calls

PREDICTIONS = EXTERNAL / "nestful" / "predictions"
MATH_TOOLS = REPO / "datasets" / "nestful-math" / "tools.py"


def _spec(name: str, *parameters: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": name,
        "parameters": {p: {"type": "int or float"} for p in parameters},
        "output_parameters": {"result": {"type": "int or float"}},
    }


TOOLS = [
    _spec("add", "arg_0", "arg_1"),
    _spec("subtract", "arg_0", "arg_1"),
    _spec("multiply", "arg_0", "arg_1"),
    _spec("divide", "arg_0", "arg_1"),
    _spec("max_number", "arg_0"),
    _spec("sqrt", "arg_0"),
]
_FUNCTIONS = {
    "add": lambda arg_0, arg_1: arg_0 + arg_1,
    "subtract": lambda arg_0, arg_1: arg_0 - arg_1,
    "multiply": lambda arg_0, arg_1: arg_0 * arg_1,
    "divide": lambda arg_0, arg_1: arg_0 / arg_1,
    "max_number": lambda arg_0: max(arg_0),
    "sqrt": lambda arg_0: math.sqrt(arg_0),
}


def keyword_executor(calls: list[dict[str, Any]], tools: Any) -> tuple[bool, Any]:
    """A small in-process executor for the pure tests: keyword binding, references resolved."""
    outputs: dict[str, Any] = {}

    def resolve(value: Any) -> Any:
        reference = parse_reference(value)
        if reference is not None:
            found = outputs[reference.label]
            for key in reference.path:
                found = found[key]
            return found
        return [resolve(item) for item in value] if isinstance(value, list) else value

    for call in calls:
        try:
            outputs[call["label"]] = {
                "result": _FUNCTIONS[call["name"]](**{k: resolve(v) for k, v in call["arguments"].items()})
            }
        except Exception:  # noqa: BLE001 - a failing tool fails the chain
            return False, None
    return True, outputs[calls[-1]["label"]]["result"]


def call(label: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "label": label, "arguments": arguments}


_NO_ANSWER = object()


def line(sample_id: str, gold: list[dict], predicted: list[dict], answer: Any = _NO_ANSWER) -> dict:
    """A prediction line carrying its gold the way the published files do (JSON-encoded strings)."""
    record: dict[str, Any] = {
        "sample_id": sample_id,
        "output": json.dumps(gold),
        "tools": json.dumps(TOOLS),
        "calls": predicted,
    }
    if answer is not _NO_ANSWER:
        record["gold_answer"] = json.dumps(answer)
    return record


def both(lines: list[dict], executor=None):
    return score_nestful(lines, compat=False, executor=executor), score_nestful(lines, compat=True, executor=executor)


# --- hand-worked examples -------------------------------------------------------------------------

GOLD_CHAIN = [
    call("$var_1", "add", arg_0=1, arg_1=2),
    call("$var_2", "add", arg_0="$var_1.result$", arg_1=3),
    call("$var_3", "multiply", arg_0="$var_2.result$", arg_1=2),
]
# add is called twice in the gold but once here; sqrt is in no gold at all (hallucinated).
PREDICTED_CHAIN = [
    call("$var_1", "add", arg_0=1, arg_1=2),
    call("$var_2", "multiply", arg_0="$var_1.result$", arg_1=3),
    call("$var_3", "sqrt", arg_0="$var_2.result$"),
]


def test_function_f1_counts_repeats_and_hallucinations():
    default, compat = both([line("s1", GOLD_CHAIN, PREDICTED_CHAIN)])
    # default: gold {add, add, multiply}, predicted {add, multiply, sqrt}: 2 matched -> 2*2/(3+3)
    assert default.summary["f1_func"] == pytest.approx(4 / 6)
    # reference: one row of names as sets, labels from the gold only: add and multiply both found,
    # the missing second add and the hallucinated sqrt cost nothing
    assert compat.summary["f1_func"] == pytest.approx(1.0)


def test_parameter_f1_hand_worked():
    default, compat = both([line("s1", GOLD_CHAIN, PREDICTED_CHAIN)])
    # default, references grounded to the producing function:
    # gold  (add,arg_0,1) (add,arg_1,2) (add,arg_0,$add.result$) (add,arg_1,3) (multiply,arg_0,$add.result$) (multiply,arg_1,2)
    # pred  (add,arg_0,1) (add,arg_1,2) (multiply,arg_0,$add.result$) (multiply,arg_1,3) (sqrt,arg_0,$multiply.result$)
    # 3 matched -> 2*3/(6+5)
    assert default.summary["f1_param"] == pytest.approx(6 / 11)
    # reference: the second gold add overwrites the first; rows add / multiply / sqrt; gold labels:
    # "arg_0 = $add.result$" (gold rows add+multiply, predicted in multiply: tp1 fn1 -> 2/3),
    # "arg_1 = 3" (gold add, predicted in multiply: 0), "arg_1 = 2" (gold multiply, predicted in add: 0)
    assert compat.summary["f1_param"] == pytest.approx((2 / 3 + 0 + 0) / 3)


def test_partial_and_full_accuracy_same_length():
    default, compat = both([line("s1", GOLD_CHAIN, PREDICTED_CHAIN)])
    # only the first call is right, at the right place
    assert default.summary["partial_acc"] == pytest.approx(1 / 3)
    assert compat.summary["partial_acc"] == pytest.approx(1 / 3)
    assert default.summary["full_acc"] == compat.summary["full_acc"] == 0.0


def test_partial_accuracy_missing_last_call():
    gold = [call("$var_1", "add", arg_0=1, arg_1=2), call("$var_2", "multiply", arg_0="$var_1.result$", arg_1=3)]
    default, compat = both([line("s1", gold, gold[:1])])
    assert default.summary["partial_acc"] == compat.summary["partial_acc"] == pytest.approx(1 / 2)


def test_partial_accuracy_extra_first_call_alignment_defect():
    gold = [call("$var_1", "add", arg_0=1, arg_1=2), call("$var_2", "multiply", arg_0="$var_1.result$", arg_1=3)]
    predicted = [
        call("$var_1", "subtract", arg_0=5, arg_1=1),
        call("$var_2", "add", arg_0=1, arg_1=2),
        call("$var_3", "multiply", arg_0="$var_2.result$", arg_1=3),
    ]
    default, compat = both([line("s1", gold, predicted)])
    # default: both gold calls found in order (labels renumbered, grounded alike) -> 2 of 3
    assert default.summary["partial_acc"] == pytest.approx(2 / 3)
    # reference: the greedy padding spends the whole gold against the extra call: 0 of 5 positions
    assert compat.summary["partial_acc"] == 0.0


def test_renumbered_labels_still_a_full_match():
    predicted = [
        call("$var_5", "add", arg_0=1, arg_1=2),
        call("$var_8", "add", arg_0="$var_5.result$", arg_1=3),
        call("$var_9", "multiply", arg_0="$var_8.result$", arg_1=2),
    ]
    default, compat = both([line("s1", GOLD_CHAIN, predicted)])
    assert default.items[0]["full_match"] and compat.items[0]["full_match"]
    assert default.summary["f1_param"] == compat.summary["f1_param"] == 1.0


def test_references_inside_dicts_are_grounded_only_by_default():
    gold = [
        call("$var_1", "add", arg_0=1, arg_1=2),
        call("$var_2", "f", options={"n": "$var_1.result$"}, values=["$var_1.result$", 4]),
    ]
    predicted = [
        call("$var_7", "add", arg_0=1, arg_1=2),
        call("$var_8", "f", options={"n": "$var_7.result$"}, values=["$var_7.result$", 4]),
    ]
    default, compat = both([line("s1", gold, predicted)])
    assert default.items[0]["full_match"]
    # the reference grounds strings directly inside lists, not inside dicts: `options` differs
    assert not compat.items[0]["full_match"]
    assert compat.summary["partial_acc"] == pytest.approx(1 / 2)


def test_dataset_averages_and_items_in_input_order():
    lines = [line("a", GOLD_CHAIN, GOLD_CHAIN), line("b", GOLD_CHAIN, PREDICTED_CHAIN), line("c", GOLD_CHAIN, [])]
    default = score_nestful(lines)
    assert default.summary == {
        "n": 3,
        "f1_func": pytest.approx((1 + 4 / 6 + 0) / 3),
        "f1_param": pytest.approx((1 + 6 / 11 + 0) / 3),
        "partial_acc": pytest.approx((1 + 1 / 3 + 0) / 3),
        "full_acc": pytest.approx(1 / 3),
        "win_rate": None,  # no executor given
    }
    assert default.items == [
        {"sample_id": "a", "win": None, "full_match": True},
        {"sample_id": "b", "win": None, "full_match": False},
        {"sample_id": "c", "win": None, "full_match": False},
    ]


# --- win rate and the reference's execution defects -----------------------------------------------


def test_failed_chain_never_wins_against_gold_zero_by_default():
    gold = [call("$var_1", "subtract", arg_0=3, arg_1=3)]
    failing = [call("$var_1", "divide", arg_0=1, arg_1=0)]  # ZeroDivisionError
    default, compat = both([line("answer-0", gold, failing, answer=0)], keyword_executor)
    assert default.items[0]["win"] is False
    # the reference turns the failure into `False`, and False == 0 in Python: a "win"
    assert compat.items[0]["win"] is True
    assert compat.summary["win_rate"] == 1.0 and default.summary["win_rate"] == 0.0


def test_unrunnable_chain_against_gold_false():
    gold = [call("$var_1", "f")]
    dangling = [call("$var_1", "add", arg_0="$var_9.result$", arg_1=1)]  # reads a label never defined
    default, compat = both([line("answer-false", gold, dangling, answer=False)], keyword_executor)
    assert default.items[0]["win"] is False
    assert compat.items[0]["win"] is True


def test_empty_prediction_never_wins_in_either_mode():
    default, compat = both([line("answer-0", [call("$var_1", "f")], [], answer=0)], keyword_executor)
    assert default.items[0]["win"] is False and compat.items[0]["win"] is False


def test_arguments_bound_by_keyword_by_default_by_position_in_compat():
    gold = [call("$var_1", "subtract", arg_0=10, arg_1=3)]
    swapped = [{"name": "subtract", "label": "$var_1", "arguments": {"arg_1": 3, "arg_0": 10}}]
    default, compat = both([line("answer-7", gold, swapped, answer=7)], keyword_executor)
    assert default.items[0]["win"] is True  # subtract(arg_0=10, arg_1=3)
    assert compat.items[0]["win"] is False  # the reference runs subtract(3, 10)

    seen: list[dict] = []

    def recording(calls, tools):
        seen.extend(calls)
        return keyword_executor(calls, tools)

    score_nestful([line("answer-7", gold, swapped, answer=7)], compat=True, executor=recording)
    assert seen == [{"label": "var_1", "name": "subtract", "arguments": {"arg_0": 3, "arg_1": 10}}]


def test_compat_reads_only_the_declared_output_key():
    # NESTful's scorer looks up results[label][key] with no fallback: `.output_0` of a tool whose
    # output is `result` fails before anything runs.
    gold = [call("$var_1", "add", arg_0=1, arg_1=2), call("$var_2", "multiply", arg_0="$var_1.result$", arg_1=2)]
    wrong_key = [call("$var_1", "add", arg_0=1, arg_1=2), call("$var_2", "multiply", arg_0="$var_1.output_0$", arg_1=2)]
    calls_seen: list[int] = []

    def counting(calls, tools):
        calls_seen.append(len(calls))
        return keyword_executor(calls, tools)

    report = score_nestful([line("answer-6", gold, wrong_key, answer=6)], compat=True, executor=counting)
    assert report.items[0]["win"] is False and calls_seen == []


def test_float_answer_rounded_to_gold_decimals_in_both_modes():
    gold = [call("$var_1", "divide", arg_0=10, arg_1=3)]
    default, compat = both([line("answer-3.33", gold, gold, answer=3.33)], keyword_executor)
    assert default.items[0]["win"] and compat.items[0]["win"]


def test_answers_match_rules():
    assert final_answers_match(97.96, 98.0)  # rounded to the gold's one decimal
    assert not final_answers_match(40.4, 40)  # an int gold is not rounded against
    assert final_answers_match(40.0000000001, 40)
    assert not final_answers_match(1, True) and not final_answers_match(0, False)
    assert final_answers_match((5, 4), [5, 4])
    assert not final_answers_match("0009", 9)


def test_executor_that_raises_is_a_failed_chain():
    def broken(calls, tools):
        raise RuntimeError("worker died")

    default, compat = both(
        [
            line(
                "answer-3",
                [call("$var_1", "add", arg_0=1, arg_1=2)],
                [call("$var_1", "add", arg_0=1, arg_1=2)],
                answer=3,
            )
        ],
        broken,
    )
    assert default.items[0]["win"] is False and compat.items[0]["win"] is False


# --- gold sources ---------------------------------------------------------------------------------


def test_gold_from_a_canonical_sample():
    sample = Sample(
        id="s1",
        messages=[{"role": "user", "content": "1 + 2, times 2?"}],
        tools=[
            Tool(
                name=name,
                parameters={"type": "object", "properties": {"arg_0": {}, "arg_1": {}}},
                returns={"type": "object", "properties": {"result": {}}},
            )
            for name in ("add", "multiply")
        ],
        calls=[
            [Call(label="var_1", name="add", arguments={"arg_0": 1, "arg_1": 2})],
            [Call(label="var_2", name="multiply", arguments={"arg_0": "$var_1.result$", "arg_1": 2})],
        ],
        answer=6,
    )
    prediction = {
        "sample_id": "s1",
        "generated_text": json.dumps(
            [call("$var_1", "add", arg_0=1, arg_1=2), call("$var_2", "multiply", arg_0="$var_1.result$", arg_1=2)]
        ),
    }
    for compat in (False, True):
        report = score_nestful([prediction], {"s1": sample}, compat=compat, executor=keyword_executor)
        assert report.items == [{"sample_id": "s1", "win": True, "full_match": True}]


def test_missing_gold_is_a_clear_error_and_a_line_without_sample_id_is_listed():
    with pytest.raises(NestfulScoreError, match="no gold for sample 'x'"):
        score_nestful([{"sample_id": "x", "generated_text": "[]"}])
    report = score_nestful([{"generated_text": "[]"}], {})
    assert report.gold_set["unreadable"] == [{"line": 1, "error": "no sample_id"}] and report.items == []
    with pytest.raises(NestfulScoreError, match="line 1: a prediction line has no sample_id"):
        score_nestful([{"generated_text": "[]"}], compat=True)


def test_with_a_gold_every_gold_sample_is_an_item_and_a_missing_one_is_wrong():
    gold = [call("$var_1", "add", arg_0=1, arg_1=2)]
    golds = {"s1": line("s1", gold, [], answer=3), "s2": line("s2", [], [], answer=0)}
    answered = line("s1", gold, gold, answer=3)
    foreign = line("s9", gold, gold, answer=3)  # right against the gold it carries, but not in the gold
    for compat in (False, True):
        report = score_nestful([foreign, answered], golds, compat=compat, executor=keyword_executor)
        assert [item["sample_id"] for item in report.items] == ["s1", "s2"]
        # s2's gold is empty: an empty prediction would match it, a missing one does not
        assert report.items[1] == {"sample_id": "s2", "win": False, "full_match": False, "missing": True}
        assert report.summary["full_acc"] == 0.5 and report.summary["win_rate"] == 0.5
        assert report.gold_set["foreign"] == [{"line": 1, "id": "s9"}] and report.gold_set["missing"] == ["s2"]


# --- the real prediction files --------------------------------------------------------------------


@cache
def _file(name: str) -> tuple[dict, ...]:
    with open(PREDICTIONS / name, encoding="utf-8") as handle:
        return tuple(json.loads(text) for text in handle)


def _with_calls(lines: tuple[dict, ...], calls_by_index: dict[int, list] | None = None) -> list[dict]:
    """The lines with `calls` read by our parser (or given), in place of the raw text."""
    result = []
    for index, item in enumerate(lines):
        calls = (calls_by_index or {}).get(index)
        record = {key: value for key, value in item.items() if key != "generated_text"}
        record["calls"] = calls if calls is not None else parse_calls(item["generated_text"]).calls
        result.append(record)
    return result


def _rounded(summary: dict) -> dict:
    return {key: round(value, 3) if isinstance(value, float) else value for key, value in summary.items()}


# The third party who published these files ran NESTful's scorer on them (its calculate_scores,
# compute_score_sklearn and post_process_api_with_args, unchanged) with a lenient parser of its own,
# and logged the figures in `nohup1.out` / `nohup2.out` of Sarmagan/nestful-benchmark-hf@dbda841:
PUBLISHED_ICL = {"f1_func": 0.919, "f1_param": 0.517, "partial_acc": 0.276, "full_acc": 0.180}  # 2 parsing errors
PUBLISHED_COT = {"f1_func": 0.784, "f1_param": 0.381, "partial_acc": 0.173, "full_acc": 0.040}  # 12 parsing errors


def test_compat_reproduces_the_published_icl_figures():
    # On this file our parser reads the same calls as the third party's (its two parsing errors are
    # two `[]` answers: no calls either way), so the published figures must come out exactly.
    report = score_nestful(_with_calls(_file("nestful_3-qwen3-8b-8bit-icl.jsonl")), compat=True)
    summary = _rounded(report.summary)
    assert {key: summary[key] for key in PUBLISHED_ICL} == PUBLISHED_ICL
    assert summary["n"] == 100


def test_compat_reproduces_the_published_cot_figures():
    # Lines where the third party's parser read differently from ours (checked by reading each text):
    # it takes the first '['..last ']' span when that is valid JSON, even a list of numbers (3, 87:
    # no calls); it drops a whole list holding `5/18` and then finds only the object after it (7);
    # texts whose only calls use Python arithmetic (12: `3/5`, 16: `1/15`, 59: `3 * 8 * 2`) give none.
    lines = _file("nestful_0-qwen3-8b-8bit-cot.jsonl")
    seven = parse_calls(lines[7]["generated_text"]).calls
    assert [c["name"] for c in seven] == ["multiply", "multiply"]
    third_party_reading = {3: [], 87: [], 7: seven[1:], 12: [], 16: [], 59: []}
    report = score_nestful(_with_calls(lines, third_party_reading), compat=True)
    summary = _rounded(report.summary)
    assert {key: summary[key] for key in PUBLISHED_COT} == PUBLISHED_COT


def test_compat_on_raw_text_reads_the_whole_text_as_json():
    icl = _file("nestful_3-qwen3-8b-8bit-icl.jsonl")
    report = score_nestful(list(icl), compat=True)
    # only line 44 (a list cut off mid-way) is not one JSON value; losing its calls moves f1_param
    # from the published 0.517 to 0.518 and nothing else at three decimals
    assert report.parse_failures == [icl[44]["sample_id"]]
    assert _rounded(report.summary) == {
        "n": 100,
        "f1_func": 0.919,
        "f1_param": 0.518,
        "partial_acc": 0.276,
        "full_acc": 0.18,
        "win_rate": None,
    }

    cot = _file("nestful_0-qwen3-8b-8bit-cot.jsonl")
    cot_report = score_nestful(list(cot), compat=True)
    # prose before the list makes 93 texts unreadable as JSON; 2 more decode but do not ground
    # (48: a single object, 53: a list of names)
    assert len(cot_report.parse_failures) == 95
    assert {cot[48]["sample_id"], cot[53]["sample_id"]} <= set(cot_report.parse_failures)
    assert cot_report.summary["f1_func"] < 0.25


def test_default_on_a_real_line_by_hand():
    record = _file("nestful_3-qwen3-8b-8bit.jsonl")[0]
    report = score_nestful([record])
    # gold divide, multiply($divide), add(20, $multiply); predicted multiply(80, 0.25),
    # add($multiply, 20), divide($multiply, $add), multiply($divide, 100)
    assert report.summary["f1_func"] == pytest.approx(6 / 7)  # 3 of 3 gold names, 4 predicted
    assert report.summary["f1_param"] == pytest.approx(2 / 14)  # only multiply.arg_0 = $divide.result$
    assert report.summary["partial_acc"] == 0.0
    assert report.parse_failures == []


def test_default_parses_every_shape_of_the_mixed_file():
    default = score_nestful(list(_file("nestful_0-qwen3-8b-8bit.jsonl")))
    compat = score_nestful(list(_file("nestful_0-qwen3-8b-8bit.jsonl")), compat=True)
    assert default.parse_failures == []
    assert len(compat.parse_failures) == 8  # only the two JSON-list lines are read by the reference


# --- win rate in the real python environment ------------------------------------------------------


@pytest.fixture(scope="module")
def math_executor():
    from fcbench.environments.python_env import PythonEnvironment

    with PythonEnvironment(MATH_TOOLS, workers=1) as environment:
        yield environment_executor(environment)


def test_gold_paths_win_on_every_math_sample(math_executor):
    lines = _file("nestful_0-qwen3-8b-8bit-vanilla.jsonl")
    gold_as_prediction = [{**item, "calls": json.loads(item["output"])} for item in lines]
    # math samples label their calls `$var_1`; the 21 code samples `$var1` (their tools live in
    # py_code_file_N.py, not in basic_functions, so they cannot run here)
    math_ids = {item["sample_id"] for item in lines if json.loads(item["output"])[0]["label"].startswith("$var_")}
    assert len(math_ids) == 79
    for compat in (False, True):
        report = score_nestful(gold_as_prediction, compat=compat, executor=math_executor)
        assert report.summary["f1_func"] == report.summary["full_acc"] == 1.0
        assert {item["sample_id"] for item in report.items if item["win"]} == math_ids


def test_model_predictions_executed(math_executor):
    lines = _file("nestful_3-qwen3-8b-8bit.jsonl")
    default, compat = both(list(lines), math_executor)
    # line 9: multiply(23, 5) = 115, subtract(529, 115) = 414, divide(414, 23) = 18.0 == gold 18.0
    assert default.items[9]["win"] and compat.items[9]["win"]
    # line 4: subtract(95, 59) = 36, subtract(36, 32) = 4, add -> 40, gold 27.0
    assert not default.items[4]["win"] and not compat.items[4]["win"]
    assert default.summary["win_rate"] == compat.summary["win_rate"] == pytest.approx(0.2)

    vanilla = _file("nestful_0-qwen3-8b-8bit-vanilla.jsonl")
    default, compat = both(list(vanilla), math_executor)
    assert default.summary["win_rate"] == pytest.approx(0.19)
    assert compat.summary["win_rate"] == pytest.approx(0.19)


def test_sample_without_gold_answer_is_left_out_of_win_rate():
    gold = [call("$var_1", "add", arg_0=1, arg_1=2)]
    lines = [line("no-answer", gold, gold), line("answer-3", gold, gold, answer=3)]
    for report in both(lines, keyword_executor):
        assert [item["win"] for item in report.items] == [None, True]
        assert report.summary["win_rate"] == 1.0


def test_var_result_pseudo_call_is_not_scored_by_default():
    gold = [
        call("$var_1", "add", arg_0=1, arg_1=2),
        {"name": "var_result", "label": "$var_r", "arguments": {"x": "$var_1.result$"}},
    ]
    default, compat = both([line("s1", gold, gold[:1])])
    assert default.items[0]["full_match"] and compat.items[0]["full_match"]
