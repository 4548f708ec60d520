"""Task <-> sample conversion for the Label Studio stages (pure: no server, no files).

Push direction: a canonical draft becomes a task whose data carries everything pull needs (the
whole draft, its hash, the HTML the annotator reads, one checkbox option per response entry and
tool) and whose prediction pre-fills the editable fields from the draft.

Pull direction: an annotation's `result` list becomes the annotator's answer, and the answer applied
to the draft gives a gold candidate (`Correction`) plus the problems found while building it. The
checks that need the tools' schemas and an environment live in `annotate/review/checks.py`.

Tasks are keyed by `sample_id` + `draft_hash` in their data: pushing the same draft again finds its
task; a changed draft has a new hash.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from annotate.tasks import render
from annotate.tasks.forms import (FormLayout, form_prefill, form_values, formable_tools, path_fingerprint, read_form,
                                reference_options, shown_form_fingerprint)
from annotate.tasks.json_errors import describe_json_error
from annotate.tasks.ambiguity import Ambiguity, find_ambiguities
from annotate.tasks.entries import Path, deletions_by_label, response_entries, without_entries
from annotate.tasks.problems import Problem, ProblemCode
from annotate.tasks.provenance_text import HEADER, format_provenance
from fcbench.checks.provenance import infer_provenance, query_too_long
from fcbench.sample import Call, Sample, Step, Tool, path_shape, sample_from_dict

STAGE2_KIND = "fcbench-stage2"
JUNIOR_KIND = "fcbench-stage3-junior"
SENIOR_OBJECT = "draft"  # the HyperText every stage2 control points at (toName)
JUNIOR_OBJECT = "variant"
DEFAULT_MODEL_VERSION = "draft"


# ------------------------------------------------------------------------------------------ shared
def canonical_dict(sample: Sample) -> dict[str, Any]:
    """The sample as `sample_to_dict` writes it (difficulty derived), without copying the sample
    first: `sample_to_dict` sets the field on the object it is given, and a deep copy of a draft
    with its tool catalog costs more than everything else a task needs."""
    data = sample.model_dump(mode="json", exclude_unset=True)
    data["difficulty"] = path_shape(sample).difficulty.value
    return data


def content_hash(sample: Sample | dict[str, Any]) -> str:
    """A short hash of the sample's content (key order aside): the task key beside the id."""
    data = sample if isinstance(sample, dict) else canonical_dict(sample)
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class ToolCatalog:
    """The pipeline's tool catalog, by content hash.

    A task carries its draft whole, except tools that are exactly (same hash) a catalog tool: those
    are written as `{"name", "sha"}` and restored from the catalog at pull time. A catalog tool is
    tens of KB of JSON Schema (parameters and returns), repeated in every task otherwise; the hash
    makes a catalog changed since the push an explicit problem instead of a silent change.
    """

    def __init__(self, tools: Sequence[Tool] = ()) -> None:
        self.by_sha = {tool_sha(tool): tool for tool in tools}
        self._sha_by_name = {tool.name: sha for sha, tool in self.by_sha.items()}

    def sha_of(self, tool: Tool) -> str | None:
        """The hash when this exact tool is in the catalog; None otherwise."""
        sha = self._sha_by_name.get(tool.name)
        return sha if sha is not None and self.by_sha[sha] == tool else None


