"""BFCL (Berkeley Function-Calling Leaderboard) files <-> canonical samples, both ways, losslessly.

Two layouts, both JSON Lines under a `.json` name:

* single-turn categories (simple_python, multiple, parallel, parallel_multiple, live_*,
  irrelevance): a question file `{"id", "question": [[messages]], "function": [docs]}` plus a
  possible-answer file `{"id", "ground_truth": [{func: {arg: [candidates]}}]}` (`--answers`);
* multi-turn: `{"id", "question": [turn, ...], "initial_config", "path", "involved_classes",
  "excluded_function"?}` with ground truth as one list of Python-call strings per turn, and the
  tools in the `multi_turn_func_doc/` folder beside the question file.

Possible answers become gold calls (first acceptable candidate) plus `acceptable`; the few facts
needed to give the exact candidate lists back (where `""` stood, nested candidate lists) go to
`sample.meta["bfcl"]`. The candidate helpers are public because CONFETTI publishes the same
structure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from fcbench.catalog.bfcl import (
    MULTI_TURN_CLASS_FILES,
    parameter_order,
    read_multi_turn_tools,
    tools_from_bfcl,
    tools_to_bfcl,
)
from fcbench.errors import ItemError
from fcbench.formats import FormatError, FormatOptions, Rejected
from fcbench.formats.call_syntax import (
    DEFAULT_SEPARATOR,
    CallSyntaxError,
    ParsedCall,
    format_call,
    parse_call,
    separator_reproducing,
)
from fcbench.jsonl import iter_json_lines, write_json_lines
from fcbench.sample import AcceptableValues, Call, Provenance, Sample, Step, Tool, Turn

META_KEY = "bfcl"
OMIT = ""  # BFCL's candidate meaning "the argument may be left out"
# `""` stands first in most published candidate lists (2004 of 2422), so only other places are recorded.
DEFAULT_OMIT_INDEX = 0
GOLD_UNKNOWN = "unknown"  # meta["bfcl"]["gold"]: the category has answers but none were read
MULTI_TURN_DOC_DIR = "multi_turn_func_doc"
_MULTI_TURN_KEYS = ("initial_config", "path", "involved_classes", "excluded_function")
# The single-turn categories whose published possible answers the AST checker grades against.
AST_CATEGORIES = (
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
)


def call_label(index: int) -> str:
    return f"call_{index}"


# ---------------------------------------------------------------------------------------------
# Candidate lists (pure): `{arg: [candidates]}` <-> call arguments + AcceptableValues
# ---------------------------------------------------------------------------------------------


@dataclass
class CandidateSpelling:
    """What `acceptable` cannot say about the published candidate lists, per label and argument:
    where `""` stood when not first, and the raw list when the default spelling of the acceptable
    values would not give it back (nested candidates with alternatives, a dict candidate whose
    values are not lists...)."""

    omit_at: dict[str, dict[str, int]] = field(default_factory=dict)
    raw: dict[str, dict[str, list[Any]]] = field(default_factory=dict)

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if self.omit_at:
            meta["omit_at"] = self.omit_at
        if self.raw:
            meta["candidates"] = self.raw
        return meta

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> "CandidateSpelling":
        return cls(omit_at=meta.get("omit_at", {}), raw=meta.get("candidates", {}))


def _is_nested_candidate_dict(value: Any) -> bool:
    # BFCL's checker reads a dict candidate as {key: [candidates for that key]}.
    return isinstance(value, dict) and all(isinstance(item, list) for item in value.values())


def _is_nested_candidate_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_nested_candidate_dict(item) for item in value)


def resolve_candidate(candidate: Any) -> Any:
    """The concrete value a candidate stands for: nested candidate dicts (and lists of them) take
    each key's first non-omit candidate; keys that may only be omitted are left out."""
    if _is_nested_candidate_dict(candidate):
        return {
            key: next(item for item in options if item != OMIT)
            for key, options in candidate.items()
            if any(item != OMIT for item in options)
        }
    if _is_nested_candidate_list(candidate):
        return [resolve_candidate(item) for item in candidate]
    return candidate


