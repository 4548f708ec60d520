"""NESTful-style stage1 from seed examples (generate/stage1/from_seeds.py) and the bundled
`nestful-gen` pipeline: the published seeds' call structures re-instantiated over the typed
functions of datasets/nestful-gen/tools.py, executed in the python environment; and the few-shot
LLM path against the mock server."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from fcbench.catalog import load_tools_file
from fcbench.config import load_pipelines
from fcbench.environments.execution import execute_gold_path
from fcbench.environments.python_env import PythonEnvironment
from fcbench.formats import read_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.references import iter_references
from fcbench.sample import Sample, path_shape
from generate.stage1.from_seeds import (SeedUnusable, instantiate, load_phrases, parse_llm_draft, render_query,
                                        structure_of)
from generate.stage1.single import run_stage1
from nestful_gen_pipeline import nestful_gen_pipelines_file

REPO = Path(__file__).resolve().parents[3]
GEN = REPO / "datasets" / "nestful-gen"
SEEDS = REPO / "datasets" / "nestful-math" / "seeds.jsonl"
POPULATION = "a5ae1249-7f33-4d40-8ad1-914a0623e3bd"  # "population of a town is 10000 ... after 2 years?" -> 6400


@pytest.fixture(scope="module")
def catalog():
    return {tool.name: tool for tool in load_tools_file(GEN / "tools.py")}


@pytest.fixture(scope="module")
def phrases():
    return load_phrases(GEN / "phrases.json")


@pytest.fixture(scope="module")
def seeds():
    return {item.id: item for item in read_samples(SEEDS, "fcbench") if isinstance(item, Sample)}


@pytest.fixture(scope="module")
def environment(catalog):
    with PythonEnvironment(GEN / "tools.py", list(catalog.values()), workers=2, timeout=5) as env:
        yield env


def test_the_published_population_example_keeps_its_structure_and_its_answer(catalog, phrases, seeds, environment):
    """NESTful's worked example: 10000 people, -20 % a year, 2 years -> 6400. Its 9 published calls
    compute 20/100 three times and the first year twice; merged, 5 calls remain, and run with the
    seed's own values they still give the published answer."""
    seed = seeds[POPULATION]
    structure = structure_of(seed, catalog, phrases, max_calls=12)
    assert [call.name for call in structure.calls] == ["divide", "multiply", "subtract", "multiply", "subtract"]
    assert structure.literals == [20, 100, 10000]
    calls = instantiate(structure, random.Random(0))
    original = {new: old for old, new in zip(structure.literals, _literals_in_order(calls))}
    calls = [call.model_copy(update={"arguments": {k: original.get(v, v) if not isinstance(v, str) else v
                                                   for k, v in call.arguments.items()}}) for call in calls]
    assert render_query(calls, phrases) == ("Let a be 20 divided by 100. Let b be the product of 10000 and a. "
                                            "Let c be 10000 minus b. Let d be the product of c and a. What is c minus d?")
    sample = seed.model_copy(update={"calls": [[call] for call in calls], "tools": list(catalog.values())})
    result = execute_gold_path(sample, environment)
    assert result.ok and result.answer == pytest.approx(6400.0) and seed.answer == 6400.0


def _literals_in_order(calls):
    found = []
    for call in calls:
        for value in call.arguments.values():
            if not isinstance(value, str) and value not in found:
                found.append(value)
    return found


def test_instantiate_keeps_equal_values_equal_whole_numbers_whole_and_is_seeded(catalog, phrases, seeds):
    structure = structure_of(seeds[POPULATION], catalog, phrases, max_calls=12)
    first = instantiate(structure, random.Random("x"))
    assert first == instantiate(structure, random.Random("x"))
    assert first != instantiate(structure, random.Random("y"))
    # 10000 is used by calls 2 and 3 of the merged structure: one new value for both
    assert first[1].arguments["arg_0"] == first[2].arguments["arg_0"]
    assert all(isinstance(v, int) for call in first for v in call.arguments.values() if not isinstance(v, str))
    assert 5000 <= first[1].arguments["arg_0"] <= 15000
    assert first[4].arguments == {"arg_0": "$var_3.result$", "arg_1": "$var_4.result$"}


def test_unusable_seeds_name_their_reason(catalog, phrases, seeds):
    seed = seeds[POPULATION]
    unknown = seed.model_copy(update={"calls": [[seed.calls[0][0].model_copy(update={"name": "volume_cone"})]]})
    with pytest.raises(SeedUnusable, match="tool_not_in_catalog"):
        structure_of(unknown, catalog, phrases, max_calls=12)
    flat = seed.model_copy(update={"calls": seed.calls[:1]})
    with pytest.raises(SeedUnusable, match="no_nested_call"):
        structure_of(flat, catalog, phrases, max_calls=12)
    with pytest.raises(SeedUnusable, match="too_many_calls"):
        structure_of(seed, catalog, phrases, max_calls=4)
    two_answers = seed.model_copy(update={"calls": seed.calls[:3] + [[seed.calls[0][0].model_copy(
        update={"label": "var_x", "arguments": {"arg_0": 7, "arg_1": "$var_1.result$"}})]]})
    with pytest.raises(SeedUnusable, match="several_final_results"):
        structure_of(two_answers, catalog, phrases, max_calls=12)


