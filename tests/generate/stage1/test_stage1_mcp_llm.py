"""Stage1's LLM path over MCP tools (the workspace catalog, the real servers): a scripted model served
by the local OpenAI-compatible mock writes the query and drafts the path by function calling; each
draft is a sample of its own (it sees its own writes; its answers are keyed by its own earlier calls), the values it copies
out of answers become references, and every answer lands in the recorded store."""

from __future__ import annotations

import json

from fcbench.config import load_pipelines
from fcbench.environments.recorded import load_store_and_journal
from fcbench.llm.mock_server import MockLLMServer
from generate.stage1.single import run_stage1
from mcp_servers import REPO, require_servers

QUERY = "Convert 09:30 in Europe/Berlin to UTC time, save the converted time to standup.txt and read it back."


def scripted(body, call_index):
    """The model: a query, then convert -> write (the converted time, copied) -> read back."""
    if not body.get("tools"):
        return {"content": json.dumps({"query": QUERY})}
    done = [json.loads(message["content"]) for message in body["messages"] if message.get("role") == "tool"]
    if not done:
        return {"tool_calls": [{"name": "convert_time", "arguments": {
            "source_timezone": "Europe/Berlin", "time": "09:30", "target_timezone": "UTC"}}]}
    if len(done) == 1:
        return {"tool_calls": [{"name": "write_file", "arguments": {
            "path": "standup.txt", "content": done[0]["target"]["datetime"]}}]}
    if len(done) == 2:
        return {"tool_calls": [{"name": "read_text_file", "arguments": {"path": "standup.txt"}}]}
    return {"content": "Saved and read back."}


def test_llm_drafts_over_mcp_servers_with_references_and_per_draft_sandboxes(tmp_path):
    require_servers()
    workspace = load_pipelines(REPO / "pipelines.yaml").get_pipeline("workspace")
    servers = {name: server.model_dump(exclude_defaults=True) for name, server in workspace.environment.servers.items()}
    store = tmp_path / "recorded.json"
    # the catalog's three tools this model calls, on two servers, in one domain: every draft offers all three
    catalog = [{**tool, "domain": "desk"} for tool in json.loads((REPO / "datasets/workspace/tools.json").read_text())
               if tool["name"] in ("convert_time", "write_file", "read_text_file")]
    (tmp_path / "tools.json").write_text(json.dumps(catalog))
    with MockLLMServer(responder=scripted) as llm:
        (tmp_path / "pipelines.yaml").write_text(json.dumps({"pipelines": {"desk": {
            "dataset_dir": str(tmp_path / "desk"), "tools": str(tmp_path / "tools.json"),
            "environment": {"kind": "mcp", "record": True, "workers": 1, "responses": str(store),
                            "sandbox": {"seed": str(REPO / "datasets/workspace/sandbox"), "aliases": {"files": "/workspace"}},
                            "servers": servers},
            "llm": {"model": "mock-model", "base_url": llm.base_url, "seed": 0, "concurrency": 1, "max_retries": 0},
            "stages": {"stage1": {"offline": False, "queries": 2, "tool_subset_sizes": [3]}}}}}))
        pipeline = load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("desk")
        pipeline._base_dir = REPO  # the servers' command lines are relative to the repository, as in pipelines.yaml
        result = run_stage1(pipeline)
    drafts = result.drafts
    assert len(drafts) == 2 and all(draft.messages[-1]["content"] == QUERY for draft in drafts)
    for draft in drafts:
        convert, write, read = (call for step in draft.calls for call in step)
        assert write.arguments == {"path": "standup.txt", "content": "$var_1.target.datetime$"}
        # the draft sees its own write: the file holds the converted time
        assert read.response == {"content": convert.response["target"]["datetime"]}
        assert draft.meta["stage1"]["failed_calls"] == []
    # the read is recorded once, keyed by the writes before it in the same sample: the second draft
    # (a fresh sandbox, the same calls) got the same answers, from the store
    recorded = load_store_and_journal(store)
    (read,) = [call for call in recorded.calls.values() if call.name == "read_text_file"]
    assert read.state and read.response == drafts[0].calls[2][0].response
    assert {call.name for call in recorded.calls.values()} == {"convert_time", "write_file", "read_text_file"}
