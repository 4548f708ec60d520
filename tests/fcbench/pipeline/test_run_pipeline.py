"""The README's main job: `build-dataset run travel --offline` runs every stage of the bundled
example (generation, annotation import, generalization, filtering, export, report) offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from conftest import REPO
from fcbench.cli import app
from fcbench.checks.validate import validate_record


def _copy_example(target: Path) -> Path:
    shutil.copytree(REPO / "datasets" / "travel", target / "datasets" / "travel",
                    ignore=shutil.ignore_patterns("build", "__pycache__"))
    shutil.copy(REPO / "pipelines.yaml", target / "pipelines.yaml")
    return target / "pipelines.yaml"


def _run(pipelines: Path) -> dict:
    result = CliRunner().invoke(app, ["run", "travel", "--offline", "--json", "--file", str(pipelines)])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_run_travel_offline_produces_a_loadable_export_and_a_report(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = _run(_copy_example(tmp_path / "a"))
    export, report = Path(out["export"]), Path(out["report"])
    assert report.is_file() and report.with_suffix(".json").is_file()
    assert "<img" in report.read_text()
    assert list(out["stages"]) == ["stage1", "stage2", "stage3", "filter", "export", "report"]  # STAGES, in order
    assert out["stages"]["stage1"]["counts"]["drafts"] == 40
    # the bundled export holds annotated, rejected, cancelled and pending tasks: only gold comes through
    assert out["stages"]["stage2"]["counts"]["gold"] >= 3 and out["stages"]["stage2"]["counts"]["rejected"] >= 1

    shards = sorted((export / "data").glob("*.parquet"))
    assert shards and all("-of-" in shard.name for shard in shards)
    frame = pd.concat([pd.read_parquet(shard) for shard in shards])
    assert len(frame) == out["stages"]["export"]["exported"] > 0
    from datasets import load_dataset

    loaded = load_dataset("parquet", data_files={"every": [str(s) for s in shards]}, cache_dir=str(tmp_path / "hf"))
    assert loaded["every"].num_rows == len(frame)
    validated = [json.loads(line) for line in (export.parent / "validated.jsonl").read_text().splitlines()]
    assert all(validate_record(record) == [] for record in validated)
    assert all(record["provenance"].get("parent_id") for record in validated)  # variants know their template


def test_run_is_deterministic(tmp_path):
    first = _run(_copy_example(tmp_path / "a"))
    second = _run(_copy_example(tmp_path / "b"))
    for name in ("drafts.jsonl", "templates.jsonl", "candidates.jsonl", "validated.jsonl"):
        assert (Path(first["export"]).parent / name).read_bytes() == (Path(second["export"]).parent / name).read_bytes()
    first_shards = sorted((Path(first["export"]) / "data").glob("*.parquet"))
    second_shards = sorted((Path(second["export"]) / "data").glob("*.parquet"))
    assert [s.read_bytes() for s in first_shards] == [s.read_bytes() for s in second_shards]


def test_the_bundled_travel_split_never_puts_one_template_in_two_splits(tmp_path):
    """Issue: `split: ratio` put every travel template in both train and test."""
    out = _run(_copy_example(tmp_path))
    data = Path(out["export"]) / "data"
    parents = {split: set(pd.concat([pd.read_parquet(f) for f in data.glob(f"{split}-*.parquet")])["parent_id"])
               for split in ("train", "test")}
    assert parents["train"] and parents["test"] and not parents["train"] & parents["test"]


def test_run_starts_at_the_first_stage_a_pipeline_declares(tmp_path):
    """nestful-math declares only filter and export (the published samples are its candidates):
    `run` runs those and the report, never the graph sampler that would need value pools."""
    from fcbench.config import load_pipelines
    from fcbench.pipeline.run import stages_to_run

    pipelines = load_pipelines(REPO / "pipelines.yaml")
    assert [s.name for s in stages_to_run(pipelines.get_pipeline("nestful-math"))] == ["filter", "export", "report"]
    assert [s.name for s in stages_to_run(pipelines.get_pipeline("travel"))] == [
        "stage1", "stage2", "stage3", "filter", "export", "report"]
    for generated_then_filtered in ("nestful-gen", "travel-navi"):  # stage1's drafts are the filter's input
        assert [s.name for s in stages_to_run(pipelines.get_pipeline(generated_then_filtered))] == [
            "stage1", "filter", "export", "report"]
    assert [s.name for s in stages_to_run(pipelines.get_pipeline("travel-chat"))] == [
        "stage1", "stage2", "filter", "export", "report"]

    target = tmp_path / "repo"
    shutil.copytree(REPO / "datasets" / "nestful-math", target / "datasets" / "nestful-math",
                    ignore=shutil.ignore_patterns("build", "__pycache__"))
    shutil.copy(REPO / "pipelines.yaml", target / "pipelines.yaml")
    assert not (target / "datasets" / "nestful-math" / "value_pools.json").exists()
    result = CliRunner().invoke(app, ["run", "nestful-math", "--offline", "--json", "--file", str(target / "pipelines.yaml")])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert list(out["stages"]) == ["filter", "export", "report"]
    assert out["stages"]["export"]["exported"] == 84  # every published math sample reproduces its answer
    assert sorted(p.name for p in (Path(out["export"]) / "data").glob("*.parquet")) == ["test-00000-of-00001.parquet"]
