"""The `mcp` environment: catalog tools served by MCP servers, recorded and replayed.

Which server answers a tool: the catalog record's `mcp` block (`{"server": "memory", "tool":
"create_entities"}`, written by `build-dataset new --mcp`), naming a server of `environment.servers`.

Replay and recording, like the http environment: with `responses` (a recorded store) calls are
answered from the store, offline, and a call never recorded is a `not_recorded` failure; with
`record` (`--record`), or without a store, the servers are called and every answer is appended to
the store's journal as it arrives (a killed recording loses nothing; a re-run calls only what is
missing). Errors are never recorded: a re-run tries them again.

State. A stateful server (a memory graph, a folder of files) would let one sample see another's
writes. Each worker owns a sandbox folder (`{sandbox}` in the server's command): before a sample's
first live call it is emptied and filled from `sandbox.seed` (and servers with `reset: restart`
are restarted), so every sample starts from the same state and re-executing it gives the same
answers. A recording of a stateful server's call is keyed by the sample's earlier calls to that
server (`mcp_results.state_key`), so a read after a write is not answered by the read before it.
When a sample's first calls were answered from the store and a later one must go live, the earlier
calls are sent again first (their answers discarded) to rebuild the state the recording was made
in. A call that failed is assumed to have changed nothing.

Sessions: `for_sample()` gives one sample's view (stage1 drafts, each gold path run by
`iter_run_paths`); `call` on the environment itself is a sample of one call.

Failures, per call (a per-sample reject upstream, never a crash): an unknown tool or arguments that
do not fit the tool's input schema are refused before anything is sent; a server that cannot start
or hangs in `initialize` is `server_unavailable` (after three failed starts on a worker it is not
tried again); a JSON-RPC error is `protocol_error`; no answer within `timeout_s` is `timeout` and a
server that dies is `worker_died`: both restart that server (and reset the sandbox) for the next
sample. Every message carries the server's own words (its JSON-RPC error, or the last lines it
printed on stderr, kept per worker in `<build>/mcp-logs/`).

Concurrency: `workers` server sets, one per worker thread; `iter_run_paths` runs that many gold
paths at once when it calls servers. The calls of one step run in order (a server's state must
not depend on thread timing).

Not deterministic outputs (the time server's current time, file timestamps) are why builds replay
from the store: a recording taken once is the benchmark's truth. `convert_time` of a fixed time
also depends on the day it runs (it puts today's date on the time), so re-recording on another day
changes its answers.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from fcbench.environments import (ArgumentCoercer, CallOutcome, Environment, ErrorReason, PathRun, PlannedCall,
                                  canonical_call_key, run_path)
from fcbench.environments.mcp_client import McpConnection, McpFailure, McpPortal, ServerLaunch
from fcbench.environments.mcp_results import PathAliases, ResultReading, result_outcome, state_key
from fcbench.environments.recorded import UNKNOWN_CALL_RESPONSE, RecordedStore, RecordingJournal, load_store_and_journal

if TYPE_CHECKING:
    from fcbench.config import McpServerConfig
    from fcbench.sample import Tool

SANDBOX_PLACEHOLDER = "{sandbox}"
MAX_FAILED_STARTS = 3  # a server that failed to start this often on a worker is not started again there
# the server's state is unknown afterwards (a protocol error may be garbage on its stdout)
_RESTARTING = (ErrorReason.TIMEOUT, ErrorReason.WORKER_DIED, ErrorReason.PROTOCOL_ERROR)


def mcp_meta(tool: "Tool") -> dict[str, Any]:
    """The catalog record's `mcp` block (server, tool name on that server, annotations...)."""
    meta = tool.meta.get("mcp")
    if isinstance(meta, dict):
        return meta
    extra = (tool.meta.get("openai") or {}).get("extra") if isinstance(tool.meta.get("openai"), dict) else None
    meta = extra.get("mcp") if isinstance(extra, dict) else None
    return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True)
class McpServer:
    """One configured server: how to start it (placeholders unresolved) and how to read it."""

    name: str
    launch: ServerLaunch
    stateful: bool = True
    reset: str = "files"
    reading: ResultReading = field(default_factory=ResultReading)
    init_timeout: float = 30.0

    @classmethod
    def from_config(cls, name: str, config: "McpServerConfig", base_dir: Path) -> "McpServer":
        command = config.command
        if command and "/" in command and not Path(command).is_absolute():
            command = str((base_dir / command).resolve())  # a program shipped in the repository (.mcp/venv/bin/...)
        launch = ServerLaunch(name, command, tuple(config.args), dict(config.env), str(base_dir), config.url)
        reading = ResultReading(config.text_results, re.compile(config.error_text) if config.error_text else None)
        return cls(name, launch, config.stateful, config.reset, reading, config.init_timeout_s)

    def launch_in(self, sandbox: Path) -> ServerLaunch:
        """The launch with `{sandbox}` replaced by a worker's sandbox folder."""
        def fill(text: str) -> str:
            return text.replace(SANDBOX_PLACEHOLDER, str(sandbox))

        launch = self.launch
        return ServerLaunch(launch.name, fill(launch.command) if launch.command else None, tuple(fill(a) for a in launch.args),
                            {key: fill(value) for key, value in launch.env.items()}, launch.cwd, launch.url)


