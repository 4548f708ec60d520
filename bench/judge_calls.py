"""How often would the LLM judge be asked? Two sets, each measured with its baseline in one run.

**NESTful** (`--set nestful`): judge calls per 1,000 gold calls on real model output. The shared
scorer's call matching is layered (rule, acceptable alternatives, response, LLM judge); the judge
is called only for pairs the cheaper layers could not decide. This part grades real Qwen3-8B
predictions on NESTful samples (`../shared/external/nestful/predictions/`, parsed with the scorer's
own parser), step by step with `match_step`, and counts the pairs that reach the judge:

- without the response layer (rule + acceptable only), and
- with it: a predicted call and its gold call both executed in the NESTful math environment
  (`datasets/nestful-math/tools.py`, references resolved from the gold path's earlier results)
  are equivalent when they give the same response.

The judge here is a counter that answers "cannot tell", so no model is needed.

**travel-full** (`--set travel-full`, issue 17's goal: call-equivalence judge calls <= 1 per 10
gold calls): scripted predictions made from the travel-full build's own validated samples
(`bench/scripted_trajectories.py`: one turn per gold step with a documented, seeded mix of
deviations; `--mix default` and a `weak` model with twice the mistakes), written as a predictions
file and scored by ComplexEval with an LLM configured: the OpenAI-compatible mock server on
127.0.0.1 answers every judge prompt as a correct judge would (the verdict the script meant) and
counts the prompts by judge. Each mix is scored twice: with the layers as they were before the
typed-difference rule (rules, recorded responses, LLM) and through `score --metric complexeval`'s
own code path (`fcbench.evaluate.score_files.score_files`: rules, recorded responses, typed differences, LLM),
each with a fresh verdict cache. Counted separately: call-equivalence judge calls per gold call
(the goal's figure) and the answer judges (completeness and correctness: two per sample that ends
with a final answer, by design, whatever the calls were).

    build-dataset run travel-full --offline             # the build, once (about 2-5 minutes)
    .venv/bin/python bench/judge_calls.py               # both sets, both mixes (about a minute)
    .venv/bin/python bench/judge_calls.py --set travel-full --mix default --limit 200

The last line is the travel-full call-equivalence judge calls per gold call with the default mix
(with `--set nestful`, the NESTful judge calls per 1,000 gold calls with every cheaper layer).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from fcbench.answers import NESTFUL_COMPARISON, answers_match  # noqa: E402
from fcbench.environments.python_env import PythonEnvironment  # noqa: E402
from fcbench.formats import read_samples  # noqa: E402
from fcbench.llm.mock_server import MockLLMServer  # noqa: E402
from fcbench.resolve import CallSite, UnresolvedReference, resolve_arguments  # noqa: E402
from fcbench.sample import Sample  # noqa: E402
from fcbench.score.matching import MatchLayer, match_step  # noqa: E402
from fcbench.score.parse_calls import parse_calls  # noqa: E402

PREDICTIONS = REPO.parent / "shared" / "external" / "nestful" / "predictions"
RUNS = ["nestful_0-qwen3-8b-8bit-vanilla.jsonl", "nestful_3-qwen3-8b-8bit-icl.jsonl", "nestful_0-qwen3-8b-8bit-cot.jsonl"]
TOOLS = REPO / "datasets" / "nestful-math" / "tools.py"


class CountingJudge:
    """Stands in for the LLM judge: counts the pairs it is asked about, decides nothing."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, predicted, gold, tool):
        self.calls += 1
        return None


def response_layer(environment: PythonEnvironment, outputs: dict[str, object]) -> MatchLayer:
    """Equivalent when both calls, run for real, give the same response (NESTful's number rule)."""

    def decide(predicted, gold, tool):
        try:
            predicted_args = resolve_arguments(predicted.arguments, outputs, CallSite("predicted", predicted.name))
            gold_args = resolve_arguments(gold.arguments, outputs, CallSite(gold.label, gold.name))
        except UnresolvedReference:
            return None  # the prediction reads a label the gold path does not have: cannot tell
        mine, theirs = environment.call(predicted.name, predicted_args), environment.call(gold.name, gold_args)
        if not (mine.ok and theirs.ok):
            return None
        return answers_match(mine.response, theirs.response, NESTFUL_COMPARISON)

    return MatchLayer("response", decide)


