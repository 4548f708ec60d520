"""`build-dataset filter PIPELINE` for `kind: conversation` pipelines: each gold conversation is
kept whole or rejected whole with a machine-readable reason (a conversation is never cut).

Checks, cheapest first; the first failing one decides:
1. format: the messages form a dialogue (`fcbench.conversation.calls_from_messages`), every call
   names a known tool with known, required and well-typed arguments, every agent turn carries at
   least one known dialog act (the response-quality set needs them);
2. text: every user turn reads as a person writes (`fcbench.checks.query_text`), `text.<code>`;
3. each call against the conversation before it (`fcbench.checks.turns`): a value the user states
   only later (`turn.stated_later`) or took back before the call (`turn.superseded`) rejects it;
   a value no earlier user turn or response supports is reported, or a reject with `grounding:
   reject` (`grounding.ungrounded_value`);
4. conversation types: every type the scenario requires occurs, by its acceptance rule
   (fcbench.checks.conversation_types); a missing one is `type_missing.<type>`;
5. execution: every call is re-executed in conversation order through the pipeline's environment
   (one step at a time, so state an API keeps is carried from call to call); a call must succeed,
   except those the conversation records as failing (`execution_exception`), which must fail; a
   call an author chose to fail (`chosen_errors`) is not executed and must have answered exactly
   its chosen error, so the choice is reproduced on every run;
6. reproduction: each response equals the recorded one (tolerance from the pipeline), on every
   one of `repeat` runs.
Outputs (atomic, in input order): validated.jsonl, validated.rejects.jsonl, filter.summary.json.
A killed run leaves the previous files; its re-run redoes the work and writes the same bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from fcbench.answers import answers_match
from fcbench.checks.call_format import check_call_format
from fcbench.config import FilterConfig, PipelineConfig
from fcbench.stage import VALIDATED
from fcbench.checks.conversation_types import missing_types, type_reason
from fcbench.conversation import (DIALOG_ACTS, META, ConversationError, agent_turns, calls_from_messages, chosen_errors_of,
                                  conversation_environment, error_response, is_conversation)
from fcbench.environments import Environment
from fcbench.environments.chosen import call_step_with_chosen_errors
from fcbench.errors import UserError
from fcbench.formats import Rejected, read_samples
from fcbench.checks.turns import UNGROUNDED, turn_problems
from fcbench.jsonl import StagedFile, write_json
from fcbench.runtime.output_guard import guard_output
from fcbench.runtime.progress import StageProgress, lines_in
from fcbench.sample import Sample, sample_to_dict
from fcbench.checks.verdicts import FilterCategory, Verdict, comparison_of, text_verdict
from fcbench.stage import PipelineContext, StageSummary, filter_input, input_of


@dataclass
class ConversationFilterSummary:
    input: str
    total: int
    counts: dict[str, int]
    reasons: dict[str, int]
    grounding_reported: int
    grounding_notes: dict[str, list[str]]
    outputs: dict[str, str]
    output_guard: dict[str, Any] = field(default_factory=dict)
    resumed: int = 0  # the conversation filter keeps no journal: a re-run redoes everything

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _reject(sample_id: str, category: FilterCategory, reason: str, detail: str) -> Verdict:
    return Verdict(sample_id, category, reason, detail)


def static_conversation_verdict(sample: Sample, settings: FilterConfig) -> Verdict:
    """Format and turn-by-turn grounding (no execution). PASSED: go on and execute."""
    if not is_conversation(sample):
        return _reject(sample.id, FilterCategory.FAILED_FORMAT, "format.not_a_conversation",
                       "the sample carries no scenario (meta.conversation.scenario)")
    try:
        steps = calls_from_messages(sample.messages)
    except ConversationError as exc:
        return _reject(sample.id, FilterCategory.FAILED_FORMAT, "format.bad_conversation", str(exc))
    if steps != sample.calls:  # the calls re-executed must be the ones the messages show
        return _reject(sample.id, FilterCategory.FAILED_FORMAT, "format.bad_conversation",
                       "the sample's calls are not the ones its messages make")
    for step in steps:
        for call in step:
            issue = check_call_format(call, sample.tools)
            if issue is not None:
                return _reject(sample.id, FilterCategory.FAILED_FORMAT, f"format.{issue.kind}",
                               f"{call.label}: {issue.message}")
    if not any(message.get("role") == "user" for message in sample.messages):
        return _reject(sample.id, FilterCategory.FAILED_FORMAT, "format.no_user_turn", "the conversation has no user turn")
    for number, turn in enumerate(agent_turns(sample.messages), start=1):
        acts = turn.dialog_acts
        if not acts or any(act not in DIALOG_ACTS for act in acts):
            return _reject(sample.id, FilterCategory.FAILED_FORMAT, "format.dialog_acts",
                           f"agent turn {number}: dialog acts {acts} (at least one of {', '.join(DIALOG_ACTS)})")
    text = text_verdict(sample)
    if text is not None:
        return text
    problems = turn_problems(sample)
    for problem in problems:  # a call ahead of what the user said, or on a value taken back: wrong gold
        if problem.reason != UNGROUNDED:
            return _reject(sample.id, FilterCategory.FAILED_GROUNDING, problem.reason, problem.describe())
    labels = {call.label for step in steps for call in step}
    failed = set(sample.meta.get(META, {}).get("failed_calls") or [])
    for label in chosen_errors_of(sample):
        if label not in labels or label not in failed:
            return _reject(sample.id, FilterCategory.FAILED_FORMAT, "format.chosen_error",
                           f"{label} is recorded as a chosen error but is not a failing call of the conversation")
    notes = [f"ungrounded value {problem.label}.{problem.parameter}="
             f"{json.dumps(problem.value, ensure_ascii=False)}" for problem in problems]
    if notes and settings.grounding == "reject":
        return _reject(sample.id, FilterCategory.FAILED_GROUNDING, "grounding.ungrounded_value", "; ".join(notes))
    missing = missing_types(sample)
    if missing:
        name, why = missing[0]
        return _reject(sample.id, FilterCategory.FAILED_TYPE, type_reason(name), f"{name}: {why}")
    return Verdict(sample.id, FilterCategory.PASSED, notes=notes)


def execution_conversation_verdict(sample: Sample, environment: Environment, settings: FilterConfig,
                                   verdict: Verdict) -> Verdict:
    """Re-execute every call in order, `repeat` times, against the recorded responses."""
    expected_failures = set(sample.meta.get(META, {}).get("failed_calls") or [])
    chosen = chosen_errors_of(sample)
    comparison = comparison_of(settings)
    for run in range(settings.repeat):
        session = conversation_environment(environment)  # each run replays the conversation from its start
        for step in sample.calls:
            outcomes = call_step_with_chosen_errors(session, [(call.name, call.arguments) for call in step],
                                                    [chosen.get(call.label) for call in step])
            for call, outcome in zip(step, outcomes):
                if call.label in chosen:  # the author's choice, answered the same way on every run
                    if call.response != error_response(chosen[call.label]) or outcome.response != call.response:
                        return _reject(sample.id, FilterCategory.FAILED_REPRODUCTION, "reproduction.chosen_error",
                                       f"{call.label} ({call.name}) answered {call.response!r}, not its chosen error")
                    continue
                if call.label in expected_failures:
                    if outcome.ok:
                        return _reject(sample.id, FilterCategory.FAILED_REPRODUCTION, "reproduction.no_exception",
                                       f"{call.label} ({call.name}) was recorded failing but succeeded")
                    continue
                if not outcome.ok:
                    reason = outcome.reason.value if outcome.reason else "error"
                    return _reject(sample.id, FilterCategory.FAILED_EXECUTION, f"execution.{reason}",
                                   f"{call.label} ({call.name}): {outcome.error}")
                if not answers_match(outcome.response, call.response, comparison):
                    what = "differs from the recorded response" if run == 0 else f"changed on run {run + 1}"
                    return _reject(sample.id, FilterCategory.FAILED_REPRODUCTION, "reproduction.response_mismatch",
                                   f"{call.label} ({call.name}): the response {what}")
    return verdict


def filter_conversations(items: Iterable[Sample | Rejected], environment: Environment, settings: FilterConfig,
                         build_dir: Path, input_name: str, force: bool = False,
                         min_output_share: float = 0.5, total: int | None = None) -> ConversationFilterSummary:
    """Streams: each conversation is decided and written as it is read (`total`: for progress)."""
    categories: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    notes: dict[str, list[str]] = {}
    read = 0
    validated = build_dir / VALIDATED
    rejects_path = build_dir / "validated.rejects.jsonl"
    summary_path = build_dir / "filter.summary.json"
    with StagedFile(validated) as kept, StagedFile(rejects_path) as rejects, \
            StageProgress("filter conversations", total) as progress:
        for item in items:
            read += 1
            progress.advance()
            if isinstance(item, Rejected):
                categories[FilterCategory.FAILED_FORMAT.value] += 1
                reasons["format.unreadable"] += 1
                rejects.write_json_line({"id": None, "reason": "format.unreadable", "detail": f"{item.source}: {item.reason}"})
                continue
            verdict = static_conversation_verdict(item, settings)
            if verdict.category is FilterCategory.PASSED:
                verdict = execution_conversation_verdict(item, environment, settings, verdict)
            categories[verdict.category.value] += 1
            if verdict.category is FilterCategory.PASSED:
                kept.write_json_line(sample_to_dict(item))
                if verdict.notes:
                    notes[item.id] = verdict.notes
            else:
                reasons[verdict.reason or "rejected"] += 1
                rejects.write_json_line({"id": item.id, "reason": verdict.reason, "category": verdict.category.value,
                                         "detail": verdict.detail, "sample": sample_to_dict(item)})
        guarded = guard_output(validated, kept.lines, force=force, min_share=min_output_share)
        kept.place(guarded.path(validated))
        rejects.place(guarded.path(rejects_path))
    counts = {category.value: categories[category.value] for category in FilterCategory
              if category is not FilterCategory.FAILED_SEMANTIC}
    summary = ConversationFilterSummary(input_name, read, counts, dict(sorted(reasons.items())), len(notes), notes,
                                        {"validated": str(guarded.path(validated)),
                                         "rejects": str(guarded.path(rejects_path)),
                                         "summary": str(guarded.path(summary_path))},
                                        guarded.summary())
    write_json(guarded.path(summary_path), {"kind": "conversation", **summary.as_dict()}, indent=2)
    guarded.finish()
    return summary


def run_conversation_filter(pipeline: PipelineConfig, input_file: Path | None = None,
                            force: bool = False) -> ConversationFilterSummary:
    """The gold conversations (templates.jsonl, or `input_file` / stages.filter.input) filtered."""
    from fcbench.environments.from_config import open_environment

    source = input_file or filter_input(pipeline).path
    assert source is not None  # the build file when no input is configured
    if not source.is_file():
        raise UserError(f"{source}: no such file (the conversation filter reads stage2's gold conversations; "
                        f"run stage2 or pass --input)")
    if source.resolve() == (pipeline.build_dir / VALIDATED).resolve():
        raise UserError(f"{source}: the filter writes this file; it cannot also read it")
    # a first pass gives the environment its tools; the conversations are read again as they are filtered
    readable = (item for item in read_samples(source, "fcbench") if isinstance(item, Sample))
    with open_environment(pipeline, readable) as environment:
        return filter_conversations(read_samples(source, "fcbench"), environment, pipeline.stages.filter,
                                    pipeline.build_dir, str(source), force=force,
                                    min_output_share=pipeline.min_output_share, total=lines_in(source))


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """The stage contract (fcbench.stage) for `kind: conversation`."""
    environment = ctx.config.environment
    if ctx.offline and environment is not None and environment.kind == "simulated":
        raise UserError(f"pipeline {ctx.config.name!r}: the filter re-executes calls in the response simulator "
                        "(environment kind 'simulated'), an LLM, which --offline does not use")
    filtered = run_conversation_filter(ctx.config, input_of(settings), force=ctx.force)
    return StageSummary("filter", filtered.counts, filtered.reasons, filtered.outputs, report=filtered)
