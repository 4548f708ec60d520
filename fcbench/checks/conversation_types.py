"""Does a conversation show the conversation type (CONFETTI complexity) its scenario asks for? (pure)

CONFETTI publishes no machine rule: its annotators label each dialog. fcbench checks the part of
each type's README definition that can be observed in the gold messages (turns, calls, which calls
failed, the dialog acts) and leaves the rest (is the request *really* ambiguous?) to the annotator's
tick in stage2 (`complexity_missing`). A type asked for whose rule fails is a reject
`type_missing.<type>` in stage1 (the draft), in stage2 pull (sent back) and in the filter (gold).
Types may co-occur: a rule says whether its type occurs, never that another does not.

The rules, as `RULES` states them (README repeats them):
- follow_up: after an agent turn that answers with a call's result (its last call succeeded, it
  informs), a later user turn gets an answer that informs or makes a new successful call.
- goal_correction: the user replaces a value they stated: (a) a tool is called again after a user
  turn with an argument changed to a value that turn states; or (b) the agent checks first (a turn
  that seeks information, no call), and the user's answer states a date a later call uses, where an
  earlier user turn stated another date no call uses.
- goal_switching: the scenario's first required API (the goal dropped) never succeeds, its last
  required API (the new goal) succeeds, first called after the second user turn or later.
- goal_stacking: two or more required APIs each succeed, and the second goal was asked before the
  first was done (every user turn between them answers an agent question).
- ambiguous_goal: the agent's first turn asks (seek information) and calls nothing; a call follows.
- implicit_goal: the agent's first turn calls nothing and asks (infers the goal, or asks what the
  user needs); a required API succeeds later. (The machine part is ambiguous_goal's: whether the
  opening described a situation or an unclear request is the annotator's tick.)
- overfilled_parameters: a user turn that states a call's values also says something (a sentence of
  five or more words) that states none of the conversation's call values.
- underfilled_parameters: an agent turn asks (seek, no call) and the user's answer states a value a
  later call uses that no user turn before the question stated.
- execution_exception: a call fails (an API error, or an author's chosen error), and the agent
  handles it: the same or next agent turn informs, asks or rejects, or the tool later succeeds.
- confirmation: an agent turn asks (seek, no call) stating a value of the calls that follow the
  user's answer, the answer adds no value of its own to them (it approves), and they succeed.
- goal_not_supported: an agent turn rejects a request (agent_reject_request) and calls nothing.
- failed_conversation: no call of a required API succeeds, some call was attempted, and after the
  last failure an agent turn informs or rejects (the user is told).
- no_target: no requirement beyond the checks every conversation passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from fcbench.checks.derivation import dates_spelled_in
from fcbench.checks.grounding import text_supports
from fcbench.conversation import agent_turns, failed_labels, scenario_of
from fcbench.references import parse_reference
from fcbench.sample import Call, Sample

SEEK, INFORM, REJECT = "agent_seek_information", "agent_inform_user", "agent_reject_request"
MIN_EXTRA_WORDS = 5  # overfilled: a sentence this long that feeds no call is an extra detail
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")

RULES: dict[str, str] = {
    "follow_up": "after an answer with a call's result, a later user turn gets information or a new successful call",
    "goal_correction": "the user replaces a value they stated: a call repeated with that argument changed, or the agent "
                       "checks first and the user's answer gives the date used instead of an earlier one no call uses",
    "goal_switching": "the first required API (the dropped goal) never succeeds; the last one (the new goal) succeeds, "
                      "asked after the opening turn",
    "goal_stacking": "two or more required APIs succeed, the second asked before the first was done",
    "ambiguous_goal": "the agent's first turn asks for clarification (seek information, no call); a call follows",
    "implicit_goal": "the agent's first turn calls nothing and asks (it infers the goal or asks what is needed); a "
                     "required API succeeds later",
    "overfilled_parameters": "a user turn stating a call's values also says something (5+ words) no call uses",
    "underfilled_parameters": "the agent asks (seek, no call) and the answer gives a value a later call uses that no "
                              "earlier user turn gave",
    "execution_exception": "a call fails and the agent handles it (informs, asks or rejects, or the tool later succeeds)",
    "confirmation": "the agent asks for approval stating the values of the calls that follow; the user's answer adds "
                    "no value; the calls succeed",
    "goal_not_supported": "an agent turn rejects a request (agent_reject_request) and calls nothing",
    "failed_conversation": "no required API succeeds, a call was attempted, and the user is told (inform or reject "
                           "after the last failure)",
    "no_target": "nothing beyond the checks every conversation passes",
}


@dataclass
class _Turn:
    role: str  # user | agent
    text: str
    acts: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)


@dataclass
class _View:
    """A conversation as the rules read it: turns in order, which calls failed, the tools' schemas
    and the scenario's required APIs (its goals, in the order the user brings them up)."""

    turns: list[_Turn]
    failed: set[str]
    schemas: dict[str, dict[str, Any]]
    required: list[str]

    def ok(self, call: Call) -> bool:
        return call.label not in self.failed

    def users_before(self, index: int) -> list[_Turn]:
        return [turn for turn in self.turns[:index] if turn.role == "user"]

    def next_agent(self, index: int) -> tuple[int, _Turn] | None:
        return next(((i, t) for i, t in enumerate(self.turns) if i > index and t.role == "agent"), None)

    def calls_after(self, index: int) -> list[Call]:
        return [call for turn in self.turns[index + 1:] if turn.role == "agent" for call in turn.calls]

    def literals(self, call: Call) -> list[tuple[str, Any]]:
        """(parameter, value) of the call's literal scalar arguments (references left out)."""
        return [(name, value) for name, value in call.arguments.items()
                if isinstance(value, (str, int, float)) and not isinstance(value, bool)
                and not (isinstance(value, str) and parse_reference(value) is not None)]

    def supports(self, text: str, call: Call, parameter: str, value: Any) -> bool:
        schema = (self.schemas.get(call.name) or {}).get(parameter)
        return text_supports(text, value, schema if isinstance(schema, dict) else {}, list(call.arguments.values()))


