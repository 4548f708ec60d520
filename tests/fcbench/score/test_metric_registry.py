"""One metric registry: every metric registered where it is defined, looked up by one name by the
`score` command and by code; no second table beside it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fcbench.errors import UserError
from fcbench.evaluate.score_files import ScoreRequest, score_files
from fcbench.score import METRICS, check_bfcl, match_step, score_complexeval, score_confetti, score_nestful
from fcbench.score.registry import file_metrics

REPO = Path(__file__).resolve().parents[3]


def test_each_metric_is_registered_next_to_its_scorer():
    assert METRICS.get("bfcl").score is check_bfcl
    assert METRICS.get("call_match").score is match_step
    assert METRICS.get("nestful").score is score_nestful
    assert {name: METRICS.get(name).llm_judged for name in ("complexeval", "confetti", "nestful")} == {
        "complexeval": True, "confetti": True, "nestful": False}
    assert METRICS.get("complexeval").score is score_complexeval and METRICS.get("confetti").score is score_confetti
    # the registration is a decorator on the function, in the family's own module
    for module, name in (("bfcl", "check_bfcl"), ("nestful", "score_nestful"), ("confetti", "score_confetti")):
        tree = ast.parse((REPO / "fcbench" / "score" / f"{module}.py").read_text())
        function = next(node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == name)
        assert any(ast.unparse(decorator).startswith("metric(") for decorator in function.decorator_list)


def test_the_score_command_reads_files_with_the_same_entries():
    assert [metric.name for metric in file_metrics()] == sorted(
        ["bfcl", "nestful", "callnavi", "complexeval", "confetti"], key=METRICS.names().index)
    with pytest.raises(UserError, match=r"unknown metric 'nope', available: bfcl, .*confetti"):
        score_files("nope", ScoreRequest(Path("x.jsonl")))
    with pytest.raises(UserError, match="unknown metric 'call_match'"):  # a scorer code calls, no file reader
        score_files("call_match", ScoreRequest(Path("x.jsonl")))


def test_no_second_metric_table():
    """The two tables this registry replaced (METRIC_FAMILIES, METRICS in score_files) are gone."""
    for path in (REPO / "fcbench").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            targets = [t.id for t in getattr(node, "targets", [getattr(node, "target", None)]) if isinstance(t, ast.Name)]
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
                assert not {"METRIC_FAMILIES", "METRICS"} & set(targets), f"{path}: a metric table"
