"""The gold audit (pure): does the path do exactly what its query asks, no more, no less?

Grounding asks whether each value has a source; the audit asks whether the path as a whole means
the query. Each rule has a reject reason of its own, and they run cheapest first (the filter stops
at the first problem):

1. `gold.derived_mismatch`: a value the query implies, recomputed from the query alone: a stay
   said "for a week starting D" ends on D + 7 days in every call whose start is that D, whatever
   date is spelled elsewhere in the query;
2. `gold.party_not_carried`: a party size (adults, children, rooms) stated for a search is the one
   its reader uses, and the other way round: a hotel search for one and its rooms for four do
   not book the same trip; `gold.preference_not_carried`: a currency or language asked for a
   search is not left to the API's default in the call reading its entries (hotels "in Singapore
   dollars", then their rooms in US dollars: a model carrying the currency over is as right);
3. `gold.pick_not_stated`: a constraint that picks an entry ("the cheapest hotel rated above 8",
   `meta.picks`) is said in the query;
4. `gold.pick_boundary`: the constraint picks the same entry whether its bound is read inclusively
   or not ("after 4 pm" with a flight at 16:00 that would win);
5. `gold.pick_mismatch`: the entry the constraint picks in the recorded responses is the one the
   reader reads;
6. `gold.unstated_entry`: every list entry a reference reads is chosen by the query: a constraint,
   an ordinal ("the second room"), the place the user named (a lookup's only entry of that name),
   or the list's only entry; never an arbitrary first entry ("tell me about Rome" reading the
   first of five Rome products);
7. `gold.swapped_roles`: a call's start and end places (from/to, pick-up/drop-off) are read from
   the query's words in that order;
8. `gold.redundant_call` (shortest path): no call repeats an earlier one, and every call nobody
   reads serves something of the query no other call serves (its own words, the words that pick
   what it reads, or the words of its tool, "fare rules" for Get_Flight_Fare_Rules);
9. `gold.unserved_request`: nothing the query asks is left undone: every date, time, currency,
   stay and party it states and every entry it picks is some call's source, and no tool the query
   names by its words ("the fare rules") is left uncalled.

With an LLM configured, the filter adds a judge after execution (`fcbench.checks.gold_judge`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Iterator, Mapping, Sequence

from fcbench.checks.constraints import bound_decides, parse_path, pick_entries, read_indexes, select_index
from fcbench.checks.derivation import QueryFacts, is_iso_date
from fcbench.checks.provenance import (CARRIED_PARAMETERS, Provenance, QuerySpan, ValueSource, entry_choices, parameter_schemas, pick_records, pick_spans,
                                       responses_before)
from fcbench.references import iter_references, parse_reference
from fcbench.resolve import walk_path
from fcbench.sample import Call, Sample, user_query

_TOOL_STOPWORDS = {"get", "search", "list", "find", "by", "to", "of", "the", "for", "a", "an", "and", "from", "on",
                   "in", "location", "lat", "long", "coordinates"}
_STAY = re.compile(r"^\s*(?:starting|from|beginning|on|as of|arriving)(?: on)?\s*$", re.I)
_STAY_AFTER = re.compile(r"^\s*,?\s*for\s*$", re.I)


@dataclass(frozen=True)
class GoldProblem:
    reason: str  # gold.*
    detail: str


# ------------------------------------------------------------------------------- 1. derived
def stated_stays(query: str) -> list[tuple[tuple[int, int], int, str]]:
    """((start, end) of the date, days, words) for each stay the query ties to a date: "for a week
    starting D", "for three nights from D", "from D for two weeks"."""
    facts = QueryFacts(query)
    dates = [fact for fact in facts.stated if fact.rule == "date.spelled"]
    durations = [fact for fact in facts.stated if fact.rule == "duration"]
    stays = []
    for day in dates:
        for duration in durations:
            if duration.end <= day.start and _STAY.match(query[duration.end:day.start]):
                stays.append(((day.start, day.end), duration.value, query[duration.start:day.end]))
            elif day.end <= duration.start and _STAY_AFTER.match(query[day.end:duration.start]):
                stays.append(((day.start, day.end), duration.value, query[day.start:duration.end]))
    return stays


