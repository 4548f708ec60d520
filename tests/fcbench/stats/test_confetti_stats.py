"""CONFETTI's own statistics in `build-dataset stats`: on CONFETTI's published dialog-act file they are
the published figures (dialog acts 110 / 331 / 32 / 313 / 25 over 463 agent turns of 109 dialogs,
calls per calling turn 220 / 46 / 25 / 22); a single-query benchmark shows none."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.formats import read_samples
from fcbench.stats.confetti import confetti_statistics, types_table

REPO = Path(__file__).resolve().parents[3]
DIALOG_ACTS_FILE = REPO.parent / "shared" / "external" / "confetti" / "possible_answer_BFCL_v2_dialogacts.json"


def test_the_published_dialog_act_file_gives_confettis_figures():
    result = CliRunner().invoke(app, ["stats", str(DIALOG_ACTS_FILE), "--from", "confetti", "--json"])
    assert result.exit_code == 0, result.output
    confetti = json.loads(result.stdout)["confetti"]
    assert confetti["unit"] == "agent turns" and confetti["conversations"] == 109 and confetti["agent_turns"] == 463
    assert confetti["calls"] == 506  # one function-calling row per call in the published set
    assert confetti["dialog_acts"] == {"agent_seek_information": 110, "agent_inform_user": 331,
                                       "agent_reject_request": 32, "agent_function_calling": 313, "agent_other": 25}
    assert confetti["chain_lengths"] == {"1": 220, "2": 46, "3": 25, "4+": 22}
    shown = CliRunner().invoke(app, ["stats", str(DIALOG_ACTS_FILE), "--from", "confetti"])
    assert shown.exit_code == 0 and "CONFETTI: 109 conversations, 463 agent turns, 506 calls" in shown.output


def test_single_query_benchmarks_have_no_confetti_figures():
    seeds = REPO / "datasets" / "nestful-math" / "seeds.jsonl"
    assert len(list(read_samples(seeds, "fcbench"))) == 84
    assert confetti_statistics(read_samples(seeds, "fcbench")) is None
    result = CliRunner().invoke(app, ["stats", str(seeds), "--json"])
    assert result.exit_code == 0 and "confetti" not in json.loads(result.stdout)


def test_the_types_table_follows_confettis_readme():
    rows = types_table({"goal_switching": 2, "custom": 1})
    assert [row["confetti_name"] for row in rows[:3]] == ["EXCEPTION_IN_EXECUTION", "FAILED_CONVERSATION", "CONFIRMATION"]
    assert sum(row["confetti_dialogs"] or 0 for row in rows) == 108  # the README's counts over its 109 dialogs
    assert next(row for row in rows if row["type"] == "goal_switching")["dialogs"] == 2
    assert rows[-1] == {"type": "custom", "confetti_name": "", "dialogs": 1, "confetti_dialogs": None}
