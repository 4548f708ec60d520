"""CallNavi metrics (pure): routing, syntax, structure, AST match, and stability over runs.

A CallNavi answer is `{"API": [names in call order], "parameters": [{argument: value}, ...]}`,
one parameter object per API; `"$$$"` in the ground truth marks a value unknown from the question
(or read from an earlier call): it matches anything.

Per output (`score_callnavi`):
- `syntax_valid`: the raw model text is JSON once repaired by `json_repair` (pure code; CallNavi
  used a GPT-4o "wash" prompt), `repairs` says what had to be fixed;
- `routing`: the API list equals the ground truth's, in order (API routing exact match);
- `structural`: routing, one parameter object per API, and every ground-truth parameter name
  present (extra names allowed, as in CallNavi's scorer);
- `ast_match`: structural, and every ground-truth value equal to the predicted one, `"$$$"`
  matching anything.

Default mode departs from CallNavi's published scorer (`parajudge.py`) where it is defective;
`compat=True` keeps its behaviour:
1. `"$$$"` nested inside an object value (`{"make": "Toyota", "model": "$$$"}`, 60+ items) is a
   wildcard in default mode; CallNavi compares such objects literally, so only a prediction
   that spells "$$$" itself can match.
2. An API without arguments may have no parameter object in the ground truth (`sho005`:
   `"API": ["getCartItems"], "parameters": []`, 6 items); default mode reads a missing object,
   there or in the prediction, as `{}`; CallNavi fails every prediction with one object per API.
3. CallNavi's routing flag also requires the parameter-object count to match; default mode
   judges routing on the API list only.

Stability over N runs of the same question:
- election score `(F1 - F2) / (N - F2)`, F1 and F2 the counts of the most and second most
  frequent answers, 0 on a tie (paper, Appendix D);
- Levenshtein score: the mean normalised Levenshtein similarity over all pairs of outputs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from rapidfuzz.distance import Levenshtein

from fcbench.score.json_repair import repair_json
from fcbench.score.registry import metric

WILDCARD = "$$$"


@dataclass(frozen=True)
class CallNaviScore:
    syntax_valid: bool
    routing: bool
    structural: bool
    ast_match: bool
    repairs: tuple[str, ...] = ()

    @property
    def repaired(self) -> bool:
        return bool(self.repairs)


def parse_callnavi_output(output: str | Mapping[str, Any]) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """(parsed answer or None, repairs made). An already parsed answer is taken as is."""
    if isinstance(output, Mapping):
        return dict(output), ()
    repaired = repair_json(output)
    if not repaired.ok or not isinstance(repaired.value, dict):
        return None, repaired.repairs
    return repaired.value, repaired.repairs


@metric("callnavi")
def score_callnavi(
    output: str | Mapping[str, Any], ground_truth: Mapping[str, Any], compat: bool = False
) -> CallNaviScore:
    """Grade one model output (raw text or parsed) against a question's `ground_truth`."""
    answer, repairs = parse_callnavi_output(output)
    if answer is None:
        return CallNaviScore(False, False, False, False, repairs)
    routing = routing_match(answer, ground_truth)
    if compat:
        routing = routing and _same_length(answer.get("parameters"), ground_truth.get("parameters"))
    structural = structural_match(answer, ground_truth, compat)
    ast = structural and ast_match(answer, ground_truth, compat)
    return CallNaviScore(True, routing, structural, ast, repairs)


def routing_match(answer: Mapping[str, Any], ground_truth: Mapping[str, Any]) -> bool:
    """The same APIs in the same order."""
    apis = answer.get("API")
    return isinstance(apis, list) and apis == list(ground_truth["API"])


def structural_match(
    answer: Mapping[str, Any], ground_truth: Mapping[str, Any], compat: bool = False
) -> bool:
    if not routing_match(answer, ground_truth):
        return False
    pairs = _parameter_pairs(answer, ground_truth, compat)
    if pairs is None:
        return False
    return all(set(gold) <= set(predicted) for predicted, gold in pairs)