def derived_problems(sample: Sample, provenance: Provenance) -> list[GoldProblem]:
    query = user_query(sample)
    stays = {place: (days, words) for place, days, words in stated_stays(query)}
    problems = []
    for call in sample.all_calls():
        dates = {name: value for name, value in call.arguments.items() if isinstance(value, str) and is_iso_date(value)}
        if len(dates) != 2:
            continue
        (first, first_value), (second, second_value) = sorted(dates.items(), key=lambda item: item[1])
        source = provenance.get(call.label, {}).get(first)
        if source is None or not source.spans or source.rule not in ("date.spelled", "literal"):
            continue
        stay = stays.get(source.spans[0].key())
        if stay is None:
            continue
        days, words = stay
        expected = (date.fromisoformat(first_value) + timedelta(days=days)).isoformat()
        if second_value != expected:
            problems.append(GoldProblem("gold.derived_mismatch",
                                        f"{call.label}.{second}={second_value} but {words!r} ends on {expected}"))
    return problems


# --------------------------------------------------------------------------- 2. party carried
def _readers_and_sources(sample: Sample) -> Iterator[tuple[Call, Call]]:
    """Each call with each earlier call it reads (by reference), in path order."""
    calls = {call.label: call for call in sample.all_calls()}
    for reader in sample.all_calls():
        for source_label in sorted({ref.label for ref in iter_references(reader.arguments)}):
            if source_label in calls:
                yield reader, calls[source_label]


def party_problems(sample: Sample) -> list[GoldProblem]:
    schemas = parameter_schemas(sample)
    problems = []
    for reader, source in _readers_and_sources(sample):
        for name in CARRIED_PARAMETERS:
            reader_schema, source_schema = schemas.get(reader.name, {}).get(name), schemas.get(source.name, {}).get(name)
            if not isinstance(reader_schema, dict) or not isinstance(source_schema, dict):
                continue
            said = reader.arguments.get(name, reader_schema.get("default"))
            searched = source.arguments.get(name, source_schema.get("default"))
            if name not in reader.arguments and name not in source.arguments:
                continue
            if said != searched:
                problems.append(GoldProblem(
                    "gold.party_not_carried",
                    f"{source.label} ({source.name}) has {name}={_shown(searched)} but {reader.label} ({reader.name}), "
                    f"which reads it, has {name}={_shown(said)}"))
    return problems


# how the things found are shown: asked for a search, they hold for what reads its entries
SHOWN_IN_PARAMETERS = ("currency_code", "currency", "languagecode", "language")


def preference_problems(sample: Sample) -> list[GoldProblem]:
    """A reader that takes the source's currency (or language) but leaves it to the API's default,
    when that default is not what the source was asked in. A reader stating its own is fine."""
    schemas = parameter_schemas(sample)
    problems = []
    for reader, source in _readers_and_sources(sample):
        for name in SHOWN_IN_PARAMETERS:
            reader_schema = schemas.get(reader.name, {}).get(name)
            if not isinstance(reader_schema, dict) or name in reader.arguments or name not in source.arguments:
                continue
            if source.arguments[name] != reader_schema.get("default"):
                problems.append(GoldProblem(
                    "gold.preference_not_carried",
                    f"{source.label} ({source.name}) is asked with {name}={_shown(source.arguments[name])}; "
                    f"{reader.label} ({reader.name}), which reads it, leaves {name} to the API's default"))
    return problems


# ----------------------------------------------------------------------------------- 3-5. picks
def pick_text_problems(sample: Sample) -> list[GoldProblem]:
    query = user_query(sample)
    problems = []
    for number, places in pick_spans(query, sample).items():
        if not places:
            text = pick_records(sample)[number].get("text")
            problems.append(GoldProblem("gold.pick_not_stated", f"the query does not say {text!r}, the constraint "
                                        f"that picks what {pick_records(sample)[number].get('reader')} reads"))
    return problems


