"""datasets/nestful-math/tools.py against the published NESTful files: every math tool they name is
implemented with the spec's parameters, and every math gold path reproduces its gold answer."""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
from typing import Any

import pytest

from conftest import EXTERNAL, REPO, read_all
from fcbench.answers import NESTFUL_COMPARISON, AnswerComparison
from fcbench.environments.python_env import PythonEnvironment
from fcbench.environments.execution import execute_gold_paths
from fcbench.sample import Sample

NESTFUL = EXTERNAL / "nestful"
TOOLS_MODULE = REPO / "datasets" / "nestful-math" / "tools.py"
V2_FILES = ["toy_data.jsonl", "icl_examples.json", *(f"predictions/{p.name}" for p in sorted((NESTFUL / "predictions").glob("*.jsonl")))]
MATH_SAMPLES_PER_FILE = {
    "toy_data.jsonl": 3,
    "icl_examples.json": 2,
    "predictions/nestful_0-qwen3-8b-8bit-cot.jsonl": 79,
    "predictions/nestful_0-qwen3-8b-8bit-vanilla.jsonl": 79,
    "predictions/nestful_0-qwen3-8b-8bit.jsonl": 7,
    "predictions/nestful_3-qwen3-8b-8bit-icl.jsonl": 79,
    "predictions/nestful_3-qwen3-8b-8bit.jsonl": 7,
}


def raw_records(name: str) -> list[dict[str, Any]]:
    path = NESTFUL / name
    if path.suffix == ".json":
        return json.loads(path.read_text())
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def decoded(value: Any) -> Any:
    """Some files hold `output`, `tools` and `gold_answer` as JSON-encoded strings."""
    return json.loads(value) if isinstance(value, str) else value


def is_math_record(record: dict[str, Any]) -> bool:
    """Math samples use `$var_N` labels and only basic functions (predictions/README.md); code
    samples use `$varN` labels and tools from py_code_file_N.py."""
    return all(call["label"].startswith("$var_") for call in decoded(record["output"]))


def math_tool_specs() -> dict[str, dict[str, Any]]:
    """Every tool spec offered by a math sample in any published v2 file, collected from the raw JSON."""
    specs: dict[str, dict[str, Any]] = {}
    for name in V2_FILES:
        for record in raw_records(name):
            if is_math_record(record):
                for spec in decoded(record["tools"]):
                    specs.setdefault(spec["name"], spec)
    return specs


