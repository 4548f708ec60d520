"""The build stages, in pipeline order: stage1, stage2, stage3, filter, export, report, and run (all of them)."""

from __future__ import annotations

import functools

import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from fcbench.cli.common import (first_details, PipelineArgument, BatchOption, ForceOption, FromExportOption, JsonOption, PIPELINES_FILE, PipelinesFileOption, SendBackOption, exit_if_nothing_kept, _count_table, CONNECTION_HELP, RECORD_HELP, _load_pipeline, app, console, print_json,
                                user_errors)
from fcbench.errors import UserError

PANEL = "Build stages"
command = functools.partial(app.command, rich_help_panel=PANEL)


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
    for message in summary.get("messages") or []:
        console.print(message, highlight=False, soft_wrap=True, markup=False)
    for name, path in summary.get("outputs", {}).items():
        console.print(f"{name}: {path}", highlight=False, soft_wrap=True)


@command("stage1", epilog="Examples:\n\n  build-dataset stage1 travel\n\n  build-dataset stage1 travel --offline --json")
@user_errors
def stage1_command(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    offline: bool = typer.Option(False, "--offline", help="Use the graph sampler even when an LLM is configured."),
    record: bool = typer.Option(False, "--record", help=RECORD_HELP),
    batch: BatchOption = False,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Coarse generation: sample tool subsets, write queries and draft their call paths.

    With an LLM (`llm:` in pipelines.yaml) the model writes each query, then drafts its path by
    function calling against the pipeline's environment. Without one (or with --offline, or
    stages.stage1.offline: true) the graph sampler chains tools whose outputs feed later inputs.
    Writes build/drafts.jsonl, build/drafts.rejects.jsonl and build/stage1.summary.json.

    A `kind: conversation` pipeline samples scenarios (APIs, one of CONFETTI's 13 conversation types
    from the declared distribution, reference time, minimum turns) into build/scenarios.jsonl, then
    drafts whole conversations: a rule-based user and agent offline, an LLM user simulator and LLM
    agent otherwise (turn cap, off-script replies and a type that does not occur are rejects with
    their reason). With conversation.review.enabled it stops after the scenarios until they are
    reviewed (`build-dataset scenarios push|pull`), then drafts the accepted and edited ones."""
    from fcbench.pipeline.run import run_stage

    result = run_stage("stage1", _load_pipeline(pipeline, file, record, batch), offline=offline, force=force).report
    _print_generation_summary(f"stage1 {pipeline}", result.summary, as_json)
    counts = result.summary.get("counts", {})
    reasons = result.summary.get("reasons", {})
    exit_if_nothing_kept(counts.get("drafts", 0) + counts.get("rejected", 0), counts.get("drafts", 0), "draft attempt",
                         "was rejected", reasons, first_details(result.summary.get("outputs", {}).get("rejects"), reasons))


# ----------------------------------------------------------------------------- stage2 (senior, Label Studio)
stage2_app = typer.Typer(help="Senior annotation of the drafts in Label Studio (push drafts, pull gold templates).",
                         no_args_is_help=True)
app.add_typer(rich_help_panel=PANEL, typer_instance=stage2_app, name="stage2")


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


def _exit_if_every_task_rejected(report: Any, kept_key: str) -> None:
    kept, rejected = report.counts.get(kept_key, 0), report.counts.get("rejected", 0)
    exit_if_nothing_kept(kept + rejected, kept, "annotated task", "was rejected", report.reasons)


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
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    count: Optional[int] = typer.Option(None, "--count", min=1, help="Drafts to send [default: stages.stage2.select]."),
    annotators: int = typer.Option(0, "--annotators", min=0, help="Create this many annotator accounts (local "
                                   "studio; passwords and tokens in its credentials file) and assign tasks to them."),
    overlap: int = typer.Option(1, "--overlap", min=1, help="With --annotators: annotators per task (agreement is "
                                "measured, disagreements go to build/stage2.adjudication.jsonl)."),
    as_json: JsonOption = False,
) -> None:
    """Send the most complete drafts (build/drafts.jsonl), covering different path shapes, to senior annotators.

    Creates or reuses the project, validates the label config (SDK and server) and every
    prediction, flags what looks ambiguous, and imports each draft as a task pre-filled with the
    draft. Pushing again adds no duplicate and changes no task an annotator has touched.
    With --annotators N --overlap K each task is assigned to K of N annotators (from the pipeline's
    seed), recorded in the task data as `assigned_annotators`.
    For a `kind: conversation` pipeline the tasks are whole conversations
    (label_config/stage2_conversation.xml: edit turns and calls, tag dialog acts and complexities)."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import PushSettings

    summary = run_stage("stage2 push", _load_pipeline(pipeline, file), PushSettings(count, annotators, overlap)).report
    _print_push(f"stage2 push {pipeline}", summary, as_json)


