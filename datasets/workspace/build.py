"""How datasets/workspace was made, step by step (re-run any step to refresh it):

  bash fcbench/environments/install_mcp_servers.sh      # the servers, pinned, into .mcp/
  .venv/bin/python datasets/workspace/build.py import   # tools.json + import_report.json from the running servers
  .venv/bin/python datasets/workspace/build.py record   # every stage with --record: fills recorded.json
  .venv/bin/python datasets/workspace/annotate_stage2.py  # (after `record stage1`) the bundled stage2 export
Then `build-dataset run workspace --offline` replays everything from recorded.json.

`import` starts the three servers the pipeline declares (environment.servers in pipelines.yaml) the
way `build-dataset new --mcp` does, lists their tools and writes the catalog. One tool is left out:
the filesystem server's `read_file`, which its own description marks as deprecated in favour of
`read_text_file` (the two would be the same call under two names). Everything else is as the servers
describe it; `domain` is the server.

`record` runs stage1, stage2 (from the bundled export), stage3 and the filter with the environment
recording: each sample in a fresh sandbox (a copy of datasets/workspace/sandbox), every answer
appended to recorded.json. The time server's answers depend on the day (convert_time dates the
converted time today; get_current_time is now), so a re-recording on another day changes them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
HERE = REPO / "datasets" / "workspace"
LEFT_OUT = {("filesystem", "read_file"): "deprecated by the server in favour of read_text_file (same call, two names)"}


def import_servers() -> None:
    from fcbench.catalog.lint import count_by_code, lint_tools
    from fcbench.catalog.mcp import catalog_record
    from fcbench.config import load_pipelines
    from fcbench.jsonl import write_json
    from fcbench.pipeline.scaffold_mcp import McpSource, list_servers

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("workspace")
    sources = []
    for name, server in (pipeline.environment.servers or {}).items():
        assignments = [f"{key}={value}" for key, value in server.env.items()]
        sources.append(McpSource(" ".join([f"{name}:", *assignments, server.command or "", *server.args])))
    seed = pipeline.resolve(pipeline.environment.sandbox.seed) if pipeline.environment.sandbox else None
    servers, imported = list_servers(sources, REPO, seed=seed)
    assert not imported.errors, [note.describe() for note in imported.errors]
    kept = [tool for tool in imported.tools if (tool.meta["mcp"]["server"], tool.meta["mcp"]["tool"]) not in LEFT_OUT]
    write_json(HERE / "tools.json", [catalog_record(tool) for tool in kept], indent=2)
    findings = lint_tools(kept)
    write_json(HERE / "import_report.json", {
        "servers": [{"name": server.key, "server_info": {"name": server.server_name, "version": server.server_version},
                     "protocol_version": server.protocol, "tools": len(server.tools)} for server in servers],
        "tools": len(kept),
        "left_out": [{"server": server, "tool": tool, "why": why} for (server, tool), why in LEFT_OUT.items()],
        "notes": [note.as_dict() for note in imported.notes],
        "lint": {"counts": count_by_code(findings), "findings": [finding.as_dict() for finding in findings]},
    }, indent=2)
    print(f"{len(kept)} tools from {', '.join(s.key for s in servers)}; lint {count_by_code(findings)}")


def record(stages: list[str]) -> None:
    """Run the stages with the environment recording: only calls not yet in recorded.json reach a server."""
    from fcbench.config import load_pipelines
    from fcbench.environments.from_config import with_recording

    pipeline = with_recording(load_pipelines(REPO / "pipelines.yaml").get_pipeline("workspace"))
    for stage in stages:
        print(stage, json.dumps(run_stage(pipeline, stage), default=str)[:600])


def run_stage(pipeline, stage: str):
    """One stage through its declaration (fcbench.pipeline.run): stage2 reads the bundled export."""
    from fcbench.pipeline.run import run_stage as run_declared

    if stage not in ("stage1", "stage2", "stage3", "filter"):
        raise SystemExit(f"unknown stage {stage!r}")
    return run_declared(stage, pipeline, offline=True).counts


if __name__ == "__main__":
    command, *rest = sys.argv[1:] or ["help"]
    if command == "import":
        import_servers()
    elif command == "record":
        record(rest or ["stage1", "stage2", "stage3", "filter"])
    else:
        print(__doc__)
