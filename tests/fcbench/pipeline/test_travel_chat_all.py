"""The bundled travel-chat-all pipeline, built offline from the repository's files as a fresh clone
would: its scenarios reviewed (the bundled review export: 36 accepted, 2 edited, 1 rejected), its
conversations authored (the bundled stage2 export), every one of CONFETTI's 13 conversation types
present in the validated conversations and the export, each by its acceptance rule; the response-
quality set read back with Hugging Face `datasets` and pandas, with "reject request" turns; `stats`
shows CONFETTI's tables; and the per-dialog-act cap, off by default, caps each act when set, the
card saying so with the counts before and after."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from fcbench.checks.conversation_types import missing_types
from fcbench.cli import app
from fcbench.config import COMPLEXITIES
from fcbench.conversation import CONFETTI_TYPES, chosen_errors_of, scenario_of
from fcbench.formats import read_samples

REPO = Path(__file__).resolve().parents[3]


def _pipelines_file(tmp_path: Path, extra_export: str = "") -> Path:
    text = (REPO / "pipelines.yaml").read_text().replace("dataset_dir: datasets/travel-chat-all",
                                                         f"dataset_dir: {tmp_path / 'travel-chat-all'}")
    text = text.replace("datasets/", f"{REPO}/datasets/")
    if extra_export:
        text = text.replace("        formats: [parquet, fcbench, confetti]\n        # max_per_dialog_act",
                            f"        formats: [parquet, fcbench, confetti]\n        {extra_export}\n        # max")
    path = tmp_path / "pipelines.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("travel-chat-all")
    file = _pipelines_file(tmp_path)
    result = CliRunner().invoke(app, ["run", "travel-chat-all", "--offline", "--json", "--file", str(file)])
    assert result.exit_code == 0, result.output
    return tmp_path, file, json.loads(result.stdout)["stages"], tmp_path / "travel-chat-all" / "build"


def test_the_review_and_the_annotators_work_are_read_from_the_bundled_exports(built):
    _, _, stages, build = built
    review = json.loads((build / "scenarios.review.summary.json").read_text())["counts"]
    assert (review["accepted"], review["edited"], review["rejected_by_reviewer"]) == (36, 2, 1)
    assert stages["stage1"]["counts"] == {"scenarios": 39, "reviewed": 38, "awaiting_review": 0, "drafts": 36,
                                          "rejected": 3}
    assert stages["stage1"]["reasons"]["stage1.rejected_in_review"] == 1
    edited = {json.loads(line)["scenario"]["id"]: json.loads(line) for line in
              (build / "scenarios.reviewed.jsonl").read_text().splitlines()}
    assert edited["travel-chat-all-conv-0002"]["review"]["changed"] == ["optional_apis"]
    drafts = {d.id: d for d in read_samples(build / "drafts.jsonl", "fcbench")}
    assert "Search_Hotel_Destination" in {tool.name for tool in drafts["travel-chat-all-conv-0002"].tools}
    # every conversation accepted or fixed (conv-0035, once rejected for a car dropped off at an
    # attraction ticket's coordinates, now looks the place up)
    assert stages["stage2"]["counts"]["gold"] == 36 and stages["stage2"]["reasons"] == {}
    assert stages["filter"]["counts"]["passed"] == 36 and stages["filter"]["reasons"] == {}


def test_every_conversation_type_is_present_and_passes_its_rule(built):
    _, _, stages, build = built
    validated = list(read_samples(build / "validated.jsonl", "fcbench"))
    types = Counter(name for sample in validated for name in scenario_of(sample).complexities)
    assert set(types) == set(COMPLEXITIES) and min(types.values()) >= 2
    assert all(missing_types(sample) == [] for sample in validated)
    failed = [s for s in validated if scenario_of(s).complexities == ["failed_conversation"]]
    assert any("Room availability for this hotel" in message for s in failed for message in chosen_errors_of(s).values())
    statistics = json.loads((build / "export" / "statistics.json").read_text())
    assert set(statistics["overall"]["complexities"]) == set(COMPLEXITIES)
    assert statistics["response_quality_cap"]["max_per_dialog_act"] is None  # off: as the published set
    card = (build / "export" / "README.md").read_text()
    for name, info in CONFETTI_TYPES.items():
        assert f"| {name} | `{info.confetti_name}` |" in card
    assert "No cap (`stages.export.max_per_dialog_act` is off)" in card and "| 4+ |" in card


def test_the_response_quality_set_has_reject_turns_read_back_by_datasets_and_pandas(built):
    from datasets import load_dataset

    _, _, _, build = built
    files = {split: str(path) for split in ("train", "test")
             for path in (build / "export" / "response_quality").glob(f"{split}-*.parquet")}
    loaded = load_dataset("parquet", data_files=files)
    rows = [row for split in loaded for row in loaded[split]]
    acts = Counter(act for row in rows for act in row["dialog_acts"])
    assert acts["agent_reject_request"] == 3 and acts["agent_function_calling"] > 0
    frame = pd.concat(pd.read_parquet(path) for path in files.values())
    assert len(frame) == len(rows) == json.loads((build / "export" / "statistics.json").read_text())["overall"]["agent_turns"]


def test_stats_shows_confettis_tables_for_the_build(built):
    _, _, _, build = built
    result = CliRunner().invoke(app, ["stats", str(build / "validated.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    confetti = json.loads(result.stdout)["confetti"]
    assert confetti["conversations"] == 36 and all(row["dialogs"] >= 2 for row in confetti["types"])
    assert sum(confetti["chain_lengths"].values()) == confetti["dialog_acts"]["agent_function_calling"]
    shown = CliRunner().invoke(app, ["stats", str(build / "validated.jsonl")])
    assert "conversation types (CONFETTI README" in shown.output and "IMPLICIT_DESCRIPTIVE" in shown.output


def test_the_dialog_act_cap_balances_each_split_and_the_card_says_so(built, tmp_path):
    source_dir, _, _, build = built
    file = _pipelines_file(source_dir, "max_per_dialog_act: 4")
    result = CliRunner().invoke(app, ["export", "travel-chat-all", "--force", "--json", "--file", str(file)])
    assert result.exit_code == 0, result.output
    statistics = json.loads((build / "export" / "statistics.json").read_text())
    capping = statistics["response_quality_cap"]
    assert capping["max_per_dialog_act"] == 4
    for split, counts in capping["splits"].items():
        assert all(count <= 4 for count in counts["dialog_acts_after"].values())
        assert counts["rows_before"] - counts["rows_after"] == counts["left_out"] > 0
        # the rare act is kept whole while it is under the cap
        assert counts["dialog_acts_after"]["agent_reject_request"] == counts["dialog_acts_before"]["agent_reject_request"]
        written = [row for path in (build / "export" / "response_quality").glob(f"{split}-*.parquet")
                   for row in pd.read_parquet(path).to_dict("records")]
        assert len(written) == counts["rows_after"]
    card = (build / "export" / "README.md").read_text()
    assert "At most 4 response-quality rows per dialog act in each split" in card
    assert f"{capping['overall']['left_out']} of {capping['overall']['rows_before']} agent turns left out" in card
    first = (build / "export" / "response_quality").glob("test-*.parquet")
    before = {path.name: path.read_bytes() for path in first}
    again = CliRunner().invoke(app, ["export", "travel-chat-all", "--force", "--file", str(file)])
    assert again.exit_code == 0
    assert {path.name: path.read_bytes() for path in (build / "export" / "response_quality").glob("test-*.parquet")} == before


def test_scenario_commands_refuse_what_they_cannot_review(built):
    _, file, _, _ = built
    stage2_export = REPO / "datasets" / "travel-chat-all" / "annotations" / "stage2_export.json"
    wrong = CliRunner().invoke(app, ["scenarios", "pull", "travel-chat-all", "--from-export", str(stage2_export),
                                     "--file", str(file)])
    assert wrong.exit_code == 1 and "no scenario review task" in wrong.output and "Traceback" not in wrong.output
    single = CliRunner().invoke(app, ["scenarios", "push", "travel", "--file", str(file)])
    assert single.exit_code == 1 and "`kind: conversation` pipelines only" in single.output
