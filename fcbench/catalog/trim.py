"""Oversized tool schemas, flagged and trimmed by one documented rule (pure).

A real description can inline the same large component into every operation: a 1.2 MB description
became an 86 MB catalog, single tools reached 64k tokens of parameters. No model reads that and no
benchmark of ComplexFuncBench's kind has it. `build-dataset new` trims each tool in these steps,
each only while the part is still over its limit, and the import report lists every tool trimmed
with its sizes before and after and the steps taken:

parameters (over `MAX_PARAMETER_TOKENS`)
  1. `examples` below the arguments themselves are dropped (an argument's own examples seed the
     value pools and stay);
  2. descriptions below the arguments are dropped;
  3. nesting deeper than `KEEP_DEPTH` levels under an argument becomes `{"type": ...}` with the
     description "(trimmed by build-dataset new)";
  4. optional arguments are dropped, largest first (required ones never are).
returns (over `MAX_RETURNS_TOKENS`)
  1. example answers beyond the first `KEEP_EXAMPLES` are dropped;
  2. descriptions are dropped;
  3. nesting deeper than `KEEP_RETURNS_DEPTH` levels becomes `{"type": ...}` (the graph sampler
     feeds from leaves nearer the top).
A catalog still over `MAX_CATALOG_MB` after trimming is flagged (the report says so).

Sizes are tokens estimated as characters of compact JSON / 4 (`estimated_tokens`), so the rule
needs no tokenizer and gives the same result everywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MAX_PARAMETER_TOKENS = 4_000
MAX_RETURNS_TOKENS = 8_000
MAX_CATALOG_MB = 20.0
KEEP_DEPTH = 3
KEEP_RETURNS_DEPTH = 5
KEEP_EXAMPLES = 1
TRIMMED = "(trimmed by build-dataset new)"


def estimated_tokens(value: Any) -> int:
    return (len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) + 3) // 4


@dataclass
class Trimmed:
    """What was done to one part of one tool."""

    tool: str
    part: str  # "parameters" or "returns"
    tokens_before: int
    tokens_after: int
    steps: list[str] = field(default_factory=list)
    dropped_arguments: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def trim_parameters(name: str, parameters: dict[str, Any], limit: int = MAX_PARAMETER_TOKENS) -> Trimmed | None:
    """Trim a tool's `parameters` in place; None when it was under the limit."""
    before = estimated_tokens(parameters)
    if before <= limit:
        return None
    record = Trimmed(name, "parameters", before, before)
    properties = parameters.get("properties") or {}
    steps = [
        ("examples below the arguments dropped", lambda: [_drop_key(sub, "examples", keep_top=True) for sub in properties.values()]),
        ("descriptions below the arguments dropped", lambda: [_drop_key(sub, "description", keep_top=True) for sub in properties.values()]),
        (f"nesting deeper than {KEEP_DEPTH} levels cut", lambda: [_cut_depth(sub, KEEP_DEPTH) for sub in properties.values()]),
    ]
    for label, step in steps:
        if estimated_tokens(parameters) <= limit:
            break
        step()
        record.steps.append(label)
    required = set(parameters.get("required") or [])
    optional = sorted((n for n in properties if n not in required), key=lambda n: (-estimated_tokens(properties[n]), n))
    for argument in optional:
        if estimated_tokens(parameters) <= limit:
            break
        del properties[argument]
        record.dropped_arguments.append(argument)  # its location stays in the http meta: never sent
    if record.dropped_arguments:
        record.steps.append("optional arguments dropped, largest first")
    record.tokens_after = estimated_tokens(parameters)
    return record


def trim_returns(name: str, returns: dict[str, Any], limit: int = MAX_RETURNS_TOKENS) -> Trimmed | None:
    """Trim a tool's `returns` in place; None when it was under the limit."""
    before = estimated_tokens(returns)
    if before <= limit:
        return None
    record = Trimmed(name, "returns", before, before)

    def fewer_examples() -> None:
        if isinstance(returns.get("examples"), list):
            returns["examples"] = returns["examples"][:KEEP_EXAMPLES]

    steps = [
        (f"example answers beyond the first {KEEP_EXAMPLES} dropped", fewer_examples),
        ("descriptions dropped", lambda: _drop_key(returns, "description", keep_top=False)),
        (f"nesting deeper than {KEEP_RETURNS_DEPTH} levels cut", lambda: _cut_depth(returns, KEEP_RETURNS_DEPTH)),
    ]
    for label, step in steps:
        if estimated_tokens(returns) <= limit:
            break
        step()
        record.steps.append(label)
    record.tokens_after = estimated_tokens(returns)
    return record


def catalog_megabytes(records: list[dict[str, Any]]) -> float:
    return len(json.dumps(records, ensure_ascii=False, indent=2).encode("utf-8")) / 1e6


def _children(schema: dict[str, Any]) -> list[Any]:
    found: list[Any] = list((schema.get("properties") or {}).values()) if isinstance(schema.get("properties"), dict) else []
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            found.append(schema[key])
    for key in ("oneOf", "anyOf"):
        found.extend(sub for sub in schema.get(key) or [] if isinstance(sub, dict))
    return found


def _drop_key(schema: Any, key: str, keep_top: bool) -> None:
    if not isinstance(schema, dict):
        return
    if not keep_top:
        schema.pop(key, None)
    for child in _children(schema):
        _drop_key(child, key, keep_top=False)


def _cut_depth(schema: Any, depth: int) -> None:
    """Below `depth` levels, a schema keeps only its type."""
    if not isinstance(schema, dict):
        return
    for key in ("properties",):
        if isinstance(schema.get(key), dict):
            for name, child in list(schema[key].items()):
                schema[key][name] = _cut_or_walk(child, depth - 1)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            schema[key] = _cut_or_walk(schema[key], depth - 1)
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            schema[key] = [_cut_or_walk(sub, depth - 1) for sub in schema[key]]


def _cut_or_walk(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict):
        return schema
    if depth <= 0 and _children(schema):
        kept = {"type": schema["type"]} if "type" in schema else {}
        return {**kept, "description": TRIMMED}
    _cut_depth(schema, depth)
    return schema
