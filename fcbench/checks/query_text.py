"""The query text lint (pure): what a careful annotator refuses in a query before reading its calls.

A query is the benchmark's input: a model is scored on doing what it says. Text a person would not
write ("…, then and the booking conditions of the first room", "for 1 adults", "sorted by
review_score", "at 23:10 pm") is a defect of the sample even when its calls are right: the model
reads a glitch, the benchmark measures something else. Each rule below is one kind of glitch with a
machine-readable code; the filter rejects a sample as `text.<code>` (fcbench.checks.verdicts).

Rules (each a regular expression over the text, linear in its length, so the lint runs first):
- joined_clauses: two connectives in a row where the second one starts a clause ("then and",
  "and and", "Also, and");
- doubled_word: the same word twice ("the the"); reduplications people write ("very very", "bye
  bye") and names ("Bora Bora") are not flagged;
- unfilled_slot: a template placeholder or reference left in the text ("{date}", "{{city}}",
  "$var_1.id$", "<date>"), a missing value ("from to Paris", "on None");
- dangling_connective: a connective or article with nothing after it ("…, then.", "and.", "the ,"),
  or an empty clause (", ,");
- api_code: an API's spelling in prose: an UPPER_SNAKE code (PREMIUM_ECONOMY); with the sample's
  tools, an enum value or a parameter name written as the API writes it ("sorted by
  review_score", "offers ECONOMY", "subType"), or a tool's description pasted in ("Returns a list
  of airports and cities matching a given keyword");
- number_agreement: a count that disagrees with its noun ("1 adults", "for 2 adult.");
- am_pm_24_hour: a 24-hour value with am/pm ("at 23:10 pm", "00:30 am");
- vague_reference: a result named only as "result" or "entry" ("the first result"), which does
  not say which list it comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping, Sequence

from fcbench.sample import Tool

REASON_PREFIX = "text."


class TextProblemCode(str, Enum):
    JOINED_CLAUSES = "joined_clauses"
    DOUBLED_WORD = "doubled_word"
    UNFILLED_SLOT = "unfilled_slot"
    DANGLING_CONNECTIVE = "dangling_connective"
    API_CODE = "api_code"
    NUMBER_AGREEMENT = "number_agreement"
    AM_PM_24_HOUR = "am_pm_24_hour"
    VAGUE_REFERENCE = "vague_reference"


@dataclass(frozen=True)
class Problem:
    """One glitch: its code, where it is and what it says."""

    code: TextProblemCode
    start: int
    end: int
    text: str  # the offending text, as written
    message: str

    @property
    def reason(self) -> str:
        """The filter's reject reason: `text.<code>`."""
        return REASON_PREFIX + self.code.value

    def describe(self) -> str:
        return f"{self.code.value}: {self.text!r} ({self.message})"


# ------------------------------------------------------------------------------------- vocabulary
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "last",
             "1st", "2nd", "3rd", r"\d+th")
# count nouns whose number the lint checks after a count: singular -> plural
_COUNT_NOUNS = {
    "adult": "adults", "child": "children", "kid": "kids", "infant": "infants", "baby": "babies",
    "person": "people", "guest": "guests", "traveller": "travellers", "traveler": "travelers",
    "passenger": "passengers", "driver": "drivers", "night": "nights", "day": "days", "week": "weeks",
    "month": "months", "year": "years", "hour": "hours", "minute": "minutes", "room": "rooms", "bed": "beds",
    "ticket": "tickets", "bag": "bags", "suitcase": "suitcases", "seat": "seats", "door": "doors", "star": "stars",
    "mile": "miles", "kilometre": "kilometres", "kilometer": "kilometers", "stop": "stops", "car": "cars",
    "hotel": "hotels", "flight": "flights", "result": "results", "option": "options", "offer": "offers",
    "attraction": "attractions", "activity": "activities", "tour": "tours", "item": "items", "unit": "units",
}
_PLURAL_TO_SINGULAR = {plural: singular for singular, plural in _COUNT_NOUNS.items() if plural != singular}
_COUNT_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
# words people do write twice on purpose
_REDUPLICATED = frozenset({"very", "so", "really", "bye", "no", "ha", "haha", "hey", "go", "knock", "tut", "chop",
                           "that", "had", "is", "please", "many", "much", "more", "far", "long", "well", "yes",
                           "wait", "come", "now", "quick", "fast", "slowly", "round", "over", "again", "ok", "okay",
                           "duck"})  # (DuckDuckGo, written "duck duck go")
