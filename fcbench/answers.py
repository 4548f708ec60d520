"""Comparing a computed final answer with a gold answer (pure). The one comparison used by the
filter, `execute` and the NESTful scorer, so a sample the filter keeps is a sample a correct model
wins in the scorer (tests pin filter verdict == scorer verdict).

Rules, and why:
- A failed execution is never correct, even against a gold answer of 0, False, "" or None: a
  crash must not pass for "the answer is nothing". Failures are passed as `ExecutionFailed`.
- `bool` is not a number here (Python says True == 1; a benchmark must not).
- Numbers (int or float alike, 6400 == 6400.0) compare with a tolerance (`TOLERANCE`), or in
  NESTful's way (`ROUND_TO_GOLD`): a float gold written with decimals (13.75) is matched by the
  prediction rounded to as many decimals (13.7535...); an int gold (40) or a gold in exponent
  notation (1e-05) is not rounded against, so 40.4 does not pass for 40 nor 1.2e-05 for 1e-05;
  beyond that, numbers match when equal up to float noise (1e-9 relative).
- Lists (and tuples) compare item by item, in order; dicts by the same keys, value by value;
  strings exactly.

`REFERENCE_EQUALITY` is the NESTful reference scorer's own rule, kept for `--compat` only: Python's
`==` after rounding a float prediction to a float gold's decimals at the top level, with its
quirks (True == 1, nested floats never rounded, a tuple equal to the same list).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from numbers import Integral, Real
from typing import Any

# Float noise allowed in ROUND_TO_GOLD beyond the gold's written precision.
_NOISE_REL_TOL = 1e-9
_NOISE_ABS_TOL = 1e-12


class NumberMode(str, Enum):
    TOLERANCE = "tolerance"
    ROUND_TO_GOLD = "round_to_gold"
    REFERENCE_EQUALITY = "reference_equality"


@dataclass(frozen=True)
class AnswerComparison:
    mode: NumberMode = NumberMode.TOLERANCE
    abs_tol: float = 1e-9  # TOLERANCE only
    rel_tol: float = 1e-6  # TOLERANCE only


NESTFUL_COMPARISON = AnswerComparison(mode=NumberMode.ROUND_TO_GOLD)
NESTFUL_REFERENCE_COMPARISON = AnswerComparison(mode=NumberMode.REFERENCE_EQUALITY)


@dataclass(frozen=True)
class ExecutionFailed:
    """Stands for the answer of an execution that failed; equal to no gold answer."""

    reason: str = ""


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def gold_decimals(gold: Real) -> int | None:
    """How many decimals a float gold is written with in its shortest repr (13.75 -> 2,
    6400.0 -> 1); None when it is not written with decimals (an int, 1e-05, inf): such a gold
    states no rounding."""
    if not isinstance(gold, float) or not math.isfinite(gold):
        return None
    text = repr(gold)
    if "e" in text or "." not in text:
        return None
    return max(0, -int(Decimal(text).as_tuple().exponent))


def numbers_match(predicted: Real, gold: Real, comparison: AnswerComparison) -> bool:
    if isinstance(predicted, float) and math.isnan(predicted) or isinstance(gold, float) and math.isnan(gold):
        return False
    if predicted == gold:  # exact, also for ints too large for a float
        return True
    if isinstance(predicted, Integral) and isinstance(gold, Integral):
        return False  # two ints are equal or not: no float rounding of 10**30 + 1
    try:
        if comparison.mode is NumberMode.ROUND_TO_GOLD:
            if not math.isfinite(predicted) or not math.isfinite(gold):
                return False
            decimals = gold_decimals(gold)
            if decimals is not None and round(float(predicted), decimals) == gold:
                return True
            return math.isclose(predicted, gold, rel_tol=_NOISE_REL_TOL, abs_tol=_NOISE_ABS_TOL)
        return math.isclose(predicted, gold, rel_tol=comparison.rel_tol, abs_tol=comparison.abs_tol)
    except OverflowError:  # an int beyond float range against a float
        return False


def answers_match(predicted: Any, gold: Any, comparison: AnswerComparison = AnswerComparison()) -> bool:
    """Whether a computed answer equals the gold answer under the rules above."""
    if isinstance(predicted, ExecutionFailed) or isinstance(gold, ExecutionFailed):
        return False
    if comparison.mode is NumberMode.REFERENCE_EQUALITY:
        return _reference_equal(predicted, gold)
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


def _reference_equal(predicted: Any, gold: Any) -> bool:
    # A gold such as 1e-05 has no '.' in its text and makes the reference crash; it is compared
    # unrounded here.
    if type(gold) is float and type(predicted) is float:
        decimals = gold_decimals(gold)
        if decimals is not None:
            predicted = round(predicted, decimals)
    if predicted == gold:
        return True
    return type(predicted) is tuple and type(gold) is list and _as_lists(predicted) == gold


def _as_lists(value: Any) -> Any:
    return [_as_lists(item) for item in value] if isinstance(value, (list, tuple)) else value
