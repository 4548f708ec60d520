"""User constraints that pick one entry of a long response (pure): "the cheapest hotel rated above 8",
"the cheapest flight leaving before 10 am", "the best-rated attraction".

ComplexFuncBench's queries say what the user wants, not where it is: the model must read a long
response to find the one entry that satisfies the constraint. A *pick rule* (a dataset's
`pick_rules.json`, beside its tools) says how an entry of a tool's result list may be chosen:

    {"Search_Hotels": {"list": "data.hotels", "noun": "hotel", "rules": [
        {"select": "min", "by": "price.total", "say": "the cheapest {noun}"},
        {"select": "min", "by": "price.total", "where": {"field": "review_score", "kind": "above"},
         "say": "the cheapest {noun} rated above {threshold}"}]}}

`select` is min or max of the `by` field over the entries that pass the optional `where` filter
(`above`: a number greater than the threshold; `before` / `after`: an ISO date-time whose time of day
is before / after the threshold hour). A pick is valid only when exactly one entry wins: that is the
disambiguation the paper asks for (one valid path), checked again on every variant.

A sample records its picks in `meta.picks` (one record per call argument group that reads a picked
entry). `repoint` moves the reader's references to the entry the constraint picks in the responses a
sample actually got (a stage3 variant's new city has another cheapest hotel); `pick_problems` says
which recorded pick does not single out the entry the path reads.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from fcbench.references import format_reference, parse_reference
from fcbench.resolve import walk_path
from fcbench.sample import Call, Sample

PICKS_META = "picks"
ABOVE_THRESHOLDS = (6.5, 7.0, 7.5, 8.0, 8.5, 9.0)  # "rated above 8"
HOUR_THRESHOLDS = tuple(range(7, 22))  # "leaving before 10 am"


class PickRulesError(ValueError):
    """A pick_rules.json that cannot be read."""


@dataclass(frozen=True)
class PickRule:
    select: str  # "min" | "max"
    by: str
    say: str
    where_field: str | None = None
    where_kind: str | None = None  # "above" | "before" | "after"


@dataclass(frozen=True)
class PickSpec:
    list_path: str
    noun: str
    rules: tuple[PickRule, ...]


@dataclass(frozen=True)
class Pick:
    index: int
    record: dict[str, Any]  # without reader/source labels (the caller adds them)
    text: str


def parse_path(text: str) -> tuple[str | int, ...]:
    """'segments[0].departureTime' -> ('segments', 0, 'departureTime')."""
    parts: list[str | int] = []
    for piece in text.split("."):
        match = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", piece)
        if match is None:
            raise PickRulesError(f"bad field path {text!r}")
        parts.append(match.group(1))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", match.group(2)))
    return tuple(parts)


def load_pick_rules(path: Path) -> dict[str, PickSpec]:
    """The pick rules of a dataset; an empty mapping when it has none."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        specs = {}
        for tool, spec in data.items():
            if tool.startswith("_"):
                continue  # a comment
            rules = []
            for rule in spec["rules"]:
                where = rule.get("where") or {}
                if rule["select"] not in ("min", "max") or where.get("kind") not in (None, "above", "before", "after"):
                    raise PickRulesError(f"{tool}: unknown select or where kind in {rule}")
                parse_path(rule["by"])
                rules.append(PickRule(rule["select"], rule["by"], rule["say"], where.get("field"), where.get("kind")))
            parse_path(spec["list"])
            specs[tool] = PickSpec(spec["list"], spec["noun"], tuple(rules))
        return specs
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PickRulesError(f"{path}: {exc}") from None


# ------------------------------------------------------------------------------------ deciding
def _value(entry: Any, field: str) -> Any:
    try:
        return walk_path(entry, parse_path(field))
    except (LookupError, TypeError):
        return None


def _minutes_of_day(value: Any) -> int | None:
    match = re.search(r"T(\d{2}):(\d{2})", value) if isinstance(value, str) else None
    return int(match.group(1)) * 60 + int(match.group(2)) if match else None


