"""How a value is said, both ways (pure): the words of a span read as a value, and a new value
written the way the old words said the old one.

Every rule of `fcbench.checks.derivation` (and `literal`, the value written as it is) can `read`
the text of its span(s) back into a value, so a value is checked against the words its provenance
names, never against the whole query. The single-span rules can also `write` a value in the style
of the words they replace ("November 15, 2025" -> "June 12, 2025", "5:45 pm" -> "6:30 am", "a
group of four" -> "the two of us", "euros" -> "pounds"), which is how stage3 says a new slot value.
`date.offset` has no writer: its value follows from two spans (a date and a duration), and is
recomputed from them whenever either changes.

A writer that cannot say a value in the old words' style returns None: the caller rejects that
variant (a rule that cannot be applied is never a silent copy of the old value).
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any, Mapping, Sequence

from fcbench.checks.derivation import (NUMBER_WORDS, Stated, close_enough, is_iso_date, stated_in,
                                       unit_value)

LITERAL = "literal"
SPELLING_RULES = frozenset({"date.spelled", "time", "currency", "count.words", "duration", "unit", "enum.words"})
DEPENDENT_RULES = frozenset({"date.offset"})  # read from two spans, never written into one
RULES = frozenset({LITERAL}) | SPELLING_RULES | DEPENDENT_RULES

_MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December"]
_SMALL_NUMBERS = {n: w for w, n in NUMBER_WORDS.items() if isinstance(n, int) and " " not in w
                  and w not in ("a", "an", "single", "zero")}
CURRENCY_SAID = {"USD": "US dollars", "EUR": "euros", "GBP": "pounds", "AUD": "Australian dollars", "JPY": "yen",
                 "SGD": "Singapore dollars", "CAD": "Canadian dollars", "CHF": "Swiss francs"}
_CURRENCY_SYMBOL = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}
_NUMBER = re.compile(r"^-?\d+(?:,\d{3})*(?:\.\d+)?$")


class Unread:
    """What a span reads as when it says no value under a rule (distinct from a null value)."""

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD = Unread()


def number_text(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def enum_words(value: str) -> str:
    """How a user says an enum member when nothing else is known: PREMIUM_ECONOMY -> premium economy."""
    return value.replace("_", " ").replace("-", " ").lower()


# ------------------------------------------------------------------------------------ reading
def _whole(text: str, rule: str) -> Stated | None:
    """The one reading of `rule` that covers the whole text."""
    stripped = text.strip()
    return next((fact for fact in stated_in(stripped) if fact.rule == rule and fact.start == 0
                 and fact.end == len(stripped)), None)


def read(rule: str, texts: Sequence[str], like: Any = None, params: Mapping[str, Any] | None = None,
         schema: Mapping[str, Any] | None = None) -> Any:
    """The value the words say under `rule`, or UNREAD. `like` is a value of the argument's type
    (a literal "3" reads as 3 for a number argument); `params` are the rule's parameters
    (enum.words: the words and the member they name; unit: the unit of the value)."""
    params = params or {}
    if rule in DEPENDENT_RULES:
        return _read_offset(texts)
    if rule == LITERAL and len(texts) > 1:  # one name said in several places ("tell me about Rome ... at Rome")
        values = [_read_literal(text, like, schema) for text in texts]
        return values[0] if all(same_value(value, values[0]) for value in values) else UNREAD
    if len(texts) != 1:
        return UNREAD
    text = texts[0]
    if rule == LITERAL:
        return _read_literal(text, like, schema)
    if rule == "enum.words":
        return _read_enum_words(text, params, schema)
    fact = _whole(text, rule)
    if fact is None or fact.value is None:
        return UNREAD
    if rule == "unit":
        quantity, unit_pattern = fact.value
        converted = unit_value(quantity, unit_pattern, params.get("unit"))
        return round(converted[0][1], 6) if converted else UNREAD
    return fact.value


def reads_as(rule: str, texts: Sequence[str], value: Any, params: Mapping[str, Any] | None = None,
             schema: Mapping[str, Any] | None = None) -> bool:
    """Whether the words say `value` under `rule` (strings case-insensitively, conversions to
    their rounding)."""
    found = read(rule, texts, value, params, schema)
    if found is UNREAD:
        return False
    if rule == "unit" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return close_enough(found, value)
    return same_value(found, value)


def same_value(found: Any, value: Any) -> bool:
    if isinstance(found, bool) or isinstance(value, bool):
        return found is value
    if isinstance(found, (int, float)) and isinstance(value, (int, float)):
        return float(found) == float(value)
    if isinstance(found, str) and isinstance(value, str):
        return " ".join(found.split()).lower() == " ".join(value.split()).lower()
    return found == value


def _read_literal(text: str, like: Any, schema: Mapping[str, Any] | None) -> Any:
    kind = (schema or {}).get("type")
    wants_number = (isinstance(like, (int, float)) and not isinstance(like, bool)) or kind in ("integer", "number")
    if wants_number:
        cleaned = text.strip().replace(",", "")
        if not _NUMBER.match(cleaned):
            return UNREAD
        number = float(cleaned)
        return int(number) if number.is_integer() and (kind == "integer" or isinstance(like, int)) else number
    return text


def _read_enum_words(text: str, params: Mapping[str, Any], schema: Mapping[str, Any] | None) -> Any:
    said = " ".join(text.split()).lower()
    if params.get("words") is not None and said == " ".join(str(params["words"]).split()).lower():
        return params.get("value", UNREAD)
    members = [member for member in (schema or {}).get("enum") or [] if isinstance(member, str)]
    if not members and isinstance(params.get("value"), str):
        members = [params["value"]]
    return next((member for member in members if enum_words(member) == said or member.lower() == said), UNREAD)


def _read_offset(texts: Sequence[str]) -> Any:
    """A date moved by a shift: [date words, shift words]."""
    if len(texts) != 2:
        return UNREAD
    anchor_text, shift_text = texts
    anchor = anchor_text.strip() if is_iso_date(anchor_text.strip()) else None
    if anchor is None:
        fact = _whole(anchor_text, "date.spelled")
        anchor = fact.value if fact else None
    shift = _whole(shift_text, "duration") or _whole(shift_text, "offset")
    if anchor is None or shift is None:
        return UNREAD
    return (date.fromisoformat(anchor) + timedelta(days=shift.value)).isoformat()


def shift_days(text: str) -> int | None:
    """The days a shift's words move a date by ("a week" 7, "the day before" -1)."""
    shift = _whole(text, "duration") or _whole(text, "offset")
    return shift.value if shift else None