def gold_outputs(sample: Sample, environment: PythonEnvironment) -> dict[str, object]:
    """Every gold call's response, so references in either call resolve to real values."""
    outputs: dict[str, object] = {}
    for step in sample.calls:
        for call in step:
            try:
                arguments = resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name))
            except UnresolvedReference:
                continue
            outcome = environment.call(call.name, arguments)
            if outcome.ok:
                outputs[call.label] = outcome.response
    return outputs


def nestful_section() -> None:
    rows = []
    with PythonEnvironment(TOOLS, workers=1) as environment:
        for run in RUNS:
            path = PREDICTIONS / run
            samples = [s for s in read_samples(path, "nestful") if isinstance(s, Sample) and s.domain == "math"]
            lines = {json.loads(line)["sample_id"]: json.loads(line) for line in path.read_text().splitlines()}
            gold_calls = without = with_response = 0
            layers: Counter[str] = Counter()
            for sample in samples:
                predicted = parse_calls(lines[sample.id]["generated_text"]).calls
                gold = [call for step in sample.calls for call in step]
                gold_calls += len(gold)
                bare, full = CountingJudge(), CountingJudge()
                match_step(predicted, gold, sample.tools, layers=[MatchLayer("llm_judge", bare)], references=True)
                outputs = gold_outputs(sample, environment)
                graded = match_step(predicted, gold, sample.tools,
                                    layers=[response_layer(environment, outputs), MatchLayer("llm_judge", full)],
                                    references=True)
                layers.update(f"{d.decision.layer}:{'match' if d.decision.matched else 'no'}"
                              for d in graded.decisions if d.decision is not None)
                without += bare.calls
                with_response += full.calls
            rows.append((run, len(samples), gold_calls, without, with_response, dict(sorted(layers.items()))))
    total_gold = sum(row[2] for row in rows)
    for run, n, gold_calls, without, with_response, by_layer in rows:
        print(f"{run}: {n} math samples, {gold_calls} gold calls; judge calls {without} without the response "
              f"layer, {with_response} with it; decisions by layer {by_layer}")
    per_thousand_without = 1000 * sum(row[3] for row in rows) / total_gold
    per_thousand = 1000 * sum(row[4] for row in rows) / total_gold
    print(f"judge calls per 1,000 gold calls: {per_thousand_without:.1f} with rule+acceptable layers only")
    print(f"judge calls per 1,000 gold calls: {per_thousand:.1f}")



# ------------------------------------------------------------------------------------------ travel-full
TRAVEL_FULL_BUILD = REPO / "datasets" / "travel-full" / "build"


class OracleJudge:
    """The mock server's responder: answers each judge prompt as a correct judge would (a pair's
    verdict is what the scripted trajectory meant it to be; a pair it never scripted, such as a
    later step's call set against a gold call left over, is "different"), and counts the prompts
    by judge."""

    def __init__(self, verdicts: dict[str, bool]) -> None:
        self.verdicts = verdicts
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict, call_index: int) -> dict:
        text = body["messages"][-1]["content"]
        if "Function call 1 (JSON):" in text:
            call_1 = json.loads(text.split("Function call 1 (JSON):")[1].split("Function call 2 (JSON):")[0])
            call_2 = json.loads(text.split("Function call 2 (JSON):")[1].split("\n\nAnswer with")[0])
            key = json.dumps([call_1, call_2], sort_keys=True, ensure_ascii=False)
            verdict = self.verdicts.get(key)
            self._count("equivalence" if verdict is not None else "equivalence_unscripted")
            return {"content": json.dumps({"is_equal": bool(verdict), "reason": "scripted"})}
        kind = "completeness" if "COMPLETENESS" in text else "correctness"
        self._count(kind)
        return {"content": json.dumps({"score": 2, "reason": "scripted"})}

    def _count(self, key: str) -> None:
        with self.lock:
            self.counts[key] += 1

    def snapshot(self) -> Counter[str]:
        with self.lock:
            return Counter(self.counts)