def candidate_form(value: Any) -> Any:
    """Inverse of `resolve_candidate` for one concrete value: dict values (and lists of dicts)
    get one-candidate lists per key, as BFCL's checker expects."""
    if isinstance(value, dict):
        return {key: [item] for key, item in value.items()}
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return [candidate_form(item) for item in value]
    return value


def acceptable_from_candidates(candidates: list[Any]) -> AcceptableValues:
    values = [resolve_candidate(candidate) for candidate in candidates if candidate != OMIT]
    return AcceptableValues(values=values, may_omit=OMIT in candidates)


def candidates_from_acceptable(accepted: AcceptableValues, omit_index: int = DEFAULT_OMIT_INDEX) -> list[Any]:
    candidates = [candidate_form(value) for value in accepted.values]
    if accepted.may_omit:
        candidates.insert(min(omit_index, len(candidates)), OMIT)
    return candidates


def call_from_candidates(
    label: str, name: str, candidates_by_arg: dict[str, Any], spelling: CandidateSpelling
) -> tuple[Call, dict[str, AcceptableValues]]:
    """One gold call and its acceptable values from `{arg: [candidates]}`; fills `spelling`."""
    arguments: dict[str, Any] = {}
    acceptable: dict[str, AcceptableValues] = {}
    for arg, candidates in candidates_by_arg.items():
        if not isinstance(candidates, list):
            raise ItemError(f"{name}.{arg}: candidates must be a list, got {type(candidates).__name__}")
        accepted = acceptable_from_candidates(candidates)
        acceptable[arg] = accepted
        if accepted.values:
            arguments[arg] = accepted.values[0]
        omit_index = candidates.index(OMIT) if OMIT in candidates else DEFAULT_OMIT_INDEX
        if candidates_from_acceptable(accepted, omit_index) != candidates:
            spelling.raw.setdefault(label, {})[arg] = candidates
        elif omit_index != DEFAULT_OMIT_INDEX:
            spelling.omit_at.setdefault(label, {})[arg] = omit_index
    return Call(label=label, name=name, arguments=arguments), acceptable


def candidates_for_call(
    call: Call, acceptable: dict[str, AcceptableValues] | None, spelling: CandidateSpelling
) -> dict[str, list[Any]]:
    """Inverse of `call_from_candidates`. Without acceptable values an argument's only candidate
    is its gold value. A stored raw list is used only while it still agrees with `acceptable`."""
    acceptable = acceptable or {}
    candidates: dict[str, list[Any]] = {}
    for arg, accepted in acceptable.items():
        raw = spelling.raw.get(call.label, {}).get(arg)
        if raw is not None and acceptable_from_candidates(raw) == accepted:
            candidates[arg] = raw
            continue
        if arg in call.arguments and call.arguments[arg] not in accepted.values:
            # The gold value was edited after reading: it is acceptable too.
            accepted = AcceptableValues(values=[call.arguments[arg], *accepted.values], may_omit=accepted.may_omit)
        omit_index = spelling.omit_at.get(call.label, {}).get(arg, DEFAULT_OMIT_INDEX)
        candidates[arg] = candidates_from_acceptable(accepted, omit_index)
    for arg, value in call.arguments.items():
        if arg not in candidates:
            candidates[arg] = [candidate_form(value)]
    return candidates


