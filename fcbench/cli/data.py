"""Data commands: convert, validate, stats, lint-tools, execute, pipelines, new."""

from __future__ import annotations

import functools
import json

import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from fcbench.cli.common import (JsonOption, PIPELINES_FILE, PipelinesFileOption, exit_if_nothing_kept, _count_table, app, console, print_json,
                                user_errors)
from fcbench.errors import UserError

PANEL = "Data"
command = functools.partial(app.command, rich_help_panel=PANEL)


# --------------------------------------------------------------------------------------------- convert
@command(
    epilog=(
        "Examples:\n\n"
        "  build-dataset convert ../shared/external/bfcl/BFCL_v4_simple_python.json --from bfcl "
        "--answers ../shared/external/bfcl/possible_answer_BFCL_v4_simple_python.json --to fcbench -o simple.jsonl\n\n"
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
    as_json: JsonOption = False,
) -> None:
    """Convert a benchmark file between formats, through the canonical sample.

    Items that cannot be converted go to OUT.rejects.jsonl with their reason; what the target
    format cannot express is reported as one warning line with a count."""
    from fcbench.formats.convert import convert_file
    from fcbench.formats import FormatOptions

    options = FormatOptions(answers=answers, answers_out=answers_out, tools=tools, tools_out=tools_out,
                            nestful_version=nestful_version, no_gold=no_gold)
    result = convert_file(input_file, from_format, to_format, output, options)
    if as_json:
        print_json(result.as_dict())
    else:
        for warning in result.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print(f"{result.converted} converted, {result.rejected} rejected -> {output}")
        if result.rejected:
            print(f"rejects with reasons: {result.rejects_file}")
    exit_if_nothing_kept(result.converted + result.rejected, result.converted, "item",
                         f"was rejected (see {result.rejects_file})", result.reasons)


# --------------------------------------------------------------------------------------------- validate
@command(epilog="Example:  build-dataset validate datasets/travel/build/drafts.jsonl")
@user_errors
def validate(
    file: Path = typer.Argument(..., help="A canonical fcbench JSONL file."),
    as_json: JsonOption = False,
) -> None:
    """Check a canonical JSONL file line by line.

    Each line is checked against the sample schema and the cross-field rules (unknown tools,
    references to missing or later labels, duplicate labels, a stored difficulty that disagrees
    with the path). Each problem prints as FILE:LINE: field: message; exit 1 if there is any."""
    from fcbench.checks.validate import validate_file
    from fcbench.jsonl import iter_json_lines

    if not file.is_file():
        raise UserError(f"{file}: no such file")
    problems = list(validate_file(file))
    lines = sum(1 for _ in iter_json_lines(file))
    if as_json:
        print_json({"file": str(file), "ok": not problems,
                    "problems": [{"line": p.line_no, "field": p.field, "message": p.message} for p in problems]})
    else:
        for problem in problems:
            print(problem.render(file))
        if not problems:
            print(f"{file}: all lines valid")
    invalid_lines = len({problem.line_no for problem in problems})
    exit_if_nothing_kept(lines, lines - invalid_lines, "line", "is invalid",
                         [f"{problem.field}: {problem.message}" for problem in problems])
    if problems:
        raise typer.Exit(1)


# --------------------------------------------------------------------------------------------- stats
@command(
    epilog=(
        "Examples:\n\n"
        "  build-dataset stats datasets/travel/build/validated.jsonl\n\n"
        "  build-dataset stats ../shared/external/callnavi/Questions/bank.json --from callnavi --tools ../shared/external/callnavi/APISchema/bank.json --json\n\n"
        "  build-dataset stats ../shared/external/confetti/possible_answer_BFCL_v2_dialogacts.json --from confetti"
    )
)
@user_errors
def stats(
    file: Path = typer.Argument(..., help="A benchmark file of any supported format."),
    from_format: str = typer.Option("fcbench", "--from", help="fcbench, complexfuncbench, nestful, callnavi, bfcl, confetti."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="BFCL possible-answer file to read."),
    tools: Optional[Path] = typer.Option(None, "--tools", help="NESTful v1 spec or CallNavi APISchema file to read."),
    as_json: JsonOption = False,
) -> None:
    """Print dataset statistics of a benchmark file of any format.

    Per domain, ComplexFuncBench's Table 3 (samples, average steps and calls) and what makes
    samples hard: tokens of context (messages + tool specs + gold responses, cl100k_base BPE,
    offline), the longest argument value, the share of samples whose arguments need values found
    in responses, constraints per query; a context-length histogram; difficulty splits (derived
    from the gold path, and as published); nesting-depth and dependency-count distributions;
    NESTful's sequence length (calls per sample) and nested calls per sample; CallNavi's
    per-domain easy/medium/hard counts (from the gold path, and as published).
    Conversations (a `kind: conversation` build) and dialog-act rows (a response-quality set,
    CONFETTI's files) add CONFETTI's own figures: conversation types with CONFETTI's names and
    counts, dialog acts, and calls per calling turn in its bins 1 / 2 / 3 / 4+.
    Items the reader rejects are counted with their reasons."""
    from fcbench.formats import FormatOptions, read_samples
    from fcbench.stats.confetti import confetti_statistics
    from fcbench.stats.tables import compute_stats

    options = FormatOptions(answers=answers, tools=tools)
    result = compute_stats(read_samples(file, from_format, options))
    confetti = confetti_statistics(read_samples(file, from_format, options))  # a second pass: only what it counts is held
    if as_json:
        print_json({"file": str(file), "format": from_format, **result.as_dict(),
                    **({"confetti": confetti} if confetti is not None else {})})
    else:
        _print_stats_tables(file, result)
        if confetti is not None:
            _print_confetti_tables(confetti)
    exit_if_nothing_kept(result.samples + result.rejected, result.samples, "item", "was rejected",
                         result.reject_reasons)


def _print_confetti_tables(confetti: dict[str, Any]) -> None:
    console.print(f"CONFETTI: {confetti['conversations']} conversations, {confetti['agent_turns']} agent turns, "
                  f"{confetti['calls']} calls", highlight=False, soft_wrap=True)
    if "types" in confetti:
        types = Table(title="conversation types (CONFETTI README: COMPLEXITY | # DIALOGS)")
        for column in ("type", "CONFETTI name", "dialogs", "CONFETTI # dialogs"):
            types.add_column(column, justify="left" if "name" in column or column == "type" else "right")
        for row in confetti["types"]:
            published = row["confetti_dialogs"]
            types.add_row(row["type"], row["confetti_name"], str(row["dialogs"]), "" if published is None else str(published))
        console.print(types)
    acts = Table(title="dialog acts (agent turns carrying each)")
    acts.add_column("dialog act")
    acts.add_column("turns", justify="right")
    for act, count in confetti["dialog_acts"].items():
        acts.add_row(act, str(count))
    console.print(acts)
    console.print(_chain_table(confetti["chain_lengths"]))


def _chain_table(chains: dict[str, int]) -> Table:
    table = Table(title="calls per calling agent turn (CONFETTI's chain lengths)")
    table.add_column("calls")
    table.add_column("turns", justify="right")
    for name, count in chains.items():
        table.add_row(name, str(count))
    return table


def _print_stats_tables(file: Path, result: Any) -> None:
    console.print(f"{file}: {result.samples} samples, {result.rejected} rejected", highlight=False, soft_wrap=True)
    from fcbench.stats.tables import TABLE_COLUMNS, hardness_lines, table_rows

    domains = Table(title="per domain")
    for column in TABLE_COLUMNS:
        domains.add_column(column, justify="left" if column == "domain" else "right")
    for row in table_rows(result):
        domains.add_row(*row)
    console.print(domains)
    for line in hardness_lines(result):
        console.print(line, highlight=False, soft_wrap=True)
    console.print(_count_table(f"context length ({result.encoding} tokens)", "tokens", result.context_histogram))
    console.print(_count_table("difficulty (from the gold path)", "difficulty", result.difficulty))
    if result.published_difficulty:
        console.print(_count_table("difficulty (as published)", "label", result.published_difficulty))
    console.print(_count_table("nesting depth (edges on the longest chain; NESTful counts calls: depth + 1)",
                               "depth", result.nesting_depth))
    console.print(_count_table("dependencies per sample", "dependencies", result.dependencies))
    console.print(_count_table("sequence length (NESTful: calls per sample)", "calls", result.sequence_length))
    console.print(_count_table("nested calls per sample (NESTful: calls reading an earlier output)", "nested calls",
                               result.nested_calls))
    console.print(_difficulty_by_domain_table("CallNavi difficulty per domain (from the gold path: easy = one call, "
                                              "medium = independent calls, hard = a call reads an earlier output)",
                                              result.difficulty_by_domain))
    if result.published_difficulty_by_domain:
        console.print(_difficulty_by_domain_table("difficulty per domain (as published)",
                                                  result.published_difficulty_by_domain))
    if result.reject_reasons:
        console.print(_count_table("rejected items by reason", "reason", result.reject_reasons))


def _difficulty_by_domain_table(title: str, rows: dict[str, dict[str, int]]) -> Table:
    """CallNavi's Data_statistics.py table: one row per domain, a column per difficulty, the total."""
    levels = list(dict.fromkeys(level for counts in rows.values() for level in counts))
    table = Table(title=title)
    for column in ("domain", *levels, "total"):
        table.add_column(column, justify="left" if column == "domain" else "right")
    for domain, counts in rows.items():
        table.add_row(domain, *(str(counts.get(level, 0)) for level in levels), str(sum(counts.values())))
    if len(rows) > 1:
        table.add_row("all", *(str(sum(c.get(level, 0) for c in rows.values())) for level in levels),
                      str(sum(sum(c.values()) for c in rows.values())))
    return table


# ---------------------------------------------------------------------------------------- lint-tools
@command(
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
    as_json: JsonOption = False,
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

    unreadable: list[str] = []
    catalog = load_tools_file(file, unreadable)
    findings = lint_tools(catalog, overlap_ratio=OVERLAP_RATIO if overlap_threshold is None else overlap_threshold)
    if as_json:
        print_json({"file": str(file), "tools": len(catalog), "unreadable_lines": unreadable,
                    "findings": [finding.as_dict() for finding in findings], "counts": count_by_code(findings)})
    else:
        for problem in unreadable:
            print(f"skipped {problem}", file=sys.stderr)
        table = Table(title=f"{file}: {len(catalog)} tools, {len(findings)} findings")
        for column in ("severity", "tool", "parameter", "code", "message"):
            # codes are what users grep for: keep them whole, let the message wrap instead
            table.add_column(column, no_wrap=column in ("severity", "code"), overflow="fold")
        for finding in findings:
            table.add_row(finding.severity.value, finding.tool, finding.parameter or "", finding.code.value,
                          finding.message)
        console.print(table)
    if strict and (has_errors(findings) or unreadable):
        raise typer.Exit(1)


# ------------------------------------------------------------------------------------------ execute
@command(epilog="Example:  build-dataset execute ../shared/external/nestful/toy_data.jsonl --from nestful "
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
    timeout: float = typer.Option(5.0, "--timeout", min=0.001, max=3600, help="Seconds per call."),
    as_json: JsonOption = False,
) -> None:
    """Execute the gold path of every sample and say whether it reproduces the recorded answer.

    Tools run in worker subprocesses with a timeout and a memory cap, arguments bound by keyword.
    Items are in input order: {"id", "ok", "reproduces", "answer", "error"}."""
    from fcbench.answers import NESTFUL_COMPARISON, AnswerComparison
    from fcbench.formats import FormatOptions
    from fcbench.pipeline.run import execute_file

    report = execute_file(file, from_format, FormatOptions(answers=answers, tools=spec), tools, timeout=timeout,
                          comparison=NESTFUL_COMPARISON if round_to_gold else AnswerComparison())
    if as_json:
        print_json(report.as_dict())
    else:
        _print_execution(file, report)
    exit_if_nothing_kept(report.summary["samples"], report.summary["ran"], "sample", "failed to run",
                         report.summary["failure_reasons"])


def _print_execution(file: Path, report: Any) -> None:
    table = Table(title=f"execute {file}")
    for column in ("id", "ran", "reproduces", "answer / error"):
        table.add_column(column, overflow="fold")
    for item in report.items:
        shown = item["error"] if not item["ok"] else json.dumps(item["answer"], ensure_ascii=False)[:60]
        table.add_row(str(item["id"]), "yes" if item["ok"] else "no",
                      {True: "yes", False: "no", None: "-"}[item["reproduces"]], shown)
    console.print(table)
    console.print(" ".join(f"{k}={v}" for k, v in report.summary.items()), highlight=False)


# ----------------------------------------------------------------------------------------- pipelines
@command(epilog="Example:  build-dataset pipelines --file pipelines.yaml --json")
@user_errors
def pipelines(
    file: PipelinesFileOption = PIPELINES_FILE,
    check: bool = typer.Option(False, "--check", help="Check each pipeline's whole chain (files, settings, tools, "
                               "environment, LLM) before anything runs; exit 1 on any problem."),
    name: Optional[str] = typer.Argument(None, help="Only this pipeline (with --check)."),
    as_json: JsonOption = False,
) -> None:
    """List the pipelines declared in pipelines.yaml and their stage settings.

    The file is fully checked: any problem is reported as FILE:LINE: key: message. With --check,
    each pipeline's chain is checked too: the files its stages read exist, the tool catalog
    loads, the environment is there, an LLM stage has an llm block and its key."""
    from fcbench.config import load_pipelines

    config = load_pipelines(file)
    if check:
        _check_pipelines(file, config, name, as_json)
        return
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


def _check_pipelines(file: Path, config: Any, name: Optional[str], as_json: bool) -> None:
    from fcbench.pipeline.check import check_pipeline

    chosen = [config.get_pipeline(name)] if name else list(config.pipelines.values())
    problems = {pipeline.name: [str(p) for p in check_pipeline(pipeline)] for pipeline in chosen}
    if as_json:
        print_json({"file": str(file), "ok": not any(problems.values()), "problems": problems})
    else:
        for pipeline_name, found in problems.items():
            print(f"{pipeline_name}: {'ok' if not found else f'{len(found)} problems'}")
            for line in found:
                print(f"{file}: {line}", file=sys.stderr)
    if any(problems.values()):
        raise typer.Exit(1)


def _stages_table(name: str, pipeline: Any) -> Table:
    """The settings that decide what each stage does; stages left to defaults are marked."""
    stages = pipeline.stages
    stage1 = stages.stage1
    settings = {
        "stage1": f"{'offline' if stage1.offline else 'llm'}, {stage1.queries} queries, "
                  + (f"from seeds {stage1.from_seeds.file}" if stage1.from_seeds else
                     f"tool subsets {stage1.tool_subset_sizes}" if stage1.candidates == "subset" else
                     f"candidates: every tool of the {stage1.candidates} (at most {stage1.candidate_tools_max})")
                  + (", quotas " + ", ".join(f"{level} {share:g}" for level, share in stage1.difficulty_quotas.items())
                     if stage1.difficulty_quotas else "")
                  + f", max {stage1.max_steps} steps",
        "stage2": f"select {stages.stage2.select}",
        "stage3": f"{stages.stage3.variants} variants, fill by {stages.stage3.fill}",
        "filter": f"grounding {stages.filter.grounding}, repeat {stages.filter.repeat}, "
                  f"{stages.filter.tolerance.mode}",
        "export": f"split by {stages.export.split}, formats {', '.join(stages.export.formats)}",
    }
    declared = set(pipeline.declared_stages())
    if pipeline.kind == "conversation":  # its own stages (fcbench.pipeline.run.CONVERSATION_STAGES): no stage3
        chat = pipeline.conversation
        values = set(chat.complexities.values())
        shares = (f"{', '.join(chat.complexities)} (equal shares)" if len(values) == 1 and len(chat.complexities) > 1
                  else ", ".join(f"{key} {value:g}" for key, value in chat.complexities.items()))
        review = "; scenarios reviewed before drafting" if chat.review.enabled else ""
        settings["stage1"] = (f"conversations: {'offline (rule-based)' if chat.offline else 'llm user and agent'}, "
                              f"{chat.scenarios} scenarios, APIs {chat.api_subset_sizes}, complexities {shares}, "
                              f"{chat.min_turns}-{chat.max_turns} user turns{review}")
        settings["export"] += " (function_calling and response_quality sets, by conversation"
        cap = stages.export.max_per_dialog_act
        settings["export"] += f"; at most {cap} rows per dialog act and split)" if cap else "; no dialog-act cap)"
        del settings["stage3"]
        declared.add("stage1")
    table = Table(title=f"{name}: stages")
    for column in ("stage", "settings", "source"):
        table.add_column(column)
    for stage, text in settings.items():
        table.add_row(stage, text, "declared" if stage in declared else "default")
    return table


# ------------------------------------------------------------------------------------------------ new
@command("new", epilog="Example:  build-dataset new my-api --openapi ../shared/external/amadeus/HotelList_v1_swagger_specification.json "
                       "--base-url http://127.0.0.1:4010 --auth-env MY_API_TOKEN\n\n"
                       "(then, with the server up and MY_API_TOKEN set: build-dataset stage1 my-api --record)\n\n"
                       "Example:  build-dataset new my-clock --mcp \".mcp/venv/bin/mcp-server-time --local-timezone UTC\"\n\n"
                       "(an MCP server over stdio, installed by bash fcbench/environments/install_mcp_servers.sh; "
                       "then: build-dataset stage1 my-clock --record)\n\n"
                       "Example:  build-dataset new my-math --python datasets/nestful-gen/tools.py\n\n"
                       "Example:  build-dataset new my-bank --offline --describe \"A retail bank's online banking: customers list their "
                       "accounts and cards, check balances, read their transactions, move money between their own accounts, pay saved "
                       "payees, and freeze or cancel a card.\"")
@user_errors
def new_command(
    name: str = typer.Argument(..., help="The new pipeline's name (also its folder datasets/NAME)."),
    openapi: Optional[list[Path]] = typer.Option(None, "--openapi", help="An OpenAPI description (Swagger 2.0, OpenAPI "
                                                 "3.0/3.1; JSON or YAML) or a folder of them; repeatable."),
    mcp: Optional[list[str]] = typer.Option(None, "--mcp", help="An MCP server over stdio: its command line, quoted "
                                            "(\"[NAME:] [VAR=value ...] COMMAND ARGS...\"; {sandbox} stands for the "
                                            "per-sample sandbox folder); repeatable."),
    mcp_url: Optional[list[str]] = typer.Option(None, "--mcp-url", help="An MCP server over streamable HTTP: its URL "
                                                "(\"[NAME:] http://host:port/mcp\"); repeatable."),
    sandbox_seed: Optional[Path] = typer.Option(None, "--sandbox-seed", help="A folder copied into each sample's fresh "
                                                "sandbox ({sandbox}): the files a filesystem server starts from (--mcp)."),
    python: Optional[Path] = typer.Option(None, "--python", help="A Python module: each public function with type "
                                          "hints and a docstring becomes a tool, executed in the python environment."),
    describe: Optional[str] = typer.Option(None, "--describe", help="A description of a service: an LLM writes its "
                                           "catalog (cached; reviewed by lint-tools); the LLM also simulates the answers."),
    llm_model: str = typer.Option("gpt-4o-mini", "--llm-model", help="--describe: the model writing the catalog."),
    llm_base_url: Optional[str] = typer.Option(None, "--llm-base-url", help="--describe: an OpenAI-compatible endpoint "
                                               "(default: OPENAI_BASE_URL, else OpenAI)."),
    offline: bool = typer.Option(False, "--offline", help="--describe: read the bundled recorded answer for this "
                                 "description instead of asking an LLM."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="The server to call, replacing the descriptions' "
                                           "server URLs (--openapi)."),
    auth_env: Optional[str] = typer.Option(None, "--auth-env", help="NAME of the environment variable holding the API "
                                           "token (sent in the header of the description's security scheme, "
                                           "'Authorization: Bearer …' by default; never written anywhere; --openapi)."),
    file: PipelinesFileOption = PIPELINES_FILE,
    force: bool = typer.Option(False, "--force", help="Write over an existing datasets/NAME folder."),
    as_json: JsonOption = False,
) -> None:
    """Scaffold a benchmark over your own API (its OpenAPI description), your MCP servers, your own
    Python functions, or a service an LLM describes.

    Writes datasets/NAME/ beside the pipelines file (tools.json: one tool per operation, MCP tool
    or function; value_pools.json: slots seeded from enums, examples and defaults;
    import_report.json: import notes, what could not be imported and why, and lint-tools findings)
    and appends a pipeline to the pipelines file (its comments and order kept). --openapi: an
    `http` environment; --mcp/--mcp-url: an `mcp` environment (each server is started once to list
    its tools). Record responses with `--record` on stage1/filter/run; without it calls are
    replayed offline from datasets/NAME/recorded.json. --python: the module is copied to
    datasets/NAME/tools.py and run by the `python` environment; a function without type hints is
    an error naming it and its parameter, before anything is written. --describe: an LLM writes
    the catalog from the text (prompt fcbench/prompts/describe_catalog.txt, answer cached in
    datasets/NAME/build/), lint-tools reviews it (an error finding refuses it), and the pipeline's
    `simulated` environment has the LLM answer the calls; --offline reads the bundled recorded
    answer (fcbench/prompts/describe_catalog.recorded.jsonl) for exactly that description."""
    chosen = [bool(openapi), bool(mcp or mcp_url), python is not None, describe is not None]
    if chosen.count(True) != 1:
        raise UserError("new takes exactly one tool source: --openapi FILE..., --mcp/--mcp-url SERVER..., "
                        "--python MODULE or --describe TEXT")
    if sandbox_seed is not None and not (mcp or mcp_url):
        raise UserError("--sandbox-seed goes with --mcp: it seeds the MCP servers' per-sample sandbox")
    if (base_url or auth_env) and not openapi:
        raise UserError("--base-url and --auth-env go with --openapi")
    if mcp or mcp_url:
        from fcbench.pipeline.scaffold_mcp import McpSource, scaffold_mcp_dataset

        servers = [McpSource(text) for text in mcp or []] + [McpSource(text, is_url=True) for text in mcp_url or []]
        result = scaffold_mcp_dataset(name, servers, file, force=force, sandbox_seed=sandbox_seed)
        what = f"{result.files} MCP server(s)"
    elif describe is not None:
        from fcbench.pipeline.scaffold import scaffold_described_dataset

        result = scaffold_described_dataset(name, describe, file, offline=offline, model=llm_model,
                                            base_url=llm_base_url, force=force)
        what = f"{result.files} description(s)"
    elif python is not None:
        from fcbench.pipeline.scaffold import scaffold_python_dataset

        result = scaffold_python_dataset(name, python, file, force=force)
        what = f"{result.files} description(s)"
    else:
        from fcbench.pipeline.scaffold import scaffold_dataset

        result = scaffold_dataset(name, list(openapi or []), file, base_url=base_url, auth_env=auth_env, force=force)
        what = f"{result.files} description(s)"
    if as_json:
        print_json(result.as_dict())
        return
    console.print(f"new {name}: {result.tools} tools from {what}, {result.slots} value slots "
                  f"in {result.dataset_dir}; pipeline added to {result.pipelines_file}", highlight=False, soft_wrap=True)
    errors = [note for note in result.notes if note["severity"] == "error"]
    for note in errors:
        console.print(f"[red]error[/red] {note['file']}#{note['pointer']}: {note['message']}", highlight=False, soft_wrap=True)
    from fcbench.catalog.trim import MAX_CATALOG_MB

    skipped, trimmed = getattr(result, "skipped", None) or [], getattr(result, "trimmed", None) or []  # --openapi only
    if skipped:
        console.print(f"not imported: {len(skipped)} operation(s) with a multipart or binary body "
                      f"(listed under `skipped` in the import report)", highlight=False, soft_wrap=True)
    if trimmed:
        console.print(f"trimmed: {len(trimmed)} oversized schema(s) (the rule: README, Bring your own API; "
                      f"each under `trimmed` in the import report)", highlight=False, soft_wrap=True)
    if getattr(result, "catalog_mb", 0.0) > MAX_CATALOG_MB:
        console.print(f"[yellow]warning[/yellow] the catalog is {result.catalog_mb:.1f} MB (over {MAX_CATALOG_MB:g} MB): "
                      "keep the operations you need (--openapi on fewer files, or edit tools.json)", highlight=False, soft_wrap=True)
    if getattr(result, "auth_hint", ""):
        console.print(f"auth: {result.auth_hint}", highlight=False, soft_wrap=True)
    console.print(f"import notes: {len(result.notes)} ({len(errors)} errors); lint-tools findings: "
                  + (", ".join(f"{code}={count}" for code, count in result.lint.items()) or "none")
                  + f" (all in {result.dataset_dir}/import_report.json)", highlight=False, soft_wrap=True)
