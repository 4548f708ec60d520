"""CallNavi-style difficulty quotas (generate/stage1/quotas.py, stages.stage1.difficulty_quotas),
candidate lists (`candidates`, `candidate_tools_max`) and their bad inputs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fcbench.catalog import load_tools_file
from fcbench.cli import app
from fcbench.config import load_pipelines
from fcbench.errors import ConfigError
from generate.slots import load_value_pools
from generate.stage1.graph_sampler import build_feed_graph
from generate.stage1.quotas import check_quotas, difficulty_plan, quota_counts, quota_subset, start_tools

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"


@pytest.fixture(scope="module")
def graph():
    return build_feed_graph(load_tools_file(TRAVEL / "tools.json"), load_value_pools(TRAVEL / "value_pools.json"))


def test_quota_counts_follow_callnavis_shares_by_largest_remainder():
    assert quota_counts(40, {"easy": 0.6, "medium": 0.25, "hard": 0.15}) == {"easy": 24, "medium": 10, "hard": 6}
    # CallNavi's published totals, 456/187/86 of 729, as shares give back the same counts
    shares = {"easy": 456 / 729, "medium": 187 / 729, "hard": 86 / 729}
    assert quota_counts(729, shares) == {"easy": 456, "medium": 187, "hard": 86}
    assert quota_counts(7, {"easy": 1 / 3, "medium": 1 / 3, "hard": 1 / 3}) == {"easy": 3, "medium": 2, "hard": 2}
    plan = difficulty_plan(40, {"easy": 0.6, "medium": 0.25, "hard": 0.15}, seed=1)
    assert plan == difficulty_plan(40, {"easy": 0.6, "medium": 0.25, "hard": 0.15}, seed=1) != \
        difficulty_plan(40, {"easy": 0.6, "medium": 0.25, "hard": 0.15}, seed=2)
    assert plan.count("easy") == 24 and plan.count("hard") == 6


def test_subsets_offer_the_whole_catalog_up_to_the_cap_and_goals_fit_the_level(graph):
    starts = set(start_tools(graph))
    easy = quota_subset(0, "easy", graph, [3], "catalog", 115, seed=1)
    assert len(easy.goals) == 1 and set(easy.goals) <= starts and len(easy.tools) == 15
    medium = quota_subset(1, "medium", graph, [3], "catalog", 115, seed=1)
    assert len(set(medium.goals)) == 2 and set(medium.goals) <= starts
    hard = quota_subset(2, "hard", graph, [3], "catalog", 6, seed=1)
    assert hard.goals[0] not in starts and len(hard.tools) <= 6 and hard.goals[0] in hard.tools
    domain = quota_subset(3, "easy", graph, [3], "domain", 115, seed=1)
    assert len(domain.tools) < 15 and domain.difficulty == "easy"


def _pipeline_text(tmp_path: Path, tools: Path, stage1: str) -> Path:
    (tmp_path / "pipelines.yaml").write_text(textwrap.dedent(f"""\
        pipelines:
          navi:
            dataset_dir: {tmp_path / 'navi'}
            tools: {tools}
            environment: {{kind: python, module: {TRAVEL / 'tools.py'}, timeout_s: 5}}
            stages:
              stage1:
        """) + textwrap.indent(textwrap.dedent(stage1), " " * 8))
    return tmp_path / "pipelines.yaml"


def test_a_quota_the_catalog_cannot_meet_is_an_error_naming_it_before_anything_runs(tmp_path, graph):
    lookups = [spec for spec in json.loads((TRAVEL / "tools.json").read_text())
               if spec["name"] in ("Search_Flight_Location", "Search_Hotel_Destination")]
    (tmp_path / "lookups.json").write_text(json.dumps(lookups))
    pipelines = _pipeline_text(tmp_path, tmp_path / "lookups.json", f"""\
        offline: true
        queries: 10
        difficulty_quotas: {{easy: 0.5, hard: 0.5}}
        candidates: catalog
        value_pools: {TRAVEL / 'value_pools.json'}
        """)
    result = CliRunner().invoke(app, ["stage1", "navi", "--file", str(pipelines)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "stages.stage1.difficulty_quotas.hard: 5 nested drafts asked" in result.stderr
    assert not (tmp_path / "navi" / "build" / "drafts.jsonl").exists()
    with pytest.raises(Exception, match=r"difficulty_quotas.medium: 3 drafts of independent calls"):
        one_start = build_feed_graph(load_tools_file(tmp_path / "lookups.json")[:1],
                                     load_value_pools(TRAVEL / "value_pools.json"))
        check_quotas(one_start, {"easy": 0.7, "medium": 0.3}, 10, "catalog")


def test_quota_settings_are_checked_with_the_file_and_line(tmp_path):
    pipelines = _pipeline_text(tmp_path, TRAVEL / "tools.json", """\
        difficulty_quotas: {easy: 0.6, medium: 0.6}
        """)
    with pytest.raises(ConfigError, match=r"difficulty_quotas: difficulty shares must sum to 1"):
        load_pipelines(pipelines)
    pipelines = _pipeline_text(tmp_path, TRAVEL / "tools.json", """\
        difficulty_quotas: {trivial: 1.0}
        """)
    with pytest.raises(ConfigError, match=r"difficulty_quotas"):
        load_pipelines(pipelines)
    # the cap is the setting, 115 by default: 110 candidates is fine now, 120 is not
    pipelines = _pipeline_text(tmp_path, TRAVEL / "tools.json", "tool_subset_sizes: [110]\n")
    assert load_pipelines(pipelines).get_pipeline("navi").stages.stage1.candidate_tools_max == 115
    pipelines = _pipeline_text(tmp_path, TRAVEL / "tools.json", "tool_subset_sizes: [120]\n")
    with pytest.raises(ConfigError, match=r"120 is above candidate_tools_max \(115\)"):
        load_pipelines(pipelines)


def test_quotas_need_the_offline_sampler(tmp_path):
    pipelines = _pipeline_text(tmp_path, TRAVEL / "tools.json", f"""\
        offline: false
        queries: 2
        difficulty_quotas: {{easy: 1.0}}
        value_pools: {TRAVEL / 'value_pools.json'}
        """)
    text = pipelines.read_text().replace("    environment:", "    llm: {model: m, base_url: 'http://127.0.0.1:9/v1'}\n"
                                                           "    environment:")
    pipelines.write_text(text)
    result = CliRunner().invoke(app, ["stage1", "navi", "--file", str(pipelines)], env={"OPENAI_API_KEY": "x"})
    assert result.exit_code == 1 and "difficulty_quotas plans each draft's calls" in result.stderr
