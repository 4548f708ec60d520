"""`build-dataset new NAME --mcp "COMMAND ARGS"` / `--mcp-url URL` on the five reference servers
(started for real from .mcp/), on a server that pages its tool list, on one with a broken input
schema, on an HTTP server, and on commands that do not start: as a user runs it, from the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml

from mcp_servers import COMMANDS, REPO, make_seed, require_servers

BUILD_DATASET = Path(sys.executable).parent / "build-dataset"
# tools/list of each reference server (versions pinned by install_mcp_servers.sh)
EXPECTED = {
    "memory": (9, "memory", True, {"create_entities", "open_nodes", "search_nodes"}),
    "filesystem": (14, "secure-filesystem", True, {"read_text_file", "write_file", "search_files"}),
    "time": (2, "time", False, {"get_current_time", "convert_time"}),
    "git": (12, "git", True, {"git_status", "git_commit", "git_log"}),
    "sqlite": (6, "sqlite", True, {"read_query", "write_query", "list_tables"}),
}


def project(tmp_path: Path) -> Path:
    """A folder like a fresh clone: a pipelines file, and the installed servers beside it."""
    require_servers()
    (tmp_path / "pipelines.yaml").write_text("# my benchmarks\npipelines:\n  other:\n    dataset_dir: datasets/other\n")
    (tmp_path / ".mcp").symlink_to(REPO / ".mcp")
    return tmp_path


def new(cwd: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BUILD_DATASET), "new", *arguments], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("server", sorted(EXPECTED))
def test_new_imports_each_reference_server(tmp_path, server):
    root = project(tmp_path)
    seed = make_seed(tmp_path / "seed")
    done = new(root, "mine", "--mcp", COMMANDS[server], "--sandbox-seed", str(seed), "--json")
    assert done.returncode == 0, done.stderr
    count, key, stateful, some = EXPECTED[server]
    summary = json.loads(done.stdout)
    assert summary["tools"] == count and summary["files"] == 1
    tools = json.loads((root / "datasets/mine/tools.json").read_text())
    assert len(tools) == count and some <= {tool["name"] for tool in tools}
    assert {tool["mcp"]["server"] for tool in tools} == {key} and {tool["domain"] for tool in tools} == {key}
    assert all(tool["parameters"].get("type") == "object" for tool in tools)
    report = json.loads((root / "datasets/mine/import_report.json").read_text())
    assert report["servers"][0]["name"] == key and report["servers"][0]["protocol_version"] == "2025-11-25"
    assert report["servers"][0]["stateful"] is stateful
    # the pipeline was appended as text (the comment kept) and loads
    text = (root / "pipelines.yaml").read_text()
    assert text.startswith("# my benchmarks\n") and "  mine:\n" in text
    environment = yaml.safe_load(text)["pipelines"]["mine"]["environment"]
    assert environment["kind"] == "mcp" and environment["responses"] == "datasets/mine/recorded.json"
    assert environment["servers"][key]["stateful"] is stateful
    listed = subprocess.run([str(BUILD_DATASET), "pipelines"], cwd=root, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "mine" in listed.stdout, listed.stderr
    # before anything is recorded, the check says what to do (as for an http pipeline)
    checked = subprocess.run([str(BUILD_DATASET), "pipelines", "--check", "mine"], cwd=root, capture_output=True,
                             text=True, timeout=120)
    said = checked.stdout + checked.stderr
    assert checked.returncode == 1 and "record it first with --record" in said
    # and, walking the declared stages, that stage3's gold templates come from stage2 (annotation)
    assert "templates.jsonl" in said and "`stage2` writes it, run it first" in said
    assert said.count("environment.") == 1 and "2 problems" in said, said


def test_declared_output_schemas_and_annotations_are_kept(tmp_path):
    root = project(tmp_path)
    assert new(root, "clock", "--mcp", COMMANDS["time"]).returncode == 0
    convert = next(t for t in json.loads((root / "datasets/clock/tools.json").read_text()) if t["name"] == "convert_time")
    assert "$defs" in convert["returns"] and convert["returns"]["properties"]["target"] == {"$ref": "#/$defs/TimeResult"}
    assert convert["mcp"]["annotations"]["readOnlyHint"] is True
    assert "UTC" in convert["parameters"]["properties"]["source_timezone"]["description"]  # --local-timezone UTC


RAW = textwrap.dedent('''
    import json, sys
    TOOLS = [{"name": f"tool_{i}", "description": f"tool {i}", "inputSchema": {"type": "object", "properties": {}}}
             for i in range(7)]
    TOOLS.append({"name": "broken", "description": "bad schema", "inputSchema": {"type": "object",
                  "properties": {"n": {"type": "whole-number"}}}})
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        if message["method"] == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "paged-server", "version": "1"}}
        elif message["method"] == "tools/list":
            start = int((message.get("params") or {}).get("cursor") or 0)
            result = {"tools": TOOLS[start:start + 3]}
            if start + 3 < len(TOOLS):
                result["nextCursor"] = str(start + 3)
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
        sys.stdout.flush()
''')


def test_pages_are_followed_and_an_invalid_input_schema_is_reported_not_imported(tmp_path):
    root = project(tmp_path)
    (root / "paged.py").write_text(RAW)
    done = new(root, "paged", "--mcp", f"{sys.executable} paged.py")
    assert done.returncode == 0, done.stderr
    assert "import notes: 1 (1 errors)" in done.stdout and "broken" in done.stdout
    tools = json.loads((root / "datasets/paged/tools.json").read_text())
    assert [tool["name"] for tool in tools] == [f"tool_{i}" for i in range(7)]  # three pages
    (note,) = json.loads((root / "datasets/paged/import_report.json").read_text())["notes"]
    assert note["server"] == "paged" and note["tool"] == "broken" and "not valid JSON Schema" in note["message"]


def test_a_server_that_does_not_start_is_one_clear_line_and_nothing_is_written(tmp_path):
    root = project(tmp_path)
    before = (root / "pipelines.yaml").read_text()
    done = new(root, "broken", "--mcp", ".mcp/venv/bin/mcp-server-git --repository /nonexistent/repo")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "could not be started" in done.stderr and "/nonexistent/repo" in done.stderr
    assert not (root / "datasets/broken").exists() and (root / "pipelines.yaml").read_text() == before
    missing = new(root, "broken", "--mcp", "no-such-program --flag")
    assert missing.returncode == 1 and "cannot be started" in missing.stderr
    both = new(root, "broken", "--mcp", "x", "--openapi", "spec.json")
    assert both.returncode == 1 and "exactly one tool source" in both.stderr


def test_new_over_streamable_http_and_the_environment_calls_it(tmp_path):
    """An MCPServer (the SDK's server) over streamable HTTP in this process: imported by URL, then
    called through the pipeline's environment (no store: live)."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    from fcbench.config import load_pipelines
    from fcbench.environments.from_config import open_environment

    app = MCPServer("weather", log_level="WARNING")

    @app.tool(description="Forecast for a city")
    def forecast(city: str) -> dict:
        return {"city": city, "sky": "clear"}

    server = uvicorn.Server(uvicorn.Config(app.streamable_http_app(stateless_http=True, json_response=True),
                                          host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/mcp"
    try:
        root = project(tmp_path)
        done = new(root, "weather", "--mcp-url", url)
        assert done.returncode == 0, done.stderr
        entry = yaml.safe_load((root / "pipelines.yaml").read_text())["pipelines"]["weather"]
        assert entry["environment"]["servers"] == {"weather": {"url": url, "stateful": True}}
        pipeline = load_pipelines(root / "pipelines.yaml").get_pipeline("weather")
        pipeline.environment.responses = None  # call the server
        with open_environment(pipeline, []) as environment:
            outcome = environment.call("forecast", {"city": "Oslo"})
        assert outcome.ok and outcome.response == {"city": "Oslo", "sky": "clear"}
    finally:
        server.should_exit = True
        thread.join(10)
