"""NESTful's metric family: F1 of function names and of parameters, partial and full sequence
accuracy, and win rate (executing the predicted sequence and comparing its final answer).

Two modes, computed by separate code so neither bends the other:

* default: per-sample metrics averaged over samples, fixing the reference scorer's defects;
* compat (`--compat`): the numbers NESTful's published scorer (`src/scorer.py` + `src/utils.py`
  + `src/output_parsers.py` of IBM/NESTFUL) gives, so results are comparable with published ones.

Where default differs from compat, and why (each place is marked `DIFFERS FROM COMPAT` below):
1. Win rate: the reference turns a failed chain into the answer `False` and compares it with `==`,
   so a failed chain "wins" against a gold answer of 0 or False (`False == 0` in Python). Default: a
   chain that did not run to the end never wins, and booleans never equal numbers.
2. Binding: the reference calls `func(*values)` in the order the model wrote the arguments. Default
   hands the calls to the executor as they are (it binds by keyword). Compat re-keys the arguments
   by position from the tool spec before executing, so the executor binds as the reference did.
3. References nested in lists and dicts: the reference's grounding (label -> function name) looks at
   top-level strings and strings directly in lists only. Default grounds references at any depth.
4. Repeated calls of one function: the reference keeps one parameter list per function name (the
   last call overwrites) and a name counts once per sample. Default counts every call.
5. Hallucinated functions: the reference's F1 is macro-averaged over the labels seen in the gold
   (sklearn's MultiLabelBinarizer fitted on gold ignores predicted names absent from every gold),
   so calling a function that does not exist costs no precision. Default counts it.
6. Averaging: the reference macro-averages F1 over labels across the data set; default computes
   F1 per sample (multiset precision/recall) and averages over samples, so every sample weighs the
   same and a sample's score can be read on its own.
7. Sequence alignment: the reference pads unequal-length sequences with a greedy walk that, at the
   first mismatch, spends the whole rest of the gold before the prediction; default uses the
   longest common subsequence, divided by the longer sequence's length.
8. Parsing: compat reads `generated_text` as the whole text being one JSON value (the reference's
   parser for plain-JSON models); default recovers calls from any shape (`parse_calls`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from fcbench.answers import NESTFUL_COMPARISON, NESTFUL_REFERENCE_COMPARISON, answers_match
from fcbench.environments import Environment, PlannedCall
from fcbench.json_values import normalise_json
from fcbench.errors import UserError
from fcbench.references import format_reference, parse_reference
from fcbench.sample import Sample, Tool, sample_from_dict
from fcbench.score.gold_set import PredictionLine, align_to_gold, item_id, numbered, self_gold_alignment
from fcbench.score.parse_calls import parse_calls, parse_whole_json
from fcbench.score.registry import metric

Executor = Callable[[list[dict[str, Any]], Any], tuple[bool, Any]]
"""`execute_sequence(calls, tools) -> (ok, answer)`: runs calls `{label, name, arguments}` in order,
resolving `$label.path$` references, and returns the last call's output."""

SUMMARY_KEYS = ("n", "f1_func", "f1_param", "partial_acc", "full_acc", "win_rate")


class NestfulScoreError(UserError):
    """A prediction line the scorer cannot pair with a gold path (one line, names the sample)."""


@dataclass
class NestfulReport:
    summary: dict[str, Any]
    items: list[dict[str, Any]]  # {"sample_id", "win", "full_match"}: gold order (see score_nestful)
    parse_failures: list[str] = field(default_factory=list)  # sample ids whose text held no calls
    gold_set: dict[str, Any] | None = None  # GoldAlignment.listing(); None: every line scored (compat, no gold)
    graded_against: str = "gold"  # "gold", "carried" (each line's own), "carried, every line" (compat)


@dataclass(frozen=True)
class NestfulGold:
    """What a prediction is scored against, in NESTful's own spelling (labels may start with `$`)."""

    calls: list[dict[str, Any]]
    answer: Any = None
    has_answer: bool = False
    tools: list[Any] = field(default_factory=list)  # NESTful tool dicts or fcbench Tools