def pick_problems_over_responses(sample: Sample) -> list[GoldProblem]:
    calls = {call.label: call for call in sample.all_calls()}
    problems = []
    for record in pick_records(sample):
        entries = pick_entries(calls, record)
        reader = calls.get(record.get("reader", ""))
        if entries is None or reader is None:
            problems.append(GoldProblem("gold.pick_mismatch", f"pick {record.get('text')!r}: the path has no "
                                        f"{record.get('source')}.{record.get('list')} response to pick from"))
            continue
        if not bound_decides(entries, record):
            readings = [select_index(entries, record, inclusive) for inclusive in (True, False)]
            problems.append(GoldProblem("gold.pick_boundary", f"{record['text']!r} picks entry {readings[0]} of "
                                        f"{record['source']}.{record['list']} if its bound is read inclusively and "
                                        f"{readings[1]} if not: an entry sits on the bound"))
            continue
        index = select_index(entries, record)
        read = read_indexes(reader, record["source"], parse_path(record["list"]))
        if index is None:
            problems.append(GoldProblem("gold.pick_mismatch", f"{record['text']!r} singles out no entry of "
                                        f"{record['source']}.{record['list']} (none fits, or several tie)"))
        elif read != {index}:
            problems.append(GoldProblem("gold.pick_mismatch", f"{record['text']!r} picks "
                                        f"{record['source']}.{record['list']}[{index}] but {reader.label} reads "
                                        f"{sorted(read)}"))
    return problems


# ---------------------------------------------------------------------------------- 6. entries
def entry_problems(sample: Sample) -> list[GoldProblem]:
    query = user_query(sample)
    picks_at = pick_spans(query, sample)
    responses = responses_before(sample)
    found = []
    for call in sample.all_calls():
        for name, value in call.arguments.items():
            for reference in iter_references(value):
                for choice in entry_choices(sample, call, reference.text, responses.get(call.label, {}), query, picks_at):
                    found.append((call, name, reference, choice))
    # one ordinal phrase chooses one list: "the second hotel" names the hotels a search found, not
    # the second destination of the look-up before it (the surest reading of its noun wins)
    surest: dict[tuple[int, int], int] = {}
    for _, _, reference, choice in found:
        if choice.rule == "ordinal" and choice.span is not None:
            surest[choice.span.key()] = max(surest.get(choice.span.key(), 0), choice.strength)
    problems = []
    for call, name, reference, choice in found:
        lost = choice.rule == "ordinal" and choice.span is not None and choice.strength < surest[choice.span.key()]
        if choice.rule == "unstated" or lost:
            size = f"{choice.size} entries" if choice.size is not None else "entries"
            said = f" ({choice.span.text!r} names another list)" if lost else ""
            problems.append(GoldProblem(
                "gold.unstated_entry",
                f"{call.label}.{name} reads {choice.where(reference.label)} of {size}, and nothing in the "
                f"query says which one{said}"))
    return problems


# ----------------------------------------------------------------------------- 7. shortest path
def _resolved(sample: Sample) -> dict[str, str]:
    """label -> the call's name and arguments with references resolved (a call's identity)."""
    outputs = {call.label: call.response for call in sample.all_calls() if "response" in call.model_fields_set}

    def resolve(value: Any) -> Any:
        if isinstance(value, list):
            return [resolve(item) for item in value]
        if isinstance(value, dict):
            return {key: resolve(item) for key, item in value.items()}
        reference = parse_reference(value)
        if reference is None or reference.label not in outputs:
            return value
        try:
            return walk_path(outputs[reference.label], reference.path)
        except (LookupError, TypeError):
            return value

    return {call.label: json.dumps([call.name, resolve(call.arguments)], sort_keys=True, default=str)
            for call in sample.all_calls()}


def _stem(word: str) -> str:
    word = word.lower()
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"  # activities -> activity
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def tool_words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name)).replace("_", " ").replace("-", " ")
    return {_stem(word) for word in spaced.split() if word.lower() not in _TOOL_STOPWORDS}


