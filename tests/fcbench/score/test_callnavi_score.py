"""CallNavi metrics on the published questions, the JSON repair step, and the stability scores
(the paper's Appendix D worked cases)."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import pytest
from conftest import EXTERNAL

from fcbench.score.callnavi import (
    WILDCARD,
    CallNaviScore,
    CallNaviTally,
    callnavi_rates,
    election_stability,
    levenshtein_stability,
    normalised_answer,
    rule_based_gpt_score,
    score_callnavi,
    values_match,
)
from fcbench.score.json_repair import repair_json

QUESTIONS = EXTERNAL / "callnavi" / "Questions"


@cache
def _questions() -> tuple[dict[str, Any], ...]:
    questions = []
    for path in sorted(QUESTIONS.glob("*.json")):
        questions.extend(json.loads(path.read_text(encoding="utf-8")))
    return tuple(questions)


def _question(question_id: str) -> dict[str, Any]:
    return copy.deepcopy(next(q for q in _questions() if q["id"] == question_id))


def _filled(value: Any) -> Any:
    """The ground truth with every "$$$" replaced by a concrete value."""
    if value == WILDCARD:
        return "2024-05-01"
    if isinstance(value, dict):
        return {k: _filled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v) for v in value]
    return value


def _flags(score: CallNaviScore) -> tuple[bool, bool, bool, bool]:
    return score.syntax_valid, score.routing, score.structural, score.ast_match


# ---------------------------------------------------------------------------------------------
# Stability: the paper's worked cases


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ("AAAAA", 1.0),
        ("AABBC", 0.0),
        ("AABCD", 0.25),
        ("AAABB", 1 / 3),
        ("AAABC", 0.5),
        ("AAAAB", 0.75),
        ("ABCDE", 0.0),
    ],
)
def test_election_score_worked_cases(runs: str, expected: float):
    assert election_stability(list(runs)) == expected


def test_election_score_counts_equal_answers_whatever_their_key_order():
    truth = _question("ban03")["ground_truth"]
    reordered = {"parameters": truth["parameters"], "API": truth["API"]}
    other = {"API": ["getAccountBalance"], "parameters": [{"accountID": "123456"}]}
    assert election_stability([truth, reordered, truth, other, other]) == pytest.approx(1 / 3)
    assert election_stability([truth]) == 1.0
    with pytest.raises(ValueError):
        election_stability([])


def test_levenshtein_score_compares_the_first_run_with_each_other_run():
    assert levenshtein_stability(["same", "same", "same"]) == 1.0
    assert levenshtein_stability(["kitten", "sitting"]) == pytest.approx(1 - 3 / 7)
    # First vs others: (a,b) = 1, (a,c) = 1 - 1/4 = 0.75 -> (1 + 0.75) / 2; (b,c) is not compared.
    assert levenshtein_stability(["abcd", "abcd", "abcx"]) == pytest.approx((1 + 0.75) / 2)
    # (a,b) = 0.75, (a,c) = 0.75 -> 0.75 (all pairs would add (b,c) = 0.5 and say 2/3)
    assert levenshtein_stability(["abcd", "abcx", "abcy"]) == pytest.approx(0.75)
    assert levenshtein_stability(["only one"]) == 1.0


def test_spacing_quote_and_case_variants_of_one_answer_are_one_answer():
    """Issue 24: three spellings of one answer are stable (1.0), not three answers (0.0)."""
    variants = ['{"API": ["getAccountID"], "parameters": [{"accountNumber": "123456"}]}',
                "{'API':['getAccountID'],'parameters':[{'accountNumber':'123456'}]}",
                '```json\n{"API": [ "GETACCOUNTID" ],\n  "parameters": [ {"accountNumber": "123456"} ]}\n```']
    assert len({normalised_answer(v) for v in variants}) == 1
    assert election_stability(variants) == 1.0
    assert levenshtein_stability(variants) == 1.0
    # a different answer stays different: AAB -> (2 - 1) / (3 - 1) = 0.5
    other = '{"API": ["getAccountBalance"], "parameters": [{"accountNumber": "123456"}]}'
    assert election_stability(variants[:2] + [other]) == 0.5


def test_rule_based_gpt_score_stand_in():
    truth = {"API": ["getAccountID", "getAccountBalance"], "parameters": [{"accountNumber": "1"}, {"accountID": "$$$"}]}
    assert rule_based_gpt_score(truth, truth) == 1.0
    # API half: 1 of 2 positions right -> 0.5; values: accountNumber wrong, "$$$" matches -> 1/2; (0.5 + 0.5) / 2
    half = {"API": ["getAccountID", "getCustomerID"], "parameters": [{"accountNumber": "2"}, {"accountID": "x"}]}
    assert rule_based_gpt_score(half, truth) == 0.5
    assert rule_based_gpt_score("not json at all", truth) == 0.0


def test_tally_gives_each_difficulty_its_macro_and_the_micro_overall():
    truth = {"API": ["a"], "parameters": [{}]}
    right, wrong = score_callnavi(truth, truth), score_callnavi({"API": ["b"], "parameters": [{}]}, truth)
    tally = CallNaviTally()
    tally.add_question("easy", [truth, truth], [right, right], [1.0, 1.0])          # routing 2/2
    tally.add_question("hard", [truth, {"API": ["b"]}], [right, wrong], [1.0, 0.5])  # routing 1/2
    tally.add_question("hard", [{"API": ["b"]}] * 2, [wrong, wrong], [None, None])   # routing 0/2
    figures = tally.figures()
    assert figures["by_difficulty"]["easy"]["routing_exact_match"] == 1.0
    assert figures["by_difficulty"]["hard"]["routing_exact_match"] == 0.25       # 1 of 4 outputs
    assert figures["macro"]["routing_exact_match"] == pytest.approx((1.0 + 0.25) / 2)
    assert figures["overall"]["routing_exact_match"] == pytest.approx(3 / 6)    # micro: 3 of 6 outputs
    assert figures["by_difficulty"]["hard"]["gpt_score"] == 0.75                  # (1.0 + 0.5) / 2 judged
    # election: easy AA -> 1; hard AB -> tie 0, BB -> 1 -> 0.5
    assert figures["by_difficulty"]["hard"]["election_stability"] == 0.5
    assert "medium" not in figures["by_difficulty"]


# ---------------------------------------------------------------------------------------------
# Per-output metrics on the published ground truths


def test_every_published_ground_truth_scores_full_marks_against_itself():
    questions = _questions()
    assert len(questions) == 729
    for compat in (False, True):
        for question in questions:
            truth = question["ground_truth"]
            score = score_callnavi(json.dumps(truth), truth, compat)
            assert _flags(score) == (True, True, True, True), question["id"]
            assert not score.repaired


def test_wildcards_match_any_value_nested_ones_only_in_default_mode():
    questions = _questions()
    with_wildcard = [q for q in questions if WILDCARD in json.dumps(q["ground_truth"])]
    assert len(with_wildcard) == 317

    def failing(compat: bool) -> list[str]:
        return [
            q["id"]
            for q in questions
            if not score_callnavi(_filled(q["ground_truth"]), q["ground_truth"], compat).ast_match
        ]

    default_fail, compat_fail = failing(False), failing(True)
    assert default_fail == []
    # CallNavi's scorer compares objects holding "$$$" literally: 62 published items.
    assert len(compat_fail) == 62
    assert {"gov025", "log002", "hot004", "hr003"} <= set(compat_fail)
    truth = _question("gov025")["ground_truth"]  # carDetails {"make": "Toyota", "model": "$$$", "year": 2021}
    index = next(i for i, p in enumerate(truth["parameters"]) if "carDetails" in p)
    answer = copy.deepcopy(truth)
    answer["parameters"][index]["carDetails"] = {"make": "Toyota", "model": "Corolla", "year": 2021}
    assert score_callnavi(answer, truth).ast_match
    answer["parameters"][index]["carDetails"]["year"] = 2020
    assert _flags(score_callnavi(answer, truth)) == (True, True, True, False)


def test_apis_without_parameter_objects():
    truth = _question("sho005")["ground_truth"]
    assert truth == {"API": ["getCartItems"], "parameters": []}
    one_object_per_api = {"API": ["getCartItems"], "parameters": [{}]}
    assert _flags(score_callnavi(one_object_per_api, truth)) == (True, True, True, True)
    assert _flags(score_callnavi(one_object_per_api, truth, compat=True)) == (True, False, False, False)


def test_each_check_fails_for_its_own_reason():
    truth = _question("ban03")["ground_truth"]  # getTransactionHistory(accountID, startDate, endDate)
    good = copy.deepcopy(truth)
    wrong_value = copy.deepcopy(truth)
    wrong_value["parameters"][0]["endDate"] = "2024-12-30"
    missing = copy.deepcopy(truth)
    del missing["parameters"][0]["startDate"]
    extra = copy.deepcopy(truth)
    extra["parameters"][0]["currency"] = "EUR"
    wrong_api = {"API": ["getAccountBalance"], "parameters": truth["parameters"]}
    assert _flags(score_callnavi(good, truth)) == (True, True, True, True)
    assert _flags(score_callnavi(wrong_value, truth)) == (True, True, True, False)
    assert _flags(score_callnavi(missing, truth)) == (True, True, False, False)
    assert _flags(score_callnavi(extra, truth)) == (True, True, True, True)
    assert _flags(score_callnavi(wrong_api, truth)) == (True, False, False, False)


def test_api_order_matters_for_routing():
    # Lists that read the same reversed (gov084: getTaxInfo, fileTaxReturn, getTaxInfo) excluded.
    multi = [q for q in _questions() if q["ground_truth"]["API"] != q["ground_truth"]["API"][::-1]]
    assert len(multi) > 100
    for question in multi:
        truth = question["ground_truth"]
        swapped = {"API": truth["API"][::-1], "parameters": truth["parameters"][::-1]}
        assert not score_callnavi(swapped, truth).routing, question["id"]


def test_raw_model_text_is_repaired_before_scoring():
    truth = _question("ban01")["ground_truth"]  # getAccountID(accountNumber="123456")
    fenced = (
        "Sure! Here is the call:\n```json\n"
        "{'API': ['getAccountID'], 'parameters': [{'accountNumber': '123456'},],}\n```"
    )
    score = score_callnavi(fenced, truth)
    assert _flags(score) == (True, True, True, True)
    assert set(score.repairs) == {"code_fence", "single_quotes", "trailing_commas"}
    truncated = '{"API": ["getAccountID"], "parameters": [{"accountNumber": "123456"'
    assert _flags(score_callnavi(truncated, truth)) == (True, True, True, True)
    assert score_callnavi(truncated, truth).repairs == ("truncated",)
    assert _flags(score_callnavi("I cannot find a suitable API.", truth)) == (False, False, False, False)
    assert _flags(score_callnavi("[1, 2]", truth)) == (False, False, False, False)


def test_rates_over_outputs():
    truth = _question("ban01")["ground_truth"]
    outputs = [json.dumps(truth), "{API: [getAccountID], parameters: [{accountNumber: '1'}]}", "no", '{"API": []}']
    rates = callnavi_rates([score_callnavi(o, truth) for o in outputs])
    assert rates == {
        "syntax_validity": 0.75,
        "repaired": 0.25,
        "routing_exact_match": 0.5,
        "structural_accuracy": 0.5,
        "ast_exact_match": 0.25,
    }


def test_values_match_rules():
    assert values_match({"a": 1, "b": 2}, {"a": 1})
    assert not values_match({"b": 2}, {"a": WILDCARD})
    assert values_match([1, "x"], [1, WILDCARD])
    assert not values_match(True, 1)
    assert values_match(5.0, 5)


# ---------------------------------------------------------------------------------------------
# JSON repair


@pytest.mark.parametrize(
    ("text", "value", "repairs"),
    [
        ('{"a": 1}', {"a": 1}, ()),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}, ("code_fence",)),
        ("{'a': 'it\\'s \"ok\"'}", {"a": 'it\'s "ok"'}, ("single_quotes",)),
        ("{API: [getX], n: None, ok: True}", {"API": ["getX"], "n": None, "ok": True}, ("unquoted_keys", "python_literals")),
        ('{"a": [1, 2,], "b": {"c": 3,},}', {"a": [1, 2], "b": {"c": 3}}, ("trailing_commas",)),
        ('{"a": {"b": [1, "tw', {"a": {"b": [1, "tw"]}}, ("truncated",)),
        ('{"a": 1, "b"', {"a": 1, "b": None}, ("truncated",)),
        ('{"a":', {"a": None}, ("truncated",)),
        ('The answer is {"a": 1}. Hope it helps! }', {"a": 1}, ("surrounding_text",)),
        ('{"x": .5, "y": -.5, "z": 1.}', {"x": 0.5, "y": -0.5, "z": 1.0}, ("numbers",)),
    ],
)
def test_json_repair(text: str, value: Any, repairs: tuple[str, ...]):
    result = repair_json(text)
    assert result.ok, result.error
    assert result.value == value
    assert result.repairs == repairs


def test_json_repair_gives_up_cleanly():
    for text in ("no json here", "", "{,,}"):
        result = repair_json(text)
        assert not result.ok and result.error


# ---------------------------------------------------------------------------------------------
# Registry


def test_callnavi_metrics_are_registered_by_name():
    from fcbench.score import METRICS

    assert METRICS.get("callnavi").score is score_callnavi
    assert METRICS.get("callnavi_election_stability").score(list("AAABC")) == 0.5
