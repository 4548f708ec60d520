"""CallNavi question files (`Questions/<domain>.json`) to canonical samples and back.

A question file is a JSON array of
`{"id", "question": [messages], "ground_truth": {"API": [names], "parameters": [{...}, ...]},
"difficulty": "easy" | "medium" | "hard"}`. The domain's tools live in a second file: by default
`../APISchema/<same name>` beside the Questions folder, else `../APIs/<same name>` (api_ports),
or the file named by `--tools`.

CallNavi does not say which calls could run in parallel, nor which call feeds which: every call
is its own step, in the order of `API`, labelled `call_1`, `call_2`... A value the question does
not give, or that comes from an earlier call, is written `"$$$"` by CallNavi; it stays that
literal string here (it is not a `$label.path$` reference) and scorers treat it as a wildcard
that matches any value.

The conversion of one item (`sample_from_item` / `item_from_sample`) is pure; `read`/`write` do
the file I/O around it.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from fcbench.catalog.callnavi import (
    parameter_names_from_api_ports,
    tools_from_api_ports,
    tools_from_api_schema,
    tools_to_api_schema,
)
from fcbench.errors import ItemError
from fcbench.formats import FormatError, FormatOptions, Rejected
from fcbench.jsonl import write_json
from fcbench.references import parse_reference
from fcbench.sample import Call, Difficulty, Provenance, Sample, Tool, path_shape

FORMAT_NAME = "callnavi"
UNKNOWN_VALUE = "$$$"  # CallNavi's wildcard: unknown from the question, or an earlier call's output
ITEM_KEYS = ("id", "question", "ground_truth", "difficulty")
GROUND_TRUTH_KEYS = ("API", "parameters")

# Keys of `sample.meta["callnavi"]`.
DIFFICULTY = "difficulty"  # the published label (easy/medium/hard), not derivable from the calls
PARAMETERS_LENGTH = "parameters_length"  # when `parameters` is shorter than `API` (6 shopping items)
EXTRA_PARAMETERS = "extra_parameters"  # entries of `parameters` beyond the last API
EXTRA_ITEM_FIELDS = "extra_fields"
EXTRA_GROUND_TRUTH_FIELDS = "extra_ground_truth_fields"

# Published labels for samples that do not carry one (written from another format).
_LABEL_FOR_SHAPE = {
    Difficulty.NONE: "easy",
    Difficulty.SINGLE: "easy",
    Difficulty.MULTIPLE: "medium",
    Difficulty.NESTED: "hard",
}


# ------------------------------------------------------------------------------------- reading
def call_label(index: int) -> str:
    return f"call_{index + 1}"


def _checked_ground_truth(item: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    ground_truth = item.get("ground_truth")
    if not isinstance(ground_truth, dict):
        raise ItemError('"ground_truth" must be an object')
    names = ground_truth.get("API")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ItemError('"ground_truth.API" must be a list of API names')
    parameters = ground_truth.get("parameters", [])
    if not isinstance(parameters, list) or not all(isinstance(entry, dict) for entry in parameters):
        raise ItemError('"ground_truth.parameters" must be a list of objects')
    return names, parameters


def _checked_messages(item: dict[str, Any]) -> list[dict[str, Any]]:
    question = item.get("question")
    if not isinstance(question, list) or not all(isinstance(message, dict) for message in question):
        raise ItemError('"question" must be a list of chat messages')
    return question


def _inferred_tools(calls: list[Call], known: set[str]) -> list[Tool]:
    """Tools for API names the ground truth uses but the domain catalog lacks (real CallNavi data
    does this: aviation `getpassengerName`, hr `updateEmploymentContract`). Their parameters are
    only what the gold arguments show, so they are marked `inferred`."""
    properties_by_name: dict[str, dict[str, Any]] = {}
    for call in calls:
        if call.name in known:
            continue
        properties = properties_by_name.setdefault(call.name, {})
        for argument in call.arguments:
            properties.setdefault(argument, {})
    return [
        Tool(name=name, parameters={"type": "object", "properties": properties}, meta={"inferred": True})
        for name, properties in properties_by_name.items()
    ]


def sample_from_item(item: Any, domain: str, tools: list[Tool], source_file: str) -> Sample:
    """One question item as a canonical sample; `tools` are the domain's (copied per sample)."""
    if not isinstance(item, dict):
        raise ItemError("an item must be a JSON object")
    if not isinstance(item.get("id"), str):
        raise ItemError('"id" must be a string')
    messages = _checked_messages(item)
    names, parameters = _checked_ground_truth(item)
    calls = [
        Call(label=call_label(index), name=name, arguments=parameters[index] if index < len(parameters) else {})
        for index, name in enumerate(names)
    ]
    meta: dict[str, Any] = {}
    if "difficulty" in item:
        meta[DIFFICULTY] = item["difficulty"]
    if len(parameters) < len(names):
        meta[PARAMETERS_LENGTH] = len(parameters)
    elif len(parameters) > len(names):
        meta[EXTRA_PARAMETERS] = parameters[len(names):]
    extra_item = {key: value for key, value in item.items() if key not in ITEM_KEYS}
    if extra_item:
        meta[EXTRA_ITEM_FIELDS] = extra_item
    extra_ground_truth = {key: value for key, value in item["ground_truth"].items() if key not in GROUND_TRUTH_KEYS}
    if extra_ground_truth:
        meta[EXTRA_GROUND_TRUTH_FIELDS] = extra_ground_truth
    sample_tools = [tool.model_copy(deep=True) for tool in tools]
    sample_tools += _inferred_tools(calls, {tool.name for tool in tools})
    return Sample(
        id=item["id"],
        domain=domain,
        messages=messages,
        tools=sample_tools,
        calls=[[call] for call in calls],
        provenance=Provenance(source_format=FORMAT_NAME, source_file=source_file),
        meta={FORMAT_NAME: meta},
    )


