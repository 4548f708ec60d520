"""Scoring commands: score (the shared scorer) and evaluate (run a model on a benchmark)."""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from fcbench.cli.common import (exit_if_nothing_kept, PipelineArgument, BatchOption, JsonOption, PIPELINES_FILE, PipelinesFileOption, _count_table, _load_pipeline, app, console, print_json,
                                user_errors)
from fcbench.errors import UserError

PANEL = "Scoring"
command = functools.partial(app.command, rich_help_panel=PANEL)


# --------------------------------------------------------------------------------------------- score
SCORE_EPILOG = """Examples:

  build-dataset score --metric bfcl --questions ../shared/external/bfcl/BFCL_v4_simple_python.json --answers ../shared/external/bfcl/possible_answer_BFCL_v4_simple_python.json --predictions tests/data/predictions/bfcl_simple_python.jsonl --json

  build-dataset score --metric nestful --predictions ../shared/external/nestful/predictions/nestful_0-qwen3-8b-8bit-vanilla.jsonl --tools-module datasets/nestful-math/tools.py --compat

  build-dataset score --metric callnavi --questions ../shared/external/callnavi/Questions/bank.json --predictions tests/data/predictions/callnavi_bank_runs.jsonl

  build-dataset score --metric complexeval --gold datasets/complexfuncbench-example/trips.jsonl --from complexfuncbench --predictions tests/data/predictions/complexeval_trips.jsonl

  build-dataset score --metric complexeval --gold datasets/complexfuncbench-example/trips.jsonl --from complexfuncbench --predictions tests/data/predictions/complexeval_trips.jsonl --compat

  build-dataset score --metric confetti --gold ../shared/external/confetti/possible_answer_BFCL_v2_dialogacts.json --from confetti --predictions tests/data/predictions/confetti_dialogacts_responses.jsonl --offline

  build-dataset score --metric confetti --gold ../shared/external/confetti/possible_answer_BFCL_v2_dialogacts.json --from confetti --predictions tests/data/predictions/confetti_dialogacts_responses.jsonl --llm-model gpt-4o-mini

Every metric scores the GOLD SET: one item per gold item, in the gold's order, and the grading rule
(a BFCL category, the CONFETTI parts) comes from the gold, never from a prediction line. The FIRST
line of an id answers it: later lines with that id are duplicates, listed and not scored. A gold
item without a line is scored wrong and listed as missing; a line for an id not in the gold is
listed and not scored; so is a line that cannot be read. The lists are printed on stderr and are
in --json's "gold_set" (counts in summary.gold_set). Figures that are rates over what was predicted
(CONFETTI's parameter validity, CallNavi's stability, ComplexEval's per-parameter-type error rates,
NESTful's --compat macro F1) are reported only when every gold item has a prediction.

Inputs per metric:

  bfcl: prediction lines {"id", "result": [{"func": {"arg": value}}]} (a "category" on the line is
  ignored: each item is graded by its question's category); --questions and --answers once per
  category file (irrelevance needs no answers); every question given is a gold item. Items {"id",
  "category", "valid", "error_type"}; summary per category.

  nestful: prediction lines {"sample_id", "generated_text" | "calls"}. With --gold (NESTful or
  fcbench lines) the gold file is the authority: a line's own "output"/"gold_answer" is never read.
  Without it each line is graded against the gold it carries (the published predictions files
  carry theirs): the file is its own gold set, so a sample left out cannot be counted, as the
  output says first; with --compat too every line is scored, as NESTful's scorer does.
  --tools-module executes the predicted sequences for the win rate. Items {"sample_id", "win",
  "full_match"}.

  callnavi: prediction lines {"id", "output"} (raw model text or parsed answer) with --questions
  Questions/<domain>.json; a model run several times labels its lines {"id", "run", "output"}: the
  gold set is every question in every run named, and the stability scores need them all (on
  normalised answers; Levenshtein: the first run against each other). Figures per difficulty and
  their macro average; the GPT score from the LLM (--llm-model, CallNavi's prompt, cached) or, without
  one, a rule-based stand-in named on the first line.

  complexeval: saved trajectories {"id", "turns": [[{"name", "arguments"}, ...], ..., "final text"]}
  against --gold samples (any format, --from); summary in ComplexFuncBench's Table 2 shape. With an
  LLM (--llm-model or --pipeline's llm block, endpoint and key as for confetti below) calls are
  compared by rules, then the gold's recorded responses, then the LLM judge, and completeness and
  correctness (0-2) are LLM-judged, every verdict cached in --judge-cache (one at a time, online:
  the protocol waits for each); without one (or with --offline) rule-based stand-ins judge, as the
  report's first line says. With --from complexfuncbench its location look-ups are optional.
  --compat reproduces the published ComplexFuncBench runner's verdicts, defects included
  (bench/README.md lists how default mode differs).

  confetti: prediction lines {"id", "result": [{"func": {"arg": value}}]} and/or {"id",
  "dialog_acts": [...]} or {"id", "response": "the model's text"} against --gold (e.g. the CONFETTI
  ground truth with --from confetti). Responses are classified into dialog acts and predicted
  values judged for hallucination by an LLM (--llm-model, or --pipeline's llm block; endpoint from
  --base-url, the pipeline's llm.base_url or $OPENAI_BASE_URL, key from $OPENAI_API_KEY or the
  variable named by llm.api_key_env), each verdict cached in --judge-cache; an unreadable verdict is
  asked again once, then is that item's judge_error. Without an LLM (or with --offline) rule-based
  stand-ins grade; the first line of the report says which parts no LLM graded."""