# the adverbials a writer joins clauses with: none of them is followed by "and" / "or" / "but"
_JOINERS = ("then", "also", "after that", "afterwards", "in addition", "separately",
            "besides", "additionally", "once you have that", "once that is done", "when that is done")

_WORD = r"[A-Za-z][A-Za-z'\-]*"
_JOINED = re.compile(
    r"\b(?:(?P<adverb>" + "|".join(re.escape(j) for j in _JOINERS) + r")\s*[,;:]?\s+(?P<starts>and|or|but|then)"
    r"|(?P<conj>and|or|but)\s*[,;:]?\s+(?P<again>and|or|but))\b(?!\s+(?:only|there|now)\b)", re.I)
_DOUBLED = re.compile(r"\b(?P<word>" + _WORD + r")(?:\s+(?P=word))+\b", re.I)
_PLACEHOLDER = re.compile(
    r"\{\{\s*[^{}\s]+\s*\}\}"            # {{city}}
    r"|\{[A-Za-z_]\w*(?:\|[^{}|]*){0,2}\}"  # {param}, {param|noun}
    r"|\$[A-Za-z_][\w]*(?:[.\[][^\s$]*)?\$"  # $var_1.data[0].id$
    r"|(?<!<)<[A-Z][A-Z_]+>(?!>)"         # <DATE>
    r"|\[(?:[A-Z][A-Z_]{2,}|[a-z]+_[a-z_]+)\]")  # [CITY], [date_here]
_MISSING_VALUE = re.compile(r"\b(?:from\s+to|between\s+and|(?:on|at|in|for|from|to|with|near|by)\s+(?:None|null|undefined|NaN))\b")
_DANGLING = re.compile(
    r"(?:\b(?:and|or|but|also)|,\s*then)\s*(?:[.,;:!?](?=\s|$)|$)"  # "and.", ", then."
    r"|(?<![\w'.-])(?:the|an|a)(?:\s+[.,;:!?](?=\s|$)|\s*$)"  # "the ." (not "line a?": a variable)
    r"|[,;]\s*[,;]|[,;]\s+\.(?!\w)"  # an empty clause ", ," ", ."
    r"|\.\s+[,;]")  # ". ," (an abbreviation's period may be followed by a comma: "D.C.,")
_UPPER_SNAKE = re.compile(r"(?<![\w$./-])[A-Z]{2,}(?:_[A-Z]{2,})+(?![\w/-])")
_AM_PM = re.compile(r"(?<![\d:.])(?P<hour>1[3-9]|2[0-4]|00?)(?::[0-5]\d)?\s*(?:a\.m\.|p\.m\.|am|pm)(?![A-Za-z])", re.I)
_VAGUE = re.compile(r"\bthe\s+(?:" + "|".join(_ORDINALS) + r")\s+(?:result|entry)\b"
                    r"(?!\s+(?:of|from|in|on|for|returned|found|listed|that|which)\b)", re.I)
# after "a ,": more one-letter names separated by commas or "and" (a list of variables)
_VARIABLE_LIST = re.compile(r"\s*[A-Za-z]\s*(?:,|\band\b)")
_COUNTED_RESULTS = re.compile(r"\b\d+\s+(?:results?|entries)\b", re.I)
_ONE_PLURAL = re.compile(r"(?<![\w.,\-])(?:1|one|a single)\s+(?P<noun>" + "|".join(sorted(_PLURAL_TO_SINGULAR, key=len, reverse=True))
                         + r")\b(?![\-'])", re.I)
