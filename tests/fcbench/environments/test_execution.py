"""Executing gold paths (fcbench.environments.execution) and comparing answers (fcbench.answers)."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import pytest

from fcbench.answers import NESTFUL_COMPARISON, AnswerComparison, ExecutionFailed, NumberMode, answers_match, gold_decimals
from fcbench.environments import CallOutcome, Environment, ErrorReason
from fcbench.environments.execution import ExecutionOptions, execute_gold_path, execute_gold_paths
from fcbench.sample import Call, Sample, Tool, Turn, sample_to_dict

# --- answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("gold", [0, 0.0, False, None, "", [], {}])
def test_a_failed_execution_never_equals_an_empty_gold_answer(gold):
    assert not answers_match(ExecutionFailed("timeout"), gold)
    assert not answers_match(ExecutionFailed("timeout"), gold, NESTFUL_COMPARISON)


def test_bool_is_not_a_number():
    assert not answers_match(True, 1) and not answers_match(1, True)
    assert not answers_match(False, 0) and not answers_match(0.0, False)
    assert answers_match(True, True) and not answers_match(True, False)
    assert not answers_match([1, 0], [True, False])


def test_numbers_with_tolerance():
    assert answers_match(6400, 6400.0)
    assert answers_match(0.1 + 0.2, 0.3)
    assert answers_match(1000000.5, 1000000.0, AnswerComparison(rel_tol=1e-6))
    assert not answers_match(1000002.0, 1000000.0, AnswerComparison(rel_tol=1e-6))
    assert answers_match(1e-12, 0, AnswerComparison(abs_tol=1e-9))
    assert not answers_match(0.001, 0, AnswerComparison(abs_tol=1e-9))
    assert answers_match(10**30 + 1, 10**30 + 1) and not answers_match(10**400, 10**400 + 1)  # no float overflow
    assert not answers_match(math.nan, math.nan)


def test_round_to_gold_mode_rounds_the_prediction_to_the_gold_decimals():
    assert gold_decimals(13.75) == 2 and gold_decimals(6400.0) == 1 and gold_decimals(7) is None
    assert gold_decimals(1e-05) is None and gold_decimals(0.16666666666666666) == 17  # exponent notation states no rounding
    assert answers_match(13.753521126760564, 13.75, NESTFUL_COMPARISON)  # a real NESTful sample
    assert not answers_match(13.753521126760564, 13.75)  # with tolerance it differs
    assert answers_match(6399.96, 6400.0, NESTFUL_COMPARISON)
    assert not answers_match(6399.94, 6400.0, NESTFUL_COMPARISON)
    assert answers_match(120, 120, NESTFUL_COMPARISON)
    assert answers_match(2 / 3, 0.6666666666666666, NESTFUL_COMPARISON)
    assert NESTFUL_COMPARISON.mode is NumberMode.ROUND_TO_GOLD


def test_lists_dicts_and_strings_compare_structurally():
    assert answers_match([1, 2.0, "a"], (1.0, 2, "a"))
    assert not answers_match([1, 2], [2, 1])
    assert not answers_match([1, 2], [1, 2, 3])
    assert answers_match({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]})
    assert not answers_match({"a": 1}, {"a": 1, "b": 2})
    assert answers_match("0009", "0009") and not answers_match("0009", 9) and not answers_match("9", 9)
    assert answers_match(None, None) and not answers_match(None, 0)


# --- executing gold paths ------------------------------------------------------------------


class FunctionEnvironment(Environment):
    """In-process tools for tests; records how calls arrive (one `call_step` per step)."""

    def __init__(self, functions: Mapping[str, Callable[..., Any]]) -> None:
        self.functions = functions
        self.steps_seen: list[list[str]] = []

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        try:
            return CallOutcome.success(self.functions[name](**arguments))
        except Exception as exc:
            return CallOutcome.failure(ErrorReason.TOOL_ERROR, repr(exc))

    def call_step(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        self.steps_seen.append([name for name, _ in calls])
        return super().call_step(calls)


RESULT_RETURNS = {"type": "object", "properties": {"result": {"type": "number"}}}
TOOLS = [Tool(name=name, returns=RESULT_RETURNS) for name in ("add", "div", "nothing")] + [Tool(name="hotels")]
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "add": lambda a, b: {"result": a + b},
    "div": lambda a, b: {"result": a / b},
    "nothing": lambda: None,
    "hotels": lambda city: {"hotels": [{"id": f"{city}-1", "stars": 4}, {"id": f"{city}-2", "stars": 5}]},
}


def make_sample(steps: list[list[Call]], answer: Any = None, **extra: Any) -> Sample:
    fields: dict[str, Any] = dict(id="s1", messages=[{"role": "user", "content": "q"}], tools=TOOLS, calls=steps, **extra)
    if answer is not None:
        fields["answer"] = answer
    return Sample(**fields)


def test_steps_run_in_order_with_parallel_calls_together_and_references_resolved():
    sample = make_sample(
        [
            [Call(label="var_1", name="add", arguments={"a": 1, "b": 2}), Call(label="var_2", name="add", arguments={"a": 10, "b": 20})],
            [Call(label="var_3", name="div", arguments={"a": "$var_2.result$", "b": "$var_1.result$"})],
        ],
        answer=10.0,
    )
    environment = FunctionEnvironment(FUNCTIONS)
    result = execute_gold_path(sample, environment)
    assert environment.steps_seen == [["add", "add"], ["div"]]
    assert result.ok and result.answer == 10.0 and result.matches_gold() is True
    assert [call.response for call in result.sample.all_calls()] == [{"result": 3}, {"result": 30}, {"result": 10.0}]
    assert result.path.runs[2].arguments == {"a": 30, "b": 3}
    # the input sample is untouched: no response appeared on its calls
    assert all("response" not in call.model_fields_set for call in sample.all_calls())
    assert result.sample.calls[1][0].arguments == {"a": "$var_2.result$", "b": "$var_1.result$"}  # gold keeps refs


def test_answer_is_the_whole_last_response_unless_a_single_output_is_declared():
    sample = make_sample([[Call(label="h", name="hotels", arguments={"city": "Rome"})]])
    result = execute_gold_path(sample, FunctionEnvironment(FUNCTIONS))
    assert result.answer == {"hotels": [{"id": "Rome-1", "stars": 4}, {"id": "Rome-2", "stars": 5}]}
    assert result.matches_gold() is None  # the sample has no gold answer
    picked = execute_gold_path(sample, FunctionEnvironment(FUNCTIONS), ExecutionOptions(answer_path=("hotels", 1, "id")))
    assert picked.answer == "Rome-2"
    wrong = execute_gold_path(sample, FunctionEnvironment(FUNCTIONS), ExecutionOptions(answer_path=("rooms",)))
    assert isinstance(wrong.answer, ExecutionFailed)


def test_a_failed_call_stops_the_path_and_never_matches_a_zero_gold_answer():
    sample = make_sample(
        [
            [Call(label="var_1", name="add", arguments={"a": 0, "b": 0})],
            [Call(label="var_2", name="div", arguments={"a": 1, "b": "$var_1.result$"})],
            [Call(label="var_3", name="add", arguments={"a": "$var_2.result$", "b": 0})],
        ],
        answer=0,
    )
    result = execute_gold_path(sample, FunctionEnvironment(FUNCTIONS))
    assert not result.ok and result.failure is not None and result.failure.label == "var_2"
    assert result.failure.outcome.reason is ErrorReason.TOOL_ERROR and "ZeroDivisionError" in result.failure.outcome.error
    assert isinstance(result.answer, ExecutionFailed) and result.answer.reason == "tool_error"
    assert result.matches_gold() is False
    calls = result.sample.all_calls()
    assert "response" in calls[0].model_fields_set
    assert "response" not in calls[1].model_fields_set and "response" not in calls[2].model_fields_set
    assert len(result.path.runs) == 2 and result.path.n_calls == 3


def test_a_null_response_is_stored_as_null_not_as_missing():
    sample = make_sample([[Call(label="n", name="nothing")]])
    result = execute_gold_path(sample, FunctionEnvironment(FUNCTIONS))
    assert result.ok and result.answer is None
    assert sample_to_dict(result.sample)["calls"][0][0]["response"] is None


def test_a_bad_reference_fails_the_path_with_its_reason():
    sample = make_sample([[Call(label="var_1", name="add", arguments={"a": 1, "b": 1})], [Call(label="var_2", name="add", arguments={"a": "$var_1.total$", "b": 1})]])
    result = execute_gold_path(sample, FunctionEnvironment(FUNCTIONS))
    assert result.failure is not None and result.failure.outcome.reason is ErrorReason.BAD_REFERENCE
    assert "var_2" in result.failure.outcome.error and "$var_1.total$" in result.failure.outcome.error


def test_later_turns_are_executed_after_the_first_and_get_their_responses():
    sample = make_sample(
        [[Call(label="var_1", name="add", arguments={"a": 1, "b": 1})]],
        turns=[Turn(messages=[{"role": "user", "content": "and double it"}], calls=[[Call(label="var_2", name="add", arguments={"a": "$var_1.result$", "b": "$var_1.result$"})]])],
    )
    result = execute_gold_path(sample, FunctionEnvironment(FUNCTIONS))
    assert result.ok and result.answer == 4
    assert result.sample.turns is not None and result.sample.turns[0].calls[0][0].response == {"result": 4}
    assert sample.turns is not None and "response" not in sample.turns[0].calls[0][0].model_fields_set


def test_many_samples_at_once_keep_their_order():
    samples = [make_sample([[Call(label="x", name="add", arguments={"a": i, "b": 1})]], answer=i + 1).model_copy(update={"id": f"s{i}"}) for i in range(5)]
    results = execute_gold_paths(samples, FunctionEnvironment(FUNCTIONS))
    assert [result.sample.id for result in results] == ["s0", "s1", "s2", "s3", "s4"]
    assert all(result.matches_gold() for result in results)


def test_round_to_gold_does_not_round_against_an_int_or_exponent_gold():
    """The filter once kept 2.4 for a gold 2 and 1.2e-05 for 1e-05 while the scorer counted both as
    losses; the one comparison now says no to both, as the scorer did."""
    assert not answers_match(2.4, 2, NESTFUL_COMPARISON)
    assert not answers_match(1.2e-05, 1e-05, NESTFUL_COMPARISON)
    assert answers_match(2.0000000001, 2, NESTFUL_COMPARISON)  # float noise only
    assert not answers_match(10**30 + 1, 10**30, NESTFUL_COMPARISON)  # ints are exact


def test_filter_verdict_equals_nestful_scorer_verdict_on_the_same_answers():
    """A sample the filter keeps must be a sample the right answer wins in the scorer."""
    from fcbench.score.nestful import final_answers_match

    cases = [(2.4, 2), (1.2e-05, 1e-05), (13.753521126760564, 13.75), (6399.96, 6400.0), (6399.94, 6400.0),
             (40.4, 40), (40.0000000001, 40), (True, 1), ((5, 4), [5, 4]), ("0009", 9), (None, None),
             ([1.0, {"a": 2.004}], [1, {"a": 2.0}]), (float("inf"), float("inf")), (10**400, 10**400)]
    for predicted, gold in cases:
        assert answers_match(predicted, gold, NESTFUL_COMPARISON) == final_answers_match(predicted, gold), (predicted, gold)
