"""`build-dataset new NAME --python module.py`: a pipeline over one's own typed Python functions,
executed for real by the python environment (stage1's graph sampler runs the module's functions
in worker subprocesses), and the bad inputs refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.config import load_pipelines

DATA = Path(__file__).resolve().parents[2] / "data"
CITY_TOOLS = DATA / "city_tools.py"


def _pipelines(tmp_path: Path) -> Path:
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("# mine\npipelines:\n  other:\n    dataset_dir: datasets/other\n", encoding="utf-8")
    return pipelines


def test_new_from_a_python_module_builds_drafts_by_executing_its_functions(tmp_path):
    pipelines = _pipelines(tmp_path)
    result = CliRunner().invoke(app, ["new", "cities", "--python", str(CITY_TOOLS), "--file", str(pipelines), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["tools"] == 2 and summary["slots"] == 2 and summary["lint"] == {}
    assert pipelines.read_text().startswith("# mine\npipelines:\n  other:")
    pipeline = load_pipelines(pipelines).get_pipeline("cities")
    assert pipeline.environment.kind == "python"
    folder = tmp_path / "datasets" / "cities"
    assert (folder / "tools.py").read_text() == CITY_TOOLS.read_text()
    tools = {tool["name"]: tool for tool in json.loads((folder / "tools.json").read_text())}
    assert tools["weather"]["parameters"]["required"] == ["city_id"]
    assert tools["find_city"]["returns"]["properties"]["city_id"]["type"] == "string"

    staged = CliRunner().invoke(app, ["stage1", "cities", "--file", str(pipelines), "--json"])
    assert staged.exit_code == 0, staged.output
    drafts = [json.loads(line) for line in (folder / "build" / "drafts.jsonl").read_text().splitlines()]
    assert drafts
    for draft in drafts:  # find_city's answer feeds weather: both ran in the module
        (first,), (second,) = draft["calls"]
        assert first["name"] == "find_city" and first["response"]["city_id"] == "c-" + first["arguments"]["name"].lower()
        assert second["arguments"]["city_id"] == "$var_1.city_id$"
        assert isinstance(second["response"]["temperature"], float)


def test_an_untyped_function_is_refused_naming_it_and_nothing_is_written(tmp_path):
    pipelines = _pipelines(tmp_path)
    before = pipelines.read_text()
    module = tmp_path / "untyped.py"
    module.write_text('def area(side: float) -> float:\n    return side * side\n\n\n'
                      'def circle_area(radius):\n    """Area of a circle."""\n    return 3.14 * radius ** 2\n')
    result = CliRunner().invoke(app, ["new", "shapes", "--python", str(module), "--file", str(pipelines)])
    assert result.exit_code == 1
    assert "function 'circle_area': parameter 'radius' has no type hint" in result.stderr
    assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
    assert pipelines.read_text() == before and not (tmp_path / "datasets").exists()


def test_new_takes_exactly_one_tool_source(tmp_path):
    pipelines = _pipelines(tmp_path)
    neither = CliRunner().invoke(app, ["new", "x", "--file", str(pipelines)])
    both = CliRunner().invoke(app, ["new", "x", "--python", str(CITY_TOOLS), "--openapi", str(CITY_TOOLS),
                                    "--file", str(pipelines)])
    missing = CliRunner().invoke(app, ["new", "x", "--python", str(tmp_path / "nope.py"), "--file", str(pipelines)])
    assert neither.exit_code == both.exit_code == missing.exit_code == 1
    assert "exactly one tool source" in neither.stderr and "exactly one tool source" in both.stderr
    assert "no such file" in missing.stderr
