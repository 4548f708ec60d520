"""Task <-> conversation for stage2 of `kind: conversation` pipelines (label_config/
stage2_conversation.xml). Pure: no server, no files; the environment is handed in.

Push: a drafted conversation becomes a task carrying the whole draft (tools packed by catalog
hash, as annotate.tasks.single does), the scenario and the conversation as HTML, and a prediction that
pre-fills `conversation_json` (the editable turns) and the complexities the draft was written to show.

Pull: the annotator's answer becomes a gold conversation, or the problems that send it back:
- verdict: none chosen (`no_verdict`), or `reject` (the annotator's decision, not an error);
- conversation_json: invalid JSON (`bad_json`), not a list of turns (`bad_shape`), every turn
  deleted or no user turn (`empty_conversation`), an agent turn with no dialog act (`no_dialog_act`)
  or an unknown one (`unknown_dialog_act`), calls without `agent_function_calling` or the reverse
  (`dialog_act_mismatch`);
- calls: an unknown tool (`unknown_tool`), arguments that do not fit the tool's schema
  (`bad_arguments`), a call that fails when re-executed in order (`execution_failed`) unless the
  annotator tagged `execution_exception` (then the error is the response the agent handles);
- success or error, the author's choice per call: a call ticked under "calls that fail"
  (`call_errors`, one checkbox per drafted call, by its label var_N = the N-th call) or written with
  `"error": "message"` in the JSON is not executed: it answers `{"error": message}` (the default
  message when none is written), and the conversation records the choice (`chosen_errors`) so the
  filter reproduces it; a ticked var_N that is now another tool's call (`call_error_mismatch`);
- complexities: one the scenario requires that is not ticked as occurring (`complexity_missing`),
  or whose acceptance rule the conversation fails (`type_missing`, fcbench.checks.conversation_types).
Every call is re-executed in order through the pipeline's environment (state carried along), so
a response is always what the API gives for the edited arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import Any, Callable, Sequence

from annotate.review.checks import schema_problems
from annotate.tasks.problems import Problem, ProblemCode
from annotate.tasks.render import compact_json, tools_html
from annotate.tasks.single import (ToolCatalog, canonical_dict, choices_result, content_hash, pack_tools, read_result,
                            textarea_result)
from fcbench.checks.conversation_types import missing_types
from fcbench.conversation import (COMPLEXITIES, DEFAULT_SIMULATED_ERROR, DIALOG_ACT_TITLES, DIALOG_ACTS, META, Scenario,
                                  agent_turns, chosen_errors_of, conversation_environment, conversation_sample,
                                  error_response, scenario_of, tool_call, tool_result)
from fcbench.environments import Environment
from fcbench.environments.chosen import call_step_with_chosen_errors
from fcbench.sample import Sample, Tool

CONVERSATION_KIND = "fcbench-stage2-conversation"
CONVERSATION_OBJECT = "conversation"  # the HyperText every control points at
MAX_RESPONSE_CHARS = 1500


# ------------------------------------------------------------------------------------------ push
def editable_turns(sample: Sample) -> list[dict[str, Any]]:
    """The conversation as the annotator edits it: user turns, and agent turns with their calls
    (a step of one call as an object, a parallel step as a list) and dialog acts."""
    turns: list[dict[str, Any]] = []
    chosen = chosen_errors_of(sample)
    by_start = {turn.start: turn for turn in agent_turns(sample.messages)}
    index = 0
    while index < len(sample.messages):
        message = sample.messages[index]
        if message.get("role") == "user":
            turns.append({"user": message.get("content") or ""})
            index += 1
            continue
        turn = by_start.get(index)
        if turn is None:
            index += 1
            continue
        calls: list[Any] = []
        for step in turn.steps:
            items = [{"name": raw["function"]["name"], "arguments": json.loads(raw["function"].get("arguments") or "{}"),
                      **({"error": chosen[raw["id"]]} if raw.get("id") in chosen else {})}
                     for raw in step]
            calls.append(items[0] if len(items) == 1 else items)
        entry: dict[str, Any] = {"agent": turn.reply, "acts": turn.dialog_acts}
        if calls:
            entry["calls"] = calls
        turns.append(entry)
        index += len(turn.messages)
    return turns


def format_turns(turns: Sequence[dict[str, Any]]) -> str:
    """One turn per line block: easy to edit, still one JSON value."""
    if not turns:
        return "[]"
    return "[\n" + ",\n".join("  " + json.dumps(turn, ensure_ascii=False) for turn in turns) + "\n]"


def scenario_html(scenario: Scenario, tools: Sequence[Tool]) -> str:
    required = ", ".join(scenario.required_apis)
    optional = ", ".join(scenario.optional_apis) or "none"
    complexities = ", ".join(scenario.complexities)
    return (
        '<div class="fcb">'
        f'<div class="muted">scenario {escape(scenario.id)}</div>'
        f"<h3>Scenario</h3><div>{escape(scenario.description)}</div>"
        f'<div class="muted">reference time {escape(scenario.reference_time)} · at least {scenario.min_turns} user turns'
        f" · required complexity: <b>{escape(complexities)}</b></div>"
        f"<div>required APIs: <b>{escape(required)}</b>; optional: {escape(optional)}</div>"
        f"<h3>APIs</h3>{tools_html(tools)}"
        "</div>"
    )


def conversation_html(sample: Sample) -> str:
    failed = set(sample.meta.get(META, {}).get("failed_calls") or [])
    chosen = chosen_errors_of(sample)
    parts = ['<div class="fcb"><h3>Drafted conversation</h3>']
    responses = {message.get("tool_call_id"): message.get("content") for message in sample.messages
                 if message.get("role") == "tool"}
    number = 0
    for message in sample.messages:
        role = message.get("role")
        if role == "user":
            number += 1
            parts.append(f'<div class="turn user"><b>User {number}</b>: {escape(str(message.get("content") or ""))}</div>')
        elif role == "assistant":
            body = ""
            for raw in message.get("tool_calls") or []:
                name, call_id = raw["function"]["name"], raw.get("id", "")
                css = "call failed" if call_id in failed else "call"
                response = str(responses.get(call_id, ""))
                try:
                    response = compact_json(json.loads(response))
                except (TypeError, ValueError):
                    pass
                if len(response) > MAX_RESPONSE_CHARS:
                    response = response[:MAX_RESPONSE_CHARS] + f"… ({len(response) - MAX_RESPONSE_CHARS} more characters)"
                outcome = ("error, chosen by the author (not executed)" if call_id in chosen
                           else "error, returned by the API" if call_id in failed else "success")
                body += (f'<div class="{css}"><b>{escape(call_id)}</b> {escape(name)}'
                         f'<pre>{escape(raw["function"].get("arguments") or "{}")}</pre>'
                         f'<div class="muted">outcome: {escape(outcome)} · response</div><pre>{escape(response)}</pre></div>')
            if message.get("content"):
                body += f"<div>{escape(str(message['content']))}</div>"
            acts = ", ".join(DIALOG_ACT_TITLES.get(act, act) for act in message.get("dialog_acts") or [])
            if acts:
                body += f'<div class="acts">dialog acts: {escape(acts)}</div>'
            parts.append(f'<div class="turn agent"><b>Agent</b>{body}</div>')
    parts.append("</div>")
    return "".join(parts)


def call_options(sample: Sample) -> list[dict[str, str]]:
    """One checkbox per call of the draft for `<Choices name="call_errors" value="$call_options">`:
    the value is the call's label (var_N, the N-th call of the conversation)."""
    options = []
    for number, turn in enumerate(agent_turns(sample.messages), start=1):
        for step in turn.steps:
            for raw in step:
                arguments = raw["function"].get("arguments") or "{}"
                shown = arguments if len(arguments) <= 80 else arguments[:80] + "…"
                options.append({"value": raw["id"], "html": f'<span class="fcb-opt"><b>{escape(raw["id"])}</b> '
                                f'{escape(raw["function"]["name"])} <span class="muted">(agent turn {number}) '
                                f'{escape(shown)}</span></span>'})
    return options


