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
    assert json.loads(result.stdout)["problems"] == {"travel": [], "nestful-math": [], "amadeus": [], "travel-chat": [], "travel-full": []}


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
