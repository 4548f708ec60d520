"""pipelines.yaml: the shipped file loads; every mistake is reported as FILE:LINE: key: message."""

from __future__ import annotations

from pathlib import Path

import pytest

from fcbench.errors import ConfigError
from fcbench.config import COMPLEXITIES, PipelinesFile, load_pipelines
from fcbench.errors import UserError

REPO = Path(__file__).resolve().parents[2]

VALID = """\
pipelines:
  travel:
    dataset_dir: datasets/travel
    environment:
      kind: python
      module: datasets/travel/tools.py
    stages:
      stage1:
        offline: true
        queries: 40
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipelines.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _problems(tmp_path: Path, text: str) -> list[str]:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_pipelines(path)
    prefix = f"{path}:"
    assert all(problem.startswith(prefix) for problem in caught.value.problems)
    return [problem[len(prefix):] for problem in caught.value.problems]


def test_shipped_pipelines_file_declares_travel_nestful_math_and_amadeus():
    config = load_pipelines(REPO / "pipelines.yaml")
    assert list(config.pipelines) == ["travel", "nestful-math", "nestful-gen", "travel-navi", "amadeus", "travel-chat",
                                      "travel-chat-all", "travel-full", "workspace"]
    every_type = config.get_pipeline("travel-chat-all").conversation
    assert set(every_type.complexities) == set(COMPLEXITIES) and len(COMPLEXITIES) == 13
    assert every_type.review.enabled and every_type.review.export_file
    workspace = config.get_pipeline("workspace")  # over MCP servers, replayed unless --record
    assert workspace.environment.kind == "mcp" and workspace.environment.record is False
    assert set(workspace.environment.servers) == {"memory", "filesystem", "time"}
    assert workspace.environment.servers["time"].stateful is False and workspace.environment.servers["memory"].stateful
    full = config.get_pipeline("travel-full")  # the 1,000-sample profile builds in its own folder
    assert full.build_dir != config.get_pipeline("travel").build_dir
    assert full.stages.stage3.variants * full.stages.stage2.select >= 1000
    amadeus = config.get_pipeline("amadeus")
    assert amadeus.environment.kind == "http" and amadeus.environment.record is False  # replay unless --record
    travel = config.get_pipeline("travel")
    assert travel.name == "travel"
    assert travel.environment.kind == "python"
    assert travel.resolve(travel.environment.module) == REPO / "datasets/travel/tools.py"
    assert travel.dataset_path == REPO / "datasets/travel"
    assert travel.stages.stage1.offline is True
    assert travel.llm.api_key_env == "OPENAI_API_KEY"
    math = config.get_pipeline("nestful-math")
    assert math.resolve(math.environment.module) == REPO / "datasets/nestful-math/tools.py"
    assert math.stages.filter.tolerance.mode == "round_to_gold"
    assert math.declared_stages() == ["filter", "export"]  # the published samples are its candidates
    assert math.stages.stage3.variants == 3  # not declared: default


def test_defaults_and_paths_relative_to_the_file(tmp_path):
    config = load_pipelines(_write(tmp_path, VALID))
    travel = config.get_pipeline("travel")
    assert travel.dataset_path == (tmp_path / "datasets/travel").resolve()
    assert travel.build_dir == travel.dataset_path / "build"
    assert (travel.seed, travel.llm, travel.tools_path) == (0, None, None)
    assert travel.stages.stage1.tool_subset_sizes == [3, 5]
    assert travel.stages.export.ratios == {"test": 1.0}
    assert isinstance(config, PipelinesFile) and config.path == tmp_path / "pipelines.yaml"


def test_wrong_type_is_reported_on_its_line(tmp_path):
    text = VALID.replace("queries: 40", "queries: many")
    assert _problems(tmp_path, text) == ["10: pipelines.travel.stages.stage1.queries: expected an integer"]


def test_quoted_number_is_not_silently_an_integer(tmp_path):
    text = VALID.replace("queries: 40", 'queries: "40"')
    assert _problems(tmp_path, text) == ["10: pipelines.travel.stages.stage1.queries: expected an integer"]


def test_unknown_key_is_reported_on_its_own_line(tmp_path):
    text = VALID.replace("        queries: 40\n", "        queries: 40\n        querys: 3\n")
    assert _problems(tmp_path, text) == ["11: pipelines.travel.stages.stage1.querys: unknown key"]


def test_several_problems_in_file_order(tmp_path):
    text = VALID + "      export:\n        ratios: {train: 0.5, test: 0.4}\n"
    text = text.replace("kind: python", "kind: shell").replace("queries: 40", "queries: 4.5")
    assert _problems(tmp_path, text) == [
        "5: pipelines.travel.environment.kind: expected one of 'python', 'recorded', 'http', 'simulated' or 'mcp', got 'shell'",
        "10: pipelines.travel.stages.stage1.queries: expected an integer",
        "11: pipelines.travel.stages.export: split ratios must sum to 1, got 0.9",
    ]


def test_misplaced_section_is_an_unknown_key(tmp_path):
    text = VALID + "    export:\n      formats: [parquet]\n"  # belongs under stages
    assert _problems(tmp_path, text) == ["11: pipelines.travel.export: unknown key"]


def test_missing_required_key_is_reported_at_its_parent(tmp_path):
    text = VALID.replace("    dataset_dir: datasets/travel\n", "")
    assert _problems(tmp_path, text) == ["2: pipelines.travel.dataset_dir: missing required key"]
    no_module = VALID.replace("      module: datasets/travel/tools.py\n", "")
    assert _problems(tmp_path, no_module) == [
        "4: pipelines.travel.environment: environment kind 'python' needs 'module'"]


def test_a_literal_api_key_is_refused(tmp_path):
    text = VALID + "    llm:\n      model: gpt-4o-mini\n      api_key: sk-secret\n"
    problems = _problems(tmp_path, text)
    assert len(problems) == 1
    assert problems[0].startswith("13: pipelines.travel.llm.api_key: an API key may not be written in the file")
    assert "sk-secret" not in problems[0]


def test_pipeline_names_must_be_usable_as_folder_names(tmp_path):
    text = VALID.replace("  travel:", "  Travel Bench:")
    assert _problems(tmp_path, text) == [
        "2: pipelines.Travel Bench: pipeline names are lowercase letters, digits, '-' and '_'"]


def test_yaml_syntax_error_names_file_and_line(tmp_path):
    text = VALID.replace("queries: 40", "queries: [40")
    problems = _problems(tmp_path, text)
    assert len(problems) == 1 and problems[0].startswith("11: invalid YAML:")


def test_duplicate_keys_are_errors_not_last_one_wins(tmp_path):
    text = VALID.replace("        queries: 40\n", "        queries: 40\n        queries: 50\n")
    assert _problems(tmp_path, text) == ["11: pipelines.travel.stages.stage1.queries: duplicate key"]


def test_empty_file_and_file_without_pipelines(tmp_path):
    assert _problems(tmp_path, "") == ["1: expected a mapping with a 'pipelines' key"]
    assert _problems(tmp_path, "pipelines: {}\n") == ["1: pipelines: expected at least 1 entry"]
    assert _problems(tmp_path, "pipelines:\n") == ["1: pipelines: expected a mapping"]


def test_error_message_is_one_line_with_a_count(tmp_path):
    path = _write(tmp_path, VALID.replace("queries: 40", "queries: x").replace("offline: true", "offline: 3"))
    with pytest.raises(ConfigError) as caught:
        load_pipelines(path)
    assert str(caught.value) == (f"{path}:9: pipelines.travel.stages.stage1.offline: expected true or false "
                                 "(and 1 more problems)")
    assert "\n" not in str(caught.value)


def test_unknown_pipeline_lists_the_declared_ones(tmp_path):
    config = load_pipelines(_write(tmp_path, VALID))
    with pytest.raises(UserError, match=r"no pipeline named 'hotels'; declared: travel"):
        config.get_pipeline("hotels")
    with pytest.raises(UserError, match="no such file"):
        load_pipelines(tmp_path / "absent.yaml")


def test_the_ray_backend_is_declared_for_python_tools_only(tmp_path):
    default = load_pipelines(_write(tmp_path, VALID)).get_pipeline("travel").environment
    assert default.backend == "local" and default.ray.address is None  # single-machine default
    ray = VALID.replace("      module: datasets/travel/tools.py\n",
                        "      module: datasets/travel/tools.py\n      backend: ray\n"
                        "      ray: {address: 'ray://head:10001', paths_per_task: 64}\n")
    settings = load_pipelines(_write(tmp_path, ray)).get_pipeline("travel").environment
    assert (settings.backend, settings.ray.address, settings.ray.paths_per_task) == ("ray", "ray://head:10001", 64)
    recorded = VALID.replace("      kind: python\n      module: datasets/travel/tools.py\n",
                             "      kind: recorded\n      responses: r.jsonl\n      backend: ray\n")
    assert any("backend 'ray' runs python tools" in problem for problem in _problems(tmp_path, recorded))


def test_counts_sizes_and_shares_have_bounds(tmp_path):
    """`queries: 1e23` once made stage1 grow memory with no output: runaway settings are refused."""
    text = VALID.replace("queries: 40", "queries: 100000000000000000000000")
    assert _problems(tmp_path, text) == [
        "10: pipelines.travel.stages.stage1.queries: input should be less than or equal to 10000000"]
    negative = VALID + "      export:\n        ratios: {train: 1.5, test: -0.5}\n"
    assert any("each split's share must be in (0, 1]" in problem for problem in _problems(tmp_path, negative))


CONVERSATION = """\
pipelines:
  chat:
    kind: conversation
    dataset_dir: chat
    conversation:
      scenarios: 4
      complexities:
        - follow_up
        - goal_stackng
        - no_target
