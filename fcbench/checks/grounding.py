"""Is every literal argument value of a gold path supported by the query or an earlier response? (pure)

APIGen and ComplexFuncBench both reject paths whose arguments were invented: a value the user never
stated and no earlier call returned cannot be expected from a model. But ComplexFuncBench's hard
samples are exactly those whose values the user implies ("a week starting April 3, 2026" for a
departure date, "a family of four" for adults=4): those must be kept, with how they were found. A
value is grounded when:
- it is a `$label.path$` reference (it reads an earlier output by construction);
- it is the parameter's schema default, or a boolean / null (switches the tool documents);
- a string appears (case-insensitively) in the query, or a number appears as a number in it;
- a rule of `fcbench.checks.derivation` derives it from the query (dates and durations, counts in words,
  units, currencies, times of day, enum values in words): a *derived* value;
- it appears in an earlier response (an entry the user picked: "the cheapest", "the second
  hotel"): a *derived* value too (rule `response`, with the query's words that pick it);
- the senior annotator marked it as derived, with a reason (`meta.derived`, rule `annotator`).
Lists and dicts are grounded when every leaf is. `grounding_report` returns both the ungrounded
values and the derivations, so a kept sample says which rule explained which argument.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from fcbench.checks.derivation import QueryFacts, dates_spelled_in, relative_references  # noqa: F401 (dates_spelled_in: read here before)
from fcbench.json_values import json_leaves
from fcbench.references import parse_reference
from fcbench.sample import Sample

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?")


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


def _numbers_in(text: str) -> set[float]:
    return {float(token.replace(",", "")) for token in _NUMBER.findall(text)}


@dataclass(frozen=True)
class DerivedValue:
    """An argument value the user implies, and the rule that explains it."""

    label: str
    parameter: str
    value: Any
    rule: str
    because: str

    def describe(self) -> str:
        return f"{self.label}.{self.parameter}={json.dumps(self.value, ensure_ascii=False)} by {self.rule} ({self.because})"

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "parameter": self.parameter, "value": self.value, "rule": self.rule,
                "because": self.because}


@dataclass
class GroundingReport:
    ungrounded: list[UngroundedValue] = field(default_factory=list)
    derived: list[DerivedValue] = field(default_factory=list)

    @property
    def needs_reasoning(self) -> bool:
        """Some argument value is not written in the query: it had to be derived or is unexplained."""
        return bool(self.ungrounded or self.derived)


_LITERAL = "literal"


class _Evidence:
    """What the query and the responses seen so far make available."""

    def __init__(self, query: str) -> None:
        self.text = query.lower()
        self.numbers = _numbers_in(query)
        self.facts = QueryFacts(query)
        self.picked_by = ", ".join(relative_references(query)) or "a value of an earlier response"
        self.strings: set[str] = set()
        self.response_numbers: set[Any] = set()

    def add_response(self, response: Any) -> None:
        for leaf in json_leaves(response):
            if isinstance(leaf, str):
                self.strings.add(leaf.lower())
                self.response_numbers |= _numbers_in(leaf)
            elif isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
                self.response_numbers.add(leaf)  # exact: int-float comparison in a set needs no float() (10**400 overflows it)

    def _in_query(self, value: Any) -> bool:
        if isinstance(value, (int, float)):
            return value in self.numbers
        needle = value.strip().lower()
        return not needle or needle in self.text

    def _in_responses(self, value: Any) -> bool:
        if isinstance(value, (int, float)):
            return value in self.response_numbers
        needle = value.strip().lower()
        return needle in self.strings or any(needle in text for text in self.strings)

    def explain(self, value: Any, schema: Mapping[str, Any], siblings: list[Any]) -> tuple[str, str] | None:
        """(rule, because) for a supported value ("literal" when the query writes it), else None."""
        if value is None or isinstance(value, bool) or parse_reference(value) is not None:
            return _LITERAL, ""
        if isinstance(value, (int, float, str)):
            if self._in_query(value):
                return _LITERAL, ""
            derivation = self.facts.explain(value, schema, siblings)
            if derivation is not None:
                return derivation.rule, derivation.because
            if self._in_responses(value):
                return "response", self.picked_by
            return None
        if isinstance(value, (list, dict)):
            rules = []
            for leaf in json_leaves(value):
                found = self.explain(leaf, {}, siblings)
                if found is None:
                    return None
                rules.append(found)
            derived = [found for found in rules if found[0] != _LITERAL]
            return derived[0] if derived else (_LITERAL, "")
        return None


def grounding_report(sample: Sample) -> GroundingReport:
    """Every literal argument value, grounded literally, derived (with its rule) or ungrounded.
    Responses of the same step do not count: parallel calls cannot read each other."""
    evidence = _Evidence(query_text(sample))
    properties = {tool.name: tool.parameters.get("properties", {}) for tool in sample.tools}
    marked = annotator_marks(sample)
    report = GroundingReport()
    for step in sample.all_steps():
        for call in step:
            specs = properties.get(call.name, {})
            siblings = list(call.arguments.values())
            for parameter, value in call.arguments.items():
                spec = specs.get(parameter) if isinstance(specs.get(parameter), dict) else {}
                if "default" in spec and spec["default"] == value:
                    continue
                found = evidence.explain(value, spec, siblings)
                if found is None and (call.label, parameter) in marked:
                    found = ("annotator", marked[(call.label, parameter)])
                if found is None:
                    report.ungrounded.append(UngroundedValue(call.label, parameter, value))
                elif found[0] != _LITERAL:
                    report.derived.append(DerivedValue(call.label, parameter, value, *found))
        for call in step:
            if "response" in call.model_fields_set:
                evidence.add_response(call.response)
    return report


def annotator_marks(sample: Sample) -> dict[tuple[str, str], str]:
    """(label, parameter) -> reason, for the values a senior annotator marked as derived
    (`meta.derived`: a list of {label, parameter, reason}, written by stage2 pull)."""
    marks = {}
    for mark in sample.meta.get("derived") or [] if isinstance(sample.meta, dict) else []:
        if isinstance(mark, dict) and isinstance(mark.get("label"), str) and isinstance(mark.get("parameter"), str):
            reason = mark.get("reason")
            marks[(mark["label"], mark["parameter"])] = str(reason).strip() if reason else "marked by the annotator"
    return marks


def ungrounded_values(sample: Sample) -> list[UngroundedValue]:
    """Literal argument values that neither the query (literally or by a derivation rule) nor an
    earlier step's responses support."""
    return grounding_report(sample).ungrounded


def text_supports(text: str, value: Any, schema: Mapping[str, Any] | None = None, siblings: list[Any] | None = None) -> bool:
    """Does `text` alone (no response) state `value`, literally or by a derivation rule? What the
    conversation-type rules ask of one turn ("the user's answer gives the date the call uses")."""
    return _Evidence(text).explain(value, schema or {}, siblings or []) is not None
