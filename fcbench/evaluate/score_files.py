"""`build-dataset score`: reads prediction and gold files, runs a pure metric family from
`fcbench.score`, and returns the one result shape every metric shares:

    {"metric": M, "summary": {...}, "items": [...], "gold_set": {...}}

Every metric scores the GOLD SET (`fcbench.score.gold_set`): items[i] is the verdict for gold
item i, in the gold's order; the first prediction line of an id answers it and later ones are
listed as duplicates; a gold item without a line is scored wrong and listed as missing; a line for
an id the gold does not have is listed as foreign and not scored; a line that cannot be read is
listed as unreadable. `gold_set` lists all of them and `summary["gold_set"]` counts them. The
grading rule (a BFCL category, which CONFETTI parts) comes from the gold, never from a line.

This module is the I/O side of the scorer; the metric logic itself stays in `fcbench/score/`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from fcbench.config import LLMConfig
from fcbench.errors import UserError
from fcbench.jsonl import iter_json_lines, read_json_or_lines
from fcbench.score.registry import METRICS, file_metrics, reads_files
from fcbench.score.gold_set import GoldSetError, PredictionLine, align_to_gold, item_id


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
    # GoldAlignment.listing(): missing gold items, duplicate, foreign and unreadable lines
    gold_set: dict[str, Any] = field(default_factory=dict)
    # what was scored against what, when it is not simply "the gold file": printed first
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "summary": self.summary, "items": self.items, "gold_set": self.gold_set}


def read_prediction_lines(path: Path) -> list[PredictionLine]:
    """Every non-blank line, in order, with its line number: the parsed object, or why not."""
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    lines: list[PredictionLine] = []
    for line in iter_json_lines(path):
        if line.error:
            lines.append(PredictionLine(line.line_no, error=line.error))
        elif not isinstance(line.value, dict):
            lines.append(PredictionLine(line.line_no, error="expected a JSON object"))
        else:
            lines.append(PredictionLine(line.line_no, line.value))
    return lines


def _records_by_id(paths: Iterable[Path], what: str, id_field: str = "id") -> dict[str, dict[str, Any]]:
    """A gold file's records by id, in file order. An id given twice is refused: which record a
    prediction is graded against must never depend on which one was read last."""
    records: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            for record in read_json_or_lines(path):
                key = item_id(record, id_field) if isinstance(record, dict) else None
                if key is None and isinstance(record, dict) and id_field != "id":
                    key = item_id(record)
                if key is None:
                    continue
                if key in records:
                    raise UserError(f"{what} {path}: the id {key!r} is given twice")
                records[key] = record
        except ValueError as exc:
            raise UserError(f"{what}: {exc}") from None
    return records


def _summary_with_gold_set(summary: dict[str, Any], listing: dict[str, Any]) -> dict[str, Any]:
    counts = {key: listing[key] for key in ("gold", "answered", "duplicate_lines", "foreign_lines", "unreadable_lines")}
    counts["missing"] = len(listing["missing"])
    return {**summary, "gold_set": counts}


# --------------------------------------------------------------------------------------------- BFCL
def score_bfcl_files(questions: list[Path], answers: list[Path], predictions: Path, compat: bool) -> ScoreResult:
    """Every question of --questions is a gold item, graded by the rule of ITS category (from its
    id); a line's own `category` is never read. No prediction is wrong, even for irrelevance."""
    from fcbench.score.bfcl import BfclSchemaError, category_from_id, check_bfcl

    question_by_id = _records_by_id(questions, "--questions")
    answer_by_id = _records_by_id(answers, "--answers")
    alignment = align_to_gold(question_by_id, read_prediction_lines(predictions), item_id)
    items: list[dict[str, Any]] = []
    by_category: dict[str, list[bool]] = defaultdict(list)
    for gold_id, line in alignment.pairs():
        category = category_from_id(gold_id)
        item: dict[str, Any] = {"id": gold_id, "category": category}
        if line is None:
            item.update(valid=False, error_type="missing_prediction")
        else:
            try:
                verdict = check_bfcl(question_by_id[gold_id], answer_by_id.get(gold_id), line.get("result"), category,
                                     compat)
                item.update(valid=verdict.valid, error_type=verdict.error_type)
            except BfclSchemaError as exc:
                item.update(valid=False, error_type="not_gradable", error=str(exc))
        by_category[category].append(item["valid"])
        items.append(item)
    n = len(items)
    summary = {"n": n, "accuracy": sum(item["valid"] for item in items) / n if n else 0.0,
               "by_category": {category: {"n": len(valid), "accuracy": sum(valid) / len(valid)}
                               for category, valid in by_category.items()}}
    listing = alignment.listing()
    return ScoreResult("bfcl", _summary_with_gold_set(summary, listing), items, gold_set=listing)


