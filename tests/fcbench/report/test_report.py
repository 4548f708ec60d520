"""The QA report over a fake build directory made of real samples and hand-written stage files."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.formats import read_samples
from fcbench.jsonl import JsonLine
from fcbench.report.page import (
    SECTIONS,
    corrections_section,
    model_scores,
    read_build,
    reject_reasons,
    render_html,
    stage_of_file,
    write_report,
)
from fcbench.stats.tables import compute_stats

REPO = Path(__file__).resolve().parents[3]
SEEDS = REPO / "datasets" / "nestful-math" / "seeds.jsonl"

STAGE1_REJECTS = ["llm.no_tool_call"] * 3 + ["draft.unknown_tool"] * 2
FILTER_REJECTS = ["execution.timeout"] * 2 + ["format.missing_required"]
QA = {"summary": {"samples": 12, "corrected": 9, "queries_rewritten": 4, "calls_added": 3, "calls_removed": 2,
                  "calls_reordered": 1, "arguments_fixed_by_type": {"number": 5, "date": 2, "location": 1},
                  "entries_deleted": 6}}


def _scores(success_rate: float, call_accuracy: float, errors: dict[str, int],
            rates: dict[str, float]) -> dict:
    """A summary in the shape fcbench.score.complexeval.summarise returns."""
    return {"n": 20, "success_rate": success_rate, "call_accuracy": call_accuracy, "completeness": 0.8,
            "correctness": 0.7, "errors": errors,
            "call_errors": {k: v for k, v in errors.items() if k != "stop_early"},
            "param_type_error_rate": rates,
            "param_type_counts": {t: {"errors": 1, "total": 4} for t in rates},
            "by_domain": {"math": {"n": 20, "success_rate": success_rate, "call_accuracy": call_accuracy,
                                   "completeness": 0.8, "correctness": 0.7}}}


def _rejects_lines(path: Path, reasons: list[str]) -> None:
    path.write_text("".join(json.dumps({"id": f"s{i}", "reason": r, "detail": "x"}) + "\n"
                            for i, r in enumerate(reasons)), encoding="utf-8")


def make_build(root: Path) -> Path:
    """<root>/nestful-math/build with every stage file the report reads."""
    build = root / "nestful-math" / "build"
    build.mkdir(parents=True)
    shutil.copyfile(SEEDS, build / "validated.jsonl")
    _rejects_lines(build / "drafts.rejects.jsonl", STAGE1_REJECTS)
    (build / "stage1.summary.json").write_text(json.dumps(
        {"counts": {"drafted": 92, "rejected": 5}, "reasons": {"llm.no_tool_call": 3, "draft.unknown_tool": 2}}))
    filter_lines = [{"id": f"f{i}", "category": "failed_execution" if r.startswith("execution") else "failed_format",
                     "reason": r, "detail": "d", "sample": {}} for i, r in enumerate(FILTER_REJECTS)]
    (build / "validated.rejects.jsonl").write_text("".join(json.dumps(x) + "\n" for x in filter_lines))
    (build / "filter.summary.json").write_text(json.dumps({
        "input": "candidates.jsonl", "total": 87,
        "counts": {"passed": 84, "failed_format": 1, "failed_grounding": 0, "failed_execution": 2,
                   "failed_reproduction": 0},
        "reasons": {"execution.timeout": 2, "format.missing_required": 1},
        "grounding_reported": 3, "grounding_notes": [], "outputs": {}}))
    (build / "stage2.qa.json").write_text(json.dumps(QA))
    for slug, scores in {
        "gpt-4o": _scores(0.65, 0.81, {"func_error": 2, "param_missing": 1, "hallucination": 0, "value_error": 3,
                                        "stop_early": 1}, {"number": 0.25, "other": 0.1}),
        "qwen3-8b": _scores(0.40, 0.62, {"func_error": 5, "param_missing": 2, "hallucination": 1, "value_error": 3,
                                          "stop_early": 1}, {"number": 0.45, "other": 0.3}),
    }.items():
        (build / "eval" / slug).mkdir(parents=True)
        (build / "eval" / slug / "scores.json").write_text(json.dumps(scores))
    return build


@pytest.fixture
def build(tmp_path: Path) -> Path:
    return make_build(tmp_path)


def _images(page: str) -> list[str]:
    return re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)


def test_json_numbers_match_the_stage_files(build: Path) -> None:
    files = write_report(build)
    data = json.loads(files.json.read_text())
    expected = compute_stats(read_samples(SEEDS, "fcbench"))
    assert data["dataset"]["source"] == "validated.jsonl"
    assert data["dataset"]["samples"] == 84 == expected.samples
    assert data["dataset"]["difficulty"] == expected.difficulty == {"none": 0, "single": 0, "multiple": 0,
                                                                    "nested": 84}
    assert data["dataset"]["nesting_depth"] == {str(k): v for k, v in expected.nesting_depth.items()}
    assert sum(data["dataset"]["steps"].values()) == 84
    assert data["dataset"]["domains"][0] == expected.domains[0].as_dict()
    assert data["rejects"]["stage1"]["reasons"] == {"llm.no_tool_call": 3, "draft.unknown_tool": 2}
    assert data["rejects"]["filter"]["reasons"] == {"execution.timeout": 2, "format.missing_required": 1}
    assert data["rejects"]["filter"]["summary_counts"]["passed"] == 84
    assert list(data["rejects"]) == ["stage1", "filter"]  # pipeline order, not file-name order
    assert data["summary"]["samples"] == 84
    assert data["summary"]["filter_pass_rate"] == 84 / 87
    assert data["summary"]["best_model"] == "gpt-4o"
    assert data["summary"]["splits"] == {}
    assert data["evaluations"]["qwen3-8b"]["errors"]["func_error"] == 5
    assert data["evaluations"]["gpt-4o"]["param_type_error_rate"] == {"number": 0.25, "other": 0.1}
    assert data["corrections"]["figures"]["queries_rewritten"] == 4
    assert data["corrections"]["figures"]["arguments_fixed"] == 8
    assert data["corrections"]["breakdowns"]["arguments_fixed_by_type"] == {"number": 5, "date": 2, "location": 1}
    assert data["problems"] == []


def test_html_has_every_section_and_its_images(build: Path) -> None:
    files = write_report(build)
    page = files.html.read_text()
    for key, heading in SECTIONS.items():
        assert f'<section id="{key}"><h2>{heading}</h2>' in page
    # dataset 4 (context length, difficulty, steps, depth) + corrections 2 + rejects 1
    # + evaluation 2 (outcomes, param types)
    images = _images(page)
    assert len(images) == files.images == 9
    assert "avg context tokens (cl100k_base)" in page and "args from responses" in page
    assert all(__import__("base64").b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n" for png in images)
    assert "http://" not in page and "https://" not in page  # nothing fetched from the network
    assert "gpt-4o" in page and "65.0%" in page and "96.6%" in page  # best model, pass rate 84/87
    assert "No problems found" in page


def test_same_inputs_give_byte_identical_outputs(build: Path) -> None:
    first = write_report(build)
    html_bytes, json_bytes = first.html.read_bytes(), first.json.read_bytes()
    second = write_report(build)  # the report files themselves are not inputs
    assert second.html.read_bytes() == html_bytes
    assert second.json.read_bytes() == json_bytes


def test_missing_and_broken_files_are_problems_not_crashes(build: Path) -> None:
    (build / "filter.summary.json").unlink()
    (build / "stage1.summary.json").write_text('{"counts": {"drafted": 9')
    with (build / "drafts.rejects.jsonl").open("a") as handle:
        handle.write("{not json\n")
        handle.write('{"id": "s9"}\n')
    (build / "eval" / "gpt-4o" / "scores.json").unlink()
    (build / "eval" / "qwen3-8b" / "scores.json").write_text('{"accuracy": 0.5}')
    files = write_report(build)
    problems = json.loads(files.json.read_text())["problems"]
    assert "filter: validated.jsonl exists but filter.summary.json is missing" in problems
    assert any(p.startswith("stage1.summary.json: not valid JSON") for p in problems)
    assert any(p.startswith("drafts.rejects.jsonl:6: not valid JSON") for p in problems)
    assert "drafts.rejects.jsonl:7: reject without a reason" in problems
    assert "eval/gpt-4o/scores.json: missing (evaluation not scored)" in problems
    assert any(p.startswith("eval/qwen3-8b/scores.json: not a ComplexEval summary") for p in problems)
    page = files.html.read_text()
    assert "No evaluation run yet." in page
    assert "stage1.summary.json: not valid JSON" in page
    data = json.loads(files.json.read_text())
    assert data["summary"]["filter_pass_rate"] is None
    assert data["rejects"]["stage1"]["reasons"] == {"llm.no_tool_call": 3, "draft.unknown_tool": 2, "(no reason)": 1}


def test_empty_build_says_each_section_has_no_data(tmp_path: Path) -> None:
    build = tmp_path / "fresh" / "build"
    files = write_report(build)
    page = files.html.read_text()
    assert files.images == 0
    for line in ("No stage output yet", "No annotation QA yet", "No stage has written a rejects",
                 "No evaluation run yet."):
        assert line in page
    assert json.loads(files.json.read_text())["problems"] == [
        f"{build}: build directory does not exist (no stage has run)"]


def test_broken_dataset_lines_are_counted_and_named(build: Path) -> None:
    with (build / "validated.jsonl").open("a") as handle:
        handle.write('{"id": "broken"}\n')
    data = read_build(build).as_dict()
    assert data["dataset"]["samples"] == 84 and data["dataset"]["rejected"] == 1
    assert any(p.startswith("validated.jsonl:85: ") for p in data["problems"])


def test_rejects_disagreeing_with_their_summary_is_a_problem(build: Path) -> None:
    _rejects_lines(build / "validated.rejects.jsonl", ["execution.timeout"])
    problems = read_build(build).problems
    assert ("filter: validated.rejects.jsonl (1 rejects) disagrees with filter.summary.json (3 by reason)"
            in problems)


def test_summary_reasons_are_used_when_the_rejects_file_is_missing(build: Path) -> None:
    (build / "drafts.rejects.jsonl").unlink()
    report = read_build(build)
    stage1 = next(s for s in report.stages if s.stage == "stage1")
    assert stage1.reasons == {"llm.no_tool_call": 3, "draft.unknown_tool": 2}
    assert "stage1: drafts.rejects.jsonl is missing but stage1.summary.json counts 5 rejects" in report.problems


def test_splits_come_from_the_exported_parquet_files(build: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data_dir = build / "export" / "data"
    data_dir.mkdir(parents=True)
    pq.write_table(pa.table({"id": [str(i) for i in range(60)]}), data_dir / "train-00000-of-00002.parquet")
    pq.write_table(pa.table({"id": [str(i) for i in range(10)]}), data_dir / "train-00001-of-00002.parquet")
    pq.write_table(pa.table({"id": [str(i) for i in range(14)]}), data_dir / "test-00000-of-00001.parquet")
    assert read_build(build).headline.splits == {"test": 14, "train": 70}


# ----------------------------------------------------------------------------- pure pieces
def test_reject_reasons_orders_by_count_then_name() -> None:
    lines = [JsonLine(1, {"reason": "b"}), JsonLine(2, {"reason": "a"}), JsonLine(3, {"reason": "b"}),
             JsonLine(4, error="not valid JSON")]
    reasons, problems = reject_reasons(lines, "x.rejects.jsonl")
    assert list(reasons.items()) == [("b", 2), ("a", 1)]
    assert problems == ["x.rejects.jsonl:4: not valid JSON"]


def test_corrections_accept_the_annotation_error_vocabulary() -> None:
    section, problems = corrections_section({"query_rewritten": 2, "call_missing": 1, "order_error": 4,
                                             "ambiguous_response": 3, "agreement": 0.75}, "stage2.qa.json")
    assert problems == []
    assert section.figures == {"queries_rewritten": 2, "calls_added": 1, "calls_reordered": 4,
                               "entries_deleted": 3, "agreement": 0.75}
    assert corrections_section([1, 2], "stage2.qa.json") == (None, ["stage2.qa.json: expected a JSON object"])


def test_scores_accept_the_score_command_output() -> None:
    wrapped = {"metric": "complexeval", "summary": _scores(0.5, 0.6, {"func_error": 1}, {}), "items": []}
    scores, problems = model_scores("m", wrapped, "eval/m/scores.json")
    assert problems == [] and scores.success_rate == 0.5 and scores.errors == {"func_error": 1}


def test_stage_names_follow_the_file_conventions() -> None:
    assert [stage_of_file(n) for n in ("drafts.rejects.jsonl", "templates.rejects.jsonl", "candidates.rejects.jsonl",
                                       "validated.rejects.jsonl", "export.summary.json", "stage2.summary.json")] == [
        "stage1", "stage2", "stage3", "filter", "export", "stage2"]


def test_report_command_writes_both_files(build: Path, tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("pipelines:\n  nestful-math:\n    dataset_dir: nestful-math\n")
    result = CliRunner().invoke(app, ["report", "nestful-math", "--file", str(pipelines), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["summary"]["best_model"] == "gpt-4o"
    assert (build / "report.html").is_file() and (build / "report.json").is_file()
    result = CliRunner().invoke(app, ["report", "nope", "--file", str(pipelines)])
    assert result.exit_code == 1


def test_completeness_and_correctness_are_on_their_0_to_2_scale_and_name_their_judges(tmp_path):
    """Issue: the report showed ComplexEval's 0-2 scores as percentages ("200.0 %") and never said
    the judges were rule-based."""
    build = tmp_path / "build"
    scores = _scores(1.0, 1.0, {"func_error": 0}, {})
    scores.update(completeness=2.0, correctness=1.5,
                  judges={"completeness": "naive_completeness_judge", "correctness": "naive_correctness_judge",
                          "scale": "0-2", "rule_based": True})
    (build / "eval" / "m").mkdir(parents=True)
    (build / "eval" / "m" / "scores.json").write_text(json.dumps(scores))
    html = write_report(build, title="t").html.read_text()
    assert "2.00 / 2" in html and "1.50 / 2" in html and "200.0" not in html
    assert "rule-based stand-ins" in html and "not LLM judges" in html


def test_results_in_the_papers_layouts_put_each_layouts_models_together(tmp_path: Path) -> None:
    """evaluate --protocol writes its paper-layout tables in scores.json (ComplexEval's in the model
    folder, the others' one folder down): the report shows one table per layout, a row per model."""
    from fcbench.score.paper_tables import callnavi_table, complexfuncbench_table

    build = tmp_path / "build"
    summary = _scores(0.5, 0.75, {}, {})
    summary["by_domain"] = {"Hotels": {"n": 2, "success_rate": 0.5, "call_accuracy": 0.75, "completeness": 1.0,
                                       "correctness": 2.0}}
    for model, routing in (("gpt-4o", 0.9), ("qwen3-8b", 0.5)):
        folder = build / "eval" / model
        (folder / "callnavi").mkdir(parents=True)
        (folder / "scores.json").write_text(json.dumps(
            {"summary": summary, "tables": [complexfuncbench_table(model, summary).to_json()]}))
        figures = {"by_difficulty": {"easy": {"routing_exact_match": routing}}, "macro": {"routing_exact_match": routing}}
        (folder / "callnavi" / "scores.json").write_text(json.dumps(
            {"protocol": "callnavi", "tables": [callnavi_table(model, figures).to_json()], "summary": figures}))
    only_protocols = build / "eval" / "llama" / "nestful-icl-3shot"
    only_protocols.mkdir(parents=True)
    (only_protocols / "scores.json").write_text(json.dumps({"tables": [{"protocol": "nestful-icl", "title": "broken",
                                                                        "columns": [{"group": "", "name": "x"}],
                                                                        "rows": [{"model": "llama", "cells": []}]}]}))
    report = read_build(build)
    tables = report.paper_tables
    assert [t["protocol"] for t in tables] == ["complexfuncbench", "callnavi"]
    assert [row["model"] for row in tables[1]["rows"]] == ["gpt-4o", "qwen3-8b"]
    assert [row["cells"][0] for row in tables[1]["rows"]] == ["90.0", "50.0"]
    # a model folder holding only other protocols' evaluations is not "missing"; a broken table is named
    assert [p for p in report.problems if p.startswith("eval/")] == [
        "eval/llama/nestful-icl-3shot/scores.json: `tables` is not a list of paper tables"]
    assert report.as_dict()["paper_tables"] == tables
    page = render_html(report, [])
    assert '<section id="papers"><h2>Results in the papers\' layouts</h2>' in page
    assert '<th class="n" colspan="4">Hotels</th>' in page and '<th class="n" colspan="4">API Routing</th>' in page
    assert page.index('id="papers"') < page.index('id="problems"')


def test_a_build_without_protocol_tables_reports_as_before(build: Path) -> None:
    report = read_build(build)
    assert report.paper_tables == [] and "paper_tables" not in report.as_dict()
    assert 'id="papers"' not in render_html(report, [])
