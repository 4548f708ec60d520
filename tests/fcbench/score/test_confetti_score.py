"""CONFETTI metrics on the published ground truth (506 function-calling turns, 463 dialog-act
turns): gold against itself, hand-computed soft scores, chain products, dialog-act any-match."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import pytest
from conftest import EXTERNAL, read_all
from hypothesis import given, settings
from hypothesis import strategies as st

from fcbench.sample import Sample
from fcbench.score import METRICS
from fcbench.score.confetti import (
    ConfettiOptions,
    PredictionError,
    call_soft_score,
    chain_score,
    decoded_result,
    dialog_act_match,
    naive_dialog_act_classifier,
    prediction_from_sample,
    score_confetti,
)
from fcbench.score.matching import PredictedCall

CONFETTI = EXTERNAL / "confetti"
CALLS_FILE = CONFETTI / "possible_answer_BFCL_v2_conversationsclean.json"
ACTS_FILE = CONFETTI / "possible_answer_BFCL_v2_dialogacts.json"


@cache
def _calls_set() -> tuple[Sample, ...]:
    return tuple(read_all(CALLS_FILE, "confetti"))


@cache
def _acts_set() -> tuple[Sample, ...]:
    return tuple(read_all(ACTS_FILE, "confetti"))


def item(samples: tuple[Sample, ...], sample_id: str) -> Sample:
    return copy.deepcopy(next(s for s in samples if s.id == sample_id))


def perturbed(sample: Sample, call_index: int = 0, **changes: Any) -> dict[str, Any]:
    """The gold turn as a prediction line, one call's arguments changed (None removes one)."""
    line = prediction_from_sample(sample)
    (name, arguments), = line["result"][call_index].items()
    for param, value in changes.items():
        if value is None:
            arguments.pop(param)
        else:
            arguments[param] = value
    return line


