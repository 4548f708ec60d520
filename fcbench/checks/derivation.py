"""Argument values a user implies without writing them (pure): ComplexFuncBench's "parameter value
reasoning from implicit information".

A query such as "a week starting April 3, 2026 ... for a family of four, prices in euros" asks for
`arrival_date=2026-04-03`, `departure_date=2026-04-10`, `adults=4` and `currency_code=EUR`, yet only
the first is written in it. Each rule below reads one kind of value from the query text, and says
where (`Stated`: the rule, the value, the span of the query), so a value can be tied to the words it
comes from (`fcbench.checks.provenance`):

- `date.spelled`: an ISO date the query spells with a month name ("April 3, 2026");
- `date.offset`: a spelled date moved by a duration or a day shift the query states ("a week
  starting April 3", "for 3 nights from ...", "the next day", "two days later"): two spans;
- `count.words`: a count written as a word or a phrase ("four adults", "a family of four",
  "a couple", "just me", "me and my wife");
- `duration`: a number of days or nights the query states ("a week" for 7);
- `unit`: a quantity the query states in another unit ("3 miles" for 4.83 km, "an hour" for 60
  minutes, "half a kilometre" for 0.5 km);
- `currency`: a currency code the query names in words or by its symbol ("euros", "€", "yen");
- `time`: a time of day spelled as people say it ("10 am", "half past six in the evening", "noon");
- `enum.words`: an enumerated value the query says in words ("premium economy" for PREMIUM_ECONOMY).

A more specific reading claims its words: the "three" of "three nights" is a duration, not a
count; "Australian dollars" is AUD, not the USD of "dollars"; "06:30 pm" is 18:30, never the
24-hour "06:30". A time written with both a 24-hour hour and am/pm ("23:10 pm") reads as nothing.

Values read from responses (an entry the user picked by "the cheapest" or "the second hotel") are
explained by `fcbench.checks.grounding` itself; what no rule explains is left to the semantic (LLM) check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Iterable, Mapping

_MONTHS = {name: index for index, name in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}
_MONTH = r"(?P<month>" + "|".join(f"{m[:3]}(?:{m[3:]})?" for m in _MONTHS) + r")\.?"
_DAY_FIRST = re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<year>\d{4})\b", re.I)
_MONTH_FIRST = re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.I)

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "a": 1, "an": 1, "single": 1, "a single": 1, "a couple of": 2, "a pair of": 2, "a dozen": 12,
    "half a": 0.5, "half an": 0.5,
}
_COUNT_WORD = r"(?P<count>\d{1,3}|" + "|".join(w for w, n in NUMBER_WORDS.items()
                                               if isinstance(n, int) and n >= 1 and " " not in w
                                               and w not in ("a", "an", "single")) + r")"
# Phrases that state a party size ("a couple" travels as two adults); each span is the whole phrase,
# its leading "for" included, so a new party size can be said in its place.
_NOUNS_AFTER_FOR = r"(?!\s+(?:nights?|days?|weeks?|hours?|minutes?|adults?|people|persons?|rooms?|travell?ers?|guests?))"
PARTY_PHRASES: tuple[tuple[str, int | None], ...] = (
    (r"\b(?:just|only)(?: for)? me\b|\bby myself\b|\bon my own\b|\btravell?ing (?:alone|solo)\b|\bsolo\b"
     r"|\bfor one\b" + _NOUNS_AFTER_FOR, 1),
    (r"\ba couple\b(?! of)|\bme and my (?:wife|husband|partner|friend|brother|sister|mother|father|son|daughter)\b"
     r"|\bboth of us\b|\bfor two\b" + _NOUNS_AFTER_FOR, 2),
    (r"\b(?:for )?the " + _COUNT_WORD + r" of us\b", None),
    (r"\b(?:for )?a (?:group|family|party) of " + _COUNT_WORD + r"\b", None),
)
CURRENCY_WORDS: dict[str, str] = {
    "USD": r"\bus dollars?\b|\bdollars?\b|\busd\b|(?<![a-z])\$",
    "EUR": r"\beuros?\b|€|\beur\b",
    "GBP": r"\bpounds?(?: sterling)?\b|£|\bgbp\b|\bsterling\b",
    "AUD": r"\baustralian dollars?\b|\ba\$|\baud\b",
    "JPY": r"\byen\b|¥|\bjpy\b",
    "SGD": r"\bsingapore dollars?\b|\bs\$|\bsgd\b",
    "CAD": r"\bcanadian dollars?\b|\bc\$|\bcad\b",
    "CHF": r"\bswiss francs?\b|\bchf\b",
}
# Days per unit of a stated duration ("a week" -> 7 days).
DURATION_DAYS = {"day": 1, "days": 1, "night": 1, "nights": 1, "week": 7, "weeks": 7, "fortnight": 14}
# (unit spelled in the query, unit of the value, factor) for `unit`: value = quantity * factor.
UNIT_CONVERSIONS: tuple[tuple[str, str, float], ...] = (
    ("miles?", "km", 1.609344), ("kilometres?|kilometers?|km", "m", 1000.0), ("metres?|meters?|m", "km", 0.001),
    ("hours?|hrs?", "minutes", 60.0), ("minutes?|mins?", "hours", 1 / 60), ("kilometres?|kilometers?", "km", 1.0),
    ("kg|kilos?|kilograms?", "lb", 2.20462), ("pounds?|lbs?", "kg", 0.453592),
)
RELATIVE_REFERENCES = re.compile(
    r"\b(?:the )?(?:cheapest|least expensive|most expensive|best[- ]rated|highest[- ]rated|top[- ]rated|"
    r"lowest[- ]rated|shortest|longest|fastest|earliest|latest|closest|nearest|largest|smallest|"
    r"first|second|third|fourth|fifth|last)\b|\brated (?:above|over|at least|below)\b|"
    r"\b(?:leaving|departing|arriving|starting) (?:before|after|by)\b|\bunder\b|\bover\b|\bat most\b|\bat least\b",
    re.I)
_QUANTITY = r"(?P<quantity>\d+(?:\.\d+)?|" + "|".join(sorted((re.escape(w) for w in NUMBER_WORDS), key=len, reverse=True)) + r")"
_DURATION = re.compile(r"\b" + _QUANTITY + r"[\s-]+(?P<unit>days?|nights?|weeks?)\b|\b(?P<fortnight>a fortnight)\b", re.I)
# an amount of money right before a duration makes it a price's unit ("250 USD a night", "$180 a night")
_PRICE_BEFORE = re.compile(r"(?:[$€£¥]\s?\d[\d,.]*|\d[\d,.]*\s?(?:[A-Z]{3}|[$€£¥]|euros?|dollars?|pounds?|yen))\s*(?:per\s+)?$")
_WHOLE_WEEK = re.compile(r"\b(?:a|one|the|for the|this) (?P<word>week|weekend)\b(?!s)", re.I)
# A clock time: 12-hour with am/pm (1-12), or an hour of 13-23 / 0 written with am/pm (nonsense:
# claimed, read as nothing, so its digits are not taken as a 24-hour time either).
_TIME_OF_DAY = re.compile(
    r"\b(?P<hour>\d{1,2})(?:[:.](?P<minute>\d{2}))?\s*(?P<half>[ap]\.m\.|[ap]\.?m)(?![a-z])", re.I)
_HOUR_WORDS = [w for w, n in NUMBER_WORDS.items() if isinstance(n, int) and 1 <= n <= 12 and " " not in w
               and w not in ("a", "an", "single")]
_HALF_PAST = re.compile(r"\b(?P<kind>half|quarter) (?P<rel>past|to) (?P<hour>\d{1,2}|" + "|".join(_HOUR_WORDS)
                        + r")(?P<rest>(?: o'clock)?(?: in the (?:morning|afternoon|evening)| at night| ?[ap]\.?m\.?)?)", re.I)
_NAMED_TIMES = {"noon": "12:00", "midday": "12:00", "midnight": "00:00"}
_RELATIVE_DAYS = re.compile(r"\b(?:the (?P<next>next|following) day|the day (?P<after>after|before)|"
                            + _QUANTITY + r" days? (?P<dir>later|after(?:wards)?|before|earlier))\b", re.I)

# how specific each reading is: a more specific one claims its words from a less specific one
_SPECIFICITY = {"date.spelled": 6, "time": 5, "offset": 4, "duration": 4, "unit": 3, "currency": 2,
                "count.words": 1}


@dataclass(frozen=True)
class Stated:
    """One thing a query states: a value read by a rule from the words `text` at [start, end).
    `value` is an ISO date (date.spelled), "HH:MM" (time, None for a time that reads as nothing),
    a currency code, a count, a number of days (duration), a day shift (offset) or a
    (quantity, unit pattern) pair (unit)."""

    rule: str
    value: Any
    start: int
    end: int
    text: str

    def inside(self, other: "Stated") -> bool:
        return other.start <= self.start and self.end <= other.end and (other.start, other.end) != (self.start, self.end)


@dataclass(frozen=True)
class Derivation:
    """How one argument value follows from what the user said."""

    rule: str  # e.g. "date.offset", "count.words"
    because: str  # the words that support it, as a person reads them

    def describe(self) -> str:
        return f"{self.rule} ({self.because})"


# ------------------------------------------------------------------------------- the readings
def _month(text: str) -> int:
    return _MONTHS[next(m for m in _MONTHS if m.startswith(text.lower()[:3]))]


def _dates(text: str) -> Iterable[Stated]:
    for pattern in (_DAY_FIRST, _MONTH_FIRST):
        for match in pattern.finditer(text):
            try:
                iso = date(int(match.group("year")), _month(match.group("month")), int(match.group("day"))).isoformat()
            except ValueError:
                continue
            yield Stated("date.spelled", iso, match.start(), match.end(), match.group(0))


def _quantity(text: str) -> float | None:
    text = text.lower().strip()
    if text in NUMBER_WORDS:
        return float(NUMBER_WORDS[text])
    try:
        return float(text)
    except ValueError:
        return None


def _durations(text: str) -> Iterable[Stated]:
    for match in _DURATION.finditer(text):
        if _PRICE_BEFORE.search(text[max(0, match.start() - 24):match.start()]):
            continue  # "under 250 USD a night": a price's unit, no stay
        if match.group("fortnight"):
            yield Stated("duration", 14, match.start(), match.end(), match.group(0))
            continue
        quantity = _quantity(match.group("quantity"))
        if quantity is not None and quantity == int(quantity):
            days = int(quantity) * DURATION_DAYS[match.group("unit").lower()]
            yield Stated("duration", days, match.start(), match.end(), match.group(0))
    for match in _WHOLE_WEEK.finditer(text):
        days = 7 if match.group("word").lower() == "week" else 2
        yield Stated("duration", days, match.start(), match.end(), match.group(0))


def _offsets(text: str) -> Iterable[Stated]:
    for match in _RELATIVE_DAYS.finditer(text):
        if match.group("next") or match.group("after"):
            yield Stated("offset", 1, match.start(), match.end(), match.group(0))
        elif match.group(0).lower().startswith("the day before"):
            yield Stated("offset", -1, match.start(), match.end(), match.group(0))
        else:
            quantity = _quantity(match.group("quantity") or "")
            if quantity is not None and quantity == int(quantity):
                sign = -1 if match.group("dir").lower() in ("before", "earlier") else 1
                yield Stated("offset", sign * int(quantity), match.start(), match.end(), match.group(0))


def _count_value(text: str) -> int | None:
    text = text.lower()
    if text.isdigit():
        return int(text)
    value = NUMBER_WORDS.get(text)
    return value if isinstance(value, int) else None


def _counts(text: str) -> Iterable[Stated]:
    for pattern, count in PARTY_PHRASES:
        for match in re.finditer(pattern, text, re.I):
            value = count if count is not None else _count_value(match.group("count"))
            if value is not None:
                yield Stated("count.words", value, match.start(), match.end(), match.group(0))
    words = "|".join(sorted((re.escape(w) for w in NUMBER_WORDS if w not in ("a", "an")), key=len, reverse=True))
    for match in re.finditer(rf"\b({words})\b", text, re.I):
        yield Stated("count.words", NUMBER_WORDS[match.group(1).lower()], match.start(), match.end(), match.group(0))


def _times(text: str) -> Iterable[Stated]:
    for match in _TIME_OF_DAY.finditer(text):
        hour, minute = int(match.group("hour")), int(match.group("minute") or 0)
        if not 1 <= hour <= 12 or minute > 59:
            yield Stated("time", None, match.start(), match.end(), match.group(0))  # "23:10 pm": nothing
            continue
        pm = match.group("half").lower().startswith("p")
        hour = (hour % 12) + (12 if pm else 0)
        yield Stated("time", f"{hour:02d}:{minute:02d}", match.start(), match.end(), match.group(0))
    for match in _HALF_PAST.finditer(text):
        hour_text = match.group("hour").lower()
        hour = int(hour_text) if hour_text.isdigit() else int(NUMBER_WORDS[hour_text])
        minutes = 30 if match.group("kind").lower() == "half" else 15
        if match.group("rel").lower() == "to":
            hour, minutes = hour - 1, 60 - minutes
        rest = match.group("rest").lower()
        pm = any(word in rest for word in ("afternoon", "evening", "night", "pm", "p.m"))
        hour = (hour % 12) + (12 if pm else 0)
        yield Stated("time", f"{hour % 24:02d}:{minutes:02d}", match.start(), match.end(), match.group(0))
    for word, value in _NAMED_TIMES.items():
        for match in re.finditer(rf"\b{word}\b", text, re.I):
            yield Stated("time", value, match.start(), match.end(), match.group(0))


def _currencies(text: str) -> Iterable[Stated]:
    for code, pattern in CURRENCY_WORDS.items():
        for match in re.finditer(pattern, text, re.I):
            yield Stated("currency", code, match.start(), match.end(), match.group(0))


def _quantities(text: str) -> Iterable[Stated]:
    for unit_pattern, _, _ in UNIT_CONVERSIONS:
        for match in re.finditer(_QUANTITY + rf"\s*(?:-\s*)?(?P<unit>{unit_pattern})\b", text, re.I):
            quantity = _quantity(match.group("quantity"))
            if quantity is not None:
                yield Stated("unit", (quantity, unit_pattern), match.start(), match.end(), match.group(0))


_READINGS = (_dates, _times, _offsets, _durations, _quantities, _currencies, _counts)


def stated_in(text: str) -> list[Stated]:
    """Everything a text states by rule, in text order; a reading inside a more specific one (or
    inside a longer one of its own rule) is dropped."""
    found = [fact for reading in _READINGS for fact in reading(text)]
    kept = []
    for fact in found:
        claimed = any(fact.inside(other) and (_SPECIFICITY[other.rule] > _SPECIFICITY[fact.rule]
                                              or other.rule == fact.rule) for other in found)
        # a count inside a duration or a time ("three nights", "half past six") is that, not a count
        overlapped = fact.rule == "count.words" and any(
            other.rule != "count.words" and other.start < fact.end and fact.start < other.end for other in found)
        if not claimed and not overlapped:
            kept.append(fact)
    unique = {(fact.rule, fact.start, fact.end): fact for fact in kept}
    return sorted(unique.values(), key=lambda fact: (fact.start, fact.end, fact.rule))


# ------------------------------------------------------------------------ the older interface
def spelled_dates_with_spans(text: str) -> list[tuple[str, str]]:
    """(ISO date, words) for the dates a text spells with month names ("15 August 2024", "Aug 15, 2024")."""
    return [(fact.value, fact.text) for fact in _dates(text)]


def dates_spelled_in(text: str) -> set[str]:
    """ISO dates for the dates a text spells with month names."""
    return {iso for iso, _ in spelled_dates_with_spans(text)}


def stated_durations(query: str) -> list[tuple[int, str]]:
    """(days, words) for every duration the query states: "a week" -> 7, "3 nights" -> 3."""
    return [(fact.value, fact.text) for fact in _durations(query)]


def stated_day_offsets(query: str) -> list[tuple[int, str]]:
    """Day shifts the query states relative to another date ("the next day" +1, "two days before" -2)."""
    return [(fact.value, fact.text) for fact in _offsets(query)]


def stated_counts(query: str) -> list[tuple[float, str]]:
    """Counts the query states in words or phrases ("four adults", "a family of four", "a couple")."""
    return [(float(fact.value), fact.text) for fact in stated_in(query) if fact.rule == "count.words"]


def stated_times(query: str) -> list[tuple[str, str]]:
    """("HH:MM", words) for the times of day the query spells ("10 am", "half past six in the evening")."""
    return [(fact.value, fact.text) for fact in _times(query) if fact.value is not None]


def stated_currencies(query: str) -> list[tuple[str, str]]:
    return [(fact.value, fact.text) for fact in stated_in(query) if fact.rule == "currency"]


def stated_quantities(query: str) -> list[tuple[float, str, str]]:
    """(quantity, unit pattern it matched, words) for "3 miles", "half an hour", "two kilometres"."""
    return [(fact.value[0], fact.value[1], fact.text) for fact in _quantities(query)]


def relative_references(query: str) -> list[str]:
    """The words by which a query picks an entry of a response ("the cheapest", "rated above")."""
    return list(dict.fromkeys(match.group(0).lower() for match in RELATIVE_REFERENCES.finditer(query)))


def unit_value(quantity: float, unit_pattern: str, target: str | None = None) -> list[tuple[str, float]]:
    """(unit of the value, value) for a quantity stated in `unit_pattern` ("3 miles" -> km 4.83)."""
    return [(unit, quantity * factor) for pattern, unit, factor in UNIT_CONVERSIONS
            if pattern == unit_pattern and (target is None or unit == target)]


def close_enough(expected: float, value: float) -> bool:
    """Conversions are rounded by whoever wrote the value: 3 miles may be sent as 4.8 or 4.83 km."""
    return abs(expected - value) <= max(0.011 * abs(expected), 0.05)


_close = close_enough


class QueryFacts:
    """What a query states, read once, then asked about each argument value."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.stated = stated_in(query)
        self.spelled_dates = [(fact.value, fact.text) for fact in self.stated if fact.rule == "date.spelled"]
        self.durations = [(fact.value, fact.text) for fact in self.stated if fact.rule == "duration"]
        self.offsets = [(fact.value, fact.text) for fact in self.stated if fact.rule == "offset"]
        self.counts = [(float(fact.value), fact.text) for fact in self.stated if fact.rule == "count.words"]
        self.times = [(fact.value, fact.text) for fact in self.stated if fact.rule == "time" and fact.value]
        self.currencies = [(fact.value, fact.text) for fact in self.stated if fact.rule == "currency"]
        self.quantities = [(fact.value[0], fact.value[1], fact.text) for fact in self.stated if fact.rule == "unit"]

    def of_rule(self, *rules: str) -> list[Stated]:
        return [fact for fact in self.stated if fact.rule in rules]

    def explain(self, value: Any, schema: Mapping[str, Any] | None = None,
                other_values: Iterable[Any] = ()) -> Derivation | None:
        """The first rule that explains `value` (an argument's literal value), or None.
        `other_values` are the literal values of the same call (a stay's departure is explained by its
        arrival plus a stated duration even when the arrival itself is spelled in the query)."""
        schema = schema or {}
        if isinstance(value, bool) or value is None:
            return None
        if isinstance(value, str):
            return (self._date(value, other_values) or self._time(value) or self._currency(value)
                    or self._enum_words(value, schema))
        if isinstance(value, (int, float)):
            return self._count(value) or self._duration(value) or self._unit(value)
        return None

    # ------------------------------------------------------------------------------------- rules
    def _date(self, value: str, other_values: Iterable[Any]) -> Derivation | None:
        try:
            target = date.fromisoformat(value)
        except ValueError:
            return None
        for iso, words in self.spelled_dates:
            if iso == value:
                return Derivation("date.spelled", words)
        anchors = [(iso, words) for iso, words in self.spelled_dates]
        anchors += [(other, other) for other in other_values if isinstance(other, str) and other != value
                    and is_iso_date(other)]
        shifts = [(days, words) for days, words in self.durations] + self.offsets
        for iso, anchor_words in anchors:
            anchor = date.fromisoformat(iso)
            for days, words in shifts:
                if anchor + timedelta(days=days) == target:
                    return Derivation("date.offset", f"{anchor_words} + {words}")
        return None

    def _time(self, value: str) -> Derivation | None:
        return next((Derivation("time", words) for time, words in self.times if time == value), None)

    def _currency(self, value: str) -> Derivation | None:
        return next((Derivation("currency", words) for code, words in self.currencies if code == value.upper()), None)

    def _enum_words(self, value: str, schema: Mapping[str, Any]) -> Derivation | None:
        if value not in (schema.get("enum") or []):
            return None
        words = value.replace("_", " ").replace("-", " ").lower()
        if len(words) > 2 and re.search(rf"\b{re.escape(words)}\b", self.query, re.I):
            return Derivation("enum.words", words)
        return None

    def _count(self, value: float) -> Derivation | None:
        return next((Derivation("count.words", words) for count, words in self.counts if count == value), None)

    def _duration(self, value: float) -> Derivation | None:
        return next((Derivation("duration", words) for days, words in self.durations if days == value), None)

    def _unit(self, value: float) -> Derivation | None:
        for quantity, unit_pattern, words in self.quantities:
            for _, converted in unit_value(quantity, unit_pattern):
                if close_enough(converted, value):
                    return Derivation("unit", f"{words} = {value:g}")
        return None


def is_iso_date(text: str) -> bool:
    """A date written YYYY-MM-DD (what the travel schemas ask for), nothing shorter or longer."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


__all__ = ["Derivation", "QueryFacts", "Stated", "dates_spelled_in", "relative_references", "stated_counts",
           "stated_currencies", "stated_day_offsets", "stated_durations", "stated_in", "stated_quantities",
           "stated_times"]
