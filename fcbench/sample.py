"""The canonical sample: one record per benchmark item, shared by every stage and format adapter.

The typed models below are the source of truth; `fcbench/schema/sample.schema.json` is generated from
them (`python -m fcbench.schema`) and shipped so that non-Python tools can validate files too. A test
keeps the two in step.

Serialisation rule: a field that was never set is not written (`exclude_unset`), so "no response
recorded" (key absent) stays distinct from "the tool answered null" (key present, value null).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from fcbench.references import iter_references


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Difficulty(str, Enum):
    """Shape of the gold path, derived from the calls (never typed in by hand)."""

    NONE = "none"  # no call is expected (irrelevance items)
    SINGLE = "single"  # exactly one call
    MULTIPLE = "multiple"  # several calls, none reads another's output
    NESTED = "nested"  # some call reads an earlier call's output


class Tool(_Strict):
    """An OpenAI-style function spec: JSON Schema `parameters`, optional JSON Schema `returns`.

    `meta` keeps whatever the source format said that JSON Schema cannot (HTTP method, endpoint,
    original type spellings...), so converting back loses nothing.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    returns: dict[str, Any] | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Call(_Strict):
    """One function call of a gold path. `arguments` may hold `$label.path$` references."""

    label: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    response: Any = None


Step = list[Call]
"""Calls made together (in parallel): none of them may read another of the same step."""


class AcceptableValues(_Strict):
    """Alternatives accepted for one argument (BFCL's possible answers, generalised)."""

    values: list[Any] = Field(default_factory=list)
    may_omit: bool = False


class Turn(_Strict):
    """A later user turn of a multi-turn item, scored on its own gold path (BFCL multi-turn)."""

    messages: list[dict[str, Any]]
    calls: list[Step] = Field(default_factory=list)


class Provenance(_Strict):
    """Where a sample came from. Never holds a secret (API keys stay in the environment)."""

    stage: str | None = None
    source_format: str | None = None
    source_file: str | None = None
    model: str | None = None
    prompt_file: str | None = None
    prompt_hash: str | None = None
    seed: int | None = None
    parent_id: str | None = None
    sampled_tools: list[str] | None = None
    annotator: str | None = None
    label_studio_task_id: int | None = None
    label_studio_annotation_id: int | None = None
    created_at: str | None = None


class Sample(_Strict):
    id: str
    domain: str | list[str] | None = None
    difficulty: Difficulty | None = None
    messages: list[dict[str, Any]]
    tools: list[Tool]
    calls: list[Step]
    turns: list[Turn] | None = None
    acceptable: dict[str, dict[str, AcceptableValues]] | None = None
    answer: Any = None
    dialog_acts: list[str] | None = None
    provenance: Provenance = Field(default_factory=Provenance)
    meta: dict[str, Any] = Field(default_factory=dict)

    def all_steps(self) -> list[Step]:
        """The steps of the first turn followed by those of every later turn."""
        steps = list(self.calls)
        for turn in self.turns or []:
            steps.extend(turn.calls)
        return steps

    def all_calls(self) -> list[Call]:
        return [call for step in self.all_steps() for call in step]

    def tool_names(self) -> set[str]:
        return {tool.name for tool in self.tools}


@dataclass(frozen=True)
class PathShape:
    """Everything derived from a gold path; computed in one place (`path_shape`)."""

    difficulty: Difficulty
    n_steps: int
    n_calls: int
    nesting_depth: int  # edges on the longest chain of references; 0 when no call reads another
    n_dependencies: int  # (call, earlier call it reads) pairs
    n_nested_calls: int = 0  # calls that read an earlier call's output (NESTful's nested calls)


def path_shape(sample: Sample) -> PathShape:
    steps = sample.all_steps()
    calls = [call for step in steps for call in step]
    depth_by_label: dict[str, int] = {}
    n_dependencies = n_nested_calls = 0
    for call in calls:
        read_labels = {ref.label for ref in iter_references(call.arguments)} - {call.label}
        known = [depth_by_label[label] + 1 for label in read_labels if label in depth_by_label]
        n_dependencies += len(read_labels)
        n_nested_calls += bool(read_labels)
        depth_by_label[call.label] = max(known, default=0)
    if not calls:
        difficulty = Difficulty.NONE
    elif n_dependencies:
        difficulty = Difficulty.NESTED
    elif len(calls) == 1:
        difficulty = Difficulty.SINGLE
    else:
        difficulty = Difficulty.MULTIPLE
    return PathShape(
        difficulty=difficulty,
        n_steps=len(steps),
        n_calls=len(calls),
        nesting_depth=max(depth_by_label.values(), default=0),
        n_dependencies=n_dependencies,
        n_nested_calls=n_nested_calls,
    )


def with_derived_fields(sample: Sample) -> Sample:
    """Return the sample with `difficulty` set from its path (the only writer of that field)."""
    sample.difficulty = path_shape(sample).difficulty
    return sample


def sample_to_dict(sample: Sample) -> dict[str, Any]:
    """The JSON form written to stage files; fields never set are left out."""
    return with_derived_fields(sample).model_dump(mode="json", exclude_unset=True)


def sample_from_dict(data: dict[str, Any]) -> Sample:
    return Sample.model_validate(data)


def user_query(sample: Sample) -> str:
    """The text of the last user message (the query a template asks)."""
    for message in reversed(sample.messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return message["content"]
    return ""
