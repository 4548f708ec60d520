"""Property tests (hypothesis): no transformation of a prediction file raises any figure of any
metric family. Starting from prediction files built on the real published files
(tests/prediction_files.py), a file is rewritten by a random sequence of the transformations a
gamer has at hand: repeat a line, drop a line, reorder the lines, relabel a line's category (a
field the gold owns), add a line for a made-up id, change the gold a line carries. Every metric of
the summary, at any depth (per domain, per category, per chain length...), must be no better
than the honest file's (error rates no lower); a figure no longer reported is not better."""

from __future__ import annotations

import copy
import tempfile
from functools import cache
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prediction_files import (ScoringCase, bfcl_case, callnavi_case, complexeval_case, confetti_acts_case,
                              confetti_case, nestful_case, raised_figures, score)

BFCL_CATEGORIES = ["live_relevance", "relevance", "irrelevance", "simple_python", "multiple", "parallel",
                   "live_simple", "multi_turn_base"]

index = st.integers(min_value=0, max_value=10**6)
TRANSFORMATION = st.one_of(
    st.tuples(st.just("repeat"), index, index),
    st.tuples(st.just("drop"), index),
    st.tuples(st.just("reorder"), st.randoms(use_true_random=False)),
    st.tuples(st.just("relabel"), index, st.sampled_from(BFCL_CATEGORIES)),
    st.tuples(st.just("foreign"), index),
    st.tuples(st.just("carried_gold"), index),
)


def transformed(case: ScoringCase, steps: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    lines = copy.deepcopy(case.lines)
    for number, step in enumerate(steps):
        if not lines:
            break
        kind, at = step[0], step[1]
        if kind == "reorder":
            at.shuffle(lines)
            continue
        i = at % len(lines)
        if kind == "repeat":
            lines.insert(step[2] % (len(lines) + 1), copy.deepcopy(lines[i]))
        elif kind == "drop":
            del lines[i]
        elif kind == "relabel":
            lines[i] = {**lines[i], "category": step[2]}
        elif kind == "foreign":  # a made-up id whose line carries, as its gold, what it predicts
            made_up = {**copy.deepcopy(lines[i]), case.id_field: f"made-up-{number}"}
            lines.append({**made_up, **case.carried_gold(made_up)})
        elif kind == "carried_gold":
            lines[i] = {**lines[i], **case.carried_gold(lines[i])}
    return lines


@cache
def honest(name: str) -> tuple[ScoringCase, dict[str, Any], tempfile.TemporaryDirectory]:
    work = tempfile.TemporaryDirectory(prefix="fcbench-gold-set-")
    case = CASES[name](Path(work.name))
    return case, score(case, case.lines, Path(work.name), "honest.jsonl").summary, work


CASES: dict[str, Callable[[Path], ScoringCase]] = {
    "bfcl": lambda _: bfcl_case(),
    "bfcl compat": lambda _: _compat(bfcl_case()),
    "callnavi, two runs": lambda _: callnavi_case(runs=2),
    "callnavi compat": lambda _: _compat(callnavi_case()),
    "complexeval": lambda _: complexeval_case(),
    "complexeval compat": lambda _: _compat(complexeval_case()),
    "confetti calls": lambda _: confetti_case(),
    "confetti dialog acts": lambda _: confetti_acts_case(),
    "nestful": nestful_case,
    "nestful compat": lambda work: _compat(nestful_case(work)),
}


def _compat(case: ScoringCase) -> ScoringCase:
    case.request = {**case.request, "compat": True}
    return case


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=st.lists(TRANSFORMATION, min_size=1, max_size=6))
def test_no_transformation_of_a_prediction_file_raises_any_figure(name: str, steps: list[tuple[Any, ...]]) -> None:
    case, before, work = honest(name)
    with tempfile.TemporaryDirectory(dir=work.name) as scratch:
        after = score(case, transformed(case, steps), Path(scratch)).summary
    assert raised_figures(before, after) == [], steps


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(TRANSFORMATION, min_size=1, max_size=4))
def test_nestful_win_rate_executing_the_sequences_is_never_raised_either(steps: list[tuple[Any, ...]]) -> None:
    case, before, work = honest_with_tools()
    with tempfile.TemporaryDirectory(dir=work.name) as scratch:
        after = score(case, transformed(case, steps), Path(scratch)).summary
    assert after["win_rate"] is not None
    assert raised_figures(before, after) == [], steps


@cache
def honest_with_tools() -> tuple[ScoringCase, dict[str, Any], tempfile.TemporaryDirectory]:
    work = tempfile.TemporaryDirectory(prefix="fcbench-gold-set-")
    case = nestful_case(Path(work.name), tools_module=True)
    return case, score(case, case.lines, Path(work.name), "honest.jsonl").summary, work


def test_the_honest_files_score_in_between() -> None:
    """The starting files are neither all right nor all wrong, so a raise would show."""
    for name in CASES:
        case, summary, _ = honest(name)
        figures = [value for key, value in summary.items() if key in ("accuracy", "ast_exact_match", "success_rate",
                                                                       "ast_soft_accuracy", "dialog_act_accuracy",
                                                                       "full_acc") and value is not None]
        assert figures and all(0 < value < 1 for value in figures), (name, figures)