def tool_sha(tool: Tool) -> str:
    text = json.dumps(tool.model_dump(mode="json", exclude_unset=True), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def pack_tools(tools: Sequence[Tool], catalog: ToolCatalog | None) -> list[dict[str, Any]]:
    packed = []
    for tool in tools:
        sha = catalog.sha_of(tool) if catalog is not None else None
        packed.append({"name": tool.name, "sha": sha} if sha else tool.model_dump(mode="json", exclude_unset=True))
    return packed


class DraftUnavailable(ValueError):
    """The task's draft cannot be rebuilt (not an fcbench task, or its catalog tools are gone)."""


def unpack_tools(packed: Sequence[Any], catalog: ToolCatalog | None) -> list[Tool | dict[str, Any]]:
    tools: list[Tool | dict[str, Any]] = []
    for item in packed:
        if isinstance(item, dict) and set(item) == {"name", "sha"}:
            tool = catalog.by_sha.get(item["sha"]) if catalog is not None else None
            if tool is None:
                raise DraftUnavailable(f"tool {item['name']!r} was pushed as catalog version {item['sha']}, which the "
                                       "pipeline's tool catalog no longer has: restore it, or push the draft again")
            tools.append(tool)
        else:
            tools.append(item)
    return tools


def textarea_result(from_name: str, to_name: str, text: str) -> dict[str, Any]:
    return {"from_name": from_name, "to_name": to_name, "type": "textarea", "value": {"text": [text]}}


def choices_result(from_name: str, to_name: str, choices: Sequence[str]) -> dict[str, Any]:
    return {"from_name": from_name, "to_name": to_name, "type": "choices", "value": {"choices": list(choices)}}


def format_path_json(steps: Sequence[Sequence[Call]]) -> str:
    """The path an annotator edits: one step per line block, one call per line, no responses
    (they are shown beside it; a call left unchanged keeps its response)."""
    if not steps:
        return "[]"
    lines = []
    for step in steps:
        calls = [json.dumps({"label": call.label, "name": call.name, "arguments": call.arguments},
                            ensure_ascii=False) for call in step]
        lines.append("  [\n    " + ",\n    ".join(calls) + "\n  ]")
    return "[\n" + ",\n".join(lines) + "\n]"


def read_result(result: Sequence[Any]) -> dict[str, Any]:
    """Values by control name: TextArea -> its text (lines joined), Choices -> the ticked values."""
    values: dict[str, Any] = {}
    for region in result or []:
        if not isinstance(region, dict):
            continue
        name, value = region.get("from_name"), region.get("value") or {}
        if not isinstance(value, dict) or not isinstance(name, str):
            continue
        if "text" in value:
            text = value["text"]
            values[name] = "\n".join(str(line) for line in text) if isinstance(text, list) else str(text)
        elif "choices" in value:
            choices = value["choices"]
            values[name] = [str(choice) for choice in choices] if isinstance(choices, list) else [str(choices)]
        elif "number" in value:
            values[name] = value["number"]
    return values


def _single(values: dict[str, Any], name: str) -> str | None:
    chosen = values.get(name) or []
    return chosen[0] if chosen else None


def parse_json_field(text: str | None, field_name: str) -> tuple[Any, Problem | None]:
    if text is None or not text.strip():
        return None, Problem(ProblemCode.EMPTY_SUBMISSION, f"{field_name} is empty")
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, Problem(ProblemCode.BAD_JSON, f"{field_name} is not valid JSON: {describe_json_error(text, exc)}")


# ------------------------------------------------------------------------ Data Manager columns
# Plain task-data fields the project view made by push shows as sortable, filterable columns (the
# HTML payloads are hidden there). The checks fill the last three: the webhook receiver
# (annotate/webhook.py) and `pull --send-back`.
VERDICT_FIELD = "verdict"
REWORK_FIELD = "rework"
ANNOTATOR_FIELD = "annotator"


def listing_fields(sample: Sample, warnings: int = 0) -> dict[str, Any]:
    domain = sample.domain if isinstance(sample.domain, str) else ", ".join(str(item) for item in sample.domain or [])
    return {"domain": domain, "n_calls": len(sample.all_calls()), "n_steps": len(sample.calls),
            "n_warnings": warnings, ANNOTATOR_FIELD: "", VERDICT_FIELD: "", REWORK_FIELD: ""}


# -------------------------------------------------------------------------------------- stage2 push
def senior_task(draft: Sample, model_version: str = DEFAULT_MODEL_VERSION,
                catalog: ToolCatalog | None = None, form: FormLayout | None = None) -> dict[str, Any]:
    """The task (data + prediction) that shows one draft to a senior annotator; with `form`, the
    prediction also fills the call forms (annotate/tasks/forms.py) from the draft."""
    flags = find_ambiguities(draft)
    flagged_entries = {entry for flag in flags for entry in flag.entries}
    flagged_tools = {tool for flag in flags for tool in flag.tools}
    entries = response_entries(draft.all_calls())
    query = render.last_user_text(draft)
    draft_dict = canonical_dict(draft)
    data = {
        "kind": STAGE2_KIND,
        "sample_id": draft.id,
        "draft_hash": content_hash(draft_dict),
        "draft": {key: value for key, value in draft_dict.items() if key != "tools"},
        "tools": pack_tools(draft.tools, catalog),
        "draft_html": render.draft_html(draft, flags),
        "feedback_html": "",
        "entry_options": [render.entry_option(entry, entry.id in flagged_entries) for entry in entries],
        "tool_options": [render.tool_option(tool, tool.name in flagged_tools) for tool in draft.tools],
        "ambiguity": [flag.as_dict() for flag in flags],
        "query": query,
        "path_json": format_path_json(draft.calls),
        "ref_options": reference_options(draft.all_calls()),
    }
    data["provenance_text"] = draft_provenance_text(draft)
    data.update(listing_fields(draft, len(flags)))
    prediction = senior_prediction(query, data["path_json"], model_version, data["provenance_text"])
    if form is not None:
        data["form_slots"] = form.slots
        prediction["result"].extend(form_prefill(draft.calls, form))
    return {"data": data, "predictions": [prediction]}


def senior_prediction(query: str, path_json: str, model_version: str = DEFAULT_MODEL_VERSION,
                      provenance_text: str | None = None) -> dict[str, Any]:
    result = [textarea_result("query", SENIOR_OBJECT, query), textarea_result("path_json", SENIOR_OBJECT, path_json)]
    if provenance_text is not None:
        result.append(textarea_result("provenance", SENIOR_OBJECT, provenance_text))
    return {"model_version": model_version, "result": result}


def draft_provenance_text(draft: Sample) -> str:
    """Where each of the draft's values comes from, as the annotator reads it (pre-filled; the
    same text is computed again at pull to tell whether the annotator edited it)."""
    if query_too_long(draft):
        return HEADER
    return format_provenance(infer_provenance(draft).provenance)


def ambiguities_of(task_data: dict[str, Any]) -> list[Ambiguity]:
    """The warnings a task was pushed with (tasks pushed before scores existed read with score 0)."""
    return [Ambiguity.from_dict(item) for item in task_data.get("ambiguity", []) if isinstance(item, dict)]


# -------------------------------------------------------------------------------------- stage2 pull
@dataclass(frozen=True)
class SeniorAnswer:
    verdict: str | None
    query: str | None
    path_text: str | None
    delete_entries: tuple[str, ...] = ()
    drop_tools: tuple[str, ...] = ()
    error_flags: tuple[str, ...] = ()
    notes: str = ""
    form: dict[str, Any] = field(default_factory=dict)  # the call forms' controls (empty: no forms)
    provenance_text: str | None = None  # the provenance field (None: a task pushed without one)

    @classmethod
    def from_result(cls, result: Sequence[Any]) -> "SeniorAnswer":
        values = read_result(result)
        return cls(verdict=_single(values, "verdict"), query=values.get("query"), path_text=values.get("path_json"),
                   delete_entries=tuple(values.get("delete_entries", ())),
                   drop_tools=tuple(values.get("drop_tools", ())),
                   error_flags=tuple(values.get("error_flags", ())), notes=values.get("notes", "") or "",
                   form=form_values(values), provenance_text=values.get("provenance"))


@dataclass
class Correction:
    """A gold candidate built from a draft and an answer, before the environment checks.

    `kept_from` maps each gold call label to the draft call whose response it keeps (same name
    and arguments); calls not in it need executing. `deletions` are by DRAFT label.
    """

    draft: Sample
    sample: Sample | None
    problems: list[Problem] = field(default_factory=list)
    kept_from: dict[str, Call] = field(default_factory=dict)
    deletions: dict[str, set[Path]] = field(default_factory=dict)
    dropped_tools: tuple[str, ...] = ()
    verdict: str | None = None
    flags: tuple[str, ...] = ()
    notes: str = ""
    # stage2 gold: the provenance field as the annotator left it (None: not edited, infer it) and
    # whether the gold must pass the provenance checks and the gold audit (annotate/review/checks.py)
    declared_provenance: str | None = None
    gold: bool = False


def draft_of(task_data: dict[str, Any], catalog: ToolCatalog | None = None) -> Sample | None:
    """The draft a task was made from (None: not an fcbench task); `DraftUnavailable` or a
    validation error (both ValueError) when it cannot be rebuilt."""
    raw = task_data.get("draft")
    if not isinstance(raw, dict):
        return None
    packed = task_data.get("tools")
    if packed is None:
        return sample_from_dict(raw)
    if not isinstance(packed, list):
        raise DraftUnavailable("the task's tools are not a list")
    return sample_from_dict({**raw, "tools": unpack_tools(packed, catalog)})


def build_senior_correction(draft: Sample, answer: SeniorAnswer) -> Correction:
    correction = Correction(draft, None, verdict=answer.verdict, flags=answer.error_flags, notes=answer.notes,
                            dropped_tools=answer.drop_tools, gold=True)
    if answer.provenance_text is not None and answer.provenance_text.strip() != draft_provenance_text(draft).strip():
        correction.declared_provenance = answer.provenance_text  # the annotator corrected a source
    problems = correction.problems
    if answer.verdict is None and answer.query is None and answer.path_text is None and not answer.form:
        problems.append(Problem(ProblemCode.EMPTY_SUBMISSION, "the submission is empty: nothing was filled in"))
        return correction
    if answer.verdict is None:
        problems.append(Problem(ProblemCode.NO_VERDICT, "no verdict chosen (accept, fix or reject)"))
    if answer.verdict == "reject":
        problems.append(Problem(ProblemCode.REJECTED_BY_ANNOTATOR, "the annotator rejected the draft"
                                + (f": {answer.notes.strip()}" if answer.notes.strip() else "")))
        return correction
    query = (answer.query or "").strip()
    if not query:
        problems.append(Problem(ProblemCode.EMPTY_QUERY, "the query is empty"))
    marks: list[dict[str, str]] = []
    steps = edited_path(draft, answer, problems, marks)
    if problems or steps is None:
        return correction
    correction.deletions, unreadable = deletions_by_label(answer.delete_entries)
    problems.extend(_entry_problems(draft, correction.deletions, unreadable))
    tools = [tool for tool in draft.tools if tool.name not in set(answer.drop_tools)]
    problems.extend(_tool_problems(steps, draft, set(answer.drop_tools)))
    correction.kept_from = match_kept_calls(steps, draft.all_calls())
    gold_steps = [[_with_kept_response(call, correction.kept_from, correction.deletions) for call in step]
                  for step in steps]
    update: dict[str, Any] = {"messages": with_query(draft.messages, query), "tools": tools, "calls": gold_steps}
    if marks:  # values the annotator says the query implies, and why (read by fcbench.checks.grounding)
        update["meta"] = {**draft.meta, "derived": marks}
    correction.sample = draft.model_copy(update=update)  # the new fields are new objects; the rest is read-only
    return correction


def edited_path(draft: Sample, answer: SeniorAnswer, problems: list[Problem],
                marks: list[dict[str, str]] | None = None) -> list[Step] | None:
    """The gold path from the call forms and the raw JSON, which both start as the draft's path.

    Precedence: the one the annotator changed is used; neither changed: the draft's path (from the
    raw JSON, which also holds what a form cannot show); both changed: they must describe the same
    path, otherwise the task is refused as `conflicting_edits` (nobody can tell which was meant).
    A task without forms (pushed before them, or an export) is read from the raw JSON alone. What
    the forms showed is rebuilt from the draft (pure and deterministic, so it is what push sent).
    Derivation marks (`marks`) are written in the raw JSON only; with the forms' path, those of its
    calls and arguments are kept."""
    if not answer.form:
        return parse_path(answer.path_text, problems, marks)
    form = read_form(answer.form, draft.tools)
    shown_form = shown_form_fingerprint(draft.calls, FormLayout(10**6, formable_tools(draft.tools)))
    form_changed = path_fingerprint(form.steps) != shown_form or bool(form.problems)
    raw_changed = (answer.path_text or "").strip() != format_path_json(draft.calls).strip()
    if not form_changed and not raw_changed:
        return parse_path(answer.path_text, problems, marks)
    raw_problems: list[Problem] = []
    raw_marks: list[dict[str, str]] = []
    raw = parse_path(answer.path_text, raw_problems, raw_marks)
    if not raw_changed:
        problems.extend(Problem(ProblemCode.BAD_FORM, message) for message in form.problems)
        if not form.steps and not form.problems:
            problems.append(Problem(ProblemCode.BAD_SHAPE, "the forms hold no call: pick a tool for at least one call"))
        if marks is not None:
            present = {(call.label, name) for step in form.steps for call in step for name in call.arguments}
            marks.extend(mark for mark in raw_marks if (mark["label"], mark["parameter"]) in present)
        return None if problems else form.steps
    if marks is not None:
        marks.extend(raw_marks)
    if not form_changed:
        problems.extend(raw_problems)
        return raw
    if raw_problems or form.problems or raw is None or path_fingerprint(raw) != path_fingerprint(form.steps):
        problems.append(Problem(ProblemCode.CONFLICTING_EDITS,
                                "both the call forms and the raw JSON were changed and they disagree: "
                                "undo one of them (or make them describe the same path) and submit again"))
        return None
    return raw


def with_query(messages: list[dict[str, Any]], query: str) -> list[dict[str, Any]]:
    """The messages with the last user message's text replaced (earlier turns kept)."""
    updated = [dict(message) for message in messages]
    for message in reversed(updated):
        if message.get("role") == "user":
            message["content"] = query
            return updated
    return updated + [{"role": "user", "content": query}]


def parse_path(text: str | None, problems: list[Problem], marks: list[dict[str, str]] | None = None) -> list[Step] | None:
    """The edited path: a JSON list of steps, each a list of {label, name, arguments} objects. A call
    may add `"derived": {"parameter": "reason"}` for argument values the query implies without
    writing them ("a family of four" for adults=4); those go to `marks` as {label, parameter, reason}."""
    value, problem = parse_json_field(text, "the path JSON")
    if problem is not None:
        problems.append(problem)
        return None
    if not isinstance(value, list):
        problems.append(Problem(ProblemCode.BAD_SHAPE,
                                "the path JSON must be a list of steps (a list of lists of calls)"))
        return None
    steps: list[Step] = []
    labels: set[str] = set()
    for s, step in enumerate(value):
        if not isinstance(step, list):
            problems.append(Problem(ProblemCode.BAD_SHAPE,
                                    f"step {s + 1} must be a list of calls, got {type(step).__name__}"))
            continue
        calls = []
        for c, raw in enumerate(step):
            call = _parse_call(raw, f"step {s + 1} call {c + 1}", problems)
            if call is None:
                continue
            _read_marks(raw, call, f"step {s + 1} call {c + 1}", problems, marks)
            if call.label in labels:
                problems.append(Problem(ProblemCode.DUPLICATE_LABEL, f"label {call.label!r} is used twice"))
            labels.add(call.label)
            calls.append(call)
        if not step:
            problems.append(Problem(ProblemCode.BAD_SHAPE, f"step {s + 1} is empty"))
        steps.append(calls)
    return None if any(p.code in (ProblemCode.BAD_SHAPE, ProblemCode.DUPLICATE_LABEL) for p in problems) else steps


def _parse_call(raw: Any, where: str, problems: list[Problem]) -> Call | None:
    if not isinstance(raw, dict):
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where} must be an object {{label, name, arguments}}"))
        return None
    unknown = sorted(set(raw) - {"label", "name", "arguments", "derived"})
    if unknown:
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where} has unexpected keys {unknown}"))
    label, name, arguments = raw.get("label"), raw.get("name"), raw.get("arguments", {})
    if not isinstance(label, str) or not label.strip():
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where} needs a non-empty string 'label'"))
        return None
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where} ({label}) needs a non-empty string 'name'"))
        return None
    if not isinstance(arguments, dict):
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where} ({label}): 'arguments' must be an object"))
        return None
    return Call(label=label.strip(), name=name.strip(), arguments=arguments)