def passes(entry: Any, record: Mapping[str, Any], inclusive: bool | None = None) -> bool:
    """Whether the entry meets the constraint's bound. `inclusive` reads the bound one way
    whatever its kind (True: "after 4 pm" keeps 16:00; False: it does not); None reads it as the
    rules define it ("above" exclusive, "before" exclusive, "after" inclusive)."""
    where = record.get("where")
    if not where:
        return True
    value = _value(entry, where["field"])
    if where["kind"] == "above":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        return value >= where["threshold"] if inclusive else value > where["threshold"]
    minutes = _minutes_of_day(value)
    if minutes is None:
        return False
    limit = where["threshold"] * 60
    if where["kind"] == "before":
        return minutes <= limit if inclusive else minutes < limit
    return minutes > limit if inclusive is False else minutes >= limit


def select_index(entries: Sequence[Any], record: Mapping[str, Any], inclusive: bool | None = None) -> int | None:
    """The one entry the constraint picks, or None when no entry or several tie (`inclusive`: how
    its bound is read, see `passes`)."""
    scored = []
    for index, entry in enumerate(entries):
        value = _value(entry, record["by"])
        if passes(entry, record, inclusive) and isinstance(value, (int, float)) and not isinstance(value, bool):
            scored.append((value if record["select"] == "min" else -value, index))
    if not scored:
        return None
    scored.sort()
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None  # a tie: two entries fit, the query does not decide
    return scored[0][1]


def bound_decides(entries: Sequence[Any], record: Mapping[str, Any]) -> bool:
    """Whether the constraint picks the same entry however a person reads its bound: an entry
    sitting exactly on "after 4 pm" (16:00) or "rated above 8" (8.0) that would change the pick
    makes the query ambiguous."""
    if not record.get("where"):
        return True
    return select_index(entries, record, True) == select_index(entries, record, False)


def say_hour(hour: int) -> str:
    return "noon" if hour == 12 else f"{hour % 12 or 12} {'am' if hour < 12 else 'pm'}"


def _say(rule: PickRule, noun: str, threshold: Any) -> str:
    shown = "" if threshold is None else (say_hour(threshold) if rule.where_kind in ("before", "after")
                                           else f"{threshold:g}")
    return rule.say.format(noun=noun, threshold=shown)


def choose_pick(entries: Sequence[Any], spec: PickSpec, rng: random.Random) -> Pick | None:
    """A rule (and threshold) that singles out one entry, drawn with `rng`; None when none does.
    A filtered rule is only used when its filter matters (it keeps at least two entries and drops
    at least one) so the constraint is something the model must check."""
    options: list[tuple[PickRule, Any]] = []
    for rule in spec.rules:
        if rule.where_kind is None:
            options.append((rule, None))
            continue
        for threshold in ABOVE_THRESHOLDS if rule.where_kind == "above" else HOUR_THRESHOLDS:
            record = _record(spec, rule, threshold)
            kept = sum(passes(entry, record) for entry in entries)
            if 2 <= kept < len(entries) and bound_decides(entries, record):
                options.append((rule, threshold))
    rng.shuffle(options)
    for rule, threshold in options:
        record = _record(spec, rule, threshold)
        index = select_index(entries, record)
        if index is not None:
            text = _say(rule, spec.noun, threshold)
            return Pick(index, {**record, "text": text}, text)
    return None


def _record(spec: PickSpec, rule: PickRule, threshold: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"list": spec.list_path, "select": rule.select, "by": rule.by}
    if rule.where_kind is not None:
        record["where"] = {"field": rule.where_field, "kind": rule.where_kind, "threshold": threshold}
    return record


# ----------------------------------------------------------------------------- on a sample
def pick_entries(calls: Mapping[str, Call], record: Mapping[str, Any]) -> list[Any] | None:
    source = calls.get(record.get("source", ""))
    if source is None or "response" not in source.model_fields_set:
        return None
    try:
        entries = walk_path(source.response, parse_path(record["list"]))
    except (LookupError, TypeError):
        return None
    return entries if isinstance(entries, list) else None


