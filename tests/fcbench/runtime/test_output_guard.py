"""Nothing good is overwritten by something worse: a stage whose new result is empty or much
smaller than its previous output keeps the previous one and writes the new one beside it; a
command whose every item was rejected exits 1; a stage never reads its own output."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.runtime.output_guard import beside, guard_output
from filter_cases import one_of_each_failure, write_pipeline

runner = CliRunner()


def test_the_guard_keeps_a_larger_previous_output_unless_forced(tmp_path):
    target = tmp_path / "drafts.jsonl"
    assert guard_output(target, 0, force=False, min_share=0.5).kept_because is None  # nothing to keep
    target.write_text("{}\n" * 40)
    assert "no samples" in guard_output(target, 0, force=False, min_share=0.5).kept_because
    assert "fewer than 50%" in guard_output(target, 19, force=False, min_share=0.5).kept_because
    assert guard_output(target, 20, force=False, min_share=0.5).kept_because is None
    assert guard_output(target, 0, force=True, min_share=0.5).summary() == {
        "previous_samples": 40, "new_samples": 0, "replaced_previous": True}
    assert beside(target).name == "drafts.new.jsonl"


def _filter(pipelines: Path, *extra: str):
    return runner.invoke(app, ["filter", "toy", "--file", str(pipelines), "--json", *extra])


def test_an_empty_input_keeps_the_validated_file_and_force_replaces_it(tmp_path):
    pipelines = write_pipeline(tmp_path, one_of_each_failure()[:2])  # two candidates that pass
    assert _filter(pipelines).exit_code == 0
    validated = tmp_path / "toy" / "build" / "validated.jsonl"
    good = validated.read_bytes()
    assert len(good.splitlines()) == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    kept = _filter(pipelines, "--input", str(empty))
    # an empty input is refused before anything is written (issue 27: never a success on nothing)
    assert kept.exit_code == 1 and "the filter's input is empty" in kept.stderr
    assert validated.read_bytes() == good  # untouched
    forced = _filter(pipelines, "--input", str(empty), "--force")
    assert forced.exit_code == 0 and validated.read_text() == ""


def test_every_candidate_rejected_is_exit_1_and_the_filter_never_reads_its_own_output(tmp_path):
    pipelines = write_pipeline(tmp_path, one_of_each_failure()[2:6])  # four format failures
    result = _filter(pipelines)
    assert result.exit_code == 1 and "every candidate (4) was rejected by the filter" in result.stderr
    assert json.loads(result.stdout)["counts"]["passed"] == 0  # the summary is still printed
    own = tmp_path / "toy" / "build" / "validated.jsonl"
    refused = _filter(pipelines, "--input", str(own))
    assert refused.exit_code == 1 and "the filter writes this file" in refused.stderr


def test_execute_with_a_negative_timeout_is_refused():
    result = runner.invoke(app, ["execute", "x.jsonl", "--tools-module", "t.py", "--timeout", "-1"],
                           terminal_width=200)
    assert result.exit_code == 2 and "Invalid value for '--timeout'" in result.output  # a usage error


def test_a_much_smaller_export_keeps_the_one_in_place_and_force_replaces_it(tmp_path):
    from fcbench.export.single import previous_export_rows

    seeds = Path(__file__).resolve().parents[3] / "datasets" / "nestful-math" / "seeds.jsonl"
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("pipelines:\n  m:\n    dataset_dir: m\n    stages:\n"
                         "      export: {split: template, ratios: {test: 1.0}, formats: [parquet]}\n")
    lines = seeds.read_text().splitlines()
    full, few = tmp_path / "full.jsonl", tmp_path / "few.jsonl"
    full.write_text("\n".join(lines[:40]) + "\n")
    few.write_text("\n".join(lines[:10]) + "\n")
    export = ["export", "m", "--file", str(pipelines), "--json", "--input"]
    first = runner.invoke(app, [*export, str(full)])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["output_guard"] == {"previous_samples": None, "new_samples": 40,
                                                        "replaced_previous": False}
    build = tmp_path / "m" / "build"
    before = {path: path.read_bytes() for path in (build / "export").rglob("*") if path.is_file()}
    kept = runner.invoke(app, [*export, str(few)])
    assert kept.exit_code == 1 and "kept the previous output" in kept.stderr and "fewer than 50% of the previous 40" in kept.stderr
    assert {path: path.read_bytes() for path in (build / "export").rglob("*") if path.is_file()} == before
    assert previous_export_rows(build / "export.new") == 10
    assert json.loads((build / "export.summary.new.json").read_text())["output_guard"]["kept_previous_because"]
    forced = runner.invoke(app, [*export, str(few), "--force"])
    assert forced.exit_code == 0 and previous_export_rows(build / "export") == 10
    assert json.loads(forced.stdout)["output_guard"] == {"previous_samples": 40, "new_samples": 10,
                                                         "replaced_previous": True}


# ------------------------------------------------------------------ outputs that would overwrite
def _bfcl_canonical(tmp_path: Path) -> Path:
    from conftest import EXTERNAL

    source = tmp_path / "simple.jsonl"
    made = runner.invoke(app, ["convert", str(EXTERNAL / "bfcl" / "BFCL_v4_simple_python.json"), "--from", "bfcl",
                               "--answers", str(EXTERNAL / "bfcl" / "possible_answer_BFCL_v4_simple_python.json"),
                               "--to", "fcbench", "-o", str(source)])
    assert made.exit_code == 0, made.output
    return source


def test_convert_refuses_outputs_that_are_an_input_or_each_other(tmp_path):
    source = _bfcl_canonical(tmp_path)
    original = source.read_bytes()
    link = tmp_path / "link.json"
    link.symlink_to(source)
    hard = tmp_path / "hard.json"
    os.link(source, hard)
    to_bfcl = ["convert", str(source), "--from", "fcbench", "--to", "bfcl"]
    cases = {
        "same file": ([*to_bfcl, "-o", str(tmp_path / "q.json"), "--answers-out", str(tmp_path / "q.json")],
                      "-o {q} and --answers-out {q} are the same file"),
        "answers over the input": ([*to_bfcl, "-o", str(tmp_path / "q.json"), "--answers-out", str(source)],
                                   "--answers-out {source} is the input IN {source}"),
        "output over the input": (["convert", str(source), "--from", "fcbench", "--to", "fcbench", "-o", str(source)],
                                  "-o {source} is the input IN {source}"),
        "through a symlink": ([*to_bfcl, "-o", str(link), "--answers-out", str(tmp_path / "a.json")],
                              "-o {link} is the input IN {source}"),
        "through a hard link": ([*to_bfcl, "-o", str(tmp_path / "q2.json"), "--answers-out", str(hard)],
                                "--answers-out {hard} is the input IN {source}"),
    }
    for name, (command, message) in cases.items():
        result = runner.invoke(app, command)
        expected = message.format(q=tmp_path / "q.json", source=source, link=link, hard=hard)
        assert result.exit_code == 1 and expected in result.stderr, (name, result.output)
        assert len(result.stderr.strip().splitlines()) == 1
    assert source.read_bytes() == original and link.is_symlink()
    assert not (tmp_path / "q.json").exists() and not (tmp_path / "q2.json").exists()  # refused before writing
    # the rejects file is an output too: OUT.rejects.jsonl must not be the input either
    rejects_named = tmp_path / "x.json.rejects.jsonl"
    rejects_named.write_bytes(original)
    clash = runner.invoke(app, ["convert", str(rejects_named), "--from", "fcbench", "--to", "fcbench",
                                "-o", str(tmp_path / "x.json")])
    assert clash.exit_code == 1 and "the rejects file" in clash.stderr
    fine = runner.invoke(app, [*to_bfcl, "-o", str(tmp_path / "q.json"), "--answers-out", str(tmp_path / "a.json")])
    assert fine.exit_code == 0, fine.output


def test_export_and_pull_refuse_an_input_they_would_replace(tmp_path):
    seeds = Path(__file__).resolve().parents[3] / "datasets" / "nestful-math" / "seeds.jsonl"
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("pipelines:\n  m:\n    dataset_dir: m\n    stages:\n"
                         "      export: {split: template, ratios: {test: 1.0}, formats: [parquet, fcbench]}\n")
    export = ["export", "m", "--file", str(pipelines), "--input"]
    assert runner.invoke(app, [*export, str(seeds)]).exit_code == 0
    build = tmp_path / "m" / "build"
    inside = build / "export" / "fcbench" / "test.jsonl"
    before = inside.read_bytes()
    refused = runner.invoke(app, [*export, str(inside)])
    assert refused.exit_code == 1 and f"--input {inside} is inside {build / 'export'}" in refused.stderr
    assert inside.read_bytes() == before
    summary = build / "export.summary.json"
    refused = runner.invoke(app, [*export, str(summary)])
    assert refused.exit_code == 1 and "is the input --input" in refused.stderr
    (build / "templates.jsonl").write_text("[]\n")
    pulled = runner.invoke(app, ["stage2", "pull", "m", "--file", str(pipelines), "--from-export",
                                 str(build / "templates.jsonl")])
    assert pulled.exit_code == 1 and "templates.jsonl" in pulled.stderr and "is the input --from-export" in pulled.stderr
    assert (build / "templates.jsonl").read_text() == "[]\n"


def test_evaluate_refuses_an_input_it_would_rewrite(tmp_path, monkeypatch):
    seeds = Path(__file__).resolve().parents[3] / "datasets" / "nestful-math" / "seeds.jsonl"
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("pipelines:\n  m:\n    dataset_dir: m\n")
    own = tmp_path / "m" / "build" / "eval" / "some-model" / "trajectories.jsonl"
    own.parent.mkdir(parents=True)
    own.write_text(seeds.read_text())
    before = own.read_bytes()
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    result = runner.invoke(app, ["evaluate", "m", "--file", str(pipelines), "--model", "some-model",
                                 "--base-url", "http://127.0.0.1:9/v1", "--input", str(own)])
    assert result.exit_code == 1 and "is the input --input" in result.stderr, result.output
    assert own.read_bytes() == before