def _read_marks(raw: dict[str, Any], call: Call, where: str, problems: list[Problem],
                marks: list[dict[str, str]] | None) -> None:
    derived = raw.get("derived")
    if derived is None:
        return
    if not isinstance(derived, dict) or not all(isinstance(reason, str) and reason.strip() for reason in derived.values()):
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where} ({call.label}): 'derived' must map each derived "
                                                       "argument to the reason it follows from the query"))
        return
    unknown = sorted(set(derived) - set(call.arguments))
    if unknown:
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where} ({call.label}): 'derived' names arguments the call "
                                                       f"does not have: {unknown}"))
        return
    if marks is not None:
        marks.extend({"label": call.label, "parameter": name, "reason": reason.strip()}
                     for name, reason in derived.items())


def _tool_problems(steps: Sequence[Step], draft: Sample, dropped: set[str]) -> list[Problem]:
    problems = []
    known = draft.tool_names()
    for step in steps:
        for call in step:
            if call.name in dropped:
                problems.append(Problem(ProblemCode.DROPPED_TOOL,
                                        f"call {call.label} uses tool {call.name!r}, which is ticked to be dropped"))
            elif call.name not in known:
                problems.append(Problem(ProblemCode.UNKNOWN_TOOL, f"call {call.label} uses unknown tool "
                                        f"{call.name!r}; tools: {', '.join(sorted(known))}"))
    return problems


