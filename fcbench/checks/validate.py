"""Checks a canonical JSONL file line by line: JSON Schema first, then what a schema cannot say
(unknown tools, references to labels that do not exist or come later, duplicate labels, a stored
difficulty that disagrees with the path). Pure logic over parsed lines; the CLI prints the problems.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from jsonschema import Draft202012Validator

from fcbench.jsonl import iter_json_lines
from fcbench.references import iter_references
from fcbench.sample import Sample, path_shape, sample_from_dict
from fcbench.schema import load_schema


@dataclass(frozen=True)
class Problem:
    line_no: int
    field: str
    message: str

    def render(self, path: str | Path) -> str:
        return f"{path}:{self.line_no}: {self.field}: {self.message}"


def _field_path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(record)"


def _schema_validator() -> Draft202012Validator:
    return Draft202012Validator(load_schema())


def semantic_problems(sample: Sample) -> Iterator[tuple[str, str]]:
    """(field, message) for every cross-field rule the sample breaks."""
    tool_names = sample.tool_names()
    seen_labels: set[str] = set()
    step_groups = [("calls", sample.calls)] + [
        (f"turns[{t}].calls", turn.calls) for t, turn in enumerate(sample.turns or [])
    ]
    for prefix, steps in step_groups:
        for s, step in enumerate(steps):
            labels_of_step = {call.label for call in step}
            for c, call in enumerate(step):
                where = f"{prefix}[{s}][{c}]"
                if call.name not in tool_names:
                    yield f"{where}.name", f"unknown tool {call.name!r} (not in the sample's tools)"
                if call.label in seen_labels:
                    yield f"{where}.label", f"duplicate label {call.label!r}"
                for reference in iter_references(call.arguments):
                    if reference.label in labels_of_step:
                        yield f"{where}.arguments", (
                            f"reference {reference.text} reads a call of the same step (parallel calls cannot)"
                        )
                    elif reference.label not in seen_labels:
                        yield f"{where}.arguments", f"reference {reference.text} names no earlier call"
            seen_labels |= labels_of_step
    for label in (sample.acceptable or {}):
        if label not in seen_labels:
            yield f"acceptable.{label}", f"no call has label {label!r}"
    if sample.difficulty is not None:
        derived = path_shape(sample).difficulty
        if sample.difficulty != derived:
            yield "difficulty", f"stored {sample.difficulty.value!r} but the path is {derived.value!r}"


def validate_record(record: Any, validator: Draft202012Validator | None = None) -> list[tuple[str, str]]:
    validator = validator or _schema_validator()
    errors = sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        return [(_field_path(e.absolute_path), e.message) for e in errors]
    return list(semantic_problems(sample_from_dict(record)))


def validate_file(path: str | Path) -> Iterator[Problem]:
    validator = _schema_validator()
    for line in iter_json_lines(path):
        if line.error:
            yield Problem(line.line_no, "(line)", line.error)
            continue
        for field, message in validate_record(line.value, validator):
            yield Problem(line.line_no, field, message)