@command(epilog=SCORE_EPILOG)
@user_errors
def score(
    metric: str = typer.Option(..., "--metric", help="bfcl, nestful, callnavi, complexeval or confetti."),
    predictions: Path = typer.Option(..., "--predictions", help="Model predictions, one JSON object per line."),
    questions: list[Path] = typer.Option([], "--questions", help="BFCL question file / CallNavi Questions file (repeatable)."),
    answers: list[Path] = typer.Option([], "--answers", help="BFCL possible-answer file (repeatable)."),
    gold: Optional[Path] = typer.Option(None, "--gold", help="Gold file (nestful, complexeval, confetti)."),
    gold_format: str = typer.Option("fcbench", "--from", help="Format of --gold for complexeval/confetti."),
    tools_module: Optional[Path] = typer.Option(None, "--tools-module", help="NESTful: Python tools to execute for win rate."),
    compat: bool = typer.Option(False, "--compat", help="Reproduce the published reference scorer exactly."),
    llm_model: Optional[str] = typer.Option(None, "--llm-model", help="The LLM judge: confetti's dialog-act "
                                            "classifier and parameter-validity judge, callnavi's GPT score, "
                                            "complexeval's judges (default: --pipeline's llm.model)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="The judge's OpenAI-compatible endpoint (default: "
                                           "the pipeline's llm.base_url, else $OPENAI_BASE_URL)."),
    pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Take the judge's llm block (model, key variable, "
                                           "concurrency, retries, prices) from this pipeline of --file."),
    file: PipelinesFileOption = PIPELINES_FILE,
    offline: bool = typer.Option(False, "--offline", help="Grade with the rule-based stand-ins even when an LLM is "
                                 "configured."),
    judge_cache: Optional[Path] = typer.Option(None, "--judge-cache", help="SQLite file caching each verdict (default: "
                                               "the pipeline's build/score/judges.sqlite, else "
                                               "~/.cache/fcbench/judges.sqlite)."),
    batch: bool = typer.Option(False, "--batch", help="confetti: send the judge's requests through the OpenAI Batch "
                               "API (llm.mode: batch): half the price, answers within 24 h."),
    as_json: JsonOption = False,
) -> None:
    """Grade model predictions against the gold set with the shared scorer.

    The JSON output is {metric, summary, items, gold_set}; item i is the verdict for gold item i
    (the gold's order); gold_set lists the missing gold items and the duplicate, foreign and
    unreadable lines, none of which can raise a figure."""
    from fcbench.evaluate import score_files as scoring

    judges = _judge_settings(metric, llm_model, base_url, pipeline, file, offline, judge_cache, batch)
    request = scoring.ScoreRequest(predictions, tuple(questions), tuple(answers), gold, gold_format, tools_module, compat,
                                   judges)
    result = scoring.score_files(metric, request)
    if as_json:
        print_json(result.as_dict())
        if result.first_line:  # stdout holds only JSON (summary.grading has the same sentence)
            print(result.first_line, file=sys.stderr)
        for note in result.notes:
            print(note, file=sys.stderr)
    else:
        _print_score(metric, compat, predictions, result)
    listing = result.gold_set
    if listing.get("answered") == 0:  # not one line answers a gold item: say why, exit 1
        lines = listing["answered"] + listing["duplicate_lines"] + listing["foreign_lines"] + listing["unreadable_lines"]
        exit_if_nothing_kept(lines, 0, "prediction line", "answers no gold item", unanswering_reasons(listing))
    for line in gold_set_lines(listing):
        print(f"warning: {line}", file=sys.stderr)
    if result.unusable:
        raise UserError(result.unusable)


