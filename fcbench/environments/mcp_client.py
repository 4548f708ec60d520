"""A synchronous connection to one MCP server (stdio or streamable HTTP), over the `mcp` SDK 2.x.

The environment interface is synchronous (`call(name, arguments) -> CallOutcome`) and the SDK is
async, so every connection of an environment runs on one event loop in a background thread
(`McpPortal`, anyio's blocking portal). A connection enters the SDK's transport and session inside
one portal task (`wrap_async_context_manager`): anyio task groups and cancel scopes must be left by
the task that entered them, which a coroutine per call could not guarantee.

The handshake is the legacy one (`ClientSession.initialize()`): every server then speaks the same
protocol version (2025-11-25), where the SDK's default probe (`server/discover`) would put the newer
Python servers on another era and make an old one print a traceback. `tools/list` is read once
after `initialize`, following `nextCursor`, because the SDK checks each result's
`structuredContent` against the tool's output schema and needs the schemas for that.

Every failure is an `McpFailure` with a machine-readable reason and the server's own words: the
last lines it printed on stderr when it died or would not start, the JSON-RPC error message of a
protocol error. The SDK wraps errors in single-member exception groups; they are unwrapped here.
"""

from __future__ import annotations

import os
import re
import shlex
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Mapping

from fcbench.environments import ErrorReason

DEFAULT_INIT_TIMEOUT_S = 30.0
_STDERR_TAIL_LINES = 3
# JSON-RPC codes the SDK raises itself: a request timeout, and the transport closing under a call
_REQUEST_TIMEOUT = -32001
_CONNECTION_CLOSED = -32000


class McpFailure(Exception):
    """A server could not be reached or answered in a way no tool result can express."""

    def __init__(self, reason: ErrorReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class ServerLaunch:
    """How to reach one server: a command (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None

    def describe(self) -> str:
        if self.url:
            return self.url
        return shlex.join([self.command or "", *self.args])


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A server's environment with `${NAME}` taken from fcbench's own environment when the server
    starts: a token a server needs is written in pipelines.yaml as `${GITHUB_TOKEN}`, never as
    itself. ValueError names a variable that is not set."""
    expanded = {}
    for key, value in env.items():
        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise ValueError(f"the environment variable {name} (in the server's env {key}) is not set")
            return os.environ[name]

        expanded[key] = _VARIABLE.sub(lookup, value)
    return expanded


def parse_command_line(text: str) -> tuple[dict[str, str], str, list[str]]:
    """`VAR=value ... COMMAND ARGS...` as a shell would split it: the leading assignments are the
    server's environment (the memory server reads MEMORY_FILE_PATH), then the command and its
    arguments. No shell runs: nothing is expanded but quotes."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot split {text!r}: {exc}") from None
    env: dict[str, str] = {}
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if not words:
        raise ValueError(f"no command in {text!r}")
    return env, words[0], words[1:]


class McpPortal:
    """One event-loop thread shared by the connections of an environment."""

    def __init__(self) -> None:
        from anyio.from_thread import start_blocking_portal

        quiet_sdk_logging()
        self._manager = start_blocking_portal()
        self.portal = self._manager.__enter__()

    def close(self) -> None:
        if self._manager is not None:
            self._manager.__exit__(None, None, None)
            self._manager = None


def unwrap(exc: BaseException) -> BaseException:
    """The one error inside the SDK's nested single-member exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _stderr_tail(path: Path | None) -> str:
    if path is None or not path.is_file():
        return ""
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-_STDERR_TAIL_LINES:])


