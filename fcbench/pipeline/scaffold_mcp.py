"""`build-dataset new NAME --mcp "COMMAND ARGS..."` / `--mcp-url URL`: scaffold a benchmark over
MCP servers.

Each server is started once (stdio, from the pipelines file's folder; `{sandbox}` in the command
is an empty temporary folder) or reached (streamable HTTP), its tools are listed (`tools/list`,
every page) and it is stopped. Writes `datasets/NAME/` (tools.json, value_pools.json,
import_report.json) and appends a pipeline with an `mcp` environment to pipelines.yaml as text,
the way the OpenAPI scaffold does (`fcbench.pipeline.scaffold`): calls are replayed from
`datasets/NAME/recorded.json`; `--record` starts the servers and records what is missing.

A server's name is the `NAME:` before its command (`--mcp "notes: node server.js"`), else the
name it reports (`memory-server` -> `memory`, `mcp-time` -> `time`). Leading `VAR=value` words
are the server's environment (`MEMORY_FILE_PATH={sandbox}/memory.jsonl node ...`).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fcbench.catalog.lint import count_by_code, lint_tools
from fcbench.catalog.mcp import McpImport, catalog_record, import_tools, read_only
from fcbench.config import PIPELINE_NAME_PATTERN, load_pipelines
from fcbench.environments.mcp_client import McpConnection, McpFailure, McpPortal, ServerLaunch, parse_command_line
from fcbench.errors import UserError
from fcbench.jsonl import write_json, write_text
from fcbench.pipeline.scaffold import ScaffoldResult, _appended, generation_tail, value_pools
from fcbench.sample import Tool

_PREFIX = re.compile(r"^(?P<name>[a-z][a-z0-9_-]*):\s+(?P<rest>.+)$", re.S)
_SERVER_KEY = re.compile(r"^[a-z][a-z0-9_-]*$")


@dataclass(frozen=True)
class McpSource:
    """One `--mcp` command line or `--mcp-url` URL, as given."""

    text: str
    is_url: bool = False

    def parsed(self) -> tuple[str | None, ServerLaunch]:
        """(the name given before the command, or None) and how to start it."""
        match = _PREFIX.match(self.text.strip())
        name, rest = (match.group("name"), match.group("rest")) if match else (None, self.text.strip())
        if self.is_url:
            if not re.match(r"^https?://", rest):
                raise UserError(f"--mcp-url {self.text!r}: expected an http:// or https:// URL (the server's /mcp endpoint)")
            return name, ServerLaunch(name or "server", url=rest)
        try:
            env, command, args = parse_command_line(rest)
        except ValueError as exc:
            raise UserError(f"--mcp {self.text!r}: {exc}") from None
        return name, ServerLaunch(name or "server", command, tuple(args), env)


@dataclass
class ListedServer:
    key: str
    source: McpSource
    launch: ServerLaunch
    server_name: str
    server_version: str
    protocol: str
    tools: list[Tool] = field(default_factory=list)


def server_key(reported: str) -> str:
    """A short key from the name a server reports: `memory-server` -> memory, `mcp-time` -> time."""
    key = re.sub(r"[^a-z0-9]+", "-", reported.lower()).strip("-")
    key = re.sub(r"^(mcp-server-|mcp-)", "", key)
    key = re.sub(r"(-mcp-server|-server|-mcp)$", "", key)
    key = key or "server"
    return key if key[0].isalpha() else f"server-{key}"


def list_servers(sources: list[McpSource], base_dir: Path, init_timeout: float = 30.0,
                 seed: Path | None = None) -> tuple[list[ListedServer], McpImport]:
    """Start (or reach) each server, read its tools, stop it; `{sandbox}` is a temporary copy of
    `seed` (or an empty folder). A server that fails is a UserError naming it, with what it said."""
    from fcbench.environments.mcp_env import reset_sandbox

    portal = McpPortal()
    sandbox = Path(tempfile.mkdtemp(prefix="fcbench-mcp-new-"))
    reset_sandbox(sandbox / "box", seed)
    logs, sandbox = sandbox, sandbox / "box"
    listed: list[ListedServer] = []
    imported = McpImport()
    taken: set[str] = set()
    try:
        for source in sources:
            given, launch = source.parsed()
            filled = ServerLaunch(launch.name, launch.command, tuple(a.replace("{sandbox}", str(sandbox)) for a in launch.args),
                                  {k: v.replace("{sandbox}", str(sandbox)) for k, v in launch.env.items()},
                                  str(base_dir), launch.url)
            try:
                connection = McpConnection(filled, portal, init_timeout=init_timeout, log_path=logs / f"{len(listed)}.log")
            except McpFailure as failure:
                raise UserError(f"--mcp{'-url' if source.is_url else ''} {source.text!r}: {failure.message}") from None
            try:
                key = given or server_key(connection.server_name)
                while key in {server.key for server in listed}:
                    key = f"{key}-{len(listed) + 1}"
                listing = connection.tools()
                one = import_tools(key, listing, taken)
                imported.tools.extend(one.tools)
                imported.notes.extend(one.notes)
                listed.append(ListedServer(key, source, launch, connection.server_name, connection.server_version,
                                           str(connection.info.protocol_version), one.tools))
            finally:
                connection.close()
    finally:
        portal.close()
        shutil.rmtree(logs, ignore_errors=True)
    return listed, imported


def _yaml(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON is YAML, and quotes what needs quoting


def pipeline_entry(name: str, dataset_dir: str, servers: list[ListedServer], seed: str | None = None) -> str:
    lines = [
        "",
        f"  {name}:",
        "    description: >-",
        f"      Imported by `build-dataset new` from {len(servers)} MCP server(s) ({', '.join(s.key for s in servers)}),",
        "      one tool per MCP tool; calls are replayed from the recorded store (`--record` starts the",
        "      servers, each sample in a fresh sandbox, and records what is missing).",
        f"    dataset_dir: {dataset_dir}",
        "    seed: 0",
        f"    domains: [{', '.join(_yaml(server.key) for server in servers)}]",
        f"    tools: {dataset_dir}/tools.json",
        "    environment:",
        "      kind: mcp                  # replayed offline from `responses`; --record calls the servers",
        f"      responses: {dataset_dir}/recorded.json",
        "      timeout_s: 10              # per call",
        "      workers: 2                 # server sets (one sandbox each)",
        (f"      sandbox: {{seed: {_yaml(seed)}}}   # copied into each sample's fresh {{sandbox}}" if seed else
         "      # sandbox: {seed: FOLDER}   # files copied into each sample's fresh {sandbox} (--sandbox-seed)"),
        "      servers:",
    ]
    for server in servers:
        lines.append(f"        {server.key}:")
        launch = server.launch
        if launch.url:
            lines.append(f"          url: {_yaml(launch.url)}")
        else:
            lines.append(f"          command: {_yaml(launch.command)}")
            if launch.args:
                lines.append(f"          args: [{', '.join(_yaml(arg) for arg in launch.args)}]")
            if launch.env:
                lines.append(f"          env: {{{', '.join(f'{key}: {_yaml(value)}' for key, value in launch.env.items())}}}")
        stateful = not read_only(server.tools)
        why = "some tool changes state: a fresh sandbox per sample" if stateful else "every tool is read-only (annotations)"
        lines.append(f"          stateful: {'true' if stateful else 'false'}   # {why}")
    lines += [
        "    stages:",
        "      stage1:",
        "        offline: true            # graph sampler (start values from value_pools.json)",
        "        queries: 20",
        *generation_tail(dataset_dir),
    ]
    return "\n".join(lines) + "\n"


def scaffold_mcp_dataset(name: str, sources: list[McpSource], pipelines_file: Path, *, force: bool = False,
                         init_timeout: float = 30.0, sandbox_seed: Path | None = None) -> ScaffoldResult:
    if not re.match(PIPELINE_NAME_PATTERN, name):
        raise UserError(f"{name!r}: a pipeline name is lower-case letters, digits, '-' and '_'")
    if not sources:
        raise UserError("name at least one server: --mcp \"COMMAND ARGS...\" or --mcp-url URL")
    config = load_pipelines(pipelines_file)
    if name in config.pipelines:
        raise UserError(f"{pipelines_file}: a pipeline named {name!r} is already declared")
    root = pipelines_file.resolve().parent
    dataset_dir = f"datasets/{name}"
    target = root / dataset_dir
    if target.exists() and any(target.iterdir()) and not force:
        raise UserError(f"{target}: already exists (use --force to write over it)")
    seed_text = None
    if sandbox_seed is not None:
        if not sandbox_seed.is_dir():
            raise UserError(f"--sandbox-seed {sandbox_seed}: no such folder")
        resolved = sandbox_seed.resolve()
        seed_text = str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(resolved)
    servers, imported = list_servers(sources, root, init_timeout, sandbox_seed)
    if not imported.tools:
        problems = "; ".join(note.describe() for note in imported.errors[:3])
        raise UserError(f"no tool imported from {', '.join(s.key for s in servers)}" + (f": {problems}" if problems else ""))
    records = [catalog_record(tool) for tool in imported.tools]
    pools = value_pools(imported.tools)
    pools["description"] = "Slot values seeded by `build-dataset new` from the tools' enums and examples; edit freely."
    findings = lint_tools(imported.tools)
    entry = pipeline_entry(name, dataset_dir, servers, seed_text)
    new_text = _appended(pipelines_file, name, entry)  # checked before anything is written
    target.mkdir(parents=True, exist_ok=True)
    write_json(target / "tools.json", records, indent=2)
    write_json(target / "value_pools.json", pools, indent=2)
    write_json(target / "import_report.json", {
        "servers": [{"name": server.key, "source": ("url: " if server.source.is_url else "command: ") + server.source.text,
                     "server_info": {"name": server.server_name, "version": server.server_version},
                     "protocol_version": server.protocol, "tools": len(server.tools),
                     "stateful": not read_only(server.tools)} for server in servers],
        "tools": len(records),
        "notes": [note.as_dict() for note in imported.notes],
        "lint": {"counts": count_by_code(findings), "findings": [finding.as_dict() for finding in findings]},
    }, indent=2)
    write_text(pipelines_file, new_text)
    notes = [{"severity": note.severity, "file": note.server, "pointer": note.tool, "message": note.message}
             for note in imported.notes]
    return ScaffoldResult(name, dataset_dir, len(records), len(servers), len(pools["slots"]), notes, count_by_code(findings),
                          [finding.as_dict() for finding in findings], str(pipelines_file))