def unanswering_reasons(listing: dict[str, Any]) -> list[str]:
    """Why each line answers no gold item, without its particulars (a JSON error's position)."""
    reasons = ["its id is not in the gold" for _ in listing.get("foreign", [])]
    reasons += [re.sub(r": line \d+ column \d+ \(char \d+\)$", "", str(entry["error"]))
                for entry in listing.get("unreadable", [])]
    return reasons


def gold_set_lines(listing: dict[str, Any], shown: int = 5) -> list[str]:
    """What did not count, in words: the gold items without a prediction and the lines that were
    not scored, each with its first few names (--json has every one)."""

    def names(entries: list[Any]) -> str:
        head = ", ".join(str(entry) for entry in entries[:shown])
        return head + (f", ... ({len(entries) - shown} more)" if len(entries) > shown else "")

    def plural(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    lines = []
    if listing.get("missing"):
        lines.append(f"{len(listing['missing'])} of {listing['gold']} gold items have no prediction (counted wrong): "
                     f"{names(listing['missing'])}")
    if listing.get("duplicates"):
        lines.append(f"{plural(len(listing['duplicates']), 'duplicate line')} (the first line of an id is scored): "
                     + names([f"line {d['line']} ({d['id']})" for d in listing["duplicates"]]))
    if listing.get("foreign"):
        lines.append(f"{plural(len(listing['foreign']), 'line')} for an id not in the gold (not scored): "
                     + names([f"line {f['line']} ({f['id']})" for f in listing["foreign"]]))
    if listing.get("unreadable"):
        lines.append(f"{plural(len(listing['unreadable']), 'unreadable line')} (not scored): "
                     + names([f"line {u['line']}: {u['error']}" for u in listing["unreadable"]]))
    return lines


def _judge_settings(metric: str, llm_model: str | None, base_url: str | None, pipeline: str | None, file: Path,
                    offline: bool, judge_cache: Path | None, batch: bool) -> Any:
    """Which LLM grades, resolved as `evaluate` resolves its model: --llm-model and --base-url over
    the pipeline's llm block; no model anywhere (or --offline) grades with the rule-based stand-ins."""
    import os

    from fcbench.evaluate import score_files as scoring
    from fcbench.llm.judge import default_judge_cache, judge_llm_config
    from fcbench.score.registry import METRICS, file_metrics

    if (llm_model or base_url or pipeline or judge_cache or batch) and not (metric in METRICS and METRICS.get(metric).llm_judged):
        raise UserError(f"--llm-model, --base-url, --pipeline, --judge-cache and --batch configure the LLM judge of "
                        f"{', '.join('--metric ' + m.name for m in file_metrics() if m.llm_judged)}; --metric {metric} has none")
    if batch and metric == "complexeval":
        raise UserError("--batch: ComplexEval's judges are asked one verdict at a time inside the protocol, online")
    if offline:
        return scoring.JudgeSettings(offline_because="--offline")
    config = _load_pipeline(pipeline, file) if pipeline else None
    llm = judge_llm_config(config.llm if config else None, llm_model, base_url, batch)
    if llm is None:
        return scoring.JudgeSettings()
    cache = judge_cache or default_judge_cache(config.build_dir if config else None, os.environ)
    return scoring.JudgeSettings(llm=llm, cache=cache)


def _print_score(metric: str, compat: bool, predictions: Path, result: Any) -> None:
    if result.first_line:
        console.print(result.first_line, highlight=False, soft_wrap=True, markup=False)
    for note in result.notes:
        console.print(note, highlight=False, soft_wrap=True, markup=False)
    console.print(f"{metric}{' (compat)' if compat else ''}: {predictions}", highlight=False, soft_wrap=True)
    table = Table()
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.summary.items():
        if key in ("grading", "judges_note"):  # said in words on the first line; --json has all of it
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in value.items()
                              if not isinstance(v, dict))
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    console.print(table)


