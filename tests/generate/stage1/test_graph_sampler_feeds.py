"""The graph sampler on tools whose output names say nothing (MCP servers): declared feeds, values
inside list arguments, reference phrases that let a source go unsaid, and per-request slot draws.
Pure: a small catalog shaped like the memory, filesystem and time servers, answered by a fake."""

from __future__ import annotations

from typing import Any, Mapping

import pytest

from fcbench.environments import CallOutcome, Environment
from fcbench.sample import Tool
from generate.slots import value_pools_from_dict
from generate.stage1.graph_sampler import (DeclaredFeedsError, DraftRequest, PhraseBook, build_feed_graph,
                                           declared_feeds_from_dict, output_fields, parameter_leaves, propose_draft)

STRING = {"type": "string"}
CATALOG = [
    Tool(name="search_files", description="Search files",
         parameters={"type": "object", "properties": {"path": STRING, "pattern": STRING}, "required": ["path", "pattern"]},
         returns={"type": "object", "properties": {"content": STRING}}, meta={"domain": "filesystem"}),
    Tool(name="read_text_file", description="Read a file",
         parameters={"type": "object", "properties": {"path": STRING}, "required": ["path"]},
         returns={"type": "object", "properties": {"content": STRING}}, meta={"domain": "filesystem"}),
    Tool(name="list_directory", description="List a folder",  # also answers `content`: never a source here
         parameters={"type": "object", "properties": {"path": STRING}, "required": ["path"]},
         returns={"type": "object", "properties": {"content": STRING}}, meta={"domain": "filesystem"}),
    Tool(name="add_observations", description="Add observations",
         parameters={"type": "object", "required": ["observations"], "properties": {"observations": {
             "type": "array", "items": {"type": "object", "required": ["entityName", "contents"], "properties": {
                 "entityName": STRING, "contents": {"type": "array", "items": STRING}}}}}},
         returns={"type": "object", "properties": {"results": {"type": "array", "items": {"type": "object"}}}},
         meta={"domain": "memory"}),
    Tool(name="convert_time", description="Convert a time",
         parameters={"type": "object", "properties": {"time": STRING}, "required": ["time"]},
         returns={"$defs": {"T": {"type": "object", "properties": {"datetime": STRING, "timezone": STRING}}},
                  "type": "object", "properties": {"source": {"$ref": "#/$defs/T"}, "target": {"$ref": "#/$defs/T"}}},
         meta={"domain": "time"}),
]
FEEDS = {"feeds": [
    {"to": "read_text_file.path", "from": ["search_files.content"]},
    {"to": "add_observations.observations[0].contents[0]", "from": ["read_text_file.content", "convert_time.target.datetime"]},
]}
POOLS = {"slots": {
    "search": {"per_goal": True, "used_by": [{"tool": "search_files", "arguments": {"path": "path", "pattern": "pattern"}}],
               "values": [{"path": "notes", "pattern": "meeting-*.md"}, {"path": "inbox", "pattern": "invoice-*.txt"}]},
    "file": {"per_goal": True, "used_by": [{"tool": "read_text_file", "arguments": {"path": "value"}}],
             "values": [{"value": "docs/brief.md"}]},
    "who": {"per_goal": True, "used_by": [{"tool": "add_observations", "arguments": {"observations[0].entityName": "name"}}],
            "values": [{"name": "Alice"}, {"name": "Bob"}]},
    "clock": {"used_by": [{"tool": "convert_time", "arguments": {"time": "value"}}], "values": [{"value": "09:30"}]},
}}
PHRASES = PhraseBook.parse("""
search_files = find the file in {path} matching {pattern}
read_text_file = show me {path}
convert_time = convert {time} to UTC
add_observations = add {observations[0].contents[0]|note} to what you remember about {observations[0].entityName}
read_text_file.path<search_files = the file in {path} matching {pattern}
add_observations.observations[0].contents[0]<read_text_file = the text of {path}
add_observations.observations[0].contents[0]<convert_time = the converted time
""")


class FakeServers(Environment):
    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        if name == "search_files":
            return CallOutcome.success({"content": f"/workspace/{arguments['path']}/{arguments['pattern'].replace('*', '1')}"})
        if name == "read_text_file":
            return CallOutcome.success({"content": f"text of {arguments['path']}"})
        if name == "convert_time":
            return CallOutcome.success({"source": {"datetime": "09:30"}, "target": {"datetime": "2026-11-27T08:30:00+00:00"}})
        return CallOutcome.success({"results": [{"entityName": arguments["observations"][0]["entityName"]}]})