@dataclass(frozen=True)
class _Route:
    server: str
    tool: str  # the tool's name on the server


def reset_sandbox(root: Path, seed: Path | None) -> None:
    """Empty the sandbox in place (servers keep the folder they resolved at start) and copy the seed in."""
    root.mkdir(parents=True, exist_ok=True)
    for child in root.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    if seed is not None:
        shutil.copytree(seed, root, symlinks=True, dirs_exist_ok=True)


class _Worker:
    """One set of server connections and the sandbox they share."""

    def __init__(self, index: int, sandbox: Path) -> None:
        self.index = index
        self.sandbox = sandbox
        self.connections: dict[str, McpConnection] = {}
        self.owner: int | None = None  # the session whose state the sandbox holds
        self.applied: dict[str, int] = {}  # server -> calls of the owner's history sent to it since the reset
        self.failed_starts: dict[str, tuple[int, McpFailure]] = {}
        self.busy = False
        self.last_used = 0
        self.seeded = False


class McpSession(Environment):
    """One sample's view: the calls it made to each stateful server, in order."""

    _next_id = 0
    _id_lock = threading.Lock()

    def __init__(self, environment: "McpEnvironment") -> None:
        with McpSession._id_lock:
            McpSession._next_id += 1
            self.id = McpSession._next_id
        self.environment = environment
        self.keys: dict[str, list[str]] = {}  # server -> canonical keys of its successful calls
        self.calls: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # server -> (server tool, arguments)
        self.worker: _Worker | None = None

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        return self.environment._call(self, name, arguments)

    def remember(self, server: str, key: str, tool: str, arguments: dict[str, Any]) -> None:
        self.keys.setdefault(server, []).append(key)
        self.calls.setdefault(server, []).append((tool, arguments))

    @contextmanager
    def for_sample(self) -> Iterator[Environment]:
        yield self

    def session(self) -> "McpSession":
        return self.environment.session()

    def close(self) -> None:
        """The environment it views is closed by its owner; this only lets its worker go."""
        self.environment._finished(self)