class _Garbage:
    """What a server wrote that is not a JSON-RPC message: the SDK hands it to the session's message
    handler and otherwise drops it, so the call it answered would only time out."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.event: Any = None  # an anyio.Event of the portal's loop, made per call

    async def handle(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.seen.append(_parse_problem(message))
            if self.event is not None:
                self.event.set()


@asynccontextmanager
async def _session(launch: ServerLaunch, errlog: Any, init_timeout: float, call_timeout: float,
                   garbage: _Garbage) -> AsyncIterator[Any]:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import PaginatedRequestParams

    if launch.url:
        transport = streamable_http_client(launch.url)
    else:
        params = StdioServerParameters(command=launch.command or "", args=list(launch.args),
                                       env=expand_environment(launch.env) or None, cwd=launch.cwd)
        transport = stdio_client(params, errlog=errlog)
    async with transport as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=call_timeout, message_handler=garbage.handle) as session:
            tools: list[Any] = []
            with anyio.fail_after(init_timeout):
                info = await session.initialize()
                cursor = None
                while True:
                    page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
            yield session, info, tools


class McpConnection:
    """One live session with one server; `call_tool` gives the result as the wire JSON object."""

    def __init__(self, launch: ServerLaunch, portal: McpPortal, *, init_timeout: float = DEFAULT_INIT_TIMEOUT_S,
                 call_timeout: float = 10.0, log_path: Path | None = None) -> None:
        self.launch = launch
        self.call_timeout = call_timeout
        self._portal = portal.portal
        self.log_path = log_path
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
        # the SDK needs a real file (it hands the descriptor to the child process)
        self._errlog = open(log_path, "a", encoding="utf-8") if log_path is not None else open(os.devnull, "w")
        self._garbage = _Garbage()
        self._manager = self._portal.wrap_async_context_manager(
            _session(launch, self._errlog, init_timeout, call_timeout, self._garbage))
        try:
            self.session, self.info, self._tools = self._manager.__enter__()
        except BaseException as exc:  # noqa: BLE001 (every start failure becomes one clear reason)
            self._errlog.close()
            raise self._start_failure(unwrap(exc), init_timeout) from None
        self.closed = False

    def _start_failure(self, exc: BaseException, init_timeout: float) -> McpFailure:
        where = f"MCP server {self.launch.name!r} ({self.launch.describe()})"
        said = _stderr_tail(self.log_path)
        said = f"; it said: {said}" if said else ""
        if isinstance(exc, TimeoutError):
            return McpFailure(ErrorReason.SERVER_UNAVAILABLE, f"{where} did not finish initialising within {init_timeout:g} s{said}")
        if isinstance(exc, (FileNotFoundError, PermissionError, ValueError)):
            return McpFailure(ErrorReason.SERVER_UNAVAILABLE, f"{where} cannot be started: {exc}")
        if isinstance(exc, KeyboardInterrupt):
            raise exc
        return McpFailure(ErrorReason.SERVER_UNAVAILABLE, f"{where} could not be started: {_describe(exc)}{said}")

    @property
    def server_name(self) -> str:
        return self.info.server_info.name

    @property
    def server_version(self) -> str:
        return self.info.server_info.version

    def tools(self) -> list[dict[str, Any]]:
        """`tools/list` (every page) as wire JSON: inputSchema, outputSchema, annotations..."""
        return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in self._tools]

    def call_tool(self, name: str, arguments: Mapping[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """The CallToolResult as wire JSON (`content`, `structuredContent`, `isError`), or McpFailure."""
        limit = timeout if timeout is not None else self.call_timeout
        where = f"MCP server {self.launch.name!r}, tool {name}"
        try:
            result = self._portal.call(self._guarded_call, name, dict(arguments), limit)
        except BaseException as exc:  # noqa: BLE001
            raise self._call_failure(unwrap(exc), where, limit) from None
        if result is None:  # the server wrote something that is not JSON-RPC while the call waited
            raise McpFailure(ErrorReason.PROTOCOL_ERROR, f"{where}: the server wrote something that is not a JSON-RPC "
                                                         f"message: {self._garbage.seen[-1]}")
        data = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        data.pop("resultType", None)  # protocol bookkeeping, not the tool's answer
        data.pop("_meta", None)
        return data

    async def _guarded_call(self, name: str, arguments: dict[str, Any], limit: float) -> Any:
        """The call, or None as soon as the server writes a line that is not JSON-RPC."""
        import anyio

        self._garbage.event = anyio.Event()
        result = None
        try:
            async with anyio.create_task_group() as group:
                async def call() -> None:
                    nonlocal result
                    result = await self.session.call_tool(name, arguments, read_timeout_seconds=limit)
                    group.cancel_scope.cancel()

                async def watch() -> None:
                    await self._garbage.event.wait()
                    group.cancel_scope.cancel()

                group.start_soon(call)
                group.start_soon(watch)
        finally:
            self._garbage.event = None
        return result

    def _call_failure(self, exc: BaseException, where: str, limit: float) -> McpFailure:
        from mcp import MCPError

        if isinstance(exc, KeyboardInterrupt):
            raise exc
        if isinstance(exc, MCPError):
            code = exc.error.code
            if code == _REQUEST_TIMEOUT:
                return McpFailure(ErrorReason.TIMEOUT, f"{where}: no answer within {limit:g} s")
            if code == _CONNECTION_CLOSED:
                said = _stderr_tail(self.log_path)
                return McpFailure(ErrorReason.WORKER_DIED, f"{where}: the server closed the connection"
                                  + (f"; it said: {said}" if said else ""))
            return McpFailure(ErrorReason.PROTOCOL_ERROR, f"{where}: JSON-RPC error {code}: {exc.error.message}")
        if isinstance(exc, TimeoutError):
            return McpFailure(ErrorReason.TIMEOUT, f"{where}: no answer within {limit:g} s")
        if isinstance(exc, RuntimeError) and "structured content" in str(exc).lower():
            # the SDK checks structuredContent against the tool's declared output schema
            return McpFailure(ErrorReason.UNEXPECTED_RESPONSE, f"{where}: {exc}")
        if _is_closed_stream(exc):
            said = _stderr_tail(self.log_path)
            return McpFailure(ErrorReason.WORKER_DIED, f"{where}: the server is gone ({type(exc).__name__})"
                              + (f"; it said: {said}" if said else ""))
        return McpFailure(ErrorReason.PROTOCOL_ERROR, f"{where}: {_describe(exc)}")

    def close(self) -> None:
        """Stop the server (stdin closed, then SIGTERM, then SIGKILL: bounded by the SDK)."""
        if getattr(self, "closed", True):
            return
        self.closed = True
        try:
            self._manager.__exit__(None, None, None)
        except BaseException:  # noqa: BLE001 (a server that died already: nothing left to stop)
            pass
        finally:
            self._errlog.close()


def _parse_problem(exc: Exception) -> str:
    """One line for what the SDK could not read (a pydantic error names the line it got)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            return f"{first.get('msg', 'invalid')}: {str(first.get('input', ''))[:200]!r}"
        except Exception:  # noqa: BLE001 (fall back to the message)
            pass
    return _describe(exc)[:300]


def quiet_sdk_logging() -> None:
    """The SDK logs a traceback for every line it cannot parse and for transport trouble; fcbench
    reports those per call (a reject with the reason), so they are kept off the console."""
    import logging

    logger = logging.getLogger("mcp")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


def _is_closed_stream(exc: BaseException) -> bool:
    import anyio

    return isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, BrokenPipeError))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
