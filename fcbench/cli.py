"""The `build-dataset` command line (Typer).

Conventions: every command has an example in its help; a user error is one line on stderr and
exit code 1 (no traceback); `--json` prints only JSON on stdout. Commands are thin: they parse
options, call the module that owns the concept, and print.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.table import Table

from fcbench.errors import UserError

app = typer.Typer(
    name="build-dataset",
    help="Build function-calling benchmarks stage by stage, convert published formats, and score models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)
console = Console()


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(1)


def user_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the errors a user can cause into one stderr line and exit 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UserError as exc:
            _fail(str(exc))
        except FileNotFoundError as exc:
            _fail(f"{exc.filename}: no such file")
        except IsADirectoryError as exc:
            _fail(f"{exc.filename}: is a directory, expected a file")
        except UnicodeDecodeError:
            _fail("input is not UTF-8 text")

    return wrapper


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


# --------------------------------------------------------------------------------------------- validate
@app.command(epilog="Example:  build-dataset validate datasets/travel/build/drafts.jsonl")
@user_errors
def validate(
    file: Path = typer.Argument(..., help="A canonical fcbench JSONL file."),
    as_json: bool = typer.Option(False, "--json", help="Print the problems as JSON."),
) -> None:
    """Check a canonical JSONL file line by line.

    Each line is checked against the sample schema and the cross-field rules (unknown tools,
    references to missing or later labels, duplicate labels, a stored difficulty that disagrees
    with the path). Each problem prints as FILE:LINE: field: message; exit 1 if there is any."""
    from fcbench.validate import validate_file

    if not file.is_file():
        raise UserError(f"{file}: no such file")
    problems = list(validate_file(file))
    if as_json:
        print_json({"file": str(file), "ok": not problems,
                    "problems": [{"line": p.line_no, "field": p.field, "message": p.message} for p in problems]})
    else:
        for problem in problems:
            print(problem.render(file))
        if not problems:
            print(f"{file}: all lines valid")
    if problems:
        raise typer.Exit(1)


# --------------------------------------------------------------------------------------------- convert
@app.command(
    epilog=(
        "Examples:\n\n"
        "  build-dataset convert BFCL_v4_simple_python.json --from bfcl "
        "--answers possible_answer_BFCL_v4_simple_python.json --to fcbench -o simple.jsonl\n\n"
        "  build-dataset convert simple.jsonl --from fcbench --to bfcl -o q.json --answers-out a.json"
    )
)
@user_errors
def convert(
    input_file: Path = typer.Argument(..., metavar="IN", help="The file to convert."),
    from_format: str = typer.Option(..., "--from", help="fcbench, complexfuncbench, nestful, callnavi, bfcl, confetti."),
    to_format: str = typer.Option(..., "--to", help="Same choices as --from."),
    output: Path = typer.Option(..., "-o", "--output", help="Where to write the converted file."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="BFCL possible-answer file to read."),
    answers_out: Optional[Path] = typer.Option(None, "--answers-out", help="BFCL possible-answer file to write."),
    tools: Optional[Path] = typer.Option(None, "--tools", help="NESTful v1 spec or CallNavi APISchema file to read."),
    tools_out: Optional[Path] = typer.Option(None, "--tools-out", help="NESTful v1 spec file to write."),
    nestful_version: Optional[str] = typer.Option(None, "--nestful-version", help="v1 or v2 when writing NESTful."),
    no_gold: bool = typer.Option(False, "--no-gold", help="BFCL: convert questions without --answers (no gold calls)."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Convert a benchmark file between formats, through the canonical sample.

    Items that cannot be converted go to OUT.rejects.jsonl with their reason; what the target
    format cannot express is reported as one warning line with a count."""
    from fcbench.convert import convert_file
    from fcbench.formats import FormatOptions

    options = FormatOptions(answers=answers, answers_out=answers_out, tools=tools, tools_out=tools_out,
                            nestful_version=nestful_version, no_gold=no_gold)
    result = convert_file(input_file, from_format, to_format, output, options)
    if as_json:
        print_json(result.as_dict())
        return
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{result.converted} converted, {result.rejected} rejected -> {output}")
    if result.rejected:
        print(f"rejects with reasons: {result.rejects_file}")


# --------------------------------------------------------------------------------------------- stats
@app.command(
    epilog=(
        "Examples:\n\n"
        "  build-dataset stats datasets/travel/build/validated.jsonl\n\n"
        "  build-dataset stats Questions/bank.json --from callnavi --tools APISchema/bank.json --json"
    )
)
@user_errors
def stats(
    file: Path = typer.Argument(..., help="A benchmark file of any supported format."),
    from_format: str = typer.Option("fcbench", "--from", help="fcbench, complexfuncbench, nestful, callnavi, bfcl, confetti."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="BFCL possible-answer file to read."),
    tools: Optional[Path] = typer.Option(None, "--tools", help="NESTful v1 spec or CallNavi APISchema file to read."),
    as_json: bool = typer.Option(False, "--json", help="Print the statistics as one JSON object."),
) -> None:
    """Print dataset statistics of a benchmark file of any format.

    Samples, average steps and calls per domain; difficulty splits (derived from the gold path,
    and as published); nesting-depth and dependency-count distributions. Items the reader
    rejects are counted with their reasons."""
    from fcbench.formats import FormatOptions, read_samples
    from fcbench.stats import compute_stats

    result = compute_stats(read_samples(file, from_format, FormatOptions(answers=answers, tools=tools)))
    if as_json:
        print_json({"file": str(file), "format": from_format, **result.as_dict()})
        return
    _print_stats_tables(file, result)


