"""Each call of a conversation against what the user had said when it was made (pure).

A conversation's calls are gold turn by turn (CONFETTI's function-calling set cuts the conversation
before each of them), so a call is right only if the conversation *up to that call* supports it:
- every literal argument is stated by an earlier user turn or read from an earlier response
  (`fcbench.checks.grounding` over that history); a value the user states only in a later turn is
  `turn.stated_later` (the call anticipates what it could not know), one stated nowhere
  `grounding.ungrounded_value`;
- the call uses what the user asked *at that point*: a value the user took back before the call is
  `turn.superseded`. A correction is a user turn answering an agent turn that repeated a value
  ("you said July 6, 2026, is that right?" / "2025-02-30 is not a valid date: which date did you
  mean?") with another one ("I meant July 5, 2026"): the repeated value is taken back. Dates are
  compared whatever their spelling (ISO or "July 6, 2026").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from fcbench.checks.derivation import dates_spelled_in
from fcbench.checks.grounding import ungrounded_values
from fcbench.conversation import calls_from_messages
from fcbench.references import iter_references
from fcbench.sample import Call, Sample

STATED_LATER = "turn.stated_later"
SUPERSEDED = "turn.superseded"
UNGROUNDED = "grounding.ungrounded_value"
_ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


@dataclass(frozen=True)
class TurnProblem:
    reason: str
    label: str  # the call
    parameter: str
    value: Any
    user_turns: int  # user turns said before the call

    def describe(self) -> str:
        value = json.dumps(self.value, ensure_ascii=False)
        why = {STATED_LATER: "the user states it only after the call", SUPERSEDED: "the user took it back before the call",
               UNGROUNDED: "no earlier user turn or response states it"}[self.reason]
        return f"{self.label}.{self.parameter}={value} after user turn {self.user_turns}: {why}"


def dates_in(text: str) -> set[str]:
    """ISO dates a text states, spelled out or written ISO (an impossible ISO date included: it is
    what a user typed)."""
    return dates_spelled_in(text) | set(_ISO_DATE.findall(text))


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def taken_back(messages: Sequence[dict[str, Any]]) -> list[tuple[int, set[str]]]:
    """(index of the user turn that corrects, the dates it takes back) for every correction."""
    corrections = []
    for index, message in enumerate(messages):
        if message.get("role") != "user" or index == 0:
            continue
        previous = messages[index - 1]
        if previous.get("role") != "assistant" or previous.get("tool_calls"):
            continue
        new = dates_in(_text(message))
        old = dates_in(_text(previous)) - new
        if new and old:
            corrections.append((index, old))
    return corrections


def _literal_leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _literal_leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _literal_leaves(item)]
    return [] if isinstance(value, str) and list(iter_references(value)) else [value]


def turn_problems(sample: Sample) -> list[TurnProblem]:
    """Every argument of every call that the conversation before it does not support, in order."""
    messages = sample.messages
    steps = calls_from_messages(messages)
    corrections = taken_back(messages)
    problems: list[TurnProblem] = []
    step_index = 0
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        before = [m for m in messages[:index] if m.get("role") == "user"]
        after = [m for m in messages[index:] if m.get("role") == "user"]
        step = steps[step_index]
        probe = Sample(id=sample.id, messages=before, tools=sample.tools, calls=steps[:step_index + 1])
        labels = {call.label for call in step}
        for value in ungrounded_values(probe):
            if value.label not in labels:
                continue
            later = Sample(id=sample.id, messages=before + after, tools=sample.tools, calls=steps[:step_index + 1])
            stated_later = all((u.label, u.parameter) != (value.label, value.parameter) for u in ungrounded_values(later))
            problems.append(TurnProblem(STATED_LATER if stated_later else UNGROUNDED, value.label, value.parameter,
                                        value.value, len(before)))
        gone = {date for at, dates in corrections if at < index for date in dates}
        problems.extend(_superseded(step, gone, len(before)))
        step_index += 1
    return problems


def _superseded(step: Sequence[Call], gone: set[str], user_turns: int) -> list[TurnProblem]:
    found = []
    for call in step:
        for parameter, value in call.arguments.items():
            if any(isinstance(leaf, str) and leaf in gone for leaf in _literal_leaves(value)):
                found.append(TurnProblem(SUPERSEDED, call.label, parameter, value, user_turns))
    return found