@stage2_app.command("pull", epilog="Examples:\n\n  build-dataset stage2 pull travel --send-back\n\n"
                    "  build-dataset stage2 pull travel --from-export datasets/travel/annotations/stage2_export.json\n\n" + CONNECTION_HELP)
@user_errors
def stage2_pull(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    from_export: FromExportOption = None,
    send_back: SendBackOption = False,
    allow_stale: bool = typer.Option(False, "--allow-stale", help="Accept annotations made on drafts that are not "
                                     "the current build/drafts.jsonl's (refused as stale_draft otherwise)."),
    as_json: JsonOption = False,
) -> None:
    """Turn submitted annotations into gold templates (build/templates.jsonl), each checked.

    Checks: JSON that parses, tools that exist, arguments that fit the schema, references that
    resolve, and the path re-executed in the pipeline's environment (or its kept responses
    consistent). Failures go to build/templates.rejects.jsonl with the exact problem; QA of what
    annotators fixed goes to build/stage2.qa.json. For a `kind: conversation` pipeline the gold
    conversations are checked turn by turn (JSON, dialog acts, calls against the tools' schemas and
    re-executed, required complexities present)."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import PullSettings

    report = run_stage("stage2 pull", _load_pipeline(pipeline, file),
                       PullSettings(from_export, send_back, allow_stale)).report
    _print_pull(f"stage2 pull {pipeline}", report, as_json)
    _exit_if_every_task_rejected(report, "gold")


# ------------------------------------------------------------ scenarios (stage1's review, Label Studio)
scenarios_app = typer.Typer(help="Review the sampled scenarios of a conversation pipeline in Label Studio before "
                                 "drafting (push scenarios, pull reviews).", no_args_is_help=True)
app.add_typer(rich_help_panel=PANEL, typer_instance=scenarios_app, name="scenarios")


@scenarios_app.command("push", epilog="Example:  build-dataset scenarios push travel-chat-all\n\n" + CONNECTION_HELP)
@user_errors
def scenarios_push(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    count: Optional[int] = typer.Option(None, "--count", min=1, help="Scenarios to send [default: all]."),
    as_json: JsonOption = False,
) -> None:
    """Send the scenarios stage1 sampled (build/scenarios.jsonl) to reviewers.

    Each scenario is a task (label_config/stage1_scenario_review.xml) showing the user's goal, the
    APIs required and optional, the conversation types it must show with their acceptance rules,
    the reference time and minimum turns; the reviewer accepts, edits (description, types, APIs,
    time, turns) or rejects it. With `conversation.review.enabled: true` stage1 writes the
    scenarios and waits for their review before drafting. Pushing again adds no duplicate."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import PushSettings

    summary = run_stage("scenarios push", _load_conversation_pipeline(pipeline, file), PushSettings(count)).report
    _print_push(f"scenarios push {pipeline}", summary, as_json)


@scenarios_app.command("pull", epilog="Examples:\n\n  build-dataset scenarios pull travel-chat-all --send-back\n\n"
                       "  build-dataset scenarios pull travel-chat-all --from-export "
                       "datasets/travel-chat-all/annotations/scenario_review_export.json\n\n" + CONNECTION_HELP)