def conversation_task(draft: Sample, catalog: ToolCatalog | None = None, model_version: str = "draft") -> dict[str, Any]:
    draft_dict = canonical_dict(draft)
    scenario = scenario_of(draft)
    turns_text = format_turns(editable_turns(draft))
    data = {
        "kind": CONVERSATION_KIND,
        "sample_id": draft.id,
        "draft_hash": content_hash(draft_dict),
        "draft": {key: value for key, value in draft_dict.items() if key != "tools"},
        "tools": pack_tools(draft.tools, catalog),
        "feedback_html": "",
        "scenario_html": scenario_html(scenario, draft.tools),
        "conversation_html": conversation_html(draft),
        "call_options": call_options(draft),
    }
    result = [textarea_result("conversation_json", CONVERSATION_OBJECT, turns_text),
              choices_result("complexities", CONVERSATION_OBJECT, scenario.complexities)]
    chosen = chosen_errors_of(draft)
    if chosen:  # the draft's chosen failures, pre-ticked
        result.append(choices_result("call_errors", CONVERSATION_OBJECT, list(chosen)))
    return {"data": data, "predictions": [{"model_version": model_version, "result": result}]}


# ------------------------------------------------------------------------------------------ pull
@dataclass(frozen=True)
class ConversationAnswer:
    verdict: str | None
    conversation_text: str | None
    complexities: tuple[str, ...]
    notes: str = ""
    call_errors: tuple[str, ...] = ()  # labels (var_N) of the calls ticked to fail

    @classmethod
    def from_result(cls, result: Sequence[Any]) -> "ConversationAnswer":
        values = read_result(result)
        verdicts = values.get("verdict") or []
        return cls(verdicts[0] if verdicts else None, values.get("conversation_json"),
                   tuple(values.get("complexities") or ()), values.get("notes", "") or "",
                   tuple(values.get("call_errors") or ()))


