"""The bundled NESTful-style build (`nestful-gen`), offline, through the same stages as every
single-turn pipeline: stage1 from the published seeds' structures over a Python module's typed
functions, the filter (`min_nested_calls: 1`), the export (Parquet read back with HF `datasets`,
the NESTful copy read back by fcbench's NESTful reader) and the report; `stats` prints NESTful's
sequence length and nesting depth."""

from __future__ import annotations

import json

import datasets
from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.formats import read_samples
from fcbench.sample import Sample
from nestful_gen_pipeline import nestful_gen_pipelines_file


def _ok(*arguments: str) -> str:
    result = CliRunner().invoke(app, list(arguments))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_nestful_gen_builds_offline_and_stats_show_nestfuls_measures(tmp_path):
    pipelines = str(nestful_gen_pipelines_file(tmp_path))
    build = tmp_path / "nestful-gen" / "build"
    stage1 = json.loads(_ok("stage1", "nestful-gen", "--file", pipelines, "--json"))
    assert stage1["counts"]["drafts"] == 60 and stage1["counts"]["nested"] == 60
    assert stage1["seeds"]["file"].endswith("datasets/nestful-math/seeds.jsonl")
    assert {k: v for k, v in stage1["seeds"].items() if k != "file"} == {"read": 84, "usable": 83,
                                                                         "skipped": {"too_many_calls": 1}}
    filtered = json.loads(_ok("filter", "nestful-gen", "--file", pipelines, "--json"))
    assert filtered["counts"]["passed"] == 60, filtered
    _ok("export", "nestful-gen", "--file", pipelines, "--json")
    _ok("report", "nestful-gen", "--file", pipelines, "--json")

    rows = datasets.load_dataset("parquet", data_files=str(build / "export" / "data" / "*.parquet"), split="train")
    assert rows.num_rows == 60
    published = [item for item in read_samples(build / "export" / "nestful" / "test.jsonl", "nestful")
                 if isinstance(item, Sample)]
    validated = {item.id: item for item in read_samples(build / "validated.jsonl", "fcbench")}
    assert len(published) == 60
    for item in published:  # the NESTful copy carries the same sequence and gold answer
        assert [c.name for c in item.all_calls()] == [c.name for c in validated[item.id].all_calls()]
        assert item.answer == validated[item.id].answer

    stats = json.loads(_ok("stats", str(build / "validated.jsonl"), "--json"))
    assert sum(stats["sequence_length"].values()) == 60 and min(map(int, stats["sequence_length"])) >= 2
    assert "0" not in stats["nested_calls"] and "0" not in stats["nesting_depth"]
    assert stats["difficulty_by_domain"] == {"math": {"easy": 0, "medium": 0, "hard": 60, "none": 0}}
    shown = _ok("stats", str(build / "validated.jsonl"))
    assert "sequence length" in shown and "nesting depth" in shown and "CallNavi difficulty" in shown


def test_the_filter_enforces_min_nested_calls_on_these_candidates(tmp_path):
    pipelines = str(nestful_gen_pipelines_file(tmp_path, queries=4))
    _ok("stage1", "nestful-gen", "--file", pipelines)
    drafts = tmp_path / "nestful-gen" / "build" / "drafts.jsonl"
    lines = drafts.read_text().splitlines()
    flat = json.loads(lines[0])  # its last call computed from stated numbers instead of a result
    flat["calls"] = [flat["calls"][0]]
    flat["answer"] = flat["calls"][0][0]["response"]["result"]
    lines[0] = json.dumps(flat)
    drafts.write_text("\n".join(lines) + "\n")
    filtered = json.loads(_ok("filter", "nestful-gen", "--file", pipelines, "--json"))
    assert filtered["counts"]["passed"] == 3 and filtered["counts"]["failed_gold"] == 1
    assert filtered["reasons"] == {"gold.too_few_nested_calls": 1}
