"""Call matching shared by every metric family (pure: no model download, no I/O).

Three concerns, each usable alone:

- `check_call_format`: is a predicted call well formed for the available tools? The messages are
  ComplexEval's (function not in the list; required parameters missing; unknown parameters; wrong
  type), written to be fed back to the model under evaluation so it can correct itself.
- `match_call`: is a predicted call equivalent to a gold call? Layers run cheapest first and the
  decision records the layer that decided: `name` (different function: never a match), `rule`
  (arguments equal after normalisation), `acceptable` (every argument among its accepted
  alternatives), `exact` (a parameter that must match exactly differs: no match), then the
  pluggable layers (response-based, LLM judge...) called only when nothing cheaper decided.
- `assign_calls` / `match_step`: pair the predicted calls of a step with its gold calls. Exact
  matches pair first; the rest are paired by the Hungarian algorithm on a similarity (name match
  plus a rapidfuzz argument similarity, or any pluggable similarity such as embeddings).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from rapidfuzz import fuzz
from scipy.optimize import linear_sum_assignment

from fcbench.checks.call_format import (  # noqa: F401 - re-exported: the format check is part of matching's API
    CallDecodeError,
    CallLike,
    FormatIssue,
    PredictedCall,
    as_predicted_call,
    check_call_format,
)
from fcbench.catalog.types import json_type_names
from fcbench.errors import JudgeError
from fcbench.references import is_reference
from fcbench.sample import AcceptableValues, Call, Tool
from fcbench.score.registry import metric

# ---------------------------------------------------------------------------------------------
# Normalisation


def fill_defaults(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments with every omitted parameter that has a schema default set to it."""
    filled = dict(arguments)
    for param, param_schema in ((schema or {}).get("properties") or {}).items():
        if param not in filled and isinstance(param_schema, dict) and "default" in param_schema:
            filled[param] = param_schema["default"]
    return filled


def values_equivalent(left: Any, right: Any, schema: Mapping[str, Any] | None = None) -> bool:
    """Equality after normalisation by the schema: strings trimmed and case-folded, 1 == 1.0 for
    numbers, lists in order, objects with their defaults filled in; a bool never equals a number."""
    schema = schema if isinstance(schema, Mapping) else {}
    types = json_type_names(dict(schema))
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, str) and isinstance(right, str):
        if not types or "string" in types:
            return _normal_text(left) == _normal_text(right)
        return left == right
    if _is_number(left) and _is_number(right):
        if not types or "number" in types or "integer" in types:
            return math.isclose(left, right, rel_tol=1e-9, abs_tol=0.0) or left == right
        return type(left) is type(right) and left == right
    if isinstance(left, list) and isinstance(right, list):
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None
        return len(left) == len(right) and all(
            values_equivalent(a, b, items) for a, b in zip(left, right)
        )
    if isinstance(left, dict) and isinstance(right, dict):
        return arguments_equivalent(left, right, schema)
    return type(left) is type(right) and left == right


def arguments_equivalent(
    left: Mapping[str, Any], right: Mapping[str, Any], schema: Mapping[str, Any] | None = None
) -> bool:
    """Two argument objects equal after defaults are filled and values normalised."""
    left, right = fill_defaults(left, schema), fill_defaults(right, schema)
    if left.keys() != right.keys():
        return False
    properties = (schema or {}).get("properties") or {}
    return all(values_equivalent(left[k], right[k], properties.get(k)) for k in left)


def _normal_text(text: str) -> str:
    return " ".join(text.split()).casefold()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------------------------------------
# Equivalence of one call, in layers


@dataclass(frozen=True)
class MatchDecision:
    """Whether a predicted call is equivalent to a gold call, and which layer decided.

    `error_type` names the kind of mismatch as ComplexEval does: func_error (another function),
    param_missing, param_hallucination (an argument the gold call does not have), value_error,
    format_error (the call could not be run at all).
    """

    matched: bool
    layer: str
    error_type: str | None = None
    detail: str = ""


