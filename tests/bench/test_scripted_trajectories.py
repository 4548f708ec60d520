"""The scripted model trajectories of bench/judge_calls.py (bench/scripted_trajectories.py): seeded,
every deviation of the kind it says (equivalent ones equal by the rule layer, wrong ones not), the
wrong pick read from another entry of the same response, and an exact script scoring perfectly."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from conftest import REPO

from fcbench.formats import read_samples
from fcbench.sample import Call, Sample, Tool
from fcbench.score.complexeval import gold_steps_with_values, score_complexeval
from fcbench.score.matching import arguments_equivalent


def _load_bench_module():
    path = REPO / "bench" / "scripted_trajectories.py"
    spec = importlib.util.spec_from_file_location("scripted_trajectories", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


scripted = _load_bench_module()
EXAMPLE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
HOTELS = [{"hotel_id": 11, "name": "A"}, {"hotel_id": 12, "name": "B"}, {"hotel_id": 13, "name": "C"}]
TOOLS = [
    Tool(name="Search_Hotels", parameters={"type": "object", "required": ["city", "arrival_date"], "properties": {
        "city": {"type": "string"}, "arrival_date": {"type": "string", "format": "date"},
        "adults": {"type": "integer", "default": 1}, "price_max": {"type": "number"},
        "sort_by": {"type": "string", "enum": ["price", "distance"], "default": "distance"}}}),
    Tool(name="Get_Room_List", parameters={"type": "object", "required": ["hotel_id"], "properties": {
        "hotel_id": {"type": "integer"}, "currency_code": {"type": "string", "enum": ["USD", "EUR"]}}}),
]


def hotel_sample() -> Sample:
    return Sample(id="s1", messages=[{"role": "user", "content": "Rooms of the cheapest hotel in Paris"}],
                  tools=TOOLS, calls=[
                      [Call(label="var_1", name="Search_Hotels", arguments={
                          "city": "Paris", "arrival_date": "2025-11-15", "price_max": 180, "sort_by": "price"},
                          response={"data": HOTELS})],
                      [Call(label="var_2", name="Get_Room_List", arguments={
                          "hotel_id": "$var_1.data[0].hotel_id$", "currency_code": "EUR"}, response={"rooms": []})],
                  ])


def only(kind: str) -> scripted.DeviationMix:
    return scripted.DeviationMix(call=((kind, 1.0),), missing_call=0.0, extra_call=0.0, stop_early=0.0,
                                 correct_after_error=0.0)


def example_samples() -> list[Sample]:
    return [s for s in read_samples(EXAMPLE, "complexfuncbench") if isinstance(s, Sample)] + [hotel_sample()]


def test_the_same_seed_gives_the_same_trajectories_and_another_seed_others() -> None:
    samples = example_samples()
    first = [scripted.script_trajectory(s, 7).to_line() for s in samples]
    assert first == [scripted.script_trajectory(s, 7).to_line() for s in samples]
    assert any(scripted.script_trajectory(s, 8).to_line() != line for s, line in zip(samples, first))


@pytest.mark.parametrize("kind", [kind for kind, _ in scripted.DEFAULT_MIX.call])
def test_every_call_deviates_as_its_recorded_kind_says(kind: str) -> None:
    for sample in example_samples():
        gold = {call.label: call for step in gold_steps_with_values(sample) for call in step}
        schemas = {tool.name: tool.parameters for tool in sample.tools}
        for seed in range(3):
            trajectory = scripted.script_trajectory(sample, seed, only(kind))
            for call in trajectory.calls:
                expected = gold[call.gold_label]
                chain, k = [kind], kind
                while k != "exact":
                    k = scripted.FALLBACK.get(k, "exact")
                    chain.append(k)
                assert call.kind in chain  # the kind asked for, or where its fallback led
                same = call.name == expected.name and arguments_equivalent(call.arguments, expected.arguments,
                                                                          schemas[expected.name])
                if call.kind in scripted.EQUIVALENT_KINDS:
                    assert same, (kind, call)
                    written = json.dumps(call.arguments) != json.dumps(expected.arguments)
                    assert written is (call.kind != "exact"), (kind, call)  # a variant is written otherwise
                else:  # wrong, or equivalent only by judgement: never equal by the rules
                    assert not same, (kind, call)
                assert call.equivalent is (call.kind not in scripted.WRONG_KINDS)


def test_a_wrong_pick_reads_another_entry_of_the_same_response() -> None:
    picked = {scripted.script_trajectory(hotel_sample(), seed, only("wrong_pick")).turns[1][0]["arguments"]["hotel_id"]
              for seed in range(12)}
    assert picked == {12, 13}  # the gold call reads entry 0 (11)


def test_missing_extra_calls_stop_early_and_corrections_are_scripted() -> None:
    sample = hotel_sample()
    stop = scripted.DeviationMix(call=(("exact", 1.0),), missing_call=0.0, extra_call=0.0, stop_early=1.0,
                                 correct_after_error=0.0)
    stopped = scripted.script_trajectory(sample, 1, stop)
    assert stopped.skipped == ["var_2"] and len(stopped.turns) == 2 and isinstance(stopped.turns[-1], str)
    corrected = scripted.script_trajectory(sample, 1, scripted.DeviationMix(
        call=(("wrong_value", 1.0),), missing_call=0.0, extra_call=1.0, stop_early=0.0, correct_after_error=1.0))
    kinds = [(call.turn, call.kind) for call in corrected.calls]
    assert kinds == [(0, "wrong_value"), (0, "extra_call"), (1, "correction"), (2, "wrong_value"),
                     (2, "extra_call"), (3, "correction")]
    assert corrected.turns[1] == [{"name": "Search_Hotels", "arguments": sample.calls[0][0].arguments}]


def test_an_exact_script_scores_perfectly() -> None:
    samples = example_samples()
    lines = [scripted.script_trajectory(s, 3, only("exact")).to_line() for s in samples]
    report = score_complexeval(samples, lines)
    assert report.summary["success_rate"] == 1.0 and report.summary["call_accuracy"] == 1.0