@user_errors
def scenarios_pull(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    from_export: FromExportOption = None,
    send_back: SendBackOption = False,
    as_json: JsonOption = False,
) -> None:
    """Turn the reviewers' decisions into build/scenarios.reviewed.jsonl, each checked.

    Checks: a verdict, JSON that parses, APIs of the catalog, at least one required API and one
    conversation type (two required APIs for goal switching and stacking), an ISO 8601 reference
    time, a minimum of turns within conversation.max_turns, a description. Failures go to
    build/scenarios.review.rejects.jsonl with the exact problem. stage1 then drafts only the
    scenarios accepted or edited (a rejected one is its `rejected_in_review` reject)."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import PullSettings

    report = run_stage("scenarios pull", _load_conversation_pipeline(pipeline, file), PullSettings(from_export, send_back)).report
    _print_pull(f"scenarios pull {pipeline}", report, as_json)


def _load_conversation_pipeline(name: str, file: Path) -> Any:
    loaded = _load_pipeline(name, file)
    if loaded.kind != "conversation":
        raise UserError(f"pipeline {name!r} is `kind: {loaded.kind}`: scenarios are reviewed in `kind: conversation` "
                        "pipelines only")
    return loaded


# ------------------------------------------------------------------ stage3 (junior filling, Label Studio)
# push/pull --annotators (junior filling) are defined here; `stage3 run` (generation) further down.
stage3_app = typer.Typer(help="Generalization: junior annotators fill arguments of query variants (--annotators).",
                         no_args_is_help=True)
app.add_typer(rich_help_panel=PANEL, typer_instance=stage3_app, name="stage3")


def _require_annotators(annotators: bool) -> None:
    if not annotators:
        raise UserError("stage3 push/pull send candidates to junior annotators: add --annotators")


@stage3_app.command("push", epilog="Example:  build-dataset stage3 push travel --annotators\n\n" + CONNECTION_HELP)
@user_errors
def stage3_push(
    pipeline: PipelineArgument,
    annotators: bool = typer.Option(False, "--annotators", help="Send to junior annotators in Label Studio."),
    file: PipelinesFileOption = PIPELINES_FILE,
    as_json: JsonOption = False,
) -> None:
    """Send the candidates that need arguments (build/candidates.jsonl) with their fixed path to junior annotators."""
    from fcbench.pipeline.run import run_stage

    _require_annotators(annotators)
    _print_push(f"stage3 push {pipeline}", run_stage("stage3 push", _load_pipeline(pipeline, file)).report, as_json)


@stage3_app.command("pull", epilog="Example:  build-dataset stage3 pull travel --annotators --send-back\n\n" + CONNECTION_HELP)
@user_errors
def stage3_pull(
    pipeline: PipelineArgument,
    annotators: bool = typer.Option(False, "--annotators", help="Pull from junior annotators in Label Studio."),
    file: PipelinesFileOption = PIPELINES_FILE,
    from_export: FromExportOption = None,
    send_back: SendBackOption = False,
    as_json: JsonOption = False,
) -> None:
    """Bring back the filled arguments into build/candidates.filled.jsonl (the filter reads it), with the same checks as stage2."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import PullSettings

    _require_annotators(annotators)
    report = run_stage("stage3 pull", _load_pipeline(pipeline, file), PullSettings(from_export, send_back)).report
    _print_pull(f"stage3 pull {pipeline}", report, as_json)
    _exit_if_every_task_rejected(report, "filled")


@stage3_app.command("run", epilog="Examples:\n\n  build-dataset stage3 run travel\n\n"
                    "  build-dataset stage3 run travel --input datasets/travel/build/templates.jsonl --offline")