def _entry_problems(draft: Sample, deletions: dict[str, set[Path]], unreadable: list[str]) -> list[Problem]:
    problems = [Problem(ProblemCode.UNKNOWN_ENTRY, f"response entry {text!r} cannot be read") for text in unreadable]
    if not deletions:
        return problems
    known = {(entry.label, entry.path) for entry in response_entries(draft.all_calls(), limit=10**9)}
    for label, paths in deletions.items():
        for path in sorted(paths, key=str):
            if (label, path) not in known:
                problems.append(Problem(ProblemCode.UNKNOWN_ENTRY,
                                        f"response entry {label}{_spell(path)} is not in the draft"))
    return problems


def _spell(path: Path) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def match_kept_calls(steps: Sequence[Step], draft_calls: Sequence[Call]) -> dict[str, Call]:
    """Gold label -> the draft call it is identical to (same name and arguments), preferring the
    draft call with the same label; each draft call is kept at most once."""
    available = [call for call in draft_calls if "response" in call.model_fields_set]
    kept: dict[str, Call] = {}
    gold_calls = [call for step in steps for call in step]
    for call in gold_calls:  # same label first: the annotator left the call alone
        match = next((d for d in available if d.label == call.label and _same_call(d, call)), None)
        if match is not None:
            kept[call.label] = match
            available.remove(match)
    for call in gold_calls:  # then relabelled but otherwise identical calls
        if call.label in kept:
            continue
        match = next((d for d in available if _same_call(d, call)), None)
        if match is not None:
            kept[call.label] = match
            available.remove(match)
    return kept


