"""The bundled CallNavi-style build (`travel-navi`), offline, through the same stages as every
single-turn pipeline: stage1 with difficulty quotas and the whole catalog as every question's
candidate list, the filter, the export (Parquet read back with HF `datasets`, the CallNavi copy read
back by fcbench's CallNavi reader) and the report; `stats` prints CallNavi's per-domain
easy/medium/hard counts."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.formats import FormatOptions, read_samples
from fcbench.sample import Sample, path_shape

REPO = Path(__file__).resolve().parents[2]


def _ok(*arguments: str) -> str:
    result = CliRunner().invoke(app, list(arguments))
    assert result.exit_code == 0, result.output
    return result.stdout


def _pipelines(tmp_path: Path) -> str:
    text = (REPO / "pipelines.yaml").read_text(encoding="utf-8")
    start = text.index("  travel-navi:")
    entry = text[start:text.index("\n\n  ", start)]
    entry = (entry.replace("datasets/", f"{REPO}/datasets/")
             .replace(f"{REPO}/datasets/travel-navi", f"{tmp_path}/travel-navi"))
    path = tmp_path / "pipelines.yaml"
    path.write_text("pipelines:\n" + entry + "\n", encoding="utf-8")
    return str(path)


def test_travel_navi_meets_its_quotas_offers_the_whole_catalog_and_exports_callnavi(tmp_path):
    pipelines = _pipelines(tmp_path)
    build = tmp_path / "travel-navi" / "build"
    stage1 = json.loads(_ok("stage1", "travel-navi", "--file", pipelines, "--json"))
    assert stage1["quotas"] == {"easy": {"asked": 24, "made": 24}, "medium": {"asked": 10, "made": 10},
                                "hard": {"asked": 6, "made": 6}}
    drafts = [item for item in read_samples(build / "drafts.jsonl", "fcbench") if isinstance(item, Sample)]
    levels = {"easy": "single", "medium": "multiple", "hard": "nested"}
    for draft in drafts:
        assert len(draft.tools) == 15  # every tool of the catalog is a candidate, as CallNavi offers its pool
        planned = draft.meta["stage1"]["planned_difficulty"]
        shape = path_shape(draft)
        assert shape.difficulty.value == levels[planned]
        assert (shape.n_calls == 1) == (planned == "easy")
    filtered = json.loads(_ok("filter", "travel-navi", "--file", pipelines, "--json"))
    assert filtered["counts"]["passed"] == 40, filtered
    _ok("export", "travel-navi", "--file", pipelines, "--json")
    _ok("report", "travel-navi", "--file", pipelines, "--json")

    rows = datasets.load_dataset("parquet", data_files=str(build / "export" / "data" / "*.parquet"), split="train")
    assert rows.num_rows == 40
    questions = build / "export" / "callnavi" / "Questions" / "test.json"
    published = [item for item in read_samples(questions, "callnavi",
                                               FormatOptions(tools=build / "export" / "callnavi" / "APISchema" / "test.json"))
                 if isinstance(item, Sample)]
    labels = [item.meta["callnavi"]["difficulty"] for item in published]
    assert (labels.count("easy"), labels.count("medium"), labels.count("hard")) == (24, 10, 6)

    stats = json.loads(_ok("stats", str(build / "validated.jsonl"), "--json"))
    table = stats["difficulty_by_domain"]
    assert sum(row["easy"] for row in table.values()) == 24 and sum(row["hard"] for row in table.values()) == 6
    assert sum(row["medium"] for row in table.values()) == 10
    published_stats = json.loads(_ok("stats", str(questions), "--from", "callnavi", "--tools",
                                     str(build / "export" / "callnavi" / "APISchema" / "test.json"), "--json"))
    assert published_stats["published_difficulty"] == {"easy": 24, "medium": 10, "hard": 6}


def test_callnavis_published_bank_table_as_stats_prints_it(tmp_path):
    """CallNavi's Data_statistics.py figures for bank (builders notes §2.2): 70 easy, 27 medium, 18 hard."""
    external = REPO.parent / "shared" / "external" / "callnavi"
    stats = json.loads(_ok("stats", str(external / "Questions" / "bank.json"), "--from", "callnavi", "--tools",
                           str(external / "APISchema" / "bank.json"), "--json"))
    assert stats["published_difficulty_by_domain"] == {"bank": {"easy": 70, "medium": 27, "hard": 18}}
    # CallNavi writes `$$$` where a value comes from an earlier call: no reference, so none is derived hard
    assert stats["difficulty_by_domain"] == {"bank": {"easy": 70, "medium": 45, "hard": 0, "none": 0}}
