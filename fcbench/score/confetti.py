"""CONFETTI's metric family (arXiv 2506.01859): AST soft accuracy with chained calls, dialog-act
accuracy and the parameter validity rate (pure: parsed data in, report out).

- Soft score of one argument: a string is scored by a text similarity in [0, 1] (rapidfuzz's
  normalised similarity by default, 1 when equal after trimming and case-folding) against the
  best of its accepted values; any other type scores 1 when equivalent (1 == 1.0), else 0. An
  omitted argument scores 1 when it may be omitted, else 0.
- Soft score of one call: the mean over the gold call's parameters (gold arguments and every
  parameter with accepted values), 0 for another function. Parameters the gold call does not
  have are not scored here (the validity rate looks at them).
- Chain score of a turn: the PRODUCT over the turn's actions, predicted calls paired with gold
  calls by `assign_calls` (exact first, then Hungarian on the soft score), so one weak action
  weakens the whole chain. A gold call left unpaired scores 0, and so does an extra predicted
  call (a chain with a spurious action did not do what was asked). A turn with no gold call and
  no predicted call scores 1. AST soft accuracy = mean chain score over scored turns.
- Dialog-act accuracy: a turn is right when ANY predicted act is among the gold acts. Acts come
  from the prediction's `dialog_acts`, or from a pluggable classifier of its `response` text.
- Parameter validity rate: valid predicted argument values / judged argument values, where only
  the calls whose FUNCTION NAME is right (a function the turn's gold calls) are judged (CONFETTI:
  the rate measures hallucinated values, and a value passed to the wrong function is already an
  AST error; counting it again would punish one mistake twice). Validity is decided by a
  pluggable judge; rule-based default: an accepted gold value for that parameter (annotators
  took gold values from the conversation), or a value found in the conversation text given for
  the turn. Items say how many calls were judged and how many were left out for their name.
- Breakdowns (the paper reports AST soft accuracy by number of available APIs, by conversation
  length and by chain length): each item carries `n_apis` (tools offered in the turn) and
  `history_turns` (user and agent messages before the evaluated turn; tool results are not
  turns); `summarise` bins them (`API_COUNT_BINS`, `TURN_COUNT_BINS`: the paper's bin edges are
  not published, these are fcbench's, said in the output).

A classifier or judge that cannot decide (an LLM whose answer could not be read) raises
`JudgeError`: the part of the item it was asked about becomes a `judge_error` with the reason, is
left out of its figure (never guessed), and is counted in `summary["errors"]["judge_error"]`.
The LLM-backed classifier and judge live outside this package (`fcbench.evaluate.judges_confetti`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fcbench.errors import JudgeError
from fcbench.sample import AcceptableValues, Call, Sample
from fcbench.score.complexeval import value_in_text
from fcbench.score.gold_set import PredictionLine, align_to_gold, item_id
from fcbench.score.matching import (
    PredictedCall,
    TextSimilarity,
    assign_calls,
    fuzzy_text_similarity,
    values_equivalent,
)
from fcbench.score.registry import metric

DIALOG_ACTS = (
    "agent_function_calling",
    "agent_seek_information",
    "agent_inform_user",
    "agent_reject_request",
    "agent_other",
)
# The README's short names and the paper's spellings, mapped to the names in the published files.
DIALOG_ACT_ALIASES = {
    "function_calling": "agent_function_calling",
    "seek_info": "agent_seek_information",
    "seek_information": "agent_seek_information",
    "agent_seeking_information": "agent_seek_information",
    "inform": "agent_inform_user",
    "inform_user": "agent_inform_user",
    "agent_informing_user": "agent_inform_user",
    "reject": "agent_reject_request",
    "reject_request": "agent_reject_request",
    "agent_rejecting_request": "agent_reject_request",
    "other": "agent_other",
}


# ---------------------------------------------------------------------------------------------
# Soft AST


def candidates_for(param: str, gold: Call, acceptable: Mapping[str, AcceptableValues]) -> list[Any]:
    """The gold value (if any) followed by the accepted alternatives."""
    values = [gold.arguments[param]] if param in gold.arguments else []
    alternatives = acceptable.get(param)
    return values + (list(alternatives.values) if alternatives else [])


def value_soft_score(predicted: Any, candidates: Sequence[Any], text_similarity: TextSimilarity) -> float:
    """Best score of a predicted value against its candidates (see the module docstring)."""
    best = 0.0
    for candidate in candidates:
        if values_equivalent(predicted, candidate):
            return 1.0
        if isinstance(predicted, str) and isinstance(candidate, str):
            best = max(best, text_similarity(predicted, candidate))
    return best


@dataclass(frozen=True)
class CallSoftScore:
    score: float
    parameters: dict[str, float]  # per gold parameter; empty for another function


def call_soft_score(
    predicted: PredictedCall,
    gold: Call,
    acceptable: Mapping[str, AcceptableValues] | None = None,
    text_similarity: TextSimilarity = fuzzy_text_similarity,
) -> CallSoftScore:
    """Mean soft score over the gold parameters; 0 for another function; 1 for a parameterless
    gold call of the right function."""
    if predicted.name != gold.name:
        return CallSoftScore(0.0, {})
    acceptable = acceptable or {}
    params = list(dict.fromkeys([*gold.arguments, *acceptable]))
    scores = {}
    for param in params:
        if param not in predicted.arguments:
            alternatives = acceptable.get(param)
            scores[param] = 1.0 if alternatives is not None and alternatives.may_omit else 0.0
        else:
            scores[param] = value_soft_score(predicted.arguments[param], candidates_for(param, gold, acceptable), text_similarity)
    return CallSoftScore(sum(scores.values()) / len(scores) if scores else 1.0, scores)


@dataclass(frozen=True)
class ActionScore:
    """One action of a chain: a gold call and the predicted call paired with it (either may be
    missing: an unpaired gold call or an extra predicted call scores 0)."""

    gold_label: str | None
    predicted_index: int | None
    score: float
    parameters: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"gold_label": self.gold_label, "predicted_index": self.predicted_index, "score": self.score,
                "parameters": self.parameters}


@dataclass(frozen=True)
class ChainScore:
    score: float  # product over the actions
    actions: list[ActionScore]


def chain_score(
    predicted: Sequence[PredictedCall],
    gold: Sequence[Call],
    acceptable: Mapping[str, Mapping[str, AcceptableValues]] | None = None,
    text_similarity: TextSimilarity = fuzzy_text_similarity,
) -> ChainScore:
    """Pair the turn's predicted calls with its gold calls and multiply the action scores."""
    acceptable = acceptable or {}

    def soft(call: PredictedCall, gold_call: Call) -> CallSoftScore:
        return call_soft_score(call, gold_call, acceptable.get(gold_call.label), text_similarity)

    actions = []
    for pair in assign_calls(predicted, gold, lambda p, g: soft(p, g).score):
        if pair.predicted_index is None or pair.gold_index is None:
            label = gold[pair.gold_index].label if pair.gold_index is not None else None
            actions.append(ActionScore(label, pair.predicted_index, 0.0))
            continue
        scored = soft(predicted[pair.predicted_index], gold[pair.gold_index])
        actions.append(ActionScore(gold[pair.gold_index].label, pair.predicted_index, scored.score, scored.parameters))
    return ChainScore(math.prod(action.score for action in actions), actions)