# A pluggable layer returns True (equivalent), False (not) or None (cannot tell: next layer); it
# raises JudgeError when its judge could not answer.
LayerFunction = Callable[[PredictedCall, Call, Union[Tool, None]], Union[bool, None]]


@dataclass(frozen=True)
class MatchLayer:
    name: str  # recorded as the deciding layer, e.g. "response" or "llm_judge"
    decide: LayerFunction
    # an LLM judge reads the conversation so far: called as decide(predicted, gold, tool, context)
    needs_context: bool = False


def match_call(
    predicted: CallLike,
    gold: Call,
    tool: Tool | None = None,
    acceptable: Mapping[str, AcceptableValues] | None = None,
    layers: Sequence[MatchLayer] = (),
    exact_parameters: Collection[str] = (),
    context: str = "",
) -> MatchDecision:
    """Decide whether `predicted` is equivalent to `gold`.

    `tool` gives the schema (defaults, types) used to normalise; `acceptable` the gold call's
    accepted alternatives per argument (`Sample.acceptable[gold.label]`); `exact_parameters` the
    parameters that must match by rule, whatever a later layer would say (ComplexEval's
    exact-match list); `layers` the costly layers, called in order only when needed (`context`,
    the conversation so far, goes to those that read it).
    """
    predicted = as_predicted_call(predicted)
    if predicted.name != gold.name:
        return MatchDecision(
            False, "name", "func_error", f"Called {predicted.name}, expected {gold.name}."
        )
    schema = tool.parameters if tool is not None else None
    if arguments_equivalent(predicted.arguments, gold.arguments, schema):
        return MatchDecision(True, "rule")
    if acceptable and _within_acceptable(predicted.arguments, gold.arguments, acceptable, schema):
        return MatchDecision(True, "acceptable")
    mismatch = first_argument_mismatch(predicted.arguments, gold.arguments, schema)
    exact_failure = _exact_parameter_failure(predicted.arguments, gold.arguments, schema, exact_parameters)
    if exact_failure is not None:
        return MatchDecision(False, "exact", *exact_failure)
    for layer in layers:
        try:
            decided = (layer.decide(predicted, gold, tool, context) if layer.needs_context  # type: ignore[call-arg]
                       else layer.decide(predicted, gold, tool))
        except JudgeError as exc:
            return MatchDecision(False, "judge_error", "judge_error", f"The {layer.name} judge gave no verdict: {exc}")
        if decided is not None:
            if decided:
                return MatchDecision(True, layer.name)
            return MatchDecision(False, layer.name, *mismatch)
    return MatchDecision(False, "rule", *mismatch)


def _within_acceptable(
    predicted: Mapping[str, Any],
    gold: Mapping[str, Any],
    acceptable: Mapping[str, AcceptableValues],
    schema: Mapping[str, Any] | None,
) -> bool:
    """Every argument is the gold value or one of its alternatives; omissions only where allowed."""
    properties = (schema or {}).get("properties") or {}
    filled = fill_defaults(predicted, schema)
    for param in set(filled) | set(gold) | set(acceptable):
        alternatives = acceptable.get(param)
        if param not in predicted:
            omittable = alternatives is not None and alternatives.may_omit
            if omittable or param not in gold and alternatives is None:
                continue
            if param not in filled:
                return False
        candidates = list(alternatives.values) if alternatives else []
        if param in gold:
            candidates.append(gold[param])
        if not any(values_equivalent(filled[param], c, properties.get(param)) for c in candidates):
            return False
    return True


def first_argument_mismatch(
    predicted: Mapping[str, Any], gold: Mapping[str, Any], schema: Mapping[str, Any] | None = None
) -> tuple[str | None, str]:
    """(error_type, detail) of the first difference, in ComplexEval's order; (None, "") if none."""
    predicted, gold = fill_defaults(predicted, schema), fill_defaults(gold, schema)
    properties = (schema or {}).get("properties") or {}
    for param, value in gold.items():
        if param not in predicted:
            return "param_missing", f"Missing parameter {param} in prediction."
        if not values_equivalent(predicted[param], value, properties.get(param)):
            return "value_error", f"Parameter {param} value do not equal to golden."
    for param in predicted:
        if param not in gold:
            return "param_hallucination", f"Parameter {param} is hallucinated."
    return None, ""