@dataclass
class ConversationCorrection:
    draft: Sample
    sample: Sample | None
    problems: list[Problem] = field(default_factory=list)
    verdict: str | None = None
    complexities: tuple[str, ...] = ()
    notes: str = ""

    @property
    def flags(self) -> tuple[str, ...]:  # what provenance records as the annotator's tags
        return self.complexities


@dataclass
class _Turn:
    role: str  # user | agent
    text: str
    acts: list[str] = field(default_factory=list)
    steps: list[list[tuple[str, dict[str, Any]]]] = field(default_factory=list)
    errors: list[list[str | None]] = field(default_factory=list)  # per step, per call: the error written in the JSON


def parse_turns(text: str | None, tools: dict[str, Tool], problems: list[Problem]) -> list[_Turn] | None:
    """The edited turns, or None with the problems that stop the conversation being built."""
    if text is None or not text.strip():
        problems.append(Problem(ProblemCode.EMPTY_CONVERSATION, "the conversation is empty: every turn was deleted"))
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(Problem(ProblemCode.BAD_JSON, f"the conversation JSON does not parse: {exc.msg} at line "
                                f"{exc.lineno} column {exc.colno}"))
        return None
    if not isinstance(value, list):
        problems.append(Problem(ProblemCode.BAD_SHAPE, "the conversation JSON must be a list of turns"))
        return None
    turns: list[_Turn] = []
    for number, raw in enumerate(value, start=1):
        turn = _parse_turn(raw, number, tools, problems)
        if turn is not None:
            turns.append(turn)
    if not any(turn.role == "user" for turn in turns):
        problems.append(Problem(ProblemCode.EMPTY_CONVERSATION, "the conversation has no user turn"))
    elif turns and turns[0].role != "user":
        problems.append(Problem(ProblemCode.BAD_SHAPE, "the conversation must start with a user turn"))
    for previous, turn in zip(turns, turns[1:]):
        if previous.role == turn.role == "user":
            problems.append(Problem(ProblemCode.BAD_SHAPE, "two user turns follow each other: the agent must answer between them"))
            break
    if turns and turns[-1].role != "agent":
        problems.append(Problem(ProblemCode.BAD_SHAPE, "the conversation must end with an agent turn"))
    return turns


