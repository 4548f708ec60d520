"""Disambiguation helpers: what in a draft is likely ambiguous, flagged in the task before push.

Two kinds, the two ComplexFuncBench's senior annotators fixed by hand:
- a later argument taken from one entry of a response list in which several entries could have
  supplied it (each has the same field): unless the query says which, a model cannot know;
- tools whose purposes overlap (`fcbench.catalog.lint`'s overlapping-tools finding).
Pure functions over a canonical sample.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator

from annotate.entries import Path, entry_id, iter_entries
from fcbench.catalog.lint import Code, lint_tools
from fcbench.json_values import json_leaves
from fcbench.references import iter_references
from fcbench.resolve import walk_path
from fcbench.sample import Call, Sample, Tool

MAX_FLAGS = 20


@dataclass(frozen=True)
class Ambiguity:
    kind: str  # "response_entries" | "overlapping_tools"
    message: str
    entries: tuple[str, ...] = field(default=())  # entry ids to look at (candidates for deletion)
    tools: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "entries": list(self.entries), "tools": list(self.tools)}


@dataclass(frozen=True)
class _Source:
    """Where an argument value sits in an earlier response: list item `index` of the list at
    `list_path` of call `label`, at `inner` inside the item."""

    label: str
    list_path: Path
    index: int
    inner: Path


def find_ambiguities(sample: Sample) -> list[Ambiguity]:
    flags = list(_entry_ambiguities(sample)) + list(_tool_overlaps(sample))
    return flags[:MAX_FLAGS]


def _tool_overlaps(sample: Sample) -> Iterator[Ambiguity]:
    yield from _overlaps_of(_tools_fingerprint(sample))


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
            tools = (finding.tool, other) if other else (finding.tool,)
            yield Ambiguity("overlapping_tools", f"tool {finding.tool} {finding.message}", tools=tools)


def _entry_ambiguities(sample: Sample) -> Iterator[Ambiguity]:
    """One flag per (call, entry it reads from): `var_2` taking dest_id and search_type from
    `var_1.data[0]` is one choice among the entries of `var_1.data`, flagged once."""
    calls = sample.all_calls()
    responses = {call.label: call.response for call in calls if "response" in call.model_fields_set}
    for position, call in enumerate(calls):
        earlier = {c.label: responses[c.label] for c in calls[:position] if c.label in responses}
        fields: dict[tuple[str, Path, int], list[tuple[str, Path]]] = {}
        for argument, source in _argument_sources(call, earlier):
            fields.setdefault((source.label, source.list_path, source.index), []).append((argument, source.inner))
        for (label, list_path, index), read in fields.items():
            items = walk_path(earlier[label], list_path)
            candidates = [i for i, item in enumerate(items) if any(_has_path(item, inner) for _, inner in read)]
            if len(candidates) < 2:
                continue
            arguments = ", ".join(dict.fromkeys(f"{call.label}.{argument}" for argument, _ in read))
            list_name = entry_id(label, list_path)
            yield Ambiguity(
                "response_entries",
                f"{arguments} {'comes' if len(read) == 1 else 'come'} from {list_name}[{index}], but "
                f"{len(candidates)} entries of {list_name} could supply {'it' if len(read) == 1 else 'them'}: "
                "does the query say which one?",
                entries=tuple(entry_id(label, list_path + (i,)) for i in candidates),
            )


def _argument_sources(call: Call, earlier: dict[str, Any]) -> Iterator[tuple[str, _Source]]:
    """(argument name, source) for each argument read from a list entry of an earlier response:
    through a reference whose path crosses a list index, or a literal equal to a value in one."""
    for argument, value in call.arguments.items():
        references = list(iter_references(value))
        if references:
            for reference in references:
                source = _source_of_path(reference.label, reference.path) if reference.label in earlier else None
                if source is not None:
                    yield argument, source
            continue
        for leaf in _scalar_leaves(value):
            for label, response in earlier.items():
                for source in _literal_sources(label, response, leaf):
                    yield argument, source


def _source_of_path(label: str, path: Path) -> _Source | None:
    """Split a reference path at its last list index: `data[2].dest_id` -> list `data`, item 2."""
    for position in range(len(path) - 1, -1, -1):
        if isinstance(path[position], int):
            return _Source(label, path[:position], path[position], path[position + 1:])
    return None


def _scalar_leaves(value: Any) -> Iterator[Any]:
    return (leaf for leaf in json_leaves(value) if _is_distinctive(leaf))


def _is_distinctive(value: Any) -> bool:
    """Values specific enough to trace: ids, names, numbers; not booleans, nulls or one letter."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return len(value.strip()) >= 2
    return isinstance(value, (int, float))


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