def _same_call(left: Call, right: Call) -> bool:
    return left.name == right.name and _canonical(left.arguments) == _canonical(right.arguments)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _with_kept_response(call: Call, kept_from: dict[str, Call], deletions: dict[str, set[Path]]) -> Call:
    source = kept_from.get(call.label)
    if source is None:
        return call
    response = without_entries(source.response, deletions.get(source.label, set()))
    return call.model_copy(update={"response": response})


# ------------------------------------------------------------------------------------ junior filling
def junior_task(candidate: Sample, template: Sample | None = None,
                model_version: str = DEFAULT_MODEL_VERSION, catalog: ToolCatalog | None = None) -> dict[str, Any]:
    """The task asking a junior to fill a variant's blanks; `template` (the gold sample it varies)
    is shown with its arguments and responses, the worked example the blanks follow."""
    arguments_json = format_arguments_json(candidate.calls, candidate.tools)
    candidate_dict = canonical_dict(candidate)
    data = {
        "kind": JUNIOR_KIND,
        "sample_id": candidate.id,
        "draft_hash": content_hash(candidate_dict),
        "draft": {key: value for key, value in candidate_dict.items() if key != "tools"},
        "tools": pack_tools(candidate.tools, catalog),
        "variant_html": render.variant_html(candidate, template),
        "feedback_html": "",
        "arguments_json": arguments_json,
    }
    data.update(listing_fields(candidate))
    prediction = {"model_version": model_version,
                  "result": [textarea_result("arguments_json", JUNIOR_OBJECT, arguments_json)]}
    return {"data": data, "predictions": [prediction]}