def redundant_call_problems(sample: Sample, provenance: Provenance) -> list[GoldProblem]:
    calls = sample.all_calls()
    identity = _resolved(sample)
    problems = []
    seen: dict[str, str] = {}
    for call in calls:
        key = identity[call.label]
        if key in seen:
            problems.append(GoldProblem("gold.redundant_call", f"{call.label} ({call.name}) repeats {seen[key]} "
                                        "with the same arguments"))
        seen.setdefault(key, call.label)
    if problems:
        return problems
    readers: dict[str, set[str]] = {}
    for call in calls:
        for ref in iter_references(call.arguments):
            readers.setdefault(ref.label, set()).add(call.label)
        for source in provenance.get(call.label, {}).values():  # a literal copied out of a response reads it too
            copied = parse_reference(source.params.get("path")) if source.kind == "response" else None
            if copied is not None:
                readers.setdefault(copied.label, set()).add(call.label)
    query = user_query(sample).lower()
    fragments: dict[str, set[Any]] = {}
    for call in calls:
        own = {span.key() for source in provenance.get(call.label, {}).values() for span in _all_spans(source)}
        others = {word for other in calls if other.name != call.name for word in tool_words(other.name)}
        own |= {("tool", word) for word in tool_words(call.name) - others
                if re.search(rf"\b{re.escape(word)}s?\b", query)}
        fragments[call.label] = own
    for call in calls:
        if call.label in readers:
            continue
        chain = _exclusive_chain(call.label, calls, readers)
        served = set().union(*(fragments[label] for label in chain))
        if not served and call.label in provenance:
            # the map knows the call but ties none of its values to words (each read from a response,
            # or inside a list argument): nothing shows it repeats another call, so it is no verdict
            continue
        elsewhere = set().union(*(fragments[c.label] for c in calls if c.label not in chain))
        if not served - elsewhere:
            problems.append(GoldProblem("gold.redundant_call", f"nothing in the query asks for {call.label} "
                                        f"({call.name}): no other call reads it, and every word it and the calls "
                                        "only it reads serve is served by another call"))
    return problems


def _all_spans(source: ValueSource) -> list[QuerySpan]:
    """The words a value is tied to, those of a composite's parts included (a list argument's
    entries: `observations[0].entityName` said "Alice")."""
    return [*source.spans, *(span for part in source.parts for span in _all_spans(part))]


def _exclusive_chain(leaf: str, calls: Sequence[Call], readers: Mapping[str, set[str]]) -> set[str]:
    """The leaf and the calls that exist only for it (every reader of theirs is in the chain)."""
    chain = {leaf}
    changed = True
    while changed:
        changed = False
        for call in calls:
            if call.label not in chain and readers.get(call.label) and readers[call.label] <= chain:
                chain.add(call.label)
                changed = True
    return chain


# ------------------------------------------------------------------ 8. what the query asks, served
_ORDINAL_PHRASE = re.compile(r"\bthe (?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)(?: [a-z-]+)?? [a-z]+\b",
                             re.I)
_LITERAL_DATE_OR_TIME = re.compile(r"(?<![\w:-])(?:\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2})(?![\w:-])")


def unserved_problems(sample: Sample, provenance: Provenance) -> list[GoldProblem]:
    """What the query asks that no call does: a date, time, currency, stay or party it states, an
    entry it picks ("the second room"), or a tool's words ("the fare rules") that no call's source
    reads (a call dropped from the path leaves its words behind)."""
    query = user_query(sample)
    used = [span.key() for arguments in provenance.values() for source in arguments.values()
            for span in _all_spans(source)]
    used += [place for places in pick_spans(query, sample).values() for place in places]

    def free(start: int, end: int) -> bool:
        return not any(start < right and left < end for left, right in used)

    problems = []
    for fact in QueryFacts(query).stated:
        countable = fact.rule != "count.words" or " " in fact.text.strip()  # a party phrase, not a bare "two"
        # a stay's length, not a rate's unit ("for three nights", not "180 GBP a night")
        lasting = fact.rule != "duration" or query[max(0, fact.start - 4):fact.start].lower() == "for "
        if fact.value is not None and countable and lasting and fact.rule != "unit" and free(fact.start, fact.end):
            problems.append(GoldProblem("gold.unserved_request", f"the query says {fact.text!r} and no call uses it"))
    said = {query[left:right].lower() for left, right in used}
    for pattern in (_ORDINAL_PHRASE, _LITERAL_DATE_OR_TIME):
        for match in pattern.finditer(query):
            # the same words again name the same thing ("the third hotel near the first point of
            # interest", after the first point of interest was asked about)
            # "of the first search" says which list another phrase picks from: no entry of its own
            naming_a_search = pattern is _ORDINAL_PHRASE and match.group(0).lower().endswith((" search", " searches"))
            if free(match.start(), match.end()) and not naming_a_search \
                    and not (pattern is _ORDINAL_PHRASE and match.group(0).lower() in said):
                problems.append(GoldProblem("gold.unserved_request", f"the query says {match.group(0)!r} and no call uses it"))
    called = {call.name for call in sample.all_calls()}
    called_words = {word for name in called for word in tool_words(name)}
    # a word a called tool's own description uses is that tool's ("pick-up locations of rental
    # cars" is the car-location look-up, not a rental search)
    called_words |= {_stem_word(word) for tool in sample.tools if tool.name in called
                     for word in re.findall(r"[a-z]+", (tool.description or "").lower())}
    lowered = query.lower()
    for tool in sample.tools:
        if tool.name in called:
            continue
        own = {word for word in tool_words(tool.name) if word not in called_words
               and _stem_word(word) not in called_words and len(word) > 3}
        if own and all(re.search(rf"\b{re.escape(word)}s?\b", lowered) for word in own):
            problems.append(GoldProblem("gold.unserved_request", f"the query asks for {' '.join(sorted(own))} "
                                        f"({tool.name}) and no call does it"))
    return problems