# ---------------------------------------------------------------------------------------------
# Dialog acts


DialogActClassifier = Callable[[str, Sequence[PredictedCall], str], list[str]]
"""`(response text, predicted calls, conversation history) -> dialog acts`; an LLM classifier
plugs in here (the history is "" when the benchmark carries none, as the published files)."""


def normal_dialog_act(act: str) -> str:
    act = act.strip().lower()
    return DIALOG_ACT_ALIASES.get(act, act)


def dialog_act_match(predicted: Iterable[str], gold: Iterable[str]) -> bool:
    """Right when any predicted act is among the gold acts (CONFETTI's any-match)."""
    gold_acts = {normal_dialog_act(act) for act in gold}
    return any(normal_dialog_act(act) in gold_acts for act in predicted)


_REJECT_MARKERS = ("sorry", "unable to", "can't", "cannot", "not able to", "not supported")


def naive_dialog_act_classifier(response: str, calls: Sequence[PredictedCall], history: str = "") -> list[str]:
    """RULE-BASED STAND-IN for an LLM act classifier: function calling when there are calls, a
    question mark asks for information, an apology or refusal rejects, other text informs."""
    acts = ["agent_function_calling"] if calls else []
    text = response.strip()
    lowered = text.lower()
    if any(marker in lowered for marker in _REJECT_MARKERS):
        acts.append("agent_reject_request")
    if "?" in text:
        acts.append("agent_seek_information")
    if text and len(acts) == (1 if calls else 0):
        acts.append("agent_inform_user")
    return acts or ["agent_other"]


