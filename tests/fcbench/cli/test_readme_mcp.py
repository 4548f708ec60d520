"""README's "Bring your own MCP server" commands run as written, in order, from a fresh clone (the
tracked files, the installed servers beside them), and end with a filter that replays everything
from the store the earlier commands recorded."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from mcp_servers import REPO, fresh_clone, require_servers

BIN = Path(sys.executable).parent


def readme_commands(section: str) -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1]
    block = re.search(r"```\n(.*?)```", body, re.S).group(1)
    joined = re.sub(r"\\\n\s*", " ", block)  # continuation lines
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_bring_your_own_mcp_server_runs_as_written(tmp_path):
    require_servers()
    commands = readme_commands("Bring your own MCP server")
    assert commands[0].startswith("bash fcbench/environments/install_mcp_servers.sh") and len(commands) >= 6
    root = fresh_clone(tmp_path / "clone")
    (root / ".mcp").symlink_to(REPO / ".mcp")  # installed already: the script finds it and keeps it
    environ = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    summaries = []
    for command in commands:
        words = shlex.split(command, comments=True)
        done = subprocess.run(words, cwd=root, env=environ, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and "Traceback" not in done.stderr, f"{command}\n{done.stderr[-1500:]}"
        if words[1:2] == ["filter"]:
            summaries.append(json.loads((root / "datasets/my-desk/build/filter.summary.json").read_text()))
    recorded, replayed = summaries
    assert recorded["counts"]["passed"] >= 10 and (root / "datasets/my-desk/recorded.json").is_file()
    # the last filter, without --record, replayed every call from the store: the same verdicts
    assert replayed["counts"] == recorded["counts"] and replayed["reasons"] == recorded["reasons"]