def _parse_turn(raw: Any, number: int, tools: dict[str, Tool], problems: list[Problem]) -> _Turn | None:
    where = f"turn {number}"
    if not isinstance(raw, dict) or len({"user", "agent"} & set(raw)) != 1:
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where} must be {{\"user\": text}} or {{\"agent\": text, "
                                "\"acts\": [...], \"calls\": [...]}}"))
        return None
    if "user" in raw:
        extra = sorted(set(raw) - {"user"})
        text = raw["user"]
        if extra or not isinstance(text, str) or not text.strip():
            problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where}: a user turn is {{\"user\": non-empty text}}"
                                    + (f", unexpected keys {extra}" if extra else "")))
            return None
        return _Turn("user", text.strip())
    extra = sorted(set(raw) - {"agent", "acts", "calls"})
    if extra:
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where}: unexpected keys {extra}"))
    text = raw.get("agent")
    if not isinstance(text, str):
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where}: the agent's text must be a string (may be empty)"))
        return None
    acts = raw.get("acts")
    if not isinstance(acts, list) or not acts:
        problems.append(Problem(ProblemCode.NO_DIALOG_ACT, f"{where}: tag the agent turn with at least one dialog act "
                                f"({', '.join(DIALOG_ACTS)})"))
        acts = []
    unknown = [act for act in acts if act not in DIALOG_ACTS]
    if unknown:
        problems.append(Problem(ProblemCode.UNKNOWN_DIALOG_ACT, f"{where}: unknown dialog act {unknown[0]!r}; "
                                f"known: {', '.join(DIALOG_ACTS)}"))
    steps, errors = _parse_calls(raw.get("calls", []), where, tools, problems)
    known_acts = [act for act in dict.fromkeys(acts) if act in DIALOG_ACTS]
    if steps and "agent_function_calling" not in known_acts and acts:
        problems.append(Problem(ProblemCode.DIALOG_ACT_MISMATCH, f"{where} makes calls but is not tagged "
                                "agent_function_calling"))
    if not steps and "agent_function_calling" in known_acts:
        problems.append(Problem(ProblemCode.DIALOG_ACT_MISMATCH, f"{where} is tagged agent_function_calling but "
                                "makes no call"))
    if not text.strip() and not steps:
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where}: the agent turn says nothing and calls nothing"))
    return _Turn("agent", text.strip(), known_acts, steps, errors)


def _parse_calls(raw: Any, where: str, tools: dict[str, Tool], problems: list[Problem]
                 ) -> tuple[list[list[tuple[str, dict[str, Any]]]], list[list[str | None]]]:
    if not isinstance(raw, list):
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"{where}: 'calls' must be a list"))
        return [], []
    steps, errors = [], []
    for number, item in enumerate(raw, start=1):
        items = item if isinstance(item, list) else [item]
        step, step_errors = [], []
        for call in items:
            spot = f"{where} call {number}"
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                    or set(call) - {"name", "arguments", "error"}:
                problems.append(Problem(ProblemCode.BAD_SHAPE, f"{spot} must be {{\"name\": tool, \"arguments\": {{...}}}}"
                                        " (and \"error\": message, for a call the author chooses to fail)"))
                continue
            error = call.get("error")
            if error is not None and not isinstance(error, str):
                problems.append(Problem(ProblemCode.BAD_SHAPE, f"{spot} ({call['name']}): 'error' must be the error "
                                        "message (text) the failing call answers"))
                continue
            arguments = call.get("arguments", {})
            if not isinstance(arguments, dict):
                problems.append(Problem(ProblemCode.BAD_SHAPE, f"{spot} ({call['name']}): 'arguments' must be an object"))
                continue
            tool = tools.get(call["name"])
            if tool is None:
                problems.append(Problem(ProblemCode.UNKNOWN_TOOL, f"{spot} uses unknown tool {call['name']!r}; tools: "
                                        f"{', '.join(sorted(tools))}"))
                continue
            for message in schema_problems(arguments, tool):
                problems.append(Problem(ProblemCode.BAD_ARGUMENTS, f"{spot} ({tool.name}): {message}"))
            step.append((tool.name, arguments))
            step_errors.append(error.strip() or DEFAULT_SIMULATED_ERROR if error is not None else None)
        if step:
            steps.append(step)
            errors.append(step_errors)
    return steps, errors


