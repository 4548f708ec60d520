"""NESTful files (v1 and v2) <-> canonical samples, losslessly both ways.

v1 (`data_v1/executable-data.json`): a JSON array of `{input, output}`; calls are labelled `var1`,
references read `$var1.skyId$`, and a last pseudo-call `var_result` gathers the outputs the answer
is made of. The tools live in a second file, `executable-spec.json` (`--tools`, default: beside the
data file).
v2 (`data_v2/*.jsonl`, `toy_data.jsonl`, `icl_examples.json`, prediction files): records with
`sample_id`, `input`, `output` (calls labelled `$var_1`), `tools` and `gold_answer`; some files
store `output`, `tools` and `gold_answer` as JSON-encoded strings, and prediction files add
`generated_text`.

Canonical form: one user message, one call per step (NESTful paths are ordered sequences), labels
without the leading `$` (references are kept as written: `$var_1.result$` already names `var_1`),
tools as JSON Schema (fcbench.catalog.nestful), `answer` = the decoded gold answer. What only the
file needs (which fields were encoded, `$` on labels, the `var_result` pseudo-call, extra fields)
goes to `sample.meta["nestful"]`.

Pure record conversion comes first; file reading and writing are at the end.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from fcbench.catalog.nestful import (
    is_basic_math_tool,
    optional_parameters_lost_in_flat_form,
    tools_from_nestful,
    tools_from_nestful_v1,
    tools_to_nestful,
    tools_to_nestful_v1,
)
from fcbench.errors import ItemError
from fcbench.formats import FormatError, FormatOptions, Rejected
from fcbench.jsonl import iter_json_lines, read_json_or_lines, write_json, write_json_lines
from fcbench.sample import Call, Provenance, Sample, Tool

FORMAT = "nestful"
META_KEY = "nestful"
VERSIONS = ("v1", "v2")
RESULT_PSEUDO_CALL = "var_result"  # v1: gathers the final outputs; not a tool
V1_DEFAULT_SPEC_NAME = "executable-spec.json"
ENCODABLE_FIELDS = ("output", "tools", "gold_answer")
_MAPPED_FIELDS = {"sample_id", "input", *ENCODABLE_FIELDS}
CALL_KEY_ORDER = ["name", "label", "arguments"]  # the usual order; others are recorded per call
_CALL_FIELDS = set(CALL_KEY_ORDER)


# ---------------------------------------------------------------- NESTful record -> Sample


def _decode_field(record: dict[str, Any], field: str, encoded: dict[str, str]) -> Any:
    """The field's value, decoding a JSON-encoded string and remembering its exact text."""
    value = record[field]
    if not isinstance(value, str):
        return value
    if field == "gold_answer" and "output" not in encoded:
        return value  # a plain string answer: only files that encode `output` encode the answer
    try:
        decoded = json.loads(value)
    except json.JSONDecodeError as exc:
        if field == "gold_answer":
            return value
        raise ItemError(f"`{field}` is a string that is not JSON ({exc.msg})") from exc
    encoded[field] = value
    return decoded


def _encoding_bookkeeping(decoded: dict[str, Any], encoded: dict[str, str]) -> dict[str, Any]:
    """Which fields were encoded; the exact text only when `json.dumps` would not give it back."""
    bookkeeping: dict[str, Any] = {}
    if encoded:
        bookkeeping["json_encoded"] = [field for field in ENCODABLE_FIELDS if field in encoded]
        verbatim = {field: text for field, text in encoded.items() if json.dumps(decoded[field]) != text}
        if verbatim:
            bookkeeping["encoded_verbatim"] = verbatim
    return bookkeeping


@dataclass
class _ParsedOutput:
    steps: list[list[Call]]
    bookkeeping: dict[str, Any]


def _parse_call(item: Any, position: int) -> tuple[Call, bool, dict[str, Any]]:
    """A call of `output`: the Call, whether its label had a leading `$`, its unknown keys."""
    if not isinstance(item, dict):
        raise ItemError(f"output[{position}] is {type(item).__name__}, expected a call object")
    name, label, arguments = item.get("name"), item.get("label"), item.get("arguments")
    if not isinstance(name, str) or not isinstance(label, str) or not isinstance(arguments, dict):
        raise ItemError(f"output[{position}] needs a string `name`, a string `label` and an object `arguments`")
    had_dollar = label.startswith("$")
    extras = {key: value for key, value in item.items() if key not in _CALL_FIELDS}
    return Call(label=label[1:] if had_dollar else label, name=name, arguments=arguments), had_dollar, extras


