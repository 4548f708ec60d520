"""Comparing a computed final answer with a gold answer, type-aware (pure).

Rules, and why:
- A failed execution is never correct, even against a gold answer of 0, False, "" or None: a
  crash must not pass for "the answer is nothing". Failures are passed as `ExecutionFailed`.
- `bool` is not a number here (Python says True == 1; a benchmark must not).
- Numbers (int or float alike, 6400 == 6400.0) compare with a tolerance, or in NESTful's way
  (`ROUND_TO_GOLD`): the prediction is rounded to as many decimals as the gold answer is written
  with, then compared exactly (gold 13.75 accepts 13.7535...).
- Lists (and tuples) compare item by item, in order; dicts by the same keys, value by value;
  strings exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any


class NumberMode(str, Enum):
    TOLERANCE = "tolerance"
    ROUND_TO_GOLD = "round_to_gold"


@dataclass(frozen=True)
class AnswerComparison:
    mode: NumberMode = NumberMode.TOLERANCE
    abs_tol: float = 1e-9
    rel_tol: float = 1e-6


NESTFUL_COMPARISON = AnswerComparison(mode=NumberMode.ROUND_TO_GOLD)


@dataclass(frozen=True)
class ExecutionFailed:
    """Stands for the answer of an execution that failed; equal to no gold answer."""

    reason: str = ""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def gold_decimals(gold: int | float) -> int:
    """How many decimals the gold number is written with (its shortest repr): 6400.0 -> 1,
    0.24 -> 2, 1e-05 -> 5, an int -> 0."""
    if isinstance(gold, int) or not math.isfinite(gold):
        return 0
    exponent = Decimal(repr(gold)).as_tuple().exponent
    return max(0, -int(exponent))


def numbers_match(predicted: int | float, gold: int | float, comparison: AnswerComparison) -> bool:
    if isinstance(predicted, float) and math.isnan(predicted) or isinstance(gold, float) and math.isnan(gold):
        return False
    if comparison.mode is NumberMode.ROUND_TO_GOLD:
        if isinstance(predicted, float) and not math.isfinite(predicted):
            return predicted == gold
        return round(predicted, gold_decimals(gold)) == gold
    if predicted == gold:  # exact, also for ints too large for a float
        return True
    try:
        return math.isclose(predicted, gold, rel_tol=comparison.rel_tol, abs_tol=comparison.abs_tol)
    except OverflowError:
        return False


def answers_match(predicted: Any, gold: Any, comparison: AnswerComparison = AnswerComparison()) -> bool:
    """Whether a computed answer equals the gold answer under the rules above."""
    if isinstance(predicted, ExecutionFailed) or isinstance(gold, ExecutionFailed):
        return False
    if isinstance(predicted, bool) or isinstance(gold, bool):
        return isinstance(predicted, bool) and isinstance(gold, bool) and predicted == gold
    if _is_number(predicted) and _is_number(gold):
        return numbers_match(predicted, gold, comparison)
    if isinstance(predicted, (list, tuple)) and isinstance(gold, (list, tuple)):
        return len(predicted) == len(gold) and all(answers_match(p, g, comparison) for p, g in zip(predicted, gold))
    if isinstance(predicted, dict) and isinstance(gold, dict):
        return predicted.keys() == gold.keys() and all(answers_match(predicted[k], gold[k], comparison) for k in gold)
    if _is_number(predicted) or _is_number(gold):
        return False  # a number never equals a string, list or null
    return type(predicted) is type(gold) and predicted == gold
