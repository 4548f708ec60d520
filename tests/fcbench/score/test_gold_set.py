"""The one alignment of prediction lines to a gold set (fcbench.score.gold_set) every family uses."""

from __future__ import annotations

import pytest

from fcbench.score.gold_set import GoldSetError, PredictionLine, align_to_gold, item_id, self_gold_alignment


def test_first_line_answers_later_ones_are_duplicates_and_strangers_are_foreign() -> None:
    lines = [{"id": "b", "answer": 1}, {"id": "x"}, {"id": "b", "answer": 2}, PredictionLine(4, error="bad JSON"),
             {"id": None}, {"id": True}, {"id": 7}]
    alignment = align_to_gold(["a", "b", "7"], lines, item_id)
    assert list(alignment.pairs()) == [("a", None), ("b", {"id": "b", "answer": 1}), ("7", {"id": 7})]
    assert alignment.missing == ["a"] and not alignment.complete
    assert alignment.listing() == {
        "gold": 3, "answered": 2, "missing": ["a"], "duplicate_lines": 1, "foreign_lines": 1, "unreadable_lines": 3,
        "duplicates": [{"line": 3, "id": "b", "first": 1}],
        "foreign": [{"line": 2, "id": "x"}],
        "unreadable": [{"line": 4, "error": "bad JSON"}, {"line": 5, "error": "no id"}, {"line": 6, "error": "no id"}],
    }


def test_a_gold_with_an_id_twice_is_refused() -> None:
    with pytest.raises(GoldSetError, match="the gold has the id 'a' twice"):
        align_to_gold(["a", "b", "a"], [], item_id)


def test_a_file_that_carries_its_own_gold_can_only_have_duplicates() -> None:
    alignment = self_gold_alignment([{"id": "b"}, {"id": "a"}, {"id": "b"}], item_id)
    assert alignment.gold == ["b", "a"] and alignment.complete
    assert alignment.listing()["duplicates"] == [{"line": 3, "id": "b", "first": 1}]
