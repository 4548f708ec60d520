"""Checks on an annotated gold candidate: references, arguments against the tools' schemas, and the
responses, re-executed in the pipeline's environment or, without one, checked for consistency.

Responses and references: references in the gold path read the responses AFTER the annotator's
entry deletions (that is what a model sees in the gold conversation). So the path is walked step by
step here rather than with `fcbench.environments.run_path`, which would resolve against the
environment's full answers.

Without an environment a call keeps the draft's response only if it is unchanged; it stays
consistent only if its references still give the values the response was made with (deleting
`data[0]` shifts what `$var_1.data[1].id$` reads). Each failure is a `Problem` with the exact
message the annotator sees when the task is sent back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from annotate.tasks.entries import without_entries
from annotate.tasks.provenance_text import parse_provenance
from fcbench.checks.gold_audit import gold_audit
from fcbench.checks.provenance import check_provenance, infer_provenance, query_too_long, with_provenance
from annotate.tasks.problems import Problem, ProblemCode
from annotate.tasks.single import Correction
from fcbench.environments import ArgumentCoercer, CallOutcome, Environment
from fcbench.references import iter_references, parse_reference
from fcbench.resolve import CallSite, PathIndex, UnresolvedReference, check_references, resolve_arguments
from fcbench.sample import Call, Sample, Tool, sample_from_dict, sample_to_dict, user_query


@dataclass
class CheckOutcome:
    sample: Sample | None  # the gold sample with every response, when there is no problem
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # worth knowing, not a reason to reject

    @property
    def ok(self) -> bool:
        return self.sample is not None and not self.problems


def check_correction(correction: Correction, environment: Environment | None = None) -> CheckOutcome:
    outcome = CheckOutcome(None, list(correction.problems))
    sample = correction.sample
    if sample is None or outcome.problems:
        return outcome
    outcome.problems.extend(Problem(ProblemCode.BAD_REFERENCE, str(error)) for error in check_references(sample.calls))
    if outcome.problems:
        return outcome
    walker = _PathWalker(correction, environment, outcome)
    steps = [walker.run_step(step_index, step) for step_index, step in enumerate(sample.calls)]
    if outcome.problems:
        return outcome
    gold = _finalised(correction, sample.model_copy(update={"calls": steps}), outcome.notes)
    if correction.gold:  # every value tied to the query, and the path doing exactly what it asks
        gold, problems = with_checked_provenance(gold, correction.declared_provenance)
        if problems:
            outcome.problems.extend(problems)
            return outcome
    outcome.sample = gold
    return outcome


def with_checked_provenance(sample: Sample, declared_text: str | None) -> tuple[Sample, list[Problem]]:
    """The gold with its provenance map (meta.provenance): the sources the annotator wrote in the
    provenance field, the others inferred. Each argument nothing states, each source whose words
    say another value, each line that cannot be read, and each gold audit rule the path breaks
    is a problem naming the call and argument (the task goes back to the annotator)."""
    too_long = query_too_long(sample)
    if too_long:
        return sample, [Problem(ProblemCode.QUERY_TOO_LONG, too_long)]
    declared = None
    problems: list[Problem] = []
    if declared_text is not None:
        declared, unread = parse_provenance(declared_text, user_query(sample))
        problems += [Problem(ProblemCode.BAD_PROVENANCE, line.describe()) for line in unread]
    inferred = infer_provenance(sample, declared=declared)
    problems += [Problem(ProblemCode.PROVENANCE_MISSING,
                         f"{p.label}.{p.parameter}={p.value_text}: nothing in the query states it; say it in the query "
                         "or give its source in the provenance field") for p in inferred.ungrounded]
    problems += [Problem(ProblemCode.PROVENANCE_CONTRADICTS, p.describe())
                 for p in check_provenance(sample, inferred.provenance, complete=False)]
    if problems:
        return sample, problems
    problems += [Problem(ProblemCode.GOLD_AUDIT, f"{p.reason}: {p.detail}") for p in gold_audit(sample, inferred.provenance)]
    return with_provenance(sample, inferred.provenance), problems


class _PathWalker:
    def __init__(self, correction: Correction, environment: Environment | None, outcome: CheckOutcome) -> None:
        self.correction = correction
        self.environment = environment
        self.outcome = outcome
        self.tools = {tool.name: tool for tool in correction.sample.tools} if correction.sample else {}
        self.index = PathIndex.of_steps(correction.sample.calls) if correction.sample else PathIndex([])
        self.outputs: dict[str, Any] = {}  # gold label -> response after deletions
        self._draft_inputs: dict[str, Mapping[str, Any]] | None = None
        self.failed: set[str] = set()  # calls already reported: what reads them is not reported again

    def draft_inputs(self) -> dict[str, Mapping[str, Any]]:
        """What each draft call's response was made with; computed only if a kept call reads one."""
        if self._draft_inputs is None:
            self._draft_inputs = _draft_resolved_arguments(self.correction.draft)
        return self._draft_inputs

    def problem(self, code: ProblemCode, message: str) -> None:
        self.outcome.problems.append(Problem(code, message))

    def run_step(self, step_index: int, step: Sequence[Call]) -> list[Call]:
        prepared = [self._prepare(step_index, call) for call in step]
        if self.environment is not None:
            to_run = [(call.name, arguments) for call, arguments in zip(step, prepared) if arguments is not None]
            fresh = iter(self.environment.call_step(to_run) if to_run else [])
            results = [self._executed(call, next(fresh)) if arguments is not None else call
                       for call, arguments in zip(step, prepared)]
        else:
            results = [self._kept(call, arguments) if arguments is not None else call
                       for call, arguments in zip(step, prepared)]
        for call in results:
            if "response" in call.model_fields_set:
                self.outputs[call.label] = call.response
            else:
                self.failed.add(call.label)
        return results

    def _prepare(self, step_index: int, call: Call) -> Mapping[str, Any] | None:
        """The arguments the tool would get (references resolved, values coerced), or None."""
        try:
            site = CallSite(call.label, call.name, step_index)
            resolved = resolve_arguments(call.arguments, self.outputs, site, self.index)
        except UnresolvedReference as exc:
            read = parse_reference(exc.reference)
            if read is not None and read.label in self.failed:
                return None  # the call it reads already failed and was reported: one cause, one message
            self.problem(ProblemCode.BAD_REFERENCE, str(exc))
            return None
        tool = self.tools.get(call.name)
        arguments = coerced(resolved, tool)
        problems = schema_problems(arguments, tool) if tool is not None else []
        for message in problems:
            self.problem(ProblemCode.BAD_ARGUMENTS, f"call {call.label} ({call.name}): {message}")
        return None if problems else arguments  # arguments that do not fit are not worth executing

    def _executed(self, call: Call, outcome: CallOutcome) -> Call:
        if not outcome.ok:
            reason = outcome.reason.value if outcome.reason else "error"
            self.problem(ProblemCode.EXECUTION_FAILED,
                         f"call {call.label} ({call.name}) failed in the environment: {reason}: {outcome.error}")
            return call
        source = self.correction.kept_from.get(call.label)
        deletions = self.correction.deletions.get(source.label, set()) if source else set()
        response = without_entries(outcome.response, deletions)
        if source is not None and _canonical(response) != _canonical(call.response):
            self.outcome.notes.append(f"call {call.label}: the environment's response differs from the draft's; "
                                      "the environment's is kept")
        return call.model_copy(update={"response": response})

    def _kept(self, call: Call, arguments: Mapping[str, Any]) -> Call:
        source = self.correction.kept_from.get(call.label)
        if source is None:
            self.problem(ProblemCode.NO_RESPONSE,
                         f"call {call.label} ({call.name}) is new or changed and the pipeline has no environment "
                         "to execute it: keep the draft's call or configure an environment")
            return call
        if not any(True for _ in iter_references(call.arguments)):
            return call  # same literal arguments as the draft call: nothing a deletion could shift
        made_with = self.draft_inputs().get(source.label)
        if made_with is not None and _canonical(made_with) != _canonical(arguments):
            changed = [name for name in arguments if _canonical(arguments.get(name)) != _canonical(made_with.get(name))]
            self.problem(ProblemCode.INCONSISTENT_RESPONSE,
                         f"call {call.label} ({call.name}): after the deletions its arguments {changed} read "
                         f"{_short({n: arguments.get(n) for n in changed})}, but its response was made with "
                         f"{_short({n: made_with.get(n) for n in changed})}")
        return call


