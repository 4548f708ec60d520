"""Prediction files built from the real published files, for the tests that try to game the scorer
(tests/fcbench/evaluate/test_scores_against_gold.py, tests/fcbench/score/test_gold_set_properties.py).

Each `*_case` returns a `ScoringCase`: the gold files of one metric family and a prediction file
as a model might write it (most answers right, some wrong), so that a transformation of the file
that raised a figure would show. `score(case, lines)` grades any list of lines against the case's
gold with the real `build-dataset score` entry point (files on disk, as the command reads them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conftest import EXTERNAL, REPO

BFCL = EXTERNAL / "bfcl"
NESTFUL_ICL = EXTERNAL / "nestful" / "predictions" / "nestful_3-qwen3-8b-8bit-icl.jsonl"
CALLNAVI_BANK = EXTERNAL / "callnavi" / "Questions" / "bank.json"
TRIPS = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
CONFETTI_CALLS = EXTERNAL / "confetti" / "possible_answer_BFCL_v2_conversationsclean.json"
CONFETTI_ACTS = EXTERNAL / "confetti" / "possible_answer_BFCL_v2_dialogacts.json"
NESTFUL_TOOLS = REPO / "datasets" / "nestful-math" / "tools.py"

# The figures each family reports that a better model raises (found at any depth of the summary:
# by_domain, by_chain_length...). A transformation of the prediction file must raise none of them.
METRIC_NAMES = frozenset({
    "accuracy",  # bfcl
    "f1_func", "f1_param", "partial_acc", "full_acc", "win_rate",  # nestful
    "syntax_validity", "routing_exact_match", "structural_accuracy", "ast_exact_match",  # callnavi
    "election_stability", "levenshtein_stability", "gpt_score",
    "success_rate", "call_accuracy", "completeness", "correctness",  # complexeval
    "ast_soft_accuracy", "ast_exact_accuracy", "dialog_act_accuracy", "parameter_validity_rate",  # confetti
})
# ... and the ones a better model lowers (error rates over what was predicted)
ERROR_RATE_NAMES = frozenset({"param_type_error_rate"})


@dataclass
class ScoringCase:
    metric: str
    lines: list[dict[str, Any]]
    id_field: str = "id"
    request: dict[str, Any] = field(default_factory=dict)  # ScoreRequest fields but predictions
    # the fields of a line that carry its own gold (a line may not change what it is graded against)
    carried_gold: Callable[[dict[str, Any]], dict[str, Any]] = lambda line: {"ground_truth": line.get("result")}


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def score(case: ScoringCase, lines: list[dict[str, Any]], tmp_path: Path, name: str = "predictions.jsonl") -> Any:
    from fcbench.evaluate.score_files import ScoreRequest, score_files

    predictions = write_lines(tmp_path / name, lines)
    return score_files(case.metric, ScoreRequest(predictions, **case.request))


def metric_figures(summary: Any, path: str = "") -> dict[str, tuple[float | None, bool]]:
    """Every metric of a summary by its path: (value, higher_is_better)."""
    figures: dict[str, tuple[float | None, bool]] = {}
    if not isinstance(summary, dict):
        return figures
    for key, value in summary.items():
        where = f"{path}.{key}" if path else str(key)
        if key in METRIC_NAMES and (value is None or isinstance(value, (int, float))):
            figures[where] = (value, True)
        elif key in ERROR_RATE_NAMES and isinstance(value, dict):
            figures.update({f"{where}.{kind}": (rate, False) for kind, rate in value.items()})
        elif key in ERROR_RATE_NAMES and value is None:
            figures[where] = (None, False)
        elif isinstance(value, dict):
            figures.update(metric_figures(value, where))
    return figures


def raised_figures(before: Any, after: Any) -> list[str]:
    """The metrics `after` reports better than `before` (a figure that was not reported before
    and is now counts as raised; one reported before and not now does not)."""
    old, new = metric_figures(before), metric_figures(after)
    raised = []
    for where, (value, higher_is_better) in new.items():
        if value is None:
            continue
        previous = old.get(where, (None, higher_is_better))[0]
        if previous is None:
            raised.append(f"{where}: not reported -> {value}")
        elif (value > previous + 1e-9) if higher_is_better else (value < previous - 1e-9):
            raised.append(f"{where}: {previous} -> {value}")
    return raised


# ------------------------------------------------------------------------------------------ cases
def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def bfcl_case() -> ScoringCase:
    """simple_python (400 items) answered with each argument's first published candidate, every
    tenth item calling a function that does not exist; irrelevance (240 items) answered with no
    call, every fourth item with a made-up call."""
    from fcbench.score.bfcl import first_candidate_prediction

    answers = {record["id"]: record for record in _json_lines(BFCL / "possible_answer_BFCL_v4_simple_python.json")}
    lines = []
    for n, question in enumerate(_json_lines(BFCL / "BFCL_v4_simple_python.json")):
        result = first_candidate_prediction(answers[question["id"]], question)
        if n % 10 == 3:
            result = [{"made_up_function": {"x": 1}}]
        lines.append({"id": question["id"], "category": "simple_python", "result": result})
    for n, question in enumerate(_json_lines(BFCL / "BFCL_v4_irrelevance.json")):
        result = [{"made_up_function": {"x": 1}}] if n % 4 == 0 else []
        lines.append({"id": question["id"], "category": "irrelevance", "result": result})
    request = {"questions": (BFCL / "BFCL_v4_simple_python.json", BFCL / "BFCL_v4_irrelevance.json"),
               "answers": (BFCL / "possible_answer_BFCL_v4_simple_python.json",)}
    return ScoringCase("bfcl", lines, request=request,
                       carried_gold=lambda line: {"category": "live_relevance", "possible_answer": line.get("result")})


def nestful_gold(tmp_path: Path) -> Path:
    """The gold of the 100 NESTful samples of the published predictions file: each line as NESTful
    writes its data (sample_id, input, output, gold_answer, tools), without the model's text."""
    gold = [{key: value for key, value in line.items() if key != "generated_text"} for line in _json_lines(NESTFUL_ICL)]
    return write_lines(tmp_path / "nestful_gold.jsonl", gold)


