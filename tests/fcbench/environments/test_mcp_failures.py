"""A misbehaving MCP server, one test per failure kind: it fails to start, hangs at initialisation,
answers with a JSON-RPC error, writes something that is not JSON-RPC, never answers, or dies in the
middle of a sample. Each is a failed call with its reason and the server's own words, the server
is started again for the next sample, and a filter run over such samples rejects only them.

The server is raw stdio JSON-RPC written here (a few lines), so every fault is exactly the one
named; the SDK's own server is used for the streamable-HTTP and pagination tests."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from fcbench.environments import ErrorReason
from fcbench.environments.mcp_client import ServerLaunch
from fcbench.environments.mcp_env import McpEnvironment, McpServer
from fcbench.sample import Tool

SERVER = textwrap.dedent('''
    import json, os, sys, time
    mode = sys.argv[1]
    if mode == "exit":
        print("fatal: cannot read settings.toml", file=sys.stderr, flush=True)
        sys.exit(3)
    TOOLS = [{"name": name, "description": name, "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
             for name in ("echo", "pid", "rpc_error", "garbage", "nap", "crash", "token")]
    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method, key = message["method"], message["id"]
        if method == "initialize":
            if mode == "hang":
                continue  # never answers: the client gives up after its init timeout
            send({"jsonrpc": "2.0", "id": key, "result": {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "misbehaving", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": key, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name, arguments = message["params"]["name"], message["params"].get("arguments") or {}
            if name == "rpc_error":
                send({"jsonrpc": "2.0", "id": key, "error": {"code": -32603, "message": "database is locked"}})
            elif name == "garbage":
                sys.stdout.write("Traceback (most recent call last): oops\\n"); sys.stdout.flush()
            elif name == "nap":
                time.sleep(60)
            elif name == "crash":
                print("segmentation fault in handler", file=sys.stderr, flush=True)
                os._exit(1)
            else:
                text = {"pid": str(os.getpid()), "token": os.environ.get("SERVICE_TOKEN", "")}.get(name, arguments.get("text", ""))
                send({"jsonrpc": "2.0", "id": key, "result": {"content": [{"type": "text", "text": text}]}})
        else:
            send({"jsonrpc": "2.0", "id": key, "result": {}})
''')
TOOLS = [Tool(name=name, parameters={"type": "object", "properties": {"text": {"type": "string"}}},
              meta={"mcp": {"server": "flaky", "tool": name}})
         for name in ("echo", "pid", "rpc_error", "garbage", "nap", "crash", "token")]


@pytest.fixture(scope="module")
def server_script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("flaky") / "server.py"
    path.write_text(SERVER)
    return path


def environment(script: Path, mode: str = "ok", tmp: Path | None = None, **settings) -> McpEnvironment:
    launch = ServerLaunch("flaky", sys.executable, (str(script), mode), settings.pop("env", {}))
    server = McpServer("flaky", launch, stateful=False, init_timeout=settings.pop("init_timeout", 20.0))
    return McpEnvironment(TOOLS, {"flaky": server}, workers=1, timeout=settings.pop("timeout", 20.0), log_dir=tmp)


def pid(env: McpEnvironment) -> str:
    outcome = env.call("pid", {})
    assert outcome.ok, outcome
    return outcome.response


def test_a_server_that_exits_at_start_is_a_reject_with_what_it_said(server_script, tmp_path):
    with environment(server_script, "exit", tmp_path) as env:
        outcomes = [env.call("echo", {"text": "hi"}) for _ in range(4)]
    for outcome in outcomes:
        assert outcome.reason is ErrorReason.SERVER_UNAVAILABLE
        assert "could not be started" in outcome.error and "fatal: cannot read settings.toml" in outcome.error
    # tried again for each sample, then no more after three failed starts
    assert "not started again after 3 failed starts" in outcomes[3].error
    assert "not started again" not in outcomes[2].error


def test_a_server_that_hangs_at_initialisation_is_given_up(server_script, tmp_path):
    with environment(server_script, "hang", tmp_path, init_timeout=1.0) as env:
        outcome = env.call("echo", {"text": "hi"})
    assert outcome.reason is ErrorReason.SERVER_UNAVAILABLE
    assert "did not finish initialising within 1 s" in outcome.error


def test_a_json_rpc_error_is_a_protocol_error_and_the_next_sample_is_served(server_script, tmp_path):
    with environment(server_script, "ok", tmp_path) as env:
        outcome = env.call("rpc_error", {})
        assert outcome.reason is ErrorReason.PROTOCOL_ERROR
        assert outcome.error == "MCP server 'flaky', tool rpc_error: JSON-RPC error -32603: database is locked"
        assert env.call("echo", {"text": "next"}).response == "next"


def test_a_line_that_is_not_json_rpc_fails_the_call_at_once_and_restarts_the_server(server_script, tmp_path):
    with environment(server_script, "ok", tmp_path, timeout=30.0) as env:
        before = pid(env)
        outcome = env.call("garbage", {})
        assert outcome.reason is ErrorReason.PROTOCOL_ERROR
        assert "not a JSON-RPC message" in outcome.error and "Traceback (most recent call last): oops" in outcome.error
        assert pid(env) != before  # its state is unknown: started again


def test_a_call_past_its_timeout_restarts_the_server(server_script, tmp_path):
    with environment(server_script, "ok", tmp_path, timeout=1.0) as env:
        before = pid(env)
        outcome = env.call("nap", {})
        assert outcome.reason is ErrorReason.TIMEOUT and "no answer within 1 s" in outcome.error
        assert pid(env) != before


def test_a_server_that_dies_mid_sample_is_a_reject_with_its_last_words(server_script, tmp_path):
    with environment(server_script, "ok", tmp_path) as env:
        with env.for_sample() as sample:
            first = pid(sample)
            died = sample.call("crash", {})
        assert died.reason is ErrorReason.WORKER_DIED
        assert "closed the connection" in died.error and "segmentation fault in handler" in died.error
        assert pid(env) != first  # the next sample gets a new server


def test_a_secret_reaches_the_server_from_the_environment_only(server_script, tmp_path, monkeypatch):
    env = {"SERVICE_TOKEN": "${FCBENCH_TEST_SERVICE_TOKEN}"}  # as pipelines.yaml writes it
    monkeypatch.delenv("FCBENCH_TEST_SERVICE_TOKEN", raising=False)
    with environment(server_script, "ok", tmp_path, env=env) as env_without:
        missing = env_without.call("token", {})
    assert missing.reason is ErrorReason.SERVER_UNAVAILABLE
    assert "FCBENCH_TEST_SERVICE_TOKEN" in missing.error and "is not set" in missing.error
    monkeypatch.setenv("FCBENCH_TEST_SERVICE_TOKEN", "s3cr3t-value")
    with environment(server_script, "ok", tmp_path, env=env) as env_with:
        assert env_with.call("token", {}).response == "s3cr3t-value"
    assert "s3cr3t-value" not in "".join(path.read_text() for path in tmp_path.glob("*.log"))


def test_the_filter_rejects_only_the_samples_a_faulty_server_breaks(server_script, tmp_path):
    """End to end: `build-dataset filter` over an mcp pipeline (no store: every call goes to the
    server) keeps the good samples, rejects the others with the server's words, and goes on."""
    from fcbench.config import load_pipelines
    from fcbench.pipeline.run import run_stage

    (tmp_path / "tools.json").write_text(json.dumps([{"name": t.name, "parameters": t.parameters, "mcp": t.meta["mcp"]}
                                                     for t in TOOLS]))
    samples = []
    for index, tool in enumerate(["echo", "crash", "echo", "rpc_error", "echo"]):
        text = f"say {index}"
        samples.append({"id": f"s{index}", "messages": [{"role": "user", "content": text}], "tools": [
            {"name": tool, "parameters": TOOLS[0].parameters}],
            "calls": [[{"label": "var_1", "name": tool, "arguments": {"text": text}}]]})
    (tmp_path / "candidates.jsonl").write_text("".join(json.dumps(sample) + "\n" for sample in samples))
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n  flaky:\n"
        f"    dataset_dir: {tmp_path / 'dataset'}\n    tools: {tmp_path / 'tools.json'}\n"
        "    environment:\n      kind: mcp\n      workers: 1\n      timeout_s: 20\n      servers:\n        flaky:\n"
        f"          command: {sys.executable}\n          args: [{server_script}, ok]\n          stateful: false\n"
        f"    stages:\n      filter: {{input: {tmp_path / 'candidates.jsonl'}, grounding: report}}\n")
    pipeline = load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("flaky")
    summary = run_stage("filter", pipeline, offline=True)  # the filter through its stage declaration
    assert summary.counts["passed"] == 3
    rejects = {json.loads(line)["id"]: json.loads(line) for line in
               (pipeline.build_dir / "validated.rejects.jsonl").read_text().splitlines()}
    assert set(rejects) == {"s1", "s3"}
    assert rejects["s1"]["reason"] == "execution.worker_died" and "segmentation fault" in rejects["s1"]["detail"]
    assert rejects["s3"]["reason"] == "execution.protocol_error" and "database is locked" in rejects["s3"]["detail"]
    kept = [json.loads(line) for line in (pipeline.build_dir / "validated.jsonl").read_text().splitlines()]
    assert [sample["calls"][0][0]["response"] for sample in kept] == ["say 0", "say 2", "say 4"]