_MANY_SINGULAR = re.compile(
    r"(?<![\w.,\-])(?:[2-9]|[1-9]\d+|" + "|".join(_COUNT_WORDS) + r")\s+(?P<noun>"
    + "|".join(sorted((s for s, p in _COUNT_NOUNS.items() if s != p), key=len, reverse=True))
    + r")(?=\s*(?:[.,;:!?)]|$)|\s+(?:and|or|with|in|on|at|for|from|to|then|but|each|please)\b)", re.I)
_WORDS = re.compile(r"[a-z0-9]+")
_QUOTED = re.compile(r"(?<!\w)'[^'\n]+'(?!\w)|\"[^\"\n]+\"|`[^`\n]+`")
SUMMARY_SHINGLE = 8  # words of a tool description a query may not repeat in a row


def noun_for_count(noun: str, count: float) -> str | None:
    """A count noun ("adult", "nights") in the number `count` takes, keeping its capital; None for a
    word that is not one of the count nouns the lint checks."""
    lower = noun.lower()
    singular = lower if lower in _COUNT_NOUNS else _PLURAL_TO_SINGULAR.get(lower)
    if singular is None:
        return None
    word = singular if count == 1 else _COUNT_NOUNS[singular]
    return word[:1].upper() + word[1:] if noun[:1].isupper() else word


# ---------------------------------------------------------------------------------------- the lint
def query_text_problems(text: str, tools: Sequence[Tool] = ()) -> list[Problem]:
    """Every glitch of the text, in order of position. `tools`: the sample's tools, whose enum
    values, code-like parameter names and descriptions must not appear as the API writes them."""
    problems: list[Problem] = []
    add = problems.append
    for match in _JOINED.finditer(text):
        first, second = (match.group("adverb"), match.group("starts")) if match.group("adverb") else \
            (match.group("conj"), match.group("again"))
        add(Problem(TextProblemCode.JOINED_CLAUSES, match.start(), match.end(), match.group(0),
                    f"{first.lower()!r} runs into {second.lower()!r}"))
    for match in _DOUBLED.finditer(text):
        if not _deliberate_double(text, match):
            add(Problem(TextProblemCode.DOUBLED_WORD, match.start(), match.end(), match.group(0), "a word written twice"))
    quoted = _quoted_spans(text)
    defined = {match.group(0) for match in _PLACEHOLDER.finditer(text) if _inside(match, quoted)}
    for match in _PLACEHOLDER.finditer(text):
        if match.group(0) not in defined:  # a template the user quotes and explains is no glitch
            add(Problem(TextProblemCode.UNFILLED_SLOT, match.start(), match.end(), match.group(0),
                        "a placeholder left unfilled"))
    for match in _MISSING_VALUE.finditer(text):
        add(Problem(TextProblemCode.UNFILLED_SLOT, match.start(), match.end(), match.group(0), "a value is missing"))
    for match in _DANGLING.finditer(text):
        if _VARIABLE_LIST.match(text, match.end()) and match.group(0).split()[0].lower() == "a":
            continue  # "the average age of a , b , c and d": `a` is the first of a list of variables
        add(Problem(TextProblemCode.DANGLING_CONNECTIVE, match.start(), match.end(), match.group(0),
                    "nothing follows the connective" if match.group(0)[:1].isalpha() or "then" in match.group(0)
                    else "an empty clause"))
    for match in _UPPER_SNAKE.finditer(text):
        if _inside(match, quoted):
            continue  # quoted on purpose: the user names the code ("set it to 'AIR_CLEAN' mode")
        add(Problem(TextProblemCode.API_CODE, match.start(), match.end(), match.group(0), "an API code, not words"))
    if tools:
        problems.extend(_api_spellings(text, tools, quoted))
    for match in _ONE_PLURAL.finditer(text):
        add(Problem(TextProblemCode.NUMBER_AGREEMENT, match.start(), match.end(), match.group(0),
                    f"one takes {_PLURAL_TO_SINGULAR[match.group('noun').lower()]!r}"))
    for match in _MANY_SINGULAR.finditer(text):
        add(Problem(TextProblemCode.NUMBER_AGREEMENT, match.start(), match.end(), match.group(0),
                    f"a count above one takes {_COUNT_NOUNS[match.group('noun').lower()]!r}"))
    for match in _AM_PM.finditer(text):
        add(Problem(TextProblemCode.AM_PM_24_HOUR, match.start(), match.end(), match.group(0),
                    f"hour {int(match.group('hour'))} is a 24-hour value: am/pm does not apply"))
    counted_results = _COUNTED_RESULTS.search(text)
    for match in _VAGUE.finditer(text):
        if counted_results:
            continue  # "the average of 13 results ... the 8th result": the query states the list itself
        add(Problem(TextProblemCode.VAGUE_REFERENCE, match.start(), match.end(), match.group(0),
                    "does not say which list the result comes from"))
    return sorted(problems, key=lambda problem: (problem.start, problem.code.value))


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    """Quoted parts of the text (a name or a template the user quotes on purpose); a quote around
    (nearly) the whole text is only how it was stored, and quotes nothing."""
    return [match.span() for match in _QUOTED.finditer(text) if match.end() - match.start() < 0.8 * len(text.strip())]