def _view(sample: Sample) -> _View:
    by_label = {call.label: call for call in sample.all_calls()}
    starts = {turn.start: turn for turn in agent_turns(sample.messages)}
    turns: list[_Turn] = []
    index = 0
    while index < len(sample.messages):
        message = sample.messages[index]
        if message.get("role") == "user":
            turns.append(_Turn("user", str(message.get("content") or "")))
            index += 1
        elif index in starts:
            turn = starts[index]
            calls = [by_label[raw["id"]] for step in turn.steps for raw in step if raw.get("id") in by_label]
            turns.append(_Turn("agent", turn.reply, turn.dialog_acts, calls))
            index += len(turn.messages)
        else:
            index += 1
    schemas = {tool.name: (tool.parameters.get("properties") or {}) for tool in sample.tools}
    try:
        required = list(scenario_of(sample).required_apis)
    except (KeyError, TypeError, ValueError):
        required = []
    return _View(turns, failed_labels(sample), schemas, required)


# ------------------------------------------------------------------------------------------ rules
def _follow_up(view: _View) -> str | None:
    answered = next((i for i, turn in enumerate(view.turns) if turn.role == "agent" and turn.calls
                     and view.ok(turn.calls[-1]) and INFORM in turn.acts), None)
    if answered is None:
        return "no agent turn answers with a call's result (its last call succeeds and it informs the user)"
    for index in range(answered + 1, len(view.turns)):
        if view.turns[index].role != "user":
            continue
        reply = view.next_agent(index)
        if reply and (INFORM in reply[1].acts or any(view.ok(call) for call in reply[1].calls)):
            return None
    return "no user turn after the first answer gets information or a new call in return"