def _parse_output(output: Any) -> _ParsedOutput:
    if not isinstance(output, list):
        raise ItemError(f"`output` is {type(output).__name__}, expected a list of calls")
    steps: list[list[Call]] = []
    bookkeeping: dict[str, Any] = {}
    dollar_labels: list[str] = []
    call_extras: dict[str, dict[str, Any]] = {}
    # v1 and the code samples write `name, arguments, label`; JSON-encoded `output` text is only
    # given back exactly in the source order.
    key_orders: dict[str, list[str]] = {}
    for position, item in enumerate(output):
        if isinstance(item, dict) and item.get("name") == RESULT_PSEUDO_CALL:
            # Not a call to a tool: kept whole so the writer puts it back where it was.
            bookkeeping["result_call"] = item
            bookkeeping["result_position"] = position
            continue
        call, had_dollar, extras = _parse_call(item, position)
        if had_dollar:
            dollar_labels.append(call.label)
        if extras:
            call_extras[call.label] = extras
        if list(item) != CALL_KEY_ORDER:
            key_orders[call.label] = list(item)
        steps.append([call])
    # All-or-none is the rule in published files (v2 `$var_1`, v1 `var1`); a mix is listed.
    bookkeeping["dollar_labels"] = bool(dollar_labels) if len(dollar_labels) in (0, len(steps)) else dollar_labels
    if call_extras:
        bookkeeping["call_extras"] = call_extras
    bookkeeping.update(_key_order_bookkeeping(key_orders, len(steps)))
    return _ParsedOutput(steps, bookkeeping)


def _key_order_bookkeeping(key_orders: dict[str, list[str]], n_calls: int) -> dict[str, Any]:
    """One shared order when every call uses the same unusual one, else the exceptions by label."""
    distinct = {tuple(order) for order in key_orders.values()}
    if len(key_orders) == n_calls and len(distinct) == 1:
        return {"call_key_order": list(distinct.pop())}
    return {"call_key_orders": key_orders} if key_orders else {}


def _domain(version: str, tools: list[Tool]) -> str:
    """v1 is RapidAPI (flights, hotels, weather...). v2 mixes two populations: math samples built
    only from `basic_functions.py`, and code samples whose tools are Python functions."""
    if version == "v1":
        return "rapidapi"
    return "math" if tools and all(is_basic_math_tool(tool) for tool in tools) else "code"


def sample_from_record(
    record: Any,
    *,
    version: str,
    index: int,
    v1_tools: list[Tool] | None = None,
    source_file: str | None = None,
) -> Sample:
    """One NESTful record as a Sample. `index` (0-based position in the file) names samples
    that carry no id. Raises ItemError when the record cannot be converted."""
    if not isinstance(record, dict):
        raise ItemError(f"record is {type(record).__name__}, expected an object")
    query = record.get("input")
    if not isinstance(query, str) or "output" not in record:
        raise ItemError("record needs a string `input` and an `output`")
    encoded: dict[str, str] = {}
    decoded = {field: _decode_field(record, field, encoded) for field in ENCODABLE_FIELDS if field in record}
    parsed = _parse_output(decoded["output"])
    bookkeeping: dict[str, Any] = {"version": version, **parsed.bookkeeping, **_encoding_bookkeeping(decoded, encoded)}

    if version == "v1":
        tools = [tool.model_copy(deep=True) for tool in v1_tools or []]
    elif "tools" in decoded:
        if not isinstance(decoded["tools"], list):
            raise ItemError("`tools` is not a list of tool specs")
        try:
            tools = tools_from_nestful(decoded["tools"])
        except ValueError as exc:
            raise ItemError(f"tools: {exc}") from exc
    else:
        tools = []
        bookkeeping["tools_absent"] = True

    sample_id = record.get("sample_id")
    if not isinstance(sample_id, str):
        sample_id = f"nestful-{version}-{index + 1:04d}"
        bookkeeping["generated_id"] = True  # the writer leaves it out again
    extra_fields = {
        key: value
        for key, value in record.items()
        if key not in _MAPPED_FIELDS or (key == "sample_id" and bookkeeping.get("generated_id"))
    }
    if extra_fields:
        bookkeeping["extra_fields"] = extra_fields  # e.g. `generated_text` of prediction files

    fields: dict[str, Any] = {}
    if "gold_answer" in decoded:
        fields["answer"] = decoded["gold_answer"]
    return Sample(
        id=sample_id,
        domain=_domain(version, tools),
        messages=[{"role": "user", "content": query}],
        tools=tools,
        calls=parsed.steps,
        provenance=Provenance(source_format=FORMAT, source_file=source_file),
        meta={META_KEY: bookkeeping},
        **fields,
    )


# ---------------------------------------------------------------- Sample -> NESTful record


@dataclass
class _Losses:
    """What the target format cannot hold, counted per kind (one warning line each)."""

    counts: Counter[str]

    def add(self, kind: str, count: int = 1) -> None:
        if count:
            self.counts[kind] += count

    def lines(self) -> list[str]:
        return [f"nestful: {count} {kind}" for kind, count in sorted(self.counts.items())]