def gold_from_ground_truth(
    ground_truth: list[Any], spelling: CandidateSpelling
) -> tuple[list[Call], dict[str, dict[str, AcceptableValues]]]:
    """`[{func: {arg: [candidates]}}, ...]` -> calls (labelled call_1...) and acceptable values."""
    calls: list[Call] = []
    acceptable: dict[str, dict[str, AcceptableValues]] = {}
    for entry in ground_truth:
        if not isinstance(entry, dict) or not entry:
            raise ItemError(f"ground truth entry must be {{function: {{arg: [candidates]}}}}, got {entry!r}")
        for name, candidates_by_arg in entry.items():
            if not isinstance(candidates_by_arg, dict):
                raise ItemError(f"{name}: arguments must be an object of candidate lists")
            label = call_label(len(calls) + 1)
            call, call_acceptable = call_from_candidates(label, name, candidates_by_arg, spelling)
            calls.append(call)
            acceptable[label] = call_acceptable
    return calls, acceptable


def ground_truth_from_gold(sample: Sample, spelling: CandidateSpelling) -> list[dict[str, Any]]:
    return [
        {call.name: candidates_for_call(call, (sample.acceptable or {}).get(call.label), spelling)}
        for call in sample.all_calls()
    ]


# ---------------------------------------------------------------------------------------------
# Single-turn items (pure)
# ---------------------------------------------------------------------------------------------


def expects_no_call(item_id: str) -> bool:
    """Irrelevance categories publish no answers: their gold is "no call at all"."""
    return "irrelevance" in item_id


def _question_turns(record: dict[str, Any]) -> list[list[dict[str, Any]]]:
    question = record.get("question")
    if not isinstance(question, list) or not question or not all(isinstance(turn, list) for turn in question):
        raise ItemError("`question` must be a non-empty list of turns (lists of messages)")
    return question


def single_turn_sample(record: dict[str, Any], answer: dict[str, Any] | None) -> Sample:
    """A question record (and its possible-answer record, if any) as one canonical sample."""
    turns = _question_turns(record)
    if not isinstance(record.get("function"), list):
        raise ItemError("`function` must be a list of function docs")
    meta: dict[str, Any] = {}
    calls: list[Step] = []
    acceptable = None
    if answer is not None:
        if not isinstance(answer.get("ground_truth"), list):
            raise ItemError("possible answer has no `ground_truth` list")
        spelling = CandidateSpelling()
        gold_calls, acceptable = gold_from_ground_truth(answer["ground_truth"], spelling)
        # Parallel categories are unordered sets of calls: one step holds them all.
        calls = [gold_calls] if gold_calls else []
        meta.update(spelling.to_meta())
        if not gold_calls:
            meta["gold"] = "empty"  # an answer line with an empty list: written back as such
    elif not expects_no_call(record["id"]):
        meta["gold"] = GOLD_UNKNOWN
    sample = Sample(
        id=record["id"],
        messages=turns[0],
        tools=tools_from_bfcl(record["function"]),
        calls=calls,
        provenance=Provenance(source_format="bfcl"),
    )
    if len(turns) > 1:
        sample.turns = [Turn(messages=messages) for messages in turns[1:]]
    if acceptable is not None:
        sample.acceptable = acceptable
    extra = {key: value for key, value in record.items() if key not in ("id", "question", "function")}
    if extra:
        meta["extra"] = extra
    if meta:
        sample.meta = {META_KEY: meta}
    return sample