def _goal_correction(view: _View) -> str | None:
    for index, turn in enumerate(view.turns):
        if turn.role != "user" or index == 0:
            continue
        earlier = [(call, position) for position, t in enumerate(view.turns[:index]) if t.role == "agent" for call in t.calls]
        later = view.calls_after(index)
        for new in later:  # (a) a call repeated with an argument changed to what this turn says
            for old, _ in earlier:
                if old.name == new.name and any(old.arguments.get(p) != v and view.supports(turn.text, new, p, v)
                                                 for p, v in view.literals(new)):
                    return None
        before = view.turns[index - 1]
        if before.role != "agent" or SEEK not in before.acts or before.calls:
            continue
        used = {str(v) for call in [c for t in view.turns if t.role == "agent" for c in t.calls] for _, v in view.literals(call)}
        said_before = set()
        for user in view.users_before(index):
            said_before |= dates_spelled_in(user.text) | set(_ISO_DATE.findall(user.text))
        if not said_before - used:
            continue
        for call in later:  # (b) the agent checked first; the answer gives the date used instead
            for parameter, value in view.literals(call):
                if (isinstance(value, str) and _ISO_DATE.fullmatch(value) and view.supports(turn.text, call, parameter, value)
                        and not any(view.supports(u.text, call, parameter, value) for u in view.users_before(index))):
                    return None
    return "no value the user stated is replaced by the user (no call repeated with a corrected argument, " \
           "no checked date corrected)"


def _goal_switching(view: _View) -> str | None:
    if len(view.required) < 2:
        return "a switch needs two goals: the scenario's required APIs, the dropped goal first, the new goal last"
    dropped, new = view.required[0], view.required[-1]
    calls = [(index, call) for index, turn in enumerate(view.turns) if turn.role == "agent" for call in turn.calls]
    if any(call.name == dropped and view.ok(call) for _, call in calls):
        return f"the first goal ({dropped}) is completed, not dropped"
    served = [index for index, call in calls if call.name == new and view.ok(call)]
    if not served:
        return f"the new goal ({new}) is never served (no successful call)"
    if len(view.users_before(served[0])) < 2:
        return f"the new goal ({new}) is asked in the opening turn: nothing was switched"
    return None


def _goal_stacking(view: _View) -> str | None:
    firsts: dict[str, int] = {}
    for index, turn in enumerate(view.turns):
        for call in turn.calls if turn.role == "agent" else []:
            if call.name in view.required and view.ok(call):
                firsts.setdefault(call.name, index)
    if len(firsts) < 2:
        return f"fewer than two goals are served ({', '.join(firsts) or 'none'} of the required {', '.join(view.required)})"
    first, second = sorted(firsts.values())[:2]
    for index in range(first + 1, second):
        if view.turns[index].role == "user" and SEEK not in view.turns[index - 1].acts:
            return "the second goal is asked only after the first was done (a user turn between them answers no question)"
    return None


def _ambiguous_goal(view: _View) -> str | None:
    first = view.next_agent(-1)
    if first is None or SEEK not in first[1].acts or first[1].calls:
        return "the agent's first turn does not ask for clarification (seek information, no call)"
    if not view.calls_after(first[0]):
        return "no call follows the clarification"
    return None


def _implicit_goal(view: _View) -> str | None:
    first = view.next_agent(-1)
    if first is None or first[1].calls or SEEK not in first[1].acts:
        return "the agent's first turn does not infer or ask what the user needs (seek information, no call)"
    if not any(call.name in view.required and view.ok(call) for call in view.calls_after(first[0])):
        return "the goal (a required API) is never reached"
    return None


def _overfilled(view: _View) -> str | None:
    calls = view.calls_after(-1)
    for turn in view.turns:
        if turn.role != "user":
            continue
        sentences = [s for s in _SENTENCE.split(turn.text.strip()) if s]
        feeding = [any(view.supports(s, call, p, v) for call in calls for p, v in view.literals(call)) for s in sentences]
        if any(feeding) and any(not feeds and len(s.split()) >= MIN_EXTRA_WORDS for s, feeds in zip(sentences, feeding)):
            return None
    return "no user turn gives details no call uses beside the values it states"


def _underfilled(view: _View) -> str | None:
    for index, turn in enumerate(view.turns):
        if turn.role != "agent" or SEEK not in turn.acts or turn.calls or index + 1 >= len(view.turns):
            continue
        answer = view.turns[index + 1]
        if answer.role != "user":
            continue
        earlier = view.users_before(index)
        for call in view.calls_after(index + 1):
            for parameter, value in view.literals(call):
                if view.supports(answer.text, call, parameter, value) and \
                        not any(view.supports(user.text, call, parameter, value) for user in earlier):
                    return None
    return "no value a call uses is missing from the request and given only when the agent asks for it"