def build_conversation(draft: Sample, answer: ConversationAnswer,
                       environment: Callable[[], Environment | None]) -> ConversationCorrection:
    """The gold conversation from the annotator's answer (every call re-executed in order)."""
    correction = ConversationCorrection(draft, None, verdict=answer.verdict, complexities=answer.complexities,
                                        notes=answer.notes)
    problems = correction.problems
    if answer.verdict is None and answer.conversation_text is None:
        problems.append(Problem(ProblemCode.EMPTY_SUBMISSION, "the submission is empty: nothing was filled in"))
        return correction
    if answer.verdict is None:
        problems.append(Problem(ProblemCode.NO_VERDICT, "no verdict chosen (accept, fix or reject)"))
    if answer.verdict == "reject":
        problems.append(Problem(ProblemCode.REJECTED_BY_ANNOTATOR, "the annotator rejected the conversation"
                                + (f": {answer.notes.strip()}" if answer.notes.strip() else "")))
        return correction
    scenario = scenario_of(draft)
    unknown = [name for name in answer.complexities if name not in COMPLEXITIES]
    if unknown:
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"unknown complexity {unknown[0]!r}"))
    # no_target asks for nothing to occur: an annotator who unticks it has nothing to send back
    missing = [name for name in scenario.complexities if name not in answer.complexities and name != "no_target"]
    if missing:
        problems.append(Problem(ProblemCode.COMPLEXITY_MISSING, f"the scenario requires {', '.join(missing)}, which "
                                "is not ticked as occurring: make the conversation show it, or reject it"))
    tools = {tool.name: tool for tool in draft.tools}
    turns = parse_turns(answer.conversation_text, tools, problems)
    if turns is None or problems:
        return correction
    user_count = sum(turn.role == "user" for turn in turns)
    if user_count < scenario.min_turns:
        problems.append(Problem(ProblemCode.TOO_FEW_TURNS, f"{user_count} user turns; the scenario asks for at least "
                                f"{scenario.min_turns}"))
        return correction
    _tick_chosen_errors(turns, answer.call_errors, draft, problems)
    if problems:
        return correction
    opened = environment() if any(turn.steps for turn in turns) else None
    if any(turn.steps for turn in turns) and opened is None:
        problems.append(Problem(ProblemCode.NO_RESPONSE, "the pipeline declares no environment to execute the calls in"))
        return correction
    session = conversation_environment(opened) if opened is not None else None
    messages, failed, chosen = _messages(turns, session, "execution_exception" in answer.complexities, problems)
    if problems:
        return correction
    meta = dict(draft.meta.get(META, {}))
    sample = conversation_sample(draft.id, scenario, messages, draft.tools, draft.provenance, failed,
                                 {key: value for key, value in meta.items()
                                  if key not in ("scenario", "failed_calls", "complexities", "chosen_errors")},
                                 occurring=list(answer.complexities), chosen_errors=chosen)
    for name, why in missing_types(sample, scenario.complexities):
        problems.append(Problem(ProblemCode.TYPE_MISSING, f"the scenario requires {name}, but the conversation does "
                                f"not show it: {why}"))
    if not problems:
        correction.sample = sample
    return correction


def _tick_chosen_errors(turns: Sequence[_Turn], ticked: Sequence[str], draft: Sample, problems: list[Problem]) -> None:
    """Calls ticked under "calls that fail" (var_N: the N-th call) get the default error message,
    unless their JSON writes one; a tick whose call is no longer the drafted one is a problem."""
    positions = [(turn, step, call) for turn in turns for step, calls in enumerate(turn.steps) for call in range(len(calls))]
    drafted = {call.label: call.name for call in draft.all_calls()}
    for label in ticked:
        number = int(label[4:]) if label.startswith("var_") and label[4:].isdigit() else 0
        if not 1 <= number <= len(positions):
            problems.append(Problem(ProblemCode.CALL_ERROR_MISMATCH, f"{label} is ticked to fail, but the conversation "
                                    f"has {len(positions)} calls now: untick it, or write \"error\" in the call's JSON"))
            continue
        turn, step, call = positions[number - 1]
        name = turn.steps[step][call][0]
        if drafted.get(label) not in (None, name):
            problems.append(Problem(ProblemCode.CALL_ERROR_MISMATCH, f"{label} is ticked to fail; it was {drafted[label]} "
                                    f"when pushed and is now {name}: tick the call again, or write \"error\" in its JSON"))
            continue
        if turn.errors[step][call] is None:
            turn.errors[step][call] = DEFAULT_SIMULATED_ERROR