def read_indexes(call: Call, source: str, list_path: tuple[str | int, ...]) -> set[int]:
    found = set()
    for value in _reference_strings(call.arguments):
        reference = parse_reference(value)
        if reference and reference.label == source and reference.path[:len(list_path)] == list_path \
                and len(reference.path) > len(list_path) and isinstance(reference.path[len(list_path)], int):
            found.add(reference.path[len(list_path)])
    return found


def _reference_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _reference_strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _reference_strings(item)]
    return []


def pick_problems(sample: Sample) -> list[str]:
    """Each recorded pick whose constraint does not single out the entry the reader reads."""
    records = sample.meta.get(PICKS_META) if isinstance(sample.meta, dict) else None
    if not records:
        return []
    calls = {call.label: call for call in sample.all_calls()}
    problems = []
    for record in records:
        entries = pick_entries(calls, record)
        reader = calls.get(record.get("reader", ""))
        if entries is None or reader is None:
            problems.append(f"pick {record.get('text')!r}: the path has no {record.get('source')}.{record.get('list')}")
            continue
        index = select_index(entries, record)
        read = read_indexes(reader, record["source"], parse_path(record["list"]))
        if index is None:
            problems.append(f"{record['text']!r} singles out no entry of {record['source']}.{record['list']} "
                            "(none fits, or several tie)")
        elif read != {index}:
            problems.append(f"{record['text']!r} picks {record['source']}.{record['list']}[{index}] but "
                            f"{reader.label} reads {sorted(read)}")
    return problems


def first_entries(sample: Sample) -> Sample:
    """The sample with each picked reference moved to the list's first entry, which exists in any
    non-empty answer: a variant whose list is shorter than the template's runs, then `repoint` moves
    the references to the entry its constraint picks."""
    records = sample.meta.get(PICKS_META) if isinstance(sample.meta, dict) else None
    if not records:
        return sample
    plans: dict[str, list[tuple[str, tuple[str | int, ...], int]]] = {}
    for record in records:
        plans.setdefault(record.get("reader", ""), []).append((record["source"], parse_path(record["list"]), 0))
    return _moved(sample, plans)[0]


def repoint(sample: Sample) -> tuple[Sample, bool]:
    """The sample with each reader's references moved to the entry its constraint picks in the
    sample's own responses; (sample, whether anything moved). A pick that singles out nothing is
    left as it is (`pick_problems` names it)."""
    records = sample.meta.get(PICKS_META) if isinstance(sample.meta, dict) else None
    if not records:
        return sample, False
    calls = {call.label: call for call in sample.all_calls()}
    moves: dict[str, list[tuple[str, tuple[str | int, ...], int]]] = {}
    for record in records:
        entries = pick_entries(calls, record)
        index = select_index(entries, record) if entries is not None else None
        if index is not None and record.get("reader") in calls:
            moves.setdefault(record["reader"], []).append((record["source"], parse_path(record["list"]), index))
    return _moved(sample, moves)


def _moved(sample: Sample, moves: Mapping[str, list[tuple[str, tuple[str | int, ...], int]]]) -> tuple[Sample, bool]:
    changed = False

    def moved(value: Any, plan: list[tuple[str, tuple[str | int, ...], int]]) -> Any:
        nonlocal changed
        if isinstance(value, list):
            return [moved(item, plan) for item in value]
        if isinstance(value, dict):
            return {key: moved(item, plan) for key, item in value.items()}
        reference = parse_reference(value)
        if reference is None:
            return value
        for source, list_path, index in plan:
            cut = len(list_path)
            if reference.label == source and reference.path[:cut] == list_path and len(reference.path) > cut \
                    and isinstance(reference.path[cut], int) and reference.path[cut] != index:
                changed = True
                return format_reference(source, reference.path[:cut] + (index,) + reference.path[cut + 1:])
        return value

    steps = [[call.model_copy(update={"arguments": moved(call.arguments, moves[call.label])})
              if call.label in moves else call for call in step] for step in sample.calls]
    return (sample.model_copy(update={"calls": steps}), True) if changed else (sample, False)