# ------------------------------------------------------------------------------------ writing
def write(rule: str, value: Any, old_text: str, words: str | None = None) -> str | None:
    """`value` said the way `old_text` said the old value under `rule`; None when the rule cannot
    say it (the caller rejects the variant). `words`: how the value's slot says it (enum.words)."""
    if value is None or isinstance(value, bool):
        return None
    if rule == LITERAL:
        return number_text(value) if isinstance(value, (int, float)) else str(value)
    if rule == "date.spelled":
        return _write_date(value, old_text)
    if rule == "time":
        return _write_time(value, old_text)
    if rule == "currency":
        return _write_currency(value, old_text)
    if rule == "count.words":
        return _write_count(value, old_text)
    if rule == "duration":
        return _write_duration(value, old_text)
    if rule == "enum.words":
        return _match_case(words if words else enum_words(str(value)), old_text)
    if rule == "unit":
        return None  # a converted quantity is not re-said: the pools never vary one
    return None


def _match_case(text: str, old_text: str) -> str:
    return text.capitalize() if old_text[:1].isupper() and not old_text.isupper() else text


def _write_date(value: Any, old_text: str) -> str | None:
    if not isinstance(value, str) or not is_iso_date(value):
        return None
    day = date.fromisoformat(value)
    fact = _whole(old_text, "date.spelled")
    if fact is not None and old_text.strip()[:1].isdigit():
        return f"{day.day} {_MONTH_NAMES[day.month - 1]} {day.year}"
    return f"{_MONTH_NAMES[day.month - 1]} {day.day}, {day.year}"


def say_time(value: str) -> str | None:
    """'17:45' -> '5:45 pm', '09:00' -> '9 am', '12:00' -> 'noon'."""
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", value) if isinstance(value, str) else None
    if match is None:
        return None
    hour, minute = int(match.group(1)), int(match.group(2))
    if hour > 23 or minute > 59:
        return None
    if (hour, minute) == (12, 0):
        return "noon"
    if (hour, minute) == (0, 0):
        return "midnight"
    suffix = "am" if hour < 12 else "pm"
    shown = hour % 12 or 12
    return f"{shown} {suffix}" if minute == 0 else f"{shown}:{minute:02d} {suffix}"


def _write_time(value: Any, old_text: str) -> str | None:
    said = say_time(value)
    if said is None:
        return None
    if said in ("noon", "midnight") or re.search(r"\d", old_text) is None:
        return said
    return said


def _write_currency(value: Any, old_text: str) -> str | None:
    code = str(value).upper()
    if code not in CURRENCY_SAID:
        return None
    old = old_text.strip()
    if len(old) <= 2 and not old.isalpha():  # a symbol
        return _CURRENCY_SYMBOL.get(code, CURRENCY_SAID[code])
    if old.isupper() and len(old) == 3:  # written as a code
        return code
    said = CURRENCY_SAID[code]
    return said[:-1] if old.lower().endswith(("dollar", "euro", "pound", "franc")) and said.endswith("s") else said


def count_word(count: int) -> str:
    return _SMALL_NUMBERS.get(count, str(count))


def say_party(count: int, with_for: bool) -> str:
    """A party size as a traveller says it ("just for me", "for the two of us", "for a group of four")."""
    if count == 1:
        return "just for me" if with_for else "just me"
    if count == 2:
        return "for the two of us" if with_for else "the two of us"
    return f"for a group of {count_word(count)}" if with_for else f"a group of {count_word(count)}"


def _write_count(value: Any, old_text: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1:
        return None
    count = int(value)
    old = old_text.strip().lower()
    if re.fullmatch(r"[a-z]+", old) and old in NUMBER_WORDS:  # a number word ("four adults")
        return _match_case(count_word(count), old_text)
    with_for = old.startswith("for ") or " for " in f" {old} "
    if "family of" in old and count >= 2:
        return ("for " if old.startswith("for ") else "") + f"a family of {count_word(count)}"
    return say_party(count, with_for)


def _write_duration(value: Any, old_text: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1:
        return None
    days = int(value)
    old = old_text.lower()
    if "week" in old and days % 7 == 0:
        weeks = days // 7
        return "a week" if weeks == 1 else f"{count_word(weeks)} weeks"
    unit = "night" if "night" in old else "day"
    return f"{count_word(days)} {unit}{'s' if days != 1 else ''}" if days != 1 else f"one {unit}"


__all__ = ["DEPENDENT_RULES", "LITERAL", "RULES", "SPELLING_RULES", "UNREAD", "enum_words", "read", "reads_as",
           "same_value", "say_party", "say_time", "shift_days", "write"]
