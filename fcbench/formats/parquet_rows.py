"""Canonical sample <-> Parquet row (pure): the one explicit schema every export split and shard is
written with (PARQUET_SCHEMA), and the conversions both ways. The export writes rows; evaluation
and the report read them back, so both live here, one floor below those stages.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

import pyarrow as pa

from fcbench.sample import PathShape, Sample, path_shape, sample_from_dict

# ------------------------------------------------------------------------------------------ schema
# Every column is nullable: `datasets` builds nullable Arrow fields from its features, and a
# non-nullable Parquet field would make its cast fail. `messages` is a JSON string rather than
# list<struct<role, content>>: OpenAI messages are heterogeneous (assistant turns carry tool_calls
# and null content, tool turns carry tool_call_id, content may be a list of parts), so a fixed
# struct would drop keys or need every key any benchmark ever used, each null almost everywhere.
PARQUET_SCHEMA = pa.schema([
    pa.field("id", pa.string()),
    pa.field("domain", pa.list_(pa.string())),
    pa.field("difficulty", pa.string()),
    pa.field("n_steps", pa.int32()),
    pa.field("n_calls", pa.int32()),
    pa.field("nesting_depth", pa.int32()),
    pa.field("n_dependencies", pa.int32()),
    pa.field("messages", pa.string()),
    pa.field("tools", pa.string()),
    pa.field("calls", pa.string()),
    pa.field("turns", pa.string()),
    pa.field("acceptable", pa.string()),
    pa.field("answer", pa.string()),
    pa.field("dialog_acts", pa.list_(pa.string())),
    pa.field("parent_id", pa.string()),
    pa.field("provenance", pa.string()),
    pa.field("meta", pa.string()),
    pa.field("exact_fields", pa.string()),
])

COLUMN_DOCS = {
    "id": "sample id",
    "domain": "the sample's domain(s); a single domain is a one-element list",
    "difficulty": "none / single / multiple / nested, derived from the gold path",
    "n_steps": "steps of the gold path (a step is a set of parallel calls)",
    "n_calls": "calls of the gold path",
    "nesting_depth": "longest chain of calls reading an earlier call's output",
    "n_dependencies": "(call, earlier call it reads) pairs",
    "messages": "JSON: the conversation up to where the model must act (OpenAI chat messages)",
    "tools": "JSON: the function specs offered, parameters as JSON Schema",
    "calls": "JSON: the gold path, a list of steps of {label, name, arguments, response?}; "
             "arguments may reference earlier outputs as $label.path$",
    "turns": "JSON or null: later user turns with their own gold path (multi-turn)",
    "acceptable": "JSON or null: accepted alternatives per call label and argument",
    "answer": "JSON or null: the final answer executing the gold path gives (null = none recorded)",
    "dialog_acts": "dialog acts of the expected reply (response-quality items), or null",
    "parent_id": "the template a variant was generated from, or null",
    "provenance": "JSON: stage, model, prompt, seed, annotator, Label Studio ids",
    "meta": "JSON: format-specific fields kept for lossless conversion",
    "exact_fields": "JSON or null: the exact value of domain / dialog_acts when the typed column "
                    "normalises it (null on almost every row)",
}

JSON_COLUMNS = ("turns", "acceptable", "answer", "provenance", "meta")  # null column = field not set
SHAPE_COLUMNS = ("n_steps", "n_calls", "nesting_depth", "n_dependencies")
def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------------------- sample <-> row (pure)
def _domain_cell(domain: Any) -> list[str] | None:
    if domain is None:
        return None
    return [domain] if isinstance(domain, str) else list(domain)


def _domain_from_cell(cell: list[str] | None) -> str | list[str] | None:
    if cell is None:
        return None
    return cell[0] if len(cell) == 1 else cell


def _exact_fields(data: Mapping[str, Any], domain_cell: list[str] | None) -> dict[str, Any]:
    """Fields whose typed column would not give them back exactly: a domain written as a
    one-element list or as an explicit null, dialog acts set to an explicit null."""
    exact: dict[str, Any] = {}
    if "domain" in data:
        domain = data["domain"]
        if domain is None or _domain_from_cell(domain_cell) != domain:
            exact["domain"] = domain
    if "dialog_acts" in data and data["dialog_acts"] is None:
        exact["dialog_acts"] = None
    return exact


def sample_to_row(sample: Sample, shape: PathShape | None = None) -> dict[str, Any]:
    """One Parquet row: typed columns for what users filter on, JSON strings for nested values
    (`shape`: the sample's path_shape when the caller has it already)."""
    shape = shape or path_shape(sample)
    # sample_to_dict's own steps, sharing one path_shape (the costliest part of a row on big paths)
    sample.difficulty = shape.difficulty
    data = sample.model_dump(mode="json", exclude_unset=True)
    domain = _domain_cell(data.get("domain"))
    exact = _exact_fields(data, domain)
    row: dict[str, Any] = {
        "id": data["id"],
        "domain": domain,
        "difficulty": data["difficulty"],
        "n_steps": shape.n_steps,
        "n_calls": shape.n_calls,
        "nesting_depth": shape.nesting_depth,
        "n_dependencies": shape.n_dependencies,
        "messages": _dump(data["messages"]),
        "tools": _dump(data["tools"]),
        "calls": _dump(data["calls"]),
        "dialog_acts": data.get("dialog_acts"),
        "parent_id": sample.provenance.parent_id,
        "exact_fields": _dump(exact) if exact else None,
    }
    for column in JSON_COLUMNS:
        row[column] = _dump(data[column]) if column in data else None
    return row


def _is_null(value: Any) -> bool:
    # pandas gives NaN for a missing value in some column types
    return value is None or (isinstance(value, float) and math.isnan(value))


def _as_list(value: Any) -> list[Any] | None:
    """A list cell as a plain list (pandas hands list columns over as numpy arrays)."""
    if _is_null(value):
        return None
    return list(value.tolist() if hasattr(value, "tolist") else value)


def row_to_sample(row: Mapping[str, Any]) -> Sample:
    """Decode an exported row (from `datasets`, pandas or pyarrow) back into a canonical sample.

    Raises pydantic's ValidationError when the decoded record is not a valid sample."""
    data: dict[str, Any] = {
        "id": row["id"],
        "messages": json.loads(row["messages"]),
        "tools": json.loads(row["tools"]),
        "calls": json.loads(row["calls"]),
    }
    if not _is_null(row.get("difficulty")):
        data["difficulty"] = row["difficulty"]
    domain = _as_list(row.get("domain"))
    if domain is not None:
        data["domain"] = _domain_from_cell(domain)
    dialog_acts = _as_list(row.get("dialog_acts"))
    if dialog_acts is not None:
        data["dialog_acts"] = dialog_acts
    for column in JSON_COLUMNS:
        if not _is_null(row.get(column)):
            data[column] = json.loads(row[column])
    if not _is_null(row.get("exact_fields")):
        data.update(json.loads(row["exact_fields"]))
    return sample_from_dict(data)


def row_chars(row: Mapping[str, Any]) -> int:
    """Approximate uncompressed size of a row (characters of its strings, 8 per number): counting
    characters instead of encoding to UTF-8 keeps the check cheap; it only decides where shards end."""
    size = 0
    for value in row.values():
        if isinstance(value, str):
            size += len(value)
        elif isinstance(value, list):
            size += sum(len(item) for item in value)
        else:
            size += 8
    return size


# ------------------------------------------------------------------------------ sharded Parquet I/O