def ast_match(answer: Mapping[str, Any], ground_truth: Mapping[str, Any], compat: bool = False) -> bool:
    if not structural_match(answer, ground_truth, compat):
        return False
    pairs = _parameter_pairs(answer, ground_truth, compat) or []
    for predicted, gold in pairs:
        for name, gold_value in gold.items():
            if compat:
                # CallNavi skips "$$$" and {} at the top level only and compares the rest as is.
                if gold_value != WILDCARD and gold_value != {} and gold_value != predicted[name]:
                    return False
            elif not values_match(predicted[name], gold_value):
                return False
    return True


def values_match(predicted: Any, gold: Any) -> bool:
    """Gold "$$$" (and gold {} for an object CallNavi left unspecified) match anything; objects
    need every gold key, with extra keys allowed as at the top level; lists match in order."""
    if gold == WILDCARD or gold == {}:
        return True
    if isinstance(gold, dict):
        return isinstance(predicted, dict) and all(
            key in predicted and values_match(predicted[key], value) for key, value in gold.items()
        )
    if isinstance(gold, list):
        return (
            isinstance(predicted, list)
            and len(predicted) == len(gold)
            and all(values_match(p, g) for p, g in zip(predicted, gold))
        )
    if isinstance(gold, bool) or isinstance(predicted, bool):
        return type(gold) is type(predicted) and gold == predicted
    return gold == predicted


def _same_length(left: Any, right: Any) -> bool:
    return isinstance(left, list) and isinstance(right, list) and len(left) == len(right)


def _parameter_pairs(
    answer: Mapping[str, Any], ground_truth: Mapping[str, Any], compat: bool
) -> list[tuple[dict[str, Any], dict[str, Any]]] | None:
    """(predicted, gold) parameter objects, one per API; None when the shapes cannot be paired."""
    predicted, gold = answer.get("parameters"), list(ground_truth.get("parameters") or [])
    if not isinstance(predicted, list):
        return None
    if not compat:
        # Fix 2: an API with no arguments may have no parameter object (in the ground truth or in
        # the prediction): read the missing objects as {}.
        n_apis = len(ground_truth["API"])
        gold += [{}] * (n_apis - len(gold))
        predicted = predicted + [{}] * (n_apis - len(predicted))
    if len(predicted) != len(gold) or not all(isinstance(p, dict) for p in predicted):
        return None
    return list(zip(predicted, gold))


def callnavi_rates(scores: Sequence[CallNaviScore]) -> dict[str, float]:
    """Share of outputs passing each check (and needing a repair), as the paper reports them."""
    n = len(scores)
    if n == 0:
        return {}
    return {
        "syntax_validity": sum(s.syntax_valid for s in scores) / n,
        "repaired": sum(s.repaired for s in scores) / n,
        "routing_exact_match": sum(s.routing for s in scores) / n,
        "structural_accuracy": sum(s.structural for s in scores) / n,
        "ast_exact_match": sum(s.ast_match for s in scores) / n,
    }


# ---------------------------------------------------------------------------------------------
# Stability over repeated runs


def answer_key(answer: Any) -> str:
    """A canonical text for an answer, so equal answers count as one (key order aside)."""
    if isinstance(answer, str):
        return answer
    return json.dumps(answer, sort_keys=True, ensure_ascii=False)


@metric("callnavi_election_stability")
def election_stability(answers: Sequence[Any]) -> float:
    """(F1 - F2) / (N - F2): how clearly one answer wins over N runs; 0 on a tie for first.

    AAAAA -> 1, AAAAB -> 0.75, AAABC -> 0.5, AAABB -> 1/3, AABCD -> 0.25, AABBC -> 0, ABCDE -> 0.
    """
    if not answers:
        raise ValueError("the election score needs at least one answer")
    counts = sorted(Counter(answer_key(a) for a in answers).values(), reverse=True)
    first = counts[0]
    second = counts[1] if len(counts) > 1 else 0
    if first == second:
        return 0.0
    return (first - second) / (len(answers) - second)


@metric("callnavi_levenshtein_stability")
def levenshtein_stability(outputs: Sequence[Any]) -> float:
    """Mean normalised Levenshtein similarity over all pairs of outputs (1: all identical).

    Non-string outputs are compared through their canonical JSON text.
    """
    if not outputs:
        raise ValueError("the Levenshtein score needs at least one output")
    texts = [answer_key(o) for o in outputs]
    pairs = list(combinations(texts, 2))
    if not pairs:
        return 1.0
    return sum(Levenshtein.normalized_similarity(a, b) for a, b in pairs) / len(pairs)
