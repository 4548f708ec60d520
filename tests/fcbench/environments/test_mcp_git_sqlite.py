"""The two reference servers the workspace example does not use, through the mcp environment: sqlite
(rows printed as Python literals, errors printed as text with isError false) and git (a repository
copied into each sample's sandbox, commits made reproducible through the server's environment).
Each sample starts from the seed: one sample's insert or commit is not there for the next."""

from __future__ import annotations

import re

from fcbench.catalog.mcp import import_tools
from fcbench.environments import ErrorReason
from fcbench.environments.mcp_client import McpConnection, McpPortal, ServerLaunch, parse_command_line
from fcbench.environments.mcp_env import McpEnvironment, McpServer
from fcbench.environments.mcp_results import ResultReading
from mcp_servers import COMMANDS, GIT_ENV, REPO, make_seed, require_servers


def server(name: str, seed_dir, **options) -> tuple[McpServer, list]:
    env, command, args = parse_command_line(COMMANDS[name])
    launch = ServerLaunch(name, str(REPO / command), tuple(args), {**env, **options.pop("env", {})}, str(REPO))
    portal = McpPortal()
    try:  # its tools, as `new` lists them (a throwaway sandbox copy of the seed)
        listing = McpConnection(ServerLaunch(name, launch.command, tuple(a.replace("{sandbox}", str(seed_dir)) for a in args),
                                             launch.env, launch.cwd), portal)
        tools = import_tools(name, listing.tools()).tools
        listing.close()
    finally:
        portal.close()
    return McpServer(name, launch, **options), tools


def test_sqlite_rows_are_read_and_its_text_errors_are_tool_errors(tmp_path):
    require_servers()
    seed = make_seed(tmp_path / "seed")
    sqlite, tools = server("sqlite", seed, reading=ResultReading("python", re.compile(r"^(Error|Database error):")))
    with McpEnvironment(tools, {"sqlite": sqlite}, seed=seed, workers=1, log_dir=tmp_path / "logs") as environment:
        with environment.for_sample() as first:
            assert first.call("write_query", {"query": "INSERT INTO customers VALUES ('Gus', 'UTC')"}).response == \
                [{"affected_rows": 1}]
            rows = first.call("read_query", {"query": "SELECT name FROM customers ORDER BY name"}).response
            assert rows == [{"name": "Eve"}, {"name": "Frank"}, {"name": "Gus"}]
            error = first.call("read_query", {"query": "SELECT * FROM nope"})
            assert error.reason is ErrorReason.TOOL_ERROR and "no such table: nope" in error.error
        with environment.for_sample() as second:  # a fresh copy of the seed's database
            rows = second.call("read_query", {"query": "SELECT name FROM customers ORDER BY name"}).response
            assert rows == [{"name": "Eve"}, {"name": "Frank"}]


def test_git_commits_in_two_samples_are_the_same_commit_and_do_not_see_each_other(tmp_path):
    require_servers()
    seed = make_seed(tmp_path / "seed")
    (seed / "repo" / "plan.md").write_text("Plan v1\n")  # a change in the seed's work tree, not yet committed
    git, tools = server("git", seed, env=GIT_ENV)
    with McpEnvironment(tools, {"git": git}, seed=seed, aliases={"repo": "/repo"}, workers=1,
                        log_dir=tmp_path / "logs") as environment:
        commits, logs = [], []
        for _ in range(2):
            with environment.for_sample() as sample:
                assert sample.call("git_add", {"repo_path": "/repo", "files": ["plan.md"]}).ok
                commits.append(sample.call("git_commit", {"repo_path": "/repo", "message": "Add plan"}).response)
                logs.append(sample.call("git_log", {"repo_path": "/repo", "max_count": 5}).response)
    assert commits[0] == commits[1] and commits[0].startswith("Changes committed successfully with hash ")
    for log in logs:  # the seed commit and this sample's own: never the other sample's
        assert log.count("Commit: ") == 2 and "Add plan" in log and "seed" in log