# ------------------------------------------------------------------------------------------ NESTful
NESTFUL_CARRIED_GOLD = ("no --gold: each line is graded against the gold each line carries (its output and "
                        "gold_answer), so the file is its own gold set and a sample left out of it cannot be "
                        "counted as missing; give --gold FILE to score against the benchmark")
NESTFUL_EVERY_LINE = ("--compat without --gold: every line is scored, as NESTful's scorer does (it has no gold "
                      "set: a sample given twice counts twice, one left out is not counted)")


def score_nestful_files(predictions: Path, gold: Path | None, tools_module: Path | None, compat: bool) -> ScoreResult:
    """With --gold the gold file is the authority (lines for other samples are foreign, their own
    `output` never read); without it each line carries its gold, and the output says so."""
    from fcbench.score.nestful import score_nestful

    lines = read_prediction_lines(predictions)
    gold_by_id = _records_by_id([gold], "--gold", "sample_id") if gold is not None else None
    try:
        if tools_module is None:
            report = score_nestful(lines, gold_by_id, compat)
        else:
            from fcbench.environments.python_env import PythonEnvironment
            from fcbench.score.nestful import environment_executor

            if not tools_module.is_file():
                raise UserError(f"{tools_module}: no such tools module")
            with PythonEnvironment(tools_module) as environment:
                report = score_nestful(lines, gold_by_id, compat, environment_executor(environment))
    except GoldSetError as exc:
        raise UserError(f"--gold {gold}: {exc}") from None
    notes = []
    if report.graded_against == "carried":
        notes.append(NESTFUL_CARRIED_GOLD)
    elif report.graded_against == "carried, every line":
        notes.append(NESTFUL_EVERY_LINE)
    summary = dict(report.summary)
    summary["graded_against"] = "--gold" if gold is not None else "the gold each line carries"
    listing = report.gold_set
    if listing is None:  # compat without a gold: every readable line was scored, nothing is missing
        readable = [line for line in lines if line.value is not None]
        listing = {"gold": len(readable), "answered": len(readable), "missing": [], "duplicates": [], "foreign": [],
                   "duplicate_lines": 0, "foreign_lines": 0, "unreadable_lines": len(lines) - len(readable),
                   "unreadable": [{"line": line.line_no, "error": line.error} for line in lines if line.value is None]}
    return ScoreResult("nestful", _summary_with_gold_set(summary, listing), report.items, gold_set=listing,
                       notes=notes)


# ----------------------------------------------------------------------------------------- CallNavi
def _callnavi_run(line: dict[str, Any]) -> str | None:
    run = line.get("run")
    return None if run is None or isinstance(run, bool) else str(run)


def _callnavi_key(line: dict[str, Any]) -> tuple[str, str | None] | None:
    question_id = item_id(line)
    return None if question_id is None else (question_id, _callnavi_run(line))


def _describe_callnavi(key: tuple[str, str | None]) -> str:
    question_id, run = key
    return question_id if run is None else f"{question_id} (run {run})"


