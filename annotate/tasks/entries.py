"""Response entries: the items of lists inside call responses, which annotators may delete.

ComplexFuncBench's disambiguation deletes response entries that would make the query ambiguous
(three hotels match "a hotel in Paris"; the gold path picks one). An entry is named like a reference
without the dollars, `var_1.data[2]`, so annotators read the same spelling they write in paths, and
the name parses with `fcbench.references`. Pure functions; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from fcbench.references import format_reference, parse_reference
from fcbench.sample import Call

Path = tuple[str | int, ...]
MIN_LIST_ITEMS = 2  # deleting from a one-item list never disambiguates anything
MAX_ENTRIES = 300  # an annotator cannot review more checkboxes than this in one task


@dataclass(frozen=True)
class ResponseEntry:
    label: str  # the call whose response holds the list
    path: Path  # from the response root to the item; the last part is the item's index
    value: Any

    @property
    def id(self) -> str:
        return entry_id(self.label, self.path)

    @property
    def list_id(self) -> str:
        return entry_id(self.label, self.path[:-1])


def entry_id(label: str, path: Path) -> str:
    return format_reference(label, path)[1:-1]


def parse_entry_id(text: str) -> tuple[str, Path] | None:
    reference = parse_reference(f"${text.strip()}$")
    if reference is None or not reference.path or not isinstance(reference.path[-1], int):
        return None
    return reference.label, reference.path


def iter_entries(value: Any, label: str, prefix: Path = ()) -> Iterator[ResponseEntry]:
    """Every item of every list of at least `MIN_LIST_ITEMS` objects, outer lists first."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from iter_entries(item, label, prefix + (str(key),))
    elif isinstance(value, list):
        # only lists of objects hold entries (hotels, flights): a list of strings (amenities) is a value
        if len(value) >= MIN_LIST_ITEMS and all(isinstance(item, dict) for item in value):
            for index, item in enumerate(value):
                yield ResponseEntry(label, prefix + (index,), item)
        for index, item in enumerate(value):
            yield from iter_entries(item, label, prefix + (index,))


def response_entries(calls: Iterable[Call], limit: int = MAX_ENTRIES) -> list[ResponseEntry]:
    entries: list[ResponseEntry] = []
    for call in calls:
        if "response" not in call.model_fields_set:
            continue
        for entry in iter_entries(call.response, call.label):
            if len(entries) >= limit:
                return entries
            entries.append(entry)
    return entries


def without_entries(value: Any, deleted: set[Path], prefix: Path = ()) -> Any:
    """A copy of a response without the deleted items (paths from the response root).

    Indexes always name items of the ORIGINAL response, so deleting `[0]` and `[2]` together
    means what the annotator ticked, whatever the order.
    """
    if not deleted:
        return value
    if isinstance(value, dict):
        return {key: without_entries(item, deleted, prefix + (str(key),)) for key, item in value.items()}
    if isinstance(value, list):
        return [without_entries(item, deleted, prefix + (index,))
                for index, item in enumerate(value) if prefix + (index,) not in deleted]
    return value


def deletions_by_label(entry_ids: Iterable[str]) -> tuple[dict[str, set[Path]], list[str]]:
    """Group ticked entry ids by call label; ids that do not parse come back separately."""
    grouped: dict[str, set[Path]] = {}
    unreadable: list[str] = []
    for text in entry_ids:
        parsed = parse_entry_id(text)
        if parsed is None:
            unreadable.append(text)
            continue
        label, path = parsed
        grouped.setdefault(label, set()).add(path)
    return grouped, unreadable