def schema_problems(arguments: Mapping[str, Any], tool: Tool) -> list[str]:
    """Why arguments do not fit a tool's parameter schema (empty: they fit)."""
    validator = _tool_checks(tool)[1]
    if validator is None:
        return []  # a catalog problem, reported by lint-tools; not the annotator's to fix
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda error: list(error.absolute_path))
    messages = []
    for error in errors:
        where = ".".join(str(part) for part in error.absolute_path)
        messages.append(f"argument {where}: {error.message}" if where else error.message)
    return messages


def coerced(arguments: Mapping[str, Any], tool: Tool | None) -> Mapping[str, Any]:
    """The arguments as the environment hands them to the tool (numbers from strings and so on)."""
    return _tool_checks(tool)[0](arguments) if tool is not None else arguments


_CHECKS: dict[int, tuple[Tool, ArgumentCoercer, Draft202012Validator | None]] = {}
_CHECKS_LIMIT = 4096


def _tool_checks(tool: Tool) -> tuple[ArgumentCoercer, Draft202012Validator | None]:
    """Coercer and validator of a tool, built once per tool object: the catalog's tools are shared
    by every task of a pull (the entry keeps the tool alive, so its id cannot be reused)."""
    entry = _CHECKS.get(id(tool))
    if entry is None or entry[0] is not tool:
        if len(_CHECKS) >= _CHECKS_LIMIT:
            _CHECKS.clear()
        entry = (tool, ArgumentCoercer(tool.parameters), _validator(tool.parameters))
        _CHECKS[id(tool)] = entry
    return entry[1], entry[2]


def _validator(schema: Mapping[str, Any]) -> Draft202012Validator | None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return None
    return Draft202012Validator(schema)


def _draft_resolved_arguments(draft: Sample) -> dict[str, Mapping[str, Any]]:
    """The arguments each draft call really got (references resolved against the draft's own
    responses): what its recorded response was made with."""
    outputs: dict[str, Any] = {}
    resolved: dict[str, Mapping[str, Any]] = {}
    tools = {tool.name: tool for tool in draft.tools}
    for step_index, step in enumerate(draft.calls):
        for call in step:
            try:
                arguments = resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name, step_index))
            except UnresolvedReference:
                continue
            resolved[call.label] = coerced(arguments, tools.get(call.name))
        for call in step:
            if "response" in call.model_fields_set:
                outputs[call.label] = call.response
    return resolved


def _finalised(correction: Correction, sample: Sample, notes: list[str]) -> Sample:
    """Drop the draft's final answer when the path changed: it may no longer be what the path gives."""
    if "answer" not in correction.draft.model_fields_set:
        return sample
    unchanged = (not correction.deletions and len(correction.kept_from) == len(sample.all_calls())
                 and len(sample.all_calls()) == len(correction.draft.all_calls()))
    if unchanged:
        return sample
    data = sample_to_dict(sample)
    data.pop("answer", None)
    notes.append("the draft's final answer was dropped: the path or its responses changed")
    return sample_from_dict(data)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"
