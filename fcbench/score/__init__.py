"""The shared scorer: pure metric families (parsed data in, typed results out, no I/O).

Each family is a function registered under a name where it is defined (`@metric(name)`, the one
registry `fcbench.score.registry.METRICS`), so the CLI (`build-dataset score`) and the pipeline's
QA steps pick one by name; importing this package registers them all:

- `bfcl`: BFCL's AST checker, `check_bfcl(question, answer, prediction, category, compat)`;
- `call_match`: layered call equivalence and Hungarian pairing of a step, `match_step(...)`;
- `callnavi`: CallNavi's per-output checks, `score_callnavi(output, ground_truth, compat)`;
- `callnavi_election_stability` / `callnavi_levenshtein_stability`: stability over repeated runs;
- `nestful`: NESTful's sequence metrics and win rate, `score_nestful(lines, gold_by_id, compat, executor)`.
- `complexeval`: ComplexFuncBench's multi-step protocol, `score_complexeval(samples, trajectories)`;
- `confetti`: CONFETTI's soft AST, chain, dialog-act and validity metrics, `score_confetti(samples, predictions)`.
  (its dialog-act classifier and validity judge are pluggable; the LLM ones are `fcbench.evaluate.judges_confetti`).
"""

from __future__ import annotations

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
from fcbench.score.registry import METRICS, Metric, metric

__all__ = [
    "METRICS",
    "Metric",
    "metric",
    "BfclVerdict",
    "CallNaviScore",
    "ComplexEvalReport",
    "ComplexEvalSession",
    "ConfettiReport",
    "MatchDecision",
    "NestfulReport",
    "StepMatch",
    "check_bfcl",
    "election_stability",
    "levenshtein_stability",
    "match_call",
    "match_step",
    "score_callnavi",
    "score_complexeval",
    "score_confetti",
    "score_nestful",
    "score_trajectory",
]