def _stem_word(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _all_spans(source: Any) -> list[Any]:
    return [*source.spans, *(span for part in source.parts for span in _all_spans(part))]


# ----------------------------------------------------------------------- 9. roles said in order
_START_ROLE = re.compile(r"^(from|origin|pick_?up|source|start)_?", re.I)
_END_ROLE = re.compile(r"^(to|destination|drop_?off|target|end)_?", re.I)


def _role(name: str) -> tuple[str, str] | None:
    """('start'|'end', what is left of the name): fromId -> (start, id), drop_off_latitude -> (end, latitude)."""
    for role, pattern in (("start", _START_ROLE), ("end", _END_ROLE)):
        match = pattern.match(name)
        if match and match.end() < len(name):
            return role, name[match.end():].lstrip("_").lower()
    return None


def swapped_role_problems(sample: Sample, provenance: Provenance) -> list[GoldProblem]:
    """A call's start and end places (from/to, pick-up/drop-off, origin/destination) said in that
    order: "from Colosseum to Ciampino" is not a ride from Ciampino."""
    calls = {call.label: call for call in sample.all_calls()}

    def places(label: str) -> list[int]:
        """Where the query names the place a lookup was given (a place said through another call,
        "that place", has no words of its own to compare)."""
        if label not in calls or any(parse_reference(v) for v in calls[label].arguments.values()):
            return []
        return [span.start for source in provenance.get(label, {}).values() if source.kind == "slot"
                for span in source.spans]

    problems = []
    for call in sample.all_calls():
        clause = [span.start for source in provenance.get(call.label, {}).values() if source.kind in ("slot", "derived")
                  for span in source.spans]
        if not clause:
            continue
        centre = sum(clause) / len(clause)
        roles: dict[str, dict[str, int]] = {"start": {}, "end": {}}
        for name, value in call.arguments.items():
            role = _role(name)
            reference = parse_reference(value)
            if role is None or reference is None:
                continue
            spots = places(reference.label)
            if spots:
                roles[role[0]][role[1]] = min(spots, key=lambda p: (abs(p - centre), p))
        for rest, start in roles["start"].items():
            end = roles["end"].get(rest)
            if end is not None and start > end:
                problems.append(GoldProblem("gold.swapped_roles", f"{call.label} ({call.name}) starts where the "
                                            f"query says it ends: its start {rest} is read from words after its end's"))
                break
    return problems


# ---------------------------------------------------------------------------------- the audit
def gold_audit(sample: Sample, provenance: Provenance) -> list[GoldProblem]:
    """Every problem, cheapest rule first (the filter rejects with the first)."""
    problems = derived_problems(sample, provenance)
    problems += party_problems(sample)
    problems += preference_problems(sample)
    problems += pick_text_problems(sample)
    problems += pick_problems_over_responses(sample)
    problems += entry_problems(sample)
    problems += swapped_role_problems(sample, provenance)
    problems += redundant_call_problems(sample, provenance)
    problems += unserved_problems(sample, provenance)
    return problems


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


__all__ = ["CARRIED_PARAMETERS", "GoldProblem", "gold_audit", "stated_stays", "tool_words"]
