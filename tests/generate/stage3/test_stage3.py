"""Stage3 generalization on the bundled travel world: N variants per template by slot substitution
(offline drafts used as templates) that all execute and reproduce; the checks rejecting a repeat
and a dropped slot value; the annotators' blanks; the LLM fill along the fixed path with scripted
answers from the local OpenAI-compatible server."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from annotate.stage3.junior import needs_arguments
from fcbench.catalog import load_tools_file
from fcbench.config import FilterConfig, PipelineConfig, load_pipelines
from fcbench.environments.python_env import PythonEnvironment
from fcbench.errors import UserError
from fcbench.environments.execution import execute_gold_path, execute_gold_paths
from fcbench.checks.verdicts import comparison_of, execution_verdict
from fcbench.formats import read_samples
from fcbench.references import parse_reference
from fcbench.sample import Call, Sample, sample_to_dict
from fcbench.checks.validate import validate_record
from fcbench.llm.mock_server import MockLLMServer
from generate.slots import detect_slot_instances, load_value_pools, substitute_slots, user_query
from generate.stage1.single import run_stage1
from fcbench.errors import ItemRejected
from generate.stage3.single import check_variant, make_variant, run_stage3

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"
POOLS = load_value_pools(TRAVEL / "value_pools.json")
GROUNDING = FilterConfig(grounding="reject")


def write_pipeline(directory: Path, *, fill: str = "slots", queries: int = 12, llm_url: str | None = None) -> PipelineConfig:
    directory.mkdir(parents=True, exist_ok=True)
    llm = f"    llm: {{model: mock-model, base_url: '{llm_url}', seed: 0, max_retries: 0}}\n" if llm_url else ""
    (directory / "pipelines.yaml").write_text(
        "pipelines:\n"
        "  travel:\n"
        f"    dataset_dir: {directory / 'dataset'}\n"
        "    seed: 20240601\n"
        f"    tools: {TRAVEL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}}}\n"
        f"{llm}"
        "    stages:\n"
        f"      stage1: {{offline: true, queries: {queries}, tool_subset_sizes: [3, 4], cross_domain_ratio: 0.25}}\n"
        f"      stage3: {{variants: 3, fill: {fill}, value_pools: {TRAVEL / 'value_pools.json'}}}\n"
        "      filter: {grounding: reject}\n", encoding="utf-8")
    return load_pipelines(directory / "pipelines.yaml").get_pipeline("travel")


@pytest.fixture(scope="module")
def environment():
    with PythonEnvironment(TRAVEL / "tools.py", load_tools_file(TRAVEL / "tools.json"), workers=2, timeout=5) as env:
        yield env


@pytest.fixture(scope="module")
def templates_file(tmp_path_factory, environment) -> Path:
    """Stage1's offline drafts stand in for stage2's gold templates."""
    pipeline = write_pipeline(tmp_path_factory.mktemp("templates"))
    run_stage1(pipeline, environment=environment)
    return pipeline.build_dir / "drafts.jsonl"


@pytest.fixture(scope="module")
def slots_run(tmp_path_factory, environment, templates_file):
    pipeline = write_pipeline(tmp_path_factory.mktemp("stage3"))
    return pipeline, run_stage3(pipeline, from_file=templates_file, environment=environment)


def templates(path: Path) -> list[Sample]:
    return list(read_samples(path, "fcbench"))


# -------------------------------------------------------------------------------- slots, offline
def test_every_template_gets_n_variants_that_execute(slots_run, templates_file, environment):
    pipeline, result = slots_run
    parents = templates(templates_file)
    per_parent = Counter(candidate.provenance.parent_id for candidate in result.candidates)
    assert per_parent == {template.id: 3 for template in parents}
    candidates = templates(pipeline.build_dir / "candidates.jsonl")
    assert [c.id for c in candidates] == [f"{t.id}-v{n}" for t in parents for n in (1, 2, 3)]
    runs = execute_gold_paths(candidates, environment)
    verdicts = [execution_verdict(c, [run], comparison_of(GROUNDING), []) for c, run in zip(candidates, runs)]
    assert [v.reason for v in verdicts if not v.kept] == []  # their stored responses are the real ones
    for candidate in candidates:
        assert validate_record(sample_to_dict(candidate)) == []
        assert candidate.provenance.stage == "stage3" and candidate.provenance.model == "slot-substitution"
        assert all("response" in call.model_fields_set for call in candidate.all_calls())
    summary = json.loads((pipeline.build_dir / "stage3.summary.json").read_text())
    assert summary["counts"]["candidates"] == 3 * len(parents)
    assert summary["counts"]["templates_with_all_variants"] == len(parents)
    assert sum(summary["reasons"].values()) == summary["counts"]["rejected"]


def test_variants_change_slot_values_in_query_and_arguments_alike(slots_run, templates_file):
    _, result = slots_run
    by_id = {t.id: t for t in templates(templates_file)}
    for candidate in result.candidates:
        template = by_id[candidate.provenance.parent_id]
        assert user_query(candidate) != user_query(template)
        # the path keeps its shape: same tools, same references
        assert [[c.name for c in s] for s in candidate.calls] == [[c.name for c in s] for s in template.calls]
        for old, new in zip(template.all_calls(), candidate.all_calls()):
            refs = {k: v for k, v in old.arguments.items() if parse_reference(v)}
            assert {k: new.arguments[k] for k in refs} == refs
        for change in candidate.meta["stage3"]["changed"]:
            new_values = {v for k, v in change["to"].items() if k != "words"}
            held = {v for call in candidate.all_calls() for v in call.arguments.values()}
            assert new_values & held, change


def test_a_flight_variant_moves_both_ends(slots_run, templates_file):
    """The first draft asks for flights between two cities: each end gets a new city, never the same one."""
    _, result = slots_run
    flight_variants = [c for c in result.candidates if any(call.name == "Search_Flights" for call in c.all_calls())]
    assert flight_variants
    for variant in flight_variants:
        lookups = [call for call in variant.all_calls() if call.name == "Search_Flight_Location"]
        assert len({call.arguments["query"] for call in lookups}) == 2
        assert all(call.arguments["query"] in user_query(variant) for call in lookups)


def test_repeats_and_dropped_slot_values_are_rejected(templates_file, environment):
    template = next(t for t in templates(templates_file)
                    if any(i.slot == "city" for i in detect_slot_instances(t, POOLS)))
    good = substitute_slots(template, POOLS, random.Random(3))
    variant = make_variant(template, 1, good.query, good.calls, "test", 1, {})
    executed = check_variant(template, variant, [], POOLS, environment, GROUNDING)
    assert "response" in executed.calls[-1][-1].model_fields_set

    same_query = make_variant(template, 2, user_query(template), good.calls, "test", 1, {})
    with pytest.raises(ItemRejected) as repeated:
        check_variant(template, same_query, [executed], POOLS, environment, GROUNDING)
    assert repeated.value.reason == "stage3.duplicate_query" and "the template" in repeated.value.detail

    same_arguments = make_variant(template, 3, good.query + " Thanks!", good.calls, "test", 1, {})
    with pytest.raises(ItemRejected) as twice:
        check_variant(template, same_arguments, [executed], POOLS, environment, GROUNDING)
    assert twice.value.reason == "stage3.duplicate_arguments" and template.id + "-v1" in twice.value.detail

    # the query names a third city while the arguments hold the variant's one
    moved = next(new["query"] for slot, _, new in good.changed if slot == "city")
    third = next(v["query"] for v in POOLS.slots["city"].values if v["query"] not in good.query)
    dropped = make_variant(template, 4, good.query.replace(moved, third), good.calls, "test", 1, {})
    with pytest.raises(ItemRejected) as lost:
        check_variant(template, dropped, [], POOLS, environment, GROUNDING)
    assert lost.value.reason == "stage3.dropped_slot_value"
    assert moved in lost.value.detail and "does not state" in lost.value.detail


def test_missing_templates_is_a_clear_error(tmp_path):
    pipeline = write_pipeline(tmp_path)
    with pytest.raises(UserError, match=r"templates.jsonl: no such file .*stage2 pull travel"):
        run_stage3(pipeline)


def test_annotators_fill_blanks_literal_arguments(tmp_path, templates_file, environment):
    pipeline = write_pipeline(tmp_path, fill="annotators")
    result = run_stage3(pipeline, from_file=templates_file, environment=environment)
    assert result.candidates and result.summary["counts"]["needs_arguments"] == len(result.candidates)
    for candidate in result.candidates:
        assert candidate.meta["stage3"]["needs_arguments"] is True and needs_arguments(candidate)
        for call in candidate.all_calls():
            assert "response" not in call.model_fields_set
            assert all(value is None or parse_reference(value) for value in call.arguments.values())


# ------------------------------------------------------------------------------------ LLM fill
def flight_template(environment) -> Sample:
    tools = [t for t in load_tools_file(TRAVEL / "tools.json") if t.name in ("Search_Flight_Location", "Search_Flights")]
    sample = Sample(id="tpl-1", domain="flights",
                    messages=[{"role": "user", "content": "Find flights from Sydney to London on June 12, 2025."}],
                    tools=tools, calls=[
                        [Call(label="var_1", name="Search_Flight_Location", arguments={"query": "Sydney"}),
                         Call(label="var_2", name="Search_Flight_Location", arguments={"query": "London"})],
                        [Call(label="var_3", name="Search_Flights", arguments={
                            "fromId": "$var_1.data[0].id$", "toId": "$var_2.data[0].id$", "departDate": "2025-06-12"})]])
    return execute_gold_path(sample, environment).sample


VARIANTS = {  # variant number -> (query, origin, destination, date)
    1: ("Find flights from Rome to Berlin on September 5, 2025.", "Rome", "Berlin", "2025-09-05"),
    2: ("Find flights from Tokyo to Paris on October 3, 2025.", "Tokyo", "Rome", "2025-10-03"),  # fills Rome, not Paris
    3: ("Find flights from Rome to Berlin on September 5, 2025.", "Rome", "Berlin", "2025-09-05"),  # repeats variant 1
}


def scripted(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    number = body.get("seed", 0) // 1000 + 1  # the client sends seed + (variant index) * 1000 + attempt
    query, origin, destination, day = VARIANTS[number]
    if not body.get("tools"):
        return {"content": json.dumps({"query": query})}
    assert query in body["messages"][-1]["content"]  # the fill request carries the new query and the path
    return {"tool_calls": [
        {"name": "Search_Flight_Location", "arguments": {"query": origin}},
        {"name": "Search_Flight_Location", "arguments": {"query": destination}},
        {"name": "Search_Flights", "arguments": {"fromId": "$var_1.data[0].id$", "toId": "$var_2.data[0].id$",
                                                 "departDate": day}}]}


def test_llm_fill_along_the_fixed_path(tmp_path, environment):
    template = flight_template(environment)
    source = tmp_path / "templates.jsonl"
    source.write_text(json.dumps(sample_to_dict(template)) + "\n", encoding="utf-8")
    with MockLLMServer(responder=scripted) as server:
        pipeline = write_pipeline(tmp_path / "p", fill="llm", llm_url=server.base_url)
        result = run_stage3(pipeline, from_file=source, environment=environment)
    assert [c.id for c in result.candidates] == ["tpl-1-v1"]
    (variant,) = result.candidates
    assert user_query(variant) == VARIANTS[1][0]
    assert [c.arguments for c in variant.calls[0]] == [{"query": "Rome"}, {"query": "Berlin"}]
    assert variant.calls[1][0].arguments["departDate"] == "2025-09-05"
    assert variant.calls[1][0].response["data"]["flightOffers"]  # executed: real responses
    assert variant.provenance.parent_id == "tpl-1" and variant.provenance.model == "mock-model"
    assert variant.provenance.stage == "stage3"
    reasons = {r["id"]: r["reason"] for r in result.rejects}
    # variant 2's "Rome" is nowhere in its query ("Tokyo to Paris"): no span gives it
    assert reasons == {"tpl-1-v2": "grounding.ungrounded_value", "tpl-1-v3": "stage3.duplicate_query"}
    assert variant.meta["provenance"]["var_3"]["departDate"]["spans"][0]["text"] == "September 5, 2025"
    assert result.summary["llm"]["requests_sent"] == 6  # a rewrite and a fill per variant


def test_cli_stage3_run_is_byte_identical_and_llm_fill_falls_back_offline(slots_run, templates_file):
    from typer.testing import CliRunner

    from fcbench.cli import app

    pipeline, _ = slots_run
    expected = (pipeline.build_dir / "candidates.jsonl").read_bytes()
    again = write_pipeline(pipeline.dataset_path.parent / "again", fill="llm")  # no llm: configured
    result = CliRunner().invoke(app, ["stage3", "run", "travel", "--file", str(again.dataset_path.parent / "pipelines.yaml"),
                                      "--input", str(templates_file), "--offline", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["fill"] == "slots" and summary["counts"]["candidates"] == len(templates(templates_file)) * 3
    assert (again.build_dir / "candidates.jsonl").read_bytes() == expected  # same seed, same templates


def test_a_template_without_a_user_turn_gets_the_variant_query_as_one():
    from fcbench.sample import Call, Sample, Tool
    from generate.stage3.single import make_variant

    template = Sample(id="t", messages=[], tools=[Tool(name="f")], calls=[[Call(label="c1", name="f")]])
    variant = make_variant(template, 1, "find hotels in Rome", template.calls, "slots", 0, {})
    assert variant.messages == [{"role": "user", "content": "find hotels in Rome"}]
    assert variant.provenance.parent_id == "t"