def _bookkeeping(sample: Sample, version: str) -> dict[str, Any]:
    """The sample's NESTful bookkeeping, only when it was read from the same NESTful version."""
    value = sample.meta.get(META_KEY)
    if isinstance(value, dict) and value.get("version") == version:
        return value
    return {}


def _query(sample: Sample, losses: _Losses) -> str:
    users = [message for message in sample.messages if message.get("role") == "user"]
    if len(sample.messages) != 1 or len(users) != 1:
        losses.add("samples whose messages are not one user message: only the last user message was kept")
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def _output(sample: Sample, version: str, bookkeeping: dict[str, Any], losses: _Losses) -> list[dict[str, Any]]:
    dollar_labels = bookkeeping.get("dollar_labels", version == "v2")
    call_extras = bookkeeping.get("call_extras", {})
    shared_key_order = bookkeeping.get("call_key_order")
    call_key_orders = bookkeeping.get("call_key_orders", {})
    output: list[dict[str, Any]] = []
    for step in sample.calls:  # later turns cannot be written (counted in `_count_unexpressed`)
        if len(step) > 1:
            losses.add("steps with parallel calls: written one after another (NESTful paths are sequences)")
        for call in step:
            with_dollar = dollar_labels is True or (isinstance(dollar_labels, list) and call.label in dollar_labels)
            item = {
                "name": call.name,
                "label": f"${call.label}" if with_dollar else call.label,
                "arguments": call.arguments,
            }
            item.update(call_extras.get(call.label, {}))
            order = call_key_orders.get(call.label, shared_key_order)
            if order:
                item = {key: item[key] for key in order if key in item} | item
            if "response" in call.model_fields_set:
                losses.add("calls with a response: NESTful cannot store responses (dropped)")
            output.append(item)
    if "result_call" in bookkeeping:
        position = min(bookkeeping.get("result_position", len(output)), len(output))
        output.insert(position, bookkeeping["result_call"])
    return output


def _count_unexpressed(sample: Sample, version: str, losses: _Losses) -> None:
    source = sample.meta.get(META_KEY)
    if isinstance(source, dict) and source.get("version") != version and "result_call" in source:
        losses.add(f"v1 `{RESULT_PSEUDO_CALL}` pseudo-calls: NESTful {version} has none (dropped)")
    if sample.turns:
        losses.add("samples with later turns: NESTful is single-turn (turns dropped)")
    if sample.acceptable:
        losses.add("samples with acceptable values: NESTful has one gold value per argument (dropped)")
    if sample.dialog_acts:
        losses.add("samples with dialog acts (dropped)")
    if version == "v1" and "answer" in sample.model_fields_set and not _bookkeeping(sample, version):
        losses.add("samples with an answer: NESTful v1 has no gold answer field (dropped)")
    if version == "v2":
        losses.add(
            "tool specs with optional parameters written in the flat form (NESTful v2 has no `required`)",
            sum(optional_parameters_lost_in_flat_form(tool) for tool in sample.tools),
        )


def _encode(record: dict[str, Any], bookkeeping: dict[str, Any]) -> None:
    """Encode the fields that were JSON strings in the source, giving back the exact text."""
    verbatim = bookkeeping.get("encoded_verbatim", {})
    for field in bookkeeping.get("json_encoded", []):
        if field not in record:
            continue
        text = verbatim.get(field)
        if text is not None and json.loads(text) == record[field]:
            record[field] = text
        else:
            record[field] = json.dumps(record[field])


def sample_to_record(sample: Sample, version: str, losses: _Losses) -> dict[str, Any]:
    """One Sample as a NESTful record of the given version (tools of v1 go to the spec file)."""
    bookkeeping = _bookkeeping(sample, version)
    record: dict[str, Any] = {}
    if not bookkeeping.get("generated_id"):
        record["sample_id"] = sample.id
    record["input"] = _query(sample, losses)
    record["output"] = _output(sample, version, bookkeeping, losses)
    if version == "v2" and not bookkeeping.get("tools_absent"):
        record["tools"] = tools_to_nestful(sample.tools)
    # v1 has no gold answer; one is written back only when the v1 file itself had it.
    if "answer" in sample.model_fields_set and (version == "v2" or bookkeeping):
        record["gold_answer"] = sample.answer
    record.update(bookkeeping.get("extra_fields", {}))
    _count_unexpressed(sample, version, losses)
    _encode(record, bookkeeping)
    return record