# ---------------------------------------------------------------------------------------------
# Parameter validity


@dataclass(frozen=True)
class ParameterUse:
    """A predicted argument value, with what a validity judge needs to decide on it."""

    function: str
    parameter: str
    value: Any
    context: str  # the conversation text given for the turn ("" when none was given)
    accepted: list[Any]  # gold and accepted values of this function's parameter in this turn
    history: str = ""  # the same conversation with each message's role, for a judge that reads it


ValidityJudge = Callable[[ParameterUse], bool]


def grounded_parameter(use: ParameterUse) -> bool:
    """Rule-based default: an accepted gold value, or a value found in the conversation text."""
    if any(values_equivalent(use.value, accepted) for accepted in use.accepted):
        return True
    return bool(use.context) and value_in_text(use.value, use.context)


def accepted_values(sample: Sample) -> dict[tuple[str, str], list[Any]]:
    """(function, parameter) -> every gold and accepted value of the turn's gold calls."""
    accepted: dict[tuple[str, str], list[Any]] = {}
    for call in sample.all_calls():
        alternatives = (sample.acceptable or {}).get(call.label, {})
        for param in dict.fromkeys([*call.arguments, *alternatives]):
            accepted.setdefault((call.name, param), []).extend(candidates_for(param, call, alternatives))
    return accepted


# ---------------------------------------------------------------------------------------------
# Predictions and the report


class PredictionError(ValueError):
    """A prediction line whose `result` is not BFCL's decoded form."""


def decoded_result(result: Any) -> list[PredictedCall]:
    """BFCL's decoded form `[{"func": {"arg": value}}, ...]` as predicted calls."""
    if not isinstance(result, list):
        raise PredictionError(f"result must be a list of {{function: arguments}} objects, got {type(result).__name__}")
    calls = []
    for entry in result:
        if not (isinstance(entry, dict) and len(entry) == 1):
            raise PredictionError("each result entry must be one {function: arguments} object")
        (name, arguments), = entry.items()
        if not isinstance(arguments, dict):
            raise PredictionError(f"arguments of {name!r} are not an object")
        calls.append(PredictedCall(str(name), arguments))
    return calls


def prediction_from_sample(sample: Sample) -> dict[str, Any]:
    """The gold turn written as a prediction line (QA: gold scored against itself is perfect)."""
    line: dict[str, Any] = {"id": sample.id, "result": [{c.name: dict(c.arguments)} for c in sample.all_calls()]}
    if sample.dialog_acts is not None:
        line["dialog_acts"] = list(sample.dialog_acts)
    return line


@dataclass
class ConfettiReport:
    summary: dict[str, Any]
    items: list[dict[str, Any]]  # one per gold turn, in the gold's order
    gold_set: dict[str, Any] | None = None  # GoldAlignment.listing(): missing, duplicate, foreign lines


@dataclass(frozen=True)
class ConfettiOptions:
    text_similarity: TextSimilarity = fuzzy_text_similarity
    act_classifier: DialogActClassifier = naive_dialog_act_classifier
    validity_judge: ValidityJudge = grounded_parameter
    # False for the response-quality set: a line's calls are shown to the act classifier (calling
    # is one of the acts) but not scored for AST or validity (the function-calling set does that)
    score_calls: bool = True


