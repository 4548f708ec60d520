"""The shared scorer: pure metric families (parsed data in, typed results out, no I/O).

Each family is a function registered under a name, so the CLI (`build-dataset score`) and the
pipeline's QA steps pick one by the name a pipeline declares:

- `bfcl_ast`: BFCL's AST checker, `check_bfcl(question, answer, prediction, category, compat)`;
- `call_match`: layered call equivalence and Hungarian pairing of a step, `match_step(...)`;
- `callnavi`: CallNavi's per-output checks, `score_callnavi(output, ground_truth, compat)`;
- `callnavi_election_stability` / `callnavi_levenshtein_stability`: stability over repeated runs;
- `nestful`: NESTful's sequence metrics and win rate, `score_nestful(lines, gold_by_id, compat, executor)`.
- `complexeval`: ComplexFuncBench's multi-step protocol, `score_complexeval(samples, trajectories)`;
- `confetti`: CONFETTI's soft AST, chain, dialog-act and validity metrics, `score_confetti(samples, predictions)`.
  (its dialog-act classifier and validity judge are pluggable; the LLM ones are `fcbench.evaluate.judges_confetti`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fcbench.score.bfcl import BfclVerdict, check_bfcl
from fcbench.score.callnavi import (
    CallNaviScore,
    election_stability,
    levenshtein_stability,
    score_callnavi,
)
from fcbench.score.matching import MatchDecision, StepMatch, match_call, match_step
from fcbench.score.nestful import NestfulReport, score_nestful
from fcbench.score.complexeval import ComplexEvalReport, ComplexEvalSession, score_complexeval, score_trajectory
from fcbench.score.confetti import ConfettiReport, score_confetti

MetricFamily = Callable[..., Any]

METRIC_FAMILIES: dict[str, MetricFamily] = {
    "bfcl_ast": check_bfcl,
    "call_match": match_step,
    "callnavi": score_callnavi,
    "callnavi_election_stability": election_stability,
    "callnavi_levenshtein_stability": levenshtein_stability,
    "nestful": score_nestful,
    "complexeval": score_complexeval,
    "confetti": score_confetti,
}


class UnknownMetricFamily(KeyError):
    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


def metric_family(name: str) -> MetricFamily:
    """The scorer registered under `name`; an unknown name lists the known ones."""
    try:
        return METRIC_FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(METRIC_FAMILIES))
        raise UnknownMetricFamily(f"unknown metric family {name!r} (known: {known})") from None


def register_metric_family(name: str, scorer: MetricFamily) -> None:
    """Add a family (e.g. a benchmark-specific scorer); a name is never silently replaced."""
    if name in METRIC_FAMILIES and METRIC_FAMILIES[name] is not scorer:
        raise ValueError(f"metric family {name!r} is already registered")
    METRIC_FAMILIES[name] = scorer


__all__ = [
    "METRIC_FAMILIES",
    "BfclVerdict",
    "CallNaviScore",
    "ComplexEvalReport",
    "ComplexEvalSession",
    "ConfettiReport",
    "MatchDecision",
    "MetricFamily",
    "NestfulReport",
    "StepMatch",
    "UnknownMetricFamily",
    "check_bfcl",
    "election_stability",
    "levenshtein_stability",
    "match_call",
    "match_step",
    "metric_family",
    "register_metric_family",
    "score_callnavi",
    "score_complexeval",
    "score_confetti",
    "score_nestful",
    "score_trajectory",
]
