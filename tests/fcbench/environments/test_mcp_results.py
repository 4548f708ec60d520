"""What an MCP tool result becomes in a sample, and the fixed paths a sandbox shows (pure): results
as the real servers send them (notes/mcp_scripts probes: time, memory, filesystem, sqlite)."""

from __future__ import annotations

import re

from fcbench.environments import ErrorReason
from fcbench.environments.mcp_results import PathAliases, ResultReading, result_outcome, state_key

AUTO = ResultReading()


def text(body: str, **more) -> dict:
    return {"content": [{"type": "text", "text": body}], **more}


def test_structured_content_is_the_response_over_its_text():
    # memory's create_entities: the text is a bare list, the structured content wraps it
    result = text('[{"name": "A"}]', structuredContent={"entities": [{"name": "A"}]}, isError=False)
    assert result_outcome(result, AUTO, "memory.create_entities").response == {"entities": [{"name": "A"}]}


def test_is_error_is_a_tool_error_with_the_servers_message():
    outcome = result_outcome(text("Entity with name Bob not found", isError=True), AUTO, "memory.add_observations")
    assert not outcome.ok and outcome.reason is ErrorReason.TOOL_ERROR
    assert outcome.error == "memory.add_observations: Entity with name Bob not found"
    assert outcome.response == {"error": "Entity with name Bob not found"}


def test_text_results_auto_parses_json_and_keeps_other_text():
    assert result_outcome(text('{"a": [1, 2]}'), AUTO, "x").response == {"a": [1, 2]}
    git = "Repository status:\nOn branch main"
    assert result_outcome(text(git), AUTO, "git.git_status").response == git


def test_text_results_json_refuses_a_result_that_is_not_json():
    outcome = result_outcome(text("Repository status: clean"), ResultReading("json"), "git.git_status")
    assert not outcome.ok and outcome.reason is ErrorReason.UNEXPECTED_RESPONSE
    assert "not JSON" in outcome.error and "Repository status" in outcome.error


def test_text_results_python_reads_sqlite_rows_without_running_code():
    rows = "[{'id': 1, 'customer': 'Alice', 'total': 12.5, 'tags': ('a', 'b')}]"
    reading = ResultReading("python")
    assert result_outcome(text(rows), reading, "sqlite.read_query").response == \
        [{"id": 1, "customer": "Alice", "total": 12.5, "tags": ["a", "b"]}]
    outcome = result_outcome(text("__import__('os').system('true')"), reading, "sqlite.read_query")
    assert not outcome.ok and outcome.reason is ErrorReason.UNEXPECTED_RESPONSE


def test_error_text_makes_a_plain_text_error_a_tool_error():
    reading = ResultReading("python", re.compile(r"^(Error|Database error):"))
    outcome = result_outcome(text("Database error: no such table: nope", isError=False), reading, "sqlite.read_query")
    assert not outcome.ok and outcome.reason is ErrorReason.TOOL_ERROR and "no such table" in outcome.error


def test_media_blocks_are_kept_as_content():
    blocks = [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]
    assert result_outcome({"content": blocks}, AUTO, "fs.read_media_file").response == {"content": blocks}


def test_aliases_hide_the_temporary_sandbox_and_map_paths_back():
    aliases = PathAliases.of([("/tmp/fcbench-mcp-x1/w0/files", "/workspace"), ("/tmp/fcbench-mcp-x1/w0", "/sandbox")])
    answer = {"content": "/tmp/fcbench-mcp-x1/w0/files/notes/a.md\n/tmp/fcbench-mcp-x1/w0/memory.jsonl",
              "other": ["Access denied - /tmp/fcbench-mcp-x1/w0/files2 not allowed"]}
    assert aliases.to_alias(answer) == {"content": "/workspace/notes/a.md\n/sandbox/memory.jsonl",
                                        "other": ["Access denied - /sandbox/files2 not allowed"]}
    arguments = {"path": "/workspace/notes/a.md", "paths": ["/workspace", "notes/b.md"],
                 "content": "see /workspace/notes/a.md"}  # text that mentions a path is sent as written
    assert aliases.to_real(arguments) == {"path": "/tmp/fcbench-mcp-x1/w0/files/notes/a.md",
                                          "paths": ["/tmp/fcbench-mcp-x1/w0/files", "notes/b.md"],
                                          "content": "see /workspace/notes/a.md"}


def test_state_key_depends_on_every_earlier_call_in_order():
    assert state_key([]) == ""
    first, second = 'write_file:{"path":"a"}', 'write_file:{"path":"b"}'
    assert state_key([first, second]) != state_key([second, first])
    assert state_key([first]) == state_key([first]) and len(state_key([first])) == 16