@dataclass(frozen=True)
class _Graded:
    """One gold sample and the line that answers it (None: no line did, so it is scored wrong)."""

    sample_id: str
    line: dict[str, Any] | None
    gold: NestfulGold


def _sample_key(line: Mapping[str, Any]) -> str | None:
    return item_id(line, "sample_id")


@metric("nestful")
def score_nestful(
    prediction_lines: Sequence[dict[str, Any] | PredictionLine],
    gold_by_id: Mapping[str, Any] | None = None,
    compat: bool = False,
    executor: Executor | None = None,
) -> NestfulReport:
    """Score prediction lines (`sample_id` + `generated_text` or `calls`) against the gold set.

    With `gold_by_id` (Samples, canonical sample dicts or NESTful lines) the gold is the authority
    (`fcbench.score.gold_set`): items follow its order, one per gold sample; the first line of a
    sample answers it, later ones are duplicates; a sample without a line is scored wrong; a line
    for a sample not in it is foreign (its own `output` is never read). Without it, each line is
    graded against the gold it carries (`output` / `gold_answer` / `tools`): the file is its own
    gold set, so a sample left out of the file cannot be counted (say so to the reader); the first
    line of a sample is scored, and with `compat` EVERY line, as NESTful's scorer does (it has no
    notion of a gold set). Without an executor the win rate is None."""
    lines = numbered(prediction_lines)
    if gold_by_id is not None:
        alignment = align_to_gold(gold_by_id, lines, _sample_key, no_key="no sample_id")
        graded = [_Graded(sample_id, line, gold_from_source(gold_by_id[sample_id], sample_id))  # type: ignore[arg-type]
                  for sample_id, line in alignment.pairs()]
        report = _score(graded, compat, executor)
        report.gold_set = alignment.listing()
        if compat and not alignment.complete:
            # The reference's F1 is macro-averaged over labels: a sample that predicts nothing adds
            # no false positive, so leaving a wrong answer out can raise it. Over an incomplete
            # file it cannot count a missing answer as wrong: not reported (default mode can).
            report.summary["f1_func"] = report.summary["f1_param"] = None
            report.summary["f1_note"] = (f"not reported: {len(alignment.missing)} gold samples have no prediction, "
                                         "and the reference's macro F1 over labels cannot count them as wrong")
        return report
    if compat:
        every = [line for line in lines if line.value is not None]
        for line in every:
            if _sample_key(line.value) is None:  # type: ignore[arg-type]
                raise NestfulScoreError(f"line {line.line_no}: a prediction line has no sample_id")
        graded = [_Graded(_sample_key(line.value), line.value, gold_for_line(line.value, None))  # type: ignore[arg-type]
                  for line in every]
        report = _score(graded, compat, executor)
        report.graded_against = "carried, every line"
        return report
    alignment = self_gold_alignment(lines, _sample_key, no_key="no sample_id")
    graded = [_Graded(sample_id, line, gold_for_line(line, None)) for sample_id, line in alignment.pairs()]  # type: ignore[arg-type]
    report = _score(graded, compat, executor)
    report.gold_set, report.graded_against = alignment.listing(), "carried"
    return report


def _score(graded: list[_Graded], compat: bool, executor: Executor | None) -> NestfulReport:
    return _score_compat(graded, executor) if compat else _score_default(graded, executor)


# --- gold -----------------------------------------------------------------------------------------


def gold_for_line(line: Mapping[str, Any], gold_by_id: Mapping[str, Any] | None) -> NestfulGold:
    sample_id = _sample_key(line)
    if sample_id is None:
        raise NestfulScoreError("a prediction line has no sample_id")
    if gold_by_id is not None and sample_id in gold_by_id:
        return gold_from_source(gold_by_id[sample_id], sample_id)
    if "output" in line:
        return gold_from_source(line, sample_id)
    raise NestfulScoreError(f"no gold for sample {sample_id!r}: give --gold or an `output` field on the line")


def gold_from_source(source: Any, sample_id: str) -> NestfulGold:
    if isinstance(source, Sample):
        return _gold_from_sample(source)
    if isinstance(source, dict) and "output" in source:
        return _gold_from_nestful_line(source, sample_id)
    if isinstance(source, dict) and "calls" in source and "messages" in source:
        return _gold_from_sample(sample_from_dict(source))
    raise NestfulScoreError(f"gold for sample {sample_id!r} is neither a sample nor a NESTful line")


