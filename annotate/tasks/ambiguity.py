"""Disambiguation helpers: what in a draft is likely ambiguous, flagged in the task before push.

Two kinds, the two ComplexFuncBench's senior annotators fixed by hand:
- an argument whose value the draft took from one entry of a response list in which other entries
  would have given it another value: unless the query says which, a model cannot know;
- tools whose purposes overlap (`fcbench.catalog.lint`'s overlapping-tools finding).

A warning exists to be read, so there is at most ONE per (call, argument), listing the candidate
entries inside it, and none when the query already decides the value:
- the value itself is in the query ("in USD" grounds currency_code="USD", whichever entry gave it;
  dates the query spells in words count: "November 15, 2025" grounds "2025-11-15");
- the query names the chosen entry by its position ("the second hotel" for `hotels[1]`, "the last");
- the query mentions something only the chosen entry holds (a name, a code no other candidate has);
- every candidate entry would give the same value (the choice changes nothing).

Warnings are ranked by `score` (0..1), how likely the choice is to change the gold path:
    score = 0.4 * spread + 0.3 * feeds_later + 0.2 * identifier + 0.1 * unconstrained
- spread: how many candidate entries give another value than the chosen one, saturating at 4
  (1 differing entry -> 0.25, 4 or more -> 1.0);
- feeds_later: a later call reads this call's output, so the choice propagates down the path;
- identifier: the argument is an id/code/slug/key, or a `$reference$` (a value only a response
  could supply, so the query cannot have supplied it);
- unconstrained: the query mentions nothing that holds for the chosen entry and only some others
  (a query narrowing the candidates without deciding makes a change less likely).
Overlapping tools score 0.6 when the path calls one of the two (a model may call the other),
0.3 when it calls both, 0.1 when it calls neither.

Pure functions over a canonical sample.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator, Sequence

from annotate.tasks.entries import Path, entry_id, iter_entries
from fcbench.catalog.lint import Code, lint_tools
from fcbench.checks.grounding import dates_spelled_in, query_text
from fcbench.json_values import json_leaves
from fcbench.references import iter_references, parse_reference
from fcbench.resolve import walk_path
from fcbench.sample import Call, Sample, Tool

RESPONSE_ENTRIES = "response_entries"
OVERLAPPING_TOOLS = "overlapping_tools"
SPREAD_SATURATION = 4  # this many differing candidates make the spread full
WEIGHTS = {"spread": 0.4, "feeds_later": 0.3, "identifier": 0.2, "unconstrained": 0.1}
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
            "eleventh", "twelfth")
_IDENTIFIER_NAME = re.compile(r"(^|_|[a-z])(id|ids|Id|Ids|ID|code|Code|codes|Codes|slug|Slug|key|Key)$")


@dataclass(frozen=True)
class Candidate:
    """One entry that could have supplied the argument, and the value it would give."""

    entry: str  # entry id, `var_1.data[2]`
    value: Any
    chosen: bool  # the entry the draft took the value from
    name: str = ""  # what a person recognises the entry by (its name, title or label field)

    def as_dict(self) -> dict[str, Any]:
        return {"entry": self.entry, "value": self.value, "chosen": self.chosen, "name": self.name}


@dataclass(frozen=True)
class Ambiguity:
    kind: str  # RESPONSE_ENTRIES | OVERLAPPING_TOOLS
    message: str
    entries: tuple[str, ...] = field(default=())  # entry ids to look at (candidates for deletion)
    tools: tuple[str, ...] = field(default=())
    call: str = ""  # the call label (response entries)
    argument: str = ""  # the argument name (response entries)
    score: float = 0.0  # how likely the gold path changes (see the module docstring)
    candidates: tuple[Candidate, ...] = field(default=())
    reasons: tuple[str, ...] = field(default=())  # the parts of the score, in words

    @property
    def key(self) -> str:
        """What the warning is about, one key per warning: `var_2.dest_id` or `tools:A|B`."""
        if self.kind == OVERLAPPING_TOOLS:
            return tool_pair_key(self.tools)
        return f"{self.call}.{self.argument}"

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "entries": list(self.entries), "tools": list(self.tools),
                "call": self.call, "argument": self.argument, "score": self.score,
                "candidates": [candidate.as_dict() for candidate in self.candidates], "reasons": list(self.reasons)}

    @classmethod
    def from_dict(cls, item: dict[str, Any]) -> Ambiguity:
        candidates = tuple(Candidate(str(c.get("entry", "")), c.get("value"), bool(c.get("chosen")), str(c.get("name", "")))
                           for c in item.get("candidates") or () if isinstance(c, dict))
        return cls(str(item.get("kind", "")), str(item.get("message", "")), tuple(item.get("entries") or ()),
                   tuple(item.get("tools") or ()), str(item.get("call", "")), str(item.get("argument", "")),
                   float(item.get("score") or 0.0), candidates, tuple(item.get("reasons") or ()))


def tool_pair_key(tools: Sequence[str]) -> str:
    return "tools:" + "|".join(sorted(tools))


def find_ambiguities(sample: Sample) -> list[Ambiguity]:
    """The warnings of one draft, most likely to change the gold path first (ties keep path order)."""
    flags = list(_entry_ambiguities(sample)) + list(_tool_overlaps(sample))
    ranked = sorted(enumerate(flags), key=lambda pair: (-pair[1].score, pair[0]))
    return [flag for _, flag in ranked]


# ------------------------------------------------------------------------------------------ tools
def _tool_overlaps(sample: Sample) -> Iterator[Ambiguity]:
    called = {call.name for call in sample.all_calls()}
    for flag in _overlaps_of(_tools_fingerprint(sample)):
        used = sum(tool in called for tool in flag.tools)
        score = 0.6 if used == 1 and len(flag.tools) == 2 else 0.3 if used else 0.1
        yield Ambiguity(flag.kind, flag.message, tools=flag.tools, score=score,
                        reasons=(f"the path calls {used} of the {len(flag.tools)} tools",))


def _tools_fingerprint(sample: Sample) -> str:
    """What the overlap check reads of the tools: drafts of one pipeline share their catalog, so
    the pairwise comparison runs once per distinct tool set."""
    return json.dumps([tool.model_dump(mode="json", include={"name", "description", "parameters"})
                       for tool in sample.tools], sort_keys=True)


@lru_cache(maxsize=256)
def _overlaps_of(fingerprint: str) -> tuple[Ambiguity, ...]:
    tools = [Tool.model_validate(item) for item in json.loads(fingerprint)]
    return tuple(_overlap_flags(tools))


def _overlap_flags(tools: list[Tool]) -> Iterator[Ambiguity]:
    for finding in lint_tools(tools):
        if finding.code is Code.OVERLAPPING_TOOLS:
            other = finding.message.split("'")[1] if finding.message.count("'") >= 2 else ""
            pair = (finding.tool, other) if other else (finding.tool,)
            yield Ambiguity(OVERLAPPING_TOOLS, f"tool {finding.tool} {finding.message}", tools=pair)


# -------------------------------------------------------------------------------- response entries
@dataclass(frozen=True)
class _Source:
    """Where an argument value sits in an earlier response: list item `index` of the list at
    `list_path` of call `label`, at `inner` inside the item."""

    label: str
    list_path: Path
    index: int
    inner: Path


@dataclass
class _Choice:
    """The candidates of one list for one argument: entry index -> value it would give."""

    label: str
    list_path: Path
    items: list[Any]
    chosen: set[int] = field(default_factory=set)
    values: dict[int, Any] = field(default_factory=dict)


class QueryEvidence:
    """What the query says, in the forms an argument value or an entry can be matched against."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = text.casefold()
        self.dates = dates_spelled_in(text)
        self.numbers = {float(token.replace(",", "")) for token in re.findall(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?", text)}
        self._said: dict[str, bool] = {}  # the same names recur in every entry of a response

    def mentions(self, value: Any, min_chars: int = 2) -> bool:
        """Whether a scalar value is said in the query: a word-bounded string, a number, a date."""
        if isinstance(value, bool) or value is None:
            return False
        if isinstance(value, (int, float)):
            return float(value) in self.numbers
        if not isinstance(value, str):
            return False
        needle = value.strip().casefold()
        if len(needle) < min_chars:
            return False
        if value.strip() in self.dates:
            return True
        if needle not in self._said:
            self._said[needle] = re.search(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", self.folded) is not None
        return self._said[needle]

    def grounds(self, value: Any) -> bool:
        """A whole argument value the query supplies: every distinctive leaf of it is mentioned."""
        leaves = [leaf for leaf in json_leaves(value) if _is_distinctive(leaf)]
        return bool(leaves) and all(self.mentions(leaf) for leaf in leaves)

    def position_phrases(self) -> list[tuple[str, str]]:
        """Each `the second hotel` / `the 1st result` / `the last one` of the query, as (ordinal word,
        the word after it), in order; the same phrase said twice counts twice."""
        words = "|".join(ORDINALS + ("last",)) + r"|\d+(?:st|nd|rd|th)"
        return [(match.group(1), match.group(2)) for match in
                re.finditer(rf"(?<!\w)({words})\s+(\w+)", self.folded)]


def _ordinal_suffix(number: int) -> str:
    if 10 <= number % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")


def _ordinal_words(index: int, size: int) -> set[str]:
    words = {f"{index + 1}{_ordinal_suffix(index + 1)}"}
    if index < len(ORDINALS):
        words.add(ORDINALS[index])
    if index == size - 1 and size > 1:
        words.add("last")
    return words


GENERIC_NOUNS = {"result", "results", "one", "option", "entry", "item", "match", "candidate"}


@dataclass
class _OpenArgument:
    """An argument whose value the query does not supply, with the lists still open for it."""

    call: Call
    argument: str
    choices: list[_Choice]
    by_reference: bool
    feeds_later: bool


def _entry_ambiguities(sample: Sample) -> Iterator[Ambiguity]:
    evidence = QueryEvidence(query_text(sample))
    steps = sample.all_steps()
    read_later = _labels_read_later(steps)
    tool_of = {call.label: call.name for call in sample.all_calls()}
    responses: dict[str, Any] = {}
    opened: list[_OpenArgument] = []
    for step in steps:
        for call in step:
            for argument, value in call.arguments.items():
                found = _open_argument(call, argument, value, responses, evidence, call.label in read_later)
                if found is not None:
                    opened.append(found)
        # parallel calls of one step cannot read each other: responses count from the next step
        for call in step:
            if "response" in call.model_fields_set:
                responses[call.label] = call.response
    named = _named_by_position(opened, evidence, tool_of)
    for found in opened:
        remaining = [choice for choice in found.choices if id(choice) not in named]
        if remaining:
            yield _flag(found, remaining, evidence)


def _named_by_position(opened: list[_OpenArgument], evidence: QueryEvidence, tool_of: dict[str, str]) -> set[int]:
    """The choices the query settles by position: `the second hotel` names `hotels[1]`. A phrase
    counts for a list when its noun fits it (`hotel` in `data.hotels`, in the tools' names or in
    the entries' `type`;
    `result`, `one` fit any list: `first class` fits none), and one phrase settles one choice:
    when more choices at that position fit the same phrases than the query has phrases, it cannot
    say which it meant, and they all stay open."""
    phrases = evidence.position_phrases()
    fitting: dict[int, set[int]] = {}
    entry_of: dict[int, tuple[Any, ...]] = {}  # one entry read by two arguments of a call (latitude, longitude) is one pick
    for found in opened:
        for choice in found.choices:
            entry_of[id(choice)] = (found.call.label, choice.label, tuple(choice.list_path), tuple(sorted(choice.chosen)))
            words = set().union(*(_ordinal_words(index, len(choice.items)) for index in choice.chosen))
            where = " ".join([str(part) for part in choice.list_path]
                             + [tool_of.get(choice.label, ""), found.call.name]
                             + _entry_kinds(choice.items)).casefold()
            fitting[id(choice)] = {number for number, (word, noun) in enumerate(phrases)
                                   if word in words and _noun_fits(noun, where)}
    named = set()
    for key, mine in fitting.items():
        if not mine:
            continue
        rivals = len({entry_of[other_key] for other_key, other in fitting.items() if other & mine})
        if len(mine) >= rivals:
            named.add(key)
    return named


def _entry_kinds(items: list[Any]) -> list[str]:
    """What the entries say they are (`"type": "location"` in the Amadeus answers): "the second
    location" names an entry of a list of locations."""
    return sorted({str(item["type"]) for item in items if isinstance(item, dict) and isinstance(item.get("type"), str)})


def _noun_fits(noun: str, where: str) -> bool:
    if noun in GENERIC_NOUNS:
        return True
    stem = noun[:-1] if noun.endswith("s") and len(noun) > 3 else noun
    return len(stem) >= 3 and stem in where


@dataclass(frozen=True)
class Pick:
    """One list an argument's value was picked from: the call holding the list, the list's path
    in its response, the chosen entry indexes, and how many distinct values the entries give."""

    label: str
    list_path: Path
    chosen: tuple[int, ...]
    distinct_values: int
    entries: int  # entries holding the field (the candidates)

    @property
    def list_id(self) -> str:
        return entry_id(self.label, self.list_path)


def picked_entries(sample: Sample) -> dict[str, list[Pick]]:
    """`call.argument` -> the lists its value was picked from, whatever the query says (what a
    measure of the warnings compares annotators' deletions and re-picks with)."""
    picks: dict[str, list[Pick]] = {}
    responses: dict[str, Any] = {}
    for step in sample.all_steps():
        for call in step:
            for argument, value in call.arguments.items():
                references = [reference for reference in iter_references(value) if reference.label in responses]
                for choice in _choices(value, references, responses).values():
                    distinct = len({_canonical(item) for item in choice.values.values()})
                    picks.setdefault(f"{call.label}.{argument}", []).append(
                        Pick(choice.label, choice.list_path, tuple(sorted(choice.chosen)), distinct,
                             len(choice.values)))
        for call in step:
            if "response" in call.model_fields_set:
                responses[call.label] = call.response
    return picks


def _labels_read_later(steps: Sequence[Sequence[Call]]) -> set[str]:
    return {reference.label for step in steps for call in step for reference in iter_references(call.arguments)}


def _open_argument(call: Call, argument: str, value: Any, responses: dict[str, Any], evidence: QueryEvidence,
                   feeds_later: bool) -> _OpenArgument | None:
    references = [reference for reference in iter_references(value) if reference.label in responses]
    resolved = _resolved(value, responses)
    if resolved is not None and evidence.grounds(resolved):
        return None  # the query says the value: whichever entry supplies it, the path is the same
    choices = [choice for choice in _choices(value, references, responses).values() if _is_open(choice, evidence)]
    if not choices:
        return None
    return _OpenArgument(call, argument, choices, bool(references), feeds_later)


def _flag(found: _OpenArgument, choices: list[_Choice], evidence: QueryEvidence) -> Ambiguity:
    candidates: list[Candidate] = []
    differing = 0
    narrowed = False
    for choice in choices:
        chosen_values = {_canonical(choice.values[i]) for i in choice.chosen}
        differing += sum(_canonical(v) not in chosen_values for v in choice.values.values())
        narrowed = narrowed or _query_narrows(choice, evidence)
        candidates.extend(Candidate(entry_id(choice.label, choice.list_path + (index,)), _preview(choice.values[index]),
                                    index in choice.chosen, _entry_name(choice.items[index]))
                          for index in sorted(choice.values))
    id_like = _IDENTIFIER_NAME.search(found.argument) is not None
    identifier = found.by_reference or id_like
    parts = {"spread": min(differing, SPREAD_SATURATION) / SPREAD_SATURATION,
             "feeds_later": float(found.feeds_later), "identifier": float(identifier),
             "unconstrained": float(not narrowed)}
    score = round(sum(WEIGHTS[name] * part for name, part in parts.items()), 3)
    reasons = [f"{differing} other {'entry gives' if differing == 1 else 'entries give'} another value"]
    if found.feeds_later:
        reasons.append("later calls read this call's output")
    if identifier:
        reasons.append("an identifier" if id_like else "a value only a response supplies")
    if narrowed:
        reasons.append("the query narrows the candidates without deciding")
    call, argument = found.call, found.argument
    return Ambiguity(RESPONSE_ENTRIES, _message(call, argument, choices, differing), call=call.label,
                     argument=argument, entries=tuple(candidate.entry for candidate in candidates), score=score,
                     candidates=tuple(candidates), reasons=tuple(reasons))


PREVIEW_CHARS = 200


def _preview(value: Any) -> Any:
    """A candidate's value as stored in the task: itself when small, else its JSON cut short (an
    argument reading whole entries would otherwise copy the response into every task twice)."""
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False)
        return value if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"
    if isinstance(value, str) and len(value) > PREVIEW_CHARS:
        return value[:PREVIEW_CHARS] + "…"
    return value


NAME_FIELDS = ("name", "title", "label", "detailedName", "hotel_name", "city_name")


def _entry_name(item: Any) -> str:
    if isinstance(item, dict):
        for key in NAME_FIELDS:
            if isinstance(item.get(key), str) and item[key].strip():
                return item[key].strip()
    return ""


def _message(call: Call, argument: str, choices: list[_Choice], differing: int) -> str:
    lists = ", ".join(entry_id(choice.label, choice.list_path) for choice in choices)
    picked = ", ".join(entry_id(choice.label, choice.list_path + (index,))
                       for choice in choices for index in sorted(choice.chosen))
    total = sum(len(choice.values) for choice in choices)
    return (f"{call.label}.{argument} is taken from {picked}, but {differing} of the {total} entries of {lists} "
            "would give another value: does the query say which one?")


def _resolved(value: Any, responses: dict[str, Any]) -> Any:
    """The argument with its references replaced by what they read (None when one does not resolve)."""
    reference = parse_reference(value)
    if reference is not None:
        if reference.label not in responses:
            return None
        try:
            return walk_path(responses[reference.label], reference.path)
        except (LookupError, TypeError):
            return None
    if isinstance(value, dict):
        items = {key: _resolved(item, responses) for key, item in value.items()}
        return None if any(item is None and value[key] is not None for key, item in items.items()) else items
    if isinstance(value, list):
        resolved = [_resolved(item, responses) for item in value]
        return None if any(r is None and v is not None for r, v in zip(resolved, value)) else resolved
    return value


def _choices(value: Any, references: list[Any], responses: dict[str, Any]) -> dict[tuple[str, Path, Path], _Choice]:
    """The lists the argument's value was picked from, keyed by (call, list, path inside an item):
    through a reference crossing a list index, or, for a literal, each entry holding the same leaf."""
    sources: list[_Source] = []
    if references:
        sources = [source for reference in references
                   if (source := _source_of_path(reference.label, reference.path)) is not None]
    else:
        for leaf in json_leaves(value):
            if _is_traceable_literal(leaf):
                for label, response in responses.items():
                    sources.extend(_literal_sources(label, response, leaf))
    choices: dict[tuple[str, Path, Path], _Choice] = {}
    for source in sources:
        key = (source.label, source.list_path, source.inner)
        if key not in choices:
            try:
                items = walk_path(responses[source.label], source.list_path)
            except (LookupError, TypeError):
                continue
            if not isinstance(items, list):
                continue
            choice = _Choice(source.label, source.list_path, items)
            for index, item in enumerate(items):
                if _has_path(item, source.inner):
                    choice.values[index] = walk_path(item, source.inner)
            choices[key] = choice
        index = source.index + len(choices[key].items) if source.index < 0 else source.index  # `[-1]`: the last
        if index in choices[key].values:
            choices[key].chosen.add(index)
    return {key: choice for key, choice in choices.items() if choice.chosen}


def _is_open(choice: _Choice, evidence: QueryEvidence) -> bool:
    """Whether the query leaves this choice open: another entry would give another value, and the
    query mentions nothing that singles out the chosen entry."""
    chosen_values = {_canonical(choice.values[index]) for index in choice.chosen}
    if all(_canonical(value) in chosen_values for value in choice.values.values()):
        return False  # every entry gives a value the draft already uses (or all of them are used)
    return not any(_query_decides(choice, index, evidence) for index in choice.chosen)


NAME_CHARS = 80  # strings longer than this are descriptions, not names to match a query against
MIN_TERM_CHARS = 4
STOPWORDS = {"the", "of", "and", "in", "at", "to", "from", "with", "for", "on", "de", "la", "le", "du", "des"}


def _mentioned_terms(item: Any, evidence: QueryEvidence) -> set[str]:
    """The runs of words of the item's names the query says (`charles de gaulle` of `Paris Charles
    de Gaulle Airport` in "from Charles de Gaulle"): 4+ characters, not only stopwords."""
    terms = set()
    for leaf in json_leaves(item):
        if not isinstance(leaf, str) or len(leaf) > NAME_CHARS:
            continue
        words = re.findall(r"\w[\w'-]*", leaf.casefold())
        for start in range(len(words)):
            for end in range(start + 1, min(start + 5, len(words) + 1)):
                run = words[start:end]
                term = " ".join(run)
                if (len(term) >= MIN_TERM_CHARS and not all(word in STOPWORDS for word in run)
                        and evidence.mentions(term, min_chars=MIN_TERM_CHARS)):
                    terms.add(term)
    return terms


def _holds(term: str, strings: set[str]) -> bool:
    """Whether one of an entry's strings says the term as words (`paris` in `Paris Orly Airport`)."""
    pattern = re.compile(r"(?<!\w)" + r"\W+".join(re.escape(word) for word in term.split()) + r"(?!\w)")
    return any(pattern.search(text) for text in strings)


def _query_decides(choice: _Choice, index: int, evidence: QueryEvidence) -> bool:
    """The query mentions a term of the chosen entry that no other candidate says: `Charles de
    Gaulle` singles out one airport; `Paris` does not, when `Paris Orly Airport` is a candidate."""
    terms = _mentioned_terms(choice.items[index], evidence)
    if not terms:
        return False
    others = [_strings_of(choice.items[i]) for i in choice.values if i != index]
    return any(not any(_holds(term, strings) for strings in others) for term in terms)


def _query_narrows(choice: _Choice, evidence: QueryEvidence) -> bool:
    """The query mentions a term of the chosen entry that some, not all, other candidates lack."""
    for index in choice.chosen:
        others = [_strings_of(choice.items[i]) for i in choice.values if i != index]
        for term in _mentioned_terms(choice.items[index], evidence):
            if any(not _holds(term, strings) for strings in others):
                return True
    return False


def _strings_of(item: Any) -> set[str]:
    return {leaf.strip().casefold() for leaf in json_leaves(item) if isinstance(leaf, str)}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _source_of_path(label: str, path: Path) -> _Source | None:
    """Split a reference path at its last list index: `data[2].dest_id` -> list `data`, item 2."""
    for position in range(len(path) - 1, -1, -1):
        if isinstance(path[position], int):
            return _Source(label, path[:position], path[position], path[position + 1:])
    return None


def _is_distinctive(value: Any) -> bool:
    """Values specific enough to trace: ids, names, numbers; not booleans, nulls or one letter."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return len(value.strip()) >= 2
    return isinstance(value, (int, float))


def _is_traceable_literal(value: Any) -> bool:
    """A literal worth looking for in responses: small integers (counts, classes, flags) equal
    some field of almost any entry by chance, so only larger or fractional numbers are traced."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return not (float(value).is_integer() and abs(value) <= 31)
    return _is_distinctive(value)


def _literal_sources(label: str, response: Any, value: Any) -> Iterator[_Source]:
    for entry in iter_entries(response, label):
        for inner in _paths_to(entry.value, value):
            yield _Source(label, entry.path[:-1], int(entry.path[-1]), inner)


def _paths_to(item: Any, value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Paths inside one entry to leaves equal to `value` (not descending into nested lists, which
    are entries of their own)."""
    if isinstance(item, dict):
        for key, inner in item.items():
            yield from _paths_to(inner, value, prefix + (str(key),))
    elif not isinstance(item, list) and _same_leaf(item, value):
        yield prefix


def _same_leaf(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return False
    if isinstance(left, str) and isinstance(right, str):
        return left.strip().casefold() == right.strip().casefold()
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    return False


def _has_path(item: Any, path: Path) -> bool:
    try:
        walk_path(item, path)
    except (LookupError, TypeError):
        return False
    return True
