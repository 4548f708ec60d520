"""Call matching: format check messages, layered equivalence, Hungarian pairing; on the published
BFCL and CallNavi tools and gold calls, plus property tests."""

from __future__ import annotations

import json
import random
from functools import cache
from typing import Any

import pytest
from conftest import EXTERNAL
from hypothesis import given, settings
from hypothesis import strategies as st

from fcbench.catalog import load_tools_file
from fcbench.catalog.bfcl import tools_from_bfcl
from fcbench.sample import AcceptableValues, Call, Tool
from fcbench.score.matching import (
    CallDecodeError,
    MatchLayer,
    PredictedCall,
    as_predicted_call,
    assign_calls,
    call_similarity,
    check_call_format,
    embedding_similarity,
    match_call,
    match_step,
    values_equivalent,
)

BFCL = EXTERNAL / "bfcl"
CALLNAVI = EXTERNAL / "callnavi"


def _lines(path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@cache
def _bfcl_simple() -> list[tuple[list[Tool], str, dict[str, list[Any]]]]:
    """(tools, function name, candidates by argument) of every simple_python item."""
    questions = _lines(BFCL / "BFCL_v4_simple_python.json")
    answers = _lines(BFCL / "possible_answer_BFCL_v4_simple_python.json")
    items = []
    for question, answer in zip(questions, answers):
        name, candidates = next(iter(answer["ground_truth"][0].items()))
        items.append((tools_from_bfcl(question["function"]), name, candidates))
    return items


def _gold_and_acceptable(
    name: str, candidates: dict[str, list[Any]]
) -> tuple[Call, dict[str, AcceptableValues]]:
    """A BFCL possible answer as canonical gold: first real candidate as the value, all others
    as accepted alternatives, "" as may_omit."""
    real = {arg: [c for c in cands if c != ""] for arg, cands in candidates.items()}
    arguments = {arg: values[0] for arg, values in real.items() if values}
    acceptable = {
        arg: AcceptableValues(values=[c for c in cands if c != ""], may_omit="" in cands)
        for arg, cands in candidates.items()
    }
    return Call(label="c0", name=name, arguments=arguments), acceptable


@cache
def _callnavi_bank() -> tuple[list[Tool], list[dict[str, Any]]]:
    tools = load_tools_file(CALLNAVI / "APISchema" / "bank.json")
    questions = json.loads((CALLNAVI / "Questions" / "bank.json").read_text(encoding="utf-8"))
    return tools, questions


# ---------------------------------------------------------------------------------------------
# Format check


def test_format_messages_on_callnavi_tools():
    tools, _ = _callnavi_bank()
    assert len(tools) == 96
    assert check_call_format({"name": "getAccountID", "arguments": {"customerID": "C1"}}, tools) is None

    unknown = check_call_format({"name": "getAccountIdentifier", "arguments": {}}, tools)
    assert unknown.kind == "unknown_function"
    assert unknown.message == "Function getAccountIdentifier is not defined in the function list."

    missing = check_call_format({"name": "getAccountID", "arguments": {}}, tools)
    assert missing.kind == "missing_required"
    assert missing.message == (
        "Function getAccountID requires parameters ['customerID'], but [] do not provide ['customerID']."
    )

    extra = check_call_format({"name": "getAccountID", "arguments": {"customerID": "C1", "pin": "0000"}}, tools)
    assert extra.kind == "unknown_parameters"
    assert extra.message == "Function getAccountID does not have parameters ['pin']."

    wrong = check_call_format({"name": "getAccountID", "arguments": {"customerID": 123}}, tools)
    assert wrong.kind == "wrong_type"
    assert wrong.message == (
        "Parameter customerID of function getAccountID should be a string, but integer is provided."
    )


def test_format_types_on_bfcl_tools():
    tools, name, _ = _bfcl_simple()[0]  # calculate_triangle_area(base: integer, height: integer, unit)
    assert name == "calculate_triangle_area"
    ok = {"name": name, "arguments": {"base": 10, "height": 5}}
    assert check_call_format(ok, tools) is None
    as_bool = check_call_format({"name": name, "arguments": {"base": True, "height": 5}}, tools)
    assert as_bool.kind == "wrong_type" and "should be an integer, but boolean" in as_bool.message
    as_float = check_call_format({"name": name, "arguments": {"base": 10.5, "height": 5}}, tools)
    assert as_float.kind == "wrong_type" and "but number is provided" in as_float.message
    # JSON Schema: a number with a zero fractional part IS an integer (a model writing 10.0 is right)
    assert check_call_format({"name": name, "arguments": {"base": 10.0, "height": 5.0}}, tools) is None
    assert check_call_format({"name": name, "arguments": {"base": float("inf"), "height": 5}}, tools).kind == "wrong_type"


def test_predicted_call_forms():
    openai_form = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    assert as_predicted_call(openai_form) == PredictedCall("f", {"a": 1})
    assert as_predicted_call({"name": "f", "arguments": ""}) == PredictedCall("f", {})
    assert as_predicted_call(Call(label="x", name="f", arguments={"a": 1})) == PredictedCall("f", {"a": 1})
    with pytest.raises(CallDecodeError):
        as_predicted_call({"name": "f", "arguments": '{"a": 1,'})
    with pytest.raises(CallDecodeError):
        as_predicted_call({"name": "f", "arguments": "[1]"})


# ---------------------------------------------------------------------------------------------
# Layers


def test_every_bfcl_simple_gold_matches_itself_by_rule_and_other_candidates_by_acceptable():
    items = _bfcl_simple()
    assert len(items) == 400
    layers_seen: dict[str, int] = {}
    for tools, name, candidates in items:
        tool = next(t for t in tools if t.name == name)
        gold, acceptable = _gold_and_acceptable(name, candidates)
        assert match_call(gold, gold, tool).layer == "rule"
        # The last real candidate of every argument, optional-first arguments left out.
        other = {
            arg: [c for c in cands if c != ""][-1]
            for arg, cands in candidates.items()
            if cands and cands[0] != "" and any(c != "" for c in cands)
        }
        decision = match_call({"name": name, "arguments": other}, gold, tool, acceptable)
        assert decision.matched, (name, other, decision)
        layers_seen[decision.layer] = layers_seen.get(decision.layer, 0) + 1
        renamed = match_call({"name": name + "_x", "arguments": other}, gold, tool, acceptable)
        assert (renamed.matched, renamed.layer, renamed.error_type) == (False, "name", "func_error")
    assert layers_seen["acceptable"] > 50 and layers_seen["rule"] > 50


def test_rule_normalisation_follows_the_schema():
    tool = Tool(
        name="book",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "nights": {"type": "integer", "default": 1},
                "budget": {"type": "number"},
                "code": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        },
    )
    gold = Call(label="b", name="book", arguments={"city": "New York", "budget": 100, "tags": ["Sea", "sun"]})
    same = {"city": "  new   YORK ", "budget": 100.0, "nights": 1, "tags": ["sea", "SUN"]}
    assert match_call({"name": "book", "arguments": same}, gold, tool).layer == "rule"
    assert not match_call({"name": "book", "arguments": {**same, "nights": 2}}, gold, tool).matched
    assert not match_call({"name": "book", "arguments": {**same, "tags": ["sun", "sea"]}}, gold, tool).matched
    assert values_equivalent(1, 1.0, {"type": "number"})
    assert not values_equivalent(True, 1, {"type": "integer"})
    assert not values_equivalent("1", 1)
    assert not values_equivalent("Abc", "abc", {"type": "integer"})  # not a string parameter