def format_arguments_json(steps: Sequence[Sequence[Call]], tools: Sequence[Any]) -> str:
    """{label: arguments} in path order, with every required argument the call lacks set to null
    (the blanks the junior fills)."""
    required = {tool.name: list(tool.parameters.get("required", [])) for tool in tools}
    lines = []
    for step in steps:
        for call in step:
            arguments = dict(call.arguments)
            for name in required.get(call.name, []):
                arguments.setdefault(name, None)
            lines.append(f"  {json.dumps(call.label)}: {json.dumps(arguments, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}" if lines else "{}"


@dataclass(frozen=True)
class JuniorAnswer:
    verdict: str | None
    arguments_text: str | None
    notes: str = ""

    @classmethod
    def from_result(cls, result: Sequence[Any]) -> "JuniorAnswer":
        values = read_result(result)
        return cls(_single(values, "verdict"), values.get("arguments_json"), values.get("notes", "") or "")


def build_junior_correction(candidate: Sample, answer: JuniorAnswer) -> Correction:
    correction = Correction(candidate, None, verdict=answer.verdict, notes=answer.notes)
    problems = correction.problems
    if answer.verdict is None and answer.arguments_text is None:
        problems.append(Problem(ProblemCode.EMPTY_SUBMISSION, "the submission is empty: nothing was filled in"))
        return correction
    if answer.verdict is None:
        problems.append(Problem(ProblemCode.NO_VERDICT, "no verdict chosen (filled or cannot_fill)"))
    if answer.verdict == "cannot_fill":
        problems.append(Problem(ProblemCode.REJECTED_BY_ANNOTATOR, "the annotator could not fill this variant"
                                + (f": {answer.notes.strip()}" if answer.notes.strip() else "")))
        return correction
    value, problem = parse_json_field(answer.arguments_text, "the arguments JSON")
    if problem is not None:
        problems.append(problem)
        return correction
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        problems.append(Problem(ProblemCode.BAD_SHAPE,
                                "the arguments JSON must be an object {call label: {argument: value}}"))
        return correction
    labels = [call.label for call in candidate.all_calls()]
    missing = [label for label in labels if label not in value]
    extra = [label for label in value if label not in labels]
    if missing or extra:
        problems.append(Problem(ProblemCode.PATH_CHANGED, "the path is fixed: "
                                + "; ".join(part for part in (f"missing calls {missing}" if missing else "",
                                                              f"unknown calls {extra}" if extra else "") if part)))
        return correction
    for label, arguments in value.items():
        for name, filled in arguments.items():
            if filled is None:
                problems.append(Problem(ProblemCode.BAD_ARGUMENTS, f"call {label}: argument {name!r} is still null"))
    if problems:
        return correction
    steps = [[call.model_copy(update={"arguments": value[call.label]}) for call in step] for step in candidate.calls]
    bare_steps = [[Call(label=c.label, name=c.name, arguments=c.arguments) for c in step] for step in steps]
    correction.kept_from = match_kept_calls(bare_steps, candidate.all_calls())
    gold_steps = [[_with_kept_response(call, correction.kept_from, {}) for call in step] for step in bare_steps]
    correction.sample = candidate.model_copy(update={"calls": gold_steps})
    return correction


# ---------------------------------------------------------------------------------------- QA review
QA_KIND = "fcbench-qa-review"


def qa_review_task(gold: Sample, changes: Sequence[str], catalog: ToolCatalog | None = None) -> dict[str, Any]:
    """A second senior's check of a gold sample (label_config/qa_review.xml): the gold path and the
    draft-vs-gold changes QA classified (`annotate.review.qa.SampleDiff.changes`). No prediction: the
    reviewer judges, nothing is pre-filled."""
    gold_dict = canonical_dict(gold)
    return {"data": {"kind": QA_KIND, "sample_id": gold.id, "draft_hash": content_hash(gold_dict),
                     "draft": {key: value for key, value in gold_dict.items() if key != "tools"},
                     "tools": pack_tools(gold.tools, catalog), "review_html": render.review_html(gold, changes)}}
