"""Where each argument value of a gold path comes from (pure): the provenance map.

A gold sample is right only when every argument value means what its query says. The provenance
map records, per call label and argument, one source (`ValueSource`):
- `slot`: the query writes the value at a span ("Paris", "3", "GBP");
- `derived`: a rule of `fcbench.checks.value_rules` reads it from one or more spans ("November 15,
  2025" -> 2025-11-15; "November 15, 2025" + "a week" -> 2025-11-22; "a group of four" -> 4;
  "euros" -> EUR; "5:45 pm" -> 17:45; "premium economy" -> PREMIUM_ECONOMY); a senior annotator may
  also assert a derivation no rule reads (`rule: annotator`, with the reason);
- `reference`: a `$label.path$` reference to an earlier response; `rule` says what chooses the
  entry it reads (`pick`: a constraint of `meta.picks`; `ordinal`: "the second hotel"; `name`:
  the lookup's entry named like the place the user gave; `single`: the list's only entry; `whole`:
  no list entry is chosen) and `spans` the words that choose it;
- `response`: a literal copied out of an earlier response (`params.path`);
- `default`: the parameter's schema default (`rule: schema`), a boolean or null switch (`switch`),
  or a value the annotator declares fixed (`annotator`);
- `composite`: a list or object argument, one part per leaf.

Spans are character offsets into the query (the last user message) with the words they hold, so a
changed query that no longer holds them is seen at once. The map is stored in `meta.provenance`
(`provenance_to_meta`), computed at stage2 pull (`infer_provenance`, corrected by the annotator),
carried to stage3's variants with their new spans (`rebase_spans`) and values recomputed from
them (`recompute_values`), and checked by the filter (`check_provenance`): a value is grounded
only where its source says, never because the same words stand somewhere else in the query.

Inference ties each literal to spans by rule and keeps each call's spans together (with the words
that pick what it reads), calls in path order taking words no earlier call took, lookups last,
each near the call that reads it (a lookup's place is said in its reader's clause).
Words that pick an entry ("the cheapest hotel rated above 8") state no argument value.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from fcbench.checks.derivation import QueryFacts, Stated, is_iso_date
from fcbench.checks.grounding import annotator_marks
from fcbench.checks.value_rules import (DEPENDENT_RULES, LITERAL, UNREAD, enum_words, read, reads_as, same_value,
                                        shift_days)
from fcbench.json_values import json_leaves_with_paths
from fcbench.references import format_reference, parse_reference
from fcbench.resolve import walk_path
from fcbench.sample import Call, Sample, user_query

PROVENANCE_META = "provenance"
# parameters that say who travels: one trip's search and the calls reading it share them
CARRIED_PARAMETERS = ("adults", "children", "room_qty")
PICKS_META = "picks"  # (fcbench.checks.constraints.PICKS_META: the same key; not imported, to keep this module light)
MAX_QUERY_CHARS = 20_000  # a query longer than this is refused before any rule reads it (bounded work)

SourceKind = Literal["slot", "derived", "reference", "response", "default", "composite"]
QUERY_KINDS = frozenset({"slot", "derived"})
ANNOTATOR = "annotator"
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")

# Inference costs, in characters of query between a call's spans: a value equal to its schema
# default is taken from the query only when the words sit in the call's own clause.
DEFAULT_COST = 60.0
RESPONSE_COST = 400.0
REUSE_COST = 25.0  # a span another call already reads (a party stated once for a search and its rooms)
MAX_CANDIDATES = 16  # per argument, the ones nearest the call's own words
MAX_SHIFT_GAP = 60  # a duration counts from a date said next to it ("for a week starting D", "from D for 3 nights")
MAX_COMBINATIONS = 4096


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class QuerySpan(_Frozen):
    """Words of the query: [start, end) and the text found there."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str

    def key(self) -> tuple[int, int]:
        return (self.start, self.end)


class ValueSource(_Frozen):
    kind: SourceKind
    rule: str | None = None
    spans: tuple[QuerySpan, ...] = ()
    params: dict[str, Any] = Field(default_factory=dict)
    parts: tuple["ValueSource", ...] = ()
    note: str | None = None

    def describe(self) -> str:
        words = " + ".join(repr(span.text) for span in self.spans)
        what = self.kind if self.rule in (None, LITERAL) else f"{self.kind} {self.rule}"
        return f"{what} {words}".strip()


Provenance = dict[str, dict[str, ValueSource]]
_MAP = TypeAdapter(dict[str, dict[str, ValueSource]])


class ProvenanceError(ValueError):
    """A recorded provenance map that cannot be read."""


@dataclass(frozen=True)
class ProvenanceProblem:
    """One argument whose provenance is missing or does not give its value."""

    label: str
    parameter: str
    code: str  # missing | unknown_argument | stale_span | not_at_span | wrong_kind | ungrounded | underivable
    message: str
    value: Any = None

    def describe(self) -> str:
        return f"{self.label}.{self.parameter}={self.value_text}: {self.message}"

    @property
    def value_text(self) -> str:
        return _shown(self.value)


# ---------------------------------------------------------------------------------- storing
def provenance_to_meta(provenance: Provenance) -> dict[str, Any]:
    return {label: {name: source.model_dump(mode="json", exclude_defaults=True) for name, source in arguments.items()}
            for label, arguments in provenance.items()}


def provenance_from_meta(value: Any) -> Provenance:
    try:
        return _MAP.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ProvenanceError(f"meta.provenance.{where}: {first['msg']}") from None


def recorded_provenance(sample: Sample) -> Provenance | None:
    """The sample's recorded map (None when it has none); ProvenanceError when it is malformed."""
    value = sample.meta.get(PROVENANCE_META) if isinstance(sample.meta, dict) else None
    return None if value is None else provenance_from_meta(value)


def with_provenance(sample: Sample, provenance: Provenance) -> Sample:
    return sample.model_copy(update={"meta": {**sample.meta, PROVENANCE_META: provenance_to_meta(provenance)}})


def query_spans(query: str, start: int, end: int) -> QuerySpan:
    return QuerySpan(start=start, end=end, text=query[start:end])


# ------------------------------------------------------------------------------ claimed words
def pick_records(sample: Sample) -> list[dict[str, Any]]:
    records = sample.meta.get(PICKS_META) if isinstance(sample.meta, dict) else None
    return [record for record in records or [] if isinstance(record, dict)]


def find_words(query: str, words: str) -> list[tuple[int, int]]:
    """Where the query says `words` (case-insensitively, not inside a longer word; a word is not
    found inside a hyphenated one, "best" in "best-rated", a number is: "21" in "21-year-old")."""
    if not words or not words.strip():
        return []
    hyphen = r"-\w|" if words[-1:].isalpha() else ""
    before = r"(?<![\w-])" if words[:1].isalpha() else r"(?<![\w.])"
    pattern = re.compile(before + re.escape(words) + r"(?![\w]|" + hyphen + r"\.\d)", re.I)
    return [(match.start(), match.end()) for match in pattern.finditer(query)]