def graph():
    pools = value_pools_from_dict(POOLS)
    return build_feed_graph(CATALOG, pools, declared_feeds_from_dict(FEEDS, CATALOG)), pools


def test_a_list_argument_is_opened_where_the_dataset_names_a_path_into_it():
    (tool,) = [t for t in CATALOG if t.name == "add_observations"]
    assert [leaf.name for leaf in parameter_leaves(tool)] == ["observations"]
    names = {"observations[0].entityName", "observations[0].contents[0]"}
    assert [leaf.name for leaf in parameter_leaves(tool, names)] == ["observations[0].entityName",
                                                                      "observations[0].contents[0]"]


def test_only_declared_feeds_link_tools_and_refs_in_output_schemas_are_followed():
    built, _ = graph()
    assert [field.text() for field in output_fields(CATALOG[4].returns)] == [
        "source.datetime", "source.timezone", "target.datetime", "target.timezone"]
    (group,) = built.groups["add_observations"]
    assert group.parameters == ("observations[0].contents[0]",) and group.sources() == ["read_text_file", "convert_time"]
    (path,) = built.groups["read_text_file"]
    assert path.optional and path.sources() == ["search_files"]  # a pool fills it too
    assert built.groups["list_directory"] == []  # `content` feeds nothing unless declared


def test_a_source_every_reader_names_needs_no_clause_and_the_gold_reads_nested_values():
    built, pools = graph()
    request = DraftRequest(("add_observations",), frozenset({"search_files", "read_text_file", "add_observations"}),
                           frozenset({"memory", "filesystem"}), "seed-3", 4)
    drafts = set()
    for seed in range(12):
        draft = propose_draft(DraftRequest(request.goals, request.allowed, request.domains, f"s{seed}", 4), built,
                              pools, PHRASES, FakeServers(), CATALOG)
        calls = [call for step in draft.calls for call in step]
        goal = calls[-1]
        assert goal.name == "add_observations"
        contents = goal.arguments["observations"][0]["contents"]
        assert len(contents) == 1 and contents[0].startswith("$var_") and contents[0].endswith(".content$")
        drafts.add(draft.query)
        said = draft.query.lower()  # (the query writer picks the opener: "Add ...", "Could you add ...?")
        name = goal.arguments["observations"][0]["entityName"].lower()
        assert "show me" not in said and "find the file" not in said  # no clause for either source
        if len(calls) == 3:  # search -> read -> add: neither source has a clause of its own
            search = calls[0].arguments
            assert f"add the text of the file in {search['path']} matching {search['pattern']} to what you remember " \
                   f"about {name}" in said
            assert calls[1].arguments == {"path": "$var_1.content$"}
        else:  # the read took the pool's file instead of a search (an optional feed below the goal)
            assert f"add the text of docs/brief.md to what you remember about {name}" in said
    assert any("matching" in query for query in drafts) and any("docs/brief.md" in query for query in drafts)


def test_per_goal_slots_draw_another_value_for_each_request():
    built, pools = graph()
    request = DraftRequest(("add_observations", "add_observations"), frozenset(t.name for t in CATALOG),
                           frozenset({"memory", "time"}), "seed-1", 4)
    draft = propose_draft(request, built, pools, PHRASES, FakeServers(), CATALOG)
    names = [call.arguments["observations"][0]["entityName"] for step in draft.calls for call in step
             if call.name == "add_observations"]
    assert sorted(names) == ["Alice", "Bob"]


@pytest.mark.parametrize("entry, problem", [
    ({"to": "nope.path", "from": ["search_files.content"]}, "names no tool of the catalog"),
    ({"to": "read_text_file.missing", "from": ["search_files.content"]}, "has no parameter 'missing'"),
    ({"to": "read_text_file.path", "from": ["search_files.size"]}, "declares no output 'size'"),
    ({"to": "read_text_file.path", "from": ["convert_time.target"]}, "declares no output 'target'"),
    ({"to": "read_text_file.path"}, "expected"),
])
def test_a_feeds_file_that_names_what_the_catalog_lacks_is_refused(entry, problem):
    with pytest.raises(DeclaredFeedsError, match=problem):
        declared_feeds_from_dict({"feeds": [entry]}, CATALOG, "feeds.json")