def _exact_parameter_failure(
    predicted: Mapping[str, Any],
    gold: Mapping[str, Any],
    schema: Mapping[str, Any] | None,
    exact_parameters: Collection[str],
) -> tuple[str, str] | None:
    properties = (schema or {}).get("properties") or {}
    for param in exact_parameters:
        if param not in gold:
            continue
        if param not in predicted:
            return "param_missing", f"Missing parameter {param} in prediction."
        if not values_equivalent(predicted[param], gold[param], properties.get(param)):
            return "value_error", f"Parameter {param} value is not correct in prediction."
    return None


# ---------------------------------------------------------------------------------------------
# Similarity and assignment


TextSimilarity = Callable[[str, str], float]  # in [0, 1]
CallSimilarity = Callable[[PredictedCall, Call], float]  # in [0, 1]


def fuzzy_text_similarity(left: str, right: str) -> float:
    return fuzz.ratio(left, right) / 100.0


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def argument_similarity(
    predicted: Mapping[str, Any],
    gold: Mapping[str, Any],
    text_similarity: TextSimilarity = fuzzy_text_similarity,
) -> float:
    """Mean over the union of parameters: 1 for equivalent values, text similarity otherwise,
    0 for a parameter only one side has. Two empty argument sets are identical (1)."""
    params = set(predicted) | set(gold)
    if not params:
        return 1.0
    total = 0.0
    for param in params:
        if param in predicted and param in gold:
            left, right = predicted[param], gold[param]
            same = values_equivalent(left, right)
            total += 1.0 if same else text_similarity(_value_text(left), _value_text(right))
    return total / len(params)


def call_similarity(
    predicted: PredictedCall,
    gold: Call,
    text_similarity: TextSimilarity = fuzzy_text_similarity,
) -> float:
    """Half for the same function name, half for the argument similarity."""
    same_name = 1.0 if predicted.name == gold.name else 0.0
    return 0.5 * same_name + 0.5 * argument_similarity(predicted.arguments, gold.arguments, text_similarity)


def embedding_similarity(embed: Callable[[str], Sequence[float]]) -> CallSimilarity:
    """A call similarity from any text embedding (cosine of the embedded JSON of both calls),
    as ComplexEval pairs calls; `embed` is supplied by the caller (no model ships with fcbench)."""

    def similarity(predicted: PredictedCall, gold: Call) -> float:
        left = np.asarray(embed(_call_text(predicted.name, predicted.arguments)), dtype=float)
        right = np.asarray(embed(_call_text(gold.name, gold.arguments)), dtype=float)
        norm = float(np.linalg.norm(left) * np.linalg.norm(right))
        return float(left @ right / norm) if norm else 0.0

    return similarity