# ------------------------------------------------------------------------------------------ evaluate
EVALUATE_EPILOG = """Examples:

  build-dataset evaluate travel --model gpt-4o-mini --split test

  build-dataset evaluate travel --model Qwen/Qwen2.5-7B-Instruct --base-url http://127.0.0.1:8000/v1 --limit 50 --json

  build-dataset evaluate travel --model m --input datasets/travel/build/validated.jsonl

  build-dataset evaluate nestful-math --model m --protocol nestful-icl --limit 5

  build-dataset evaluate nestful-math --model m --protocol nestful-react --limit 3 --max-steps 4

  build-dataset evaluate travel --model m --protocol callnavi --runs 3 --limit 4

  build-dataset evaluate travel-chat --model m --protocol confetti --limit 6

Protocols (--protocol; default: complexfuncbench for single-turn pipelines, confetti for kind:
conversation), each as its paper ran models, with the paper's decoding settings unless
--temperature / --max-tokens say otherwise:

  complexfuncbench: ComplexEval (native tools, gold responses, the paper's judges or rule-based
  stand-ins), greedy, 2,048 tokens; writes build/eval/<model>/trajectories.jsonl, scores.json and
  complexfuncbench_result.jsonl (ComplexFuncBench's own result shape).

  nestful-icl: the first --icl-examples (3) of NESTful's icl_examples.json in NESTful's chat prompt,
  greedy, 1,000 tokens; build/eval/<model>/nestful-icl-<k>shot/output.jsonl is NESTful's own file.

  nestful-react: a ReAct agent executing every action in the pipeline's environment (refused
  without an executable one), at most --max-steps actions; output.jsonl as above.

  callnavi: every question --runs times (5), CallNavi's prompt; routing, AST, GPT score (the judge
  LLM, or a named rule-based stand-in), election and Levenshtein stability per difficulty and
  macro; callnavi/results_stab/*.json in CallNavi's own shape.

  confetti: teacher-forced per turn (the gold history), both turn-level sets; AST soft accuracy by
  APIs, turns and chain length, parameter validity, dialog acts; confetti/<set>/<split>_result.json
  in BFCL's result shape.

Every protocol resumes after a kill (finished items are kept, answered requests replayed from
the request cache), takes --batch, and writes scores.json with the paper-layout tables."""


