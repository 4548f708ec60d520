"""Argument values a user implies without writing them (pure): ComplexFuncBench's "parameter value
reasoning from implicit information".

A query such as "a week starting April 3, 2026 ... for a family of four, prices in euros" asks for
`arrival_date=2026-04-03`, `departure_date=2026-04-10`, `adults=4` and `currency_code=EUR`, yet only
the first is written in it. Each rule below explains one kind of value from the query text, and
says why (the rule's name and the words that support it), so a kept sample records how each of its
implied values was found:

- `date.spelled`: an ISO date the query spells with a month name ("April 3, 2026");
- `date.offset`: a spelled date moved by a duration the query states ("a week starting April 3",
  "for 3 nights from ...", "the next day", "two days later");
- `count.words`: a count written as a word or a phrase ("four adults", "a family of four",
  "a couple", "just me", "me and my wife");
- `duration`: a number of days or nights the query states ("a week" for 7);
- `unit`: a quantity the query states in another unit ("3 miles" for 4.83 km, "an hour" for 60
  minutes, "half a kilometre" for 0.5 km);
- `currency`: a currency code the query names in words or by its symbol ("euros", "€", "yen");
- `time`: a time of day spelled as people say it ("10 am", "half past six in the evening", "noon");
- `enum.words`: an enumerated value the query says in words ("premium economy" for PREMIUM_ECONOMY).

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
_DAY_FIRST = re.compile(r"(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(?P<year>\d{4})", re.I)
_MONTH_FIRST = re.compile(_MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})", re.I)

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "a": 1, "an": 1, "single": 1, "a single": 1, "a couple of": 2, "a pair of": 2, "a dozen": 12,
    "half a": 0.5, "half an": 0.5,
}
# Phrases that state a party size without a number ("a couple" travels as two adults).
PARTY_PHRASES: tuple[tuple[str, int], ...] = (
    (r"\bjust me\b|\bby myself\b|\bon my own\b|\btravell?ing (?:alone|solo)\b|\bsolo\b|\bfor one\b", 1),
    (r"\ba couple\b|\bme and my (?:wife|husband|partner|friend|brother|sister|mother|father|son|daughter)\b"
     r"|\bthe two of us\b|\bboth of us\b|\bfor two\b", 2),
    (r"\bthe three of us\b", 3),
    (r"\bthe four of us\b", 4),
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
_DURATION = re.compile(_QUANTITY + r"[\s-]+(?P<unit>days?|nights?|weeks?)\b|\b(?P<fortnight>a fortnight)\b", re.I)
_TIME_OF_DAY = re.compile(
    r"\b(?P<hour>\d{1,2})(?:[:.](?P<minute>\d{2}))?\s*(?P<half>a\.?m\.?|p\.?m\.?)(?![a-z])", re.I)
_HALF_PAST = re.compile(r"\b(?P<kind>half|quarter) (?P<rel>past|to) (?P<hour>\d{1,2}|"
                        + "|".join(w for w, n in NUMBER_WORDS.items() if isinstance(n, int) and 1 <= n <= 12 and " " not in w
                                   and w not in ("a", "an", "single"))
                        + r")(?P<rest>(?: o'clock)?(?: in the (?:morning|afternoon|evening)| at night| ?[ap]\.?m\.?)?)", re.I)
_NAMED_TIMES = {"noon": "12:00", "midday": "12:00", "midnight": "00:00"}
_RELATIVE_DAYS = re.compile(r"\b(?:the (?P<next>next|following) day|the day (?P<after>after|before)|"
                            + _QUANTITY + r" days? (?P<dir>later|after(?:wards)?|before|earlier))\b", re.I)


@dataclass(frozen=True)
class Derivation:
    """How one argument value follows from what the user said."""

    rule: str  # e.g. "date.offset", "count.words"
    because: str  # the words that support it, as a person reads them

    def describe(self) -> str:
        return f"{self.rule} ({self.because})"


def spelled_dates_with_spans(text: str) -> list[tuple[str, str]]:
    """(ISO date, words) for the dates a text spells with month names ("15 August 2024", "Aug 15, 2024")."""
    found = []
    for pattern in (_DAY_FIRST, _MONTH_FIRST):
        for match in pattern.finditer(text):
            month = _MONTHS[next(m for m in _MONTHS if m.startswith(match.group("month").lower()[:3]))]
            try:
                found.append((date(int(match.group("year")), month, int(match.group("day"))).isoformat(), match.group(0)))
            except ValueError:
                continue
    return found


def dates_spelled_in(text: str) -> set[str]:
    """ISO dates for the dates a text spells with month names."""
    return {iso for iso, _ in spelled_dates_with_spans(text)}


def _quantity(text: str) -> float | None:
    text = text.lower().strip()
    if text in NUMBER_WORDS:
        return float(NUMBER_WORDS[text])
    try:
        return float(text)
    except ValueError:
        return None


def stated_durations(query: str) -> list[tuple[int, str]]:
    """(days, words) for every duration the query states: "a week" -> 7, "3 nights" -> 3."""
    found = []
    for match in _DURATION.finditer(query):
        if match.group("fortnight"):
            found.append((14, match.group(0)))
            continue
        quantity = _quantity(match.group("quantity"))
        if quantity is not None and quantity == int(quantity):
            found.append((int(quantity) * DURATION_DAYS[match.group("unit").lower()], match.group(0)))
    for word, days in (("week", 7), ("weekend", 2)):
        for match in re.finditer(rf"\b(?:a|one|the|for the|this) {word}\b", query, re.I):
            found.append((days, match.group(0)))
    return found


def stated_day_offsets(query: str) -> list[tuple[int, str]]:
    """Day shifts the query states relative to another date ("the next day" +1, "two days before" -2)."""
    found = []
    for match in _RELATIVE_DAYS.finditer(query):
        if match.group("next") or match.group("after"):
            found.append((1, match.group(0)))
        elif match.group("after") is None and match.group(0).lower().startswith("the day before"):
            found.append((-1, match.group(0)))
        else:
            quantity = _quantity(match.group("quantity") or "")
            if quantity is not None and quantity == int(quantity):
                sign = -1 if match.group("dir").lower() in ("before", "earlier") else 1
                found.append((sign * int(quantity), match.group(0)))
    return found


def stated_counts(query: str) -> list[tuple[float, str]]:
    """Counts the query states in words or phrases ("four adults", "a family of four", "a couple")."""
    found = []
    words = "|".join(sorted((re.escape(w) for w in NUMBER_WORDS if w not in ("a", "an")), key=len, reverse=True))
    for match in re.finditer(rf"\b({words})\b", query, re.I):
        found.append((float(NUMBER_WORDS[match.group(1).lower()]), match.group(0)))
    for pattern, count in PARTY_PHRASES:
        for match in re.finditer(pattern, query, re.I):
            found.append((float(count), match.group(0)))
    return found


def stated_times(query: str) -> list[tuple[str, str]]:
    """("HH:MM", words) for the times of day the query spells ("10 am", "half past six in the evening")."""
    found = []
    for match in _TIME_OF_DAY.finditer(query):
        hour, minute = int(match.group("hour")), int(match.group("minute") or 0)
        if not 1 <= hour <= 12 or minute > 59:
            continue
        pm = match.group("half").lower().startswith("p")
        hour = (hour % 12) + (12 if pm else 0)
        found.append((f"{hour:02d}:{minute:02d}", match.group(0)))
    for match in _HALF_PAST.finditer(query):
        hour_text = match.group("hour").lower()
        hour = int(hour_text) if hour_text.isdigit() else int(NUMBER_WORDS[hour_text])
        minutes = 30 if match.group("kind").lower() == "half" else 15
        if match.group("rel").lower() == "to":
            hour, minutes = hour - 1, 60 - minutes
        rest = match.group("rest").lower()
        pm = any(word in rest for word in ("afternoon", "evening", "night", "pm", "p.m"))
        hour = (hour % 12) + (12 if pm else 0)
        found.append((f"{hour % 24:02d}:{minutes:02d}", match.group(0)))
    for word, value in _NAMED_TIMES.items():
        for match in re.finditer(rf"\b{word}\b", query, re.I):
            found.append((value, match.group(0)))
    return found


def stated_currencies(query: str) -> list[tuple[str, str]]:
    found = []
    for code, pattern in CURRENCY_WORDS.items():
        for match in re.finditer(pattern, query, re.I):
            found.append((code, match.group(0)))
    return found


def stated_quantities(query: str) -> list[tuple[float, str, str]]:
    """(quantity, unit pattern it matched, words) for "3 miles", "half an hour", "two kilometres"."""
    found = []
    for unit_pattern, _, _ in UNIT_CONVERSIONS:
        for match in re.finditer(_QUANTITY + rf"\s*(?:-\s*)?(?P<unit>{unit_pattern})\b", query, re.I):
            quantity = _quantity(match.group("quantity"))
            if quantity is not None:
                found.append((quantity, unit_pattern, match.group(0)))
    return found


def relative_references(query: str) -> list[str]:
    """The words by which a query picks an entry of a response ("the cheapest", "rated above")."""
    return list(dict.fromkeys(match.group(0).lower() for match in RELATIVE_REFERENCES.finditer(query)))


class QueryFacts:
    """What a query states, read once, then asked about each argument value."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.spelled_dates = spelled_dates_with_spans(query)  # (iso, words)
        self.durations = stated_durations(query)
        self.offsets = stated_day_offsets(query)
        self.counts = stated_counts(query)
        self.times = stated_times(query)
        self.currencies = stated_currencies(query)
        self.quantities = stated_quantities(query)

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
            for pattern, _, factor in UNIT_CONVERSIONS:
                if pattern == unit_pattern and _close(quantity * factor, value):
                    return Derivation("unit", f"{words} = {value:g}")
        return None


def _close(expected: float, value: float) -> bool:
    """Conversions are rounded by whoever wrote the value: 3 miles may be sent as 4.8 or 4.83 km."""
    return abs(expected - value) <= max(0.011 * abs(expected), 0.05)


def is_iso_date(text: str) -> bool:
    """A date written YYYY-MM-DD (what the travel schemas ask for), nothing shorter or longer."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


__all__ = ["Derivation", "QueryFacts", "dates_spelled_in", "relative_references", "stated_counts",
           "stated_currencies", "stated_day_offsets", "stated_durations", "stated_quantities", "stated_times"]
