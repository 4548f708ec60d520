"""Every command that can reject all its items says why on the terminal: the most common reasons
(three at most, with their counts) on stderr, and exit 1 (fcbench.cli.common.exit_if_nothing_kept).
The case of issue 23: a NESTful file read as fcbench, where the reason is "looks like nestful: use
--from nestful"."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from conftest import EXTERNAL, REPO
from fcbench.cli import app
from fcbench.cli.common import most_common_reasons
from filter_cases import candidate_line, write_pipeline
from fcbench.jsonl import dumps_line
from fcbench.sample import Call

NESTFUL_TOY = EXTERNAL / "nestful" / "toy_data.jsonl"  # 4 NESTful samples
LOOKS_LIKE = "not an fcbench sample: looks like nestful: use --from nestful"
runner = CliRunner()


def _reasons(result) -> list[str]:
    """The reason lines printed after the error line, as `count  reason`."""
    lines = result.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("error: every"))
    return [" ".join(line.split()) for line in lines[start + 1:] if line.startswith("  ")]


def test_convert_of_another_format_says_which(tmp_path):
    result = runner.invoke(app, ["convert", str(NESTFUL_TOY), "--from", "fcbench", "--to", "bfcl",
                                 "-o", str(tmp_path / "out.json")])
    assert result.exit_code == 1
    assert "error: every item (4) was rejected" in result.stderr
    assert _reasons(result) == [f"4 {LOOKS_LIKE}"]


def test_stats_validate_and_execute_say_it_too(tmp_path):
    stats = runner.invoke(app, ["stats", str(NESTFUL_TOY), "--json"])
    assert stats.exit_code == 1 and json.loads(stats.stdout)["samples"] == 0  # the JSON is still printed
    assert _reasons(stats) == [f"4 {LOOKS_LIKE}"]
    executed = runner.invoke(app, ["execute", str(NESTFUL_TOY), "--tools-module",
                                   str(REPO / "datasets" / "nestful-math" / "tools.py")])
    assert executed.exit_code == 1 and "error: every sample (4) failed to run" in executed.stderr
    assert _reasons(executed) == [f"4 {LOOKS_LIKE}"]
    validated = runner.invoke(app, ["validate", str(NESTFUL_TOY)])
    assert validated.exit_code == 1 and "error: every line (4) is invalid" in validated.stderr
    assert len(_reasons(validated)) == 3 and all(reason.startswith("4 (record): ") for reason in _reasons(validated))


def test_execute_groups_failures_by_kind_and_tool(tmp_path):
    samples = tmp_path / "samples.jsonl"
    lines = [json.loads(line) for line in (REPO / "datasets" / "nestful-math" / "seeds.jsonl").read_text().splitlines()[:3]]
    for line in lines:  # every path calls a tool the module does not have
        line["calls"][0][0]["name"] = "cube_root"
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = runner.invoke(app, ["execute", str(samples), "--tools-module",
                                 str(REPO / "datasets" / "nestful-math" / "tools.py")])
    assert result.exit_code == 1 and _reasons(result) == ["3 unknown_tool (cube_root)"]


def test_score_with_no_line_for_the_gold_says_why():
    result = runner.invoke(app, ["score", "--metric", "bfcl", "--questions",
                                 str(EXTERNAL / "bfcl" / "BFCL_v4_parallel.json"), "--answers",
                                 str(EXTERNAL / "bfcl" / "possible_answer_BFCL_v4_parallel.json"), "--predictions",
                                 str(REPO / "tests" / "data" / "predictions" / "bfcl_simple_python.jsonl")])
    assert result.exit_code == 1
    assert "error: every prediction line (10) answers no gold item" in result.stderr
    assert _reasons(result) == ["10 its id is not in the gold"]


def test_the_filter_says_why_every_candidate_was_rejected(tmp_path):
    multiply = [candidate_line(f"m{n}", "Multiply 2 by 3.", [[Call(label="c1", name="multiply", arguments={"a": 2})]])
                for n in range(3)]
    boom = [candidate_line("b", "Run the failing tool on 1.", [[Call(label="c1", name="boom", arguments={"a": 1})]])]
    pipelines = write_pipeline(tmp_path, [dumps_line(line) for line in multiply + boom])
    result = runner.invoke(app, ["filter", "toy", "--file", str(pipelines)])
    assert result.exit_code == 1 and "error: every candidate (4) was rejected by the filter" in result.stderr
    reasons = _reasons(result)
    assert reasons[0].startswith("3 format.unknown_tool: ") and "multiply" in reasons[0]
    assert reasons[1].startswith("1 execution.tool_error: ")


def test_most_common_reasons_are_three_at_most_ties_in_name_order():
    assert most_common_reasons(["b", "a", "c", "b", "d", "a"]) == [("a", 2), ("b", 2), ("c", 1)]
    assert most_common_reasons({"x": 1}) == [("x", 1)]


def test_stage1_names_the_reason_and_what_its_rejects_file_says(tmp_path):
    from filter_cases import TOOLS, TOOLS_MODULE

    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "tools.json").write_text(json.dumps([tool.model_dump(exclude_none=True) for tool in TOOLS[:1]]))
    (tmp_path / "toy" / "pools.json").write_text(json.dumps({"slots": {}}))
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(f"""pipelines:
  toy:
    dataset_dir: toy
    seed: 3
    tools: toy/tools.json
    environment: {{kind: python, module: {TOOLS_MODULE}, timeout_s: 5}}
    stages:
      stage1: {{offline: true, queries: 5}}
      stage3: {{fill: slots, value_pools: toy/pools.json}}
""")
    result = runner.invoke(app, ["stage1", "toy", "--file", str(pipelines)])
    assert result.exit_code == 1, result.output
    assert "error: every draft attempt (5) was rejected" in result.stderr
    assert _reasons(result) == ["5 stage1.no_tool_subset: no tool of the catalog reads another tool's output: "
                                "nothing to chain"]
