"""`build-dataset pipelines --check`: the bundled pipelines' chains hold; each broken link is named."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.config import load_pipelines
from fcbench.pipeline.check import check_pipeline

REPO = Path(__file__).resolve().parents[3]


def test_the_bundled_pipelines_pass_the_check():
    result = CliRunner().invoke(app, ["pipelines", "--check", "--file", str(REPO / "pipelines.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["problems"] == {"travel": [], "nestful-math": [], "nestful-gen": [], "travel-navi": [],
                                                     "amadeus": [], "travel-chat": [], "travel-chat-all": [],
                                                     "travel-full": [], "workspace": []}


def test_every_broken_link_of_a_chain_is_reported_with_its_key(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "pipelines.yaml").write_text(textwrap.dedent("""\
        pipelines:
          broken:
            dataset_dir: data
            tools: data/missing-tools.json
            environment: {kind: python, module: data/missing_tools.py}
            llm: {model: m, base_url: "https://llm.example.invalid/v1", api_key_env: FCBENCH_TEST_NO_SUCH_KEY}
            stages:
              stage1: {queries: 3}
              stage2: {export_file: data/missing-export.json}
              stage3: {fill: slots, value_pools: data/missing-pools.json}
              filter: {input: data/missing-candidates.jsonl}
        """))
    pipeline = load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("broken")
    keys = [problem.key for problem in check_pipeline(pipeline, environ={})]
    assert keys == ["tools", "environment.module", "stages.stage2.export_file", "stages.stage3.value_pools",
                    "stages.filter.input", "llm.api_key_env"]
    result = CliRunner().invoke(app, ["pipelines", "--check", "broken", "--file", str(tmp_path / "pipelines.yaml")])
    assert result.exit_code == 1 and "broken: 6 problems" in result.stdout
    assert "missing-tools.json: no such tool catalog" in result.stderr


def _one(tmp_path, body: str):
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "pipelines.yaml").write_text("pipelines:\n  p:\n" + textwrap.indent(body, "    "))
    return load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("p")


# the travel example's tools and module, a dataset folder of the test's own (its build folder is written)
TRAVEL = (f"dataset_dir: data\ntools: {REPO / 'datasets' / 'travel' / 'tools.json'}\n"
          f"environment: {{kind: python, module: {REPO / 'datasets' / 'travel' / 'tools.py'}}}\n")


def test_the_check_walks_the_declared_stages_of_run_and_what_they_read_under_this_configuration(tmp_path):
    """`fill: annotators`: the filter reads the junior-filled candidates, which no stage of `run`
    writes (`stage3 pull` does, on demand): the check says so until the file is there, and the
    filter then reads that very file (one declaration, read by the check and by the stage)."""
    from fcbench.pipeline.check import walked_stages
    from fcbench.pipeline.run import automatic_stages
    from fcbench.stage import filter_input

    pipeline = _one(tmp_path, TRAVEL + "stages: {stage3: {fill: annotators}, filter: {}, export: {}}\n")
    assert [stage.name for stage in walked_stages(pipeline)] == ["stage3", "filter", "export"]
    assert all(any(stage is run_stage for run_stage in automatic_stages(pipeline)) for stage in walked_stages(pipeline))
    problems = check_pipeline(pipeline, environ={})
    assert [(p.key, p.message.split(" (")[-1]) for p in problems] == [
        ("templates.jsonl", "`stage2` writes it, run it first)"),
        ("candidates.filled.jsonl", "`stage3 pull` writes it, run it first)")]
    filled = filter_input(pipeline).path
    filled.parent.mkdir(parents=True)
    filled.write_text("")
    (filled.parent / "templates.jsonl").write_text("")
    assert check_pipeline(pipeline, environ={}) == []


def test_a_configured_filter_input_replaces_the_build_file_and_must_exist(tmp_path):
    pipeline = _one(tmp_path, TRAVEL + "stages: {filter: {input: data/seeds.jsonl}}\n")
    assert [(p.key, p.message) for p in check_pipeline(pipeline, environ={})] == [
        ("stages.filter.input", f"{tmp_path / 'data' / 'seeds.jsonl'}: no such filter input")]
    (tmp_path / "data" / "seeds.jsonl").write_text("")
    assert check_pipeline(pipeline, environ={}) == []


def test_a_conversation_pipeline_is_walked_with_its_own_stages(tmp_path):
    pipeline = _one(tmp_path, TRAVEL + "kind: conversation\nconversation: {offline: false}\n"
                    "llm: {model: m, base_url: 'https://llm.example.invalid/v1', api_key_env: FCBENCH_TEST_NO_SUCH_KEY}\n"
                    "stages: {stage2: {}, filter: {}}\n")
    from fcbench.pipeline.check import walked_stages

    assert [stage.name for stage in walked_stages(pipeline)] == ["stage1", "stage2", "filter"]
    problems = {p.key: p.message for p in check_pipeline(pipeline, environ={})}
    assert problems == {"llm.api_key_env": "$FCBENCH_TEST_NO_SUCH_KEY is not set (the key for stage1 conversations "
                                           "(conversation.offline: false))"}
    assert check_pipeline(pipeline, environ={"FCBENCH_TEST_NO_SUCH_KEY": "k"}) == []
