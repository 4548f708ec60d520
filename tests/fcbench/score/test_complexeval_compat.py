"""ComplexEval compat mode pinned on hand-built trajectories over the bundled ComplexFuncBench example.

Each expected value was derived by reading the published runner (THUDM/ComplexFuncBench at c37b284:
runner/base_runner.py, runner/gpt_runner.py, utils/compare_method.py); the comment above each test
names the behaviour it pins. bench/complexeval_agreement.py checks the same module against the
runner itself on hundreds of scripted trajectories.

The example: Cross-12 = [Search_Flight_Location x2 (free)] [Location_to_Lat_Long (free)]
[Search_Flights] [Search_Hotels_By_Coordinates]; Hotels-7 = [Search_Hotel_Destination (free)]
[Search_Hotels]; Car-Rental-3 = [Search_Car_Rentals].
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from conftest import REPO

from fcbench.formats import read_samples
from fcbench.sample import Sample
from fcbench.score.complexeval import COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS, ComplexEvalOptions, score_trajectory
from fcbench.score.complexeval_compat import (
    CompatOptions,
    EXACT_MATCH_PARAMETERS,
    run_compat_trajectory,
    score_compat,
)
from fcbench.errors import JudgeError
from fcbench.score.matching import MatchLayer

EXAMPLE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
TEXT = "Here is what I found."


@cache
def _samples() -> dict[str, Sample]:
    return {s.id: s for s in read_samples(Path(EXAMPLE), "complexfuncbench")}


def sample(sample_id: str) -> Sample:
    return copy.deepcopy(_samples()[sample_id])


def gold(sample_id: str) -> list[list[dict[str, Any]]]:
    return [[{"name": c.name, "arguments": copy.deepcopy(c.arguments)} for c in step] for step in sample(sample_id).calls]


def compat(sample_id: str, turns: list[Any], options: CompatOptions = CompatOptions()):
    return run_compat_trajectory(sample(sample_id), turns, options)


def default(sample_id: str, turns: list[Any], optional: bool = False):
    options = ComplexEvalOptions(optional_functions=COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS if optional else ())
    return score_trajectory(sample(sample_id), turns, options)


class CountingLayer:
    """A paid layer stand-in: counts the pairs it is asked about, answers `answer`."""

    def __init__(self, answer: bool | None) -> None:
        self.answer, self.asked = answer, 0

    def __call__(self, predicted, gold, tool):
        self.asked += 1
        return self.answer


def test_gold_path_succeeds_with_every_call_correct() -> None:
    for sample_id, n in (("Cross-12", 5), ("Hotels-7", 2), ("Car-Rental-3", 1)):
        verdict = compat(sample_id, gold(sample_id) + [TEXT])
        assert (verdict.success, verdict.n_correct_calls, verdict.error_type) == (True, n, None)


# compare_method.value_checker: a parameter on the function's exact-match list that differs is a
# value_error BEFORE response_based/llm_based run, so no paid layer can overrule it.
def test_exact_match_parameter_is_a_value_error_without_the_paid_layers() -> None:
    assert "currency_code" in EXACT_MATCH_PARAMETERS["Search_Flights"]
    turns = gold("Cross-12")
    turns[2][0]["arguments"]["currency_code"] = "USD"
    layer = CountingLayer(True)  # would say "equivalent" if asked
    verdict = compat("Cross-12", turns + [TEXT], CompatOptions(layers=[MatchLayer("llm", layer)]))
    assert not verdict.success and verdict.error_type == "value_error"
    assert "currency_code" in verdict.error_detail and verdict.n_correct_calls == 3
    assert layer.asked == 0 and verdict.paid_layer_pairs == 0


# compare_single_call: a parameter NOT on the list goes on to response_based then llm_based (the paid
# layers); when both say no, get_error_message names the first difference.
def test_other_parameters_reach_the_paid_layers_which_may_match_them() -> None:
    assert "cabinClass" not in EXACT_MATCH_PARAMETERS["Search_Flights"]
    turns = gold("Cross-12")
    turns[2][0]["arguments"]["cabinClass"] = "BUSINESS"
    without = compat("Cross-12", turns + [TEXT])
    assert without.error_type == "value_error" and without.paid_layer_pairs == 1
    assert "do not equal to golden" in without.error_detail
    layer = CountingLayer(True)
    judged = compat("Cross-12", turns + [TEXT], CompatOptions(layers=[MatchLayer("llm", layer)]))
    assert judged.success and judged.n_correct_calls == 5 and layer.asked == 1
    assert judged.turns[2][0].layer == "llm"


def test_a_judge_without_a_verdict_is_a_judge_error_never_a_match() -> None:
    def broken(predicted, gold, tool):
        raise JudgeError("unparseable output after 2 attempts")

    turns = gold("Cross-12")
    turns[2][0]["arguments"]["cabinClass"] = "BUSINESS"
    verdict = compat("Cross-12", turns + [TEXT], CompatOptions(layers=[MatchLayer("llm", broken)]))
    assert not verdict.success and verdict.error_type == "judge_error"
    assert verdict.turns[2][0].layer == "judge_error"


# base_runner.only_free_function + init_golden: a golden list of free look-ups moves ahead at once,
# so Hotels-7 may start with Search_Hotels; the end-of-run clean-up drops the destination search.
def test_free_lookups_are_not_required() -> None:
    verdict = compat("Hotels-7", gold("Hotels-7")[1:] + [TEXT])
    assert verdict.success and verdict.n_correct_calls == 1
    assert default("Hotels-7", gold("Hotels-7")[1:] + [TEXT]).error_type == "func_error"  # default: required


# ... but only ONE step is skipped at start: Cross-12's golden list is then the two location
# searches plus Location_to_Lat_Long, and Search_Flights is paired with one of them (func_error).
def test_skipping_two_free_steps_goes_off_path() -> None:
    verdict = compat("Cross-12", gold("Cross-12")[2:] + [TEXT])
    assert not verdict.success and verdict.error_type == "func_error" and verdict.n_correct_calls == 0


# base_runner.process_matches: update_current_golden() on every turn with a match, even when calls
# of the current step are still missing: after Sydney alone, Melbourne's search stays in the list
# and the next steps open; the clean-up removes the unmade search at the end.
def test_the_golden_list_moves_one_step_ahead_on_every_matched_turn() -> None:
    steps = gold("Cross-12")
    turns = [[steps[0][0]], steps[1], steps[2], steps[3], TEXT]  # Melbourne never looked up
    verdict = compat("Cross-12", turns)
    assert verdict.success and verdict.n_correct_calls == 4
    # default mode keeps a step's parallel calls required until made
    assert default("Cross-12", turns).error_type in ("func_error", "value_error")


# mapping_call: a second identical call finds no unmatched golden call, is left out of the matching,
# answered with the fixed message and never counted as an error.
def test_duplicate_calls_in_a_matched_turn_are_ignored() -> None:
    turns = gold("Car-Rental-3")
    turns[0].append(copy.deepcopy(turns[0][0]))
    verdict = compat("Car-Rental-3", turns + [TEXT])
    assert verdict.success and verdict.n_correct_calls == 1
    assert [c.outcome for c in verdict.turns[0]] == ["matched", "unpaired"]
    assert not default("Car-Rental-3", turns + [TEXT]).success  # default: a call too many is a func_error


# rule_based compares with Python's ==: 2.0 == 2, and format_check does not check "integer".
def test_numbers_compare_as_numbers() -> None:
    turns = gold("Cross-12")
    turns[2][0]["arguments"]["adults"] = 2.0
    turns[3][0]["arguments"]["radius"] = 5.0
    assert compat("Cross-12", turns + [TEXT]).success
    assert default("Cross-12", turns + [TEXT]).success  # default mode: JSON Schema's integer accepts 2.0


# Python's == also makes True equal 1 (room_qty is an integer parameter): compat follows, default
# mode refuses a boolean for an integer (a documented difference).
def test_a_boolean_for_one_passes_in_compat_only() -> None:
    turns = gold("Cross-12")
    turns[3][0]["arguments"]["room_qty"] = True
    assert compat("Cross-12", turns + [TEXT]).success
    assert not default("Cross-12", turns + [TEXT]).success


# mapping_call's free branch: a call identical to a free gold call matches whenever the turn still has
# an unmatched golden call, without using it up, and success_map counts it: correct > gold.
def test_defect_followed_a_repeated_free_lookup_counts_again() -> None:
    steps = gold("Hotels-7")
    turns = [steps[0], [copy.deepcopy(steps[0][0]), steps[1][0]], TEXT]
    verdict = compat("Hotels-7", turns)
    assert verdict.success and verdict.n_correct_calls == 3 and verdict.n_gold_calls == 2
    # default mode: the repeat gets the same response, is neither an error nor another correct call
    fixed = default("Hotels-7", turns, optional=True)
    assert fixed.success and fixed.n_correct_calls == 2 == fixed.n_gold_calls
    repeat = fixed.record.turns[1][0]
    assert repeat.layer == "repeat" and repeat.error_type is None
    assert repeat.response == sample("Hotels-7").calls[0][0].response


# return_result's clean-up removes from self.golden_fcs while iterating it: of two location searches
# left, the second is skipped, so the sample "stops early" although only free look-ups are left.
def test_defect_followed_the_clean_up_skips_the_item_after_a_removed_one() -> None:
    steps = gold("Cross-12")
    turns = [steps[1], steps[2], steps[3], TEXT]  # no location search at all, landmark first
    verdict = compat("Cross-12", turns)
    assert not verdict.success and verdict.error_type == "stop_early" and verdict.n_correct_calls == 3
    assert default("Cross-12", turns, optional=True).success  # default mode: free calls are never required


# gpt_runner.get_standard_fc: an unknown name or arguments that are not JSON end the sample.
def test_an_undecodable_call_ends_the_sample() -> None:
    turns = gold("Car-Rental-3")
    turns[0][0]["arguments"] = '{"pick_up_latitude": 33.94'
    assert compat("Car-Rental-3", turns + [TEXT]).error_type == "decode_error"
    turns = gold("Car-Rental-3")
    turns[0][0]["name"] = "Search_Car_Rental"
    assert compat("Car-Rental-3", turns + [TEXT]).error_type == "decode_error"


# gpt_runner.run: calls after the golden list is empty are func_hallucination; a turn where nothing
# matched and nothing had a format error ends the sample with that turn's errors.
def test_calls_after_the_end_and_unmatched_turns() -> None:
    turns = gold("Car-Rental-3")
    assert compat("Car-Rental-3", turns + [turns[0], TEXT]).error_type == "func_hallucination"
    wrong = gold("Car-Rental-3")
    wrong[0][0]["arguments"]["driver_age"] = 30
    verdict = compat("Car-Rental-3", wrong + [TEXT])
    assert verdict.error_type == "value_error" and verdict.n_correct_calls == 0


# format_check: a missing required parameter is answered with its message (the model may correct it)
# and does not end the sample; the corrected call then matches.
def test_a_format_error_is_fed_back_and_may_be_corrected() -> None:
    steps = gold("Car-Rental-3")
    broken = copy.deepcopy(steps[0])
    broken[0]["arguments"]["bogus"] = 1
    verdict = compat("Car-Rental-3", [broken, steps[0], TEXT])
    assert verdict.success and verdict.n_correct_calls == 1
    assert verdict.turns[0][0].outcome == "format_error"


def test_score_compat_reports_mode_errors_and_counts() -> None:
    turns = gold("Hotels-7")
    report = score_compat(list(_samples().values()), [
        {"id": "Hotels-7", "turns": [turns[0], [copy.deepcopy(turns[0][0]), turns[1][0]], TEXT]},
        {"id": "Car-Rental-3", "turns": ["I cannot help."]},
        {"id": "Nope-1", "turns": [TEXT]},
    ])
    # the reference runs every sample: Cross-12, with no trajectory, is a failure (gold set rules)
    assert report.summary["mode"] == "compat" and report.summary["n"] == 3
    assert report.summary["errors"] == {"missing_prediction": 1, "stop_early": 1}
    # 3 correct (one repeated look-up) of Hotels-7's 2 and Car-Rental-3's 1, none of Cross-12's 5
    assert report.summary["call_accuracy"] == 3 / 8
    assert report.summary["unknown_ids"] == ["Nope-1"] and report.gold_set["missing"] == ["Cross-12"]
    assert [item["id"] for item in report.items] == ["Cross-12", "Hotels-7", "Car-Rental-3"]
    assert report.items[1]["n_correct_calls"] == 3 and report.items[2]["success"] is False


# compare_single_call: response_based runs before llm_based; equal API responses make the calls equal.
def test_a_response_layer_decides_before_the_llm_layer() -> None:
    from fcbench.environments.recorded import RecordedEnvironment, RecordedStore
    from fcbench.score.complexeval import response_match_layer

    s = sample("Hotels-7")
    turns = gold("Hotels-7")
    del turns[1][0]["arguments"]["adults"]  # not on Search_Hotels' exact-match list
    store = RecordedStore.from_samples([s])
    store.add("Search_Hotels", turns[1][0]["arguments"], s.calls[1][0].response)  # the API answers both alike
    llm = CountingLayer(False)
    options = CompatOptions(layers=[response_match_layer(RecordedEnvironment(store)), MatchLayer("llm", llm)])
    verdict = run_compat_trajectory(s, turns + [TEXT], options)
    assert verdict.success and verdict.turns[1][0].layer == "response" and llm.asked == 0


# A gold sample whose conversation ends with the last observation (no final assistant text). The
# reference never reads that turn in its call loop (base_runner.init_golden keeps only call and
# observation turns) and return_result decides from the golden list alone: every required call
# matched -> "Success.". A trajectory that just ends after its calls is settled that way; an explicit
# None (the model answered with neither calls nor text) is still its unknown_error.
def without_final_text(sample_id: str) -> Sample:
    stripped = sample(sample_id)
    stripped.meta["complexfuncbench"].pop("final_response")
    return stripped


def test_gold_without_final_text_all_calls_matched_is_a_success_as_in_the_reference() -> None:
    for sample_id in ("Cross-12", "Hotels-7", "Car-Rental-3"):
        verdict = run_compat_trajectory(without_final_text(sample_id), gold(sample_id))
        assert verdict.success and verdict.error_type is None, sample_id
        assert verdict.settled_without_final_text
        assert verdict.n_correct_calls == sum(len(step) for step in gold(sample_id))
    # with the model's text it is a success too (any text, even "": the runner tests `is not None`)
    for ending in (TEXT, ""):
        assert run_compat_trajectory(without_final_text("Hotels-7"), gold("Hotels-7") + [ending]).success


def test_gold_without_final_text_still_fails_what_the_reference_fails() -> None:
    stripped = without_final_text("Cross-12")
    # Search_Hotels_By_Coordinates never called: the golden list is not exhausted -> stop_early
    short = run_compat_trajectory(stripped, gold("Cross-12")[:-1])
    assert not short.success and short.error_type == "stop_early" and short.settled_without_final_text
    # an explicit None: the model stopped without calls or text -> the reference's unknown_error
    silent = run_compat_trajectory(stripped, gold("Cross-12") + [None])
    assert not silent.success and silent.error_type == "unknown_error" and not silent.settled_without_final_text
    # no turn at all: nothing to settle
    assert run_compat_trajectory(stripped, []).error_type == "unknown_error"


def test_gold_with_final_text_and_no_final_turn_stays_unknown_error() -> None:
    verdict = compat("Hotels-7", gold("Hotels-7"))
    assert not verdict.success and verdict.error_type == "unknown_error"
    assert not verdict.settled_without_final_text


def test_score_compat_reports_the_settled_items() -> None:
    report = score_compat([without_final_text("Car-Rental-3")], [{"id": "Car-Rental-3", "turns": gold("Car-Rental-3")}])
    assert report.summary["success_rate"] == 1.0
    assert report.items[0]["settled_without_final_text"] is True