@command(epilog=EVALUATE_EPILOG)
@user_errors
def evaluate(
    pipeline: PipelineArgument,
    model: str = typer.Option(..., "--model", help="The model to evaluate (as the endpoint names it)."),
    protocol: Optional[str] = typer.Option(None, "--protocol", help="complexfuncbench, nestful-icl, nestful-react, "
                                           "callnavi or confetti (default: complexfuncbench for single-turn "
                                           "pipelines, confetti for kind: conversation)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (default: the "
                                           "pipeline's llm.base_url, else $OPENAI_BASE_URL)."),
    split: str = typer.Option("test", "--split", help="The exported split (build/export/<config>/<split>-*.parquet)."),
    input_file: Optional[Path] = typer.Option(None, "--input", help="Evaluate this canonical JSONL file instead "
                                              "of the exported split."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Evaluate only the first N samples (of each "
                                        "set)."),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0, max=2.0, help="Override the "
                                                "protocol's (the paper's) temperature."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, help="Override the protocol's (the "
                                             "paper's) new-token limit."),
    runs: Optional[int] = typer.Option(None, "--runs", min=1, help="callnavi: runs of each question (default 5, "
                                       "the paper's)."),
    icl_examples: int = typer.Option(3, "--icl-examples", min=1, help="nestful-icl: in-context examples (the "
                                     "first k of NESTful's icl_examples.json; the paper: 3, also 1)."),
    max_steps: int = typer.Option(10, "--max-steps", min=1, help="nestful-react: actions per question."),
    compat: bool = typer.Option(False, "--compat", help="Tables show the published scorer's figures where fcbench's "
                                "differ (nestful: src/scorer.py; callnavi: Judge_para.py's checks)."),
    extra_turns: int = typer.Option(3, "--extra-turns", min=1, help="complexfuncbench: model turns allowed per sample "
                                    "beyond its gold steps (final answer and corrections) before it is cut off."),
    file: PipelinesFileOption = PIPELINES_FILE,
    batch: BatchOption = False,
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="The LLM judge (ComplexEval: call "
                                              "equivalence, completeness, correctness; CallNavi: the GPT score; "
                                              "CONFETTI: dialog acts, parameter validity). Default: the pipeline's "
                                              "judge block; none: rule-based stand-ins, said on the first line."),
    judge_base_url: Optional[str] = typer.Option(None, "--judge-base-url", help="The judge's OpenAI-compatible "
                                                 "endpoint (default: the judge block's base_url, else $OPENAI_BASE_URL)."),
    context_window: Optional[int] = typer.Option(
        None, "--context-window", min=1, help="complexfuncbench: the model's context window in tokens (cl100k_base "
        "count of messages + tools; default: llm.context_window). A request above it is not sent: the sample ends "
        "there as context_overflow."),
    as_json: JsonOption = False,
) -> None:
    """Run a model on an exported benchmark the way a paper did (--protocol), then score it.

    Sampling concurrency, retries and the key variable (llm.api_key_env) come from the pipeline's
    llm block; decoding settings are the paper's (--temperature, --max-tokens override them).
    Writes build/eval/<model>/ (ComplexEval) or build/eval/<model>/<protocol>/: fcbench's
    predictions, the reference's own prediction file, scores.json (the choices made where the paper
    leaves one open, who judged, the tables in the paper's layout, the summary, every item) and the
    rejects. A protocol that does not fit the pipeline is refused before anything is sent. A re-run
    after a kill resumes: finished items are kept and answered requests are replayed from the cache.

    Judges: with --judge-model (or a `judge:` block), the paper's LLM judges grade (cached in the
    evaluation folder; an unusable verdict is asked again once, then is a judge_error); without one,
    rule-based stand-ins grade, and the output and scores.json say so first."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import EvaluateSettings

    config = _load_pipeline(pipeline, file)
    # progress (a bar on a terminal, a line every few seconds elsewhere, on stderr) and the memory
    # ceiling: fcbench.runtime.progress.StageProgress, inside the stage
    settings = EvaluateSettings(model, base_url, split, input_file, limit, extra_turns, batch,
                                judge_model=judge_model, judge_base_url=judge_base_url, context_window=context_window,
                                protocol=protocol, temperature=temperature, max_tokens=max_tokens, runs=runs,
                                icl_examples=icl_examples, max_steps=max_steps, compat=compat)
    result = run_stage("evaluate", config, settings).report
    complexeval = hasattr(result, "trajectories_path")
    if as_json:
        print_json(result.as_dict())
        if complexeval:
            from fcbench.score.complexeval import judges_line

            print(judges_line(result.judges), file=sys.stderr)  # stdout holds only JSON; "judges" has the same
        elif result.finished.first_line:
            print(result.finished.first_line, file=sys.stderr)
        return
    if complexeval:
        _print_evaluation(result)
    else:
        _print_protocol(result)
    _print_tables(result.tables)


def _print_tables(tables: list[dict[str, Any]]) -> None:
    """The paper-layout tables, turned on their side for a terminal (a paper's table is wider than
    one): a line per column of the paper (its group, its name), a column per model; then the notes.
    `--json` and scores.json keep the paper's orientation."""
    for paper_table in tables:
        table = Table(title=paper_table["title"])
        table.add_column("group")
        table.add_column("measure")
        for row in paper_table["rows"]:
            table.add_column(row["model"], justify="right")
        previous = None
        for index, column in enumerate(paper_table["columns"]):
            group = column["group"] if column["group"] != previous else ""
            previous = column["group"]
            table.add_row(group, column["name"], *(row["cells"][index] for row in paper_table["rows"]))
        console.print(table)
        for note in paper_table["notes"]:
            console.print(f"  note: {note}", highlight=False, soft_wrap=True, markup=False)


