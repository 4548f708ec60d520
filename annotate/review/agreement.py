"""Inter-annotator agreement of a team (pure): on call paths and on the accept/reject decision.

Each task annotated by several annotators is a *unit*: per annotator, a decision (`accept` when
the annotator kept or fixed the draft, `reject` when they rejected it) and, for accepted units,
the gold path they wrote. Reported:

- exact path match: the share of annotator pairs (both accepting) whose paths have the same calls
  in the same steps (`annotate.review.qa.agreement`, the shared scorer's call matching);
- per-call agreement: the mean Dice over calls of those pairs (2 x matched / (calls A + calls B));
- Krippendorff's alpha (nominal) on the decisions: chance-corrected, any number of annotators per
  unit, units with a single decision left out (Krippendorff 2011, "Computing Krippendorff's
  alpha-reliability", coincidence matrix form);
- Cohen's kappa on the decisions over every pair of annotations of a unit (pooled pairs; with
  two annotators per task it is the usual kappa).

A unit is *disputed* when decisions differ, or when two accepting annotators' paths are not an
exact match: it goes to adjudication instead of having one annotation picked.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Sequence

ACCEPT, REJECT = "accept", "reject"


@dataclass(frozen=True)
class PairAgreement:
    annotators: tuple[str, str]
    same_decision: bool
    exact_path: bool | None = None  # None unless both accepted
    call_agreement: float | None = None


@dataclass
class UnitAgreement:
    """One task's annotations by the team."""

    task_id: int
    sample_id: str | None
    decisions: dict[str, str]  # annotator -> accept | reject
    pairs: list[PairAgreement] = field(default_factory=list)

    @property
    def disputed(self) -> bool:
        return any(not pair.same_decision or pair.exact_path is False for pair in self.pairs)

    def reason(self) -> str | None:
        if any(not pair.same_decision for pair in self.pairs):
            return "decisions_differ"
        if any(pair.exact_path is False for pair in self.pairs):
            return "paths_differ"
        return None


def krippendorff_alpha_nominal(units: Sequence[Sequence[str]]) -> float | None:
    """Alpha for nominal values; each unit is the list of values its annotators gave. None when
    no unit has two values or every value is the same category (no variation to judge)."""
    coincidences: Counter[tuple[str, str]] = Counter()
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for i, first in enumerate(values):
            for j, second in enumerate(values):
                if i != j:
                    coincidences[(first, second)] += 1 / (m - 1)
    n_c: Counter[str] = Counter()
    for (first, _), weight in coincidences.items():
        n_c[first] += weight
    n = sum(n_c.values())
    if n <= 1 or len(n_c) < 2:
        return None
    observed = sum(weight for (first, second), weight in coincidences.items() if first != second)
    expected = sum(n_c[a] * n_c[b] for a in n_c for b in n_c if a != b) / (n - 1)
    return 1.0 - observed / expected


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Kappa over pooled pairs of decisions; None without pairs or when chance agreement is 1."""
    if not pairs:
        return None
    observed = sum(first == second for first, second in pairs) / len(pairs)
    firsts = Counter(first for first, _ in pairs)
    seconds = Counter(second for _, second in pairs)
    categories = set(firsts) | set(seconds)
    expected = sum(firsts[c] / len(pairs) * seconds[c] / len(pairs) for c in categories)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def summarise_agreement(units: Sequence[UnitAgreement]) -> dict[str, Any]:
    """The numbers the pull summary and stage2.qa.json report."""
    multi = [unit for unit in units if len(unit.decisions) >= 2]
    path_pairs = [pair for unit in multi for pair in unit.pairs if pair.exact_path is not None]
    decision_pairs = [(unit.decisions[a], unit.decisions[b]) for unit in multi
                      for a, b in combinations(sorted(unit.decisions), 2)]
    alpha = krippendorff_alpha_nominal([list(unit.decisions.values()) for unit in multi])
    kappa = cohen_kappa(decision_pairs)
    return {
        "units": len(multi),
        "annotation_pairs": len(decision_pairs),
        "decision_agreement": _rate(sum(a == b for a, b in decision_pairs), len(decision_pairs)),
        "krippendorff_alpha_decision": None if alpha is None else round(alpha, 4),
        "cohen_kappa_decision": None if kappa is None else round(kappa, 4),
        "path_pairs": len(path_pairs),
        "exact_path_match": _rate(sum(bool(pair.exact_path) for pair in path_pairs), len(path_pairs)),
        "per_call_agreement": (round(sum(pair.call_agreement or 0.0 for pair in path_pairs) / len(path_pairs), 4)
                               if path_pairs else None),
        "disputed": sum(unit.disputed for unit in multi),
    }


def _rate(count: int, total: int) -> float | None:
    return round(count / total, 4) if total else None