@dataclass
class JudgedRun:
    name: str
    requests: Counter  # judge prompts the server received, by judge
    items: list
    seconds: float

    @property
    def equivalence(self) -> int:
        return self.requests["equivalence"] + self.requests["equivalence_unscripted"]

    @property
    def answers(self) -> int:
        return self.requests["completeness"] + self.requests["correctness"]


def _judged_run(name: str, server: MockLLMServer, judge: OracleJudge, score) -> JudgedRun:
    before = judge.snapshot()
    started = time.perf_counter()
    items = score()
    return JudgedRun(name, judge.snapshot() - before, items, time.perf_counter() - started)


def travel_full_section(build: Path, seed: int, limit: int | None, mixes: list[str]) -> None:
    """Scripted predictions from the travel-full build, scored through ComplexEval with an LLM judge
    (the mock server), per mix: once with the layers in the order before the typed-difference rule
    (rules, responses, LLM), once through `score --metric complexeval`'s own code path."""
    validated = build / "validated.jsonl"
    if not validated.is_file():
        raise SystemExit(f"{validated}: no such file; build it first: build-dataset run travel-full --offline")
    samples = [s for s in read_samples(validated, "fcbench") if isinstance(s, Sample)]
    samples = samples[:limit] if limit else samples
    gold_calls = sum(len(sample.all_calls()) for sample in samples)
    print(f"travel-full: {len(samples)} samples from {validated}, {gold_calls} gold calls, seed {seed}")
    with tempfile.TemporaryDirectory(prefix="judge-calls-") as tmp:
        work = Path(tmp)
        gold_file = validated
        if limit:  # score reads its gold from a file: the first N samples
            gold_file = work / "gold.jsonl"
            with gold_file.open("w", encoding="utf-8") as handle:
                handle.writelines(line for _, line in zip(range(limit), validated.open(encoding="utf-8")))
        results = {mix: measure_mix(samples, gold_file, gold_calls, mix, seed, work / mix) for mix in mixes}
    for mix, (before, now) in results.items():
        print(f"[{mix}] call-equivalence judge calls per gold call: {before:.4f} before the typed-difference "
              f"rule, {now:.4f} now (goal <= 0.1)")
    print(f"travel-full call-equivalence judge calls per gold call: {results[mixes[0]][1]:.4f}")