def single_turn_records(sample: Sample) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(question record, possible-answer record or None when the sample has no gold to write)."""
    meta = sample.meta.get(META_KEY, {})
    question = {
        "id": sample.id,
        "question": [sample.messages] + [turn.messages for turn in sample.turns or []],
        "function": tools_to_bfcl(sample.tools),
    }
    question.update(meta.get("extra", {}))
    has_gold_line = bool(sample.all_calls()) or meta.get("gold") == "empty"
    if not has_gold_line:
        return question, None
    answer = {"id": sample.id, "ground_truth": ground_truth_from_gold(sample, CandidateSpelling.from_meta(meta))}
    return question, answer


# ---------------------------------------------------------------------------------------------
# Multi-turn items (pure, given the tools of the involved classes)
# ---------------------------------------------------------------------------------------------


@dataclass
class CallTextSpelling:
    """How each gold call string was written, per label, when it is not the default spelling:
    which arguments were positional, the argument separator, or the raw text when no spelling
    of ours reproduces it (`mean(numbers=[3,16,60])`)."""

    positional: dict[str, list[str]] = field(default_factory=dict)
    separator: dict[str, str] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)

    def to_meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        for key in ("positional", "separator", "text"):
            if getattr(self, key):
                meta[f"call_{key}"] = getattr(self, key)
        return meta

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> "CallTextSpelling":
        return cls(
            positional=meta.get("call_positional", {}),
            separator=meta.get("call_separator", {}),
            text=meta.get("call_text", {}),
        )


def arguments_by_name(parsed: ParsedCall, positional_names: list[str]) -> dict[str, Any]:
    """Keyword arguments of a call, positional ones named by the tool's parameter order."""
    if len(parsed.positional) > len(positional_names):
        raise ItemError(f"{parsed.name}: {len(parsed.positional)} positional arguments but the tool "
                        f"declares {len(positional_names)} parameters")
    arguments = dict(zip(positional_names, parsed.positional))
    for name, value in parsed.keywords.items():
        if name in arguments:
            raise ItemError(f"{parsed.name}: argument {name!r} given both by position and by name")
        arguments[name] = value
    return arguments


def call_from_text(label: str, text: str, tools: dict[str, Tool], spelling: CallTextSpelling) -> Call:
    try:
        parsed = parse_call(text)
    except CallSyntaxError as exc:
        raise ItemError(str(exc)) from None
    positional_names: list[str] = []
    if parsed.positional:
        if parsed.name not in tools:
            raise ItemError(f"{parsed.name}: positional arguments of a function with no doc cannot be named")
        positional_names = parameter_order(tools[parsed.name])[: len(parsed.positional)]
        spelling.positional[label] = positional_names
    arguments = arguments_by_name(parsed, positional_names)
    separator = separator_reproducing(text, parsed)
    if separator is None:
        spelling.text[label] = text
    elif separator != DEFAULT_SEPARATOR:
        spelling.separator[label] = separator
    return Call(label=label, name=parsed.name, arguments=arguments)


def text_from_call(call: Call, spelling: CallTextSpelling) -> str:
    positional_names = spelling.positional.get(call.label, [])
    raw = spelling.text.get(call.label)
    if raw is not None and _text_still_matches(raw, call, positional_names):
        return raw
    if not all(name in call.arguments for name in positional_names):
        positional_names = []  # arguments were edited: spell every argument by name
    parsed = ParsedCall(
        name=call.name,
        positional=[call.arguments[name] for name in positional_names],
        keywords={k: v for k, v in call.arguments.items() if k not in positional_names},
    )
    return format_call(parsed, spelling.separator.get(call.label, DEFAULT_SEPARATOR))


def _text_still_matches(raw: str, call: Call, positional_names: list[str]) -> bool:
    try:
        parsed = parse_call(raw)
        return parsed.name == call.name and arguments_by_name(parsed, positional_names) == call.arguments
    except (CallSyntaxError, ItemError):
        return False