"""


def test_an_unknown_conversation_type_is_named_on_its_own_line(tmp_path):
    problems = _problems(tmp_path, CONVERSATION)
    assert problems[0].startswith("9: pipelines.chat.conversation.complexities.goal_stackng: unknown conversation type "
                                  "'goal_stackng' (did you mean 'goal_stacking'?); known: follow_up,")
    mapping = CONVERSATION.replace("      complexities:\n        - follow_up\n        - goal_stackng\n        - no_target\n",
                                   "      complexities: {follow_up: 0.5, goal_stackng: 0.5}\n")
    assert _problems(tmp_path, mapping)[0].startswith("7: pipelines.chat.conversation.complexities.goal_stackng: unknown")
    twice = CONVERSATION.replace("goal_stackng", "follow_up")
    assert _problems(tmp_path, twice) == ["7: pipelines.chat.conversation.complexities: 'follow_up' is listed twice"]


def test_a_list_of_conversation_types_means_equal_shares(tmp_path):
    config = load_pipelines(_write(tmp_path, CONVERSATION.replace("goal_stackng", "goal_stacking")))
    shares = config.get_pipeline("chat").conversation.complexities
    assert list(shares) == ["follow_up", "goal_stacking", "no_target"] and set(shares.values()) == {1 / 3}


def test_the_dialog_act_cap_and_the_scenario_review_are_checked(tmp_path):
    capped = VALID + "      export:\n        max_per_dialog_act: 20\n"
    assert "caps the response-quality set of `kind: conversation` pipelines" in _problems(tmp_path, capped)[0]
    assert "greater than or equal to 1" in _problems(tmp_path, CONVERSATION.replace(
        "      scenarios: 4\n", "      scenarios: 4\n      review: {enabled: true}\n").replace(
        "goal_stackng", "goal_stacking") + "    stages:\n      export: {max_per_dialog_act: 0}\n")[0]
    assert _problems(tmp_path, CONVERSATION.replace("goal_stackng", "goal_stacking").replace(
        "      scenarios: 4\n", "      scenarios: 4\n      review: {enable: true}\n")) == [
        "7: pipelines.chat.conversation.review.enable: unknown key"]