def pick_spans(query: str, sample: Sample) -> dict[int, list[tuple[int, int]]]:
    """Pick record index -> where the query says its constraint ("the cheapest hotel rated above 8").
    Two picks said with the same words ("the cheapest attraction" for two searches) take the places
    in turn: the first record the first place, and so on (the query says its steps in order)."""
    found: dict[int, list[tuple[int, int]]] = {}
    taken: dict[str, int] = {}
    for index, record in enumerate(pick_records(sample)):
        text = str(record.get("text") or "")
        places = find_words(query, text)
        turn = taken.get(text.lower(), 0)
        taken[text.lower()] = turn + 1
        found[index] = places[turn:] + places[:turn] if places else []
    return found


def _inside(start: int, end: int, regions: Iterable[tuple[int, int]]) -> bool:
    return any(left <= start and end <= right for left, right in regions)


def _overlaps(start: int, end: int, regions: Iterable[tuple[int, int]]) -> bool:
    return any(start < right and left < end for left, right in regions)


# ------------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class _Candidate:
    source: ValueSource
    cost: float = 0.0
    virtual: bool = False  # a place of a lookup's name the call reads: it joins the clause, states no value here

    @property
    def positions(self) -> tuple[int, ...]:
        return tuple(span.start for span in self.source.spans)

    @property
    def keys(self) -> tuple[tuple[int, int], ...]:
        return tuple(span.key() for span in self.source.spans)


@dataclass
class _QueryReading:
    """The query read once: its rule readings, the words claimed by picks, and literal look-ups."""

    query: str
    facts: QueryFacts
    claimed: list[tuple[int, int]]
    enum_vocabulary: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # the path's literal names: a value said only inside a longer one is not said ("London" of
    # "Tower of London" is no pick-up city: stage3 would rewrite the landmark to "Tower of Rome")
    names: Sequence[str] = ()

    def __post_init__(self) -> None:
        # digits inside these are not literals ("15" of "November 15, 2025", "6:30" of "6:30 pm",
        # "45" of "at 17:45": a driver aged 45 is said elsewhere)
        self.spelled = [(fact.start, fact.end) for fact in self.facts.stated if fact.rule in ("date.spelled", "time")]
        self.spelled += [(m.start(), m.end()) for m in _CLOCK_TIME.finditer(self.query)
                         if not _overlaps(m.start(), m.end(), self.spelled)]  # "06:30 pm" stays one time
        self._literal_cache: dict[str, list[tuple[int, int]]] = {}
        self.name_places = [place for name in dict.fromkeys(self.names) for place in find_words(self.query, name)]

    def span(self, start: int, end: int) -> QuerySpan:
        return query_spans(self.query, start, end)

    def free(self, start: int, end: int) -> bool:
        return not _overlaps(start, end, self.claimed)

    def literal_places(self, value: Any) -> list[tuple[int, int]]:
        text = _literal_text(value)
        if text is None:
            return []
        if text not in self._literal_cache:
            places = find_words(self.query, text)
            if isinstance(value, (int, float)):
                places = [(s, e) for s, e in places if not _inside(s, e, self.spelled)]
            else:
                places = [(s, e) for s, e in places if not _inside(s, e, self.spelled) or _is_whole(s, e, self.spelled)]
                places = [(s, e) for s, e in places
                          if not any(left <= s and e <= right and (left, right) != (s, e) for left, right in self.name_places)]
            self._literal_cache[text] = places
        return [(s, e) for s, e in self._literal_cache[text] if self.free(s, e)]

    def candidates(self, value: Any, schema: Mapping[str, Any], parameter: str = "") -> list[_Candidate]:
        """Every way the query states `value`, by rule (the rules that fit the parameter's name)."""
        found: list[_Candidate] = []
        member = isinstance(value, str) and (value in (schema.get("enum") or []) or value in self.enum_vocabulary)
        for start, end in self.literal_places(value):
            if member and self.query[start:end] != value:  # "cheapest" for CHEAPEST: said in words
                found.append(_Candidate(ValueSource(kind="derived", rule="enum.words", spans=(self.span(start, end),))))
            else:
                found.append(_Candidate(ValueSource(kind="slot", rule=LITERAL, spans=(self.span(start, end),))))
        for fact in self.facts.stated:
            if not self.free(fact.start, fact.end):
                continue
            source = _fact_source(fact, value, self.span(fact.start, fact.end), parameter)
            if source is not None:
                found.append(_Candidate(source))
        if isinstance(value, str):
            found += self._enum_candidates(value, schema)
            if is_iso_date(value):
                found += self._offset_candidates(value)
        return found

    def _enum_candidates(self, value: str, schema: Mapping[str, Any]) -> list[_Candidate]:
        members = schema.get("enum") or []
        if value not in members and value not in self.enum_vocabulary:
            return []
        said = list(dict.fromkeys([enum_words(value), *self.enum_vocabulary.get(value, ())]))
        said += [_plural(words) for words in said if words.isalpha()]  # "the airports matching PAR": AIRPORT
        found = []
        for words in said:
            if len(words) <= 2 or words.lower() == value.lower():
                continue  # the value written as it is: a literal, found above
            params = {} if words == enum_words(value) else {"words": words, "value": value}
            for start, end in find_words(self.query, words):
                if self.free(start, end):
                    found.append(_Candidate(ValueSource(kind="derived", rule="enum.words", spans=(self.span(start, end),),
                                                        params=params)))
        return found

    def _offset_candidates(self, value: str) -> list[_Candidate]:
        anchors = [fact for fact in self.facts.stated if fact.rule == "date.spelled" and self.free(fact.start, fact.end)]
        anchors += [Stated("literal", None, s, e, self.query[s:e]) for s, e in self._iso_dates()]
        shifts = [fact for fact in self.facts.stated if fact.rule in ("duration", "offset") and self.free(fact.start, fact.end)]
        found = []
        for anchor, shift in itertools.product(anchors, shifts):
            if max(anchor.start, shift.start) - min(anchor.end, shift.end) > MAX_SHIFT_GAP:
                continue
            spans = (self.span(anchor.start, anchor.end), self.span(shift.start, shift.end))
            if reads_as("date.offset", [span.text for span in spans], value):
                gap = max(0, max(anchor.start, shift.start) - min(anchor.end, shift.end))
                found.append(_Candidate(ValueSource(kind="derived", rule="date.offset", spans=spans), cost=gap / 2))
        return found

    def _iso_dates(self) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for m in re.finditer(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-])", self.query)
                if self.free(m.start(), m.end())]


_CLOCK_TIME = re.compile(r"(?<![\w:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])")  # 17:45, 09:30:00


def _is_whole(start: int, end: int, regions: Iterable[tuple[int, int]]) -> bool:
    return any((left, right) == (start, end) for left, right in regions)


def _literal_text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = str(value)
    return text if text.strip() else None


# What a parameter's name says it holds, for the rules that read numbers: "three" of "three
# nights" is no radius, "a group of four" no price. A rule reads a number for a parameter only
# when the name fits (generic names fit none: the value must then be written in the query).
COUNT_NAMES = frozenset({"adult", "child", "guest", "people", "person", "passenger", "traveler", "traveller",
                         "room", "qty", "quantity", "count", "number", "seat", "ticket", "party", "size", "infant"})
DURATION_NAMES = frozenset({"night", "day", "duration", "length", "stay", "week"})


def _name_words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    return {word.lower().rstrip("s") if len(word) > 3 else word.lower() for word in spaced.split()}