@user_errors
def stage3_run(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    offline: bool = typer.Option(False, "--offline", help="Never call the LLM (slot substitution from the value pools)."),
    from_file: Optional[Path] = typer.Option(None, "--input", help="Templates to generalize instead of build/templates.jsonl."),
    record: bool = typer.Option(False, "--record", help=RECORD_HELP),
    batch: BatchOption = False,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Generalization: N query variants per gold template along the template's call path.

    stages.stage3.fill says who refills the arguments: `slots` (substitution from the value pools,
    offline), `llm` (function calling along the fixed path) or `annotators` (left for the junior
    annotators: `stage3 push --annotators`). Variants are executed; repeats, dropped slot values and
    failures go to build/candidates.rejects.jsonl. Writes build/candidates.jsonl and build/stage3.summary.json."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import InputSettings

    result = run_stage("stage3", _load_pipeline(pipeline, file, record, batch), InputSettings(from_file),
                       offline=offline, force=force).report
    _print_generation_summary(f"stage3 run {pipeline}", result.summary, as_json)
    counts = result.summary.get("counts", {})
    reasons = result.summary.get("reasons", {})
    exit_if_nothing_kept(counts.get("candidates", 0) + counts.get("rejected", 0), counts.get("candidates", 0),
                         "variant", "was rejected", reasons,
                         first_details(result.summary.get("outputs", {}).get("rejects"), reasons))


# ------------------------------------------------------------------------------------------- filter
@command("filter", epilog="Example:  build-dataset filter nestful-math --json")
@user_errors
def filter_command(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    input_file: Optional[Path] = typer.Option(None, "--input", help="Filter this canonical file instead of the "
                                              "stage input the pipeline names."),
    offline: bool = typer.Option(False, "--offline", help="Skip the LLM's semantic check even if `llm:` is set."),
    record: bool = typer.Option(False, "--record", help=RECORD_HELP),
    batch: BatchOption = False,
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Keep the candidates whose gold path is well formed, grounded, executes and reproduces.

    Checks run cheapest first: format (tools, parameters, required, types), grounding (argument
    values stated in the query or earlier responses), execution in the pipeline's environment,
    reproduction of the recorded answer and responses, repeated runs, and (with an LLM
    configured) APIGen's semantic yes/no questions. A `kind: conversation` pipeline filters whole
    conversations (grounding turn by turn, every call re-executed in order). Writes
    build/validated.jsonl, build/validated.rejects.jsonl (each with its reason) and
    build/filter.summary.json; a killed run resumes where it stopped."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import InputSettings

    config = _load_pipeline(pipeline, file, record, batch)
    summary = run_stage("filter", config, InputSettings(input_file), offline=offline, force=force).report
    if as_json:
        print_json(summary.as_dict())
    else:
        _print_filter_summary(pipeline, summary, config.stages.filter.grounding)
    exit_if_nothing_kept(summary.total, summary.counts.get("passed", 0), "candidate", "was rejected by the filter",
                         summary.reasons, first_details(summary.outputs.get("rejects"), summary.reasons))


def _print_filter_summary(pipeline: str, summary: Any, grounding: str) -> None:
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
        advice = "; set stages.filter.grounding: reject to reject them" if grounding == "report" else ""
        console.print(f"{summary.grounding_reported} kept samples have ungrounded values (listed in "
                      f"filter.summary.json{advice})")
    if summary.resumed:
        console.print(f"resumed: {summary.resumed} decisions taken from the interrupted run")
    console.print(f"validated: {summary.outputs['validated']}\nrejects:   {summary.outputs['rejects']}", highlight=False)


# -------------------------------------------------------------------------------------------- export
@command(epilog="Examples:\n\n  build-dataset export nestful-math\n\n"
                    "  build-dataset export travel --input datasets/travel/build/validated.jsonl --json")
@user_errors
def export(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    input_file: Optional[Path] = typer.Option(None, "--input", help="Export this canonical file instead of "
                                              "build/validated.jsonl."),
    as_json: JsonOption = False,
    force: ForceOption = False,
) -> None:
    """Export validated samples as Parquet splits in Hugging Face layout, with a dataset card.

    A `kind: conversation` pipeline writes the function_calling and response_quality sets instead
    (build/export/<set>/<split>-*.parquet, split by conversation) with CONFETTI's statistics.
    Writes build/export/data/<split>-0000i-of-0000N.parquet (one schema for every shard),
    build/export/README.md (card with YAML front matter, construction, statistics, limitations),
    a copy per format listed in stages.export.formats (build/export/<format>/), and
    build/export.summary.json. Lines that cannot be exported go to build/export.rejects.jsonl
    with their reason. The same input and seed give byte-identical files. An export much smaller
    than the one in place (min_output_share) keeps it and goes to build/export.new/, exit 1,
    unless --force."""
    from fcbench.pipeline.run import run_stage
    from fcbench.stage import InputSettings

    summary = run_stage("export", _load_pipeline(pipeline, file), InputSettings(input_file), force=force).report
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
        if "rows" in info:
            table.add_row(split, str(info["rows"]), str(info["shards"]))
        else:  # a conversational export: one row per turn-level set
            for set_name in ("function_calling", "response_quality"):
                table.add_row(f"{split} ({set_name})", str(info[set_name]["rows"]), str(info[set_name]["shards"]))
    console.print(table)
    if summary.reasons:
        console.print(_count_table("rejects by reason", "reason", summary.reasons))
    console.print(f"export:  {summary.outputs['export']}\nrejects: {summary.outputs['rejects']}", highlight=False,
                  soft_wrap=True)


# -------------------------------------------------------------------------------------------- report
@command(epilog="Example:  build-dataset report nestful-math   (then open datasets/nestful-math/build/report.html)")
@user_errors
def report(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    as_json: JsonOption = False,
) -> None:
    """Write the QA report of a build: build/report.html (plots, one self-contained file) and build/report.json.

    Shows dataset statistics, what annotators corrected (stage2.qa.json), rejects by reason per
    stage, and evaluation scores (eval/*/scores.json). Missing or broken stage files are listed
    under "problems" instead of stopping the report."""
    from fcbench.pipeline.run import run_stage

    config = _load_pipeline(pipeline, file)
    written = run_stage("report", config).report
    if as_json:
        print_json(written.report.as_dict())
        return
    console.print(f"report {pipeline}: {written.images} plots, {len(written.report.problems)} problems",
                  highlight=False)
    for problem in written.report.problems:
        console.print(f"  problem: {problem}", highlight=False, soft_wrap=True)
    console.print(f"html: {written.html}\njson: {written.json}", highlight=False, soft_wrap=True)


# ------------------------------------------------------------------------------------------------ run
@command(epilog="Examples:\n\n  build-dataset run travel --offline   (then open datasets/travel/build/report.html)\n\n"
                 "  build-dataset run travel-chat --offline   (conversational: both CONFETTI sets in "
                 "datasets/travel-chat/build/export/)\n\n"
                 "  build-dataset run nestful-math --offline   (starts at its first declared stage: the filter "
                 "over the published samples)")
@user_errors
def run(
    pipeline: PipelineArgument,
    file: PipelinesFileOption = PIPELINES_FILE,
    offline: bool = typer.Option(False, "--offline", help="Use no LLM: graph sampler, slot substitution, "
                                 "execution-only filter."),
    record: bool = typer.Option(False, "--record", help=RECORD_HELP),
    force: ForceOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run every automatic stage of a pipeline, in order, and say where the results are.

    stage1 drafts, stage2 (the annotators' work, read from the Label Studio export named by
    stages.stage2.export_file), stage3 variants, filter, export (Parquet + dataset card), report.
    A pipeline starts at the first stage it declares in pipelines.yaml (nestful-math: the filter).
    A `kind: conversation` pipeline runs stage1 (scenarios, conversations), stage2, filter, export
    (both CONFETTI sets) and report, e.g. `build-dataset run travel-chat --offline`."""
    from fcbench.pipeline.run import run_pipeline

    config = _load_pipeline(pipeline, file, record)
    if as_json:
        result = run_pipeline(config, offline=offline, force=force)
        print_json(result.as_dict())
        return
    with console.status("starting") as status:
        result = run_pipeline(config, offline=offline, force=force,
                              progress=lambda stage: status.update(f"running {stage}"))
    table = Table(title=f"run {pipeline}")
    table.add_column("stage")
    table.add_column("result")
    for stage, summary in result.stages.items():
        counts = summary.get("counts") or {k: v for k, v in summary.items() if isinstance(v, int)}
        table.add_row(stage, ", ".join(f"{k}={v}" for k, v in counts.items()))
    console.print(table)
    console.print(f"export: {result.export}\nreport: {result.report}", highlight=False, soft_wrap=True)
