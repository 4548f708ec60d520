"""Stage1's offline query writer: the words of a draft's query (pure; the graph sampler plans and
executes the calls, this module says them).

A query is written from phrase templates, one clause per call the user asks for, in sentences a
person would write: an opener ("Could you ...?", "Please ...", "I need you to ..."), clauses of one
chain joined one of several ways (", then ...", ". After that, ...", " and then ..."), the chains of
a cross-domain request introduced as a separate wish ("Also, ...", "Separately, ..."). Every choice
takes the caller's `random.Random`: the same seed writes the same query.

The phrase file (`generate/prompts/graph_sampler_phrases.txt`, or a dataset's own `phrases.txt`):

    TOOL = clause                          the clause asking for one call (its required arguments)
    TOOL.parameter = fragment              added to the clause when the optional argument is set
    TOOL@result = noun                     what an entry of the tool's results is ("the second hotel")
    TOOL@where = words                     which of the tool's result lists, when a query asks for
                                           two lists of one noun ("the first hotel in {cityCode}")
    TOOL.parameter<SOURCE = words          how the user names what the argument reads from an
                                           earlier call of SOURCE, said from that call's own
                                           arguments ("write_file.content<read_text_file = the
                                           text of {path}"; `{nth}`: the entry picked, "second");
                                           a call every reader names this way by all its
                                           arguments gets no clause of its own. One phrase a key.
    TOOL[parameter:kind|kind] = clause     used instead when the argument's place is of that kind
                                           (the value pool slot it came from: "hotels near" a
                                           landmark, "hotels in" a city) or the argument is that
                                           literal value; fragments take conditions the same way
                                           (TOOL.parameter[parameter:value] = fragment)
    ... = -                                this call (or this optional value) is not said: a
                                           clause "-" makes the plan unusable, a fragment "-" leaves
                                           the optional argument unset

A key given on several lines has several phrasings; the writer picks one. Placeholders are the
call's argument values as a user says them:

    {param}                  the value (dates as "June 12, 2025", enum values in words); param
                             may be a path into a list argument ({entities[0].name},
                             fcbench.argument_paths), in keys too (TOOL.entities[0].entityType)
    {param|noun}             an argument read from an earlier result: the name the user gave
                             ("Sydney"), "the second noun" for a picked entry, or what named it
    {param|singular|plural}  a count with its noun ("1 adult", "3 adults")
    {+}                      where the fragments go (default: at the end of the clause)
    {in~param} {at~param} {near~param}
                             the preposition for the place the argument names: "in" a city, "near"
                             a landmark or an airport; "at" a place, "in" a city; "near" a place
                             or a district (a search around a district's centre also finds hotels
                             of its neighbours), "in central" a city

A tool without a clause gets one made from its name and its arguments' names (never its
description: an API's summary is not what a user asks).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fcbench.argument_paths import argument_schema
from fcbench.sample import Tool
from generate.slots import spell_date

NOT_SAID = "-"  # a phrase that says nothing: the call (or optional value) cannot be asked for
OPTIONAL_SLOT = "{+}"  # where a clause's optional fragments go (else at its end)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# {param}, {param|noun}, {param|singular|plural}; param may be a path into a list argument (entities[0].name)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w]*(?:\[\d+\]|\.[A-Za-z_]\w*)*)(?:\|([^{}|]*))?(?:\|([^{}|]*))?\}")
_PREPOSITION = re.compile(r"\{(in|at|near)~([A-Za-z_][\w]*)\}")
# the preposition a place takes, by the kind of place (the value pool slot it came from)
PREPOSITIONS = {"in": {"landmark": "near", "airport": "near"}, "at": {"city": "in"},
                "near": {"city": "in central"}}
_KEY = re.compile(r"^(?P<tool>[^\s\[\].@]+)(?:\[(?P<when>[^\]]*)\])?(?:\.(?P<parameter>[^\s@\[\]]+(?:\[\d+\][^\s@\[\]]*)*))?"
                  r"(?:\[(?P<when_after>[^\]]*)\])?(?:@(?P<noun>result|where))?$")
SayArgument = Callable[[str, list[str]], str]  # (parameter, extra placeholder parts) -> text


class Unsayable(Exception):
    """The plan's calls cannot be asked for in words the phrase file has (a clause "-")."""


# ----------------------------------------------------------------------------------- the phrases
@dataclass(frozen=True)
class Phrase:
    template: str
    when: Mapping[str, frozenset[str]] = field(default_factory=dict)  # parameter -> kinds or values

    def applies(self, kinds: Mapping[str, str]) -> bool:
        return all(kinds.get(parameter) in allowed for parameter, allowed in self.when.items())