def rule_fits(rule: str, parameter: str) -> bool:
    """Whether a rule that reads a number may give this parameter its value."""
    words = _name_words(parameter)
    if rule == "count.words":
        return bool(words & COUNT_NAMES)
    if rule == "duration":
        return bool(words & DURATION_NAMES)
    if rule == "unit":
        return not words & COUNT_NAMES
    return True


def _fact_source(fact: Stated, value: Any, span: QuerySpan, parameter: str = "") -> ValueSource | None:
    if fact.value is None or fact.rule in ("offset",):
        return None
    if parameter and not rule_fits(fact.rule, parameter):
        return None
    if fact.rule == "unit":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        for unit in _units_for(fact):
            if reads_as("unit", [span.text], value, {"unit": unit}):
                return ValueSource(kind="derived", rule="unit", spans=(span,), params={"unit": unit})
        return None
    if fact.rule == "duration" and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return None
    if fact.rule == "count.words" and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return None
    if reads_as(fact.rule, [span.text], value):
        return ValueSource(kind="derived", rule=fact.rule, spans=(span,))
    return None


def _units_for(fact: Stated) -> list[str]:
    from fcbench.checks.derivation import UNIT_CONVERSIONS

    return [unit for pattern, unit, _ in UNIT_CONVERSIONS if pattern == fact.value[1]]


# ------------------------------------------------------------------------------- references
@dataclass(frozen=True)
class EntryChoice:
    """What chooses one list entry a reference reads: `pick` (a constraint of meta.picks), `name`
    (the lookup's entry named like the place the user gave, and no other is), `single` (the list's
    only entry), `ordinal` ("the second hotel"), or `unstated` (nothing in the query says which)."""

    list_path: tuple[str | int, ...]
    index: int
    size: int | None  # entries in the list (None: the response is not there to count them)
    rule: str
    span: QuerySpan | None = None
    pick: int | None = None
    strength: int = 0  # ordinal: how surely the phrase's noun names this list (see _list_nouns)

    def where(self, label: str) -> str:
        return format_reference(label, self.list_path + (self.index,)).strip("$")


def entry_choices(sample: Sample, call: Call, reference_text: str, responses: Mapping[str, Any], query: str,
                  picks_at: Mapping[int, list[tuple[int, int]]]) -> list[EntryChoice]:
    """For each list index of a reference, what in the query chooses that entry."""
    reference = parse_reference(reference_text)
    if reference is None:
        return []
    records = pick_records(sample)
    source_call = next((c for c in sample.all_calls() if c.label == reference.label), None)
    names = {str(v).strip().lower() for v in (source_call.arguments.values() if source_call else [])
             if isinstance(v, str) and parse_reference(v) is None and v.strip()}
    choices = []
    for position, part in enumerate(reference.path):
        if not isinstance(part, int):
            continue
        list_path = tuple(reference.path[:position])
        try:
            entries = walk_path(responses[reference.label], list_path) if reference.label in responses else None
        except (LookupError, TypeError):
            entries = None
        size = len(entries) if isinstance(entries, list) else None
        pick = next((number for number, record in enumerate(records)
                     if record.get("reader") == call.label and record.get("source") == reference.label
                     and _list_path_text(record.get("list")) == list_path), None)
        if pick is not None:
            places = picks_at.get(pick, [])
            choices.append(EntryChoice(list_path, part, size, "pick", query_spans(query, *places[0]) if places else None, pick))
        else:
            # "the first activity" of a list with one entry says which, as the ordinal of a longer one does
            places = _ordinal_places(query, part, _list_nouns(list_path, source_call, entries))
            places = sorted(places, key=lambda p: (-p[2], -_names_after(query, p[1], names), p[0]))
            if size == 1:  # its only entry: an ordinal there says so (its words are served), never more
                choices.append(EntryChoice(list_path, part, size, "single",
                                           query_spans(query, places[0][0], places[0][1]) if places else None))
            elif size is not None and size > 1 and part < size and not places and (
                    _named_entry(entries, part, names) or _entry_named_in_query(entries, part, query)):
                choices.append(EntryChoice(list_path, part, size, "name"))
            else:
                rule = "ordinal" if places else "unstated"
                span = query_spans(query, places[0][0], places[0][1]) if places else None
                choices.append(EntryChoice(list_path, part, size, rule, span, strength=places[0][2] if places else 0))
    return choices


def _names_after(query: str, end: int, names: set[str]) -> int:
    """1 when the words right after an ordinal phrase name the search its list came from ("the
    second hotel in BCN" for the hotels found in BCN), else 0: two equal phrases, one per list."""
    after = query[end:end + 40].lower()
    return int(any(re.match(rf"\s+(?:in|near|matching|at|for|from)\s+{re.escape(name)}\b", after) for name in names))


GENERIC_ENTRY_NOUNS = ("result", "one", "option", "entry", "match", "place")
_TOOL_VERBS = ("get", "search", "list", "find", "detail", "details", "info")


def _list_nouns(list_path: Sequence[str | int], source_call: Call | None, entries: Any = None) -> dict[str, int]:
    """What an entry of the list may be called, and how surely: its key's words ("rooms" -> room,
    "flightOffers" -> flight, offer: 3), the thing the tool that answered it finds (its name's last
    noun before "By": Search_Attractions -> attraction, Search_Hotel_Destination -> destination: 2),
    the tool's other words (hotel: 1), or a generic noun ("the first result": 0); the entries' own
    `type` ("location": 3), when they all say the same."""
    nouns = {word: 0 for word in GENERIC_ENTRY_NOUNS}

    def words_of(name: str) -> list[str]:
        spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name)).replace("_", " ").replace("-", " ")
        return [_singular(word.lower()) for word in spaced.split() if len(word) > 2]

    if source_call is not None:
        found = words_of(re.split(r"_By_|-by-", source_call.name)[0])
        found = [word for word in found if word not in _TOOL_VERBS]
        for word in found:
            nouns[word] = max(nouns.get(word, 0), 1)
        if found:
            nouns[found[-1]] = 2
    for key in [part for part in list_path if isinstance(part, str)][-1:]:
        for word in words_of(key):
            nouns[word] = 3
    types = {entry.get("type") for entry in entries} if isinstance(entries, list) and entries and all(
        isinstance(entry, dict) for entry in entries) else set()
    if len(types) == 1 and isinstance(next(iter(types)), str):
        for word in words_of(next(iter(types))):
            nouns[word] = 3
    return nouns


def _plural(word: str) -> str:
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _ordinal_places(query: str, index: int, nouns: Mapping[str, int]) -> list[tuple[int, int, int]]:
    """Where the query says "the <ordinal> <noun>" for this list ("the second room", "the first
    rate"), with how surely the noun names this list (see `_list_nouns`): an ordinal next to
    another list's noun does not choose an entry of this one."""
    if index >= len(ORDINALS):
        return []
    pattern = re.compile(rf"\bthe {ORDINALS[index]}(?: [a-z-]+)?? ([a-z]+)\b", re.I)
    places = [(match.start(), match.end(), nouns[_singular(match.group(1).lower())]) for match in pattern.finditer(query)
              if _singular(match.group(1).lower()) in nouns]
    # "the second of them": the list just named, as generic as "the second result"
    places += [(match.start(), match.end(), 0) for match in re.finditer(rf"\bthe {ORDINALS[index]} of them\b", query, re.I)]
    return places


