"""Is every literal argument value of a gold path supported by the query or an earlier response? (pure)

APIGen and ComplexFuncBench both reject paths whose arguments were invented: a value the user never
stated and no earlier call returned cannot be expected from a model. A value is grounded when:
- it is a `$label.path$` reference (it reads an earlier output by construction);
- it is the parameter's schema default, or a boolean / null (switches the tool documents);
- a string appears (case-insensitively) in the query or in an earlier response, or is a date the
  query spells another way ("August 15, 2024" grounds "2024-08-15");
- a number appears as a number in the query text or among an earlier response's values.
Lists and dicts are grounded when every leaf is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from fcbench.json_values import json_leaves
from fcbench.references import parse_reference
from fcbench.sample import Sample

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?")
_MONTHS = {name: index for index, name in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
_MONTH = r"(?P<month>" + "|".join(f"{m[:3]}(?:{m[3:]})?" for m in _MONTHS) + r")\.?"
_DAY_FIRST = re.compile(r"(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<year>\d{4})", re.I)
_MONTH_FIRST = re.compile(_MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})", re.I)


@dataclass(frozen=True)
class UngroundedValue:
    label: str  # the call
    parameter: str
    value: Any

    def describe(self) -> str:
        return f"{self.label}.{self.parameter}={json.dumps(self.value, ensure_ascii=False)}"


def query_text(sample: Sample) -> str:
    """What the user said: every user message of the conversation (and of later turns)."""
    texts = [m.get("content") for m in sample.messages if m.get("role") == "user"]
    for turn in sample.turns or []:
        texts.extend(m.get("content") for m in turn.messages if m.get("role") == "user")
    return "\n".join(text for text in texts if isinstance(text, str))


def dates_spelled_in(text: str) -> set[str]:
    """ISO dates for the dates a text spells with month names ("15 August 2024", "Aug 15, 2024")."""
    found = set()
    for pattern in (_DAY_FIRST, _MONTH_FIRST):
        for match in pattern.finditer(text):
            month = _MONTHS[next(m for m in _MONTHS if m.startswith(match.group("month").lower()[:3]))]
            try:
                found.add(date(int(match.group("year")), month, int(match.group("day"))).isoformat())
            except ValueError:
                continue
    return found


def _numbers_in(text: str) -> set[float]:
    return {float(token.replace(",", "")) for token in _NUMBER.findall(text)}


class _Evidence:
    """What the query and the responses seen so far make available."""

    def __init__(self, query: str) -> None:
        self.text = query.lower()
        self.numbers = _numbers_in(query)
        self.dates = dates_spelled_in(query)
        self.strings: set[str] = set()

    def add_response(self, response: Any) -> None:
        for leaf in json_leaves(response):
            if isinstance(leaf, str):
                self.strings.add(leaf.lower())
                self.numbers |= _numbers_in(leaf)
            elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
                self.numbers.add(leaf)  # exact: int-float comparison in a set needs no float() (10**400 overflows it)

    def supports(self, value: Any) -> bool:
        if value is None or isinstance(value, bool) or parse_reference(value) is not None:
            return True
        if isinstance(value, (int, float)):
            return value in self.numbers
        if isinstance(value, str):
            needle = value.strip().lower()
            return (not needle or needle in self.text or needle in self.strings or value in self.dates
                    or any(needle in text for text in self.strings))
        return all(self.supports(leaf) for leaf in json_leaves(value)) if isinstance(value, (list, dict)) else False


def ungrounded_values(sample: Sample) -> list[UngroundedValue]:
    """Literal argument values that neither the query nor an earlier step's responses support.
    Responses of the same step do not count: parallel calls cannot read each other."""
    evidence = _Evidence(query_text(sample))
    defaults = {
        tool.name: {name: spec.get("default") for name, spec in tool.parameters.get("properties", {}).items()
                    if isinstance(spec, dict) and "default" in spec}
        for tool in sample.tools
    }
    found: list[UngroundedValue] = []
    for step in sample.all_steps():
        for call in step:
            for parameter, value in call.arguments.items():
                tool_defaults = defaults.get(call.name, {})
                if parameter in tool_defaults and tool_defaults[parameter] == value:
                    continue
                if not evidence.supports(value):
                    found.append(UngroundedValue(call.label, parameter, value))
        for call in step:
            if "response" in call.model_fields_set:
                evidence.add_response(call.response)
    return found