def _pipeline(tmp_path: Path, *, queries: int = 30, llm_url: str | None = None):
    config = load_pipelines(REPO / "pipelines.yaml").get_pipeline("nestful-gen")
    assert config.stages.stage1.from_seeds is not None and config.stages.filter.min_nested_calls == 1
    path = nestful_gen_pipelines_file(tmp_path, queries=queries, llm_url=llm_url)
    return load_pipelines(path).get_pipeline("nestful-gen")


def test_offline_drafts_do_what_their_question_says_and_are_byte_identical_on_rerun(tmp_path, environment):
    pipeline = _pipeline(tmp_path)
    result = run_stage1(pipeline, environment=environment)
    drafts = result.drafts
    assert len(drafts) == 30 and result.summary["seeds"]["usable"] >= 80
    for draft in drafts:
        query = draft.messages[0]["content"]
        shape = path_shape(draft)
        assert shape.n_calls >= 2 and shape.n_nested_calls >= 1
        assert query.startswith("Let a be " if shape.n_calls > 1 else "What is ") and query.endswith("?")
        assert query.count("Let ") == shape.n_calls - 1
        for call in draft.all_calls():
            assert "response" in call.model_fields_set
            for value in call.arguments.values():
                if not (isinstance(value, str) and list(iter_references(value))):
                    assert str(value) in query  # every stated number is in the question
        assert draft.answer == draft.all_calls()[-1].response["result"]
        assert draft.provenance.parent_id and draft.provenance.model == "seed-structures"
    assert len({d.messages[0]["content"] for d in drafts}) == len(drafts)
    first = (pipeline.build_dir / "drafts.jsonl").read_bytes()
    run_stage1(pipeline, environment=environment, force=True)
    assert (pipeline.build_dir / "drafts.jsonl").read_bytes() == first


def test_llm_few_shot_drafts_are_executed_and_bad_ones_rejected_with_reasons(tmp_path, environment):
    asked: list[str] = []

    def model(body, call_index):
        prompt = body["messages"][-1]["content"]
        asked.append(prompt)
        draft = body.get("seed", 0) // 1000
        if draft == 0:
            return {"content": json.dumps({"question": "A shop sells 12 boxes of 30 pens and 45 pens are sold. "
                                                       "How many pens are left?",
                                           "calls": [{"name": "multiply", "arguments": {"arg_0": 12, "arg_1": 30}},
                                                     {"name": "subtract",
                                                      "arguments": {"arg_0": "$var_1.result$", "arg_1": 45}}]})}
        if draft == 1:  # no call reads an earlier result
            return {"content": json.dumps({"question": "What is 3 plus 4?",
                                           "calls": [{"name": "add", "arguments": {"arg_0": 3, "arg_1": 4}}]})}
        return {"content": json.dumps({"question": "Divide 5 by the difference of 2 and 2.",  # runs into 5 / 0
                                       "calls": [{"name": "subtract", "arguments": {"arg_0": 2, "arg_1": 2}},
                                                 {"name": "divide", "arguments": {"arg_0": 5, "arg_1": "$var_1.result$"}}]})}

    with MockLLMServer(responder=model) as server:
        pipeline = _pipeline(tmp_path, queries=3, llm_url=server.base_url)
        result = run_stage1(pipeline, environment=environment)
    (draft,) = result.drafts
    assert [call.name for call in draft.all_calls()] == ["multiply", "subtract"] and draft.answer == 315
    assert draft.all_calls()[1].response == {"result": 315}
    rejects = {r["id"]: r for r in result.rejects}
    assert rejects["nestful-gen-draft-0002"]["reason"] == "stage1.unusable_draft"
    assert "no_nested_call" in rejects["nestful-gen-draft-0002"]["detail"]
    assert rejects["nestful-gen-draft-0003"]["reason"] == "stage1.not_executable"
    assert "division by zero" in rejects["nestful-gen-draft-0003"]["detail"]
    # few-shot: each prompt shows three published seeds, question and call sequence, and the tools
    assert all(prompt.count("Example ") == 3 and '"name": "add"' in prompt for prompt in asked)
    assert len(draft.meta["stage1"]["few_shot"]) == 3


def test_parse_llm_draft_refuses_references_forward_and_unknown_tools(catalog):
    from fcbench.errors import ItemRejected

    with pytest.raises(ItemRejected) as forward:
        parse_llm_draft(json.dumps({"question": "q", "calls": [
            {"name": "add", "arguments": {"arg_0": "$var_2.result$", "arg_1": 1}},
            {"name": "add", "arguments": {"arg_0": 1, "arg_1": 1}}]}), catalog)
    assert forward.value.reason == "stage1.bad_reference"
    with pytest.raises(ItemRejected) as unknown:
        parse_llm_draft(json.dumps({"question": "q", "calls": [{"name": "eval", "arguments": {}}]}), catalog)
    assert unknown.value.reason == "stage1.unknown_tool"
