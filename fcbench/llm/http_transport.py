"""A lean keep-alive HTTP/1.1 transport for the openai SDK's HTTP client, used only for plain-http
endpoints on this machine (the mock server, a local vLLM or Ollama). See `LocalHTTPTransport`."""

from __future__ import annotations

import asyncio
import socket
import importlib
import inspect
from typing import Any
from urllib.parse import urlsplit

import openai

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


def _sdk_http_module() -> Any:
    """The HTTP library the installed SDK is built on (httpx for openai 1.x and 2.x, httpx2 for 3.x),
    found from the SDK's own default client class."""
    http_client_base = inspect.getmro(openai.DefaultAsyncHttpxClient)[1]
    return importlib.import_module(http_client_base.__module__.split(".")[0])


HTTP_LIBRARY = _sdk_http_module()
class LocalHTTPTransport(HTTP_LIBRARY.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive over asyncio streams, for plain-`http://` endpoints on this machine.

    Why: with a local server (vLLM, Ollama, the mock server) the client's CPU is the limit, and the
    default transport (httpcore's pool, rescanned for every request) costs about 2 ms a request
    on this kind of machine, half the client's total: at 50 requests in flight it could not keep up
    with a 200 ms endpoint (bench/llm_throughput.py). Requests still go through the SDK (auth,
    headers, errors) and its httpx client; only the socket work is done here. HTTPS, proxies and
    remote hosts keep the SDK's default transport.

    Bodies: Content-Length, chunked, or until the server closes. Timeouts: `connect` for opening a
    connection, `read` for the whole answer. Errors are the SDK's HTTP library's own exception
    types, so the SDK maps them to APIConnectionError / APITimeoutError as usual."""

    def __init__(self, max_idle: int = 256) -> None:
        self._idle: dict[tuple[str, int], list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = {}
        self._max_idle = max_idle

    async def handle_async_request(self, request: Any) -> Any:
        address = (request.url.host, request.url.port or 80)
        timeouts = request.extensions.get("timeout") or {}
        payload = _request_bytes(request, await request.aread())
        reused = self._take_idle(address)
        if reused is not None:
            try:
                return await self._exchange(request, address, reused, payload, timeouts.get("read"))
            except _StaleConnection:
                pass  # the server closed it while idle, before reading anything: send on a fresh one
        connection = await self._connect(address, timeouts.get("connect"))
        try:
            return await self._exchange(request, address, connection, payload, timeouts.get("read"))
        except _StaleConnection:
            raise HTTP_LIBRARY.RemoteProtocolError("server closed the connection without answering", request=request) from None

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for _, writer in connections:
                writer.close()
        self._idle.clear()

    def _take_idle(self, address: tuple[str, int]) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        connections = self._idle.get(address) or []
        while connections:
            reader, writer = connections.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return None

    async def _connect(self, address: tuple[str, int],
                       timeout: float | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), timeout)
        except TimeoutError:
            raise HTTP_LIBRARY.ConnectTimeout(f"connecting to {address[0]}:{address[1]} timed out") from None
        except OSError as exc:
            raise HTTP_LIBRARY.ConnectError(f"cannot connect to {address[0]}:{address[1]}: {exc.strerror or exc}") from None
        connected = writer.get_extra_info("socket")
        if connected is not None:  # one write per request anyway; never wait for an ACK to send
            connected.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return reader, writer

    async def _exchange(self, request: Any, address: tuple[str, int],
                        connection: tuple[asyncio.StreamReader, asyncio.StreamWriter], payload: bytes,
                        read_timeout: float | None) -> Any:
        reader, writer = connection
        keep = False
        try:
            writer.write(payload)
            try:
                status, headers, body, keep = await asyncio.wait_for(_read_response(reader, request), read_timeout)
            except TimeoutError:
                raise HTTP_LIBRARY.ReadTimeout("the endpoint did not answer in time", request=request) from None
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                raise HTTP_LIBRARY.ReadError(f"connection lost while reading the answer: {exc}", request=request) from None
            return HTTP_LIBRARY.Response(status, headers=headers, content=body, request=request,
                                  extensions={"http_version": b"HTTP/1.1"})
        finally:
            # cancelled or failed mid-exchange: the connection's state is unknown, never reuse it
            if keep and len(self._idle.setdefault(address, [])) < self._max_idle:
                self._idle[address].append((reader, writer))
            else:
                writer.close()


class _StaleConnection(Exception):
    """The server closed the connection before sending a single byte of the answer."""


def _request_bytes(request: Any, body: bytes) -> bytes:
    target = request.url.raw_path  # path and query, already encoded
    lines = [request.method.encode() + b" " + target + b" HTTP/1.1\r\n"]
    lines.extend(name + b": " + value + b"\r\n" for name, value in request.headers.raw)
    if body and "content-length" not in request.headers:
        lines.append(b"Content-Length: " + str(len(body)).encode() + b"\r\n")
    lines.append(b"\r\n")
    return b"".join(lines) + body


async def _read_response(reader: asyncio.StreamReader,
                         request: Any) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """(status, headers, body, connection reusable) of one HTTP/1.1 answer."""
    status_line = await reader.readline()
    if not status_line:
        raise _StaleConnection()
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise HTTP_LIBRARY.RemoteProtocolError(f"not an HTTP status line: {status_line[:80]!r}", request=request)
    status = int(parts[1])
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    chunked = False
    close = parts[0] == b"HTTP/1.0"
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.partition(b":")
        name, value = name.strip(), value.strip()
        headers.append((name, value))
        lowered = name.lower()
        if lowered == b"content-length":
            length = int(value)
        elif lowered == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif lowered == b"connection":
            close = value.lower() == b"close" or (close and value.lower() != b"keep-alive")
    if status in (204, 304) or 100 <= status < 200 or request.method == "HEAD":
        body = b""
    elif chunked:
        body = await _read_chunked(reader)
        headers = [(n, v) for n, v in headers if n.lower() != b"transfer-encoding"]
    elif length is not None:
        body = await reader.readexactly(length)
    else:
        body, close = await reader.read(), True  # no length: the body ends when the server closes
    return status, headers, body, not close


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks = []
    while True:
        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readline()  # the CRLF after each chunk


def uses_local_transport(base_url: str) -> bool:
    parts = urlsplit(base_url)
    return parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS


