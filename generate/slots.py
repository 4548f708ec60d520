"""Value pools and offline slot substitution (pure logic, no I/O besides `load_value_pools`).

A benchmark declares beside its tools a `value_pools.json`: per slot (city, stay, adults...), the
values known to execute and the tool arguments each slot fills (`used_by`: argument -> field of a
value; an argument may be a path into a list argument, `entities[0].name`: fcbench.argument_paths).
Two stages use it:
- stage1's graph sampler draws concrete start arguments from it;
- stage3 (`fill: slots`) finds which slot values a template's literal arguments hold
  (`detect_slot_instances`), finds where its query states them (`stated_spans`), and replaces each
  one consistently in the query AND in every argument that holds it (`substitute_slots`), so the
  variant asks for something else along the same path.

`slot_value_problem` is the check every stage3 variant gets, whoever filled it: a slot value the
template's query stated must still be stated by the variant's query and held by its arguments.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Iterable, Sequence

from fcbench.checks.provenance import (QUERY_KINDS, Provenance, SpanEdit, ValueSource, apply_edits, check_provenance,
                                       infer_provenance, rebase_spans, recompute_values, recorded_provenance)
from fcbench.checks.query_text import noun_for_count
from fcbench.argument_paths import get_argument, has_argument, is_argument_path
from fcbench.checks.value_rules import DEPENDENT_RULES, LITERAL, enum_words, write
from fcbench.errors import UserError
from fcbench.references import parse_reference
from fcbench.sample import Call, Sample, user_query  # noqa: F401 (user_query: part of the slot helpers' interface)

# A pool value naming a place says which city it belongs to; values of one city go together
# (a taxi ride or a car rental stays inside one metropolitan area). The `city` slot's values are
# cities themselves: their own `query` is their group.
GROUP_FIELD = "city"
CITY_SLOT = "city"
WORDS_FIELD = "words"  # how a user says an enum value ("business class" for BUSINESS)
# a value no query says: an API code whose words a user would not write and the grounding check
# could not read back ("attr_book_score"); stage1 never sets it as a constraint, stage3 never
# substitutes it in
UNSAID_FIELD = "unsaid"

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December"]
_MONTH = r"(?P<month>" + "|".join(f"{m[:3]}(?:{m[3:]})?" for m in _MONTH_NAMES) + r")\.?"
_SPELLED_MONTH_FIRST = re.compile(_MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})", re.I)
_SPELLED_DAY_FIRST = re.compile(r"(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<year>\d{4})",
                                re.I)


# ------------------------------------------------------------------------------------- the pools
@dataclass(frozen=True)
class SlotUse:
    """One tool whose arguments a slot fills: argument name -> field of a value."""

    tool: str
    arguments: dict[str, str]


@dataclass(frozen=True)
class Slot:
    name: str
    values: list[dict[str, Any]]
    uses: list[SlotUse]
    description: str = ""
    # each call of a draft draws its own value (search keywords, city codes: two searches of one
    # request look for two things); otherwise a value is shared by the draft (its stay, its party)
    distinct: bool = False
    # stage1 draws a slot's value once per draft (the same stay for the flight and the hotel);
    # `per_goal` draws one per request of the draft instead, each another value when it can
    per_goal: bool = False

    def group_of(self, value: dict[str, Any]) -> str | None:
        """The city a value belongs to, None for values that are not places (dates, counts)."""
        if GROUP_FIELD in value:
            return str(value[GROUP_FIELD])
        if self.name == CITY_SLOT and "query" in value:
            return str(value["query"])
        return None

    @property
    def is_place(self) -> bool:
        return any(self.group_of(value) is not None for value in self.values)


@dataclass(frozen=True)
class ValuePools:
    slots: dict[str, Slot]
    source: str = ""

    def uses_for(self, tool: str) -> list[tuple[Slot, SlotUse]]:
        """Every (slot, use) filling arguments of `tool`, widest use first: a use that sets two
        arguments together (a price cap with its currency) wins over one that sets only one."""
        found = [(slot, use) for slot in self.slots.values() for use in slot.uses if use.tool == tool]
        return sorted(found, key=lambda item: -len(item[1].arguments))

    def covered_arguments(self, tool: str) -> set[str]:
        return {name for _, use in self.uses_for(tool) for name in use.arguments}


def value_pools_from_dict(data: Any, source: str = "value pools") -> ValuePools:
    """Check the shape and build the pools; a problem names the slot."""
    if not isinstance(data, dict) or not isinstance(data.get("slots"), dict):
        raise UserError(f"{source}: expected an object with a 'slots' mapping")
    slots = {}
    for name, spec in data["slots"].items():
        where = f"{source}: slots.{name}"
        if not isinstance(spec, dict) or not isinstance(spec.get("values"), list) or not spec["values"]:
            raise UserError(f"{where}: expected a non-empty 'values' list")
        if not all(isinstance(value, dict) for value in spec["values"]):
            raise UserError(f"{where}: every value must be an object")
        uses = []
        for use in spec.get("used_by", []):
            if not isinstance(use, dict) or not isinstance(use.get("tool"), str) or not isinstance(use.get("arguments"), dict):
                raise UserError(f"{where}.used_by: each entry needs 'tool' and 'arguments'")
            missing = [f for f in use["arguments"].values() if any(f not in value for value in spec["values"])]
            if missing:
                raise UserError(f"{where}.used_by: field {missing[0]!r} is missing from some values")
            uses.append(SlotUse(use["tool"], dict(use["arguments"])))
        for flag in ("distinct", "per_goal"):
            if not isinstance(spec.get(flag, False), bool):
                raise UserError(f"{where}.{flag}: expected true or false")
        slots[name] = Slot(name, list(spec["values"]), uses, str(spec.get("description", "")),
                           distinct=spec.get("distinct", False), per_goal=spec.get("per_goal", False))
    return ValuePools(slots, source)


def load_value_pools(path: Path) -> ValuePools:
    if not path.is_file():
        raise UserError(f"{path}: no such value pools file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    return value_pools_from_dict(data, str(path))


# ---------------------------------------------------------------------------------- dates as said
def spell_date(iso: str) -> str:
    """'2025-06-12' -> 'June 12, 2025' (the spelling `fcbench.checks.grounding` reads back)."""
    day = date.fromisoformat(iso)
    return f"{_MONTH_NAMES[day.month - 1]} {day.day}, {day.year}"


def _spell_day_first(iso: str) -> str:
    day = date.fromisoformat(iso)
    return f"{day.day} {_MONTH_NAMES[day.month - 1]} {day.year}"


def _month_number(text: str) -> int:
    return next(i for i, name in enumerate(_MONTH_NAMES, start=1) if name.lower().startswith(text.lower()[:3]))


def _spelled_dates(query: str) -> Iterable[tuple[int, int, str, str]]:
    """(start, end, iso, style) for every date the query spells with a month name."""
    for pattern, style in ((_SPELLED_MONTH_FIRST, "month_first"), (_SPELLED_DAY_FIRST, "day_first")):
        for match in pattern.finditer(query):
            try:
                iso = date(int(match.group("year")), _month_number(match.group("month")), int(match.group("day"))).isoformat()
            except ValueError:
                continue
            yield match.start(), match.end(), iso, style


# -------------------------------------------------------------------------- where a query says it
@dataclass(frozen=True)
class Span:
    start: int
    end: int
    field: str  # which field of the value the text says
    style: str = "plain"  # dates: iso, month_first or day_first


def _literal_pattern(text: str) -> re.Pattern[str]:
    # not inside a longer word or number: "2" must not match in "2025", "Rome" not in "Romeo"
    return re.compile(r"(?<![\w.])" + re.escape(text) + r"(?![\w]|\.\d)", re.I)


def find_value_text(query: str, field_name: str, value: Any) -> list[Span]:
    """Every place the query states one field of a value (dates in any spelling)."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return []
    text = _number_text(value) if isinstance(value, (int, float)) else str(value)
    if not text.strip():
        return []
    spans = [Span(m.start(), m.end(), field_name, "iso" if _ISO_DATE.match(text) else "plain")
             for m in _literal_pattern(text).finditer(query)]
    if isinstance(value, str) and "_" in text:  # an API code said in words ("lowest price")
        spans += [Span(m.start(), m.end(), field_name, "spoken")
                  for m in _literal_pattern(text.replace("_", " ")).finditer(query)]
    if isinstance(value, str) and _ISO_DATE.match(value):
        spans += [Span(start, end, field_name, style) for start, end, iso, style in _spelled_dates(query) if iso == value]
    return spans


def _number_text(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def render_like(span: Span, value: Any, old_text: str | None = None) -> str:
    """The new value written the way the query wrote the old one; an API code in words, as the
    query said the old one ("trending" -> "lowest price", never "lowest_price"; "business" for
    BUSINESS -> "first" for FIRST)."""
    if isinstance(value, str) and _ISO_DATE.match(value):
        if span.style == "month_first":
            return spell_date(value)
        if span.style == "day_first":
            return _spell_day_first(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number_text(value)
    text = str(value)
    if "/" in text:  # a time zone or a path (America/Sao_Paulo, docs/brief.md) is written as it is, never in words
        return text
    spoken = text.replace("_", " ").lower()
    if "_" in text or (old_text is not None and old_text.islower() and not text.islower()):
        return spoken
    return text


def agree_following_noun(query: str, end: int, count: Any) -> tuple[int, str] | None:
    """When a count is replaced, the count noun right after it (" adults") in the number the new
    count takes: (end of that noun, the noun as it must read), or None ("for 2 adults" -> "for 1
    adult", never "for 1 adults")."""
    if isinstance(count, bool) or not isinstance(count, (int, float)):
        return None
    match = re.match(r"\s+([A-Za-z]+)\b", query[end:])
    if match is None:
        return None
    noun = noun_for_count(match.group(1), count)
    return None if noun is None else (end + match.end(), query[end:end + match.start(1)] + noun)


# --------------------------------------------------------------------- slot values in a sample
@dataclass(frozen=True)
class Site:
    """Where a slot value sits: the call and the use (which arguments, which fields)."""

    label: str
    use: SlotUse


@dataclass
class SlotInstance:
    """One slot value held by a path (maybe by several calls: the stay of a hotel search and of its room list)."""

    slot: str
    value: dict[str, Any]
    sites: list[Site] = field(default_factory=list)

    @property
    def fields(self) -> list[str]:
        used = sorted({f for site in self.sites for f in site.use.arguments.values()})
        return used + ([WORDS_FIELD] if WORDS_FIELD in self.value and WORDS_FIELD not in used else [])

    def key(self) -> str:
        return json.dumps([self.slot, {f: self.value.get(f) for f in self.fields}], sort_keys=True, default=str)

    def describe(self) -> str:
        shown = {f: self.value.get(f) for f in self.fields if f != WORDS_FIELD}
        return f"{self.slot}={json.dumps(shown, ensure_ascii=False, sort_keys=True)}"


def _is_literal(value: Any) -> bool:
    return value is not None and parse_reference(value) is None and not isinstance(value, (dict, list))


def _matching_value(slot: Slot, arguments: dict[str, str], call: Call) -> dict[str, Any] | None:
    held = {arg: get_argument(call.arguments, arg) for arg in arguments}  # a name or a path into a list argument
    for value in slot.values:
        if all(held[arg] == value[f] and type(held[arg]) is not bool for arg, f in arguments.items()):
            return value
    return None


def detect_slot_instances(sample: Sample, pools: ValuePools, provenance: Provenance | None = None) -> list[SlotInstance]:
    """The slot values the path's literal arguments hold, in path order; calls holding the same
    value of the same slot share one instance (so they change together). With the template's
    `provenance`, an argument recomputed from other words (a stay's end said "for a week") is
    not matched: the hotel's week and the car's three days of one trip are one stay, which starts
    on the same day."""
    instances: dict[str, SlotInstance] = {}
    for call in sample.all_calls():
        taken: set[str] = set()
        for slot, use in pools.uses_for(call.name):
            names = set(use.arguments)
            if names & taken or not all(has_argument(call.arguments, name) and _is_literal(get_argument(call.arguments, name))
                                        for name in names):
                continue
            matched = {arg: f for arg, f in use.arguments.items()
                       if not _recomputed(provenance, call.label, arg)}
            if not matched:
                continue
            value = _matching_value(slot, matched, call)
            if value is None:
                continue
            taken |= names
            site = Site(call.label, use)
            instance = SlotInstance(slot.name, value, [site])
            existing = instances.setdefault(instance.key(), instance)
            if existing is not instance:
                existing.sites.append(site)
    return list(instances.values())


def _recomputed(provenance: Provenance | None, label: str, argument: str) -> bool:
    source = (provenance or {}).get(label, {}).get(argument)
    return source is not None and source.rule in DEPENDENT_RULES


def stated_spans(query: str, instances: Sequence[SlotInstance]) -> dict[int, list[Span]]:
    """Where the query states each instance (by index). Longer texts claim their span first, so
    "Sydney Airport" is the airport and the "Sydney" inside it is not also the city."""
    wanted = []
    for index, instance in enumerate(instances):
        for field_name in instance.fields:
            value = instance.value.get(field_name)
            for span in find_value_text(query, field_name, value):
                wanted.append((-(span.end - span.start), span.start, index, span))
    claimed: list[tuple[int, int]] = []
    found: dict[int, list[Span]] = {}
    for _, _, index, span in sorted(wanted, key=lambda item: item[:3]):
        if any(span.start < end and start < span.end for start, end in claimed):
            continue
        claimed.append((span.start, span.end))
        found.setdefault(index, []).append(span)
    return found


# ------------------------------------------------------------------------------- substitution
@dataclass
class Substitution:
    query: str
    calls: list[list[Call]]
    changed: list[tuple[str, dict[str, Any], dict[str, Any]]]  # (slot, old value, new value)
    provenance: Provenance | None = None  # the variant's map: the template's, at the new words
    recomputed: list[tuple[str, str, Any, Any]] = field(default_factory=list)  # dependent values read again
    problem: tuple[str, str] | None = None  # (reason, detail): this draw cannot be said


# rules whose words stage3 rewrites for a new value ("a week" is not a slot: it stays, and the
# stay's end is recomputed from it and the new start)
WRITABLE_RULES = frozenset({LITERAL, "date.spelled", "time", "currency", "count.words", "duration", "enum.words"})
COUNT_NOUNS = {"adult": "adults", "night": "nights", "day": "days", "room": "rooms", "guest": "guests",
               "person": "people", "traveller": "travellers", "traveler": "travelers", "ticket": "tickets",
               "child": "children", "week": "weeks", "seat": "seats"}


def pool_vocabulary(pools: ValuePools) -> dict[str, list[str]]:
    """Enum value -> how the pools say it (`words`), for reading a query: "cheapest" for price."""
    vocabulary: dict[str, list[str]] = {}
    for slot in pools.slots.values():
        for value in slot.values:
            said = value.get(WORDS_FIELD)
            named = [v for k, v in value.items() if k != WORDS_FIELD and isinstance(v, str)]
            if isinstance(said, str) and len(named) == 1:
                vocabulary.setdefault(named[0], [])
                if said not in vocabulary[named[0]]:
                    vocabulary[named[0]].append(said)
    return vocabulary


def template_provenance(sample: Sample, pools: ValuePools | None) -> tuple[Provenance | None, str | None]:
    """The template's recorded map, or one inferred now (a template pulled before maps were
    recorded); (None, why) when its values cannot all be tied to the query."""
    try:
        recorded = recorded_provenance(sample)
    except ValueError as exc:  # ProvenanceError: a map that cannot be read
        return None, str(exc)
    if recorded is not None:
        problems = check_provenance(sample, recorded)
        return (recorded, None) if not problems else (None, problems[0].describe())
    inferred = infer_provenance(sample, enum_vocabulary=pool_vocabulary(pools) if pools is not None else {})
    if inferred.ungrounded:
        return None, inferred.ungrounded[0].describe()
    return inferred.provenance, None


def _stated_source(provenance: Provenance, label: str, argument: str) -> ValueSource | None:
    source = provenance.get(label, {}).get(argument)
    if source is None or source.kind not in QUERY_KINDS or source.rule not in WRITABLE_RULES or not source.spans:
        return None
    if len(source.spans) > 1 and source.rule != LITERAL:
        return None  # only a name is said in several places
    return source


def substitute_slots(sample: Sample, pools: ValuePools, rng: random.Random,
                     provenance: Provenance | None = None) -> Substitution:
    """New values for the slots the query states, written only at the words their provenance
    names (in the words' own style: "a group of four" -> "the two of us", "5:45 pm" -> "9 am"),
    then every value with query words as its source read again from the new query: a stay said
    "for a week starting D" ends 7 days after the new D, a party stated once is the party of every
    call that reads those words. A word elsewhere in the query that happens to spell an old value
    is never touched. `provenance`: the template's map (inferred when None). A draw a rule cannot
    say, or whose words collide, comes back with `problem` set."""
    query = user_query(sample)
    if provenance is None:
        provenance, why = template_provenance(sample, pools)
        if provenance is None:
            return Substitution(query, sample.calls, [], problem=("stage3.no_provenance", why or ""))
    instances = detect_slot_instances(sample, pools, provenance)
    stated = [instance for instance in instances
              if any(_stated_source(provenance, site.label, argument) is not None
                     for site in instance.sites for argument in site.use.arguments)]
    new_values = choose_new_values(stated, pools, rng)
    edits: dict[tuple[int, int], SpanEdit] = {}
    changed = []
    said_in_words: list[tuple[str, str, str, Any]] = []
    for instance, new in zip(stated, new_values):
        for site in instance.sites:
            for argument, field_name in site.use.arguments.items():
                source = _stated_source(provenance, site.label, argument)
                if source is None:
                    continue  # not said by itself (a default, or recomputed from other words)
                rule, words = source.rule or LITERAL, None
                old_words = source.spans[0].text
                if isinstance(new.get(WORDS_FIELD), str) and (rule == "enum.words" or old_words != str(instance.value.get(field_name))):
                    # a value said in words ("business class", "cheapest"): the new one in its pool's words
                    rule, words = "enum.words", new[WORDS_FIELD]
                    said_in_words.append((site.label, argument, words, new.get(field_name)))
                elif rule == LITERAL and isinstance(new.get(field_name), str) and "_" in new[field_name] \
                        and old_words.islower():  # an API code where the query said a word: in words
                    rule, words = "enum.words", enum_words(new[field_name])
                    said_in_words.append((site.label, argument, words, new.get(field_name)))
                for span in source.spans:  # a name said in several places is said anew in each
                    text = write(rule, new.get(field_name), span.text, words)
                    if text is None:
                        return Substitution(query, sample.calls, [], problem=(
                            "stage3.underivable", f"{site.label}.{argument}: {source.describe()} cannot say "
                                                  f"{json.dumps(new.get(field_name), ensure_ascii=False)}"))
                    trimmed = _without_neighbours(query, span.start, span.end, text)
                    if trimmed != text and rule == "enum.words" and said_in_words \
                            and said_in_words[-1][:2] == (site.label, argument):  # its words, as now said
                        said_in_words[-1] = (site.label, argument, trimmed.lower(), said_in_words[-1][3])
                    text = trimmed
                    edit = SpanEdit(span.start, span.end, text)
                    if edits.get(span.key(), edit) != edit:
                        return Substitution(query, sample.calls, [], problem=(
                            "stage3.span_conflict", f"{span.text!r} would have to say both "
                                                    f"{edits[span.key()].text!r} and {text!r}"))
                    edits[span.key()] = edit
        changed.append((instance.slot, instance.value, new))
    edits.update(_noun_agreements(query, list(edits.values()), provenance, sample))
    new_query = apply_edits(query, list(edits.values()))
    moved = rebase_spans(provenance, list(edits.values()), new_query)
    if moved is None:
        return Substitution(query, sample.calls, [], problem=("stage3.span_conflict", "an edit cuts the words of a source"))
    for label, argument, words, value in said_in_words:  # the pool's words for the new value, recorded
        moved[label][argument] = moved[label][argument].model_copy(update={
            "kind": "derived", "rule": "enum.words", "params": {"words": words, "value": value}})
    said = sample.model_copy(update={"messages": _with_query(sample.messages, new_query)})
    recomputed = recompute_values(said, moved)
    if recomputed.problems:
        first = recomputed.problems[0]
        return Substitution(query, sample.calls, [], problem=("stage3.underivable", first.describe()))
    for instance, new in zip(stated, new_values):  # each new value must read back from its words
        for site in instance.sites:
            call = next(c for step in recomputed.calls for c in step if c.label == site.label)
            for argument, field_name in site.use.arguments.items():
                source = _stated_source(provenance, site.label, argument)
                if source is not None and call.arguments.get(argument) != new.get(field_name):
                    return Substitution(query, sample.calls, [], problem=(
                        "stage3.underivable", f"{site.label}.{argument}: the words written for "
                                              f"{json.dumps(new.get(field_name))} read back as "
                                              f"{json.dumps(call.arguments.get(argument))}"))
    stated_labels = {(site.label, argument) for instance in stated for site in instance.sites
                     for argument in site.use.arguments}
    dependent = [item for item in recomputed.changed if (item[0], item[1]) not in stated_labels
                 or _stated_source(provenance, item[0], item[1]) is None]
    calls = [[Call(label=call.label, name=call.name, arguments=call.arguments) for call in step]
             for step in recomputed.calls]
    return Substitution(new_query, calls, changed, moved, dependent)


def _without_neighbours(query: str, start: int, end: int, text: str) -> str:
    """The pool's words less a word the query already says beside the span: "business class"
    written where "economy" stood in "flying economy class" is "business" (never "business class
    class")."""
    after = re.match(r"\s+([A-Za-z]+)\b", query[end:])
    if after and " " in text and text.lower().endswith(" " + after.group(1).lower()):
        text = text[:-len(after.group(1)) - 1]
    before = re.search(r"\b([A-Za-z]+)\s+$", query[:start])
    if before and " " in text and text.lower().startswith(before.group(1).lower() + " "):
        text = text[len(before.group(1)) + 1:]
    return text


def _with_query(messages: list[dict[str, Any]], query: str) -> list[dict[str, Any]]:
    updated = [dict(message) for message in messages]
    for message in reversed(updated):
        if message.get("role") == "user":
            message["content"] = query
            return updated
    return updated + [{"role": "user", "content": query}]


def _noun_agreements(query: str, edits: Sequence[SpanEdit], provenance: Provenance,
                     sample: Sample) -> dict[tuple[int, int], SpanEdit]:
    """A count written as digits keeps its noun in the right number ("for 2 adults" -> "for 1
    adult", never "for 1 adults"): the noun after it is edited too (its own edit, next to the
    count's, so no source's words are cut)."""
    spans = [span.key() for arguments in provenance.values() for source in arguments.values() for span in source.spans]
    found = {}
    for edit in edits:
        text = edit.text.strip()
        if not re.fullmatch(r"\d+", text):
            continue
        match = re.match(r"(\s+)([A-Za-z]+)\b", query[edit.end:])
        if match is None:
            continue
        noun = match.group(2)
        singular = next((one for one, many in COUNT_NOUNS.items() if noun.lower() in (one, many)), None)
        if singular is None:
            continue
        wanted = singular if int(text) == 1 else COUNT_NOUNS[singular]
        wanted = wanted.capitalize() if noun[:1].isupper() else wanted
        start = edit.end + len(match.group(1))
        if wanted != noun and not any(s < start + len(noun) and start < e for s, e in spans):
            found[(start, start + len(noun))] = SpanEdit(start, start + len(noun), wanted)
    return found


def _group_mapping(instances: Sequence[SlotInstance], pools: ValuePools, rng: random.Random) -> dict[str, str]:
    """Old city -> new city, one-to-one: places of one city stay together, places of two cities stay apart."""
    old_groups = sorted({g for inst in instances if (g := pools.slots[inst.slot].group_of(inst.value)) is not None})
    all_groups = sorted({g for slot in pools.slots.values() for value in slot.values
                         if (g := slot.group_of(value)) is not None})
    fresh = [g for g in all_groups if g not in old_groups]
    rng.shuffle(fresh)
    pool = fresh + rng.sample(old_groups, len(old_groups))  # reuse old cities only when new ones run out
    mapping: dict[str, str] = {}
    for old in old_groups:
        mapping[old] = next(g for g in pool if g not in mapping.values())
    return mapping


def choose_new_values(instances: Sequence[SlotInstance], pools: ValuePools, rng: random.Random) -> list[dict[str, Any]]:
    """A new value per instance: another value of the same slot (in the mapped city for places),
    never the same as another instance of the slot gets."""
    mapping = _group_mapping(instances, pools, rng)
    taken: dict[str, list[str]] = {}
    chosen = []
    for instance in instances:
        slot = pools.slots[instance.slot]
        old_key = _fields_key(instance.value, instance.fields)
        candidates = [v for v in slot.values if _fields_key(v, instance.fields) != old_key
                      and _fields_key(v, instance.fields) not in taken.get(slot.name, []) and not v.get(UNSAID_FIELD)]
        group = slot.group_of(instance.value)
        same_group = [v for v in candidates if group is None or slot.group_of(v) == mapping.get(group)]
        options = same_group or candidates or [instance.value]
        new = options[rng.randrange(len(options))]
        taken.setdefault(slot.name, []).append(_fields_key(new, instance.fields))
        chosen.append(new)
    return chosen


def _fields_key(value: dict[str, Any], fields: Sequence[str]) -> str:
    return json.dumps([value.get(f) for f in fields if f != WORDS_FIELD], default=str)


# --------------------------------------------------------------------------- the stage3 check
@dataclass
class TemplateSlots:
    """What a template's query states of the pools, read once per template (not per variant)."""

    instances: list[SlotInstance]
    stated: dict[int, list[Span]]
    stated_sites: set[tuple[str, tuple[str, ...]]]

    @classmethod
    def of(cls, template: Sample, pools: ValuePools) -> "TemplateSlots":
        instances = detect_slot_instances(template, pools)
        stated = stated_spans(user_query(template), instances)
        sites = {(site.label, tuple(sorted(site.use.arguments)))
                 for index, instance in enumerate(instances) if index in stated for site in instance.sites}
        return cls(instances, stated, sites)


def slot_value_problem(template: Sample | TemplateSlots, variant: Sample, pools: ValuePools) -> str | None:
    """Why the variant drops a slot value, or None. Only values the template's query stated are
    checked (a default the template leaves unsaid may stay unsaid):
    - the variant's argument there must be stated by the variant's query;
    - a value the template's query stated must not still be stated by the variant's query when no
      argument of the variant holds it any more."""
    slots = template if isinstance(template, TemplateSlots) else TemplateSlots.of(template, pools)
    variant_query = user_query(variant)
    variant_instances = detect_slot_instances(variant, pools)
    variant_keys = {instance.key() for instance in variant_instances}
    # a variant with a provenance map has each value checked at its own words (the filter's
    # grounding, in any spelling): only a value a map-less variant holds is looked for here
    tied = isinstance(variant.meta, dict) and variant.meta.get("provenance") is not None
    for instance in [] if tied else variant_instances:
        at_stated_site = any((site.label, tuple(sorted(site.use.arguments))) in slots.stated_sites for site in instance.sites)
        if at_stated_site and not _is_stated(variant_query, instance):
            site = instance.sites[0]
            return f"argument {site.label}.{'/'.join(sorted(site.use.arguments))} holds {instance.describe()}, which the query does not state"
    held = {str(value).lower() for call in variant.all_calls() for value in call.arguments.values() if _is_literal(value)}
    held |= {str(get_argument(call.arguments, name)).lower() for call in variant.all_calls()
             for _, use in pools.uses_for(call.name) for name in use.arguments
             if is_argument_path(name) and has_argument(call.arguments, name) and _is_literal(get_argument(call.arguments, name))}
    for index, instance in enumerate(slots.instances):
        if index not in slots.stated or instance.key() in variant_keys:
            continue
        if _still_stated(variant_query, instance, held):
            return f"the query still states {instance.describe()} but no argument holds it"
    lost = [site for index, instance in enumerate(slots.instances) if index in slots.stated for site in instance.sites
            if not _site_filled(variant, site)]
    if lost:
        return f"argument {lost[0].label}.{'/'.join(sorted(lost[0].use.arguments))} lost the value the query states"
    return None


def _is_stated(query: str, instance: SlotInstance) -> bool:
    return any(find_value_text(query, f, instance.value.get(f)) for f in instance.fields)


def _still_stated(query: str, instance: SlotInstance, held: set[str]) -> bool:
    """Whether the query names the old value by a text no argument holds any more. Only names
    count: not its `words` (other values share them), not a bare number (any date or count may
    contain it), not a text another value shares (a budget's currency kept by the new budget)."""
    for name in instance.fields:
        value = instance.value.get(name)
        if name != WORDS_FIELD and isinstance(value, str) and value.lower() not in held \
                and _names_it(query, name, value):
            return True
    return False


def _names_it(query: str, field_name: str, value: str) -> bool:
    """Whether the query says the value itself: an API code only as written (CHEAPEST, not the
    "cheapest" of "the cheapest flight"; FIRST, not "the first rate"), a name in any case."""
    spans = find_value_text(query, field_name, value)
    if re.fullmatch(r"[A-Z][A-Z0-9_]+", value):
        return any(query[span.start:span.end] == value for span in spans)
    return bool(spans)


def _site_filled(variant: Sample, site: Site) -> bool:
    call = next((c for c in variant.all_calls() if c.label == site.label), None)
    return call is not None and all(has_argument(call.arguments, name) and get_argument(call.arguments, name) is not None
                                    for name in site.use.arguments)