@metric("confetti", llm_judged=True)
def score_confetti(
    samples: Iterable[Sample],
    predictions: Iterable[Mapping[str, Any] | PredictionLine],
    options: ConfettiOptions = ConfettiOptions(),
    contexts: Mapping[str, str] | None = None,
) -> ConfettiReport:
    """Score prediction lines `{"id", "result"?, "dialog_acts"?, "response"?}` against the gold
    set `samples` (`fcbench.score.gold_set`): one item per gold turn, in the gold's order.

    Which parts are graded is decided once for the whole file, never line by line: the AST part
    when any answering line has a `result`, the dialog-act part when any has `dialog_acts` or a
    `response`. Then every gold turn counts in that part's denominator (for dialog acts: every
    turn with gold acts): a turn without a line is wrong, a line without a `result` predicts no
    call, a line without acts or response predicts no act, a malformed result scores 0. The
    parameter validity rate is over the values predicted, so it is reported only when every gold
    turn has a line. `contexts` gives each turn's conversation text for the validity judge (the
    published files carry none); a sample's own messages are used too."""
    samples = list(samples)
    alignment = align_to_gold([sample.id for sample in samples], predictions, item_id)
    answering = [line for _, line in alignment.pairs() if line is not None]
    parts = GradedParts(ast=any("result" in line for line in answering),
                        dialog_acts=any(_gives_acts(line) for line in answering))
    items = []
    for sample in samples:
        line = alignment.answer(sample.id)
        if line is None:
            items.append(_missing_item(sample, parts))
            continue
        given = (contexts or {}).get(sample.id, "")
        item = score_line(sample, line, options, _context_text(sample, given), history_text(sample, given), parts)
        items.append(item)
    summary = summarise(items)
    summary["parts"] = {"ast": parts.ast, "dialog_acts": parts.dialog_acts}
    summary["errors"]["unknown_id"] = len(alignment.foreign)
    if not alignment.complete:
        summary["parameter_validity_rate"] = None
        summary["parameter_validity_note"] = (f"not reported: {len(alignment.missing)} gold turns have no prediction, "
                                              "and the rate is over the values predicted")
    return ConfettiReport(summary, items, alignment.listing())


@dataclass(frozen=True)
class GradedParts:
    """The parts of CONFETTI a prediction file is graded on (decided for the whole file)."""

    ast: bool = True
    dialog_acts: bool = True


def _gives_acts(line: Mapping[str, Any]) -> bool:
    return isinstance(line.get("dialog_acts"), list) or isinstance(line.get("response"), str)


def _missing_item(sample: Sample, parts: GradedParts) -> dict[str, Any]:
    """A gold turn no line answers: wrong on every part the file is graded on."""
    item: dict[str, Any] = {"id": sample.id, "error": "missing_prediction"}
    if parts.ast:
        item.update(ast_soft=0.0, exact=False, chain_length=len(sample.all_calls()), n_apis=len(sample.tools),
                    history_turns=history_turns(sample))  # counted wrong in its breakdown bins too
    if parts.dialog_acts and sample.dialog_acts is not None:
        item.update(predicted_acts=[], acts_from="missing", gold_acts=list(sample.dialog_acts), dialog_act_match=False)
    return item


def _context_text(sample: Sample, given: str) -> str:
    texts = [m["content"] for m in sample.messages if isinstance(m.get("content"), str)]
    return "\n".join([*texts, given]).strip()


def history_text(sample: Sample, given: str = "") -> str:
    """The turn's conversation as `role: text` lines (calls and results as JSON), for a judge that
    must tell what the user said from what the agent or a tool said."""
    lines = []
    for message in sample.messages:
        role = str(message.get("role", "?"))
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            lines.append(f"{role}: {content.strip()}")
        for call in message.get("tool_calls") or []:
            function = call.get("function", {}) if isinstance(call, dict) else {}
            lines.append(f"{role} calls {function.get('name')}({function.get('arguments')})")
    if given.strip():
        lines.append(given.strip())
    return "\n".join(lines)


