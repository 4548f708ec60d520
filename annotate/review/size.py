"""How much text an annotation may hold (pure): larger is a reject with its reason, never gold.

Everything an annotator types or pastes ends up in a gold sample that later stages read in full:
stage3 rewrites and re-grounds the query of every template once per variant, the filter's grounding
searches the query for every argument value, and every export copies it. A 10 MB query is no query
(it stalled stage3 for minutes); a path JSON the size of a book is a paste gone wrong. So a pull
(and the webhook's live check, which runs the pull's checks) rejects an annotation whose text passes
these limits, naming the field and its size, and the annotator gets it back to fix:

- a query (the `query` field, and a user turn of a conversation): MAX_QUERY_CHARS characters,
  about twenty times the longest query of the published benchmarks here;
- any other field (the path JSON, a call's arguments, the notes, a conversation's turns JSON, which
  carry tool responses: ComplexFuncBench-sized ones reach 2 M characters): MAX_FIELD_CHARS;
- the whole annotation: MAX_ANNOTATION_CHARS.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

from annotate.tasks.problems import Problem, ProblemCode

MAX_QUERY_CHARS = 20_000
MAX_FIELD_CHARS = 8_000_000
MAX_ANNOTATION_CHARS = 16_000_000
QUERY_FIELDS = frozenset({"query"})
TURNS_FIELDS = frozenset({"conversation_json"})  # a conversation's turns: each user turn is a query


def _strings(value: Any) -> Iterator[str]:
    """Every string in a result region's value (text areas hold lists of strings)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def size_problems(result: Sequence[Any]) -> list[Problem]:
    """The fields of an annotation's result that pass their limit (empty: within every limit)."""
    problems: list[Problem] = []
    total = 0
    for region in result:
        if not isinstance(region, dict):
            continue
        name = str(region.get("from_name") or "?")
        size = sum(len(text) for text in _strings(region.get("value")))
        total += size
        limit = MAX_QUERY_CHARS if name in QUERY_FIELDS else MAX_FIELD_CHARS
        if size > limit:
            what = "the query" if name in QUERY_FIELDS else f"the field {name!r}"
            problems.append(Problem(ProblemCode.ANNOTATION_TOO_LARGE,
                                    f"{what} holds {size:,} characters, more than the {limit:,} allowed: shorten it"))
        elif name in TURNS_FIELDS:
            problems.extend(_long_user_turns(region.get("value")))
    if total > MAX_ANNOTATION_CHARS and not problems:
        problems.append(Problem(ProblemCode.ANNOTATION_TOO_LARGE,
                                f"the annotation holds {total:,} characters, more than the {MAX_ANNOTATION_CHARS:,} "
                                "allowed: shorten it"))
    return problems


def _long_user_turns(value: Any) -> list[Problem]:
    """A conversation's user turns are queries: each within MAX_QUERY_CHARS."""
    problems = []
    for text in _strings(value):
        if len(text) <= MAX_QUERY_CHARS:
            continue
        try:
            turns = json.loads(text)
        except ValueError:
            continue  # not JSON: the conversation's own checks say so
        for index, turn in enumerate(turns if isinstance(turns, list) else []):
            user = turn.get("user") if isinstance(turn, dict) else None
            if isinstance(user, str) and len(user) > MAX_QUERY_CHARS:
                problems.append(Problem(ProblemCode.ANNOTATION_TOO_LARGE,
                                        f"turn {index + 1}: the user's text holds {len(user):,} characters, more than "
                                        f"the {MAX_QUERY_CHARS:,} allowed: shorten it"))
    return problems