def measure_mix(samples: list[Sample], gold_file: Path, gold_calls: int, mix_name: str, seed: int,
                work: Path) -> tuple[float, float]:
    from scripted_trajectories import (EQUIVALENT_KINDS, JUDGEMENT_KINDS, MIXES, pair_key,
                                       script_trajectory)

    from fcbench.evaluate.judges_complexeval import LLMJudges
    from fcbench.config import LLMConfig
    from fcbench.environments.recorded import RecordedEnvironment
    from fcbench.evaluate.score_files import JudgeSettings, ScoreRequest, score_files
    from fcbench.score.complexeval import (ComplexEvalOptions, gold_steps_with_values, response_match_layer,
                                           score_complexeval)

    mix = MIXES[mix_name]
    work.mkdir(parents=True)
    trajectories, verdicts, kinds = [], {}, Counter()
    for sample in samples:
        trajectory = script_trajectory(sample, seed, mix)
        gold_by_label = {call.label: call for step in gold_steps_with_values(sample) for call in step}
        for call in trajectory.calls:
            kinds[call.kind] += 1
            if call.gold_label is not None:
                verdicts[pair_key(call.name, call.arguments, gold_by_label[call.gold_label])] = bool(call.equivalent)
        kinds["missing_call (no call made)"] += len(trajectory.skipped)
        trajectories.append(trajectory)
    predictions = work / "predictions.jsonl"
    with predictions.open("w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            handle.write(json.dumps(trajectory.to_line(), ensure_ascii=False) + "\n")
    judge = OracleJudge(verdicts)
    with MockLLMServer(responder=judge) as server:
        config = LLMConfig(model="judge-mock", base_url=server.base_url, max_retries=0, concurrency=4)

        def before_rule() -> list:
            response_layer = response_match_layer(RecordedEnvironment.from_samples(samples))
            with LLMJudges(config, work / "before.sqlite") as judges:
                def options_for(sample):
                    return ComplexEvalOptions(layers=[response_layer, judges.equivalence_layer(sample)])

                lines = [trajectory.to_line() for trajectory in trajectories]
                return score_complexeval(samples, lines, completeness_judge=judges.completeness_judge,
                                         correctness_judge=judges.correctness_judge, options_for=options_for).items

        def scoring_path() -> list:
            request = ScoreRequest(predictions, gold=gold_file, gold_format="fcbench",
                                   judges=JudgeSettings(llm=config, cache=work / "now.sqlite"))
            return score_files("complexeval", request).items

        runs = [_judged_run("before (rules, responses, LLM)", server, judge, before_rule),
                _judged_run("now (score --metric complexeval)", server, judge, scoring_path)]
    asked = ", ".join(f"{kind} {weight:.0%}" for kind, weight in mix.call)
    print(f"[{mix_name}] scripted mix asked per call: {asked}; per step missing_call {mix.missing_call:.0%}, "
          f"extra_call {mix.extra_call:.0%}; stop_early {mix.stop_early:.0%} a sample; corrected after an error "
          f"{mix.correct_after_error:.0%}")
    print(f"[{mix_name}] applied: " + ", ".join(f"{kind} {count}" for kind, count in kinds.most_common()))
    by_turn_call = {(t.sample_id, c.turn, c.index): c.kind for t in trajectories for c in t.calls}
    for run in runs:
        layers, judged_kinds, typed_kinds = Counter(), Counter(), Counter()
        for trajectory, item in zip(trajectories, run.items):
            for call in item.get("calls", []):
                layers[call.get("layer") or "none"] += 1
                kind = by_turn_call.get((trajectory.sample_id, call["turn"], call["index"]), "?")
                if call.get("layer") in ("llm", "judge_error"):
                    judged_kinds[kind] += 1
                if call.get("layer") == "rule_typed":
                    typed_kinds[kind] += 1
        print(f"[{mix_name}] {run.name}: {run.seconds:.1f} s; judge prompts {dict(sorted(run.requests.items()))}")
        print(f"  call decisions by layer {dict(sorted(layers.items()))}")
        print(f"  pairs the LLM decided, by scripted kind {dict(judged_kinds.most_common())}")
        if typed_kinds:
            meant_equal = sum(n for kind, n in typed_kinds.items() if kind in EQUIVALENT_KINDS + JUDGEMENT_KINDS)
            print(f"  pairs the typed-difference rule called different, by scripted kind "
                  f"{dict(typed_kinds.most_common())}; of them scripted as equivalent: {meant_equal}")
        print(f"  call-equivalence judge calls {run.equivalence} = {run.equivalence / gold_calls:.4f} per gold call; "
              f"answer judges (completeness + correctness, per sample by design: two per sample with a final "
              f"answer) {run.answers} = {run.answers / len(samples):.2f} per sample")
    before, now = runs

    def outcome(item: dict) -> tuple:
        return item.get("success"), item.get("n_correct_calls"), (item.get("error") or {}).get("type")

    changed = sum(outcome(a) != outcome(b) for a, b in zip(before.items, now.items))
    print(f"[{mix_name}] samples whose verdict (success, correct calls, error type) differs between the two runs "
          f"(the judge answering as the script meant): {changed} of {len(samples)}")
    return before.equivalence / gold_calls, now.equivalence / gold_calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=("nestful", "travel-full", "both"), default="both")
    parser.add_argument("--build", type=Path, default=TRAVEL_FULL_BUILD, help="the travel-full build folder")
    parser.add_argument("--seed", type=int, default=17, help="seed of the scripted predictions")
    parser.add_argument("--limit", type=int, default=None, help="only the first N travel-full samples")
    parser.add_argument("--mix", choices=("default", "weak", "both"), default="both",
                        help="the scripted model's mix of deviations (bench/scripted_trajectories.py); the last "
                             "line is the default mix's figure when it runs")
    args = parser.parse_args()
    if args.set in ("nestful", "both"):
        nestful_section()
    if args.set in ("travel-full", "both"):
        mixes = ["default", "weak"] if args.mix == "both" else [args.mix]
        travel_full_section(args.build, args.seed, args.limit, mixes)


if __name__ == "__main__":
    main()