def multi_turn_sample(
    record: dict[str, Any], answer: dict[str, Any] | None, tools: list[Tool]
) -> Sample:
    """A multi-turn question record (and its ground truth) as one sample: turn 1 in `messages` and
    `calls`, later turns in `turns`; each call is its own step because they run in order."""
    question_turns = _question_turns(record)
    meta: dict[str, Any] = {key: record[key] for key in _MULTI_TURN_KEYS if key in record}
    extra = {key: value for key, value in record.items() if key not in ("id", "question", *_MULTI_TURN_KEYS)}
    if extra:
        meta["extra"] = extra
    steps_by_turn: list[list[Step]] = [[] for _ in question_turns]
    if answer is not None:
        ground_truth = answer.get("ground_truth")
        if not isinstance(ground_truth, list) or len(ground_truth) != len(question_turns):
            raise ItemError(f"ground truth must hold one list of calls per turn ({len(question_turns)} turns)")
        spelling = CallTextSpelling()
        tools_by_name = {tool.name: tool for tool in tools}
        n_calls = 0
        for turn_index, texts in enumerate(ground_truth):
            if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
                raise ItemError(f"turn {turn_index + 1}: ground truth must be a list of call strings")
            for text in texts:
                n_calls += 1
                call = call_from_text(call_label(n_calls), text, tools_by_name, spelling)
                steps_by_turn[turn_index].append([call])
        meta.update(spelling.to_meta())
    else:
        meta["gold"] = GOLD_UNKNOWN
    return Sample(
        id=record["id"],
        messages=question_turns[0],
        tools=tools,
        calls=steps_by_turn[0],
        turns=[Turn(messages=messages, calls=steps)
               for messages, steps in zip(question_turns[1:], steps_by_turn[1:])],
        provenance=Provenance(source_format="bfcl"),
        meta={META_KEY: meta},
    )


def multi_turn_records(sample: Sample) -> tuple[dict[str, Any], dict[str, Any] | None]:
    meta = sample.meta.get(META_KEY, {})
    turns = [(sample.messages, sample.calls)] + [(turn.messages, turn.calls) for turn in sample.turns or []]
    question: dict[str, Any] = {"id": sample.id, "question": [messages for messages, _ in turns]}
    question.update({key: meta[key] for key in _MULTI_TURN_KEYS if key in meta})
    question.update(meta.get("extra", {}))
    if meta.get("gold") == GOLD_UNKNOWN:
        return question, None
    spelling = CallTextSpelling.from_meta(meta)
    ground_truth = [[text_from_call(call, spelling) for step in steps for call in step] for _, steps in turns]
    return question, {"id": sample.id, "ground_truth": ground_truth}


def is_multi_turn(sample: Sample) -> bool:
    return "involved_classes" in sample.meta.get(META_KEY, {})


def multi_turn_tools(record: dict[str, Any], tools_by_class: dict[str, list[Tool]]) -> list[Tool]:
    """The tools offered in an item: its classes' docs minus the functions it excludes."""
    excluded = set(record.get("excluded_function", []))
    return [tool for name in record["involved_classes"] for tool in tools_by_class[name] if tool.name not in excluded]


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------