def _messages(turns: Sequence[_Turn], environment: Environment | None, exceptions_expected: bool,
              problems: list[Problem]) -> tuple[list[dict[str, Any]], list[str], dict[str, str]]:
    messages: list[dict[str, Any]] = []
    failed: list[str] = []
    chosen: dict[str, str] = {}
    count = 0
    for turn in turns:
        if turn.role == "user":
            messages.append({"role": "user", "content": turn.text})
            continue
        start = len(messages)
        for step, errors in zip(turn.steps, turn.errors):
            labels = [f"var_{count + offset + 1}" for offset in range(len(step))]
            count += len(step)
            assert environment is not None
            outcomes = call_step_with_chosen_errors(environment, list(step), errors)
            messages.append({"role": "assistant", "content": None,
                             "tool_calls": [tool_call(label, name, arguments) for label, (name, arguments) in zip(labels, step)]})
            for label, (name, _), outcome, error in zip(labels, step, outcomes, errors):
                if outcome.ok:
                    messages.append(tool_result(label, name, outcome.response))
                    continue
                if error is not None:  # the author chose this call to fail
                    chosen[label] = error
                elif not exceptions_expected:
                    problems.append(Problem(ProblemCode.EXECUTION_FAILED, f"call {label} ({name}) failed: {outcome.error} "
                                            "(tick execution_exception if the failure is part of the conversation, or "
                                            "tick the call under \"calls that fail\" to choose its error)"))
                failed.append(label)
                messages.append(tool_result(label, name, error_response(outcome.error or "the call failed")))
        if turn.text:
            messages.append({"role": "assistant", "content": turn.text})
        last_agent = max(i for i in range(start, len(messages)) if messages[i]["role"] == "assistant")
        messages[last_agent]["dialog_acts"] = list(turn.acts)
    return messages, failed, chosen


# -------------------------------------------------------------------------------------------- QA
def conversation_changes(draft: Sample, gold: Sample) -> dict[str, int]:
    """What the annotator changed in a drafted conversation, turn by turn (turns aligned by place)."""
    before, after = editable_turns(draft), editable_turns(gold)
    changes = {"user_turns_edited": 0, "agent_turns_edited": 0, "dialog_acts_changed": 0, "calls_changed": 0,
               "turns_added": max(0, len(after) - len(before)), "turns_removed": max(0, len(before) - len(after))}
    for old, new in zip(before, after):
        if ("user" in old) != ("user" in new):
            changes["user_turns_edited" if "user" in new else "agent_turns_edited"] += 1
        elif "user" in old:
            changes["user_turns_edited"] += old["user"] != new["user"]
        else:
            changes["agent_turns_edited"] += old["agent"] != new["agent"]
            changes["dialog_acts_changed"] += sorted(old.get("acts", [])) != sorted(new.get("acts", []))
            changes["calls_changed"] += old.get("calls", []) != new.get("calls", [])
    return changes


def conversation_qa(pairs: Sequence[tuple[Sample, Sample, str | None, Sequence[str]]]) -> dict[str, Any]:
    """stage2.qa.json for conversations: totals of what annotators changed, the verdicts, the
    complexities they saw occur, and one row per gold conversation. `pairs`: (draft, gold,
    verdict, complexities ticked)."""
    totals: dict[str, int] = {"conversations_reviewed": len(pairs)}
    verdicts: dict[str, int] = {}
    complexities: dict[str, int] = {}
    samples = []
    for draft, gold, verdict, ticked in pairs:
        changes = conversation_changes(draft, gold)
        for key, value in changes.items():
            totals[key] = totals.get(key, 0) + value
        verdicts[verdict or "none"] = verdicts.get(verdict or "none", 0) + 1
        for name in ticked:
            complexities[name] = complexities.get(name, 0) + 1
        samples.append({"id": gold.id, "verdict": verdict, "complexities": list(ticked), **changes})
    return {"summary": {**totals, "verdicts": dict(sorted(verdicts.items())),
                        "complexities_occurring": dict(sorted(complexities.items()))}, "samples": samples}