def _inside(match: re.Match[str], spans: Sequence[tuple[int, int]]) -> bool:
    return any(start <= match.start() and match.end() <= end for start, end in spans)


def _deliberate_double(text: str, match: re.Match[str]) -> bool:
    """Reduplications people write, and names written twice ("Bora Bora", "Walla Walla")."""
    word = match.group("word")
    if word.lower() in _REDUPLICATED:
        return True
    at_sentence_start = not text[:match.start()].strip() or text[:match.start()].rstrip()[-1:] in ".!?:"
    parts = match.group(0).split()
    return all(part[:1].isupper() for part in parts) and not at_sentence_start


# ------------------------------------------------------------------------------ the API's spellings
HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})  # written in capitals by everyone


def _is_code_like(name: str) -> bool:
    """An identifier a person does not write: snake_case, camelCase, dotted or bracketed paths."""
    if "_" in name.strip("_") or "." in name.strip(".") or "[" in name:
        return bool(re.search(r"[A-Za-z]", name))
    return bool(re.search(r"[a-z][A-Z]", name))


def _is_shouted_word(value: str) -> bool:
    """An enum value written as an English word in capitals (ECONOMY, CHEAPEST, CITY): a person
    writes "economy". Acronyms stay (NYSE, IMAX, and codes of three letters: USD, CDG). A word is
    English when the tokenizer knows its lower-case form, with its leading space, as one token."""
    from fcbench.stats.tokens import count_tokens

    return (value.isupper() and value.isalpha() and len(value) >= 4 and value not in HTTP_METHODS
            and count_tokens(" " + value.lower()) == 1)


def api_spellings(tools: Iterable[Tool]) -> dict[str, str]:
    """The tools' spellings a query must not use: code-like parameter names, and enum values that
    are code-like or shouted words. Spelling -> where it comes from."""
    found: dict[str, str] = {}
    for tool in tools:
        for name, schema in (tool.parameters.get("properties") or {}).items():
            if _is_code_like(name):
                found.setdefault(name, f"parameter {tool.name}.{name}")
            for value in _enum_values(schema):
                if isinstance(value, str) and (_is_code_like(value) or _is_shouted_word(value)):
                    found.setdefault(value, f"an enum value of {tool.name}.{name}")
    return found


