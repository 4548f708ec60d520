"""How often would the LLM judge be asked? Judge calls per 1,000 gold calls on real model output.

The shared scorer's call matching is layered (rule, acceptable alternatives, response, LLM judge);
the judge is called only for pairs the cheaper layers could not decide. This script grades real
Qwen3-8B predictions on NESTful samples (`../shared/external/nestful/predictions/`, parsed with the
scorer's own parser), step by step with `match_step`, and counts the pairs that reach the judge:

- without the response layer (rule + acceptable only), and
- with it: a predicted call and its gold call both executed in the NESTful math environment
  (`datasets/nestful-math/tools.py`, references resolved from the gold path's earlier results)
  are equivalent when they give the same response.

The judge here is a counter that answers "cannot tell", so no model is needed.

    .venv/bin/python bench/judge_calls.py

The last line is the judge calls per 1,000 gold calls with every cheaper layer in place.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fcbench.answers import NESTFUL_COMPARISON, answers_match  # noqa: E402
from fcbench.environments.python_env import PythonEnvironment  # noqa: E402
from fcbench.formats import read_samples  # noqa: E402
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


def main() -> None:
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


if __name__ == "__main__":
    main()