def v1_catalog(samples: list[Sample], losses: _Losses) -> list[Tool]:
    """The tools of all samples, once each, in first-seen order (v1 has one shared spec file)."""
    by_name: dict[str, Tool] = {}
    for sample in samples:
        for tool in sample.tools:
            kept = by_name.setdefault(tool.name, tool)
            if kept is not tool and kept != tool:
                losses.add(f"tools named like an earlier, different tool: the first `{tool.name}` was kept")
    return list(by_name.values())


# ---------------------------------------------------------------- files


@dataclass(frozen=True)
class _Item:
    source: str
    value: Any = None
    error: str | None = None


def _load_items(path: Path) -> list[_Item]:
    """A JSON array (`#index` sources) or JSON Lines (`:line` sources, broken lines kept as errors)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: not a NESTful file (not UTF-8 text)") from exc
    if text.lstrip().startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None  # JSON Lines whose first record is an array, or a broken array: see below
        if isinstance(value, list):
            return [_Item(f"{path}#{index}", item) for index, item in enumerate(value)]
    return [_Item(f"{path}:{line.line_no}", line.value, line.error) for line in iter_json_lines(path)]


def _detect_version(path: Path, items: list[_Item]) -> str:
    parsed = [item.value for item in items if item.error is None]
    if not parsed:
        raise FormatError(f"{path}: not a NESTful file (no JSON record in it)")
    first = parsed[0]
    if not isinstance(first, dict) or "input" not in first or "output" not in first:
        keys = sorted(first) if isinstance(first, dict) else type(first).__name__
        raise FormatError(f"{path}: not a NESTful file (records need `input` and `output`; the first has {keys})")
    # v2 records carry their own tools; v1 records never do (their spec is a second file).
    return "v2" if any(isinstance(value, dict) and "tools" in value for value in parsed) else "v1"


def _v1_spec_path(path: Path, options: FormatOptions) -> Path:
    if options.tools is not None:
        if not Path(options.tools).is_file():
            raise FormatError(f"{options.tools}: no such NESTful v1 spec file")
        return Path(options.tools)
    beside = path.parent / V1_DEFAULT_SPEC_NAME
    if beside.is_file():
        return beside
    raise FormatError(
        f"{path}: NESTful v1 data needs its tool spec: pass --tools FILE (no {V1_DEFAULT_SPEC_NAME} beside it)"
    )


def read_v1_spec(spec_path: Path) -> list[Tool]:
    try:
        specs = read_json_or_lines(spec_path)
        if not all(isinstance(spec, dict) for spec in specs):
            raise ValueError("every entry must be a tool spec object")
        return tools_from_nestful_v1(specs)
    except (ValueError, ValidationError) as exc:
        raise FormatError(f"{spec_path}: not a NESTful v1 spec file ({str(exc).splitlines()[0]})") from exc


def read(path: Path, options: FormatOptions = FormatOptions()) -> Iterator[Sample | Rejected]:
    items = _load_items(path)
    version = _detect_version(path, items)
    v1_tools = read_v1_spec(_v1_spec_path(path, options)) if version == "v1" else None
    for index, item in enumerate(items):
        if item.error is not None:
            yield Rejected(item.source, item.error)
            continue
        try:
            yield sample_from_record(item.value, version=version, index=index, v1_tools=v1_tools, source_file=str(path))
        except ItemError as exc:
            yield Rejected(item.source, str(exc), item.value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(record)"
            yield Rejected(item.source, f"{where}: {first['msg']}", item.value)


def _target_version(samples: list[Sample], options: FormatOptions) -> str:
    if options.nestful_version is not None:
        if options.nestful_version not in VERSIONS:
            raise FormatError(f"unknown NESTful version {options.nestful_version!r}; choose v1 or v2")
        return options.nestful_version
    for sample in samples:
        bookkeeping = sample.meta.get(META_KEY)
        recorded = bookkeeping.get("version") if isinstance(bookkeeping, dict) else None
        if recorded in VERSIONS:
            return recorded
    return "v2"


def _write_records(path: Path, records: list[dict[str, Any]], indent: int) -> None:
    """`.jsonl` gets JSON Lines (data_v2 style); any other name a JSON array (data_v1, icl style)."""
    if path.suffix == ".jsonl":
        write_json_lines(path, records)
    else:
        write_json(path, records, indent=indent)


def write(samples: list[Sample], path: Path, options: FormatOptions = FormatOptions()) -> list[str]:
    version = _target_version(samples, options)
    losses = _Losses(Counter())
    records = [sample_to_record(sample, version, losses) for sample in samples]
    if version == "v1":
        catalog = v1_catalog(samples, losses)
        if options.tools_out is not None:
            write_json(options.tools_out, tools_to_nestful_v1(catalog), indent=4)
        else:
            losses.add("tools not written: NESTful v1 keeps tools in a spec file (give --tools-out)", len(catalog))
        _write_records(path, records, indent=2)
    else:
        _write_records(path, records, indent=4)
    return losses.lines()
