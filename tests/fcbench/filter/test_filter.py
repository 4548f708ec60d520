"""The filter stage: one candidate of each failure kind gets its reason, rejects keep their sample,
the summary counts every reason, and a killed run resumes to the same files as a clean run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from typer.testing import CliRunner

from conftest import REPO
from filter_cases import EXPECTED, candidate_line, one_of_each_failure, write_pipeline
from fcbench.cli import app
from fcbench.jsonl import dumps_line
from fcbench.sample import Call, Sample

def _run_filter_cli(pipelines: Path) -> dict:
    result = CliRunner().invoke(app, ["filter", "toy", "--file", str(pipelines), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_each_failure_gets_its_reason_and_the_summary_counts_them(tmp_path):
    summary = _run_filter_cli(write_pipeline(tmp_path, one_of_each_failure()))
    build = tmp_path / "toy" / "build"
    kept = [json.loads(line) for line in (build / "validated.jsonl").read_text().splitlines()]
    rejects = [json.loads(line) for line in (build / "validated.rejects.jsonl").read_text().splitlines()]

    assert [sample["id"] for sample in kept] == ["passes", "nested_passes"]
    assert kept[1]["calls"][1][0]["response"] == {"result": 9}  # executed responses are stored on the calls
    outcome = {reject["sample"]["id"]: (reject["category"], reject["reason"]) for reject in rejects if reject["sample"]}
    assert outcome == {k: v for k, v in EXPECTED.items() if v[0] != "passed"}
    broken = [reject for reject in rejects if reject["sample"] is None]
    assert len(broken) == 1 and broken[0]["reason"] == "format.schema" and ":14" in broken[0]["id"]
    assert all(reject["detail"] for reject in rejects)  # every reject says what exactly

    assert summary["total"] == 14
    assert summary["counts"] == {"passed": 2, "failed_format": 6, "failed_text": 1, "failed_grounding": 1, "failed_gold": 0,
                                 "failed_execution": 1, "failed_reproduction": 3}
    text = next(reject for reject in rejects if reject["reason"] == "text.joined_clauses")
    assert text["detail"] == "joined_clauses: 'then and' ('then' runs into 'and')"
    assert summary["reasons"]["format.schema"] == 1 and summary["reasons"]["execution.tool_error"] == 1
    assert json.loads((build / "filter.summary.json").read_text())["counts"] == summary["counts"]
    assert not (build / "filter.journal.jsonl").exists()
    # the kept samples' context is counted where they are made, the same count any reader makes of the file
    from fcbench.stats.tokens import context_tokens

    counts = [context_tokens(Sample.model_validate(sample)) for sample in kept]
    assert summary["context"] == {"encoding": "cl100k_base", "samples": 2, "mean": round(sum(counts) / 2, 1),
                                  "max": max(counts), "over_32k": 0} and min(counts) > 0


def test_grounding_in_report_mode_keeps_the_sample_and_lists_the_value(tmp_path):
    lines = [line for line in one_of_each_failure() if '"ungrounded"' in line]
    summary = _run_filter_cli(write_pipeline(tmp_path, lines, grounding="report"))
    assert summary["counts"]["passed"] == 1
    assert summary["grounding_notes"] == {"ungrounded": ["ungrounded value c1.a=7", "ungrounded value c1.b=8"]}


def test_a_pipeline_may_require_nested_calls(tmp_path):
    """`min_nested_calls: 1`: a path whose calls read no earlier output is a gold reject of its own,
    counted in the summary; a nested path of the same run is kept."""
    lines = [line for line in one_of_each_failure() if '"passes"' in line or '"nested_passes"' in line]
    summary = _run_filter_cli(write_pipeline(tmp_path, lines, min_nested_calls=1))
    rejects = [json.loads(line) for line in (tmp_path / "toy" / "build" / "validated.rejects.jsonl").read_text().splitlines()]
    assert summary["counts"]["passed"] == 1 and summary["counts"]["failed_gold"] == 1
    assert summary["reasons"] == {"gold.too_few_nested_calls": 1}
    assert [(row["id"], row["category"], row["reason"]) for row in rejects] == \
        [("passes", "failed_gold", "gold.too_few_nested_calls")]
    assert "at least 1" in rejects[0]["detail"]
    # two nested calls asked: the one-reference path is rejected too (every candidate rejected: exit 1)
    (tmp_path / "two").mkdir()
    result = CliRunner().invoke(app, ["filter", "toy", "--file", str(write_pipeline(tmp_path / "two", lines, min_nested_calls=2))])
    assert result.exit_code == 1
    rejects = [json.loads(line) for line in (tmp_path / "two" / "toy" / "build" / "validated.rejects.jsonl").read_text().splitlines()]
    assert [row["reason"] for row in rejects] == ["gold.too_few_nested_calls"] * 2


def test_a_killed_filter_resumes_to_the_same_files_as_a_clean_run(tmp_path):
    slow = [candidate_line(f"s{i:02d}", f"Add {i} and {i + 1}.",
                    [[Call(label="c1", name="slow_add", arguments={"a": i, "b": i + 1})]], answer=2 * i + 1)
            for i in range(16)]
    candidates = [dumps_line(line) for line in slow] + one_of_each_failure()[:3]
    clean_dir, killed_dir = tmp_path / "clean", tmp_path / "killed"
    for folder in (clean_dir, killed_dir):
        folder.mkdir()
        write_pipeline(folder, candidates)
    runner = textwrap.dedent("""\
        import sys
        from pathlib import Path
        from fcbench.config import load_pipelines
        from fcbench.environments.from_config import open_environment
        from fcbench.filter.single import FilterPaths, run_filter
        from fcbench.formats import read_samples
        pipeline = load_pipelines(Path(sys.argv[1])).get_pipeline("toy")
        items = list(read_samples(pipeline.resolve("toy/candidates.jsonl"), "fcbench"))
        with open_environment(pipeline, [i for i in items if hasattr(i, "calls")]) as env:
            run_filter(items, env, pipeline.stages.filter, FilterPaths.in_dir(pipeline.build_dir), "candidates",
                       batch_size=2)
        """)
    command = [sys.executable, "-c", runner]
    subprocess.run(command + [str(clean_dir / "pipelines.yaml")], check=True, cwd=REPO, timeout=120)

    journal = killed_dir / "toy" / "build" / "filter.journal.jsonl"
    process = subprocess.Popen(command + [str(killed_dir / "pipelines.yaml")], cwd=REPO, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not journal.exists() or len(journal.read_text().splitlines()) < 4):
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the stage and its workers, mid-run
    process.wait()
    decided_before_kill = len(journal.read_text().splitlines())
    assert 4 <= decided_before_kill < len(candidates)
    assert not (killed_dir / "toy" / "build" / "validated.jsonl").exists()

    summary = _run_filter_cli(killed_dir / "pipelines.yaml")
    assert summary["resumed"] >= 4
    for name in ("validated.jsonl", "validated.rejects.jsonl"):
        assert (killed_dir / "toy" / "build" / name).read_bytes() == (clean_dir / "toy" / "build" / name).read_bytes()
    clean_summary = json.loads((clean_dir / "toy" / "build" / "filter.summary.json").read_text())
    killed_summary = json.loads((killed_dir / "toy" / "build" / "filter.summary.json").read_text())
    for key in ("total", "counts", "reasons", "grounding_notes"):
        assert killed_summary[key] == clean_summary[key]


def test_the_filter_reads_the_junior_filled_candidates_when_annotators_fill_stage3(tmp_path):
    from fcbench.config import load_pipelines
    from fcbench.stage import filter_input

    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("pipelines:\n  a:\n    dataset_dir: a\n    stages: {stage3: {fill: annotators}}\n"
                         "  b:\n    dataset_dir: b\n    stages: {stage3: {fill: llm}}\n")
    config = load_pipelines(pipelines)
    assert filter_input(config.get_pipeline("a")).path.name == "candidates.filled.jsonl"
    assert filter_input(config.get_pipeline("b")).path.name == "candidates.jsonl"


def test_an_undecided_semantic_check_rejects_and_is_decided_again_on_a_rerun(tmp_path):
    """Fail closed: a judge without a usable answer is a reject (`semantic.undecided`), never a
    pass, and the next run asks again instead of reading that verdict back from the journal."""
    from fcbench.config import load_pipelines
    from fcbench.environments.from_config import open_environment
    from fcbench.filter.single import FilterPaths, run_filter
    from fcbench.formats import read_samples

    pipelines = write_pipeline(tmp_path, one_of_each_failure()[:2])
    pipeline = load_pipelines(pipelines).get_pipeline("toy")
    items = list(read_samples(pipeline.resolve("toy/candidates.jsonl"), "fcbench"))
    judge_answers = iter([["no usable answer from the LLM"] * 2, ["", ""]])

    def semantic_check(samples):
        details = next(judge_answers)
        return [(sample.id, None, detail) for sample, detail in zip(samples, details)]

    summaries = []
    for _ in range(2):
        with open_environment(pipeline, items) as env:
            summaries.append(run_filter(items, env, pipeline.stages.filter, FilterPaths.in_dir(pipeline.build_dir),
                                        "candidates", semantic_check=semantic_check))
    first, second = summaries
    assert first.counts["passed"] == 0 and first.reasons == {"semantic.undecided": 2}
    assert second.counts["passed"] == 2 and second.reasons == {}