def _print_protocol(result: Any) -> None:
    if result.finished.first_line:
        console.print(result.finished.first_line, highlight=False, soft_wrap=True, markup=False)
    console.print(f"evaluate {result.model} ({result.protocol}): {result.items} items from {result.source} "
                  f"({result.ran} run, {result.reused} reused from an earlier run)", highlight=False, soft_wrap=True)
    for choice in result.choices:
        console.print(f"  choice: {choice}", highlight=False, soft_wrap=True, markup=False)
    for reason, count in result.not_evaluated.items():
        print(f"warning: {count} items not evaluated ({reason}); see {result.rejects_path}", file=sys.stderr)
    files = "\n".join(f"{what}: {path}" for what, path in result.finished.reference_files.items()
                      if ":" not in what or what.endswith(":0"))
    console.print(f"predictions: {result.predictions_path}\nscores:      {result.scores_path}\n{files}",
                  highlight=False, soft_wrap=True)


def _print_evaluation(result: Any) -> None:
    from fcbench.score.complexeval import judges_line

    scores = result.scores
    console.print(judges_line(result.judges), highlight=False, soft_wrap=True)  # who judged, first
    console.print(f"evaluate {result.model}: {result.samples} samples from {result.source} "
                  f"({result.ran} run, {result.reused} reused from an earlier run)", highlight=False, soft_wrap=True)
    table = Table(title="ComplexEval per domain")
    for column in ("domain", "samples", "success rate", "call accuracy", "completeness", "correctness"):
        table.add_column(column, justify="left" if column == "domain" else "right")
    rows = [*scores.get("by_domain", {}).items(), ("overall", scores)]
    for domain, figures in rows:
        table.add_row(domain, str(figures["n"]), f"{figures['success_rate']:.3f}", f"{figures['call_accuracy']:.3f}",
                      f"{figures['completeness']:.2f}", f"{figures['correctness']:.2f}")
    console.print(table)
    console.print(_count_table("failed samples by error", "error", scores.get("errors", {})))
    rates = scores.get("param_type_error_rate", {})
    if rates:
        console.print("parameter error rate: " + ", ".join(f"{kind}={rate:.3f}" for kind, rate in rates.items()),
                      highlight=False, soft_wrap=True)
    for reason, count in result.not_evaluated.items():
        print(f"warning: {count} samples not evaluated ({reason}), counted as failures until a re-run evaluates "
              f"them; see {result.rejects_path}", file=sys.stderr)
    if result.context_overflow:
        print(f"warning: {len(result.context_overflow)} samples did not fit the context window (context_overflow: "
              f"scored on the turns before it); see {result.scores_path}", file=sys.stderr)
    console.print(f"trajectories: {result.trajectories_path}\nscores:       {result.scores_path}", highlight=False,
                  soft_wrap=True)