class McpEnvironment(Environment):
    def __init__(self, tools: Sequence["Tool"], servers: Mapping[str, McpServer], *,
                 store_path: str | Path | None = None, record: bool = False, seed: Path | None = None,
                 aliases: Mapping[str, str] | None = None, workers: int = 2, timeout: float = 10.0,
                 log_dir: Path | None = None) -> None:
        from fcbench.errors import UserError

        self.tools = {tool.name: tool for tool in tools}
        self.servers = dict(servers)
        self.routes: dict[str, _Route] = {}
        for tool in tools:
            meta = mcp_meta(tool)
            server = meta.get("server") or (next(iter(self.servers)) if len(self.servers) == 1 else None)
            if server is None:
                continue  # a tool no server serves: refused when called (unknown_tool)
            if server not in self.servers:
                raise UserError(f"tool {tool.name!r} is served by MCP server {server!r}, which environment.servers "
                                f"does not declare (declared: {', '.join(self.servers)})")
            self.routes[tool.name] = _Route(server, str(meta.get("tool") or tool.name))
        self._coercers = {name: ArgumentCoercer(tool.parameters) for name, tool in self.tools.items()}
        self._validators: dict[str, Any] = {}
        self.timeout = timeout
        self.seed = seed
        self.alias_of = dict(aliases if aliases is not None else {".": "/sandbox"})
        self.store: RecordedStore | None = None
        self.journal: RecordingJournal | None = None
        if store_path is not None:
            if record:
                self.store, self.journal = RecordingJournal.open(store_path, self.tools.values())
            else:
                self.store = load_store_and_journal(store_path, self.tools.values())
        self.live = store_path is None or record
        self._store_lock = threading.Lock()
        self._root = Path(tempfile.mkdtemp(prefix="fcbench-mcp-")) if self.live else None
        self.log_dir = log_dir
        self._workers = [_Worker(index, (self._root or Path("/nonexistent")) / f"w{index}") for index in range(workers)]
        self._pool = threading.Condition()
        self._clock = 0
        self._finished_sessions: set[int] = set()
        self._portal: McpPortal | None = None
        self.from_store = 0  # calls answered by the recorded store
        self.sent = 0  # tools/call requests sent to servers (state rebuilding included)
        self.misses = 0  # replay: calls the store had no answer for
        self.resets = 0  # sandboxes emptied and re-seeded

    # ------------------------------------------------------------------------------ sessions
    def session(self) -> McpSession:
        return McpSession(self)

    @contextmanager
    def for_sample(self) -> Iterator[Environment]:
        session = McpSession(self)
        try:
            yield session
        finally:
            session.close()

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        """A call outside any sample: a sample of its own (a fresh sandbox)."""
        with self.for_sample() as session:
            return session.call(name, arguments)

    def call_step(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        with self.for_sample() as session:
            return session.call_step(calls)

    def iter_run_paths(self, paths: Sequence[Sequence[Sequence[PlannedCall]]]) -> Iterator[tuple[int, PathRun]]:
        def run(path: Sequence[Sequence[PlannedCall]]) -> PathRun:
            with self.for_sample() as session:
                return run_path(path, session.call_step)

        workers = len(self._workers)
        if not self.live or workers == 1 or len(paths) <= 1:
            for index, path in enumerate(paths):
                yield index, run(path)
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mcp-path") as pool:
            yield from enumerate(pool.map(run, paths))

    # ------------------------------------------------------------------------------ one call
    def _call(self, session: McpSession, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        route = self.routes.get(name)
        if route is None:
            return CallOutcome.failure(ErrorReason.UNKNOWN_TOOL, f"no MCP server serves a tool named {name!r}")
        server = self.servers[route.server]
        arguments = dict(self._coercers[name](arguments))
        problem = self._argument_problem(name, arguments)
        if problem is not None:
            return CallOutcome.failure(ErrorReason.BAD_ARGUMENTS, f"{name}: {problem}")
        key = canonical_call_key(name, arguments, self.tools[name].parameters, self._coercers[name])
        state = state_key(session.keys.get(server.name, [])) if server.stateful else ""
        if self.store is not None:
            with self._store_lock:
                known = self.store.lookup(name, arguments, state)
            if known is not None:
                self.from_store += 1
                if server.stateful:
                    session.remember(server.name, key, route.tool, arguments)
                return CallOutcome.success(known.response)
            if not self.live:
                self.misses += 1
                return CallOutcome.failure(ErrorReason.NOT_RECORDED, f"no recorded response for {name} with these "
                                           f"arguments{' after the same earlier calls' if state else ''}",
                                           UNKNOWN_CALL_RESPONSE)
        outcome = self._live(session, server, route.tool, name, arguments)
        if outcome.ok:
            if self.store is not None:
                with self._store_lock:
                    if self.store.add(name, arguments, outcome.response, state) and self.journal is not None:
                        self.journal.append(name, arguments, outcome.response, state)
            if server.stateful:
                session.remember(server.name, key, route.tool, arguments)
        return outcome

    def _argument_problem(self, name: str, arguments: Mapping[str, Any]) -> str | None:
        """Why the arguments do not fit the tool's input schema (checked before anything is sent:
        servers disagree on how they report it), or None."""
        from jsonschema import exceptions, validators

        validator = self._validators.get(name)
        if validator is None:
            schema = self.tools[name].parameters
            try:
                cls = validators.validator_for(schema)
                cls.check_schema(schema)
                validator = cls(schema)
            except exceptions.SchemaError:
                validator = False  # a schema the import would have refused: the server judges
            self._validators[name] = validator
        if validator is False:
            return None
        error = next(iter(sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))), None)
        if error is None:
            return None
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path).lstrip(".")
        return f"argument {where}: {error.message}" if where else f"arguments: {error.message}"

    # ------------------------------------------------------------------------------ live calls
    def _live(self, session: McpSession, server: McpServer, tool: str, name: str,
              arguments: dict[str, Any]) -> CallOutcome:
        worker = self._acquire(session)
        try:
            aliases = self._aliases(worker)
            if server.stateful and worker.owner != session.id:
                self._reset(worker)
                worker.owner = session.id
            connection = self._connection(worker, server)
            if server.stateful:  # calls the store answered must reach the server before this one
                earlier = session.calls.get(server.name, [])
                for replayed_tool, replayed in earlier[worker.applied.get(server.name, 0):]:
                    self.sent += 1
                    result = connection.call_tool(replayed_tool, aliases.to_real(replayed), self.timeout)
                    rebuilt = result_outcome(result, server.reading, f"{server.name}.{replayed_tool}")
                    if not rebuilt.ok:
                        worker.owner = None
                        return CallOutcome.failure(rebuilt.reason or ErrorReason.TOOL_ERROR,
                                                   f"{name}: rebuilding the sample's earlier state failed: "
                                                   f"{aliases.to_alias(rebuilt.error)}")
                worker.applied[server.name] = len(earlier)
            self.sent += 1
            result = connection.call_tool(tool, aliases.to_real(arguments), self.timeout)
            outcome = result_outcome(result, server.reading, f"{server.name}.{tool}")
            outcome = CallOutcome(outcome.ok, aliases.to_alias(outcome.response), aliases.to_alias(outcome.error),
                                  outcome.reason)
            if outcome.ok and server.stateful:
                worker.applied[server.name] = worker.applied.get(server.name, 0) + 1
            return outcome
        except McpFailure as failure:
            if failure.reason in _RESTARTING:
                self._drop(worker, server.name)
                worker.owner = None
            return CallOutcome.failure(failure.reason, self._aliases(worker).to_alias(failure.message))
        finally:
            self._release(worker)

    def _aliases(self, worker: _Worker) -> PathAliases:
        pairs = []
        for folder, alias in self.alias_of.items():
            real = (worker.sandbox / folder).resolve() if folder not in ("", ".") else worker.sandbox.resolve()
            pairs.append((str(real), alias))
            if str(worker.sandbox / folder) != str(real):
                pairs.append((str(worker.sandbox / folder).rstrip("/."), alias))
        return PathAliases.of(pairs)

    def _connection(self, worker: _Worker, server: McpServer) -> McpConnection:
        connection = worker.connections.get(server.name)
        if connection is not None and not connection.closed:
            return connection
        failed = worker.failed_starts.get(server.name)
        if failed is not None and failed[0] >= MAX_FAILED_STARTS:
            raise McpFailure(failed[1].reason, f"{failed[1].message} (not started again after {failed[0]} failed starts)")
        with self._pool:  # one event-loop thread for every worker's connections
            if self._portal is None:
                self._portal = McpPortal()
        if not worker.seeded:
            self._reset(worker)
        log = self.log_dir / f"{server.name}-w{worker.index}.log" if self.log_dir is not None else \
            worker.sandbox.parent / f"{server.name}-w{worker.index}.log"
        try:
            connection = McpConnection(server.launch_in(worker.sandbox), self._portal, init_timeout=server.init_timeout,
                                       call_timeout=self.timeout, log_path=log)
        except McpFailure as failure:
            count = (failed[0] if failed else 0) + 1
            worker.failed_starts[server.name] = (count, failure)
            raise
        worker.failed_starts.pop(server.name, None)
        worker.connections[server.name] = connection
        worker.applied[server.name] = 0
        return connection

    def _drop(self, worker: _Worker, server: str) -> None:
        connection = worker.connections.pop(server, None)
        if connection is not None:
            connection.close()

    def _reset(self, worker: _Worker) -> None:
        reset_sandbox(worker.sandbox, self.seed)
        worker.seeded = True
        self.resets += 1
        worker.applied = {}
        for name, server in self.servers.items():
            if server.stateful and server.reset == "restart":
                self._drop(worker, name)

    # ------------------------------------------------------------------------------ workers
    def _acquire(self, session: McpSession) -> _Worker:
        with self._pool:
            while True:
                free = [worker for worker in self._workers if not worker.busy]
                if free:
                    break
                self._pool.wait()
            own = [worker for worker in free if worker.owner == session.id]
            # a worker no running sample owns, else the one used longest ago: taking a worker
            # from a sample costs that sample a reset and a replay of its calls later
            idle = [worker for worker in free if worker.owner is None or worker.owner in self._finished_sessions]
            worker = (own or idle or sorted(free, key=lambda w: w.last_used))[0]
            worker.busy = True
            self._clock += 1
            worker.last_used = self._clock
            return worker

    def _release(self, worker: _Worker) -> None:
        with self._pool:
            worker.busy = False
            self._pool.notify()

    def _finished(self, session: McpSession) -> None:
        with self._pool:
            if any(worker.owner == session.id for worker in self._workers):
                self._finished_sessions.add(session.id)
            # forget sessions no worker remembers any more
            owners = {worker.owner for worker in self._workers}
            self._finished_sessions &= owners

    # ------------------------------------------------------------------------------ the end
    def summary(self) -> dict[str, int]:
        return {"from_store": self.from_store, "sent": self.sent, "not_recorded": self.misses, "resets": self.resets}

    def close(self) -> None:
        for worker in self._workers:
            for name in list(worker.connections):
                self._drop(worker, name)
        if self._portal is not None:
            self._portal.close()
            self._portal = None
        if self.journal is not None:
            self.journal.close()  # folds the journal into the store file, atomically
            self.journal = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