def _enum_values(schema: object) -> list[object]:
    if not isinstance(schema, Mapping):
        return []
    values = list(schema.get("enum") or [])
    items = schema.get("items")
    if isinstance(items, Mapping):
        values += list(items.get("enum") or [])
    return values


def _api_spellings(text: str, tools: Sequence[Tool], quoted: Sequence[tuple[int, int]]) -> list[Problem]:
    problems = []
    spellings = api_spellings(tools)
    if spellings:
        pattern = re.compile(r"(?<![\w.\[])(?:" + "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))
                             + r")(?![\w\]]|\.\w)")
        for match in pattern.finditer(text):
            if _UPPER_SNAKE.fullmatch(match.group(0)) or _inside(match, quoted):
                continue  # said once already, as an UPPER_SNAKE code; or quoted on purpose
            problems.append(Problem(TextProblemCode.API_CODE, match.start(), match.end(), match.group(0),
                                    f"written as the API writes it ({spellings[match.group(0)]})"))
    problems.extend(_pasted_descriptions(text, tools))
    return problems


def _pasted_descriptions(text: str, tools: Sequence[Tool]) -> list[Problem]:
    """A tool's description (its first sentence whole, or any run of SUMMARY_SHINGLE words of it)
    repeated in the query in the API's voice: the API's summary, not what a user asks. Linear in
    the text: one search per first sentence, one pass over the text's words for the runs."""
    runs: dict[tuple[str, ...], str] = {}
    problems = []
    for tool in tools:
        description = (tool.description or "").strip()
        if not description:
            continue
        first = _WORDS.findall(re.split(r"(?<=[.!?])\s", description, maxsplit=1)[0].lower())
        if len(first) >= 4 and _reads_as_documentation(" ".join(first)):
            match = re.search(r"(?<![a-z0-9])" + r"[^a-z0-9]+".join(first) + r"(?![a-z0-9])", text, re.I)
            if match:
                problems.append(Problem(TextProblemCode.API_CODE, match.start(), match.end(), match.group(0),
                                        f"the description of {tool.name} pasted in"))
                continue
        words = _WORDS.findall(description.lower())
        for i in range(len(words) - SUMMARY_SHINGLE + 1):
            run = tuple(words[i:i + SUMMARY_SHINGLE])
            if _reads_as_documentation(" ".join(run)):
                runs.setdefault(run, tool.name)
    if runs:
        window: list[re.Match[str]] = []
        reported: set[str] = {problem.message for problem in problems}
        for match in _WORDS.finditer(text.lower()):
            window.append(match)
            if len(window) > SUMMARY_SHINGLE:
                window.pop(0)
            name = runs.get(tuple(m.group(0) for m in window)) if len(window) == SUMMARY_SHINGLE else None
            message = f"the description of {name} pasted in"
            if name is not None and message not in reported:
                reported.add(message)
                start, end = window[0].start(), window[-1].end()
                problems.append(Problem(TextProblemCode.API_CODE, start, end, text[start:end], message))
    return problems


_DOC_VERBS = frozenset({"returns", "return", "gets", "retrieves", "retieves", "lists", "searches", "provides",
                        "fetches", "creates", "performs", "confirms", "gives", "computes", "calculates", "finds",
                        "allows", "shows", "displays", "looks", "checks", "updates", "deletes", "books"})
_DOC_PHRASES = (" a given ", " based on ", " by its id", " by id", " for the given ", " matching the ")


def _reads_as_documentation(words: str) -> bool:
    """An API's voice, not a user's: a third-person verb or an HTTP method first ("returns a list
    of ...", "GET cities by keyword"), or a documentation phrase ("for a given area", "based on its
    id"). A user's request may repeat an imperative description ("calculate the area of a
    triangle"); that is how people ask."""
    first = words.split()[0]
    return first in _DOC_VERBS or first.upper() in HTTP_METHODS or any(p in f" {words} " for p in _DOC_PHRASES)