def _gold_from_sample(sample: Sample) -> NestfulGold:
    calls = [{"name": call.name, "label": call.label, "arguments": call.arguments} for call in sample.all_calls()]
    has_answer = "answer" in sample.model_fields_set
    return NestfulGold(calls=calls, answer=sample.answer, has_answer=has_answer, tools=list(sample.tools))


def _gold_from_nestful_line(line: dict[str, Any], sample_id: str) -> NestfulGold:
    # NESTful stores `output`, `gold_answer` and `tools` as JSON-encoded strings.
    calls = _decoded(line["output"])
    if not isinstance(calls, list):
        raise NestfulScoreError(f"gold `output` of sample {sample_id!r} is not a list of calls")
    has_answer = "gold_answer" in line
    answer = _decoded(line["gold_answer"]) if has_answer else None
    tools = _decoded(line.get("tools", []))
    return NestfulGold(
        calls=calls, answer=answer, has_answer=has_answer, tools=tools if isinstance(tools, list) else []
    )


def _decoded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# --- tool specs (NESTful dicts or fcbench Tools) --------------------------------------------------


@dataclass(frozen=True)
class _ToolShape:
    parameter_names: list[str]
    output_names: list[str] | None  # None when the spec does not say


def _tool_shapes(tools: Iterable[Any]) -> dict[str, _ToolShape]:
    shapes: dict[str, _ToolShape] = {}
    for tool in tools:
        if isinstance(tool, Tool):
            returns = tool.returns or {}
            outputs = returns.get("properties") if returns.get("type") == "object" else None
            name, parameters = tool.name, tool.parameters.get("properties", {})
        elif isinstance(tool, dict) and isinstance(tool.get("name"), str):
            outputs = tool.get("output_parameters", tool.get("output_parameter"))
            name, parameters = tool["name"], tool.get("parameters") or {}
        else:
            continue
        output_names = list(outputs) if isinstance(outputs, dict) else None
        shapes.setdefault(name, _ToolShape(list(parameters), output_names))  # the reference takes the first
    return shapes


def environment_executor(environment: Environment) -> Executor:
    """`execute_sequence` over an fcbench environment: the calls run one step each, in order, with
    references resolved by the environment; the answer is the last call's response, narrowed to
    the tool's only output when the spec declares one (NESTful math tools return `{"result": x}`
    and NESTful's gold answer is x)."""

    def execute_sequence(calls: list[dict[str, Any]], tools: Any) -> tuple[bool, Any]:
        steps = [[PlannedCall(call["label"], call["name"], call["arguments"])] for call in calls]
        run = environment.run_paths([steps])[0]
        if not run.ok or not run.runs:
            return False, None
        last = run.runs[-1]
        response = last.outcome.response
        shape = _tool_shapes(tools or []).get(last.name)
        if shape and shape.output_names and len(shape.output_names) == 1 and isinstance(response, dict):
            response = response.get(shape.output_names[0], response)
        return True, response

    return execute_sequence


def _run(executor: Executor, calls: list[dict[str, Any]], tools: list[Any]) -> tuple[bool, Any]:
    """The executor's verdict; an executor that raises counts as a failed chain, never a crash."""
    try:
        ok, answer = executor(calls, tools)
    except Exception:  # noqa: BLE001 - a tool crashing must not stop the scoring run
        return False, None
    return bool(ok), answer


def _strip_label(label: Any) -> str:
    return label.lstrip("$") if isinstance(label, str) else str(label)


# ==================================================================================================
# Default mode
# ==================================================================================================


@dataclass(frozen=True)
class SequenceScores:
    f1_func: float
    f1_param: float
    partial_acc: float
    full_match: bool


