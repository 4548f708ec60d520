"""The command line's error paths: every user mistake is one clear line and exit 1, never a
traceback; `--json` prints JSON only; valid input is not reported."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXTERNAL
from typer.testing import CliRunner

from fcbench.cli import app

runner = CliRunner()

GOOD = {"id": "ok", "messages": [{"role": "user", "content": "q"}], "tools": [{"name": "f"}],
        "calls": [[{"label": "a", "name": "f"}]]}
LINES = [
    json.dumps(GOOD),  # 1: valid
    '{"id": "broken", "messages": [',  # 2: not JSON
    json.dumps({"id": "no-messages", "tools": [{"name": "f"}], "calls": []}),  # 3: required field missing
    json.dumps({**GOOD, "id": "unknown-tool", "calls": [[{"label": "a", "name": "g"}]]}),  # 4
    json.dumps({**GOOD, "id": "bad-ref", "calls": [[{"label": "a", "name": "f"}],
                                                   [{"label": "b", "name": "f", "arguments": {"x": "$zz.id$"}}]]}),
    json.dumps({**GOOD, "id": "ok-too", "domain": "bank"}),  # 6: valid
]


@pytest.fixture
def mixed_file(tmp_path: Path) -> Path:
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def _run(*args: str):
    return runner.invoke(app, [str(arg) for arg in args])


def _build_dataset(*args: str) -> subprocess.CompletedProcess:
    """The installed console script, as a user runs it."""
    executable = shutil.which("build-dataset", path=str(Path(sys.executable).parent))
    assert executable, "the build-dataset console script is installed with the package"
    return subprocess.run([executable, *map(str, args)], capture_output=True, text=True, timeout=120)


# ------------------------------------------------------------------------------------------ validate
def test_validate_reports_each_bad_line_as_file_line_field_message(mixed_file):
    result = _run("validate", mixed_file)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines == [
        f"{mixed_file}:2: (line): not valid JSON (Expecting value at column 1)",
        f"{mixed_file}:3: (record): 'messages' is a required property",
        f"{mixed_file}:4: calls[0][0].name: unknown tool 'g' (not in the sample's tools)",
        f"{mixed_file}:5: calls[1][0].arguments: reference $zz.id$ names no earlier call",
    ]
    assert not any(line.startswith((f"{mixed_file}:1:", f"{mixed_file}:6:")) for line in lines)


def test_validate_json_output_parses(mixed_file):
    result = _run("validate", mixed_file, "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert [problem["line"] for problem in report["problems"]] == [2, 3, 4, 5]


def test_validate_on_a_valid_file_exits_0(tmp_path):
    path = tmp_path / "good.jsonl"
    path.write_text(LINES[0] + "\n" + LINES[5] + "\n", encoding="utf-8")
    result = _run("validate", path)
    assert result.exit_code == 0 and result.stdout.strip() == f"{path}: all lines valid"


def test_missing_file_is_one_stderr_line_without_traceback(tmp_path):
    missing = tmp_path / "absent.jsonl"
    for command in (["validate", missing], ["stats", missing], ["lint-tools", missing],
                    ["pipelines", "--file", missing]):
        completed = _build_dataset(*command)
        assert completed.returncode == 1, command
        assert completed.stderr.strip().splitlines() == [f"error: {missing}: no such file"], command
        assert "Traceback" not in completed.stderr + completed.stdout
        assert completed.stdout == ""


def test_convert_with_an_unknown_format_is_one_line(mixed_file, tmp_path):
    result = _run("convert", mixed_file, "--from", "yaml", "--to", "fcbench", "-o", tmp_path / "out.jsonl")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "error: unknown format 'yaml', available: fcbench, complexfuncbench, nestful, callnavi, bfcl, confetti"]
    assert not (tmp_path / "out.jsonl").exists()


# --------------------------------------------------------------------------------------------- stats
def test_stats_json_counts_rejected_lines(mixed_file):
    result = _run("stats", mixed_file, "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    # lines 4 and 5 are schema-valid samples (their problems are cross-field): only 2 and 3 are rejected
    assert (report["samples"], report["rejected"]) == (4, 2)
    assert sum(report["reject_reasons"].values()) == 2
    assert [row["domain"] for row in report["domains"]] == ["(none)", "bank", "all"]


def test_stats_tables_and_unknown_format(mixed_file):
    result = _run("stats", mixed_file)
    assert result.exit_code == 0
    assert f"{mixed_file}: 4 samples, 2 rejected" in result.stdout
    assert "nesting depth" in result.stdout
    bad = _run("stats", mixed_file, "--from", "csv")
    assert bad.exit_code == 1 and bad.stderr.startswith("error: unknown format 'csv'")


def test_stats_on_callnavi_with_published_labels():
    result = _run("stats", EXTERNAL / "callnavi/Questions/hotel.json", "--from", "callnavi", "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    raw = json.loads((EXTERNAL / "callnavi/Questions/hotel.json").read_text(encoding="utf-8"))
    assert report["samples"] == len(raw)
    assert sum(report["published_difficulty"].values()) == len(raw)


# ---------------------------------------------------------------------------------------- lint-tools
def test_lint_tools_json_on_callnavi_bank():
    result = _run("lint-tools", EXTERNAL / "callnavi/APIs/bank.json", "--json")
    assert result.exit_code == 0  # findings are not errors of the command
    report = json.loads(result.stdout)
    assert report["tools"] == 96
    assert report["counts"] == {"parameter-without-description": 159, "overlapping-tools": 1}
    overlap = [f for f in report["findings"] if f["code"] == "overlapping-tools"][0]
    assert overlap["tool"] == "getAccountID" and overlap["severity"] == "warning" and overlap["parameter"] is None


def test_lint_tools_strict_exits_1_only_on_errors(tmp_path):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object", "properties": {}}}},
    ]), encoding="utf-8")
    assert _run("lint-tools", tools).exit_code == 0
    strict = _run("lint-tools", tools, "--strict", "--json")
    assert strict.exit_code == 1
    assert json.loads(strict.stdout)["counts"] == {"missing-description": 1}
    bank = EXTERNAL / "callnavi/APIs/bank.json"
    assert _run("lint-tools", bank, "--strict").exit_code == 0  # warnings only


def test_lint_tools_on_a_file_that_is_not_a_catalog():
    result = _run("lint-tools", EXTERNAL / "callnavi/Questions/bank.json")
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Questions/bank.json: not a tool catalog of a known shape" in result.stderr


def test_lint_tools_table_names_the_finding():
    result = _run("lint-tools", EXTERNAL / "callnavi/APISchema/bank.json")
    assert result.exit_code == 0
    assert "overlapping-tools" in result.stdout and "96 tools" in result.stdout


# ----------------------------------------------------------------------------------------- pipelines
def test_pipelines_lists_the_shipped_file():
    repo_file = Path(__file__).resolve().parents[3] / "pipelines.yaml"
    result = _run("pipelines", "--file", repo_file, "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert list(report["pipelines"]) == ["travel", "nestful-math", "nestful-gen", "travel-navi", "amadeus", "travel-chat",
                                         "travel-chat-all", "travel-full", "workspace"]
    assert report["pipelines"]["travel"]["stages"]["stage1"]["offline"] is True
    assert "api_key" not in report["pipelines"]["travel"]["llm"]
    table = _run("pipelines", "--file", repo_file)
    assert table.exit_code == 0 and "nestful-math: stages" in table.stdout
    assert "travel-chat-all: stages" in table.stdout and "(equal shares)" in table.stdout


def test_pipelines_with_a_bad_file_is_one_line_with_file_and_line(tmp_path):
    bad = tmp_path / "pipelines.yaml"
    bad.write_text("pipelines:\n  travel:\n    dataset_dir: d\n    stages:\n      stage1:\n        queries: x\n",
                   encoding="utf-8")
    completed = _build_dataset("pipelines", "--file", bad)
    assert completed.returncode == 1
    assert completed.stderr.strip().splitlines() == [
        f"error: {bad}:6: pipelines.travel.stages.stage1.queries: expected an integer"]
    assert "Traceback" not in completed.stderr and completed.stdout == ""
    bad.write_text("pipelines:\n  travel: [\n", encoding="utf-8")
    syntax = _run("pipelines", "--file", bad, "--json")
    assert syntax.exit_code == 1 and syntax.stdout == ""
    assert syntax.stderr.startswith(f"error: {bad}:3: invalid YAML")


def test_lint_tools_overlap_threshold_option():
    bank = EXTERNAL / "callnavi/APISchema/bank.json"
    default = json.loads(_run("lint-tools", bank, "--json").stdout)["counts"]["overlapping-tools"]
    looser = json.loads(_run("lint-tools", bank, "--json", "--overlap-threshold", "90").stdout)
    assert default == 1 and looser["counts"]["overlapping-tools"] == 2  # + getCustomerLoans/Mortgages (93)
    out_of_range = _run("lint-tools", bank, "--overlap-threshold", "120")
    assert out_of_range.exit_code == 2 and "Traceback" not in out_of_range.output


def test_stats_reads_two_file_formats_with_answers_and_tools():
    questions = EXTERNAL / "bfcl/BFCL_v4_parallel_multiple.json"
    answers = EXTERNAL / "bfcl/possible_answer_BFCL_v4_parallel_multiple.json"
    result = _run("stats", questions, "--from", "bfcl", "--answers", answers, "--json")
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    gold = [json.loads(line) for line in answers.read_text(encoding="utf-8").splitlines() if line.strip()]
    overall = report["domains"][-1]
    # parallel calls: one step each, as many calls as the possible answer lists
    assert (overall["samples"], overall["avg_steps"]) == (200, 1.0)
    assert overall["avg_calls"] == round(sum(len(item["ground_truth"]) for item in gold) / 200, 4)
    assert report["difficulty"]["multiple"] == 200
    nestful = _run("stats", EXTERNAL / "nestful/v1/executable-data.json", "--from", "nestful",
                   "--tools", EXTERNAL / "nestful/v1/executable-spec.json", "--json")
    assert json.loads(nestful.stdout)["nesting_depth"] == {"0": 7, "1": 74, "2": 4}