def _load_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{path}: cannot read the CallNavi {what} file ({exc})") from exc


def _tools_file_for(questions_path: Path, options: FormatOptions) -> Path:
    if options.tools is not None:
        if not Path(options.tools).is_file():
            raise FormatError(f"{options.tools}: no such tools file")
        return Path(options.tools)
    root = questions_path.resolve().parent.parent
    for folder in ("APISchema", "APIs"):
        candidate = root / folder / questions_path.name
        if candidate.is_file():
            return candidate
    raise FormatError(
        f"{questions_path}: no CallNavi tools found (looked for ../APISchema/{questions_path.name} and "
        f"../APIs/{questions_path.name}); name the file with --tools"
    )


def _api_ports_beside(schema_path: Path) -> Path | None:
    """`APIs/<name>` next to `APISchema/<name>`: it keeps the parameter names the schema lost."""
    candidate = schema_path.resolve().parent.parent / "APIs" / schema_path.name
    return candidate if candidate.is_file() else None


def load_domain_tools(path: Path) -> list[Tool]:
    """Canonical tools of a CallNavi tools file, APISchema (list) or api_ports (object) form."""
    document = _load_json(path, "tools")
    try:
        if isinstance(document, dict) and "api_ports" in document:
            return tools_from_api_ports(document)
        if isinstance(document, list) and all(isinstance(spec, dict) and "name" in spec for spec in document):
            ports_path = _api_ports_beside(path)
            names = parameter_names_from_api_ports(_load_json(ports_path, "APIs")) if ports_path else None
            return tools_from_api_schema(document, names)
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(f"{path}: not a CallNavi tools file ({exc})") from exc
    raise FormatError(f"{path}: not a CallNavi tools file (expected an APISchema list or an api_ports object)")


def read(path: Path, options: FormatOptions = FormatOptions()) -> Iterator[Sample | Rejected]:
    items = _load_json(path, "Questions")
    if not isinstance(items, list):
        raise FormatError(f"{path}: not a CallNavi Questions file (expected a JSON array of questions)")
    tools = load_domain_tools(_tools_file_for(path, options))
    domain = path.stem
    for index, item in enumerate(items):
        try:
            yield sample_from_item(item, domain, tools, str(path))
        except (ItemError, ValueError) as exc:
            yield Rejected(source=f"{path}#{index}", reason=str(exc), raw=item)