def _nestful_own_gold(line: dict[str, Any]) -> dict[str, Any]:
    """What a line would carry to be graded right whatever it predicts: its prediction as gold."""
    from fcbench.score.nestful import predicted_calls

    calls, _ = predicted_calls(line)
    return {"output": json.dumps(calls), "gold_answer": json.dumps(0)}


def nestful_case(tmp_path: Path, tools_module: bool = False) -> ScoringCase:
    """Qwen3-8B's published run on 100 NESTful samples, against their gold given as --gold."""
    request: dict[str, Any] = {"gold": nestful_gold(tmp_path)}
    if tools_module:
        request["tools_module"] = NESTFUL_TOOLS
    return ScoringCase("nestful", _json_lines(NESTFUL_ICL), id_field="sample_id", request=request,
                       carried_gold=_nestful_own_gold)


def callnavi_case(runs: int = 1) -> ScoringCase:
    """CallNavi's 115 bank questions answered with their own ground truth, every sixth with the
    wrong API, in `runs` labelled runs (run 2 answers every fifth question differently)."""
    questions = json.loads(CALLNAVI_BANK.read_text())
    lines = []
    for run in range(1, runs + 1):
        for n, question in enumerate(questions):
            output = json.loads(json.dumps(question["ground_truth"]))
            if n % 6 == 1 or (run == 2 and n % 5 == 0):
                output["API"] = ["getCustomerID"] + output["API"][1:]
            line = {"id": question["id"], "output": output}
            if runs > 1:
                line["run"] = run
            lines.append(line)
    return ScoringCase("callnavi", lines, request={"questions": (CALLNAVI_BANK,)},
                       carried_gold=lambda line: {"ground_truth": line.get("output")})


def complexeval_case() -> ScoringCase:
    """The bundled ComplexFuncBench example's three samples: Cross-12 and Hotels-7 on their gold
    path, Car-Rental-3 answering without its call."""
    from fcbench.formats import read_samples

    samples = {sample.id: sample for sample in read_samples(TRIPS, "complexfuncbench")}

    def gold_turns(sample_id: str) -> list[Any]:
        return [[{"name": call.name, "arguments": call.arguments} for call in step]
                for step in samples[sample_id].calls] + ["Here is what I found."]

    lines = [{"id": "Cross-12", "turns": gold_turns("Cross-12")},
             {"id": "Hotels-7", "turns": gold_turns("Hotels-7")},
             {"id": "Car-Rental-3", "turns": ["I cannot look up car rentals."]}]
    return ScoringCase("complexeval", lines, request={"gold": TRIPS, "gold_format": "complexfuncbench"},
                       carried_gold=lambda line: {"gold": line.get("turns"), "calls": line.get("turns")})


def confetti_case() -> ScoringCase:
    """CONFETTI's 506 function-calling turns answered with their first accepted values, every
    seventh turn with a wrong value and every eleventh calling a made-up function."""
    lines = []
    for n, record in enumerate(_json_lines(CONFETTI_CALLS)):
        result = [{name: {param: values[0] if values else "" for param, values in arguments.items()}}
                  for call in record["ground_truth"] for name, arguments in call.items()]
        if n % 7 == 2 and result and result[0][next(iter(result[0]))]:
            arguments = result[0][next(iter(result[0]))]
            arguments[next(iter(arguments))] = "something else entirely"
        if n % 11 == 5:
            result = [{"made_up_function": {"x": "1"}}]
        lines.append({"id": record["id"], "result": result})
    return ScoringCase("confetti", lines, request={"gold": CONFETTI_CALLS, "gold_format": "confetti"},
                       carried_gold=lambda line: {"ground_truth": line.get("result")})


def confetti_acts_case() -> ScoringCase:
    """CONFETTI's 463 dialog-act turns: every third answered with a response to classify (its own
    published text), the others with acts given directly, every fifth of those a wrong act."""
    lines = []
    for n, record in enumerate(_json_lines(CONFETTI_ACTS)):
        if n % 3 == 0:
            lines.append({"id": record["id"], "response": record["ground_truth_content"][-1]})
        else:
            acts = ["agent_other"] if n % 5 == 0 and "agent_other" not in record["ground_truth"] else record["ground_truth"]
            lines.append({"id": record["id"], "dialog_acts": acts})
    return ScoringCase("confetti", lines, request={"gold": CONFETTI_ACTS, "gold_format": "confetti"},
                       carried_gold=lambda line: {"ground_truth": line.get("dialog_acts"), "gold_acts": ["agent_other"]})
