"""ComplexFuncBench (JSON Lines) <-> canonical samples.

One item per line: `id` (`Car-Rental-5`, `Hotels-12`, `Cross-12`), `functions` (bare OpenAI-style
function specs) and `conversations`: a user turn, then `assistant` turns carrying `function_call`
(parallel calls) each followed by an `observation` turn whose `content` lists the responses in call
order, and a final `assistant` turn with the answer text.

Canonical mapping: the user turn is the only message; each function-call turn is one step; labels
are `call_1`, `call_2`... in order; the domain is the id without its number. Arguments stay the
literal values the annotators copied from earlier responses. What the canonical fields cannot hold
(the final answer text, keys beyond the usual ones) goes to `sample.meta["complexfuncbench"]`.

Every item read is converted back and compared with the original; an item that would not come back
identical is rejected with the reason instead of being kept with a silent loss.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from fcbench.catalog.openai import OpenAISpecError, tools_from_openai, tools_to_openai
from fcbench.errors import ItemError
from fcbench.formats import FormatError, FormatOptions, Rejected
from fcbench.jsonl import iter_json_lines, write_json_lines
from fcbench.references import Reference, parse_reference
from fcbench.resolve import walk_path
from fcbench.sample import Call, Provenance, Sample, Step, with_derived_fields

FORMAT_NAME = "complexfuncbench"
_ITEM_KEYS = ("id", "conversations", "functions")
_DOMAIN_FROM_ID = re.compile(r"^(?P<domain>.+)-\d+$")
# Keys of a turn that the canonical sample already holds; any other key is kept in meta.
_CALL_TURN_KEYS = frozenset({"role", "function_call"})
_OBSERVATION_TURN_KEYS = frozenset({"role", "content"})
_FINAL_TURN_KEYS = frozenset({"role", "content"})


# ---------------------------------------------------------------------------------------------
# Reading: item -> Sample (pure)


def domain_from_id(item_id: str) -> str | None:
    """`Car-Rental-5` -> `Car-Rental`; `Cross-12` -> `Cross` (the benchmark's own grouping)."""
    match = _DOMAIN_FROM_ID.match(item_id)
    return match.group("domain") if match else None


def _calls_of_turn(turn: dict[str, Any], first_number: int, where: str) -> Step:
    function_calls = turn["function_call"]
    if not isinstance(function_calls, list) or not function_calls:
        raise ItemError(f"{where}.function_call must be a non-empty list of calls")
    step: Step = []
    for offset, function_call in enumerate(function_calls):
        if not isinstance(function_call, dict) or not isinstance(function_call.get("name"), str):
            raise ItemError(f"{where}.function_call[{offset}] has no string 'name'")
        if set(function_call) != {"name", "arguments"} or not isinstance(function_call["arguments"], dict):
            raise ItemError(f"{where}.function_call[{offset}] must be exactly {{name, arguments: object}}")
        step.append(Call(
            label=f"call_{first_number + offset}",
            name=function_call["name"],
            arguments=copy.deepcopy(function_call["arguments"]),
        ))
    return step


def _attach_observation(step: Step, turn: dict[str, Any], where: str) -> None:
    responses = turn.get("content")
    if not isinstance(responses, list) or len(responses) != len(step):
        raise ItemError(f"{where}.content must list one response per call of the step ({len(step)})")
    for call, response in zip(step, responses):
        call.response = copy.deepcopy(response)  # assignment marks it set: null stays a real response


def _extra_keys(turn: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    return {key: copy.deepcopy(value) for key, value in turn.items() if key not in known}


def sample_from_item(item: Any, source_file: str | None = None) -> Sample:
    """Convert one ComplexFuncBench item; raises ItemError with the reason when it cannot."""
    if not isinstance(item, dict):
        raise ItemError(f"an item must be a JSON object, got {type(item).__name__}")
    missing = [key for key in _ITEM_KEYS if key not in item]
    if missing:
        raise ItemError(f"missing key(s): {', '.join(missing)}")
    item_id, conversations, functions = item["id"], item["conversations"], item["functions"]
    if not isinstance(item_id, str):
        raise ItemError("'id' must be a string")
    if not isinstance(functions, list):
        raise ItemError("'functions' must be a list of function specs")
    if not isinstance(conversations, list) or not conversations or not all(isinstance(t, dict) for t in conversations):
        raise ItemError("'conversations' must be a non-empty list of turn objects")
    if conversations[0].get("role") != "user":
        raise ItemError("conversations[0] must be the user turn")

    steps: list[Step] = []
    turn_extras: dict[str, dict[str, Any]] = {}
    final_response: dict[str, Any] = {}
    n_calls = 0
    for index, turn in enumerate(conversations[1:], start=1):
        where = f"conversations[{index}]"
        if final_response:
            raise ItemError(f"{where}: a turn after the final assistant answer")
        role = turn.get("role")
        if role == "assistant" and "function_call" in turn:
            steps.append(_calls_of_turn(turn, n_calls + 1, where))
            n_calls += len(steps[-1])
            known = _CALL_TURN_KEYS
        elif role == "observation":
            if not steps or "response" in steps[-1][0].model_fields_set:
                raise ItemError(f"{where}: an observation that follows no function call")
            _attach_observation(steps[-1], turn, where)
            known = _OBSERVATION_TURN_KEYS
        elif role == "assistant" and "content" in turn:
            final_response = {"final_response": copy.deepcopy(turn["content"])}
            known = _FINAL_TURN_KEYS
        else:
            raise ItemError(f"{where}: unexpected turn (role {role!r}); ComplexFuncBench items are single-turn")
        extra = _extra_keys(turn, known)
        if extra:
            turn_extras[str(index)] = extra

    try:
        tools = tools_from_openai(functions)
    except OpenAISpecError as exc:
        raise ItemError(f"functions: {exc}") from None

    format_meta: dict[str, Any] = dict(final_response)
    if turn_extras:
        format_meta["turn_extras"] = turn_extras
    item_extra = {key: copy.deepcopy(value) for key, value in item.items() if key not in _ITEM_KEYS}
    if item_extra:
        format_meta["extra"] = item_extra

    # Optional fields are passed only when known, so the canonical record does not carry empty keys.
    optional: dict[str, Any] = {}
    domain = domain_from_id(item_id)
    if domain is not None:
        optional["domain"] = domain
    if format_meta:
        optional["meta"] = {FORMAT_NAME: format_meta}
    sample = Sample(
        id=item_id,
        messages=[copy.deepcopy(conversations[0])],
        tools=tools,
        calls=steps,
        provenance=Provenance(source_format=FORMAT_NAME, source_file=source_file),
        **optional,
    )
    return with_derived_fields(sample)


# ---------------------------------------------------------------------------------------------
# Writing: Sample -> item (pure). Losses are counted by kind in `losses`.


def _has_response(call: Call) -> bool:
    return "response" in call.model_fields_set


def _resolve(reference: Reference, responses: dict[str, Any]) -> tuple[bool, Any]:
    """The value a reference names in a recorded response; (False, None) when it leads nowhere."""
    if reference.label not in responses:
        return False, None
    try:
        return True, walk_path(responses[reference.label], reference.path)
    except (LookupError, TypeError):
        return False, None


def resolve_argument(value: Any, responses: dict[str, Any], losses: Counter[str]) -> Any:
    """Replace every `$label.path$` inside an argument by the value it names in a recorded response.

    ComplexFuncBench has no reference syntax: its arguments are the literal values copied from
    earlier observations, so a reference is resolved when the response is on the sample and
    written literally (and counted) when it is not.
    """
    reference = parse_reference(value)
    if reference is not None:
        found, resolved = _resolve(reference, responses)
        losses["resolved" if found else "unresolved"] += 1
        return copy.deepcopy(resolved) if found else value
    if isinstance(value, dict):
        return {key: resolve_argument(item, responses, losses) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_argument(item, responses, losses) for item in value]
    return value


def _conversation_of_steps(steps: list[Step], losses: Counter[str]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    responses: dict[str, Any] = {}
    for step in steps:
        turns.append({"role": "assistant", "function_call": [
            {"name": call.name, "arguments": resolve_argument(call.arguments, responses, losses)} for call in step
        ]})
        recorded = [call for call in step if _has_response(call)]
        losses["no_response"] += len(step) - len(recorded)
        if recorded:
            # A step without any response gets no observation turn (that is how such an item reads);
            # a partly answered step needs one slot per call, so the gaps become null.
            turns.append({"role": "observation", "content": [
                copy.deepcopy(call.response) if _has_response(call) else None for call in step
            ]})
        responses.update({call.label: call.response for call in recorded})
    return turns


def _count_unexpressible(sample: Sample, losses: Counter[str]) -> None:
    if len(sample.messages) != 1 or sample.messages[0].get("role") != "user":
        losses["messages"] += 1
    losses["turns"] += len(sample.turns or [])
    losses["acceptable"] += bool(sample.acceptable)
    losses["answer"] += sample.answer is not None
    losses["dialog_acts"] += bool(sample.dialog_acts)
    losses["returns"] += sum(tool.returns is not None for tool in sample.tools)


def item_from_sample(sample: Sample, losses: Counter[str]) -> dict[str, Any]:
    """The ComplexFuncBench item for a sample; what it cannot express is counted in `losses`."""
    format_meta = sample.meta.get(FORMAT_NAME, {})
    _count_unexpressible(sample, losses)
    conversations = [copy.deepcopy(message) for message in sample.messages]
    conversations += _conversation_of_steps(sample.calls, losses)
    if "final_response" in format_meta:
        conversations.append({"role": "assistant", "content": copy.deepcopy(format_meta["final_response"])})
    else:
        losses["no_final_response"] += 1
    for index, extra in format_meta.get("turn_extras", {}).items():
        if int(index) < len(conversations):
            conversations[int(index)].update(copy.deepcopy(extra))
    item = {"id": sample.id, "conversations": conversations, "functions": tools_to_openai(sample.tools)}
    item.update(copy.deepcopy(format_meta.get("extra", {})))
    return item


_LOSS_MESSAGES = {
    "unresolved": "{n} references to earlier outputs could not be resolved from recorded responses (written literally)",
    "resolved": "{n} references replaced by the value from the recorded response (the dependency itself is not expressible)",
    "no_response": "{n} calls without a recorded observation",
    "no_final_response": "{n} samples without a final assistant answer (conversation ends after the last observation)",
    "messages": "{n} samples whose messages are not a single user message (all written as leading conversation turns)",
    "turns": "{n} later user turns dropped (ComplexFuncBench items are single-turn)",
    "acceptable": "{n} samples' acceptable alternative values dropped",
    "answer": "{n} samples' expected answer dropped",
    "dialog_acts": "{n} samples' dialog acts dropped",
    "returns": "{n} tools' return schemas dropped",
}


def loss_warnings(losses: Counter[str]) -> list[str]:
    return [message.format(n=losses[kind]) for kind, message in _LOSS_MESSAGES.items() if losses[kind]]


# ---------------------------------------------------------------------------------------------
# File I/O


def _looks_like_item(value: Any) -> bool:
    return isinstance(value, dict) and "conversations" in value and "functions" in value


def _check_round_trip(item: dict[str, Any], sample: Sample) -> None:
    if item_from_sample(sample, Counter()) != item:
        raise ItemError("item would not convert back identically (unsupported structure)")


def read(path: Path, options: FormatOptions = FormatOptions()) -> Iterator[Sample | Rejected]:
    # The first parsed record decides whether the file is ComplexFuncBench at all: a file of
    # another format (BFCL, NESTful...) is one user mistake and should say so in one line,
    # not produce one identical Rejected per item. Later odd items are rejected one by one.
    checked_format = False
    for line in iter_json_lines(path):
        source = f"{path}:{line.line_no}"
        if line.error:
            yield Rejected(source, line.error)
            continue
        if not checked_format:
            if not _looks_like_item(line.value):
                keys = sorted(line.value) if isinstance(line.value, dict) else type(line.value).__name__
                raise FormatError(
                    f"{path}: not a ComplexFuncBench file (line {line.line_no} has no 'conversations' and "
                    f"'functions'; found {keys})"
                )
            checked_format = True
        try:
            sample = sample_from_item(line.value, source_file=str(path))
            _check_round_trip(line.value, sample)
        except ItemError as exc:
            yield Rejected(source, str(exc), line.value)
            continue
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(record)"
            yield Rejected(source, f"{field}: {first['msg']}", line.value)
            continue
        yield sample


def write(samples: list[Sample], path: Path, options: FormatOptions = FormatOptions()) -> list[str]:
    losses: Counter[str] = Counter()
    items = [item_from_sample(sample, losses) for sample in samples]
    write_json_lines(path, items)
    return loss_warnings(losses)