def _read_answers(path: Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """{id: (line number, possible-answer record)}; a broken answer file fails as a whole."""
    if not path.is_file():
        raise FormatError(f"{path}: no such possible-answer file")
    answers: dict[str, tuple[int, dict[str, Any]]] = {}
    for line in iter_json_lines(path):
        if line.error or not isinstance(line.value, dict) or "id" not in line.value:
            reason = line.error or "not a possible-answer record (no `id`)"
            raise FormatError(f"{path}:{line.line_no}: {reason}")
        answers[line.value["id"]] = (line.line_no, line.value)
    return answers


def _check_first_record(path: Path, record: Any) -> None:
    if isinstance(record, dict) and "ground_truth" in record and "question" not in record:
        raise FormatError(f"{path}: this is a BFCL possible-answer file; give the question file and pass this one with --answers")
    if not isinstance(record, dict) or "id" not in record or "question" not in record:
        raise FormatError(f"{path}: not a BFCL question file (records need `id` and `question`)")


def read(path: Path, options: FormatOptions = FormatOptions()) -> Iterator[Sample | Rejected]:
    answers = _read_answers(options.answers) if options.answers is not None else {}
    answers_read = options.answers is not None
    used_answers: set[str] = set()
    tools_by_class: dict[str, list[Tool]] = {}
    checked = False
    for line in iter_json_lines(path):
        source = f"{path}:{line.line_no}"
        if not checked and not line.error:
            _check_first_record(path, line.value)
            checked = True
        if line.error:
            yield Rejected(source, line.error)
            continue
        record = line.value
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            yield Rejected(source, "record is not an object with a string `id`", record)
            continue
        if not answers_read and not options.no_gold and not expects_no_call(record["id"]):
            # Silently gold-less samples would score every model as right or wrong for nothing.
            raise FormatError(f"{path}: BFCL questions without their possible answers would become samples with "
                              f"no gold calls; pass --answers possible_answer_<category>.json, or --no-gold to "
                              f"convert the questions alone")
        answer = answers[record["id"]][1] if record["id"] in answers else None
        used_answers.add(record["id"])
        try:
            if answers_read and answer is None and not expects_no_call(record["id"]):
                raise ItemError(f"no possible answer for id {record['id']!r} in {options.answers}")
            if "involved_classes" in record:
                _load_missing_classes(path, record, tools_by_class)
                tools = multi_turn_tools(record, tools_by_class)
                yield multi_turn_sample(record, answer, tools)
            else:
                yield single_turn_sample(record, answer)
        except ItemError as exc:
            yield Rejected(source, str(exc), record)
    if not checked:
        raise FormatError(f"{path}: no BFCL records in the file")
    for item_id, (line_no, answer) in answers.items():
        if item_id not in used_answers:
            yield Rejected(f"{options.answers}:{line_no}", f"possible answer for id {item_id!r} matches no question", answer)


def _load_missing_classes(path: Path, record: dict[str, Any], tools_by_class: dict[str, list[Tool]]) -> None:
    classes = record.get("involved_classes")
    if not isinstance(classes, list):
        raise ItemError("`involved_classes` must be a list of class names")
    unknown = [name for name in classes if name not in MULTI_TURN_CLASS_FILES]
    if unknown:
        raise ItemError(f"no func doc known for class(es) {', '.join(map(str, unknown))}")
    missing = [name for name in classes if name not in tools_by_class]
    if missing:
        doc_dir = path.parent / MULTI_TURN_DOC_DIR
        try:
            tools_by_class.update(read_multi_turn_tools(doc_dir, missing))
        except (OSError, ValueError) as exc:
            raise FormatError(f"{path}: multi-turn items need their func docs in {doc_dir}: {exc}") from None


def write(samples: list[Sample], path: Path, options: FormatOptions = FormatOptions()) -> list[str]:
    questions: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    for sample in samples:
        question, answer = multi_turn_records(sample) if is_multi_turn(sample) else single_turn_records(sample)
        questions.append(question)
        if answer is not None:
            answers.append(answer)
    write_json_lines(path, questions)
    warnings = _write_warnings(samples)
    if options.answers_out is not None:
        write_json_lines(options.answers_out, answers)
    elif answers:
        warnings.append(f"{len(answers)} gold paths not written: no --answers-out file given")
    return warnings


def _write_warnings(samples: list[Sample]) -> list[str]:
    """One line per kind of canonical information BFCL files cannot hold, with its count."""
    counts = {
        "call responses not written (BFCL has no place for them)":
            sum(1 for s in samples for c in s.all_calls() if "response" in c.model_fields_set),
        "samples whose answer was not written (BFCL has no final answer)":
            sum(1 for s in samples if s.answer is not None),
        "samples whose dialog acts were not written":
            sum(1 for s in samples if s.dialog_acts is not None),
        "single-turn samples with several steps written as one unordered set of calls":
            sum(1 for s in samples if not is_multi_turn(s) and len(s.all_steps()) > 1),
        "multi-turn samples whose parallel steps were written one call after another":
            sum(1 for s in samples if is_multi_turn(s) and any(len(step) > 1 for step in s.all_steps())),
        "multi-turn samples whose tools were not written (the file names classes, not tools)":
            sum(1 for s in samples if is_multi_turn(s) and any("bfcl_class" not in t.meta for t in s.tools)),
    }
    return [f"{count} {what}" for what, count in counts.items() if count]
