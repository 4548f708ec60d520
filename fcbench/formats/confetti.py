"""CONFETTI ground-truth files <-> canonical samples, both ways, losslessly.

CONFETTI (amazon-science/confetti) published only its possible-answer files, one turn per line:

* function-calling set (`..._conversationsclean.json`): `{"id", "dialog_id", "ground_truth":
  [{func: {arg: [candidates]}}]}`, the BFCL possible-answer structure;
* dialog-act set (`..._dialogacts.json`): `{"id", "dialog_id", "ground_truth": [dialog acts],
  "ground_truth_content": [call strings..., agent reply]}` where each call string's argument
  values are candidate lists (`Telecom.ViewAccount(to=['a@b.com'],last_name=['Smith'])`).

The conversation histories were not published, so `messages` is empty. Tools are inferred from
the gold calls (marked `meta["inferred"]`) so that "unknown tool" checks pass honestly; they are
not written back. The agent's reply text is kept in `meta["confetti"]["reply"]`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from fcbench.errors import ItemError
from fcbench.formats import FormatError, FormatOptions, Rejected
from fcbench.formats.bfcl import (
    CandidateSpelling,
    call_from_candidates,
    call_label,
    candidates_for_call,
    gold_from_ground_truth,
    ground_truth_from_gold,
)
from fcbench.formats.call_syntax import (
    DEFAULT_SEPARATOR,
    CallSyntaxError,
    ParsedCall,
    format_call,
    parse_call,
    separator_reproducing,
)
from fcbench.json_values import json_type_name
from fcbench.jsonl import iter_json_lines, write_json_lines
from fcbench.sample import AcceptableValues, Call, Provenance, Sample, Tool

META_KEY = "confetti"
INFERRED = "inferred"  # tool.meta flag: spec built from the gold calls, not published



# ---------------------------------------------------------------------------------------------
# Inferred tools (pure)
# ---------------------------------------------------------------------------------------------


def _property_schema(values: list[Any]) -> dict[str, Any]:
    types = list(dict.fromkeys(json_type_name(value) for value in values))
    if "integer" in types and "number" in types:
        types.remove("integer")  # every integer is a number
    if not types:
        return {}
    return {"type": types[0] if len(types) == 1 else types}


def infer_tools(calls: list[Call], acceptable: dict[str, dict[str, AcceptableValues]]) -> list[Tool]:
    """Minimal specs for the functions the gold calls use: parameters typed from every value seen
    (gold and acceptable alternatives). Nothing is `required`: the files do not say."""
    values_by_tool: dict[str, dict[str, list[Any]]] = {}
    for call in calls:
        params = values_by_tool.setdefault(call.name, {})
        for arg, value in call.arguments.items():
            params.setdefault(arg, []).append(value)
        for arg, accepted in acceptable.get(call.label, {}).items():
            params.setdefault(arg, []).extend(accepted.values)
    return [
        Tool(
            name=name,
            parameters={"type": "object", "properties": {arg: _property_schema(values) for arg, values in params.items()}},
            meta={INFERRED: True},
        )
        for name, params in values_by_tool.items()
    ]


# ---------------------------------------------------------------------------------------------
# Records <-> samples (pure)
# ---------------------------------------------------------------------------------------------


def _base_sample(record: dict[str, Any], calls: list[Call], acceptable: dict[str, dict[str, AcceptableValues]],
                 meta: dict[str, Any]) -> Sample:
    if "dialog_id" in record:
        meta = {"dialog_id": record["dialog_id"], **meta}
    sample = Sample(
        id=record["id"],
        messages=[],  # the conversation histories were not published
        tools=infer_tools(calls, acceptable),
        # Scored like BFCL: the calls of a turn form one unordered set, hence one step.
        calls=[calls] if calls else [],
        provenance=Provenance(source_format="confetti"),
        meta={META_KEY: meta},
    )
    if calls:
        sample.acceptable = acceptable
    return sample


def function_calling_sample(record: dict[str, Any]) -> Sample:
    """A conversationsclean record: BFCL-style possible answers."""
    ground_truth = record.get("ground_truth")
    if not isinstance(ground_truth, list):
        raise ItemError("`ground_truth` must be a list of {function: {arg: [candidates]}}")
    spelling = CandidateSpelling()
    calls, acceptable = gold_from_ground_truth(ground_truth, spelling)
    return _base_sample(record, calls, acceptable, spelling.to_meta())


def dialog_act_sample(record: dict[str, Any]) -> Sample:
    """A dialogacts record: acts in `dialog_acts`, call strings parsed into calls, reply in meta."""
    acts = record.get("ground_truth")
    content = record.get("ground_truth_content")
    if not isinstance(acts, list) or not all(isinstance(act, str) for act in acts):
        raise ItemError("`ground_truth` must be a list of dialog-act names")
    if not isinstance(content, list) or not all(isinstance(item, str) for item in content):
        raise ItemError("`ground_truth_content` must be a list of strings")
    spelling = CandidateSpelling()
    separators: dict[str, str] = {}
    raw_texts: dict[str, str] = {}
    calls: list[Call] = []
    acceptable: dict[str, dict[str, AcceptableValues]] = {}
    layout: list[str | None] = []  # content in order: None where a call stood, else the text
    for item in content:
        parsed = _parse_candidate_call(item)
        if parsed is None:
            layout.append(item)
            continue
        label = call_label(len(calls) + 1)
        call, call_acceptable = call_from_candidates(label, parsed.name, parsed.keywords, spelling)
        calls.append(call)
        acceptable[label] = call_acceptable
        layout.append(None)
        separator = separator_reproducing(item, parsed)
        if separator is None:
            raw_texts[label] = item
        elif separator != DEFAULT_SEPARATOR:
            separators[label] = separator
    meta: dict[str, Any] = spelling.to_meta()
    if separators:
        meta["call_separator"] = separators
    if raw_texts:
        meta["call_text"] = raw_texts
    texts = [item for item in layout if item is not None]
    if layout == [None] * len(calls) + texts and len(texts) == 1:
        meta["reply"] = texts[0]  # the usual shape: the calls, then the agent's reply
    else:
        meta["content_layout"] = layout
    sample = _base_sample(record, calls, acceptable, meta)
    sample.dialog_acts = acts
    return sample


def _parse_candidate_call(text: str) -> ParsedCall | None:
    """The call a content string spells, or None when it is the agent's text. Calls give every
    argument as a keyword with a list of candidates; anything else is text."""
    try:
        parsed = parse_call(text)
    except CallSyntaxError:
        return None
    if parsed.positional or not all(isinstance(value, list) for value in parsed.keywords.values()):
        return None
    return parsed


def function_calling_record(sample: Sample) -> dict[str, Any]:
    meta = sample.meta.get(META_KEY, {})
    record: dict[str, Any] = {"id": sample.id}
    if "dialog_id" in meta:
        record["dialog_id"] = meta["dialog_id"]
    record["ground_truth"] = ground_truth_from_gold(sample, CandidateSpelling.from_meta(meta))
    return record


def dialog_act_record(sample: Sample) -> dict[str, Any]:
    meta = sample.meta.get(META_KEY, {})
    spelling = CandidateSpelling.from_meta(meta)
    call_texts = [_call_text(call, sample, spelling, meta) for call in sample.all_calls()]
    layout = meta.get("content_layout")
    if layout is None:
        content = call_texts + ([meta["reply"]] if "reply" in meta else [])
    else:
        remaining = iter(call_texts)
        content = [next(remaining, "") if item is None else item for item in layout]
        content += list(remaining)  # calls added after reading go after the stored layout
    record: dict[str, Any] = {"id": sample.id}
    if "dialog_id" in meta:
        record["dialog_id"] = meta["dialog_id"]
    record["ground_truth"] = sample.dialog_acts or []
    record["ground_truth_content"] = content
    return record


def _call_text(call: Call, sample: Sample, spelling: CandidateSpelling, meta: dict[str, Any]) -> str:
    candidates = candidates_for_call(call, (sample.acceptable or {}).get(call.label), spelling)
    parsed = ParsedCall(name=call.name, keywords=candidates)
    raw = meta.get("call_text", {}).get(call.label)
    if raw is not None and _parse_candidate_call(raw) == parsed:
        return raw
    return format_call(parsed, meta.get("call_separator", {}).get(call.label, DEFAULT_SEPARATOR))


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def _is_dialog_act_record(record: dict[str, Any]) -> bool:
    return "ground_truth_content" in record


def read(path: Path, options: FormatOptions = FormatOptions()) -> Iterator[Sample | Rejected]:
    kind_checked = False
    for line in iter_json_lines(path):
        source = f"{path}:{line.line_no}"
        if line.error:
            yield Rejected(source, line.error)
            continue
        record = line.value
        if not kind_checked:
            if not isinstance(record, dict) or "ground_truth" not in record or "id" not in record:
                raise FormatError(f"{path}: not a CONFETTI ground-truth file (records need `id` and `ground_truth`)")
            kind_checked = True
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            yield Rejected(source, "record is not an object with a string `id`", record)
            continue
        try:
            yield dialog_act_sample(record) if _is_dialog_act_record(record) else function_calling_sample(record)
        except ItemError as exc:
            yield Rejected(source, str(exc), record)
    if not kind_checked:
        raise FormatError(f"{path}: no CONFETTI records in the file")


def write(samples: list[Sample], path: Path, options: FormatOptions = FormatOptions()) -> list[str]:
    """Each sample goes back as the kind it came from: dialog-act records for samples with
    `dialog_acts`, function-calling records otherwise."""
    records = [dialog_act_record(s) if s.dialog_acts is not None else function_calling_record(s) for s in samples]
    write_json_lines(path, records)
    return _write_warnings(samples)


def _write_warnings(samples: list[Sample]) -> list[str]:
    counts = {
        "samples whose messages were not written (CONFETTI files hold ground truth only)":
            sum(1 for s in samples if s.messages),
        "samples whose tools were not written (CONFETTI files hold ground truth only)":
            sum(1 for s in samples if any(not t.meta.get(INFERRED) for t in s.tools)),
        "call responses not written":
            sum(1 for s in samples for c in s.all_calls() if "response" in c.model_fields_set),
        "samples with several steps written as one set of calls":
            sum(1 for s in samples if len(s.all_steps()) > 1),
        "samples whose answer was not written":
            sum(1 for s in samples if s.answer is not None),
    }
    return [f"{count} {what}" for what, count in counts.items() if count]