def _count_table(title: str, header: str, counts: dict[Any, int]) -> Table:
    table = Table(title=title)
    table.add_column(header)
    table.add_column("samples", justify="right")
    for key, count in counts.items():
        table.add_row(str(key), str(count))
    return table


def _print_stats_tables(file: Path, result: Any) -> None:
    console.print(f"{file}: {result.samples} samples, {result.rejected} rejected", highlight=False, soft_wrap=True)
    domains = Table(title="per domain")
    for column in ("domain", "samples", "avg steps", "avg calls"):
        domains.add_column(column, justify="left" if column == "domain" else "right")
    for row in result.domains:
        domains.add_row(row.domain, str(row.samples), f"{row.avg_steps:.2f}", f"{row.avg_calls:.2f}")
    console.print(domains)
    console.print(_count_table("difficulty (from the gold path)", "difficulty", result.difficulty))
    if result.published_difficulty:
        console.print(_count_table("difficulty (as published)", "label", result.published_difficulty))
    console.print(_count_table("nesting depth", "depth", result.nesting_depth))
    console.print(_count_table("dependencies per sample", "dependencies", result.dependencies))
    if result.reject_reasons:
        console.print(_count_table("rejected items by reason", "reason", result.reject_reasons))


# ---------------------------------------------------------------------------------------- lint-tools
@app.command(
    "lint-tools",
    epilog=(
        "Examples:\n\n"
        "  build-dataset lint-tools ../shared/external/callnavi/APISchema/bank.json\n\n"
        "  build-dataset lint-tools datasets/travel/tools.json --json --strict"
    ),
)
@user_errors
def lint_tools_command(
    file: Path = typer.Argument(..., help="A tool catalog: OpenAI, BFCL, NESTful, CallNavi or fcbench samples."),
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    strict: bool = typer.Option(False, "--strict", help="Exit 1 when any finding is an error."),
    overlap_threshold: Optional[float] = typer.Option(
        None, "--overlap-threshold", min=0, max=100,
        help="Description similarity (0-100) from which tools with the same parameters overlap "
             "[default: 97, near-identical text]."),
) -> None:
    """Check a tool catalog for what makes a benchmark unfair or ambiguous.

    Missing descriptions, untyped or look-alike parameters, required parameters never declared,
    duplicate tool names, and tools a model cannot tell apart. Findings do not change the exit
    code unless --strict."""
    from fcbench.catalog import load_tools_file
    from fcbench.catalog.lint import OVERLAP_RATIO, count_by_code, has_errors, lint_tools

    catalog = load_tools_file(file)
    findings = lint_tools(catalog, overlap_ratio=OVERLAP_RATIO if overlap_threshold is None else overlap_threshold)
    if as_json:
        print_json({"file": str(file), "tools": len(catalog),
                    "findings": [finding.as_dict() for finding in findings], "counts": count_by_code(findings)})
    else:
        table = Table(title=f"{file}: {len(catalog)} tools, {len(findings)} findings")
        for column in ("severity", "tool", "parameter", "code", "message"):
            # codes are what users grep for: keep them whole, let the message wrap instead
            table.add_column(column, no_wrap=column in ("severity", "code"), overflow="fold")
        for finding in findings:
            table.add_row(finding.severity.value, finding.tool, finding.parameter or "", finding.code.value,
                          finding.message)
        console.print(table)
    if strict and has_errors(findings):
        raise typer.Exit(1)


# ----------------------------------------------------------------------------------------- pipelines
@app.command(epilog="Example:  build-dataset pipelines --file pipelines.yaml --json")
@user_errors
def pipelines(
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file to read."),
    as_json: bool = typer.Option(False, "--json", help="Print every pipeline's full settings as JSON."),
) -> None:
    """List the pipelines declared in pipelines.yaml and their stage settings.

    The file is fully checked: any problem is reported as FILE:LINE: key: message."""
    from fcbench.config import load_pipelines

    config = load_pipelines(file)
    if as_json:
        print_json({"file": str(file), "pipelines": {
            name: {**pipeline.model_dump(mode="json"), "declared_stages": pipeline.declared_stages()}
            for name, pipeline in config.pipelines.items()}})
        return
    table = Table(title=f"{file}: {len(config.pipelines)} pipelines")
    for column in ("pipeline", "dataset", "environment", "llm", "seed"):
        table.add_column(column)
    for name, pipeline in config.pipelines.items():
        environment = pipeline.environment.kind if pipeline.environment else "-"
        llm = pipeline.llm.model if pipeline.llm else "-"
        table.add_row(name, pipeline.dataset_dir, environment, llm, str(pipeline.seed))
    console.print(table)
    for name, pipeline in config.pipelines.items():
        console.print(_stages_table(name, pipeline))


def _stages_table(name: str, pipeline: Any) -> Table:
    """The settings that decide what each stage does; stages left to defaults are marked."""
    stages = pipeline.stages
    stage1 = stages.stage1
    settings = {
        "stage1": f"{'offline' if stage1.offline else 'llm'}, {stage1.queries} queries, "
                  f"tool subsets {stage1.tool_subset_sizes}, max {stage1.max_steps} steps",
        "stage2": f"select {stages.stage2.select}",
        "stage3": f"{stages.stage3.variants} variants, fill by {stages.stage3.fill}",
        "filter": f"grounding {stages.filter.grounding}, repeat {stages.filter.repeat}, "
                  f"{stages.filter.tolerance.mode}",
        "export": f"split by {stages.export.split}, formats {', '.join(stages.export.formats)}",
    }
    declared = set(pipeline.declared_stages())
    table = Table(title=f"{name}: stages")
    for column in ("stage", "settings", "source"):
        table.add_column(column)
    for stage, text in settings.items():
        table.add_row(stage, text, "declared" if stage in declared else "default")
    return table