def _score_default(graded: list[_Graded], executor: Executor | None) -> NestfulReport:
    scores: list[SequenceScores] = []
    items: list[dict[str, Any]] = []
    failures: list[str] = []
    wins: list[bool] = []
    for entry in graded:
        gold = entry.gold
        win = None
        if entry.line is None:  # no prediction: wrong on every measure, whatever the gold is
            scores.append(SequenceScores(f1_func=0.0, f1_param=0.0, partial_acc=0.0, full_match=False))
            if executor is not None and gold.has_answer:
                win = False
                wins.append(win)
            items.append({"sample_id": entry.sample_id, "win": win, "full_match": False, "missing": True})
            continue
        predicted, parsed_ok = predicted_calls(entry.line)
        if not parsed_ok:
            failures.append(entry.sample_id)
        gold_calls = labelled_calls(gold.calls)
        scores.append(score_sequence(gold_calls, predicted))
        if executor is not None and gold.has_answer:
            win = default_win(predicted, gold, executor)
            wins.append(win)
        items.append({"sample_id": entry.sample_id, "win": win, "full_match": scores[-1].full_match})
    summary = {
        "n": len(graded),
        "f1_func": _mean(s.f1_func for s in scores),
        "f1_param": _mean(s.f1_param for s in scores),
        "partial_acc": _mean(s.partial_acc for s in scores),
        "full_acc": _mean(float(s.full_match) for s in scores),
        "win_rate": _mean(float(w) for w in wins) if executor is not None else None,
    }
    return NestfulReport(summary=summary, items=items, parse_failures=failures)