def test_pluggable_layers_run_only_when_cheaper_layers_cannot_decide():
    calls: list[str] = []

    def response_layer(predicted, gold, tool):
        calls.append("response")
        return None  # cannot tell: the next layer decides

    def judge_layer(predicted, gold, tool):
        calls.append("judge")
        return predicted.arguments.get("city", "").startswith("NYC")

    layers = [MatchLayer("response", response_layer), MatchLayer("llm_judge", judge_layer)]
    gold = Call(label="b", name="book", arguments={"city": "New York"})

    assert match_call({"name": "book", "arguments": {"city": "new york"}}, gold, layers=layers).layer == "rule"
    assert match_call({"name": "hotel", "arguments": {"city": "NYC"}}, gold, layers=layers).layer == "name"
    assert calls == []
    accepted = match_call({"name": "book", "arguments": {"city": "NYC"}}, gold, layers=layers)
    assert (accepted.matched, accepted.layer) == (True, "llm_judge")
    assert calls == ["response", "judge"]
    rejected = match_call({"name": "book", "arguments": {"city": "Boston"}}, gold, layers=layers)
    assert (rejected.matched, rejected.layer, rejected.error_type) == (False, "llm_judge", "value_error")
    # A parameter that must match exactly stops the costly layers.
    calls.clear()
    blocked = match_call(
        {"name": "book", "arguments": {"city": "NYC"}}, gold, layers=layers, exact_parameters={"city"}
    )
    assert (blocked.matched, blocked.layer, calls) == (False, "exact", [])