def score_callnavi_files(questions: list[Path], predictions: Path, compat: bool,
                         judges: JudgeSettings | None = None) -> ScoreResult:
    """Prediction lines are `{"id", "output"}` (raw model text or a parsed answer), with `"run": R`
    when a model answered each question several times. The gold set is every question of
    --questions in every run the file names (a question without an answer in a run is wrong in
    that run); one line per question and run counts, so repeated runs must be labelled (an
    unlabelled repeat is a duplicate). The stability scores are over the runs of every question,
    so they are reported only when every question has every run. The figures per difficulty (the
    question's label) and their macro average are CallNavi's; the GPT score comes from the LLM judge
    when one is configured, else from a named rule-based stand-in (a missing answer scores 0)."""
    from fcbench.evaluate.judges_callnavi import RULE_BASED, ask_gpt_scores, gpt_score_question
    from fcbench.llm.judge import JudgeError
    from fcbench.score.callnavi import (CallNaviScore, CallNaviTally, callnavi_rates, election_stability,
                                        levenshtein_stability, parse_callnavi_output, rule_based_gpt_score,
                                        score_callnavi)

    judges = judges or JudgeSettings()
    question_by_id = _records_by_id(questions, "--questions")
    lines = read_prediction_lines(predictions)
    runs: dict[str | None, None] = {}
    for line in lines:
        key = _callnavi_key(line.value) if line.value is not None else None
        if key is not None and key[0] in question_by_id:
            runs.setdefault(key[1])
    run_labels = list(runs) or [None]
    gold = [(question_id, run) for question_id in question_by_id for run in run_labels]
    alignment = align_to_gold(gold, lines, _callnavi_key, _describe_callnavi)
    items: list[dict[str, Any]] = []
    scores = []
    # question id -> its runs in gold order: (output, score, item); a missing run is ("", wrong, item)
    runs_by_id: dict[str, list[tuple[Any, Any, dict[str, Any]]]] = defaultdict(list)
    for (question_id, run), line in alignment.pairs():
        item: dict[str, Any] = {"id": question_id, **({"run": run} if run is not None else {})}
        if line is None:
            score = CallNaviScore(syntax_valid=False, routing=False, structural=False, ast_match=False)
            item["missing"] = True
            output: Any = ""
        else:
            output = line.get("output", "")
            score = score_callnavi(output, question_by_id[question_id]["ground_truth"], compat)
        scores.append(score)
        item.update(syntax_valid=score.syntax_valid, routing=score.routing, structural=score.structural,
                    ast_match=score.ast_match, repairs=list(score.repairs))
        runs_by_id[question_id].append((output, score, item))
        items.append(item)
    answered = [(question_id, output, item) for question_id, runs in runs_by_id.items()
                for output, _, item in runs if not item.get("missing")]
    llm_summary = None
    if judges.llm is None:
        verdicts: list[Any] = [rule_based_gpt_score(output, question_by_id[question_id]["ground_truth"])
                               for question_id, output, _ in answered]
        who = RULE_BASED
        first_line = f"CallNavi GPT score by a {RULE_BASED} ({judges.offline_because})"
    else:
        if judges.cache is None:
            raise UserError("an LLM judge needs a cache file for its verdicts")
        parsed = [parse_callnavi_output(output)[0] if isinstance(output, str) else output for _, output, _ in answered]
        questions_asked = [gpt_score_question(answer, question_by_id[question_id]["ground_truth"])
                           for (question_id, _, _), answer in zip(answered, parsed)]
        verdicts, llm_summary = ask_gpt_scores(questions_asked, judges.llm, judges.cache)
        who = f"LLM {judges.llm.model} with CallNavi's GPT-4o prompt (temperature 0)"
        first_line = f"CallNavi GPT score by {who}; routing, AST and stability computed, no judge"
    for (_, _, item), verdict in zip(answered, verdicts):
        if isinstance(verdict, JudgeError):
            item["gpt_score"], item["judge_error"] = None, verdict.reason
        else:
            item["gpt_score"] = verdict
    tally = CallNaviTally()
    for question_id, runs in runs_by_id.items():
        gpt = [0.0 if item.get("missing") else item["gpt_score"] for _, _, item in runs]
        difficulty = str(question_by_id[question_id].get("difficulty") or "unlabelled")
        tally.add_question(difficulty, [output for output, _, _ in runs], [score for _, score, _ in runs], gpt)
    summary: dict[str, Any] = {"n": len(items), "questions": len(question_by_id), "runs": len(run_labels),
                               **callnavi_rates(scores)}
    if len(run_labels) > 1 and alignment.complete:
        outputs = [[output for output, _, _ in runs] for runs in runs_by_id.values()]
        summary["election_stability"] = sum(election_stability(o) for o in outputs) / len(outputs)
        summary["levenshtein_stability"] = sum(levenshtein_stability(o) for o in outputs) / len(outputs)
        summary["repeated_questions"] = len(outputs)
    elif len(run_labels) > 1:
        summary["election_stability"] = summary["levenshtein_stability"] = None
        summary["stability_note"] = (f"not reported: {len(alignment.missing)} question runs have no answer, and "
                                     "stability is over the answers given")
    summary.update(tally.figures())
    summary["gpt_score_judge"] = who
    summary["judge_errors"] = sum("judge_error" in item for item in items)
    if llm_summary is not None:
        summary["judge_llm"] = {key: llm_summary.get(key) for key in ("model", "base_url", "requests_sent",
                                                                      "cache_hits", "rejected", "cost_usd")}
    listing = alignment.listing()
    return ScoreResult("callnavi", _summary_with_gold_set(summary, listing), items, first_line, gold_set=listing)