def _list_path_text(text: Any) -> tuple[str | int, ...] | None:
    if not isinstance(text, str):
        return None
    parts: list[str | int] = []
    for piece in text.split("."):
        match = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", piece)
        if match is None:
            return None
        parts.append(match.group(1))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", match.group(2)))
    return tuple(parts)


def _named_entry(entries: Sequence[Any], index: int, names: set[str]) -> bool:
    """Some text field of the entry equals a name the lookup was given, and that field of no
    other entry does: the place the user named, unambiguously ("Barcelona" by `name`, not by a
    `city_name` every Barcelona airport shares)."""
    entry = entries[index]
    if not names or not isinstance(entry, dict):
        return False
    for key, value in entry.items():
        if isinstance(value, str) and value.strip().lower() in names:
            same = sum(1 for other in entries if isinstance(other, dict) and isinstance(other.get(key), str)
                       and other[key].strip().lower() == value.strip().lower())
            if same == 1:
                return True
    return False


def _entry_named_in_query(entries: Sequence[Any], index: int, query: str) -> bool:
    """The query names the entry itself: its `name` is in the query's words and no other entry
    has that name; when the query names several entries ("a hotel in Montmartre, Paris" names
    the district and the city), the one meant is the entry whose own text mentions all the
    others (Montmartre's label says "Montmartre, Paris, ..."; Paris's says nothing of Montmartre)."""
    def name_of(entry: Any) -> str:
        value = entry.get("name") if isinstance(entry, dict) else None
        return value.strip().lower() if isinstance(value, str) and len(value.strip()) > 2 else ""

    def said(name: str) -> bool:
        return bool(name) and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", query, re.I) is not None

    names = [name_of(entry) for entry in entries]
    mine = names[index]
    if not said(mine) or names.count(mine) != 1:
        return False
    others = {name for position, name in enumerate(names) if position != index and said(name)}
    own_text = " ".join(str(value).lower() for value in entries[index].values() if isinstance(value, str))
    return all(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", own_text) for name in others)


def reference_source(sample: Sample, call: Call, value: Any, responses: Mapping[str, Any], query: str,
                     picks_at: Mapping[int, list[tuple[int, int]]]) -> ValueSource:
    """A reference's source: what chooses each list entry it reads (the gold audit checks it again
    over the responses the sample holds)."""
    choices = entry_choices(sample, call, value, responses, query, picks_at) if isinstance(value, str) else []
    if not choices:
        return ValueSource(kind="reference", rule="whole")
    rules = [choice.rule for choice in choices]
    rule = next((r for r in ("unstated", "pick", "ordinal", "name", "single") if r in rules), "whole")
    spans = tuple(choice.span for choice in choices if choice.span is not None)
    params: dict[str, Any] = {"entries": rules}
    picks = [choice.pick for choice in choices if choice.pick is not None]
    if picks:
        params["pick"] = picks[0]
    return ValueSource(kind="reference", rule=rule, spans=spans, params=params)


# -------------------------------------------------------------------------------- inference
@dataclass
class InferredProvenance:
    provenance: Provenance
    ungrounded: list[ProvenanceProblem] = field(default_factory=list)  # literal values no source explains


@dataclass(frozen=True)
class _Slot:
    """One literal argument value to place."""

    label: str
    parameter: str
    value: Any
    schema: Mapping[str, Any]


def parameter_schemas(sample: Sample) -> dict[str, dict[str, Any]]:
    return {tool.name: (tool.parameters.get("properties") or {}) for tool in sample.tools}


def _readers(sample: Sample) -> dict[str, set[str]]:
    """label -> the labels of the calls that read its output."""
    readers: dict[str, set[str]] = {}
    for call in sample.all_calls():
        for leaf in _reference_leaves(call.arguments):
            reference = parse_reference(leaf)
            if reference is not None:
                readers.setdefault(reference.label, set()).add(call.label)
    return readers


def _reference_leaves(value: Any) -> list[str]:
    return [leaf for _, leaf in json_leaves_with_paths(value) if isinstance(leaf, str) and parse_reference(leaf)]


def query_too_long(sample: Sample) -> str | None:
    """Why the query is refused before any rule reads it (None: it is not)."""
    query = user_query(sample)
    if len(query) > MAX_QUERY_CHARS:
        return f"the query has {len(query):,} characters; at most {MAX_QUERY_CHARS:,} are read"
    return None


def infer_provenance(sample: Sample, guide: Provenance | None = None,
                     declared: Provenance | None = None,
                     enum_vocabulary: Mapping[str, Sequence[str]] | None = None) -> InferredProvenance:
    """A source for every argument of the path. `declared` sources (an annotator's) are taken as
    they are (`check_provenance` says whether they hold); `guide` (a template's map, for an LLM
    variant) keeps each argument to its template's kind of source and keeps arguments that read
    one span together. A literal nothing explains is in `ungrounded`."""
    query = user_query(sample)
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(query_too_long(sample))
    picks_at = pick_spans(query, sample)
    claimed = [place for places in picks_at.values() for place in places]
    names = [leaf for call in sample.all_calls() for _, leaf in json_leaves_with_paths(call.arguments)
             if isinstance(leaf, str) and len(leaf.strip()) > 2 and parse_reference(leaf) is None]
    vocabulary = enum_vocabulary or _vocabulary(guide, declared) or COMMON_ENUM_WORDS
    reading = _QueryReading(query, QueryFacts(query), claimed, vocabulary, names)
    schemas = parameter_schemas(sample)
    calls = sample.all_calls()
    earlier = responses_before(sample)
    readers = _readers(sample)
    marks = annotator_marks(sample)
    result = InferredProvenance({})
    unexplained: dict[str, list[ProvenanceProblem]] = {}
    chosen_spans: dict[str, list[QuerySpan]] = {}
    used: dict[tuple[int, int], str] = {}
    # calls with a clause of their own in path order (a query says its steps in order: the search's
    # dates come before its rooms' repeated ones), then the lookups, each near what reads it
    lookups = [call for call in calls if call.label in readers
               and not any(parse_reference(leaf) for _, leaf in json_leaves_with_paths(call.arguments))]
    named = [call for call in lookups if _said_once(call, reading)]  # a place named once anchors its readers
    lookup_names = {call.label: [v for v in call.arguments.values() if isinstance(v, str) and v.strip()]
                    for call in lookups if call not in named}
    ordered = named + [call for call in calls if call not in lookups] + [c for c in reversed(lookups) if c not in named]
    for call in ordered:
        sources: dict[str, ValueSource] = {}
        to_place: list[_Slot] = []
        properties = schemas.get(call.name, {})
        for name, value in call.arguments.items():
            schema = properties.get(name) if isinstance(properties.get(name), dict) else {}
            given = (declared or {}).get(call.label, {}).get(name)
            if given is not None:
                sources[name] = given
            elif parse_reference(value) is not None:
                sources[name] = reference_source(sample, call, value, earlier.get(call.label, {}), query, picks_at)
            elif isinstance(value, (list, dict)):
                sources[name] = _composite(value, reading, earlier.get(call.label, {}), sample, call,
                                           query, picks_at, schema)
            elif value is None or isinstance(value, bool):
                sources[name] = ValueSource(kind="default", rule="switch")
            else:
                to_place.append(_Slot(call.label, name, value, schema))
        # the call's clause: the words that pick what it reads ("the first hotel") are its own; the
        # clauses of the calls that read it pull its words near them (a lookup's place)
        fixed = [span.start for source in sources.values() if source.kind == "reference" for span in source.spans]
        fixed += [span.start for label in _read_labels(call) if label in {c.label for c in named}
                  for span in chosen_spans.get(label, [])]
        # a lookup has no clause of its own: its place is said where what reads it is
        anchors = [span.start for reader in readers.get(call.label, ()) for span in chosen_spans.get(reader, [])] \
            if call in lookups else []
        names = [value for label in sorted(_read_labels(call)) if label in lookup_names for value in lookup_names[label]]
        placed = _place(to_place, reading, fixed, anchors, used, guide, earlier.get(call.label, {}), names)
        for slot in to_place:
            source = placed.get(slot.parameter)
            if source is None and (slot.label, slot.parameter) in marks:  # the annotator's word, with the reason
                source = ValueSource(kind="derived", rule=ANNOTATOR, note=marks[(slot.label, slot.parameter)])
            if source is None:
                unexplained.setdefault(call.label, []).append(ProvenanceProblem(slot.label, slot.parameter, "ungrounded",
                                                           "nothing in the query or an earlier response states it",
                                                           slot.value))
                continue
            sources[slot.parameter] = source
        for source in sources.values():
            for span in source.spans:
                used.setdefault(span.key(), call.label)
        chosen_spans[call.label] = [span for source in sources.values() for span in source.spans]
        result.provenance[call.label] = {name: sources[name] for name in call.arguments if name in sources}
    result.provenance = {call.label: result.provenance[call.label] for call in calls if call.label in result.provenance}
    _add_mentions(result.provenance, lookups, reading, used)
    _carry_party(result.provenance, calls)
    result.ungrounded = [problem for call in calls for problem in unexplained.get(call.label, [])]
    return result


def _read_labels(call: Call) -> set[str]:
    return {reference.label for reference in (parse_reference(leaf) for _, leaf in json_leaves_with_paths(call.arguments))
            if reference is not None}


def _said_once(call: Call, reading: _QueryReading) -> bool:
    texts = [value for value in call.arguments.values() if isinstance(value, str)]
    return len(texts) == 1 and len(call.arguments) == 1 and len(reading.literal_places(texts[0])) == 1


def _add_mentions(provenance: Provenance, lookups: Sequence[Call], reading: _QueryReading,
                  used: Mapping[tuple[int, int], str]) -> None:
    """A place a lookup was given, said again where its result is used ("tell me about Senso-ji
    Temple, then ... return it at Senso-ji Temple"): the other places the query says the same
    name, when no other value claims them, are spans of the same source, so a new place is said
    in all of them at once."""
    taken = list(used)
    for call in lookups:
        for name, source in provenance.get(call.label, {}).items():
            if source.kind != "slot" or source.rule != LITERAL or len(source.spans) != 1:
                continue
            value = call.arguments.get(name)
            if not isinstance(value, str):
                continue
            extra = [reading.span(s, e) for s, e in reading.literal_places(value)
                     if not _overlaps(s, e, taken)]
            if extra:
                spans = tuple(sorted([*source.spans, *extra], key=lambda span: span.start))
                provenance[call.label][name] = source.model_copy(update={"spans": spans})
                taken += [span.key() for span in extra]


def _carry_party(provenance: Provenance, calls: Sequence[Call]) -> None:
    """A party said once for a chain of calls is the source of every call of the chain holding
    that party: a search's adults=1 equal to its default is the "1 adult" said for its rooms."""
    by_label = {call.label: call for call in calls}
    changed = True
    while changed:
        changed = False
        for reader in calls:
            for label in _read_labels(reader):
                source_call = by_label.get(label)
                if source_call is None:
                    continue
                for name in CARRIED_PARAMETERS:
                    pair = [(reader, source_call), (source_call, reader)]
                    for one, other in pair:
                        mine = provenance.get(one.label, {}).get(name)
                        theirs = provenance.get(other.label, {}).get(name)
                        if (mine is not None and theirs is not None and mine.kind == "default" and theirs.kind in QUERY_KINDS
                                and same_value(one.arguments.get(name), other.arguments.get(name))):
                            provenance[one.label][name] = theirs
                            changed = True


# How users name the orders that travel and shopping APIs sort by, for a file without its templates'
# maps (a map's own words, when it has any, are used instead): "sorted by cheapest" is `price`.
COMMON_ENUM_WORDS: Mapping[str, Sequence[str]] = {
    "price": ("cheapest", "lowest price"),
    "distance": ("closest", "nearest"),
    "review_score": ("best reviewed", "best rated", "highest rated", "top rated"),
    "popularity": ("most popular",),
}


def _vocabulary(*maps: Provenance | None) -> dict[str, list[str]]:
    """Enum words the maps name (a template's "best reviewed" for review_score)."""
    words: dict[str, list[str]] = {}
    for provenance in maps:
        for arguments in (provenance or {}).values():
            for source in arguments.values():
                if source.rule == "enum.words" and source.params.get("words") and source.params.get("value"):
                    words.setdefault(source.params["value"], []).append(source.params["words"])
    return words


def _shown(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def responses_before(sample: Sample) -> dict[str, dict[str, Any]]:
    """label -> the responses of the steps before its own (what a literal may be copied from)."""
    seen: dict[str, Any] = {}
    before: dict[str, dict[str, Any]] = {}
    for step in sample.all_steps():
        for call in step:
            before[call.label] = dict(seen)
        for call in step:
            if "response" in call.model_fields_set:
                seen[call.label] = call.response
    return before


def _response_candidate(value: Any, responses: Mapping[str, Any]) -> _Candidate | None:
    for label, response in responses.items():
        for path, leaf in json_leaves_with_paths(response):
            if not isinstance(leaf, bool) and type(leaf) is type(value) and leaf == value:
                return _Candidate(ValueSource(kind="response", params={"path": format_reference(label, path)}),
                                  cost=RESPONSE_COST)
    return None


def _default_candidate(value: Any, schema: Mapping[str, Any]) -> _Candidate | None:
    if "default" in schema and same_value(schema["default"], value) and type(schema["default"]) is not bool:
        return _Candidate(ValueSource(kind="default", rule="schema"), cost=DEFAULT_COST)
    return None


def _place(slots: Sequence[_Slot], reading: _QueryReading, fixed: Sequence[int], anchors: Sequence[int],
           used: Mapping[tuple[int, int], str], guide: Provenance | None,
           responses: Mapping[str, Any], names: Sequence[str] = ()) -> dict[str, ValueSource]:
    """One source per argument of one call: its spans as close together (with the `fixed` words of
    its clause) as the query allows, and near the `anchors` (its readers' words) when that ties."""
    options: list[list[_Candidate]] = []
    for slot in slots:
        found = reading.candidates(slot.value, slot.schema, slot.parameter)
        wanted = (guide or {}).get(slot.label, {}).get(slot.parameter)
        if wanted is not None and wanted.kind in QUERY_KINDS:
            same_rule = [c for c in found if c.source.rule == wanted.rule]
            found = same_rule or found
        extra = [c for c in (_default_candidate(slot.value, slot.schema), _response_candidate(slot.value, responses))
                 if c is not None]
        if wanted is not None and wanted.kind == "default":
            extra = [c for c in extra if c.source.kind == "default"] or extra
            found = [] if extra else found
        found = _nearest(found, list(fixed) or list(anchors)) + extra
        options.append(found)
    placed: dict[str, ValueSource] = {}
    # a party is said once for a chain, often in another call's clause: it does not say where this
    # call's clause is, and is placed after the call's own words
    carried = [(slot, found) for slot, found in zip(slots, options) if found and slot.parameter in CARRIED_PARAMETERS]
    open_slots = [(slot, found) for slot, found in zip(slots, options) if found and slot.parameter not in CARRIED_PARAMETERS]
    if not open_slots:
        open_slots, carried = carried, []
    if not open_slots:
        return placed
    # the places the call reads are said in its clause ("hotels near Kreuzberg for a week ..."): each
    # name joins the clause at one of the places the query says it
    for name in names:
        spots = [_Candidate(ValueSource(kind="slot", rule=LITERAL, spans=(reading.span(s, e),)), virtual=True)
                 for s, e in reading.literal_places(name)]
        if spots:
            open_slots.append((None, spots))
    combos = 1
    for _, found in open_slots:
        combos *= len(found)
    if combos <= MAX_COMBINATIONS:
        # a tie goes to the words no other call reads (the second "with prices in yen" of "... for
        # the rooms ... with prices in yen" is the rooms' own), then to the earliest
        best = min(itertools.product(*[found for _, found in open_slots]),
                   key=lambda combo: (_combo_cost(combo, fixed, anchors, used), _reused(combo, used), _order_key(combo)))
    else:  # too many: each argument nearest what is placed so far
        best, placed_so_far = [], list(fixed)
        for _, found in open_slots:
            pick = min(found, key=lambda c: (_combo_cost([c], placed_so_far, anchors, used), _order_key([c])))
            best.append(pick)
            placed_so_far += list(pick.positions)
    for (slot, _), candidate in zip(open_slots, best):
        if slot is not None:
            placed[slot.parameter] = candidate.source
    positions = [p for candidate in best for p in candidate.positions] + list(fixed)
    taken = {key for candidate in best if not candidate.virtual for key in candidate.keys}
    for slot, found in carried:
        centre = sum(positions) / len(positions) if positions else 0.0
        if any(candidate.source.rule == "count.words" for candidate in found):
            # a party phrase says the value ("just for me"): it is not the schema's default
            found = [candidate for candidate in found if candidate.positions]
        pick = min(found, key=lambda c: (_carried_cost(c, centre, taken, used), _order_key([c])))
        placed[slot.parameter] = pick.source
    return placed


def _carried_cost(candidate: _Candidate, centre: float, taken: set[tuple[int, int]],
                  used: Mapping[tuple[int, int], str]) -> float:
    """A party's words: near the call's own, never words its other values read ("within 3 km" for a
    group of three), and words another call reads only when nothing closer says it."""
    distance = min((abs(p - centre) for p in candidate.positions), default=0.0)
    return (candidate.cost + distance + 2 * REUSE_COST * sum(key in taken for key in candidate.keys)
            + REUSE_COST * _reused([candidate], used))


def _nearest(found: list[_Candidate], anchors: Sequence[int]) -> list[_Candidate]:
    if len(found) <= MAX_CANDIDATES or not anchors:
        return found[:MAX_CANDIDATES] if not anchors else found
    return sorted(found, key=lambda c: min((abs(p - a) for p in c.positions for a in anchors), default=0))[:MAX_CANDIDATES]


ANCHOR_WEIGHT = 0.25  # a reader's words pull a call's words less than its own clause holds them together


def _combo_cost(combo: Sequence[_Candidate], fixed: Sequence[int], anchors: Sequence[int],
                used: Mapping[tuple[int, int], str]) -> float:
    positions = [p for candidate in combo for p in candidate.positions] + list(fixed)
    spread = (max(positions) - min(positions)) if positions else 0
    cost = spread + sum(candidate.cost for candidate in combo)
    if positions and anchors:
        centre = sum(positions) / len(positions)
        cost += ANCHOR_WEIGHT * min(abs(centre - anchor) for anchor in anchors)
    keys = [key for candidate in combo if not candidate.virtual for key in candidate.keys]
    cost += REUSE_COST * _reused(combo, used)
    # one span usually says one value of a call (a derived date's anchor is its start's own words)
    own = [key for candidate in combo if not candidate.virtual
           for key in (candidate.keys[1:] if candidate.source.rule in DEPENDENT_RULES else candidate.keys)]
    cost += 2 * REUSE_COST * (len(own) - len(set(own)))
    # words inside another value's words are not this value ("London" of "London Eye")
    cost += 1000.0 * sum(1 for key in keys if key not in used and _overlaps(key[0], key[1], used))
    return cost


def _reused(combo: Sequence[_Candidate], used: Mapping[tuple[int, int], str]) -> int:
    return sum(1 for candidate in combo if not candidate.virtual for key in candidate.keys if key in used)


def _order_key(combo: Sequence[_Candidate]) -> tuple[Any, ...]:
    """Ties go to the earliest words, literal before derived: deterministic."""
    return tuple((c.positions or (10**9,), c.source.kind != "slot", c.source.rule or "") for c in combo)


def _composite(value: Any, reading: _QueryReading, responses: Mapping[str, Any], sample: Sample, call: Call,
               query: str, picks_at: Mapping[int, list[tuple[int, int]]],
               schema: Mapping[str, Any] | None = None) -> ValueSource:
    items = (schema or {}).get("items") if isinstance(value, list) else None  # a list of enum members
    items = items if isinstance(items, dict) else {}
    parts = []
    for _, leaf in json_leaves_with_paths(value):
        if parse_reference(leaf) is not None:
            parts.append(reference_source(sample, call, leaf, responses, query, picks_at))
        elif leaf is None or isinstance(leaf, bool):
            parts.append(ValueSource(kind="default", rule="switch"))
        else:
            found = reading.candidates(leaf, items)
            response = _response_candidate(leaf, responses)
            chosen = found[0].source if found else (response.source if response else None)
            parts.append(chosen if chosen is not None else ValueSource(kind="default", rule="unexplained"))
    if parts and all(part.kind == "reference" for part in parts):
        return ValueSource(kind="reference", rule=parts[0].rule, spans=tuple(s for p in parts for s in p.spans))
    return ValueSource(kind="composite", parts=tuple(parts))


# --------------------------------------------------------------------------------- checking
def check_provenance(sample: Sample, provenance: Provenance, *, complete: bool = True) -> list[ProvenanceProblem]:
    """Why the map does not give the path's values (empty: every value is what its source says).
    `complete`: every argument must have a source (a map recorded for the path); otherwise only the
    sources given are checked (an annotator's partial declaration)."""
    query = user_query(sample)
    schemas = parameter_schemas(sample)
    earlier = responses_before(sample)
    problems: list[ProvenanceProblem] = []
    calls = {call.label: call for call in sample.all_calls()}
    for label, arguments in provenance.items():
        call = calls.get(label)
        for name in arguments:
            if call is None or name not in call.arguments:
                problems.append(ProvenanceProblem(label, name, "unknown_argument",
                                                  f"the path has no argument {label}.{name}"))
    for call in calls.values():
        properties = schemas.get(call.name, {})
        for name, value in call.arguments.items():
            source = provenance.get(call.label, {}).get(name)
            if source is None:
                if complete:
                    problems.append(ProvenanceProblem(call.label, name, "missing", "no source is recorded"))
                continue
            schema = properties.get(name) if isinstance(properties.get(name), dict) else {}
            message = source_problem(source, value, schema, query, earlier.get(call.label, {}))
            if message is not None:
                code, text = message
                problems.append(ProvenanceProblem(call.label, name, code, text, value))
    return problems


def source_problem(source: ValueSource, value: Any, schema: Mapping[str, Any], query: str,
                   responses: Mapping[str, Any]) -> tuple[str, str] | None:
    """(code, message) when `source` does not give `value`, else None."""
    for span in source.spans:
        if span.end > len(query) or query[span.start:span.end] != span.text:
            return "stale_span", f"the query no longer says {span.text!r} at {span.start}"
    is_reference = parse_reference(value) is not None or (isinstance(value, (list, dict)) and _all_references(value))
    if source.kind == "reference":
        return None if is_reference else ("wrong_kind", "recorded as a reference, but the value is not one")
    if is_reference:
        return "wrong_kind", f"a reference recorded as {source.kind}"
    if source.kind in QUERY_KINDS:
        if source.rule == ANNOTATOR:
            return None  # the annotator's word, with its reason (counted apart in the card)
        if source.rule is None or not source.spans:
            return "wrong_kind", f"a {source.kind} source names no rule or no words"
        texts = [span.text for span in source.spans]
        if reads_as(source.rule, texts, value, {**source.params}, schema):
            return None
        said = read(source.rule, texts, value, source.params, schema)
        shown = "nothing" if said is UNREAD else _shown(said)
        return "not_at_span", f"{source.describe()} says {shown}"
    if source.kind == "response":
        path = source.params.get("path")
        reference = parse_reference(path) if isinstance(path, str) else None
        if reference is None or reference.label not in responses:
            return "not_at_span", f"no earlier response {path!r} to copy it from"
        try:
            found = walk_path(responses[reference.label], reference.path)
        except (LookupError, TypeError):
            found = UNREAD
        return None if same_value(found, value) else ("not_at_span", f"the value at {path} is another")
    if source.kind == "default":
        if source.rule == "switch" and (value is None or isinstance(value, bool)):
            return None
        if source.rule == "schema" and "default" in schema and same_value(schema["default"], value):
            return None
        if source.rule == ANNOTATOR:
            return None
        return "not_at_span", "recorded as the parameter's default, which it is not"
    if source.kind == "composite":
        leaves = [leaf for _, leaf in json_leaves_with_paths(value)]
        if len(leaves) != len(source.parts):
            return "wrong_kind", f"{len(leaves)} values, {len(source.parts)} sources"
        for leaf, part in zip(leaves, source.parts):
            if part.kind == "default" and part.rule == "unexplained":
                return "not_at_span", f"nothing states {_shown(leaf)}"
            items = schema.get("items") if isinstance(value, list) and isinstance(schema.get("items"), dict) else {}
            problem = source_problem(part, leaf, items, query, responses)
            if problem is not None:
                return problem
        return None
    return "wrong_kind", f"unknown kind {source.kind!r}"


def _all_references(value: Any) -> bool:
    leaves = [leaf for _, leaf in json_leaves_with_paths(value)]
    return bool(leaves) and all(isinstance(leaf, str) and parse_reference(leaf) for leaf in leaves)


# ---------------------------------------------------------------------------- grounding
GROUNDING_REASONS = {
    "ungrounded": "grounding.ungrounded_value",  # nothing states the value
    "missing": "grounding.missing_provenance",  # a recorded map without a source for an argument
    "unknown_argument": "grounding.bad_provenance",
    "wrong_kind": "grounding.bad_provenance",
    "stale_span": "grounding.stale_span",  # the query no longer holds the words the map names
    "not_at_span": "grounding.not_at_span",  # the words the map names say another value
    "underivable": "grounding.not_at_span",
}


@dataclass
class GroundedValues:
    """Every argument value tied to its source: the recorded map checked, or one inferred."""

    provenance: Provenance
    recorded: bool
    problems: list[ProvenanceProblem]

    @property
    def meta(self) -> dict[str, Any]:
        return provenance_to_meta(self.provenance)

    @property
    def derived(self) -> list[dict[str, Any]]:
        """The values the query implies, with the rule and the words (`meta.grounding.derived`)."""
        found = []
        for label, arguments in self.provenance.items():
            for name, source in arguments.items():
                if source.kind == "derived" or source.kind == "response" or source.rule == ANNOTATOR:
                    rule = "response" if source.kind == "response" else source.rule
                    because = " + ".join(span.text for span in source.spans) or source.note or source.params.get("path", "")
                    found.append({"label": label, "parameter": name, "rule": rule, "because": because})
        return found


def ground_values(sample: Sample) -> GroundedValues:
    """The sample's recorded provenance checked against its path and query, or (none recorded) a
    provenance inferred from them. `ProvenanceError`: a recorded map that cannot be read."""
    recorded = recorded_provenance(sample)
    if recorded is not None:
        return GroundedValues(recorded, True, check_provenance(sample, recorded))
    inferred = infer_provenance(sample)
    return GroundedValues(inferred.provenance, False, inferred.ungrounded)


# ------------------------------------------------------------------------ stage3: new words
@dataclass(frozen=True)
class SpanEdit:
    """Replace query[start:end] with `text`."""

    start: int
    end: int
    text: str


def apply_edits(query: str, edits: Sequence[SpanEdit]) -> str:
    for edit in sorted(edits, key=lambda e: -e.start):
        query = query[:edit.start] + edit.text + query[edit.end:]
    return query


def rebase_spans(provenance: Provenance, edits: Sequence[SpanEdit], new_query: str) -> Provenance | None:
    """The map with every span moved to where its words are in the edited query: an edited span
    holds its new words, a span holding an edit is read again whole, the others shift. None when an
    edit crosses a span's edge (it cuts the words in two) or replaces a span with more around it."""
    ordered = sorted(edits, key=lambda e: e.start)

    def shift(position: int) -> int:
        return sum(len(edit.text) - (edit.end - edit.start) for edit in ordered if edit.end <= position)

    def span_of(span: QuerySpan) -> QuerySpan | None:
        same = next((edit for edit in ordered if (edit.start, edit.end) == span.key()), None)
        if same is not None:
            start = span.start + shift(span.start)
            return QuerySpan(start=start, end=start + len(same.text), text=same.text)
        for edit in ordered:
            disjoint = edit.end <= span.start or edit.start >= span.end
            holds = span.start <= edit.start and edit.end <= span.end
            if not disjoint and not holds:
                return None
        start = span.start + shift(span.start)
        end = span.end + sum(len(edit.text) - (edit.end - edit.start) for edit in ordered
                             if edit.end <= span.end and edit.start < span.end)
        return QuerySpan(start=start, end=end, text=new_query[start:end])

    def source_of(source: ValueSource) -> ValueSource | None:
        spans = [span_of(span) for span in source.spans]
        parts = [source_of(part) for part in source.parts]
        if any(item is None for item in [*spans, *parts]):
            return None
        return source.model_copy(update={"spans": tuple(spans), "parts": tuple(parts)})

    rebased: Provenance = {}
    for label, arguments in provenance.items():
        rebased[label] = {}
        for name, source in arguments.items():
            new = source_of(source)
            if new is None:
                return None
            rebased[label][name] = new
    return rebased


@dataclass
class Recomputed:
    calls: list[list[Call]]
    problems: list[ProvenanceProblem] = field(default_factory=list)
    changed: list[tuple[str, str, Any, Any]] = field(default_factory=list)  # (label, parameter, before, after)


def recompute_values(sample: Sample, provenance: Provenance) -> Recomputed:
    """Every value with query words as its source, read again from those words: after a span
    changed, every argument it feeds (a stay's end from its start and "a week", the party carried
    to the rooms) takes the value the words now say; none is carried over on its own. A source
    that reads as nothing is a problem (`underivable`)."""
    schemas = parameter_schemas(sample)
    result = Recomputed([])
    for step in sample.calls:
        new_step = []
        for call in step:
            arguments = dict(call.arguments)
            properties = schemas.get(call.name, {})
            for name, value in call.arguments.items():
                source = provenance.get(call.label, {}).get(name)
                if source is None or source.kind not in QUERY_KINDS or source.rule in (None, ANNOTATOR):
                    continue
                schema = properties.get(name) if isinstance(properties.get(name), dict) else {}
                params = dict(source.params)
                if source.rule == "enum.words" and "words" in params:
                    said = " ".join(source.spans[0].text.split()).lower()
                    if said != " ".join(str(params["words"]).split()).lower():
                        params = {}  # new words: read them as the schema's members are said
                fresh = read(source.rule, [span.text for span in source.spans], value, params, schema)
                if fresh is UNREAD:
                    result.problems.append(ProvenanceProblem(call.label, name, "underivable",
                                                             f"{source.describe()} reads as no value"))
                    continue
                if source.rule == "unit" and isinstance(value, (int, float)) and reads_as("unit", [source.spans[0].text], value, params):
                    continue  # the same quantity, rounded as written before
                if source.kind == "slot" and isinstance(value, str) and same_value(fresh, value):
                    continue  # the same words in another case
                if not same_value(fresh, value) or type(fresh) is not type(value):
                    result.changed.append((call.label, name, value, fresh))
                    arguments[name] = fresh
            new_step.append(call.model_copy(update={"arguments": arguments}))
        result.calls.append(new_step)
    return result


# ------------------------------------------------------------------- stage3: an LLM's variant
@dataclass
class FollowedTemplate:
    sample: Sample  # the variant with every query-sourced value read again from its words
    provenance: Provenance
    problems: list[ProvenanceProblem] = field(default_factory=list)
    recomputed: list[tuple[str, str, Any, Any]] = field(default_factory=list)


def follow_template(variant: Sample, template: Provenance,
                    enum_vocabulary: Mapping[str, Sequence[str]] | None = None) -> FollowedTemplate:
    """An LLM variant's values tied to its own query the way the template's were to the
    template's: each argument keeps its kind of source; a value the template derived from a date
    and a duration ("a week starting D") is derived again from the variant's date and the duration
    its query states, whatever the model wrote; arguments that read one span in the template (a
    party said once for a search and its rooms) read one span in the variant. Every value is then
    read from its words (`recompute_values`): the model's dependent values are never kept on
    their own. A value the variant's query does not state, or a rule that cannot be applied, is a
    problem (the variant's reject)."""
    inferred = infer_provenance(variant, guide=template, enum_vocabulary=enum_vocabulary)
    provenance = {label: dict(arguments) for label, arguments in inferred.provenance.items()}
    problems = [p for p in inferred.ungrounded if not _is_dependent(template, p.label, p.parameter)]
    query = user_query(variant)
    facts = QueryFacts(query)
    for label, arguments in template.items():
        for name, source in arguments.items():
            if source.rule in DEPENDENT_RULES and len(source.spans) == 2:
                anchor = _partner_span(template, provenance, label, name, source.spans[0].key())
                shift = _nearest_shift(facts, anchor) if anchor is not None else None
                if anchor is None or shift is None:
                    problems.append(ProvenanceProblem(label, name, "underivable",
                                                      f"the variant's query gives no date and duration to derive it "
                                                      f"from (the template's: {source.describe()})"))
                    provenance.get(label, {}).pop(name, None)
                    continue
                provenance.setdefault(label, {})[name] = ValueSource(
                    kind="derived", rule=source.rule, spans=(anchor, query_spans(query, shift.start, shift.end)))
    for members in _shared_spans(template):
        first = next((provenance.get(label, {}).get(name) for label, name in members
                      if provenance.get(label, {}).get(name) is not None and provenance[label][name].kind in QUERY_KINDS), None)
        if first is not None:
            for label, name in members:
                provenance.setdefault(label, {})[name] = first
    recomputed = recompute_values(variant, provenance)
    problems += recomputed.problems
    updated = variant.model_copy(update={"calls": recomputed.calls})
    return FollowedTemplate(updated, provenance, problems, recomputed.changed)


def _is_dependent(template: Provenance, label: str, name: str) -> bool:
    source = template.get(label, {}).get(name)
    return source is not None and source.rule in DEPENDENT_RULES


def _partner_span(template: Provenance, variant: Provenance, label: str, name: str,
                  key: tuple[int, int]) -> QuerySpan | None:
    """The variant's words for the date a template's derived date was counted from: the span of
    the argument that read the same words in the template (the stay's start)."""
    for other_label, arguments in template.items():
        for other_name, source in arguments.items():
            if (other_label, other_name) == (label, name) or source.rule in DEPENDENT_RULES:
                continue
            if source.spans and source.spans[0].key() == key:
                found = variant.get(other_label, {}).get(other_name)
                if found is not None and found.spans:
                    return found.spans[0]
    return None


def _nearest_shift(facts: QueryFacts, anchor: QuerySpan) -> Stated | None:
    shifts = [fact for fact in facts.stated if fact.rule in ("duration", "offset")]
    if not shifts:
        return None
    return min(shifts, key=lambda fact: (min(abs(fact.start - anchor.end), abs(anchor.start - fact.end)), fact.start))


def _shared_spans(template: Provenance) -> list[list[tuple[str, str]]]:
    """Arguments that read the very same words in the template (single-span query sources)."""
    groups: dict[tuple[Any, ...], list[tuple[str, str]]] = {}
    for label, arguments in template.items():
        for name, source in arguments.items():
            if source.kind in QUERY_KINDS and len(source.spans) == 1 and source.rule not in DEPENDENT_RULES:
                groups.setdefault((source.rule, source.spans[0].key()), []).append((label, name))
    return [members for members in groups.values() if len(members) > 1]


# ------------------------------------------------------------------------------ summaries
def kind_counts(provenance: Provenance) -> dict[str, int]:
    """Values by kind of source (`derived` split by rule as derived:<rule>), for cards and reports."""
    counts: dict[str, int] = {}
    for arguments in provenance.values():
        for source in arguments.values():
            key = source.kind if source.kind != "derived" else f"derived:{source.rule}"
            counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def shift_of(source: ValueSource) -> int | None:
    """The days a date.offset source adds to its date."""
    return shift_days(source.spans[1].text) if source.rule in DEPENDENT_RULES and len(source.spans) == 2 else None