def test_mismatch_kinds_are_complexevals():
    gold = Call(label="b", name="book", arguments={"city": "Paris", "nights": 2})
    assert match_call({"name": "book", "arguments": {"city": "Paris"}}, gold).error_type == "param_missing"
    assert match_call({"name": "book", "arguments": {"city": "Rome", "nights": 2}}, gold).error_type == "value_error"
    extra = {"city": "Paris", "nights": 2, "pets": True}
    assert match_call({"name": "book", "arguments": extra}, gold).error_type == "param_hallucination"


def test_acceptable_may_omit_and_alternatives():
    gold = Call(label="b", name="book", arguments={"city": "Paris", "nights": 2})
    acceptable = {
        "city": AcceptableValues(values=["Paris, France"]),
        "nights": AcceptableValues(values=[2], may_omit=True),
    }

    def decide(arguments):
        return match_call({"name": "book", "arguments": arguments}, gold, acceptable=acceptable)

    assert decide({"city": "paris, france"}).layer == "acceptable"
    assert not decide({"nights": 2}).matched
    assert not decide({"city": "Paris", "nights": 3}).matched


# ---------------------------------------------------------------------------------------------
# Pairing


def test_hungarian_pairs_shuffled_callnavi_gold_calls():
    tools, questions = _callnavi_bank()
    multi = [q for q in questions if len(q["ground_truth"]["API"]) > 1]
    assert len(multi) > 10
    rng = random.Random(3)
    for question in multi:
        truth = question["ground_truth"]
        named = zip(truth["API"], truth["parameters"])
        gold = [Call(label=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(named)]
        predicted = [{"name": c.name, "arguments": dict(c.arguments)} for c in gold]
        rng.shuffle(predicted)
        step = match_step(predicted, gold)
        assert step.exact, question["id"]
        assert step.matched_gold == list(range(len(gold)))


def test_exact_pairs_are_kept_before_the_global_optimum():
    gold = [Call(label="g0", name="f", arguments={"q": "a"}), Call(label="g1", name="f", arguments={"q": "b"})]
    predicted = [{"name": "f", "arguments": {"q": "a"}}, {"name": "f", "arguments": {"q": "c"}}]
    # p0 equals g0. With these similarities the best total (0.9 + 0.9) would split that pair.
    table = {("a", "a"): 1.0, ("a", "b"): 0.9, ("c", "a"): 0.9, ("c", "b"): 0.0}

    def similarity(p, g):
        return table[(p.arguments["q"], g.arguments["q"])]

    pairs = assign_calls(predicted, gold, similarity=similarity)
    assert [(p.predicted_index, p.gold_index, p.similarity) for p in pairs] == [(0, 0, 1.0), (1, 1, 0.0)]


def test_unpaired_calls_and_format_issues_in_a_step():
    tools, _ = _callnavi_bank()
    gold = [Call(label="c0", name="getAccountID", arguments={"customerID": "C1"})]
    predicted = [
        {"name": "getAccountID", "arguments": {"customerID": 7}},
        {"name": "getAccountBalance", "arguments": {"accountID": "A1"}},
    ]
    step = match_step(predicted, gold, tools)
    assert step.format_issues[0].kind == "wrong_type"
    paired = [d for d in step.decisions if d.decision is not None]
    assert len(paired) == 1 and paired[0].decision.layer == "format"
    assert step.n_predicted == 2 and step.n_gold == 1 and not step.exact
    assert [d.pair.predicted_index for d in step.decisions if d.pair.gold_index is None] == [1]


def test_embedding_similarity_can_replace_fuzzy_similarity():
    def embed(text: str) -> list[float]:
        return [text.count(ch) for ch in "abcdefghijklmnopqrstuvwxyz"]

    similarity = embedding_similarity(embed)
    gold = [Call(label="g0", name="f", arguments={"q": "apples"}), Call(label="g1", name="f", arguments={"q": "zebra"})]
    predicted = [{"name": "f", "arguments": {"q": "zebras"}}, {"name": "f", "arguments": {"q": "apple"}}]
    pairs = assign_calls(predicted, gold, similarity=similarity)
    assert [(p.predicted_index, p.gold_index) for p in pairs] == [(1, 0), (0, 1)]
    assert 0.0 <= call_similarity(PredictedCall("f", {"q": "zebras"}), gold[1]) <= 1.0


# ---------------------------------------------------------------------------------------------
# Properties

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=12),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
_arguments = st.dictionaries(st.text(min_size=1, max_size=8), _values, max_size=5)
EXTRA = "an_extra_argument"  # longer than any generated key: never already there
_names = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(name=_names, arguments=_arguments)
def test_a_gold_call_always_matches_itself(name, arguments):
    gold = Call(label="g", name=name, arguments=arguments)
    decision = match_call({"name": name, "arguments": arguments}, gold)
    assert (decision.matched, decision.layer) == (True, "rule")