def score_line(sample: Sample, line: Mapping[str, Any], options: ConfettiOptions, context: str,
               history: str = "", parts: GradedParts | None = None) -> dict[str, Any]:
    """Every part the file is graded on (`parts`; default: the parts this line answers): AST
    (a line without a result predicts no call), and dialog acts when the sample has gold acts (a
    line without acts or a response predicts none). A malformed result scores 0. A part whose
    classifier or judge could not decide is named in the item's `judge_error` instead of being
    scored."""
    if parts is None:
        parts = GradedParts(ast="result" in line, dialog_acts=_gives_acts(line))
    item: dict[str, Any] = {"id": sample.id}
    calls: list[PredictedCall] = []
    malformed = None
    if parts.ast:
        try:
            calls = decoded_result(line.get("result", []))
        except PredictionError as exc:
            malformed = str(exc)
    if malformed is not None:  # wrong on AST; its text may still be graded on dialog acts
        item.update(error="malformed_result", detail=malformed, ast_soft=0.0, exact=False,
                    chain_length=len(sample.all_calls()), n_apis=len(sample.tools), history_turns=history_turns(sample))
    elif parts.ast and options.score_calls:
        gold = sample.all_calls()
        chain = chain_score(calls, gold, sample.acceptable, options.text_similarity)
        item.update(ast_soft=chain.score, exact=chain.score == 1.0, chain_length=len(gold),
                    n_apis=len(sample.tools), history_turns=history_turns(sample),
                    actions=[action.to_json() for action in chain.actions])
        try:
            item.update(_validity(sample, calls, options.validity_judge, context, history))
        except JudgeError as exc:
            item.setdefault("judge_error", {})["parameter_validity"] = exc.reason
    if parts.dialog_acts and sample.dialog_acts is not None:
        try:
            acts = _predicted_acts(line, calls, options.act_classifier, history)
        except JudgeError as exc:
            item.setdefault("judge_error", {})["dialog_acts"] = exc.reason
            acts = None
        if acts is not None:
            item.update(predicted_acts=acts, acts_from=_acts_source(line),
                        gold_acts=list(sample.dialog_acts), dialog_act_match=dialog_act_match(acts, sample.dialog_acts))
    return item


def _predicted_acts(line: Mapping[str, Any], calls: list[PredictedCall], classifier: DialogActClassifier,
                    history: str) -> list[str] | None:
    if isinstance(line.get("dialog_acts"), list):
        return [str(act) for act in line["dialog_acts"]]
    if isinstance(line.get("response"), str):
        return classifier(line["response"], calls, history)
    return []  # the file is graded on dialog acts and this line gives none


def _acts_source(line: Mapping[str, Any]) -> str:
    if isinstance(line.get("dialog_acts"), list):
        return "given"
    return "classifier" if isinstance(line.get("response"), str) else "none"


def _validity(sample: Sample, calls: list[PredictedCall], judge: ValidityJudge, context: str,
              history: str) -> dict[str, Any]:
    """Every value of every call with a right function name judged; one value without a verdict
    makes the whole item's validity a judge error (a rate over the values that happened to be
    judged would be biased)."""
    accepted = accepted_values(sample)
    gold_names = {call.name for call in sample.all_calls()}
    invalid, total, undecided = [], 0, []
    judged_calls = [call for call in calls if call.name in gold_names]
    for call in judged_calls:
        for param, value in call.arguments.items():
            total += 1
            use = ParameterUse(call.name, param, value, context, accepted.get((call.name, param), []), history)
            try:
                if not judge(use):
                    invalid.append(f"{call.name}.{param}")
            except JudgeError as exc:
                undecided.append(f"{call.name}.{param}: {exc.reason}")
    if undecided:
        raise JudgeError("; ".join(undecided))
    return {"parameters_total": total, "parameters_valid": total - len(invalid), "invalid_parameters": invalid,
            "validity_calls_judged": len(judged_calls), "validity_calls_wrong_name": len(calls) - len(judged_calls)}