# --------------------------------------------------------------------------------------------- score
SCORE_EPILOG = """Examples:

  build-dataset score --metric bfcl --questions BFCL_v4_simple_python.json
  --answers possible_answer_BFCL_v4_simple_python.json --predictions preds.jsonl --json

  build-dataset score --metric nestful --predictions nestful_0-qwen3-8b-8bit-vanilla.jsonl
  --tools-module datasets/nestful-math/tools.py --compat

  build-dataset score --metric callnavi --questions Questions/bank.json --predictions runs.jsonl

Inputs per metric:

  bfcl: prediction lines {"id", "category", "result": [{"func": {"arg": value}}]}; --questions and
  --answers once per category file (irrelevance needs no answers). Items {"id", "valid", "error_type"}.

  nestful: prediction lines {"sample_id", "generated_text" | "calls"}; gold from --gold (NESTful or
  fcbench lines) or the line's own "output"/"gold_answer"; --tools-module executes the predicted
  sequences for the win rate. Items {"sample_id", "win", "full_match"}.

  callnavi: prediction lines {"id", "output"} (raw model text or parsed answer) with --questions
  Questions/<domain>.json; several lines with one id are repeated runs (stability scores).

  complexeval: saved trajectories {"id", "turns": [[{"name", "arguments"}, ...], ..., "final text"]}
  against --gold samples (any format, --from); summary in ComplexFuncBench's Table 2 shape.

  confetti: prediction lines {"id", "result": [{"func": {"arg": value}}]} and/or {"id",
  "dialog_acts": [...]} against --gold (e.g. the CONFETTI ground truth with --from confetti)."""


@app.command(epilog=SCORE_EPILOG)
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
    as_json: bool = typer.Option(False, "--json", help="Print {metric, summary, items} as one JSON object."),
) -> None:
    """Grade model predictions with the shared scorer.

    The JSON output is {metric, summary, items}; item i is the verdict for prediction line i."""
    from fcbench import scoring

    request = scoring.ScoreRequest(predictions, tuple(questions), tuple(answers), gold, gold_format, tools_module, compat)
    result = scoring.score_files(metric, request)
    if as_json:
        print_json(result.as_dict())
        return
    console.print(f"{metric}{' (compat)' if compat else ''}: {predictions}", highlight=False, soft_wrap=True)
    table = Table()
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.summary.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in value.items())
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else str(value))
    console.print(table)


# ------------------------------------------------------------------------------------------ mock-llm
@app.command(
    "mock-llm",
    epilog=(
        "Examples:\n\n"
        "  build-dataset mock-llm --port 8765 --latency-ms 200\n\n"
        "  build-dataset mock-llm --script replies.jsonl   "
        "(then: export OPENAI_BASE_URL=<the printed URL>)\n\n"
        '  replies.jsonl lines look like {"user_contains": "weather", "tool_calls": '
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}]} or {"call": 2, "status": 429, "retry_after": 1}'
    ),
)
@user_errors
def mock_llm(
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Port on 127.0.0.1 (0 picks a free one)."),
    script: Optional[Path] = typer.Option(
        None, "--script", help="JSON or JSONL rules: canned replies matched by user_contains / call / times."),
    latency_ms: float = typer.Option(0.0, "--latency-ms", min=0, help="Delay added to every chat request."),
    require_key_env: Optional[str] = typer.Option(
        None, "--require-key-env", help="Answer 401 unless the client sends the key held by this variable."),
) -> None:
    """Run a local OpenAI-compatible LLM server in the foreground, to dry-run a pipeline.

    Serves POST /v1/chat/completions (text and tool calls), GET /v1/models and GET /_stats.
    Without a script, a request offering tools gets a call to its first tool with placeholder
    arguments, and any other request an echo of the last user message. Ctrl-C stops it."""
    import os

    from fcbench.llm.mock_server import run_foreground

    api_key = None
    if require_key_env is not None:
        api_key = os.environ.get(require_key_env)
        if not api_key:
            raise UserError(f"--require-key-env: ${require_key_env} is not set")
    if script is not None and not script.is_file():
        raise UserError(f"{script}: no such file")
    run_foreground(port, script, latency_ms, api_key, announce=lambda line: print(line, flush=True))


# ----------------------------------------------------------------------------------- filter, execute
BATCH_HELP = "Send this stage's LLM requests through the OpenAI Batch API (llm.mode: batch): half the price, answers within 24 h."


def _load_pipeline(name: str, file: Path, record: bool = False, batch: bool = False):
    from fcbench.config import load_pipelines

    pipeline = load_pipelines(file).get_pipeline(name)
    if batch:
        if pipeline.llm is None:
            raise UserError(f"pipeline {name!r}: --batch needs an `llm:` block in {file}")
        pipeline.llm.mode = "batch"
    if record:
        from fcbench.environments.from_config import with_recording

        with_recording(pipeline)
    return pipeline


RECORD_HELP = ("http environment: call the server (base_url) and record every response into the store; "
               "only calls not recorded yet are sent. Default: replay from the store, offline.")


