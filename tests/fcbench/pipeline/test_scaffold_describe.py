"""`build-dataset new NAME --describe TEXT`: an LLM writes the catalog (over real HTTP to the mock
server, through the request cache), lint-tools reviews it; offline, the bundled recorded answer
goes through the same parse and review."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.config import load_pipelines
from fcbench.llm.mock_server import MockLLMServer
from fcbench.pipeline.scaffold import RECORDED_DESCRIBE_ANSWERS

RECORDED = json.loads(RECORDED_DESCRIBE_ANSWERS.read_text(encoding="utf-8").splitlines()[0])
BANK = RECORDED["description"]


def _pipelines(tmp_path: Path) -> Path:
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("pipelines:\n  other:\n    dataset_dir: datasets/other\n", encoding="utf-8")
    return pipelines


def _new(*arguments: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, ["new", *arguments], env=env)


def test_offline_reads_the_recorded_answer_and_writes_a_reviewed_catalog(tmp_path):
    pipelines = _pipelines(tmp_path)
    result = _new("bank", "--describe", BANK, "--offline", "--file", str(pipelines), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tools"] == 8
    tools = json.loads((tmp_path / "datasets" / "bank" / "tools.json").read_text())
    names = [tool["name"] for tool in tools]
    assert names[:2] == ["listAccounts", "getAccountBalance"] and "setCardState" in names
    assert tools[1]["parameters"]["required"] == ["accountId"]
    report = json.loads((tmp_path / "datasets" / "bank" / "import_report.json").read_text())
    assert report["source"].startswith("recorded answer") and report["lint"]["counts"] == {}
    pipeline = load_pipelines(pipelines).get_pipeline("bank")
    assert pipeline.environment.kind == "simulated" and pipeline.stages.stage1.candidates == "catalog"

    other = _new("bank2", "--describe", "A zoo.", "--offline", "--file", str(pipelines))
    assert other.exit_code == 1 and "no recorded answer for this description" in other.stderr


def test_with_an_llm_the_answer_is_asked_once_and_cached_and_a_bad_one_is_refused(tmp_path):
    pipelines = _pipelines(tmp_path)
    seen: list[str] = []

    def model(body, call_index):
        prompt = body["messages"][-1]["content"]
        seen.append(prompt)
        if "A zoo" in prompt:
            return {"content": "Here are some APIs: feedAnimal()"}  # not the JSON asked for
        if "A library" in prompt:  # a tool without a description: lint-tools error
            return {"content": json.dumps({"tools": [{"name": "borrowBook", "description": "",
                                                      "parameters": {"type": "object", "properties": {}}}]})}
        return {"content": RECORDED["content"]}

    with MockLLMServer(responder=model) as server:
        env = {"OPENAI_API_KEY": "test-key"}
        first = _new("bank", "--describe", BANK, "--llm-model", "mock-model", "--llm-base-url", server.base_url,
                     "--file", str(pipelines), "--json", env=env)
        assert first.exit_code == 0, first.output
        assert BANK in seen[0] and "lowerCamelCase" in seen[0]
        cache = tmp_path / "datasets" / "bank" / "build" / "llm-cache.sqlite"
        assert cache.is_file()
        report = json.loads((tmp_path / "datasets" / "bank" / "import_report.json").read_text())
        assert report["source"] == "LLM mock-model" and report["llm"]["requests_sent"] == 1
        # the pipeline entry and the catalog removed (build/ with the cache kept): asked again, the
        # answer comes from the request cache, no request is sent, the same catalog is written
        written = (tmp_path / "datasets" / "bank" / "tools.json").read_bytes()
        pipelines.write_text("pipelines:\n  other:\n    dataset_dir: datasets/other\n", encoding="utf-8")
        for name in ("tools.json", "import_report.json"):
            (tmp_path / "datasets" / "bank" / name).unlink()
        again = _new("bank", "--describe", BANK, "--llm-model", "mock-model", "--llm-base-url", server.base_url,
                     "--file", str(pipelines), "--json", env=env)
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_stats") as response:
            served = json.load(response)["chat_requests"]
        zoo = _new("zoo", "--describe", "A zoo.", "--llm-model", "mock-model", "--llm-base-url", server.base_url,
                   "--file", str(pipelines), env=env)
        library = _new("library", "--describe", "A library.", "--llm-model", "mock-model", "--llm-base-url",
                       server.base_url, "--file", str(pipelines), env=env)
    assert again.exit_code == 0, again.output
    assert served == 1 and (tmp_path / "datasets" / "bank" / "tools.json").read_bytes() == written
    assert zoo.exit_code == 1 and "the LLM wrote no usable catalog" in zoo.stderr and "not JSON" in zoo.stderr
    assert library.exit_code == 1 and "lint-tools refuses the written catalog: borrowBook" in library.stderr
    assert "zoo:" not in pipelines.read_text() and not (tmp_path / "datasets" / "library" / "tools.json").exists()