def _call_text(name: str, arguments: Mapping[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": arguments}, sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class CallPair:
    """A predicted call paired with a gold call; an index is None when that side is unpaired."""

    predicted_index: int | None
    gold_index: int | None
    similarity: float = 0.0


def assign_calls(
    predicted: Sequence[CallLike],
    gold: Sequence[Call],
    similarity: CallSimilarity = call_similarity,
    tools: Sequence[Tool] = (),
) -> list[CallPair]:
    """Pair predicted with gold calls: exact matches first, the rest by the Hungarian algorithm
    maximising total similarity; leftovers on either side come back unpaired.

    Exact matches go first because a global optimum may otherwise split an exact pair to gain
    more similarity elsewhere (ComplexEval does the same).
    """
    calls = [as_predicted_call(c) for c in predicted]
    schemas = {tool.name: tool.parameters for tool in tools}
    pairs: list[CallPair] = []
    free_predicted, free_gold = list(range(len(calls))), list(range(len(gold)))
    for p in list(free_predicted):
        for g in free_gold:
            if calls[p].name == gold[g].name and arguments_equivalent(
                calls[p].arguments, gold[g].arguments, schemas.get(gold[g].name)
            ):
                pairs.append(CallPair(p, g, 1.0))
                free_predicted.remove(p)
                free_gold.remove(g)
                break
    if free_predicted and free_gold:
        scores = np.array([[similarity(calls[p], gold[g]) for g in free_gold] for p in free_predicted])
        rows, cols = linear_sum_assignment(scores, maximize=True)
        for r, c in zip(rows, cols):
            pairs.append(CallPair(free_predicted[r], free_gold[c], float(scores[r, c])))
    paired_predicted = {pair.predicted_index for pair in pairs}
    paired_gold = {pair.gold_index for pair in pairs}
    pairs += [CallPair(p, None) for p in range(len(calls)) if p not in paired_predicted]
    pairs += [CallPair(None, g) for g in range(len(gold)) if g not in paired_gold]
    return sorted(pairs, key=_pair_order)


def _pair_order(pair: CallPair) -> tuple[int, int]:
    big = 1 << 30
    return (
        pair.gold_index if pair.gold_index is not None else big,
        pair.predicted_index if pair.predicted_index is not None else big,
    )


# ---------------------------------------------------------------------------------------------
# A whole step


@dataclass(frozen=True)
class PairDecision:
    pair: CallPair
    decision: MatchDecision | None  # None for an unpaired call


@dataclass(frozen=True)
class StepMatch:
    decisions: list[PairDecision]
    format_issues: dict[int, FormatIssue]  # predicted index -> its format problem

    @property
    def matched_gold(self) -> list[int]:
        return sorted(
            d.pair.gold_index
            for d in self.decisions
            if d.decision is not None and d.decision.matched and d.pair.gold_index is not None
        )

    @property
    def n_gold(self) -> int:
        return sum(d.pair.gold_index is not None for d in self.decisions)

    @property
    def n_predicted(self) -> int:
        return sum(d.pair.predicted_index is not None for d in self.decisions)

    @property
    def exact(self) -> bool:
        """Every gold call matched and no extra predicted call."""
        return len(self.matched_gold) == self.n_gold == self.n_predicted


@metric("call_match")
def match_step(
    predicted: Sequence[CallLike],
    gold: Sequence[Call],
    tools: Sequence[Tool] = (),
    acceptable: Mapping[str, Mapping[str, AcceptableValues]] | None = None,
    layers: Sequence[MatchLayer] = (),
    similarity: CallSimilarity = call_similarity,
    exact_parameters: Mapping[str, Collection[str]] | None = None,
    references: bool = False,
    context: str = "",
) -> StepMatch:
    """Pair a step's predicted calls with its gold calls and decide each pair.

    A predicted call with a format problem (when `tools` are given) is not compared: its pair is
    decided by the `format` layer. `acceptable` is keyed by gold call label, as in `Sample`;
    `exact_parameters` by function name. `references`: the predictions are whole paths that may
    pass `$label.path$` references (NESTful style), whose type is not checked before resolution.
    """
    calls = [as_predicted_call(c) for c in predicted]
    tools_by_name = {tool.name: tool for tool in tools}
    issues = {}
    if tools:
        skip = is_reference if references else None
        issues = {i: issue for i, c in enumerate(calls) if (issue := check_call_format(c, tools, skip))}
    decisions = []
    for pair in assign_calls(calls, gold, similarity, tools):
        if pair.predicted_index is None or pair.gold_index is None:
            decisions.append(PairDecision(pair, None))
            continue
        issue = issues.get(pair.predicted_index)
        if issue is not None:
            decision = MatchDecision(False, "format", "format_error", issue.message)
        else:
            gold_call = gold[pair.gold_index]
            decision = match_call(
                calls[pair.predicted_index],
                gold_call,
                tools_by_name.get(gold_call.name),
                (acceptable or {}).get(gold_call.label),
                layers,
                (exact_parameters or {}).get(gold_call.name, ()),
                context,
            )
        decisions.append(PairDecision(pair, decision))
    return StepMatch(decisions, issues)
