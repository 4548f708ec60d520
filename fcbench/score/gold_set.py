"""Scoring against the gold set: which prediction line answers which gold item (pure).

Every metric family grades the GOLD ITEMS, never the prediction lines, so that no rewriting of a
prediction file (repeating lines, dropping lines, reordering them, relabelling what the gold owns,
adding lines for made-up ids, changing the gold a line carries) raises a figure:

- the gold decides what is graded and by which rule (a BFCL category, a CONFETTI part); a line's
  own claims about its category or its gold are never read when a gold is given;
- each gold item is answered by at most ONE line: the first line with its key, in file order.
  Later lines with the same key are `duplicates`: listed, not scored;
- a gold item no line answers is `missing`: scored as wrong by its family, and listed;
- a line whose key is no gold item's is `foreign`: listed, not scored;
- a line that cannot be read (broken JSON, not an object, no usable id) is `unreadable`: listed.

`align_to_gold` does this once for every family (`fcbench.evaluate.score_files` and the pure
scorers call it); the family then walks `alignment.pairs()` in gold order. Figures that are a
rate over what was PREDICTED rather than over the gold (CONFETTI's parameter validity, CallNavi's
stability, ComplexEval's per-parameter-type error rates) cannot count a missing answer as
wrong; they are reported only when the alignment is `complete` (every gold item answered), so
dropping a line can never improve them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)


class GoldSetError(ValueError):
    """The gold itself cannot be a denominator (an id given twice)."""


@dataclass(frozen=True)
class PredictionLine:
    """One non-blank line of a prediction file: its parsed object, or why it could not be read."""

    line_no: int
    value: Mapping[str, Any] | None = None
    error: str | None = None


def numbered(lines: Iterable[Mapping[str, Any] | PredictionLine]) -> list[PredictionLine]:
    """Lines as `PredictionLine`s; plain objects are numbered by position (1-based), as a file's
    lines would be."""
    return [line if isinstance(line, PredictionLine) else PredictionLine(n, line)
            for n, line in enumerate(lines, start=1)]


def item_id(line: Mapping[str, Any], field_name: str = "id") -> str | None:
    """A line's id as a string: a string or an integer (not a bool); anything else is no id."""
    value = line.get(field_name)
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    return None


@dataclass
class GoldAlignment(Generic[Key]):
    """The prediction file seen from the gold: the answering line of each gold item, and every
    line that answers nothing (duplicate, foreign, unreadable)."""

    gold: list[Key]
    answers: dict[Key, PredictionLine] = field(default_factory=dict)
    duplicates: list[tuple[PredictionLine, Key]] = field(default_factory=list)
    foreign: list[tuple[PredictionLine, Key]] = field(default_factory=list)
    unreadable: list[PredictionLine] = field(default_factory=list)
    describe: Callable[[Key], Any] = str

    def answer(self, key: Key) -> Mapping[str, Any] | None:
        line = self.answers.get(key)
        return None if line is None else line.value

    def pairs(self) -> Iterator[tuple[Key, Mapping[str, Any] | None]]:
        """Every gold item in gold order with its answering line (None: missing)."""
        for key in self.gold:
            yield key, self.answer(key)

    @property
    def missing(self) -> list[Key]:
        return [key for key in self.gold if key not in self.answers]

    @property
    def complete(self) -> bool:
        return len(self.answers) == len(self.gold)

    def counts(self) -> dict[str, int]:
        """The summary's `gold_set` block: the denominator and what did not count."""
        return {"gold": len(self.gold), "answered": len(self.answers), "missing": len(self.gold) - len(self.answers),
                "duplicate_lines": len(self.duplicates), "foreign_lines": len(self.foreign),
                "unreadable_lines": len(self.unreadable)}

    def listing(self) -> dict[str, Any]:
        """Every line that did not count and every gold item without an answer, by name."""
        first_line = {key: line.line_no for key, line in self.answers.items()}
        return {
            **self.counts(),
            "missing": [self.describe(key) for key in self.missing],
            "duplicates": [{"line": line.line_no, "id": self.describe(key), "first": first_line[key]}
                           for line, key in self.duplicates],
            "foreign": [{"line": line.line_no, "id": self.describe(key)} for line, key in self.foreign],
            "unreadable": [{"line": line.line_no, "error": line.error} for line in self.unreadable],
        }


def align_to_gold(gold: Iterable[Key], lines: Iterable[Mapping[str, Any] | PredictionLine],
                  key_of: Callable[[Mapping[str, Any]], Key | None],
                  describe: Callable[[Key], Any] = str, no_key: str = "no id") -> GoldAlignment[Key]:
    """Pair each gold item with the first line whose `key_of(line)` is its key. `key_of` returns
    None for a line that names no item (then it is unreadable, with `no_key` as the reason)."""
    gold_keys = list(gold)
    known: set[Key] = set()
    for key in gold_keys:
        if key in known:
            raise GoldSetError(f"the gold has the id {describe(key)!r} twice: which item a line answers would be a guess")
        known.add(key)
    alignment: GoldAlignment[Key] = GoldAlignment(gold_keys, describe=describe)
    for line in numbered(lines):
        if line.value is None:
            alignment.unreadable.append(line)
            continue
        key = key_of(line.value)
        if key is None:
            alignment.unreadable.append(PredictionLine(line.line_no, None, no_key))
        elif key not in known:
            alignment.foreign.append((line, key))
        elif key in alignment.answers:
            alignment.duplicates.append((line, key))
        else:
            alignment.answers[key] = line
    return alignment


def self_gold_alignment(lines: Iterable[Mapping[str, Any] | PredictionLine],
                        key_of: Callable[[Mapping[str, Any]], Key | None],
                        describe: Callable[[Key], Any] = str, no_key: str = "no id") -> GoldAlignment[Key]:
    """For a file that carries its own gold (NESTful's published predictions) and no gold file:
    the gold set is the keys the file names, in first-appearance order, so only duplicates and
    unreadable lines can be found; nothing can be missing or foreign. Say so where it is used."""
    numbered_lines = numbered(lines)
    keys: dict[Key, None] = {}
    for line in numbered_lines:
        if line.value is not None:
            key = key_of(line.value)
            if key is not None:
                keys.setdefault(key)
    return align_to_gold(keys, numbered_lines, key_of, describe, no_key)