def scored(sample: Sample, line: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    return score_confetti([sample], [line], **kwargs).items[0]


# --------------------------------------------------------------------------- gold against itself


def test_function_calling_set_gold_scores_one_on_every_metric() -> None:
    samples = _calls_set()
    report = METRICS.get("confetti").score(samples, [prediction_from_sample(s) for s in samples])
    summary = report.summary
    assert summary["n"] == summary["n_ast"] == 506
    assert summary["ast_soft_accuracy"] == 1.0 and summary["ast_exact_accuracy"] == 1.0
    assert summary["by_chain_length"] == {"1": {"n": 506, "ast_soft_accuracy": 1.0}}
    assert summary["n_parameters"] == 880 and summary["parameter_validity_rate"] == 1.0
    assert summary["n_dialog_acts"] == 0  # this file has no dialog acts
    assert summary["errors"] == {"unknown_id": 0, "malformed_result": 0, "judge_error": 0}


def test_dialog_act_set_gold_scores_one_on_every_metric() -> None:
    samples = _acts_set()
    report = score_confetti(samples, [prediction_from_sample(s) for s in samples])
    summary = report.summary
    assert summary["n"] == 463
    assert summary["ast_soft_accuracy"] == 1.0
    assert summary["n_dialog_acts"] == 463 and summary["dialog_act_accuracy"] == 1.0
    assert summary["parameter_validity_rate"] == 1.0
    # Chain lengths as the paper reports them: 220 single, 46 of two, 25 of three.
    lengths = {k: v["n"] for k, v in summary["by_chain_length"].items()}
    assert lengths == {"0": 150, "1": 220, "2": 46, "3": 25, "4": 9, "5": 4, "6": 3, "7": 5, "10": 1}
    assert [i["id"] for i in report.items[:3]] == ["dialogacts_0", "dialogacts_1", "dialogacts_2"]


# ------------------------------------------------------------------------------ soft AST by hand


def test_soft_score_of_a_perturbed_string_is_the_normalised_similarity() -> None:
    flight = item(_calls_set(), "conversationsclean_4")  # search_flights SAN -> DEN on 2024-04-24
    # DEN vs DFW: one common letter, indel distance 4 over 6 characters -> 1/3; mean of 1, 1/3, 1.
    result = scored(flight, perturbed(flight, arrival_airport="DFW"))
    assert result["ast_soft"] == pytest.approx(7 / 9)
    assert result["actions"][0]["parameters"]["arrival_airport"] == pytest.approx(1 / 3)
    assert result["exact"] is False
    # One changed digit of ten in a date: indel distance 2 over 20 characters -> 0.9.
    assert scored(flight, perturbed(flight, departure_date="2024-04-25"))["ast_soft"] == pytest.approx((1 + 1 + 0.9) / 3)
    # Case and surrounding spaces do not count.
    assert scored(flight, perturbed(flight, arrival_airport=" den "))["ast_soft"] == 1.0
    # A missing parameter scores 0.
    assert scored(flight, perturbed(flight, departure_date=None))["ast_soft"] == pytest.approx(2 / 3)


def test_non_string_values_score_exactly_against_every_accepted_value() -> None:
    hotel = item(_calls_set(), "conversationsclean_137")  # star_ratings accepts 4 or 5
    assert scored(hotel, perturbed(hotel, star_ratings=5))["ast_soft"] == 1.0
    assert scored(hotel, perturbed(hotel, star_ratings=5.0))["ast_soft"] == 1.0
    assert scored(hotel, perturbed(hotel, star_ratings=3))["ast_soft"] == pytest.approx(3 / 4)
    assert scored(hotel, perturbed(hotel, star_ratings="4"))["ast_soft"] == pytest.approx(3 / 4)


def test_wrong_function_scores_zero() -> None:
    person = item(_calls_set(), "conversationsclean_0")
    gold = person.calls[0][0]
    assert call_soft_score(PredictedCall("HRCompanyDirectory_employee", gold.arguments), gold).score == 0.0
    line = {"id": person.id, "result": [{"HRTimeOff_time_off_balance": {"name": "Shalissa Valentino"}}]}
    assert scored(person, line)["ast_soft"] == 0.0


def test_chain_score_is_the_product_over_actions() -> None:
    cancel = item(_acts_set(), "dialogacts_1")  # ViewAccount then CancelService
    line = perturbed(cancel, 0, verification_code="427213")  # 1 digit of 6: 5/6, call (1 + 1 + 5/6) / 3
    (_, arguments), = line["result"][1].items()
    arguments["cancellation_reason"] = "Change service"  # 14 of 17 kept: 28/31, call (1 + 1 + 28/31) / 3
    result = scored(cancel, line)
    assert [a["score"] for a in result["actions"]] == pytest.approx([17 / 18, 30 / 31])
    assert result["ast_soft"] == pytest.approx(17 / 18 * 30 / 31)
    line["result"].reverse()  # the pairing does not depend on the order written
    assert scored(cancel, line)["ast_soft"] == pytest.approx(17 / 18 * 30 / 31)


def test_a_missing_or_extra_action_zeroes_the_chain() -> None:
    cancel = item(_acts_set(), "dialogacts_1")
    line = prediction_from_sample(cancel)
    missing = {"id": cancel.id, "result": line["result"][:1]}
    result = scored(cancel, missing)
    assert result["ast_soft"] == 0.0 and result["actions"][1] == {
        "gold_label": "call_2", "predicted_index": None, "score": 0.0, "parameters": {}}
    extra = {"id": cancel.id, "result": line["result"] + line["result"][:1]}
    assert scored(cancel, extra)["ast_soft"] == 0.0
    no_call_turn = item(_acts_set(), next(s.id for s in _acts_set() if not s.calls or not s.calls[0]))
    assert scored(no_call_turn, {"id": no_call_turn.id, "result": []})["ast_soft"] == 1.0
    assert scored(no_call_turn, {"id": no_call_turn.id, "result": line["result"][:1]})["ast_soft"] == 0.0


def test_chain_score_function_directly() -> None:
    cancel = item(_acts_set(), "dialogacts_1")
    predicted = [PredictedCall(c.name, dict(c.arguments)) for c in cancel.calls[0]]
    chain = chain_score(predicted, cancel.calls[0], cancel.acceptable)
    assert chain.score == 1.0 and [a.gold_label for a in chain.actions] == ["call_1", "call_2"]


# ------------------------------------------------------------------------------- dialog acts


def test_dialog_act_any_match() -> None:
    first = item(_acts_set(), "dialogacts_0")  # function_calling, seek_information, inform_user
    assert scored(first, {"id": first.id, "dialog_acts": ["agent_reject_request", "agent_inform_user"]})["dialog_act_match"]
    assert not scored(first, {"id": first.id, "dialog_acts": ["agent_reject_request"]})["dialog_act_match"]
    assert scored(first, {"id": first.id, "dialog_acts": ["seek_info"]})["dialog_act_match"]  # README's short name
    assert not dialog_act_match([], ["agent_inform_user"])
    only_acts = scored(first, {"id": first.id, "dialog_acts": ["agent_other"]})
    assert "ast_soft" not in only_acts  # a line without result is not scored on calls


def test_dialog_acts_from_a_pluggable_classifier() -> None:
    first = item(_acts_set(), "dialogacts_0")
    asked = scored(first, {"id": first.id, "response": "Could you tell me your last name?"})
    assert asked["predicted_acts"] == ["agent_seek_information"] and asked["dialog_act_match"]
    refused = scored(first, {"id": first.id, "response": "Sorry, I cannot do that."})
    assert refused["predicted_acts"] == ["agent_reject_request"] and not refused["dialog_act_match"]
    always_other = ConfettiOptions(act_classifier=lambda text, calls, history: ["agent_other"])
    assert not scored(first, {"id": first.id, "response": "Could you?"}, options=always_other)["dialog_act_match"]
    assert naive_dialog_act_classifier("Done.", [PredictedCall("f")]) == ["agent_function_calling", "agent_inform_user"]


# ----------------------------------------------------------------------------- parameter validity


def test_parameter_validity_with_the_rule_based_judge() -> None:
    first = item(_acts_set(), "dialogacts_0")  # SendVerificationToken(to, channel, last_name)
    line = perturbed(first, to="bob@example.com")
    result = scored(first, line)
    assert (result["parameters_valid"], result["parameters_total"]) == (2, 3)
    assert result["invalid_parameters"] == ["Telecom.SendVerificationToken.to"]
    grounded = score_confetti([first], [line], contexts={first.id: "Write to Bob@Example.com please"})
    assert grounded.items[0]["parameters_valid"] == 3
    assert grounded.summary["parameter_validity_rate"] == 1.0
    never = ConfettiOptions(validity_judge=lambda use: False)
    assert score_confetti([first], [prediction_from_sample(first)], options=never).summary["parameter_validity_rate"] == 0.0

def test_parameter_validity_judges_only_calls_with_the_right_function_name() -> None:
    """Issue 24: a value passed to the wrong function is an AST error already; the validity rate
    judges the calls whose name is one of the turn's gold functions."""
    first = item(_acts_set(), "dialogacts_0")  # gold: Telecom.SendVerificationToken(to, channel, last_name)
    line = perturbed(first, to="bob@example.com")  # 1 invented value of 3 in the right call
    line["result"].append({"Telecom.DeleteAccount": {"account_id": "ACC-999", "reason": "made up"}})
    result = scored(first, line)
    # judged: the right call only -> 2 valid of 3; the wrong call's 2 invented values are not counted
    assert (result["parameters_valid"], result["parameters_total"]) == (2, 3)
    assert (result["validity_calls_judged"], result["validity_calls_wrong_name"]) == (1, 1)
    summary = score_confetti([first], [line]).summary
    assert summary["parameter_validity_rate"] == pytest.approx(2 / 3)  # not 2 / 5
    assert (summary["n_validity_calls"], summary["n_validity_calls_wrong_name"]) == (1, 1)


def test_ast_soft_accuracy_is_broken_down_by_api_count_turn_count_and_chain_length() -> None:
    samples = [item(_calls_set(), "conversationsclean_0"), item(_calls_set(), "conversationsclean_1")]
    lines = [prediction_from_sample(samples[0]), {"id": samples[1].id, "result": []}]  # right, then nothing
    summary = score_confetti(samples, lines).summary
    # the published possible-answer files carry no history (0 turns: its own bin) and no tools (the
    # reader infers one per gold function: 1 API each); right = 1, nothing = 0 -> 0.5
    assert summary["by_api_count"]["1-5"] == {"n": 2, "ast_soft_accuracy": 0.5}
    assert summary["by_api_count"]["21+"] == {"n": 0, "ast_soft_accuracy": None}
    assert summary["by_turn_count"]["0 (none given)"] == {"n": 2, "ast_soft_accuracy": 0.5}
    assert summary["by_turn_count"]["1-4"] == {"n": 0, "ast_soft_accuracy": None}
    assert summary["by_chain_bin"]["1"] == {"n": 2, "ast_soft_accuracy": 0.5}  # (1 + 0) / 2



# ---------------------------------------------------------------------------------- bad lines


def test_unknown_ids_are_listed_and_a_malformed_result_scores_zero() -> None:
    person = item(_calls_set(), "conversationsclean_0")
    report = score_confetti([person], [
        {"id": "conversationsclean_9999", "result": []},
        {"id": person.id, "result": "HRCompanyDirectory_employees(name='x')"},
        prediction_from_sample(person),  # a second line for the turn: a duplicate, not scored
    ])
    assert report.gold_set["foreign"] == [{"line": 1, "id": "conversationsclean_9999"}]
    assert report.gold_set["duplicates"] == [{"line": 3, "id": person.id, "first": 2}]
    assert len(report.items) == 1 and report.items[0]["error"] == "malformed_result"
    assert report.summary["errors"] == {"unknown_id": 1, "malformed_result": 1, "judge_error": 0}
    # a malformed result is wrong, not left out (else breaking a wrong answer would raise the figure)
    assert report.summary["n_ast"] == 1 and report.summary["ast_soft_accuracy"] == 0.0
    with pytest.raises(PredictionError):
        decoded_result([{"a": {}, "b": {}}])


# ------------------------------------------------------------------------------ property tests

MULTI_CALL = [s.id for s in _acts_set() if s.calls and len(s.calls[0]) > 1]


@settings(max_examples=40, deadline=None)
@given(sample_id=st.sampled_from(MULTI_CALL), data=st.data())
def test_permuting_a_chain_changes_nothing(sample_id: str, data: st.DataObject) -> None:
    sample = item(_acts_set(), sample_id)
    line = prediction_from_sample(sample)
    line["result"] = data.draw(st.permutations(line["result"]))
    assert scored(sample, line)["ast_soft"] == 1.0


@settings(max_examples=40, deadline=None)
@given(sample_id=st.sampled_from([s.id for s in _calls_set()]), suffix=st.text(min_size=1, max_size=5))
def test_a_renamed_function_never_scores(sample_id: str, suffix: str) -> None:
    sample = item(_calls_set(), sample_id)
    line = prediction_from_sample(sample)
    (name, arguments), = line["result"][0].items()
    line["result"][0] = {name + suffix: arguments}
    result = scored(sample, line)
    assert result["ast_soft"] == 0.0 and result["actions"][0]["score"] == 0.0


# ------------------------------------------------------------------------- judges without verdict


def test_a_classifier_or_judge_without_a_verdict_makes_a_judge_error_not_a_guess() -> None:
    from fcbench.errors import JudgeError

    def undecided(*_: Any) -> Any:
        raise JudgeError("judge_error: unparseable")

    first = item(_acts_set(), "dialogacts_0")
    line = {**perturbed(first, to="bob@example.com"), "response": "Done."}
    del line["dialog_acts"]  # the acts are to be classified from the response
    report = score_confetti([first], [line], options=ConfettiOptions(act_classifier=undecided, validity_judge=undecided))
    result = report.items[0]
    assert result["judge_error"] == {
        "parameter_validity": "Telecom.SendVerificationToken.to: judge_error: unparseable; "
                              "Telecom.SendVerificationToken.channel: judge_error: unparseable; "
                              "Telecom.SendVerificationToken.last_name: judge_error: unparseable",
        "dialog_acts": "judge_error: unparseable"}
    assert "dialog_act_match" not in result and "parameters_total" not in result
    assert result["ast_soft"] < 1.0  # the AST part needs no judge and is still scored
    summary = report.summary
    assert summary["errors"]["judge_error"] == 1
    assert summary["n_dialog_acts"] == 0 and summary["dialog_act_accuracy"] is None
    assert summary["n_parameters"] == 0 and summary["parameter_validity_rate"] is None
    # one undecided value spoils only its item's validity; the classifier sees the history
    seen = []
    only_to = ConfettiOptions(act_classifier=lambda text, calls, history: seen.append(history) or ["agent_other"],
                              validity_judge=lambda use: True if use.parameter != "to" else undecided())
    other = score_confetti([first], [line], options=only_to).items[0]
    assert set(other["judge_error"]) == {"parameter_validity"} and other["predicted_acts"] == ["agent_other"]
    assert seen == [""]  # the published set carries no conversation history
