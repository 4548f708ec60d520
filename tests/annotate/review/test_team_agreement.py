"""Team logic without a server: the assignment of tasks to annotators and the agreement measures,
checked against published worked examples."""

from __future__ import annotations

from collections import Counter

import pytest

from annotate.review.agreement import (ACCEPT, REJECT, PairAgreement, UnitAgreement, cohen_kappa,
                                krippendorff_alpha_nominal, summarise_agreement)
from annotate.studio.team import annotator_emails, assign_in_tasks, assign_tasks
from fcbench.errors import UserError


def test_krippendorff_alpha_matches_the_papers_nominal_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
    # 12 units, missing values; nominal alpha = 0.743 (unit 12 has one value and is left out)
    units = [[1, 1, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4], [4, 4, 4, 4],
             [1, 1, 2, 1], [2, 2, 2, 2], [5, 5, 5], [1, 1], [3]]
    alpha = krippendorff_alpha_nominal([[str(value) for value in unit] for unit in units])
    assert alpha == pytest.approx(0.743, abs=0.0005)


def test_alpha_is_undefined_without_variation_and_negative_for_systematic_disagreement() -> None:
    assert krippendorff_alpha_nominal([[ACCEPT, ACCEPT], [ACCEPT, ACCEPT]]) is None
    assert krippendorff_alpha_nominal([[ACCEPT, REJECT], [REJECT, ACCEPT]]) < 0


def test_cohen_kappa_matches_the_textbook_example() -> None:
    # 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15 -> kappa 0.4
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([]) is None and cohen_kappa([("y", "y")]) is None


def test_a_unit_is_disputed_by_a_different_decision_or_a_different_path() -> None:
    agree = UnitAgreement(1, "a", {"x": ACCEPT, "y": ACCEPT}, [PairAgreement(("x", "y"), True, True, 1.0)])
    paths = UnitAgreement(2, "b", {"x": ACCEPT, "y": ACCEPT}, [PairAgreement(("x", "y"), True, False, 0.5)])
    decision = UnitAgreement(3, "c", {"x": ACCEPT, "y": REJECT}, [PairAgreement(("x", "y"), False)])
    assert (agree.disputed, paths.reason(), decision.reason()) == (False, "paths_differ", "decisions_differ")
    summary = summarise_agreement([agree, paths, decision, UnitAgreement(4, "d", {"x": ACCEPT})])
    assert summary["units"] == 3 and summary["disputed"] == 2
    assert summary["exact_path_match"] == 0.5 and summary["per_call_agreement"] == 0.75
    assert summary["decision_agreement"] == round(2 / 3, 4)


def test_assignment_is_deterministic_even_and_independent_of_push_order() -> None:
    emails = annotator_emails(5)
    ids = [f"sample-{i}" for i in range(1000)]
    assigned = assign_tasks(ids, emails, 2, seed=7)
    assert assigned == assign_tasks(list(reversed(ids)), emails, 2, seed=7)
    assert all(len(set(chosen)) == 2 and set(chosen) <= set(emails) for chosen in assigned.values())
    load = Counter(email for chosen in assigned.values() for email in chosen)
    assert max(load.values()) - min(load.values()) < 120  # about 400 each
    assert assign_tasks(ids, emails, 2, seed=8) != assigned  # the seed decides
    tasks = [{"data": {"sample_id": sample_id}} for sample_id in ids[:10]]
    per_annotator = assign_in_tasks(tasks, emails, 3, seed=7)
    assert sum(per_annotator.values()) == 30 and all(task["data"]["overlap"] == 3 for task in tasks)


def test_overlap_beyond_the_team_is_refused() -> None:
    with pytest.raises(UserError, match="--overlap must be between 1 and --annotators"):
        assign_tasks(["a"], annotator_emails(2), 3, seed=0)