@dataclass(frozen=True)
class PhraseBook:
    clauses: dict[str, list[Phrase]] = field(default_factory=dict)  # tool -> its phrasings
    fragments: dict[tuple[str, str], list[Phrase]] = field(default_factory=dict)  # (tool, parameter) -> phrasings
    nouns: dict[str, str] = field(default_factory=dict)  # tool -> what an entry of its results is
    wheres: dict[str, str] = field(default_factory=dict)  # tool -> which of its lists ("in {cityCode}")
    # (reader tool, parameter, source tool) -> how the user names what the argument reads, from the
    # source's arguments: `write_file.content<read_text_file = the text of {path}`
    references: dict[tuple[str, str, str], str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> "PhraseBook":
        book = cls()
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, template = (part.strip() for part in line.split("=", 1))
            if "<" in key:
                book._add_reference(key, template, number)
                continue
            match = _KEY.match(key)
            if match is None:
                raise ValueError(f"line {number}: {key!r} is not TOOL, TOOL.parameter, TOOL@result or TOOL[p:kind]")
            tool = match.group("tool")
            if match.group("noun") == "result":
                book.nouns[tool] = template
                continue
            if match.group("noun") == "where":
                book.wheres[tool] = template
                continue
            phrase = Phrase(template, _conditions(",".join(filter(None, (match.group("when"), match.group("when_after")))),
                                                  number))
            if match.group("parameter"):
                book.fragments.setdefault((tool, match.group("parameter")), []).append(phrase)
            else:
                book.clauses.setdefault(tool, []).append(phrase)
        return book

    def _add_reference(self, key: str, template: str, number: int) -> None:
        reader, source = (part.strip() for part in key.split("<", 1))
        match = _KEY.match(reader)
        if match is None or not match.group("parameter") or match.group("when") or match.group("when_after") \
                or match.group("noun") or not re.fullmatch(r"[^\s\[\].@<]+", source):
            raise ValueError(f"line {number}: {key!r} is not TOOL.parameter<SOURCE_TOOL")
        entry = (match.group("tool"), match.group("parameter"), source)
        if entry in self.references:  # one phrase: a reader's clause and its source's both depend on it
            raise ValueError(f"line {number}: {key!r} is given twice (a reference has one phrase)")
        self.references[entry] = template

    @classmethod
    def load(cls, path: Path) -> "PhraseBook":
        return cls.parse(path.read_text(encoding="utf-8"))

    def clause_phrases(self, tool: Tool, kinds: Mapping[str, str]) -> list[str]:
        """The clauses that may ask for this call; [] when the phrase file says it is not said."""
        phrases = _applicable(self.clauses.get(tool.name, []), kinds)
        if not phrases:
            return [generic_clause(tool)]
        return [] if any(p == NOT_SAID for p in phrases) else phrases

    def fragment_phrases(self, tool: Tool, parameter: str, kinds: Mapping[str, str]) -> list[str]:
        phrases = _applicable(self.fragments.get((tool.name, parameter), []), kinds)
        if not phrases:  # (a path into a list argument is named by its last key: "entities[0].entityType")
            name = re.sub(r"\[\d+\]", "", parameter).split(".")[-1] if re.search(r"\[\d+\]", parameter) else parameter
            return [f"with {' '.join(_name_words(name))} {{{parameter}}}"]
        return [] if any(p == NOT_SAID for p in phrases) else phrases

    def states_constraint(self, tool: Tool, arguments: Mapping[str, Any], words: Mapping[str, str] | None = None) -> bool:
        """Whether every phrasing of the fragments for these optional arguments says each value the
        way the filter's grounding check reads it back (a fragment "-" says nothing, a fragment
        naming an argument that is not set would leave a hole)."""
        kinds = literal_kinds(arguments)
        for name in arguments:
            phrasings = self.fragment_phrases(tool, name, kinds)
            if not phrasings:
                return False
            for template in phrasings:
                names = placeholders(template)
                if name not in names or any(p not in arguments for p in names):
                    return False
                text = fill_placeholders(template, lambda p, extra: say_literal(tool, p, arguments.get(p), extra,
                                                                                (words or {}).get(p))).lower()
                if not all(_states(text, arguments[p]) for p in names):
                    return False
        return True


def _states(text: str, value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return bool(re.search(rf"(?<![\w.]){re.escape(number_text(value))}(?![\w]|\.\d)", text))
    if isinstance(value, list):
        return bool(value) and all(_states(text, item) for item in value)
    value = str(value)
    if _ISO_DATE.match(value):
        return spell_date(value).lower() in text
    return _spoken_value(value) in text or value.lower() in text


def _conditions(text: str, number: int) -> dict[str, frozenset[str]]:
    when = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        if ":" not in part:
            raise ValueError(f"line {number}: condition {part!r} is not parameter:kind|kind")
        parameter, kinds = part.split(":", 1)
        when[parameter.strip()] = frozenset(kind.strip() for kind in kinds.split("|") if kind.strip())
    return when


def _applicable(phrases: Sequence[Phrase], kinds: Mapping[str, str]) -> list[str]:
    """The phrasings whose conditions hold; the unconditional ones when none of those does."""
    conditional = [p.template for p in phrases if p.when and p.applies(kinds)]
    return conditional or [p.template for p in phrases if not p.when]


def literal_kinds(arguments: Mapping[str, Any]) -> dict[str, str]:
    """A literal argument's own value is its kind for conditions (`[sortBy:lowest_price]`; a list
    of one value: that value, `[subType:AIRPORT]`)."""
    kinds = {}
    for name, value in arguments.items():
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            kinds[name] = str(value)
    return kinds


def fill_placeholders(template: str, say: SayArgument) -> str:
    return _PLACEHOLDER.sub(lambda m: say(m.group(1), [part for part in m.groups()[1:] if part is not None]), template)


def placeholders(template: str) -> list[str]:
    return [match.group(1) for match in _PLACEHOLDER.finditer(template)]


# ---------------------------------------------------------------------------------- values said
def number_text(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _spoken_value(value: str) -> str:
    """An enum value in words: PREMIUM_ECONOMY -> "premium economy" (what grounding reads back)."""
    return value.replace("_", " ").replace("-", " ").lower()


def say_literal(tool: Tool, parameter: str, value: Any, extra: list[str], words: str | None = None) -> str:
    """A literal argument as a user says it: dates spelled, enum values in words (the value pool's
    `words` when they contain the value's own words, so grounding still reads it back: "business
    class"), a code of three capitals as written (USD), counts with their noun."""
    schema = argument_schema(tool.parameters, parameter)
    if isinstance(value, str) and _ISO_DATE.match(value):
        return spell_date(value)
    if isinstance(value, str) and (schema.get("enum") or (schema.get("items") or {}).get("enum")) \
            and not (len(value) <= 3 and value.isupper()):
        spoken = _spoken_value(value)
        return words if words and spoken in words.lower() else spoken
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return " and ".join(say_literal(tool, parameter, item, [], None) if not (schema.get("items") or {}).get("enum")
                            else _spoken_value(item) for item in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = number_text(value)
        if len(extra) == 2:
            return f"{text} {extra[0] if value == 1 else extra[1]}"
        return text
    return "" if value is None else str(value)


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)).replace("_", " ").replace("-", " ").replace("[", " ").replace("]", " ")
    return [word.lower() for word in spaced.split()]


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word


def result_noun(tool: Tool) -> str:
    """What an entry of a tool's results is, from its name when the phrase file does not say
    (`ListActivitiesBySquare` -> "activity", `getPointsOfInterest` -> "point of interest"): never
    the bare "result", which does not say which list."""
    words = _name_words(tool.name)
    if words and words[0] in _VERBS:
        words = words[1:]
    if "by" in words:
        words = words[:words.index("by")]
    if not words:
        return "entry of the " + " ".join(_name_words(tool.name)) + " results"
    head = words.index("of") - 1 if "of" in words[1:] else len(words) - 1
    words[head] = _singular(words[head])
    return " ".join(words)


_VERBS = {"get": "get", "list": "list", "search": "search for", "find": "find", "retrieve": "get", "fetch": "get",
          "create": "create", "book": "book", "quote": "get a quote for", "price": "price"}


def generic_clause(tool: Tool) -> str:
    """A clause for a tool the phrase file does not know, from its name and its required
    arguments' names ("get hotel offers with hotel ids {hotelIds}"): an operation's summary is the
    API's voice, never pasted."""
    words = _name_words(tool.name)
    verb = _VERBS.get(words[0], "") if words else ""
    rest = words[1:] if verb else words
    thing = " ".join(rest) or "the results"
    required = tool.parameters.get("required") or []
    details = " and ".join(f"{' '.join(_name_words(name))} {{{name}}}" for name in required)
    return f"{verb or 'get'} {thing}" + (f" with {details}" if details else "")


# ----------------------------------------------------------------------------------- the clauses
@dataclass(frozen=True)
class ClauseRequest:
    """One call as the writer asks for it."""

    tool: Tool
    literals: Mapping[str, Any]
    optional: Sequence[str]  # literal arguments said by fragments (constraints)
    # (fed parameter, the placeholder's extra parts) -> how the user names what it reads; None for
    # a parameter that is not fed
    refer: Callable[[str, list[str]], str | None] = lambda parameter, extra: None
    kinds: Mapping[str, str] = field(default_factory=dict)  # parameter -> kind of place it names
    # (fed parameter, its placeholder's extra parts) -> the kind of place the reference names, for
    # the preposition before it (the words, hence the kind, may depend on the placeholder's noun)
    kind_of: Callable[[str, list[str]], str | None] = lambda parameter, extra: None
    words: Mapping[str, str] = field(default_factory=dict)  # literal parameter -> the pool's words for its value


def write_clause(request: ClauseRequest, phrases: PhraseBook, rng: random.Random) -> str:
    """The clause asking for one call, its optional arguments said by fragments."""
    kinds = {**literal_kinds(request.literals), **request.kinds}
    options = phrases.clause_phrases(request.tool, kinds)
    if not options:
        raise Unsayable(f"the phrases say no clause for {request.tool.name} with {dict(request.kinds)}")
    said: set[str] = set()

    def say(parameter: str, extra: list[str]) -> str:
        said.add(parameter)
        reference = request.refer(parameter, extra)
        if reference is not None:
            return reference
        return say_literal(request.tool, parameter, request.literals.get(parameter), extra, request.words.get(parameter))

    text = fill_phrase(options[rng.randrange(len(options))], request, say)
    added = ""
    for parameter in request.optional:
        if parameter in said:  # a fragment may state two (a price cap with its currency)
            continue
        fragments = phrases.fragment_phrases(request.tool, parameter, kinds)
        if not fragments:
            raise Unsayable(f"the phrases say no fragment for {request.tool.name}.{parameter}")
        added += " " + fill_phrase(fragments[rng.randrange(len(fragments))], request, say)
    # {+} marks where a clause takes its constraints when its end is a reference they would seem
    # to qualify ("hotels whose amenities include parking near the second hotel in LON")
    return text.replace(OPTIONAL_SLOT, added, 1) if OPTIONAL_SLOT in text else text + added


def fill_phrase(template: str, request: ClauseRequest, say: SayArgument | None = None) -> str:
    """A phrase with the call's values: prepositions first (they depend on the kind of place the
    argument after them names), then the placeholders."""
    kinds = {**literal_kinds(request.literals), **request.kinds}
    extras = {m.group(1): [part for part in m.groups()[1:] if part is not None] for m in _PLACEHOLDER.finditer(template)}

    def preposition(match: re.Match[str]) -> str:
        word, parameter = match.group(1), match.group(2)
        kind = request.kind_of(parameter, extras.get(parameter, [])) or kinds.get(parameter, "")
        return PREPOSITIONS[word].get(kind, word)

    def say_value(parameter: str, extra: list[str]) -> str:
        reference = request.refer(parameter, extra)
        if reference is not None:
            return reference
        return say_literal(request.tool, parameter, request.literals.get(parameter), extra, request.words.get(parameter))

    return fill_placeholders(_PREPOSITION.sub(preposition, template), say or say_value)


# --------------------------------------------------------------------------------- the sentences
@dataclass(frozen=True)
class Opener:
    template: str  # "{clause}" is the first clause
    question: bool = False  # the sentence ends with "?"


OPENERS = (Opener("{Clause}"), Opener("{Clause}"), Opener("Please {clause}"), Opener("Could you {clause}", True),
           Opener("Can you {clause}", True), Opener("I need you to {clause}"), Opener("I'd like you to {clause}"))
ALSO_OPENERS = (Opener("Also, {clause}"), Opener("Separately, {clause}"), Opener("I also need you to {clause}"),
                Opener("Could you also {clause}", True), Opener("In addition, {clause}"))
# how the next clause of one chain joins: in the same sentence, or as a new one
SAME_SENTENCE_JOINS = (", then {clause}", ", then {clause}", " and then {clause}", ", and after that {clause}")
NEW_SENTENCE_JOINS = ("After that, {clause}", "Then {clause}", "Once you have that, {clause}", "Next, {clause}")
NEW_SENTENCE_SHARE = 0.35  # joins that start a new sentence


def _open(opener: Opener, clause: str) -> str:
    return opener.template.replace("{Clause}", clause[:1].upper() + clause[1:]).replace("{clause}", clause)


def write_query(chains: Sequence[Sequence[str]], rng: random.Random) -> str:
    """Clauses (already written) of each chain as sentences: an opener for the first chain, a
    "also" opener for each further one, joins between the clauses of a chain."""
    sentences: list[str] = []
    for number, clauses in enumerate(chains):
        if not clauses:
            continue
        opener = (OPENERS if number == 0 else ALSO_OPENERS)[rng.randrange(len(OPENERS if number == 0 else ALSO_OPENERS))]
        current, question = _open(opener, clauses[0]), opener.question
        for clause in clauses[1:]:
            if rng.random() < NEW_SENTENCE_SHARE:
                sentences.append(current + ("?" if question else "."))
                join = NEW_SENTENCE_JOINS[rng.randrange(len(NEW_SENTENCE_JOINS))]
                current, question = join.replace("{clause}", clause), False
            else:
                current += SAME_SENTENCE_JOINS[rng.randrange(len(SAME_SENTENCE_JOINS))].replace("{clause}", clause)
        sentences.append(current + ("?" if question else "."))
    return " ".join(sentences)