@settings(max_examples=150, deadline=None)
@given(name=_names, suffix=st.text(min_size=1, max_size=4), arguments=_arguments)
def test_a_renamed_function_never_matches(name, suffix, arguments):
    gold = Call(label="g", name=name, arguments=arguments)
    always_yes = [MatchLayer("llm_judge", lambda p, g, t: True)]
    acceptable = {k: AcceptableValues(values=[v], may_omit=True) for k, v in arguments.items()}
    decision = match_call({"name": name + suffix, "arguments": arguments}, gold, None, acceptable, always_yes)
    assert not decision.matched and decision.layer == "name"


@settings(max_examples=100, deadline=None)
@given(
    calls=st.lists(st.tuples(_names, _arguments), min_size=1, max_size=5, unique_by=lambda c: c[0]),
    changed=st.lists(st.booleans(), min_size=5, max_size=5),
    seed=st.integers(0, 1000),
)
def test_permuting_parallel_calls_changes_nothing(calls, changed, seed):
    gold = [Call(label=f"g{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)]
    predicted = [
        {"name": n, "arguments": {**a, EXTRA: 1} if changed[i] else a} for i, (n, a) in enumerate(calls)
    ]
    permuted = list(predicted)
    random.Random(seed).shuffle(permuted)

    def outcome(preds):
        step = match_step(preds, gold)
        return sorted(
            (d.pair.gold_index, json.dumps(preds[d.pair.predicted_index], sort_keys=True), d.decision.matched)
            for d in step.decisions
            if d.decision is not None
        )

    assert outcome(predicted) == outcome(permuted)
    assert match_step(permuted, gold).matched_gold == [i for i in range(len(calls)) if not changed[i]]


def test_references_in_predicted_paths_are_not_type_errors_when_allowed():
    from fcbench.sample import Call, Tool
    from fcbench.score.matching import match_step

    number = {"type": "number"}
    add = Tool(name="add", parameters={"type": "object", "properties": {"arg_0": number, "arg_1": number},
                                       "required": ["arg_0", "arg_1"]})
    gold = [Call(label="var_2", name="add", arguments={"arg_0": "$var_1.result$", "arg_1": 4})]
    predicted = [{"name": "add", "arguments": {"arg_0": "$var_1.result$", "arg_1": 4}}]
    assert match_step(predicted, gold, [add]).format_issues  # a live model must send values
    allowed = match_step(predicted, gold, [add], references=True)
    assert not allowed.format_issues and allowed.matched_gold == [0]