def history_turns(sample: Sample) -> int:
    """User and agent messages before the evaluated turn (tool results are not turns; an agent
    message carrying only calls is one agent turn)."""
    return sum(message.get("role") in ("user", "assistant") for message in sample.messages)


# Bins of the breakdowns: (label, lowest, highest or None). CONFETTI does not publish its bin
# edges; these are fcbench's (its dialogs offer up to 20+ APIs and run ~9 turns on average).
API_COUNT_BINS = (("1-5", 1, 5), ("6-10", 6, 10), ("11-20", 11, 20), ("21+", 21, None))
TURN_COUNT_BINS = (("1-4", 1, 4), ("5-8", 5, 8), ("9-12", 9, 12), ("13+", 13, None))
CHAIN_LENGTH_BINS = (("1", 1, 1), ("2", 2, 2), ("3", 3, 3), ("4+", 4, None))
NONE_GIVEN = "0 (none given)"  # a file without history or tools (the published possible-answer files)


def bin_label(value: int, bins: Sequence[tuple[str, int, int | None]]) -> str:
    for label, low, high in bins:
        if value >= low and (high is None or value <= high):
            return label
    return NONE_GIVEN if value < bins[0][1] else bins[-1][0]


def breakdown(items: Sequence[Mapping[str, Any]], key: str, bins: Sequence[tuple[str, int, int | None]]) -> dict[str, Any]:
    """AST soft accuracy per bin of `item[key]`, every bin listed (n 0: accuracy None)."""
    groups: dict[str, list[float]] = {label: [] for label, _, _ in bins}
    for item in items:
        if "ast_soft" in item and isinstance(item.get(key), int):
            groups.setdefault(bin_label(item[key], bins), []).append(item["ast_soft"])
    return {label: {"n": len(scores), "ast_soft_accuracy": _mean(scores)} for label, scores in groups.items()}


def summarise(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    scored = [item for item in items if "ast_soft" in item]
    acts = [item for item in items if "dialog_act_match" in item]
    total_parameters = sum(item.get("parameters_total", 0) for item in items)
    by_length: dict[str, list[float]] = {}
    for item in scored:
        by_length.setdefault(str(item["chain_length"]), []).append(item["ast_soft"])
    return {
        "n": len(items),
        "n_ast": len(scored),
        "ast_soft_accuracy": _mean(item["ast_soft"] for item in scored),
        "ast_exact_accuracy": _mean(float(item["exact"]) for item in scored),
        "by_chain_length": {
            length: {"n": len(scores), "ast_soft_accuracy": _mean(scores)}
            for length, scores in sorted(by_length.items(), key=lambda kv: int(kv[0]))
        },
        "by_api_count": breakdown(scored, "n_apis", API_COUNT_BINS),
        "by_turn_count": breakdown(scored, "history_turns", TURN_COUNT_BINS),
        "by_chain_bin": breakdown(scored, "chain_length", CHAIN_LENGTH_BINS),
        "bins": {"by_api_count": "tools offered in the turn", "by_turn_count": "user and agent messages before "
                 "the evaluated turn", "edges": "fcbench's (CONFETTI does not publish its bin edges)"},
        "n_dialog_acts": len(acts),
        "dialog_act_accuracy": _mean(float(item["dialog_act_match"]) for item in acts),
        "n_parameters": total_parameters,
        "n_validity_calls": sum(item.get("validity_calls_judged", 0) for item in items),
        "n_validity_calls_wrong_name": sum(item.get("validity_calls_wrong_name", 0) for item in items),
        "parameter_validity_rate": (
            sum(item.get("parameters_valid", 0) for item in items) / total_parameters if total_parameters else None
        ),
        "errors": {
            "unknown_id": sum(item.get("error") == "unknown_id" for item in items),
            "malformed_result": sum(item.get("error") == "malformed_result" for item in items),
            "judge_error": sum("judge_error" in item for item in items),
        },
    }


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None