def predicted_calls(line: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The line's calls, labelled (`calls` as given, else parsed from `generated_text`)."""
    if "calls" in line:
        raw = line["calls"]
        if not isinstance(raw, list):
            return [], False
        # Canonical `calls` are steps (lists of parallel calls); NESTful's are a flat list.
        flat = [call for item in raw for call in (item if isinstance(item, list) else [item])]
        return labelled_calls([call for call in flat if isinstance(call, dict) and "name" in call]), True
    parsed = parse_calls(line.get("generated_text"))
    return labelled_calls(parsed.calls), parsed.ok


def labelled_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Calls as `{label, name, arguments}`: labels without NESTful's leading `$`; an unlabelled call
    gets `var_<position>` (NESTful's convention, which models follow when they refer back);
    a reference missing its closing `$` (`"$var_1.result"`) is completed, as the reference does."""
    labelled = []
    for position, call in enumerate(calls, start=1):
        if call.get("name") == "var_result":
            continue  # NESTful v1's pseudo-call gathering results: not a function to score or run
        arguments = call.get("arguments", call.get("parameters", {}))
        labelled.append(
            {
                "label": _strip_label(call["label"]) if "label" in call else f"var_{position}",
                "name": str(call.get("name")),
                "arguments": _complete_references(arguments) if isinstance(arguments, dict) else {},
            }
        )
    return labelled


def _complete_references(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("$") and not value.endswith("$"):
        return value + "$" if parse_reference(value + "$") is not None else value
    if isinstance(value, dict):
        return {key: _complete_references(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_complete_references(item) for item in value]
    return value


def score_sequence(gold: list[dict[str, Any]], predicted: list[dict[str, Any]]) -> SequenceScores:
    """Per-sample scores of one predicted sequence against the gold (both labelled)."""
    gold_grounded = grounded(gold)
    predicted_grounded = grounded(predicted)
    gold_names = [name for name, _ in gold_grounded]
    predicted_names = [name for name, _ in predicted_grounded]
    gold_signatures = [_signature(call) for call in gold_grounded]
    predicted_signatures = [_signature(call) for call in predicted_grounded]
    return SequenceScores(
        f1_func=multiset_f1(gold_names, predicted_names),
        f1_param=multiset_f1(_parameter_items(gold_grounded), _parameter_items(predicted_grounded)),
        partial_acc=partial_sequence_accuracy(gold_signatures, predicted_signatures),
        full_match=gold_signatures == predicted_signatures,
    )


def grounded(calls: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(name, arguments) with every reference to an earlier call rewritten to that call's function
    name (`$var_2.result$` -> `$multiply.result$`), so a prediction is not penalised for numbering
    its labels differently from the gold. DIFFERS FROM COMPAT: references at any depth."""
    name_by_label: dict[str, str] = {}
    result = []
    for call in calls:
        result.append((call["name"], _ground_value(call["arguments"], name_by_label)))
        name_by_label[call["label"]] = call["name"]
    return result


def _ground_value(value: Any, name_by_label: dict[str, str]) -> Any:
    reference = parse_reference(value)
    if reference is not None:
        if reference.label in name_by_label:
            return format_reference(name_by_label[reference.label], reference.path)
        return value
    if isinstance(value, dict):
        return {key: _ground_value(item, name_by_label) for key, item in value.items()}
    if isinstance(value, list):
        return [_ground_value(item, name_by_label) for item in value]
    return value


def _canonical_value(value: Any) -> str:
    """A value's comparison key: JSON with sorted keys, integral floats as ints (80.0 == 80)."""
    return json.dumps(normalise_json(value), sort_keys=True, ensure_ascii=False)


def _signature(call: tuple[str, dict[str, Any]]) -> str:
    name, arguments = call
    return f"{name}({_canonical_value(arguments)})"


def _parameter_items(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, str]]:
    """(function, parameter, value) for every argument of every call. DIFFERS FROM COMPAT: a
    function called twice contributes both calls' parameters."""
    return [(name, key, _canonical_value(value)) for name, arguments in calls for key, value in arguments.items()]


def multiset_f1(gold: list[Any], predicted: list[Any]) -> float:
    """F1 of two multisets: a repeated item must be predicted as many times as it is expected, and
    every predicted item outside the gold (a hallucinated function) lowers precision.
    DIFFERS FROM COMPAT: per sample, counting repeats and hallucinations."""
    if not gold and not predicted:
        return 1.0
    matched = sum((Counter(gold) & Counter(predicted)).values())
    return 2 * matched / (len(gold) + len(predicted))


def partial_sequence_accuracy(gold: list[str], predicted: list[str]) -> float:
    """Calls matched in order (longest common subsequence) over the longer sequence's length, so
    both missing and extra calls cost. DIFFERS FROM COMPAT: the reference's greedy padding."""
    if not gold and not predicted:
        return 1.0
    return _lcs_length(gold, predicted) / max(len(gold), len(predicted))


def _lcs_length(first: list[str], second: list[str]) -> int:
    previous = [0] * (len(second) + 1)
    for item in first:
        current = [0]
        for index, other in enumerate(second):
            current.append(previous[index] + 1 if item == other else max(previous[index + 1], current[index]))
        previous = current
    return previous[-1]


def default_win(predicted: list[dict[str, Any]], gold: NestfulGold, executor: Executor) -> bool:
    """DIFFERS FROM COMPAT: a chain that fails (or is empty) never wins, whatever the gold answer."""
    if not predicted:
        return False
    ok, answer = _run(executor, predicted, gold.tools)
    return ok and final_answers_match(answer, gold.answer)


def final_answers_match(predicted: Any, gold: Any) -> bool:
    """The one answer comparison (fcbench.answers) with NESTful's rounding, as the filter uses it."""
    return answers_match(predicted, gold, NESTFUL_COMPARISON)


def _mean(values: Iterable[float]) -> float:
    collected = list(values)
    return sum(collected) / len(collected) if collected else 0.0


# ==================================================================================================
# Compat mode: NESTful's reference scorer, reproduced
# ==================================================================================================


class _ReferenceParseError(Exception):
    """Where the reference's parsing/grounding raises and it counts a parsing error."""


@dataclass(frozen=True)
class _CompatItem:
    gold_calls: list[dict[str, Any]]  # grounded: {"name", "arguments"}
    predicted_calls: list[dict[str, Any]]  # grounded; empty on a parsing error
    predicted_value: Any  # what the reference executes (its `pred_dict_list`)
    parsed: bool


def _score_compat(graded: list[_Graded], executor: Executor | None) -> NestfulReport:
    compat_items = [_compat_item(entry) for entry in graded]
    intent_gold = [[str(call["name"]) for call in item.gold_calls] for item in compat_items]
    intent_pred = [[str(call["name"]) for call in item.predicted_calls if not _is_dummy(call)] for item in compat_items]
    slot_gold: list[list[str]] = []
    slot_pred: list[list[str]] = []
    for item in compat_items:
        gold_rows, pred_rows = reference_slot_rows(item.gold_calls, item.predicted_calls)
        slot_gold.extend(gold_rows)
        slot_pred.extend(pred_rows)
    # a sample without a prediction is wrong even where an empty sequence would match its gold
    accuracies = [0.0 if entry.line is None else reference_sequence_accuracy(item.gold_calls, item.predicted_calls)
                  for entry, item in zip(graded, compat_items)]

    items: list[dict[str, Any]] = []
    wins: list[bool] = []
    for entry, item, accuracy in zip(graded, compat_items, accuracies):
        win = None
        if executor is not None and entry.gold.has_answer:
            win = False if entry.line is None else reference_win(item.predicted_value, entry.gold, executor)
            wins.append(win)
        items.append({"sample_id": entry.sample_id, "win": win, "full_match": accuracy == 1,
                      **({"missing": True} if entry.line is None else {})})
    summary = {
        "n": len(graded),
        "f1_func": reference_macro_f1(intent_gold, intent_pred),
        "f1_param": reference_macro_f1(slot_gold, slot_pred),
        "partial_acc": _mean(accuracies),
        "full_acc": sum(1 for a in accuracies if a == 1) / len(graded) if graded else 0.0,
        "win_rate": _mean(float(w) for w in wins) if executor is not None else None,
    }
    failures = [entry.sample_id for entry, item in zip(graded, compat_items) if entry.line is not None and not item.parsed]
    return NestfulReport(summary=summary, items=items, parse_failures=failures)


def _compat_item(entry: _Graded) -> _CompatItem:
    line, gold = entry.line, entry.gold
    try:
        gold_calls = reference_ground(gold.calls)
    except _ReferenceParseError as exc:
        raise NestfulScoreError(f"gold of sample {entry.sample_id!r} is malformed: {exc}") from None
    if line is None:  # no prediction: nothing to ground, nothing to execute
        return _CompatItem(gold_calls, [], [], False)
    if "calls" in line:
        parsed, value = True, line["calls"]
    else:
        parsed, value = parse_whole_json(line.get("generated_text"))
    if not parsed:
        # The reference leaves `pred_dict_list` empty when json.loads fails: nothing executes.
        return _CompatItem(gold_calls, [], [], False)
    try:
        return _CompatItem(gold_calls, reference_ground(value), value, True)
    except _ReferenceParseError:
        # Grounding failed after decoding: the reference still executes the decoded value.
        return _CompatItem(gold_calls, [], value, False)


def reference_ground(value: Any) -> list[dict[str, Any]]:
    """The reference's `ground_seq_nested_repsonse`: drop `var_result` pseudo-calls and rewrite each
    `$<label>.<path>` string (top level, or directly inside a list) to `$<function name>.<path>`,
    raising where the reference raises (it then counts the prediction as a parsing error)."""
    if isinstance(value, (dict, str)) and not value:
        return []  # iterating an empty dict/string yields nothing: the reference returns []
    if not isinstance(value, list):
        raise _ReferenceParseError("not a list of calls")
    for call in value:
        if not isinstance(call, dict) or "name" not in call:
            raise _ReferenceParseError("a call without a name")
    name_by_label: dict[str, Any] = {}
    for call in value:
        if call["name"] in ("varResult", "var_result") or "label" not in call:
            continue
        if not isinstance(call["label"], str):
            raise _ReferenceParseError("a label that is not a string")
        name_by_label[call["label"].replace("$", "")] = call["name"]
    grounded_calls = []
    for call in value:
        if call["name"] == "var_result":
            continue
        arguments = call["arguments"] if "arguments" in call else call.get("parameters", {})
        if not isinstance(arguments, dict):
            raise _ReferenceParseError("arguments that are not an object")
        grounded_calls.append(
            {
                "name": call["name"],
                "arguments": {k: _reference_ground_value(v, name_by_label) for k, v in arguments.items()},
            }
        )
    # The reference round-trips every call through json.dumps/json.loads before scoring.
    return json.loads(json.dumps(grounded_calls))


def _reference_ground_value(value: Any, name_by_label: dict[str, Any]) -> Any:
    for label, name in name_by_label.items():
        if isinstance(value, str) and _reference_points_to(label, value):
            value = _replace_label(value, label, name)
        elif isinstance(value, list):
            # Dicts inside lists are never grounded: the reference tests `json.dumps(dict)`,
            # which starts with `{`, against `$var`.
            value = [
                _replace_label(v, label, name) if isinstance(v, str) and _reference_points_to(label, v) else v
                for v in value
            ]
    return value


def _reference_points_to(label: str, text: str) -> bool:
    return text.startswith("$var") and "." in text and text.split(".", 1)[0].replace("$", "") == label


def _replace_label(text: str, label: str, name: Any) -> str:
    if not isinstance(name, str):
        raise _ReferenceParseError("a function name that is not a string")
    return text.replace(label, name)  # every occurrence, as `str.replace` in the reference


def _is_dummy(call: dict[str, Any]) -> bool:
    # The reference skips the exact text '{"name": "dummy", "arguments": {}}' for names and slots.
    return call["name"] == "dummy" and call["arguments"] == {}


def _reference_argument_text(key: str, value: Any, predicted: bool) -> str:
    # Predicted references missing their closing `$` are completed; gold values are left as they are.
    if predicted and isinstance(value, str) and value.startswith("$") and not value.endswith("$"):
        value = value + "$"
    return f"{key} = {value}"  # Python's str() of the decoded JSON value, as the reference formats


def reference_slot_rows(
    gold: list[dict[str, Any]], predicted: list[dict[str, Any]]
) -> tuple[list[list[str]], list[list[str]]]:
    """One row per function name in gold or prediction; a repeated name keeps its last call."""
    gold_by_name = {
        call["name"]: [_reference_argument_text(k, v, False) for k, v in call["arguments"].items()] for call in gold
    }
    pred_by_name = {
        call["name"]: [_reference_argument_text(k, v, True) for k, v in call["arguments"].items()]
        for call in predicted
        if not _is_dummy(call)
    }
    names = set(gold_by_name) | set(pred_by_name)
    return [gold_by_name.get(n, []) for n in names], [pred_by_name.get(n, []) for n in names]


def reference_macro_f1(gold_rows: list[list[str]], pred_rows: list[list[str]]) -> float:
    """sklearn's `f1_score(average="macro")` on MultiLabelBinarizer rows fitted on the gold: one F1
    per label present in some gold row (predicted labels absent from all gold are ignored), a label
    counted once per row, zero when undefined, averaged over labels."""
    labels = sorted({label for row in gold_rows for label in row})
    if not labels:
        return 0.0
    gold_sets = [set(row) for row in gold_rows]
    pred_sets = [set(row) for row in pred_rows]
    total = 0.0
    for label in labels:
        true_pos = sum(1 for g, p in zip(gold_sets, pred_sets) if label in g and label in p)
        false_pos = sum(1 for g, p in zip(gold_sets, pred_sets) if label not in g and label in p)
        false_neg = sum(1 for g, p in zip(gold_sets, pred_sets) if label in g and label not in p)
        total += 2 * true_pos / (2 * true_pos + false_pos + false_neg)
    return total / len(labels)


def _reference_call_text(call: dict[str, Any], predicted: bool) -> str:
    arguments = ", ".join(sorted(_reference_argument_text(k, v, predicted) for k, v in call["arguments"].items()))
    return f"{call['name']}({arguments})"


def reference_sequence_accuracy(gold: list[dict[str, Any]], predicted: list[dict[str, Any]]) -> float:
    """The reference's `accuracy_combined`: call texts compared position by position after its
    `post_process_api_with_args` padding of unequal-length sequences."""
    gold_texts = [_reference_call_text(call, False) for call in gold]
    pred_texts = [_reference_call_text(call, True) for call in predicted]
    if len(gold_texts) != len(pred_texts):
        gold_texts, pred_texts = reference_padding(gold_texts, pred_texts)
    if not gold_texts:
        return 0.0
    return sum(1 for g, p in zip(gold_texts, pred_texts) if g == p) / len(gold_texts)


def reference_padding(gold: list[str], predicted: list[str]) -> tuple[list[str], list[str]]:
    """Walk both name lists; equal names advance together, otherwise the gold call is paired with
    a blank until the gold is spent, then the remaining predictions are paired with blanks."""
    gold_names = [text.split("(", 1)[0] for text in gold]
    pred_names = [text.split("(", 1)[0] for text in predicted]
    gold_out: list[str] = []
    pred_out: list[str] = []
    i = j = 0
    while i < len(gold_names) or j < len(pred_names):
        if i < len(gold_names) and j < len(pred_names) and gold_names[i] == pred_names[j]:
            gold_out.append(gold[i])
            pred_out.append(predicted[j])
            i, j = i + 1, j + 1
        elif i < len(gold_names):
            gold_out.append(gold[i])
            pred_out.append("")
            i += 1
        else:
            gold_out.append("")
            pred_out.append(predicted[j])
            j += 1
    return gold_out, pred_out


def reference_win(value: Any, gold: NestfulGold, executor: Executor) -> bool:
    """The reference's `calculate_win_score`: a chain that cannot run yields the answer `False`,
    which is then compared with `==` (so it matches a gold 0 or False: the defect kept here)."""
    calls = _reference_runnable_calls(value, gold.tools)
    if calls is None:
        answer: Any = False
    elif not calls:
        return False  # `if not pred_func_calls: return False`
    else:
        ok, answer = _run(executor, calls, gold.tools)
        answer = answer if ok else False
    return reference_answers_equal(answer, gold.answer)


def _reference_runnable_calls(value: Any, tools: list[Any]) -> list[dict[str, Any]] | None:
    """Calls ready for the executor, bound the way the reference binds them, or None where the
    reference's `calculate_ans` fails before running anything. [] for an empty prediction."""
    if not value:
        return []
    if not isinstance(value, list):
        return None
    shapes = _tool_shapes(tools)
    output_by_label: dict[str, str | None] = {}  # label of an earlier call -> its single output key
    calls = []
    for call in value:
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("label"), str)
            or not isinstance(call.get("arguments"), dict)
        ):
            return None
        shape = shapes.get(call.get("name"))
        if shape is None or (shape.output_names is not None and len(shape.output_names) != 1):
            return None  # unknown tool (IndexError) or several outputs: the reference gives up
        arguments = _bound_by_position(call["arguments"], shape.parameter_names)
        if arguments is None or not all(_reference_can_read(v, output_by_label) for v in arguments.values()):
            return None
        label = call["label"].replace("$", "")
        output_by_label[label] = shape.output_names[0] if shape.output_names else None
        calls.append({"label": label, "name": call["name"], "arguments": arguments})
    return calls