@app.command("filter", epilog="Example:  build-dataset filter nestful-math --json")
@user_errors
def filter_command(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    input_file: Optional[Path] = typer.Option(None, "--input", help="Filter this canonical file instead of the "
                                              "stage input the pipeline names."),
    offline: bool = typer.Option(False, "--offline", help="Skip the LLM's semantic check even if `llm:` is set."),
    record: bool = typer.Option(False, "--record", help=RECORD_HELP),
    batch: bool = typer.Option(False, "--batch", help=BATCH_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Keep the candidates whose gold path is well formed, grounded, executes and reproduces.

    Checks run cheapest first: format (tools, parameters, required, types), grounding (argument
    values stated in the query or earlier responses), execution in the pipeline's environment,
    reproduction of the recorded answer and responses, repeated runs, and (with an LLM
    configured) APIGen's semantic yes/no questions. Writes
    build/validated.jsonl, build/validated.rejects.jsonl (each with its reason) and
    build/filter.summary.json; a killed run resumes where it stopped."""
    from fcbench.pipeline import run_filter_stage

    summary = run_filter_stage(_load_pipeline(pipeline, file, record, batch), input_file, offline=offline)
    if as_json:
        print_json(summary.as_dict())
        return
    console.print(f"filter {pipeline}: {summary.total} samples from {summary.input}", highlight=False, soft_wrap=True)
    table = Table()
    table.add_column("outcome")
    table.add_column("samples", justify="right")
    for category, count in summary.counts.items():
        table.add_row(category.replace("_", " "), str(count))
    console.print(table)
    if summary.reasons:
        console.print(_count_table("rejects by reason", "reason", summary.reasons))
    if summary.grounding_reported:
        console.print(f"{summary.grounding_reported} kept samples have ungrounded values (listed in "
                      f"filter.summary.json; set stages.filter.grounding: reject to reject them)")
    if summary.resumed:
        console.print(f"resumed: {summary.resumed} decisions taken from the interrupted run")
    console.print(f"validated: {summary.outputs['validated']}\nrejects:   {summary.outputs['rejects']}", highlight=False)


@app.command(epilog="Example:  build-dataset execute ../shared/external/nestful/toy_data.jsonl --from nestful "
                    "--tools-module datasets/nestful-math/tools.py --round-to-gold --json")
@user_errors
def execute(
    file: Path = typer.Argument(..., help="Samples in any format the convert command reads."),
    tools: Path = typer.Option(..., "--tools-module", help="Python module implementing the tools."),
    from_format: str = typer.Option("fcbench", "--from", help="Format of FILE."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="BFCL possible-answer file."),
    spec: Optional[Path] = typer.Option(None, "--spec", help="NESTful v1 spec or CallNavi APISchema file."),
    round_to_gold: bool = typer.Option(False, "--round-to-gold", help="Compare numbers as NESTful does: "
                                       "round the result to the gold answer's decimals."),
    timeout: float = typer.Option(5.0, "--timeout", help="Seconds per call."),
    as_json: bool = typer.Option(False, "--json", help='Print {"summary", "items"} as JSON.'),
) -> None:
    """Execute the gold path of every sample and say whether it reproduces the recorded answer.

    Tools run in worker subprocesses with a timeout and a memory cap, arguments bound by keyword.
    Items are in input order: {"id", "ok", "reproduces", "answer", "error"}."""
    from fcbench.answers import NESTFUL_COMPARISON, AnswerComparison
    from fcbench.formats import FormatOptions
    from fcbench.pipeline import execute_file

    report = execute_file(file, from_format, FormatOptions(answers=answers, tools=spec), tools, timeout=timeout,
                          comparison=NESTFUL_COMPARISON if round_to_gold else AnswerComparison())
    if as_json:
        print_json(report.as_dict())
        return
    table = Table(title=f"execute {file}")
    for column in ("id", "ran", "reproduces", "answer / error"):
        table.add_column(column, overflow="fold")
    for item in report.items:
        shown = item["error"] if not item["ok"] else json.dumps(item["answer"], ensure_ascii=False)[:60]
        table.add_row(str(item["id"]), "yes" if item["ok"] else "no",
                      {True: "yes", False: "no", None: "-"}[item["reproduces"]], shown)
    console.print(table)
    console.print(" ".join(f"{k}={v}" for k, v in report.summary.items()), highlight=False)


# -------------------------------------------------------------------------------------------- report
@app.command(epilog="Example:  build-dataset report nestful-math   (then open datasets/nestful-math/build/report.html)")
@user_errors
def report(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    as_json: bool = typer.Option(False, "--json", help="Print report.json's content."),
) -> None:
    """Write the QA report of a build: build/report.html (plots, one self-contained file) and build/report.json.

    Shows dataset statistics, what annotators corrected (stage2.qa.json), rejects by reason per
    stage, and evaluation scores (eval/*/scores.json). Missing or broken stage files are listed
    under "problems" instead of stopping the report."""
    from fcbench.report import write_report

    config = _load_pipeline(pipeline, file)
    written = write_report(config.build_dir, title=pipeline)
    if as_json:
        print_json(written.report.as_dict())
        return
    console.print(f"report {pipeline}: {written.images} plots, {len(written.report.problems)} problems",
                  highlight=False)
    for problem in written.report.problems:
        console.print(f"  problem: {problem}", highlight=False, soft_wrap=True)
    console.print(f"html: {written.html}\njson: {written.json}", highlight=False, soft_wrap=True)


# -------------------------------------------------------------------------------------------- export
@app.command(epilog="Examples:\n\n  build-dataset export nestful-math\n\n"
                    "  build-dataset export travel --input datasets/travel/build/validated.jsonl --json")
@user_errors
def export(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    input_file: Optional[Path] = typer.Option(None, "--input", help="Export this canonical file instead of "
                                              "build/validated.jsonl."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Export validated samples as Parquet splits in Hugging Face layout, with a dataset card.

    Writes build/export/data/<split>-0000i-of-0000N.parquet (one schema for every shard),
    build/export/README.md (card with YAML front matter, construction, statistics, limitations),
    a copy per format listed in stages.export.formats (build/export/<format>/), and
    build/export.summary.json. Lines that cannot be exported go to build/export.rejects.jsonl
    with their reason. The same input and seed give byte-identical files."""
    from fcbench.export import run_export_stage

    summary = run_export_stage(_load_pipeline(pipeline, file), input_file)
    if as_json:
        print_json(summary.as_dict())
        return
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    console.print(f"export {pipeline}: {summary.exported} exported, {summary.rejected} rejected from {summary.input}",
                  highlight=False, soft_wrap=True)
    table = Table()
    for column in ("split", "rows", "shards"):
        table.add_column(column, justify="left" if column == "split" else "right")
    for split, info in summary.splits.items():
        table.add_row(split, str(info["rows"]), str(info["shards"]))
    console.print(table)
    if summary.reasons:
        console.print(_count_table("rejects by reason", "reason", summary.reasons))
    console.print(f"export:  {summary.outputs['export']}\nrejects: {summary.outputs['rejects']}", highlight=False,
                  soft_wrap=True)


# ------------------------------------------------------------------------------ studio (Label Studio)
studio_app = typer.Typer(help="The local Label Studio server annotators work in (loopback only, own data dir).",
                         no_args_is_help=True)
app.add_typer(studio_app, name="studio")


def _studio_config(studio_dir: Optional[Path], port: Optional[int] = None, database: str = "sqlite"):
    from annotate.studio import DEFAULT_PORT, StudioConfig, default_studio_dir, read_state

    root = studio_dir or default_studio_dir()
    if port is None:  # stop/status and a restart use the port the server was started on
        state = read_state(StudioConfig(root=root))
        port = int(state["port"]) if state else DEFAULT_PORT
    if database not in ("sqlite", "postgresql"):
        raise UserError(f"unknown database {database!r}; choose sqlite or postgresql")
    return StudioConfig(root=root, port=port, database=database)  # type: ignore[arg-type]


def _print_studio_status(status: Any, as_json: bool) -> None:
    if as_json:
        print_json(status.as_dict())
        return
    state = "running" if status.running and status.healthy else ("not answering" if status.running else "stopped")
    where = f" at {status.url} (pid {status.pid})" if status.running else ""
    console.print(f"studio {state}{where}; data in {status.root}", highlight=False, soft_wrap=True)


@studio_app.command("start", epilog="Examples:\n\n  build-dataset studio start --port 8089\n\n"
                    "  build-dataset studio start --database postgresql --dir /srv/fcbench-studio\n\n"
                    "Install the server first (own venv): annotate/install_studio.sh")
@user_errors
def studio_start(
    port: Optional[int] = typer.Option(None, "--port", help="Port on 127.0.0.1 [default: last used, else 8089]."),
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder [default: $FCBENCH_STUDIO_DIR "
                                              "or ~/.local/share/fcbench/studio]."),
    database: str = typer.Option("sqlite", "--database", help="sqlite, or postgresql: the server in "
                                 "$FCBENCH_STUDIO_DATABASE_URL (postgresql://user:password@host:port/name), else "
                                 "the studio's own PostgreSQL under <dir>/postgres (Debian's postgresql, "
                                 "127.0.0.1, started and stopped with the studio)."),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Start Label Studio on loopback with its own data dir, an admin and an API token.

    The admin password and token are created on the first start and kept in <dir>/credentials.json
    (mode 0600); the token is never printed. Analytics and update checks are off, sign-up is closed.
    A fresh database takes about half a minute (migrations)."""
    from annotate.studio import start

    _print_studio_status(start(_studio_config(studio_dir, port, database)), as_json)


@studio_app.command("stop", epilog="Example:  build-dataset studio stop")
@user_errors
def studio_stop(
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Stop the Label Studio server started from this studio folder (its data is kept)."""
    from annotate.studio import stop

    stopped = stop(_studio_config(studio_dir))
    if as_json:
        print_json({"stopped": stopped})
    else:
        print("studio stopped" if stopped else "studio was not running")


@studio_app.command("status", epilog="Example:  build-dataset studio status --json")
@user_errors
def studio_status(
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Say whether the studio's server runs and answers, and where."""
    from annotate.studio import status

    _print_studio_status(status(_studio_config(studio_dir)), as_json)


# ----------------------------------------------------------------------------- stage2 (senior, Label Studio)
stage2_app = typer.Typer(help="Senior annotation of the drafts in Label Studio (push drafts, pull gold templates).",
                         no_args_is_help=True)
app.add_typer(stage2_app, name="stage2")
CONNECTION_HELP = ("The server is the local studio (build-dataset studio start), or FCBENCH_LS_URL with the token in "
                   "FCBENCH_LS_TOKEN or a 0600 file named by FCBENCH_LS_TOKEN_FILE.")


def _print_push(name: str, summary: Any, as_json: bool) -> None:
    if as_json:
        print_json(summary.as_dict())
        return
    console.print(f"{name}: project {summary.project_id} ({summary.project_title})", highlight=False, soft_wrap=True)
    console.print(_count_table("tasks", "action", summary.counts))
    if getattr(summary, "team", None):
        console.print(f"team: {summary.team['annotators']} annotators, {summary.team['overlap']} per task; "
                      f"credentials in {summary.team['credentials']}", highlight=False, soft_wrap=True)
    for item in summary.invalid:
        print(f"invalid prediction for {item['id']}: {'; '.join(item['problems'])}", file=sys.stderr)


def _print_pull(name: str, report: Any, as_json: bool) -> None:
    if as_json:
        print_json(report.as_dict())
        return
    console.print(f"{name}: pulled from {report.source}", highlight=False, soft_wrap=True)
    console.print(_count_table("tasks", "outcome", report.counts))
    if report.reasons:
        console.print(_count_table("problems by code", "code", report.reasons))
    for failure in report.failures:
        console.print(f"task {failure['task_id']} ({failure['id']}): " + "; ".join(failure["problems"]),
                      highlight=False, soft_wrap=True, markup=False)
    for message in report.messages:
        console.print(message, highlight=False, soft_wrap=True, markup=False)
    team = (report.qa.get("summary") or {}).get("team_agreement")
    if team:
        console.print("team agreement: " + ", ".join(f"{key} {value}" for key, value in team.items()),
                      highlight=False, soft_wrap=True, markup=False)
    for name_, path in report.outputs.items():
        console.print(f"{name_}: {path}", highlight=False, soft_wrap=True)


@stage2_app.command("push", epilog="Examples:\n\n  build-dataset stage2 push travel\n\n"
                    "  build-dataset stage2 push travel --annotators 5 --overlap 2\n\n" + CONNECTION_HELP)
@user_errors
def stage2_push(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    count: Optional[int] = typer.Option(None, "--count", min=1, help="Drafts to send [default: stages.stage2.select]."),
    annotators: int = typer.Option(0, "--annotators", min=0, help="Create this many annotator accounts (local "
                                   "studio; passwords and tokens in its credentials file) and assign tasks to them."),
    overlap: int = typer.Option(1, "--overlap", min=1, help="With --annotators: annotators per task (agreement is "
                                "measured, disagreements go to build/stage2.adjudication.jsonl)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Send the most complete drafts (build/drafts.jsonl), covering different path shapes, to senior annotators.

    Creates or reuses the project, validates the label config (SDK and server) and every
    prediction, flags what looks ambiguous, and imports each draft as a task pre-filled with the
    draft. Pushing again adds no duplicate and changes no task an annotator has touched.
    With --annotators N --overlap K each task is assigned to K of N annotators (from the pipeline's
    seed), recorded in the task data as `assigned_annotators`."""
    from annotate.stage2 import run_stage2_push

    summary = run_stage2_push(_load_pipeline(pipeline, file), count=count, annotators=annotators, overlap=overlap)
    _print_push(f"stage2 push {pipeline}", summary, as_json)


@stage2_app.command("pull", epilog="Examples:\n\n  build-dataset stage2 pull travel --send-back\n\n"
                    "  build-dataset stage2 pull travel --from-export project-1-at-2025-01-01.json\n\n" + CONNECTION_HELP)
@user_errors
def stage2_pull(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    from_export: Optional[Path] = typer.Option(None, "--from-export", help="Read a Label Studio JSON export file "
                                               "instead of the server."),
    send_back: bool = typer.Option(False, "--send-back", help="Show each failing task's problems on its labeling "
                                   "page so the annotator can fix it."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Turn submitted annotations into gold templates (build/templates.jsonl), each checked.

    Checks: JSON that parses, tools that exist, arguments that fit the schema, references that
    resolve, and the path re-executed in the pipeline's environment (or its kept responses
    consistent). Failures go to build/templates.rejects.jsonl with the exact problem; QA of what
    annotators fixed goes to build/stage2.qa.json."""
    from annotate.stage2 import run_stage2_pull

    report = run_stage2_pull(_load_pipeline(pipeline, file), from_export=from_export, send_back=send_back)
    _print_pull(f"stage2 pull {pipeline}", report, as_json)


# ------------------------------------------------------------------ stage3 (junior filling, Label Studio)
# push/pull --annotators (junior filling) are defined here; `stage3 run` (generation) further down.
stage3_app = typer.Typer(help="Generalization: junior annotators fill arguments of query variants (--annotators).",
                         no_args_is_help=True)
app.add_typer(stage3_app, name="stage3")


def _require_annotators(annotators: bool) -> None:
    if not annotators:
        raise UserError("stage3 push/pull send candidates to junior annotators: add --annotators")


@stage3_app.command("push", epilog="Example:  build-dataset stage3 push travel --annotators\n\n" + CONNECTION_HELP)
@user_errors
def stage3_push(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    annotators: bool = typer.Option(False, "--annotators", help="Send to junior annotators in Label Studio."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Send the candidates that need arguments (build/candidates.jsonl) with their fixed path to junior annotators."""
    from annotate.junior import run_junior_push

    _require_annotators(annotators)
    _print_push(f"stage3 push {pipeline}", run_junior_push(_load_pipeline(pipeline, file)), as_json)


@stage3_app.command("pull", epilog="Example:  build-dataset stage3 pull travel --annotators --send-back\n\n" + CONNECTION_HELP)
@user_errors
def stage3_pull(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    annotators: bool = typer.Option(False, "--annotators", help="Pull from junior annotators in Label Studio."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    from_export: Optional[Path] = typer.Option(None, "--from-export", help="Read a Label Studio JSON export file."),
    send_back: bool = typer.Option(False, "--send-back", help="Show failing tasks' problems to the annotators."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Bring back the filled arguments into build/candidates.jsonl, with the same checks as stage2."""
    from annotate.junior import run_junior_pull

    _require_annotators(annotators)
    report = run_junior_pull(_load_pipeline(pipeline, file), from_export=from_export, send_back=send_back)
    _print_pull(f"stage3 pull {pipeline}", report, as_json)


# ------------------------------------------------------------------------------------------ evaluate
@app.command(
    epilog=(
        "Examples:\n\n"
        "  build-dataset evaluate travel --model gpt-4o-mini --split test\n\n"
        "  build-dataset evaluate travel --model Qwen/Qwen2.5-7B-Instruct --base-url http://127.0.0.1:8000/v1 "
        "--limit 50 --json\n\n"
        "  build-dataset evaluate travel --model m --input datasets/travel/build/validated.jsonl"
    )
)
@user_errors
def evaluate(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    model: str = typer.Option(..., "--model", help="The model to evaluate (as the endpoint names it)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (default: the "
                                           "pipeline's llm.base_url, else $OPENAI_BASE_URL)."),
    split: str = typer.Option("test", "--split", help="The exported split (build/export/data/<split>-*.parquet)."),
    input_file: Optional[Path] = typer.Option(None, "--input", help="Evaluate this canonical JSONL file instead "
                                              "of the exported split."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Evaluate only the first N samples."),
    extra_turns: int = typer.Option(3, "--extra-turns", min=1, help="Model turns allowed per sample beyond its "
                                    "gold steps (final answer and corrections) before it is cut off."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    batch: bool = typer.Option(False, "--batch", help=BATCH_HELP),
    as_json: bool = typer.Option(False, "--json", help='Print {"model", "scores", "trajectories"} as JSON.'),
) -> None:
    """Run a model on an exported benchmark with ComplexFuncBench's ComplexEval protocol, then score it.

    Tools are passed natively; each turn's tool calls are answered with the gold responses when
    they match the current gold step, with ComplexEval's format message or a fixed error otherwise.
    Sampling settings, concurrency and the key variable (llm.api_key_env) come from the pipeline's
    llm block. Writes build/eval/<model>/trajectories.jsonl (one line per sample as it finishes)
    and build/eval/<model>/scores.json (per-domain success rate, call accuracy, completeness,
    correctness, error taxonomy, per-parameter-type error rates). A re-run after a kill resumes:
    finished samples are skipped and answered turns are replayed from the request cache."""
    from rich.progress import Progress

    from fcbench.evaluate.runner import evaluate_pipeline

    config = _load_pipeline(pipeline, file)
    with Progress(console=Console(stderr=True), transient=True, disable=as_json) as progress:
        task = progress.add_task(f"evaluate {model}", total=None)
        result = evaluate_pipeline(config, model, base_url=base_url, split=split, input_file=input_file,
                                   limit=limit, extra_turns=extra_turns, batch=batch,
                                   progress=lambda done, total: progress.update(task, completed=done, total=total))
    if as_json:
        print_json(result.as_dict())
        return
    _print_evaluation(result)


def _print_evaluation(result: Any) -> None:
    scores = result.scores
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
        print(f"warning: {count} samples not evaluated ({reason}); see {result.rejects_path}", file=sys.stderr)
    console.print(f"trajectories: {result.trajectories_path}\nscores:       {result.scores_path}", highlight=False,
                  soft_wrap=True)


# ------------------------------------------------------------ stage1 (coarse generation), stage3 run
def _print_generation_summary(title: str, summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(summary)
        return
    console.print(f"{title}: {summary.get('mode') or summary.get('fill')} ({summary.get('generator') or summary.get('rewrite')})",
                  highlight=False, soft_wrap=True)
    console.print(_count_table("counts", "what", summary["counts"]))
    if summary.get("reasons"):
        console.print(_count_table("rejects by reason", "reason", summary["reasons"]))
    llm = summary.get("llm")
    if llm:
        console.print(f"LLM: {llm.get('requests_sent', 0)} requests sent, {llm.get('cache_hits', 0)} cache hits, "
                      f"cost {llm.get('cost_usd', 0)}", highlight=False, soft_wrap=True)
    for name, path in summary.get("outputs", {}).items():
        console.print(f"{name}: {path}", highlight=False, soft_wrap=True)


@app.command("stage1", epilog="Examples:\n\n  build-dataset stage1 travel\n\n  build-dataset stage1 travel --offline --json")
@user_errors
def stage1_command(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    offline: bool = typer.Option(False, "--offline", help="Use the graph sampler even when an LLM is configured."),
    record: bool = typer.Option(False, "--record", help=RECORD_HELP),
    batch: bool = typer.Option(False, "--batch", help=BATCH_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Coarse generation: sample tool subsets, write queries and draft their call paths.

    With an LLM (`llm:` in pipelines.yaml) the model writes each query, then drafts its path by
    function calling against the pipeline's environment. Without one (or with --offline, or
    stages.stage1.offline: true) the graph sampler chains tools whose outputs feed later inputs.
    Writes build/drafts.jsonl, build/drafts.rejects.jsonl and build/stage1.summary.json."""
    from generate.stage1 import run_stage1

    result = run_stage1(_load_pipeline(pipeline, file, record, batch), offline=offline)
    _print_generation_summary(f"stage1 {pipeline}", result.summary, as_json)


@stage3_app.command("run", epilog="Examples:\n\n  build-dataset stage3 run travel\n\n"
                    "  build-dataset stage3 run travel --input datasets/travel/build/templates.jsonl --offline")
@user_errors
def stage3_run(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    offline: bool = typer.Option(False, "--offline", help="Never call the LLM (slot substitution from the value pools)."),
    from_file: Optional[Path] = typer.Option(None, "--input", help="Templates to generalize instead of build/templates.jsonl."),
    record: bool = typer.Option(False, "--record", help=RECORD_HELP),
    batch: bool = typer.Option(False, "--batch", help=BATCH_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Generalization: N query variants per gold template along the template's call path.

    stages.stage3.fill says who refills the arguments: `slots` (substitution from the value pools,
    offline), `llm` (function calling along the fixed path) or `annotators` (left for the junior
    annotators: `stage3 push --annotators`). Variants are executed; repeats, dropped slot values and
    failures go to build/candidates.rejects.jsonl. Writes build/candidates.jsonl and build/stage3.summary.json."""
    from generate.stage3 import run_stage3

    result = run_stage3(_load_pipeline(pipeline, file, record, batch), offline=offline, from_file=from_file)
    _print_generation_summary(f"stage3 run {pipeline}", result.summary, as_json)


# ------------------------------------------------------------------------------------------------ run
@app.command(epilog="Example:  build-dataset run travel --offline   (then open datasets/travel/build/report.html)")
@user_errors
def run(
    pipeline: str = typer.Argument(..., help="A pipeline declared in pipelines.yaml."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file."),
    offline: bool = typer.Option(False, "--offline", help="Use no LLM: graph sampler, slot substitution, "
                                 "execution-only filter."),
    record: bool = typer.Option(False, "--record", help=RECORD_HELP),
    as_json: bool = typer.Option(False, "--json", help='Print {"export", "report", "stages"} as JSON.'),
) -> None:
    """Run every automatic stage of a pipeline, in order, and say where the results are.

    stage1 drafts, stage2 (the annotators' work, read from the Label Studio export named by
    stages.stage2.export_file), stage3 variants, filter, export (Parquet + dataset card), report."""
    from fcbench.pipeline import run_pipeline

    config = _load_pipeline(pipeline, file, record)
    if as_json:
        result = run_pipeline(config, offline=offline)
        print_json(result.as_dict())
        return
    with console.status("starting") as status:
        result = run_pipeline(config, offline=offline, progress=lambda stage: status.update(f"running {stage}"))
    table = Table(title=f"run {pipeline}")
    table.add_column("stage")
    table.add_column("result")
    for stage, summary in result.stages.items():
        counts = summary.get("counts") or {k: v for k, v in summary.items() if isinstance(v, int)}
        table.add_row(stage, ", ".join(f"{k}={v}" for k, v in counts.items()))
    console.print(table)
    console.print(f"export: {result.export}\nreport: {result.report}", highlight=False, soft_wrap=True)


# ------------------------------------------------------------------------------------------------ new
@app.command("new", epilog="Example:  build-dataset new my-api --openapi ../shared/external/amadeus/HotelList_v1_swagger_specification.json "
             "--base-url http://127.0.0.1:4010 --auth-env MY_API_TOKEN\n\n"
             "(then, with the server up and MY_API_TOKEN set: build-dataset stage1 my-api --record)")
@user_errors
def new_command(
    name: str = typer.Argument(..., help="The new pipeline's name (also its folder datasets/NAME)."),
    openapi: list[Path] = typer.Option(..., "--openapi", help="An OpenAPI description (Swagger 2.0, OpenAPI 3.0/3.1; "
                                       "JSON or YAML) or a folder of them; repeatable."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="The server to call, replacing the descriptions' "
                                           "server URLs."),
    auth_env: Optional[str] = typer.Option(None, "--auth-env", help="NAME of the environment variable holding the API "
                                           "token (sent as 'Authorization: Bearer …'; never written anywhere)."),
    file: Path = typer.Option(Path("pipelines.yaml"), "--file", help="The pipelines file to add the pipeline to."),
    force: bool = typer.Option(False, "--force", help="Write over an existing datasets/NAME folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the import summary as JSON."),
) -> None:
    """Scaffold a benchmark over your own API from its OpenAPI description.

    Writes datasets/NAME/ beside the pipelines file (tools.json: one tool per operation;
    value_pools.json: slots seeded from enums and examples; import_report.json: import notes and
    lint-tools findings) and appends a pipeline with an `http` environment to the pipelines file
    (its comments and order kept). Record responses with `--record` on stage1/filter/run; without
    it calls are replayed offline from datasets/NAME/recorded.json."""
    from fcbench.scaffold import scaffold_dataset

    result = scaffold_dataset(name, list(openapi), file, base_url=base_url, auth_env=auth_env, force=force)
    if as_json:
        print_json(result.as_dict())
        return
    console.print(f"new {name}: {result.tools} tools from {result.files} description(s), {result.slots} value slots "
                  f"in {result.dataset_dir}; pipeline added to {result.pipelines_file}", highlight=False, soft_wrap=True)
    errors = [note for note in result.notes if note["severity"] == "error"]
    for note in errors:
        console.print(f"[red]error[/red] {note['file']}#{note['pointer']}: {note['message']}", highlight=False, soft_wrap=True)
    console.print(f"import notes: {len(result.notes)} ({len(errors)} errors); lint-tools findings: "
                  + (", ".join(f"{code}={count}" for code, count in result.lint.items()) or "none")
                  + f" (all in {result.dataset_dir}/import_report.json)", highlight=False, soft_wrap=True)
