"""The provenance map as a senior annotator reads and corrects it in Label Studio (pure).

One line per argument, in path order, pre-filled at push from the draft (`format_provenance`):

    var_3.arrival_date: date.spelled "June 12, 2025"@41
    var_3.departure_date: date.offset "June 12, 2025"@41 + "a week"@25
    var_3.adults: count.words "for a group of four"@60
    var_1.query: slot "Paris"@15
    var_3.dest_id: reference name
    var_4.currency_code: default schema
    var_5.token: response $var_2.data.offers[1].token$
    var_2.adults: annotator "two parents and four kids"

After the colon: the kind (`slot`, `reference`, `default`, `response`) or a derivation rule
(`date.spelled`, `date.offset`, `time`, `currency`, `count.words`, `duration`, `unit`,
`enum.words`, or `annotator` with the reason), then the quoted words of the query it reads, each
with `@` and its position (a word said once may leave the position out), then an optional JSON
object of the rule's parameters (`{"unit": "km"}`). Lines starting with `#` are comments. An
annotator fixes a wrong source by editing its line; an argument left out is inferred again.
`parse_provenance` gives the sources and, per line it cannot read, a problem naming the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fcbench.checks.provenance import (ANNOTATOR, QUERY_KINDS, Provenance, QuerySpan, ValueSource, find_words,
                                       query_spans)
from fcbench.checks.value_rules import LITERAL, RULES

HEADER = ("# where each argument value comes from: label.argument: kind or rule \"words\"@position ...\n"
          "# (edit a line to correct a source; see annotate/README.md)")
_LINE = re.compile(r"^(?P<label>[^.:\s]+)\.(?P<argument>[^:\s]+):\s*(?P<rest>.*)$")
_WORDS = re.compile(r'"((?:[^"\\]|\\.)*)"(?:@(\d+))?')


@dataclass(frozen=True)
class LineProblem:
    line: int
    message: str

    def describe(self) -> str:
        return f"provenance line {self.line}: {self.message}"


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def format_source(source: ValueSource) -> str:
    words = " + ".join(f"{_quoted(span.text)}@{span.start}" for span in source.spans)
    if source.kind == "reference":
        head = f"reference {source.rule}" if source.rule else "reference"
    elif source.kind == "response":
        head = f"response {source.params.get('path', '')}"
    elif source.kind == "default":
        head = f"default {source.rule}" if source.rule and source.rule != ANNOTATOR else "default"
        if source.rule == ANNOTATOR:
            head = f"fixed {_quoted(source.note or '')}"
    elif source.kind == "composite":
        head = "composite " + json.dumps([part.model_dump(mode="json", exclude_defaults=True) for part in source.parts],
                                         ensure_ascii=False)
    elif source.rule == ANNOTATOR:
        head = f"annotator {_quoted(source.note or '')}"
    elif source.kind == "slot":
        head = "slot"
    else:
        head = str(source.rule)
    params = {k: v for k, v in source.params.items() if source.kind in QUERY_KINDS}
    tail = f" {json.dumps(params, ensure_ascii=False, sort_keys=True)}" if params else ""
    if source.kind == "reference" and source.spans:
        return f"{head} {words}"  # the words that choose the entry, for the annotator to see
    return f"{head} {words}{tail}".rstrip()


def format_provenance(provenance: Provenance) -> str:
    lines = [HEADER]
    for label, arguments in provenance.items():
        for name, source in arguments.items():
            lines.append(f"{label}.{name}: {format_source(source)}")
    return "\n".join(lines)


def parse_provenance(text: str, query: str) -> tuple[Provenance, list[LineProblem]]:
    """The sources the annotator's text declares (only the query-facing kinds are kept: a
    reference's entry is decided by the path and the audit, not by this text)."""
    declared: Provenance = {}
    problems: list[LineProblem] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            problems.append(LineProblem(number, f"expected 'label.argument: source', got {line[:60]!r}"))
            continue
        source = _source(match.group("rest").strip(), query, number, problems)
        if source is not None:
            declared.setdefault(match.group("label"), {})[match.group("argument")] = source
    return declared, problems


def _source(rest: str, query: str, number: int, problems: list[LineProblem]) -> ValueSource | None:
    head, _, tail = rest.partition(" ")
    tail = tail.strip()
    if head == "reference":
        return None  # what a reference reads is the path's; the audit checks what chooses its entry
    if head == "default":
        return ValueSource(kind="default", rule=tail or "schema")
    if head == "response":
        if not tail.startswith("$"):
            problems.append(LineProblem(number, "a response source names the value's place: response $var_2.data[0].id$"))
            return None
        return ValueSource(kind="response", params={"path": tail.split()[0]})
    if head in ("annotator", "fixed"):
        reason = _WORDS.match(tail)
        if reason is None or not reason.group(1).strip():
            problems.append(LineProblem(number, f"{head} needs the reason in quotes"))
            return None
        note = json.loads(f'"{reason.group(1)}"')
        return ValueSource(kind="derived" if head == "annotator" else "default", rule=ANNOTATOR, note=note)
    rule = LITERAL if head == "slot" else head
    if rule not in RULES:
        problems.append(LineProblem(number, f"unknown source {head!r}: slot, reference, default, response, annotator, "
                                            f"fixed or a rule ({', '.join(sorted(RULES - {LITERAL}))})"))
        return None
    spans, params = _words_and_params(tail, query, number, problems)
    if spans is None:
        return None
    return ValueSource(kind="slot" if rule == LITERAL else "derived", rule=rule, spans=tuple(spans), params=params)


def _words_and_params(tail: str, query: str, number: int,
                      problems: list[LineProblem]) -> tuple[list[QuerySpan] | None, dict[str, Any]]:
    params: dict[str, Any] = {}
    brace = tail.find("{")
    if brace >= 0 and tail.rstrip().endswith("}"):
        try:
            params = json.loads(tail[brace:])
        except json.JSONDecodeError:
            problems.append(LineProblem(number, "the parameters at the end are not a JSON object"))
            return None, {}
        tail = tail[:brace]
    spans = []
    for match in _WORDS.finditer(tail):
        words = json.loads(f'"{match.group(1)}"')
        if match.group(2) is not None:
            start = int(match.group(2))
            if query[start:start + len(words)] != words:
                problems.append(LineProblem(number, f"the query does not say {words!r} at {start}"))
                return None, {}
        else:
            places = find_words(query, words)
            if len(places) != 1:
                problems.append(LineProblem(number, f"the query says {words!r} {len(places)} times: add @position"
                                            if places else f"the query does not say {words!r}"))
                return None, {}
            start = places[0][0]
        spans.append(query_spans(query, start, start + len(words)))
    if not spans:
        problems.append(LineProblem(number, "name the words of the query in quotes"))
        return None, {}
    return spans, params