def load_tools_module():
    spec = importlib.util.spec_from_file_location("nestful_math_tools_under_test", TOOLS_MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_math_tool_named_in_the_files_is_implemented_with_its_parameters():
    specs = math_tool_specs()
    assert len(specs) == 40
    module = load_tools_module()
    for name, spec in specs.items():
        function = getattr(module, name, None)
        assert callable(function), f"{name} is not implemented"
        assert list(inspect.signature(function).parameters) == list(spec["parameters"]), name


def test_math_samples_are_told_apart_from_code_samples():
    for name, expected in MATH_SAMPLES_PER_FILE.items():
        records = raw_records(name)
        assert sum(is_math_record(record) for record in records) == expected, name
        adapter_math = [sample for sample in read_all(NESTFUL / name, "nestful") if sample.domain == "math"]
        assert len(adapter_math) == expected, name


def test_tools_compute_what_their_descriptions_say():
    tools = load_tools_module()
    assert tools.divide(20, 100) == {"result": 0.2}
    assert tools.inverse(arg_0=4) == {"result": 0.25}
    assert tools.log(arg_0=8, arg_1=2) == {"result": 3.0}
    assert tools.log(arg_0=math.e) == {"result": 1.0}
    assert tools.choose(arg_0=5, arg_1=2) == {"result": 10} and tools.permutation(arg_0=5, arg_1=2) == {"result": 20}
    assert tools.factorial(arg_0=5.0) == {"result": 120}
    assert tools.gcd(arg_0=12, arg_1=18) == {"result": 6} and tools.lcm(arg_0=4, arg_1=6) == {"result": 12}
    assert tools.remainder(arg_0=17, arg_1=5) == tools.reminder(arg_0=17, arg_1=5) == {"result": 2}
    assert tools.max_number(arg_0=[3, 9.5, 1]) == {"result": 9.5} and tools.min_number(arg_0=[3, 9.5, 1]) == {"result": 1}
    assert tools.diagonal(arg_0=3, arg_1=4) == {"result": 5.0}
    assert tools.rectangle_perimeter(arg_0=3, arg_1=4) == {"result": 14}
    assert tools.triangle_area(arg_0=6, arg_1=4) == tools.rhombus_area(arg_0=6, arg_1=4) == {"result": 12.0}
    assert tools.negate_prob(arg_0=0.25) == {"result": 0.75}
    assert tools.cube_edge_by_volume(arg_0=27) == {"result": 3.0}
    assert tools.square_edge_by_area(arg_0=49) == {"result": 7.0} and tools.square_edge_by_perimeter(arg_0=20) == {"result": 5.0}
    assert tools.volume_cone(arg_0=3, arg_1=4)["result"] == pytest.approx(12 * math.pi)
    assert tools.surface_cylinder(arg_0=1, arg_1=2)["result"] == pytest.approx(6 * math.pi)
    assert tools.volume_sphere(arg_0=3)["result"] == pytest.approx(36 * math.pi)
    assert tools.circumface(arg_0=1)["result"] == pytest.approx(2 * math.pi)
    assert tools.speed(arg_0=100, arg_1=4) == {"result": 25.0}
    with pytest.raises(ValueError):
        tools.factorial(arg_0=2.5)


@pytest.fixture(scope="module")
def samples_by_file() -> dict[str, list[Sample]]:
    return {name: [s for s in read_all(NESTFUL / name, "nestful") if s.domain == "math"] for name in V2_FILES}


@pytest.fixture(scope="module")
def executed(samples_by_file):
    every_sample = [sample for samples in samples_by_file.values() for sample in samples]
    tools = {tool.name: tool for sample in every_sample for tool in sample.tools}
    with PythonEnvironment(TOOLS_MODULE, tools.values(), workers=2, timeout=5) as environment:
        results = execute_gold_paths(every_sample, environment)
        # every path ran batched in a worker: none was lost and replayed call by call
        assert environment.replayed_paths == 0 and environment.replaced_workers == 0
    return dict(zip((id(sample) for sample in every_sample), results))


def test_every_math_gold_path_in_every_file_reproduces_its_gold_answer(samples_by_file, executed):
    checked = 0
    for name, samples in samples_by_file.items():
        assert len(samples) == MATH_SAMPLES_PER_FILE[name]
        for sample in samples:
            result = executed[id(sample)]
            assert result.ok, (name, sample.id, result.failure)
            assert result.matches_gold(NESTFUL_COMPARISON), (name, sample.id, result.answer, sample.answer)
            checked += 1
    assert checked == 256  # 84 distinct samples, several files share the same 79


def test_gold_answers_are_the_last_calls_result(samples_by_file, executed):
    toy = samples_by_file["toy_data.jsonl"][0]
    result = executed[id(toy)]
    assert toy.answer == 6400.0 and result.answer == 6400.0
    responses = [call.response for call in result.sample.all_calls()]
    assert len(responses) == 9 and responses[0] == {"result": 0.2} and responses[-1] == {"result": 6400.0}


def test_only_one_sample_needs_nestful_rounding(samples_by_file, executed):
    distinct = {sample.id: sample for samples in samples_by_file.values() for sample in samples}
    assert len(distinct) == 84
    strict = AnswerComparison(rel_tol=1e-9, abs_tol=1e-9)
    off_by_rounding = [s.id for s in distinct.values() if not executed[id(s)].matches_gold(strict)]
    # gold 13.75 for (100-7)*21/(100+42) = 13.7535...: NESTful rounds the prediction to the gold decimals
    assert off_by_rounding == ["7727cd5b-d0a1-4779-bfee-60e255bd98fb"]
    assert executed[id(distinct[off_by_rounding[0]])].answer == pytest.approx(13.753521126760564)
