"""The reference MCP servers the tests start, as installed by fcbench/environments/install_mcp_servers.sh
into .mcp/ (.ci/run installs them): their command lines, and git/sqlite sandboxes to start them in.
Imported by name from any test folder (pyproject's pythonpath)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MCP = REPO / ".mcp"
NPM = ".mcp/npm/node_modules/@modelcontextprotocol"
# what `build-dataset new --mcp` is given, from the repository root (as the README writes them)
COMMANDS = {
    "memory": f"MEMORY_FILE_PATH={{sandbox}}/memory.jsonl node {NPM}/server-memory/dist/index.js",
    "filesystem": f"node {NPM}/server-filesystem/dist/index.js {{sandbox}}/files",
    "time": ".mcp/venv/bin/mcp-server-time --local-timezone UTC",
    "git": ".mcp/venv/bin/mcp-server-git --repository {sandbox}/repo",
    "sqlite": ".mcp/venv-sqlite/bin/mcp-server-sqlite --db-path {sandbox}/crm.sqlite",
}
GIT_ENV = {"GIT_AUTHOR_NAME": "fcbench", "GIT_AUTHOR_EMAIL": "fcbench@example.invalid",
           "GIT_COMMITTER_NAME": "fcbench", "GIT_COMMITTER_EMAIL": "fcbench@example.invalid",
           "GIT_AUTHOR_DATE": "1767268800 +0000", "GIT_COMMITTER_DATE": "1767268800 +0000",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def require_servers() -> None:
    missing = [path for path in (MCP / "npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
                                 MCP / "npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
                                 MCP / "venv/bin/mcp-server-time", MCP / "venv/bin/mcp-server-git",
                                 MCP / "venv-sqlite/bin/mcp-server-sqlite") if not path.exists()]
    assert not missing, f"MCP servers missing ({missing[0]}): run bash fcbench/environments/install_mcp_servers.sh"


def make_seed(folder: Path) -> Path:
    """A sandbox seed every reference server starts in: files/, a git repo with one commit, a db."""
    (folder / "files" / "notes").mkdir(parents=True)
    (folder / "files" / "notes" / "todo.md").write_text("Renew the domain.\n")
    repo = folder / "repo"
    repo.mkdir()
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    (repo / "README.md").write_text("# seed\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "seed"], check=True, env=env)
    with sqlite3.connect(folder / "crm.sqlite") as db:
        db.execute("CREATE TABLE customers (name TEXT, tz TEXT)")
        db.executemany("INSERT INTO customers VALUES (?, ?)", [("Eve", "Asia/Singapore"), ("Frank", "Europe/Madrid")])
    return folder


def fresh_clone(target: Path) -> Path:
    """What a fresh clone holds: the files git tracks, nothing built, no .mcp/."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    return target
