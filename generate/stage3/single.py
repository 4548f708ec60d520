"""`build-dataset stage3 run PIPELINE`: generalization of the gold templates into candidates.

For each template of `<build>/templates.jsonl` (stage2's output, or `--from FILE`), N variants
(`stages.stage3.variants`) keep the template's call path and ask for something else:
- `fill: slots` (offline): each slot value the query states (a city, a stay, a party size...) is
  replaced from the value pools, in the query and in every argument holding it
  (`generate.slots.substitute_slots`); a draw that fails a check is redrawn, and the failed draw is
  kept in the rejects with its reason;
- `fill: llm`: the model rewrites the query (prompts/stage3_rewrite.txt), then refills the path's
  arguments by function calling along the fixed path (prompts/stage3_fill.txt); one request of
  each per (template, variant index), so the request cache keeps reruns free;
- `fill: annotators`: the query variant as above (LLM rewrite, or slot substitution offline) with
  the literal arguments cleared and `meta.stage3.needs_arguments` set, for the junior annotators
  (`build-dataset stage3 push --annotators`).
Every filled variant is executed so its responses are real, and rejected with a reason
(`candidates.rejects.jsonl`) when it repeats the template or another variant (same query or same
arguments), drops a slot value its query states (or states one no argument holds), fails the
filter's format check, does not execute, or (grounding: reject) holds an ungrounded value.
Outputs: `<build>/candidates.jsonl` and `<build>/stage3.summary.json`.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from contextlib import nullcontext
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from fcbench.stage import CANDIDATES, TEMPLATES
from fcbench.catalog.openai import openai_tool_param
from fcbench.config import FilterConfig, PipelineConfig
from fcbench.checks.constraints import PICKS_META, first_entries, pick_problems, repoint
from fcbench.environments import Environment
from fcbench.environments.from_config import environment_for
from fcbench.errors import ItemRejected, UserError
from fcbench.environments.execution import execute_gold_path
from fcbench.checks.verdicts import audit_verdict, static_verdict
from fcbench.formats import Rejected, read_samples
from fcbench.jsonl import StagedFile, iter_json_lines
from fcbench.references import parse_reference
from fcbench.sample import Call, Provenance, Sample, sample_to_dict
from fcbench.checks.provenance import PROVENANCE_META, follow_template, query_too_long, with_provenance
from generate.slots import (TemplateSlots, ValuePools, load_value_pools, pool_vocabulary, slot_value_problem,
                            substitute_slots, template_provenance, user_query)
from fcbench.llm.prompts import PromptFile
from fcbench.runtime.output_guard import finish_summary, place_guarded
from fcbench.runtime.progress import StageProgress, lines_in, progress_of
from generate.common import PROMPTS, in_windows, parse_query, value_pools_path
from fcbench.stage import PipelineContext, StageSummary, input_of

REWRITE_PROMPT = PROMPTS / "stage3_rewrite.txt"
FILL_PROMPT = PROMPTS / "stage3_fill.txt"
SLOT_SUBSTITUTION = "slot-substitution"
MAX_DRAWS = 12  # slot draws per variant before it is given up
WINDOW_TEMPLATES = 32  # templates generalized concurrently with an LLM (at least 4x its parallelism)


@dataclass(frozen=True)
class Stage3Paths:
    candidates: Path
    rejects: Path
    summary: Path

    @classmethod
    def in_dir(cls, build_dir: Path) -> "Stage3Paths":
        return cls(build_dir / CANDIDATES, build_dir / "candidates.rejects.jsonl", build_dir / "stage3.summary.json")


@dataclass
class Stage3Result:
    """What a run wrote: the candidates stay on disk (they hold every executed response, the
    largest data of a build), read back on demand."""

    candidates_path: Path
    rejects_path: Path
    summary: dict[str, Any]
    advice: list[str] = field(default_factory=list)  # why nothing was kept, when nothing was (shown, not written)

    @property
    def candidates(self) -> list[Sample]:
        return [item for item in read_samples(self.candidates_path, "fcbench") if isinstance(item, Sample)]

    @property
    def rejects(self) -> list[dict[str, Any]]:
        return [line.value for line in iter_json_lines(self.rejects_path) if line.error is None]


# ------------------------------------------------------------------------------- the checks
def _normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def _arguments_key(sample: Sample) -> str:
    return json.dumps([[call.name, call.arguments] for call in sample.all_calls()], sort_keys=True, default=str)


def repeat_problem(template: Sample, variant: Sample, accepted: Sequence[Sample]) -> tuple[str, str] | None:
    """Same query or same arguments as the template or an accepted variant."""
    for earlier in [template, *accepted]:
        which = "the template" if earlier is template else f"variant {earlier.id}"
        if _normalised(user_query(variant)) == _normalised(user_query(earlier)):
            return "stage3.duplicate_query", f"the query repeats {which}"
        if _arguments_key(variant) == _arguments_key(earlier):
            return "stage3.duplicate_arguments", f"the arguments repeat {which}"
    return None


def check_variant(template: Sample, variant: Sample, accepted: Sequence[Sample], pools: ValuePools | None,
                  environment: Environment, settings: FilterConfig,
                  template_slots: TemplateSlots | None = None) -> Sample:
    """The executed variant (responses filled in), or `ItemRejected` with the first problem.
    Cheapest first; the format, execution, grounding and gold audit checks are the filter's own
    (the variant's provenance map is checked against its new query and path)."""
    repeated = repeat_problem(template, variant, accepted)
    if repeated:
        raise ItemRejected(*repeated)
    if pools is not None:
        dropped = slot_value_problem(template_slots or template, variant, pools)
        if dropped:
            raise ItemRejected("stage3.dropped_slot_value", dropped)
    shape = static_verdict(variant, settings.model_copy(update={"grounding": "report"}))
    if not shape.kept:
        raise ItemRejected(shape.reason or "format.invalid", shape.detail or "")
    try:
        result = _executed(variant, environment)
    except ItemRejected as rejected:
        if rejected.reason != "execution.bad_reference" or not variant.meta.get(PICKS_META):
            raise
        result = _executed(first_entries(variant), environment)  # the picked entry is past the end of a shorter list
    # a constraint of the query ("the cheapest hotel") may pick another entry in the variant's own
    # responses: the references follow it, and the moved path is executed again
    for _ in range(len(variant.meta.get(PICKS_META) or [])):
        moved, changed = repoint(result.sample)
        if not changed:
            break
        result = _executed(moved, environment)
    problems = pick_problems(result.sample)
    if problems:
        raise ItemRejected("stage3.pick_not_unique", problems[0])
    grounded = audit_verdict(result.sample, static_verdict(result.sample, settings), settings)
    if not grounded.kept:
        raise ItemRejected(grounded.reason or "grounding.ungrounded_value", grounded.detail or "")
    return result.sample


def _executed(variant: Sample, environment: Environment) -> Any:
    result = execute_gold_path(variant, environment)
    if not result.ok:
        failed = result.failure
        reason = failed.outcome.reason.value if failed and failed.outcome.reason else "not_run"
        where = f"{failed.label} ({failed.name}): {failed.outcome.error}" if failed else "the path did not run"
        raise ItemRejected(f"execution.{reason}", where)
    return result


# ------------------------------------------------------------------------------- variants
def make_variant(template: Sample, number: int, query: str, calls: list[list[Call]], generator: str,
                 seed: int, meta: dict[str, Any], prompt: PromptFile | None = None) -> Sample:
    """A candidate sharing the template's tools and path shape; responses come from execution."""
    messages = [dict(message) for message in template.messages]
    user_turns = [i for i, message in enumerate(messages) if message.get("role") == "user"]
    if user_turns:
        messages[user_turns[-1]]["content"] = query
    else:  # a template without a user turn (the schema allows it): the variant's query becomes one
        messages.append({"role": "user", "content": query})
    # the annotator's "derived" marks and the filter's grounding notes were about the template's
    # values: a variant's values are checked afresh
    extra = {key: value for key, value in template.meta.items()
             if key not in ("stage1", "stage2", "stage3", "derived", "grounding", PROVENANCE_META)}
    variant = Sample(
        id=f"{template.id}-v{number}",
        messages=messages,
        tools=template.tools,
        calls=[[Call(label=call.label, name=call.name, arguments=call.arguments) for call in step] for step in calls],
        provenance=Provenance(stage="stage3", model=generator, parent_id=template.id, seed=seed,
                              prompt_file=prompt.shown_as if prompt else None,
                              prompt_hash=prompt.sha256 if prompt else None),
        meta={**extra, "stage3": meta},
    )
    if template.domain is not None:
        variant.domain = template.domain
    return variant


def cleared_arguments(calls: list[list[Call]]) -> list[list[Call]]:
    """For the junior annotators: references kept (they are the path), literal values blanked."""
    return [[Call(label=call.label, name=call.name,
                  arguments={name: (value if parse_reference(value) is not None else None)
                             for name, value in call.arguments.items()}) for call in step] for step in calls]


@dataclass
class _Outcome:
    candidates: list[Sample] = field(default_factory=list)
    rejects: list[dict[str, Any]] = field(default_factory=list)


def _reject(variant_id: str, template: Sample, reason: str, detail: str, sample: Sample | None = None,
            raw: str | None = None, draw: int | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"id": variant_id, "parent_id": template.id, "reason": reason, "detail": detail}
    if draw is not None:
        record["draw"] = draw
    if raw is not None:
        record["raw"] = raw
    if sample is not None:
        record["sample"] = sample_to_dict(sample)
    return record


def slot_variants(template: Sample, pools: ValuePools, count: int, seed: int, fill: str,
                  environment: Environment, settings: FilterConfig) -> _Outcome:
    """N variants by slot substitution; each variant redraws until one passes the checks. The
    template is read once: its provenance map (recorded at stage2 pull, or inferred now) says
    which words state which slot value, and each draw rewrites only those words."""
    outcome = _Outcome()
    too_long = query_too_long(template)
    if too_long:
        outcome.rejects.append(_reject(f"{template.id}-v1", template, "stage3.query_too_long", too_long))
        return outcome
    provenance, why = template_provenance(template, pools)
    if provenance is None:
        outcome.rejects.append(_reject(f"{template.id}-v1", template, "stage3.no_provenance",
                                       f"the template's values cannot all be tied to its query: {why}"))
        return outcome
    template_slots = TemplateSlots.of(template, pools)
    for number in range(1, count + 1):
        variant_id = f"{template.id}-v{number}"
        for draw in range(MAX_DRAWS):
            rng = random.Random(f"{seed}:stage3:{template.id}:{number}:{draw}")
            substitution = substitute_slots(template, pools, rng, provenance)
            if substitution.problem is not None:
                outcome.rejects.append(_reject(variant_id, template, *substitution.problem, draw=draw))
                continue
            if not substitution.changed:
                outcome.rejects.append(_reject(variant_id, template, "stage3.no_slot_values",
                                               "the query states no value of the value pools: nothing to vary"))
                return outcome
            changed = [{"slot": slot, "from": old, "to": new} for slot, old, new in substitution.changed]
            meta: dict[str, Any] = {"variant": number, "fill": fill, "changed": changed}
            if substitution.recomputed:  # values that follow from the new words, read again
                meta["recomputed"] = [{"label": label, "argument": name, "from": old, "to": new}
                                      for label, name, old, new in substitution.recomputed]
            calls = substitution.calls
            if fill == "annotators":
                meta["needs_arguments"] = True
                calls = cleared_arguments(calls)
            variant = make_variant(template, number, substitution.query, calls, SLOT_SUBSTITUTION, seed, meta)
            if fill != "annotators" and substitution.provenance is not None:
                variant = with_provenance(variant, substitution.provenance)
            try:
                if fill == "annotators":
                    repeated = repeat_problem(template, variant, outcome.candidates)
                    if repeated:
                        raise ItemRejected(*repeated)
                    kept = variant
                else:
                    kept = check_variant(template, variant, outcome.candidates, pools, environment, settings,
                                         template_slots)
            except ItemRejected as problem:
                outcome.rejects.append(_reject(variant_id, template, problem.reason, problem.detail, variant, draw=draw))
                continue
            outcome.candidates.append(kept)
            break
    return outcome


# ------------------------------------------------------------------------------------ the stage
def templates_path(pipeline: PipelineConfig, from_file: Path | None) -> Path:
    path = from_file or pipeline.build_dir / TEMPLATES
    if not path.is_file():
        hint = "" if from_file else (" (stage3 reads stage2's gold templates: run `build-dataset stage2 pull "
                                     f"{pipeline.name}` first, or pass --from FILE)")
        raise UserError(f"{path}: no such file{hint}")
    return path


def run_stage3(pipeline: PipelineConfig, offline: bool = False, from_file: Path | None = None,
               environment: Environment | None = None, force: bool = False) -> Stage3Result:
    """Streams: templates are read one at a time and each template's variants are written as
    they are made, so memory holds one template's variants, not the build's candidates."""
    source = templates_path(pipeline, from_file)
    paths = Stage3Paths.in_dir(pipeline.build_dir)
    if source.resolve() in (paths.candidates.resolve(), paths.rejects.resolve()):
        raise UserError(f"{source}: stage3 writes this file; it cannot also read it (give the templates)")
    settings = pipeline.stages.stage3
    use_llm = pipeline.llm is not None and not offline
    pools_file = value_pools_path(pipeline)
    pools = load_value_pools(pools_file) if pools_file.is_file() else None
    fill = settings.fill
    if fill == "llm" and not use_llm:
        if pools is None:
            raise UserError(f"pipeline {pipeline.name!r}: stages.stage3.fill is 'llm' but "
                            + ("--offline was given" if offline else "no `llm:` is configured")
                            + f" and there are no value pools ({pools_file}) to substitute slots from offline")
        fill = "slots"  # offline, the value pools stand in for the model
    if pools is None and not use_llm:
        raise UserError(f"{pools_file}: no such file (offline generalization substitutes slot values from it)")
    if fill != settings.fill:
        pipeline = pipeline.model_copy(deep=True)
        pipeline.stages.stage3.fill = fill
    with StagedFile(paths.candidates) as candidates, StagedFile(paths.rejects) as rejects:
        written = _Written(candidates, rejects)
        templates = written.templates_of(source)
        # a first pass over the file gives the environment its tools (read only if one is opened)
        readable = (item for item in read_samples(source, "fcbench") if isinstance(item, Sample))
        # annotators fill the arguments: nothing is executed, no environment is needed
        with (nullcontext(environment) if fill == "annotators" else environment_for(pipeline, readable, environment)) as opened:
            llm_summary = _generate(pipeline, templates, lines_in(source), pools, opened, use_llm, written)
        guarded = place_guarded(candidates, rejects, force=force, min_share=pipeline.min_output_share)
    summary = _summary(pipeline, source, written, use_llm, llm_summary)
    finish_summary(guarded, summary, {"candidates": paths.candidates, "rejects": paths.rejects}, paths.summary)
    advice = nothing_kept_advice(summary, pools, str(pools_file)) if fill == "slots" else []
    return Stage3Result(guarded.path(paths.candidates), guarded.path(paths.rejects), summary, advice)


REPEAT_REASONS = ("stage3.duplicate_query", "stage3.duplicate_arguments", "stage3.no_slot_values")


def nothing_kept_advice(summary: dict[str, Any], pools: ValuePools | None, pools_file: str) -> list[str]:
    """When slot substitution kept no variant and every reject is a repeat of its template: the
    slots have too few values to vary anything. Names the slots with one value."""
    counts, reasons = summary.get("counts") or {}, summary.get("reasons") or {}
    if counts.get("candidates", 0) or not reasons or pools is None or set(reasons) - set(REPEAT_REASONS):
        return []
    single = sorted(name for name, slot in pools.slots.items() if len(slot.values) < 2)
    return ["no variant differs from its template: a variant changes the values the query states, and "
            + (f"{len(single)} slot(s) of {pools_file} have one value ({', '.join(single[:8])}"
               f"{' ...' if len(single) > 8 else ''}): " if single else f"the slots of {pools_file} that the queries state have no other value: ")
            + "add values to them (or state other slot values in the templates' queries)"]


@dataclass
class _Written:
    """The stage's output files as they are written, and the counts its summary needs."""

    candidates: StagedFile
    rejects: StagedFile
    templates: int = 0
    per_template: Counter[str] = field(default_factory=Counter)
    needs_arguments: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def templates_of(self, source: Path) -> Iterator[Sample]:
        """The readable templates of `source`, one at a time; an unreadable line is a reject."""
        for item in read_samples(source, "fcbench"):
            if isinstance(item, Rejected):
                self.reject({"id": str(item.source), "reason": "stage3.unreadable_template", "detail": item.reason,
                             "raw": item.raw})
            else:
                self.templates += 1
                yield item

    def reject(self, record: dict[str, Any]) -> None:
        self.rejects.write_json_line(record)
        self.reasons[record["reason"]] += 1

    def add(self, outcome: _Outcome) -> None:
        for candidate in outcome.candidates:
            self.candidates.write_json_line(sample_to_dict(candidate))
            self.per_template[candidate.provenance.parent_id or ""] += 1
            self.needs_arguments += bool(candidate.meta.get("stage3", {}).get("needs_arguments"))
        for record in outcome.rejects:
            self.reject(record)


def _generate(pipeline: PipelineConfig, templates: Iterable[Sample], total: int, pools: ValuePools | None,
              environment: Environment | None, use_llm: bool, written: _Written) -> dict[str, Any] | None:
    settings = pipeline.stages.stage3
    if use_llm and settings.fill in ("llm", "annotators"):
        return _run_llm(pipeline, templates, total, pools, environment, written)
    assert pools is not None  # checked by run_stage3
    with StageProgress("stage3 templates", total) as progress:
        for template in templates:
            written.add(slot_variants(template, pools, settings.variants, pipeline.seed, settings.fill,
                                      environment, pipeline.stages.filter))  # type: ignore[arg-type]
            progress.advance()
    return None


def _summary(pipeline: PipelineConfig, source: Path, written: _Written, use_llm: bool,
             llm_summary: dict[str, Any] | None) -> dict[str, Any]:
    settings = pipeline.stages.stage3
    return {
        "pipeline": pipeline.name,
        "input": str(source),
        "fill": settings.fill,
        "rewrite": "llm" if use_llm and settings.fill != "slots" else SLOT_SUBSTITUTION,
        "variants_per_template": settings.variants,
        "counts": {"templates": written.templates, "candidates": written.candidates.lines,
                   "rejected": written.rejects.lines,
                   "templates_with_all_variants": sum(count == settings.variants for count in written.per_template.values()),
                   "needs_arguments": written.needs_arguments},
        "reasons": dict(sorted(written.reasons.items())),
        "llm": llm_summary,
    }


# ---------------------------------------------------------------------------------- LLM path
def path_shape_text(template: Sample) -> str:
    """The template's path for a prompt: labels, tools, arguments (references as written)."""
    return json.dumps([[{"label": call.label, "tool": call.name, "arguments": call.arguments} for call in step]
                       for step in template.calls], ensure_ascii=False, indent=1)


def parse_fill(template: Sample):
    """A parser for the fill answer: one tool call per call of the path, same tools, same order."""
    from fcbench.llm.client import ParseError

    expected = [call for step in template.calls for call in step]

    def parse(completion: Any) -> list[dict[str, Any]]:
        calls = completion.tool_calls
        if [call.name for call in calls] != [call.name for call in expected]:
            raise ParseError(f"expected tool calls {[c.name for c in expected]}, got {[c.name for c in calls]}")
        filled = []
        for call, original in zip(calls, expected):
            try:
                arguments = json.loads(call.arguments or "{}")
            except json.JSONDecodeError as exc:
                raise ParseError(f"{call.name}: arguments are not JSON ({exc.msg})") from None
            if not isinstance(arguments, dict):
                raise ParseError(f"{call.name}: arguments are not a JSON object")
            # the path's references are its shape: they stay as the template wrote them
            references = {name: value for name, value in original.arguments.items() if parse_reference(value) is not None}
            filled.append({**{k: v for k, v in arguments.items() if k not in references}, **references})
        return filled

    return parse


@dataclass
class LLMGeneralizer:
    pipeline: PipelineConfig
    client: Any
    pools: ValuePools | None
    environment: Environment | None
    rewrite: PromptFile
    fill: PromptFile

    async def variants(self, template: Sample) -> _Outcome:
        outcome = _Outcome()
        numbers = range(1, self.pipeline.stages.stage3.variants + 1)
        too_long = query_too_long(template)
        if too_long:
            outcome.rejects.append(_reject(f"{template.id}-v1", template, "stage3.query_too_long", too_long))
            return outcome
        vocabulary = pool_vocabulary(self.pools) if self.pools is not None else {}
        template_map, why = template_provenance(template, self.pools)
        if template_map is None and self.pipeline.stages.stage3.fill != "annotators":
            outcome.rejects.append(_reject(f"{template.id}-v1", template, "stage3.no_provenance",
                                           f"the template's values cannot all be tied to its query: {why}"))
            return outcome
        drafted = await asyncio.gather(*(self._variant(template, number) for number in numbers))
        for number, result in zip(numbers, drafted):
            variant_id = f"{template.id}-v{number}"
            if isinstance(result, dict):
                outcome.rejects.append(result)
                continue
            if template_map is not None and not result.meta["stage3"].get("needs_arguments"):
                # the model's values tied to its query like the template's, dependent ones read again
                followed = follow_template(result, template_map, vocabulary)
                if followed.problems:
                    first = followed.problems[0]
                    reason = "grounding.ungrounded_value" if first.code == "ungrounded" else "stage3.underivable"
                    outcome.rejects.append(_reject(variant_id, template, reason, first.describe(), result))
                    continue
                stage3_meta = dict(result.meta["stage3"])
                if followed.recomputed:
                    stage3_meta["recomputed"] = [{"label": label, "argument": name, "from": old, "to": new}
                                                 for label, name, old, new in followed.recomputed]
                result = with_provenance(followed.sample.model_copy(update={"meta": {**result.meta, "stage3": stage3_meta}}),
                                         followed.provenance)
            try:
                if result.meta["stage3"].get("needs_arguments"):
                    repeated = repeat_problem(template, result, outcome.candidates)
                    if repeated:
                        raise ItemRejected(*repeated)
                    kept = result
                else:
                    assert self.environment is not None
                    kept = check_variant(template, result, outcome.candidates, self.pools, self.environment,
                                         self.pipeline.stages.filter)
            except ItemRejected as problem:
                outcome.rejects.append(_reject(variant_id, template, problem.reason, problem.detail, result))
                continue
            outcome.candidates.append(kept)
        return outcome

    async def _variant(self, template: Sample, number: int) -> Sample | dict[str, Any]:
        from fcbench.llm.client import ChatRequest, LLMRejection

        variant_id = f"{template.id}-v{number}"
        index = number - 1
        rewrite_text = self.rewrite.render(query=user_query(template), path=path_shape_text(template), variant=str(number))
        asked = await self.client.complete(
            ChatRequest(messages=[{"role": "user", "content": rewrite_text}], response_format={"type": "json_object"},
                        sample_index=index, prompt_hash=self.rewrite.sha256), parse_query)
        if isinstance(asked, LLMRejection):
            return _reject(variant_id, template, "stage3.unusable_rewrite", asked.reason, raw=asked.raw_text)
        query = asked.parsed
        fill = self.pipeline.stages.stage3.fill
        meta: dict[str, Any] = {"variant": number, "fill": fill}
        if fill == "annotators":
            meta["needs_arguments"] = True
            return make_variant(template, number, query, cleared_arguments(template.calls), self.client.config.model,
                                self.pipeline.seed, meta, self.rewrite)
        fill_messages = [{"role": "system", "content": self.fill.text},
                         {"role": "user", "content": f"Request: {query}\n\nPath:\n{path_shape_text(template)}"}]
        filled = await self.client.complete(
            ChatRequest(messages=fill_messages, tools=[openai_tool_param(tool) for tool in template.tools],
                        sample_index=index, prompt_hash=self.fill.sha256), parse_fill(template))
        if isinstance(filled, LLMRejection):
            return _reject(variant_id, template, "stage3.unusable_fill", filled.reason, raw=filled.raw_text)
        arguments = iter(filled.parsed)
        calls = [[Call(label=call.label, name=call.name, arguments=next(arguments)) for call in step] for step in template.calls]
        meta["prompts"] = {self.rewrite.shown_as: self.rewrite.sha256, self.fill.shown_as: self.fill.sha256}
        return make_variant(template, number, query, calls, self.client.config.model, self.pipeline.seed, meta, self.fill)


def _run_llm(pipeline: PipelineConfig, templates: Iterable[Sample], total: int, pools: ValuePools | None,
             environment: Environment | None, written: _Written) -> dict[str, Any]:
    from fcbench.llm.cache import LLM_CACHE_FILE, RequestCache
    from fcbench.llm.client import LLMClient

    base = pipeline.resolve(".")
    rewrite, fill = PromptFile.load(REWRITE_PROMPT, base), PromptFile.load(FILL_PROMPT, base)
    assert pipeline.llm is not None

    async def run_all() -> dict[str, Any]:
        cache = RequestCache(pipeline.build_dir / LLM_CACHE_FILE)
        try:
            async with LLMClient(pipeline.llm, cache, jitter_seed=pipeline.seed) as client:
                generalizer = LLMGeneralizer(pipeline, client, pools, environment, rewrite, fill)
                # templates go in windows: their requests run concurrently, and each window's
                # variants are written in template order before the next window is read
                window = max(WINDOW_TEMPLATES, 4 * client.parallelism)
                with StageProgress("stage3 templates", total) as progress:
                    for group in in_windows(templates, window):
                        outcomes = await asyncio.gather(*(progress_of(generalizer.variants(template), progress)
                                                          for template in group))
                        for outcome in outcomes:
                            written.add(outcome)
                return client.summary()
        finally:
            cache.close()

    return asyncio.run(run_all())


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """The stage contract (fcbench.stage): variants of each template (`--input`: other templates)."""
    result = run_stage3(ctx.config, offline=not ctx.uses_llm, from_file=input_of(settings), force=ctx.force)
    return StageSummary.of("stage3", result.summary, report=result)