def _execution_exception(view: _View) -> str | None:
    for index, turn in enumerate(view.turns):
        for call in turn.calls if turn.role == "agent" else []:
            if view.ok(call):
                continue
            following = view.next_agent(index)
            acts = set(turn.acts) | (set(following[1].acts) if following else set())
            retried = any(other.name == call.name and view.ok(other) for other in view.calls_after(index))
            if acts & {INFORM, SEEK, REJECT} or retried:
                return None
            return f"{call.label} ({call.name}) fails and the agent does not handle it"
    return "no call fails"


def _confirmation(view: _View) -> str | None:
    for index, turn in enumerate(view.turns):
        if turn.role != "agent" or SEEK not in turn.acts or turn.calls or index + 2 >= len(view.turns):
            continue
        answer, acting = view.turns[index + 1], view.turns[index + 2]
        if answer.role != "user" or acting.role != "agent" or not acting.calls or not all(map(view.ok, acting.calls)):
            continue
        values = [(call, p, v) for call in acting.calls for p, v in view.literals(call)]
        proposed = any(view.supports(turn.text, call, p, v) for call, p, v in values)
        earlier = [turn.text, *(user.text for user in view.users_before(index))]
        adds = any(view.supports(answer.text, call, p, v) and not any(view.supports(t, call, p, v) for t in earlier)
                   for call, p, v in values)
        if proposed and not adds:
            return None
    return "no agent turn asks the user to approve the calls it then makes (stating their values)"


def _goal_not_supported(view: _View) -> str | None:
    for index, turn in enumerate(view.turns):
        if turn.role == "agent" and REJECT in turn.acts and not turn.calls and index > 0:
            return None
    return "no agent turn rejects a request (agent_reject_request) without calling"


def _failed_conversation(view: _View) -> str | None:
    calls = [(index, call) for index, turn in enumerate(view.turns) if turn.role == "agent" for call in turn.calls]
    achieved = [call.name for _, call in calls if call.name in view.required and view.ok(call)]
    if achieved:
        return f"the goal is achieved: {achieved[0]} succeeds"
    if not calls:
        return "no call is attempted"
    failures = [index for index, call in calls if not view.ok(call)]
    last = failures[-1] if failures else calls[-1][0]
    if not any(turn.role == "agent" and {INFORM, REJECT} & set(turn.acts) for turn in view.turns[last:]):
        return "the user is never told that the goal failed (no inform or reject after the last failure)"
    return None


_CHECKS: dict[str, Callable[[_View], str | None]] = {
    "follow_up": _follow_up, "goal_correction": _goal_correction, "goal_switching": _goal_switching,
    "goal_stacking": _goal_stacking, "ambiguous_goal": _ambiguous_goal, "implicit_goal": _implicit_goal,
    "overfilled_parameters": _overfilled, "underfilled_parameters": _underfilled,
    "execution_exception": _execution_exception, "confirmation": _confirmation,
    "goal_not_supported": _goal_not_supported, "failed_conversation": _failed_conversation,
    "no_target": lambda view: None,
}
assert set(_CHECKS) == set(RULES)


def type_missing(sample: Sample, complexity: str) -> str | None:
    """Why the conversation does not show `complexity` (None: it does)."""
    check = _CHECKS.get(complexity)
    if check is None:
        return f"unknown conversation type {complexity!r}"
    return check(_view(sample))


def missing_types(sample: Sample, complexities: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """(type, why) for each type asked for (default: the scenario's) that the conversation does not show."""
    if complexities is None:
        complexities = scenario_of(sample).complexities
    view = _view(sample)
    missing = []
    for name in complexities:
        check = _CHECKS.get(name)
        why = f"unknown conversation type {name!r}" if check is None else check(view)
        if why is not None:
            missing.append((name, why))
    return missing


def type_reason(complexity: str) -> str:
    """The reject reason of a type that is asked for and missing."""
    return f"type_missing.{complexity}"


def rules_table() -> Mapping[str, str]:
    return dict(RULES)