# ------------------------------------------------------------------------------------- writing
_LOSS_WARNINGS = {
    "responses": "CallNavi cannot store call responses: {n} responses dropped",
    "acceptable": "CallNavi cannot store acceptable alternative values: {n} samples lost them",
    "references": 'CallNavi cannot store references to earlier outputs: {n} references written as "$$$"',
    "parallel": "CallNavi cannot mark parallel calls: {n} samples with parallel steps written in sequence",
    "turns": "CallNavi cannot store later user turns: {n} samples lost their later turns",
    "answer": "CallNavi cannot store a final answer: {n} answers dropped",
    "dialog_acts": "CallNavi cannot store dialog acts: {n} samples lost them",
}


@dataclass
class WriteLosses:
    """Counts of what the CallNavi format cannot hold, turned into one warning line per kind."""

    counts: Counter[str] = field(default_factory=Counter)

    def warnings(self) -> list[str]:
        return [template.format(n=self.counts[kind]) for kind, template in _LOSS_WARNINGS.items() if self.counts[kind]]


def _without_references(value: Any, losses: WriteLosses) -> Any:
    """The value with every `$label.path$` reference replaced by CallNavi's `"$$$"`."""
    if parse_reference(value) is not None:
        losses.counts["references"] += 1
        return UNKNOWN_VALUE
    if isinstance(value, dict):
        return {key: _without_references(item, losses) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_references(item, losses) for item in value]
    return value


def _count_losses(sample: Sample, losses: WriteLosses) -> None:
    calls = [call for step in sample.calls for call in step]
    losses.counts["responses"] += sum("response" in call.model_fields_set for call in calls)
    losses.counts["parallel"] += any(len(step) > 1 for step in sample.calls)
    losses.counts["acceptable"] += bool(sample.acceptable)
    losses.counts["turns"] += bool(sample.turns)
    losses.counts["answer"] += "answer" in sample.model_fields_set
    losses.counts["dialog_acts"] += bool(sample.dialog_acts)


def _parameters_list(arguments: list[dict[str, Any]], meta: dict[str, Any]) -> list[Any]:
    """Give back the published `parameters` length: entries CallNavi left out were read as empty
    arguments, so they are dropped again only if they are still empty."""
    length = meta.get(PARAMETERS_LENGTH)
    if isinstance(length, int) and 0 <= length < len(arguments) and not any(arguments[length:]):
        return list(arguments[:length])
    return list(arguments) + copy.deepcopy(meta.get(EXTRA_PARAMETERS, []))


def item_from_sample(sample: Sample, losses: WriteLosses) -> dict[str, Any]:
    """One canonical sample as a CallNavi question item (losses are counted, not raised)."""
    _count_losses(sample, losses)
    meta = sample.meta.get(FORMAT_NAME, {})
    calls = [call for step in sample.calls for call in step]
    arguments = [_without_references(copy.deepcopy(call.arguments), losses) for call in calls]
    ground_truth: dict[str, Any] = {
        "API": [call.name for call in calls],
        "parameters": _parameters_list(arguments, meta),
    }
    ground_truth.update(copy.deepcopy(meta.get(EXTRA_GROUND_TRUTH_FIELDS, {})))
    item: dict[str, Any] = {"id": sample.id, "question": copy.deepcopy(sample.messages), "ground_truth": ground_truth}
    item["difficulty"] = meta.get(DIFFICULTY, _LABEL_FOR_SHAPE[path_shape(sample).difficulty])
    item.update(copy.deepcopy(meta.get(EXTRA_ITEM_FIELDS, {})))
    return item


def catalog_tools(samples: list[Sample]) -> list[Tool]:
    """The tools of all samples, first spec of each name, without the inferred ones."""
    by_name: dict[str, Tool] = {}
    for sample in samples:
        for tool in sample.tools:
            if not tool.meta.get("inferred"):
                by_name.setdefault(tool.name, tool)
    return list(by_name.values())


def write(samples: list[Sample], path: Path, options: FormatOptions = FormatOptions()) -> list[str]:
    losses = WriteLosses()
    items = [item_from_sample(sample, losses) for sample in samples]
    write_json(path, items, indent=2)
    if options.tools_out is not None:
        write_json(options.tools_out, tools_to_api_schema(catalog_tools(samples)), indent=2)
    return losses.warnings()
