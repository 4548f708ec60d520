"""`build-dataset score`: reads prediction and gold files, runs a pure metric family from
`fcbench.score`, and returns the one result shape every metric shares:

    {"metric": M, "summary": {...}, "items": [...]}   # items[i] is the verdict for prediction line i

This module is the I/O side of the scorer; the metric logic itself stays in `fcbench/score/`.
A prediction line that cannot be graded (no such question, broken JSON) still gets an item with
the reason, so item i always matches line i.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from fcbench.config import LLMConfig
from fcbench.errors import UserError
from fcbench.jsonl import iter_json_lines, read_json_or_lines
from fcbench.score.registry import METRICS, file_metrics, reads_files


@dataclass
class ScoreResult:
    metric: str
    summary: dict[str, Any]
    items: list[dict[str, Any]]
    # printed before the report: which parts were not graded by an LLM (metrics with judges)
    first_line: str | None = None
    # why the result cannot be used although it was computed (an LLM judge that gave no usable
    # verdict at all): the command prints the report, then this line, and exits 1
    unusable: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "summary": self.summary, "items": self.items}


def read_prediction_lines(path: Path) -> list[dict[str, Any] | str]:
    """Every non-blank line, in order: the parsed object, or the parse error text."""
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    lines: list[dict[str, Any] | str] = []
    for line in iter_json_lines(path):
        if line.error:
            lines.append(f"line {line.line_no}: {line.error}")
        elif not isinstance(line.value, dict):
            lines.append(f"line {line.line_no}: expected a JSON object")
        else:
            lines.append(line.value)
    return lines


def _records_by_id(paths: Iterable[Path], what: str) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            for record in read_json_or_lines(path):
                if isinstance(record, dict) and "id" in record:
                    records[str(record["id"])] = record
        except ValueError as exc:
            raise UserError(f"{what}: {exc}") from None
    return records


# --------------------------------------------------------------------------------------------- BFCL
def score_bfcl_files(questions: list[Path], answers: list[Path], predictions: Path, compat: bool) -> ScoreResult:
    from fcbench.score.bfcl import BfclSchemaError, category_from_id, check_bfcl

    question_by_id = _records_by_id(questions, "--questions")
    answer_by_id = _records_by_id(answers, "--answers")
    items: list[dict[str, Any]] = []
    for line in read_prediction_lines(predictions):
        if isinstance(line, str):
            items.append({"id": None, "valid": False, "error_type": "unreadable_prediction", "error": line})
            continue
        item_id = str(line.get("id"))
        question = question_by_id.get(item_id)
        if question is None:
            items.append({"id": item_id, "valid": False, "error_type": "unknown_id",
                          "error": "no question with this id in --questions"})
            continue
        category = line.get("category") or category_from_id(item_id)
        try:
            verdict = check_bfcl(question, answer_by_id.get(item_id), line.get("result"), category, compat)
        except BfclSchemaError as exc:
            items.append({"id": item_id, "valid": False, "error_type": "not_gradable", "error": str(exc)})
            continue
        items.append({"id": item_id, "valid": verdict.valid, "error_type": verdict.error_type})
    n = len(items)
    accuracy = sum(item["valid"] for item in items) / n if n else 0.0
    return ScoreResult("bfcl", {"n": n, "accuracy": accuracy}, items)


# ------------------------------------------------------------------------------------------ NESTful
def score_nestful_files(predictions: Path, gold: Path | None, tools_module: Path | None, compat: bool) -> ScoreResult:
    from fcbench.score.nestful import score_nestful

    every_line = read_prediction_lines(predictions)
    # A line that cannot be read names no sample: it is an item of its own (item i stays line i),
    # counted in the summary, and the readable lines are scored.
    lines = [line for line in every_line if not isinstance(line, str)]
    gold_by_id = None
    if gold is not None:
        gold_by_id = {}
        for record in read_json_or_lines(gold):
            if isinstance(record, dict):
                gold_by_id[str(record.get("sample_id", record.get("id")))] = record
    if tools_module is None:
        report = score_nestful(lines, gold_by_id, compat)  # type: ignore[arg-type]
    else:
        from fcbench.environments.python_env import PythonEnvironment
        from fcbench.score.nestful import environment_executor

        if not tools_module.is_file():
            raise UserError(f"{tools_module}: no such tools module")
        with PythonEnvironment(tools_module) as environment:
            report = score_nestful(lines, gold_by_id, compat, environment_executor(environment))  # type: ignore[arg-type]
    scored = iter(report.items)
    items = [{"id": None, "error_type": "unreadable_prediction", "error": line} if isinstance(line, str) else next(scored)
             for line in every_line]
    summary = dict(report.summary)
    summary["unreadable_lines"] = len(every_line) - len(lines)
    return ScoreResult("nestful", summary, items)


# ----------------------------------------------------------------------------------------- CallNavi
def score_callnavi_files(questions: list[Path], predictions: Path, compat: bool) -> ScoreResult:
    """Prediction lines are `{"id", "output"}` (raw model text or a parsed answer). Several lines
    with one id are repeated runs: their stability scores are reported in the summary."""
    from fcbench.score.callnavi import callnavi_rates, election_stability, levenshtein_stability, score_callnavi

    question_by_id = _records_by_id(questions, "--questions")
    items: list[dict[str, Any]] = []
    scores = []
    outputs_by_id: dict[str, list[Any]] = defaultdict(list)
    for line in read_prediction_lines(predictions):
        if isinstance(line, str):
            items.append({"id": None, "error": line})
            continue
        item_id = str(line.get("id"))
        question = question_by_id.get(item_id)
        if question is None:
            items.append({"id": item_id, "error": "no question with this id in --questions"})
            continue
        score = score_callnavi(line.get("output", ""), question["ground_truth"], compat)
        scores.append(score)
        outputs_by_id[item_id].append(line.get("output", ""))
        items.append({"id": item_id, "syntax_valid": score.syntax_valid, "routing": score.routing,
                      "structural": score.structural, "ast_match": score.ast_match, "repairs": list(score.repairs)})
    summary: dict[str, Any] = {"n": len(items), **callnavi_rates(scores)}
    repeated = {item_id: outs for item_id, outs in outputs_by_id.items() if len(outs) > 1}
    if repeated:
        summary["election_stability"] = sum(election_stability(o) for o in repeated.values()) / len(repeated)
        summary["levenshtein_stability"] = sum(levenshtein_stability(o) for o in repeated.values()) / len(repeated)
        summary["repeated_questions"] = len(repeated)
    return ScoreResult("callnavi", summary, items)


# ----------------------------------------------------------------------------- ComplexEval, CONFETTI
def _gold_samples(gold: Path | None, gold_format: str, metric: str) -> list[Any]:
    """The gold samples of a benchmark file in any format the convert command reads; items the
    reader rejects make the run fail loudly, since scoring against a partial gold is misleading."""
    from fcbench.formats import Rejected, read_samples

    if gold is None:
        raise UserError(f"--metric {metric} needs --gold FILE (with --from if not fcbench)")
    samples, rejected = [], []
    for item in read_samples(gold, gold_format):
        (rejected if isinstance(item, Rejected) else samples).append(item)
    if rejected:
        raise UserError(f"{gold}: {len(rejected)} gold items could not be read, first: {rejected[0].source}: "
                        f"{rejected[0].reason}")
    return samples


def _readable_lines(predictions: Path) -> list[dict[str, Any]]:
    lines = read_prediction_lines(predictions)
    broken = [line for line in lines if isinstance(line, str)]
    if broken:
        raise UserError(f"{predictions}: {broken[0]}")
    return lines  # type: ignore[return-value]


@dataclass(frozen=True)
class JudgeSettings:
    """The LLM that grades (None: the rule-based stand-ins, for the reason in `offline_because`)
    and the SQLite file its verdicts are cached in."""

    llm: LLMConfig | None = None
    cache: Path | None = None
    offline_because: str = "no LLM configured: give --llm-model, or --pipeline with an llm block"


def score_complexeval_files(predictions: Path, gold: Path | None, gold_format: str, compat: bool = False,
                            judges: JudgeSettings = JudgeSettings()) -> ScoreResult:
    """Prediction lines are saved trajectories `{"id", "turns": [[calls...], ..., "final text"]}`;
    `compat` gives the published runner's verdicts (fcbench.score.complexeval_compat). With an
    LLM, calls the rules cannot decide go to the recorded responses, then to the LLM judge, and
    completeness and correctness are LLM-judged; else the rule-based stand-ins, said first."""
    from fcbench.score.complexeval import (COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS, ComplexEvalOptions, judges_line,
                                           score_complexeval)
    from fcbench.score.complexeval_compat import score_compat

    samples = _gold_samples(gold, gold_format, "complexeval")
    lines = _readable_lines(predictions)
    options = ComplexEvalOptions()
    if gold_format == "complexfuncbench":  # the benchmark's own rule: its location look-ups are free
        options = ComplexEvalOptions(optional_functions=COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS)
    if judges.llm is None:
        report = score_compat(samples, lines) if compat else score_complexeval(samples, lines, options)
        first_line = f"{judges_line(report.summary['judges'])} ({judges.offline_because})"
        return ScoreResult("complexeval", {"judges_note": first_line, **report.summary}, report.items, first_line)
    if judges.cache is None:
        raise UserError("an LLM judge needs a cache file for its verdicts")
    from fcbench.evaluate.judges_complexeval import LLMJudges, judged_options
    from fcbench.environments.recorded import RecordedEnvironment
    from fcbench.score.complexeval import response_match_layer
    from fcbench.score.complexeval_compat import CompatOptions

    # online whatever the llm block says: the protocol waits for each verdict before it goes on
    with LLMJudges(judges.llm.model_copy(update={"mode": "online"}), judges.cache) as llm_judges:
        if compat:
            # the reference's paid layers, in its order: the response comparison, then the LLM
            response_layer = response_match_layer(RecordedEnvironment.from_samples(samples))
            report = score_compat(samples, lines, completeness_judge=llm_judges.completeness_judge,
                                  correctness_judge=llm_judges.correctness_judge,
                                  options_for=lambda sample: CompatOptions(
                                      layers=[response_layer, llm_judges.equivalence_layer(sample)]))
        else:
            report = score_complexeval(samples, lines, completeness_judge=llm_judges.completeness_judge,
                                       correctness_judge=llm_judges.correctness_judge,
                                       options_for=judged_options(samples, llm_judges, options))
        first_line = judges_line(report.summary["judges"])
        summary = {"judges_note": first_line, **report.summary, "judge_llm": llm_judges.summary()}
    verdicts = llm_judges.verdicts
    asked = sum(n for key, n in verdicts.items() if not key.endswith(":rule_no_answer"))
    errors = sum(n for key, n in verdicts.items() if key.endswith(":judge_error"))
    unusable = (f"the LLM judge {judges.llm.model} gave no usable verdict ({errors} judge_errors)"
                if asked and errors == asked else None)
    return ScoreResult("complexeval", summary, report.items, first_line, unusable)


def score_confetti_files(predictions: Path, gold: Path | None, gold_format: str,
                         judges: JudgeSettings = JudgeSettings()) -> ScoreResult:
    """Prediction lines are `{"id", "result": [{"func": {"arg": value}}]}` and/or `{"id",
    "dialog_acts"}` or `{"id", "response": "text"}` (the response-quality set: the acts are
    classified). Dialog acts and parameter validity are graded by the LLM when one is configured,
    else by the rule-based stand-ins; the first line says which."""
    from fcbench.evaluate.judges_confetti import score_offline, score_with_llm

    samples = _gold_samples(gold, gold_format, "confetti")
    every_line = read_prediction_lines(predictions)
    # An unreadable line names no turn: it is an item of its own (item i stays line i), counted.
    lines = [line for line in every_line if not isinstance(line, str)]
    if judges.llm is None:
        judged = score_offline(samples, lines, judges.offline_because)
    else:
        if judges.cache is None:
            raise UserError("an LLM judge needs a cache file for its verdicts")
        judged = score_with_llm(samples, lines, judges.llm, judges.cache)
    unusable = None
    if judged.nothing_usable:
        unusable = (f"the LLM judge {judges.llm.model} gave no usable verdict "
                    f"({judged.report.summary['errors']['judge_error']} items with a judge_error)")
    scored = iter(judged.report.items)
    items = [{"id": None, "error": "unreadable_prediction", "detail": line} if isinstance(line, str) else next(scored)
             for line in every_line]
    summary = {**judged.report.summary, "unreadable_lines": len(every_line) - len(lines)}
    return ScoreResult("confetti", summary, items, judged.first_line, unusable)


# ------------------------------------------------------------------------------------ registry
@dataclass(frozen=True)
class ScoreRequest:
    """Every file a `score` run may be given; each metric reads the ones it needs."""

    predictions: Path
    questions: tuple[Path, ...] = ()
    answers: tuple[Path, ...] = ()
    gold: Path | None = None
    gold_format: str = "fcbench"
    tools_module: Path | None = None
    compat: bool = False
    judges: JudgeSettings = JudgeSettings()


@reads_files("bfcl")
def _bfcl(request: ScoreRequest) -> ScoreResult:
    if not request.questions:
        raise UserError("--metric bfcl needs --questions (and --answers for categories with gold)")
    return score_bfcl_files(list(request.questions), list(request.answers), request.predictions, request.compat)


@reads_files("nestful")
def _nestful(request: ScoreRequest) -> ScoreResult:
    return score_nestful_files(request.predictions, request.gold, request.tools_module, request.compat)


@reads_files("callnavi")
def _callnavi(request: ScoreRequest) -> ScoreResult:
    if not request.questions:
        raise UserError("--metric callnavi needs --questions Questions/<domain>.json")
    return score_callnavi_files(list(request.questions), request.predictions, request.compat)


@reads_files("complexeval")
def _complexeval(request: ScoreRequest) -> ScoreResult:
    return score_complexeval_files(request.predictions, request.gold, request.gold_format, request.compat, request.judges)


@reads_files("confetti")
def _confetti(request: ScoreRequest) -> ScoreResult:
    return score_confetti_files(request.predictions, request.gold, request.gold_format, request.judges)


def score_files(metric: str, request: ScoreRequest) -> ScoreResult:
    """Grade a predictions file with the metric registered under `metric` (fcbench.score.registry).
    A file with no prediction at all is an error, not a score of 0.0."""
    reader = METRICS.get(metric).score_files if metric in METRICS else None
    if reader is None:
        raise UserError(f"unknown metric {metric!r}, available: {', '.join(m.name for m in file_metrics())}")
    if not request.predictions.is_file():
        raise UserError(f"{request.predictions}: no such file")
    if not any(line.strip() for line in request.predictions.open("rb")):
        raise UserError(f"{request.predictions}: no predictions in the file (nothing to score)")
    return reader(request)
