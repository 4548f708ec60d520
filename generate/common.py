"""What the generation stages (stage1, stage3) share, one floor below both: where their prompt files
and value pools are, and how a query is read out of the model's answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

from fcbench.config import PipelineConfig

PROMPTS = Path(__file__).parent / "prompts"


def value_pools_path(pipeline: PipelineConfig) -> Path:
    """stages.stage1.value_pools or stages.stage3.value_pools when declared, else value_pools.json
    beside the benchmark."""
    declared = pipeline.stages.stage1.value_pools or pipeline.stages.stage3.value_pools
    return pipeline.resolve(declared) if declared else pipeline.dataset_path / "value_pools.json"


def parse_query(completion: Any) -> str:
    """The query out of the model's JSON answer; `ParseError` (re-asked, then rejected) otherwise."""
    from fcbench.llm.client import ParseError

    text = (completion.content or "").strip()
    if text.startswith("```"):  # a fenced block is still the JSON we asked for
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"not JSON ({exc.msg})") from None
    query = value.get("query") if isinstance(value, dict) else None
    if not isinstance(query, str) or not query.strip():
        raise ParseError("expected an object with a non-empty string 'query'")
    return query.strip()


def user_query_parser(tools: Sequence[Any]) -> Callable[[Any], str]:
    """`parse_query`, and the query must read as a user writes it (fcbench.checks.query_text, with
    the offered tools: no pasted operation summary, no API codes, no glitches); `ParseError`
    otherwise, so the model is asked again and, failing that, the draft is rejected."""
    from fcbench.checks.query_text import query_text_problems
    from fcbench.llm.client import ParseError

    def parse(completion: Any) -> str:
        query = parse_query(completion)
        problems = query_text_problems(query, list(tools))
        if problems:
            raise ParseError("the query does not read as a user's: " + "; ".join(p.describe() for p in problems[:3]))
        return query

    return parse


T = TypeVar("T")


def in_windows(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """`items` in consecutive lists of `size` (the last may be shorter), read only as needed: a
    stage works on one window at a time, concurrently within it, and writes it in order."""
    window: list[T] = []
    for item in items:
        window.append(item)
        if len(window) == size:
            yield window
            window = []
    if window:
        yield window