# ----------------------------------------------------------------------------- ComplexEval, CONFETTI
def _gold_samples(gold: Path | None, gold_format: str, metric: str) -> list[Any]:
    """The gold samples of a benchmark file in any format the convert command reads; items the
    reader rejects make the run fail loudly, since scoring against a partial gold is misleading,
    and so does an id given twice (which one a prediction answers would be a guess)."""
    from fcbench.formats import Rejected, read_samples

    if gold is None:
        raise UserError(f"--metric {metric} needs --gold FILE (with --from if not fcbench)")
    samples, rejected = [], []
    for item in read_samples(gold, gold_format):
        (rejected if isinstance(item, Rejected) else samples).append(item)
    if rejected:
        raise UserError(f"{gold}: {len(rejected)} gold items could not be read, first: {rejected[0].source}: "
                        f"{rejected[0].reason}")
    seen: set[str] = set()
    for sample in samples:
        if sample.id in seen:
            raise UserError(f"--gold {gold}: the id {sample.id!r} is given twice")
        seen.add(sample.id)
    return samples


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
    lines = read_prediction_lines(predictions)
    options = ComplexEvalOptions()
    if gold_format == "complexfuncbench":  # the benchmark's own rule: its location look-ups are free
        options = ComplexEvalOptions(optional_functions=COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS)
    if judges.llm is None:
        report = score_compat(samples, lines) if compat else score_complexeval(samples, lines, options)
        first_line = f"{judges_line(report.summary['judges'])} ({judges.offline_because})"
        listing = report.gold_set or {}
        return ScoreResult("complexeval", _summary_with_gold_set({"judges_note": first_line, **report.summary}, listing),
                           report.items, first_line, gold_set=listing)
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
    listing = report.gold_set or {}
    return ScoreResult("complexeval", _summary_with_gold_set(summary, listing), report.items, first_line, unusable,
                       gold_set=listing)


def score_confetti_files(predictions: Path, gold: Path | None, gold_format: str,
                         judges: JudgeSettings = JudgeSettings()) -> ScoreResult:
    """Prediction lines are `{"id", "result": [{"func": {"arg": value}}]}` and/or `{"id",
    "dialog_acts"}` or `{"id", "response": "text"}` (the response-quality set: the acts are
    classified). Dialog acts and parameter validity are graded by the LLM when one is configured,
    else by the rule-based stand-ins; the first line says which. Which parts are graded is
    decided for the whole file (`fcbench.score.confetti.score_confetti`)."""
    from fcbench.evaluate.judges_confetti import score_offline, score_with_llm

    samples = _gold_samples(gold, gold_format, "confetti")
    lines = read_prediction_lines(predictions)
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
    listing = judged.report.gold_set or {}
    return ScoreResult("confetti", _summary_with_gold_set(judged.report.summary, listing), judged.report.items,
                       judged.first_line, unusable, gold_set=listing)


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
    return score_callnavi_files(list(request.questions), request.predictions, request.compat, request.judges)


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