def _reference_can_read(value: Any, output_by_label: dict[str, str | None]) -> bool:
    """Whether the reference's lookup `results[label][key]` of a top-level `$label.key$` succeeds:
    the label must belong to an earlier call and the key must be that tool's output name (NESTful's
    scorer has no fallback from `.result` to `output_0`). Non-references always pass."""
    if not (isinstance(value, str) and value.startswith("$") and value.endswith("$")):
        return True
    label, dot, key = value[1:-1].partition(".")
    if not dot or label not in output_by_label:
        return False
    expected = output_by_label[label]
    return expected is None or key == expected


def _bound_by_position(arguments: dict[str, Any], parameter_names: list[str]) -> dict[str, Any] | None:
    """DIFFERS FROM DEFAULT: the reference calls `func(*values)` in the order the model wrote the
    arguments, whatever their names; re-keying by the spec's parameter order makes a keyword-binding
    executor do the same. More values than parameters is the reference's TypeError (None)."""
    values = [_reference_complete(value) for value in arguments.values()]
    if len(values) > len(parameter_names):
        return None
    return dict(zip(parameter_names, values))


def _reference_complete(value: Any) -> Any:
    # The reference's executor reads `"$var_1.result"` (no closing `$`) as a reference too.
    if isinstance(value, str) and value.startswith("$var") and not value.endswith("$"):
        return value + "$"
    return value


def reference_answers_equal(predicted: Any, gold: Any) -> bool:
    """The reference scorer's `pred == gold` after top-level rounding (fcbench.answers,
    REFERENCE_EQUALITY)."""
    return answers_match(predicted, gold, NESTFUL_REFERENCE_COMPARISON)
