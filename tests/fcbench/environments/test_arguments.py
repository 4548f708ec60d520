"""Pure helpers every environment shares: schema coercion, defaults, call keys, `run_path` and the
compact form a worker answers in."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from fcbench.environments import (
    ArgumentCoercer,
    CallOutcome,
    ErrorReason,
    PathRun,
    PlannedCall,
    coerce_arguments,
    coerce_value,
    normalise_json,
    run_path,
    with_defaults,
)

INT_OR_FLOAT = {"type": ["integer", "number"], "x-source-type": "int or float"}  # NESTful "int or float"


def test_values_that_fit_are_left_alone():
    assert coerce_value(5, {"type": "integer"}) == 5
    assert coerce_value(2.5, INT_OR_FLOAT) == 2.5
    assert coerce_value("abc", {"type": "string"}) == "abc"
    assert coerce_value(True, {"type": "boolean"}) is True
    arguments = {"arg_0": 1, "arg_1": 0.5}
    coercer = ArgumentCoercer({"type": "object", "properties": {"arg_0": INT_OR_FLOAT, "arg_1": INT_OR_FLOAT}})
    assert coercer(arguments) is arguments  # nothing to change: no copy


def test_lossless_conversions():
    assert coerce_value(5.0, {"type": "integer"}) == 5 and type(coerce_value(5.0, {"type": "integer"})) is int
    assert coerce_value("12", {"type": "integer"}) == 12
    assert coerce_value("12.0", {"type": "integer"}) == 12
    assert coerce_value("2.5", {"type": "number"}) == 2.5
    assert coerce_value("-3", INT_OR_FLOAT) == -3
    assert coerce_value("TRUE", {"type": "boolean"}) is True
    assert coerce_value(7, {"type": "string"}) == "7"
    assert coerce_value("[1, 2]", {"type": "array", "items": {"type": "number"}}) == [1, 2]
    assert coerce_value('{"a": 1}', {"type": "object"}) == {"a": 1}
    assert coerce_value(["1", 2.0], {"type": "array", "items": {"type": "integer"}}) == [1, 2]
    nested = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert coerce_value({"n": "4", "other": "x"}, nested) == {"n": 4, "other": "x"}
    assert coerce_value("3", {"anyOf": [{"type": "integer"}, {"type": "null"}]}) == 3


def test_values_that_cannot_be_converted_are_left_for_the_tool():
    assert coerce_value(2.5, {"type": "integer"}) == 2.5  # NESTful `sqrt` says int, gets floats
    assert coerce_value("abc", {"type": "number"}) == "abc"
    assert coerce_value("nan", {"type": "number"}) == "nan"
    assert coerce_value(True, {"type": "integer"}) is True  # bool is not an integer here
    assert coerce_value("yes", {"type": "boolean"}) == "yes"
    assert coerce_value("[1,", {"type": "array"}) == "[1,"
    assert coerce_value(3, {}) == 3  # no type: anything goes


def test_coerce_arguments_passes_unknown_arguments():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert coerce_arguments({"n": "1", "extra": "2"}, schema) == {"n": 1, "extra": "2"}
    assert coerce_arguments({"n": "1"}, None) == {"n": "1"}


def test_defaults_are_filled_and_numbers_normalised():
    schema = {"type": "object", "properties": {"adults": {"type": "integer", "default": 1}, "city": {"type": "string"}}}
    assert with_defaults({"city": "Rome"}, schema) == {"city": "Rome", "adults": 1}
    assert with_defaults({"city": "Rome", "adults": 3}, schema) == {"city": "Rome", "adults": 3}
    assert normalise_json({"a": [1.0, 2.5, True], "b": {"c": -0.0}}) == {"a": [1, 2.5, True], "b": {"c": 0}}
    assert type(normalise_json(1.0)) is int and normalise_json(True) is True


class ScriptedSteps:
    """A call_step that answers from a dict and records what it was given."""

    def __init__(self, answers: Mapping[str, CallOutcome]) -> None:
        self.answers = answers
        self.seen: list[list[tuple[str, Mapping[str, Any]]]] = []

    def __call__(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        self.seen.append(list(calls))
        return [self.answers[name] for name, _ in calls]


PATH = [
    [PlannedCall("a", "first", {"x": 1}), PlannedCall("b", "second", {"y": [1, "$a$"]})],
    [PlannedCall("c", "third", {"z": "$a.items[1]$", "w": {"deep": "$b.k$"}})],
]


def test_run_path_resolves_and_reports_a_bad_reference_without_calling():
    steps = ScriptedSteps({"first": CallOutcome(True, {"items": [10, 20]}), "second": CallOutcome(True, {"k": "v"})})
    run = run_path(PATH, steps)
    assert not run.ok and run.n_calls == 3
    # `b` read `$a$` in the same step: a bad reference, so only `a` was sent in step 1
    assert steps.seen == [[("first", {"x": 1})]]
    assert run.runs[1].outcome.reason is ErrorReason.BAD_REFERENCE
    assert run.runs[1].arguments == {"y": [1, "$a$"]}


def test_run_path_and_its_compact_form_agree():
    path = [[PlannedCall("a", "first", {"x": 1}), PlannedCall("b", "second", {"y": 2})], [PATH[1][0]]]
    answers = {
        "first": CallOutcome(True, {"items": [10, 20]}),
        "second": CallOutcome(True, {"k": "v"}),
        "third": CallOutcome(False, {"shown": "to the model"}, "third: boom", ErrorReason.TOOL_ERROR),
    }
    run = run_path(path, ScriptedSteps(answers))
    assert [r.arguments for r in run.runs] == [{"x": 1}, {"y": 2}, {"z": 20, "w": {"deep": "v"}}]
    decoded = PathRun.from_compact(run.to_compact(), path)
    assert decoded.ok is False and decoded.last_outcome == ("third", answers["third"])
    assert decoded == run  # the parent rebuilds the same calls, resolved arguments included
    assert decoded.failed is not None and decoded.failed.label == "c"
