"""A local OpenAI-compatible chat server for tests, benchmarks and dry runs of a pipeline.

It serves `POST /v1/chat/completions` (text answers and `tool_calls`), `GET /v1/models`, the Files
and Batches API (`/v1/files`, `/v1/batches`: see `mock_batches`), and `GET /_stats` (how many
requests it served, by HTTP status) over real HTTP on 127.0.0.1, so the `openai` SDK is exercised
exactly as against vLLM, Ollama or OpenAI. Every completion carries `system_fingerprint:
"fcbench-mock"`: the accounting bills nothing for answers from this server.

What it answers comes from a *script*: rules tried in order, the first that matches wins.

    {"user_contains": "weather", "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    {"call": 3, "status": 429, "retry_after": 1}        # the 3rd chat request is rate limited
    {"times": 2, "status": 500}                          # the first two requests fail, then the rule is spent
    {"user_contains": "broken", "malformed": "invalid_json"}

Match keys: `user_contains` (substring of the last user message), `call` (1-based arrival order of
chat requests), `times` (the rule applies at most that many times). Everything else describes the
reply (`Reply`). Tests may pass a Python callable instead of (or after) the rules. When nothing
matches, the default rule answers: `plan` calls the first offered tool with placeholder arguments
(until a tool result follows the last user message, then it answers in text); `echo` repeats the
last user message.

Latency is `time.sleep` in the handler thread (one thread per connection), so the server holds
many slow requests at once, which is what a throughput benchmark of the client needs.
"""

from __future__ import annotations

import argparse
import hmac
import json
import math
import threading
import time
from dataclasses import dataclass, field, fields, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from fcbench.errors import UserError
from fcbench.jsonl import iter_json_lines
from fcbench.llm.accounting import MOCK_FINGERPRINT
from fcbench.llm.mock_batches import MockBatchStore, parse_multipart

DEFAULT_MODEL = "mock-model"
MalformedKind = Literal["invalid_json", "missing_choices"]
MALFORMED_KINDS: tuple[str, ...] = ("invalid_json", "missing_choices")
DefaultRule = Literal["plan", "echo"]


# ------------------------------------------------------------------------------------ the script
@dataclass(frozen=True)
class Reply:
    """How to answer one chat request. Status 200 with neither content nor tool calls: default rule."""

    status: int = 200
    retry_after: float | None = None  # seconds, sent as the Retry-After header
    malformed: MalformedKind | None = None
    content: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # [{"name": ..., "arguments": {...} or "raw text"}]
    usage: dict[str, int] | None = None  # overrides the estimated prompt/completion tokens
    latency_ms: float = 0.0  # added to the server's latency

    @property
    def has_answer(self) -> bool:
        return self.content is not None or self.tool_calls is not None


@dataclass
class ScriptRule:
    reply: Reply
    user_contains: str | None = None
    call: int | None = None
    times: int | None = None
    used: int = 0

    def matches(self, last_user: str, call_index: int) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        if self.call is not None and self.call != call_index:
            return False
        return self.user_contains is None or self.user_contains in last_user


Responder = Callable[[dict[str, Any], int], "Reply | dict[str, Any] | None"]
"""A test's own rule: (request body, 1-based call index) -> a reply, or None to fall through."""

_MATCH_KEYS = {"user_contains", "call", "times"}
_REPLY_KEYS = {f.name for f in fields(Reply)}


# what each key of a rule must hold (None always allowed): a typo'd value fails when the script is
# loaded, not as a crash inside the server halfway through a run
_KEY_TYPES: dict[str, tuple[type, ...]] = {
    "status": (int,), "retry_after": (int, float), "content": (str,), "tool_calls": (list,), "usage": (dict,),
    "latency_ms": (int, float), "user_contains": (str,), "call": (int,), "times": (int,), "malformed": (str,),
}


def _check_types(data: Mapping[str, Any], where: str) -> None:
    for key, value in data.items():
        kinds = _KEY_TYPES.get(key, (object,))
        if value is not None and (not isinstance(value, kinds) or isinstance(value, bool)):
            raise UserError(f"{where}: {key} must be {' or '.join(kind.__name__ for kind in kinds)}, got {value!r}")
    for call in data.get("tool_calls") or []:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise UserError(f"{where}: each tool_calls entry needs a string 'name' (and 'arguments')")


def reply_from_dict(data: Mapping[str, Any], where: str = "reply") -> Reply:
    unknown = set(data) - _REPLY_KEYS
    if unknown:
        raise UserError(f"{where}: unknown key {min(unknown)!r}; expected {', '.join(sorted(_REPLY_KEYS))}")
    _check_types(data, where)
    if data.get("malformed") not in (None, *MALFORMED_KINDS):
        raise UserError(f"{where}: malformed must be one of {', '.join(MALFORMED_KINDS)}")
    return Reply(**data)


def rule_from_dict(data: Any, where: str) -> ScriptRule:
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected an object describing one rule")
    _check_types({key: value for key, value in data.items() if key in _MATCH_KEYS}, where)
    reply_part = {key: value for key, value in data.items() if key not in _MATCH_KEYS}
    return ScriptRule(reply=reply_from_dict(reply_part, where), user_contains=data.get("user_contains"),
                      call=data.get("call"), times=data.get("times"))


def load_script(path: Path) -> list[ScriptRule]:
    """Rules from a JSON list or a JSONL file (one rule a line); errors name FILE:LINE."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        return [rule_from_dict(item, f"{path}: rule {index + 1}") for index, item in enumerate(items)]
    rules = []
    for line in iter_json_lines(path):
        if line.error:
            raise UserError(f"{path}:{line.line_no}: {line.error}")
        rules.append(rule_from_dict(line.value, f"{path}:{line.line_no}"))
    return rules


# ------------------------------------------------------------------------------- pure answering
def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    return ""


def _text_of(content: Any) -> str:
    """Message content is a string or a list of parts ({"type": "text", "text": ...})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def placeholder_value(name: str, schema: Mapping[str, Any]) -> Any:
    """A deterministic value of the schema's type, so a planned call is well typed."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}.get(kind, f"<{name}>")


def planned_tool_call(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function", tool)
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = parameters.get("required") or list(properties)
    arguments = {name: placeholder_value(name, properties.get(name, {})) for name in required}
    return {"name": function.get("name", "tool"), "arguments": arguments}


def default_reply(body: Mapping[str, Any], rule: DefaultRule) -> Reply:
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    if rule == "plan" and tools and not _tool_result_after_last_user(messages):
        return Reply(tool_calls=[planned_tool_call(tools[0])])
    return Reply(content=f"echo: {last_user_text(messages)}")


def _tool_result_after_last_user(messages: Sequence[Mapping[str, Any]]) -> bool:
    for message in reversed(messages):
        if message.get("role") == "tool":
            return True
        if message.get("role") == "user":
            return False
    return False


def estimate_tokens(text: str) -> int:
    """About four characters a token: enough for accounting tests, deterministic."""
    return max(1, math.ceil(len(text) / 4))


def completion_body(body: Mapping[str, Any], reply: Reply, call_index: int,
                    fingerprint: str | None = MOCK_FINGERPRINT) -> dict[str, Any]:
    """The JSON of a successful chat completion for `reply` (`fingerprint` None: unmarked, billed as a
    paid endpoint would be)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    answer_text = reply.content or ""
    if reply.tool_calls:
        message["tool_calls"] = []
        for number, call in enumerate(reply.tool_calls):
            arguments = call.get("arguments", {})
            arguments_text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            answer_text += call.get("name", "") + arguments_text
            message["tool_calls"].append({"id": f"call_{call_index}_{number}", "type": "function",
                                          "function": {"name": call.get("name", ""), "arguments": arguments_text}})
    prompt_text = json.dumps(body.get("messages", []), ensure_ascii=False) + json.dumps(body.get("tools", []))
    usage = reply.usage or {"prompt_tokens": estimate_tokens(prompt_text), "completion_tokens": estimate_tokens(answer_text)}
    usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
    return {
        "id": f"chatcmpl-mock-{call_index}",
        "object": "chat.completion",
        "created": 0,  # fixed: the same request gives byte-identical answers
        "model": body.get("model", DEFAULT_MODEL),
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
        "usage": usage,
        **({"system_fingerprint": fingerprint} if fingerprint else {}),
    }


def request_problem(body: Any) -> str | None:
    """Why a chat request body cannot be answered (a real endpoint says 400 too), or None."""
    if not isinstance(body, dict):
        return "request body is not a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(message, dict) for message in messages):
        return "'messages' must be a list of objects"
    tools = body.get("tools", [])
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        return "'tools' must be a list of objects"
    return None


def error_body(status: int, message: str) -> dict[str, Any]:
    kinds = {401: "invalid_request_error", 429: "rate_limit_exceeded", 500: "server_error", 503: "server_error"}
    return {"error": {"message": message, "type": kinds.get(status, "invalid_request_error"), "code": str(status)}}


# -------------------------------------------------------------------------------------- server
@dataclass
class ServerStats:
    """What the server saw; `chat_requests` counts every chat request on arrival, whatever the answer."""

    chat_requests: int = 0
    model_requests: int = 0
    connections: int = 0  # TCP connections accepted: tells a client that keeps them alive from one that does not
    by_status: dict[str, int] = field(default_factory=dict)
    # chat requests answered at the same time, at most: tells a concurrent server (and client)
    # from one that takes them one after the other, without timing anything
    max_in_flight: int = 0
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record_chat(self, status: int) -> None:
        with self.lock:
            self.chat_requests += 1
            self.by_status[str(status)] = self.by_status.get(str(status), 0) + 1

    def as_dict(self) -> dict[str, Any]:
        with self.lock:
            return {"chat_requests": self.chat_requests, "model_requests": self.model_requests,
                    "connections": self.connections, "by_status": dict(self.by_status),
                    "max_in_flight": self.max_in_flight}

    def answering(self, change: int) -> None:
        with self.lock:
            self.in_flight += change
            self.max_in_flight = max(self.max_in_flight, self.in_flight)


class MockLLMServer:
    """The server and its script; use as a context manager or call `start()` / `stop()`.

    `api_key`: when set, requests without `Authorization: Bearer <api_key>` get 401 (the key is
    compared, never logged or echoed)."""

    def __init__(self, rules: Sequence[ScriptRule | Mapping[str, Any]] = (), *, responder: Responder | None = None,
                 default: DefaultRule = "plan", latency_ms: float = 0.0, port: int = 0,
                 api_key: str | None = None, models: Sequence[str] = (DEFAULT_MODEL,),
                 batch_faults: Sequence[str] = (), batch_processing_s: float = 0.0,
                 billed: bool = False) -> None:
        self.rules = [rule if isinstance(rule, ScriptRule) else rule_from_dict(rule, f"rule {number + 1}")
                      for number, rule in enumerate(rules)]
        self.responder = responder
        self.default = default
        self.latency_ms = latency_ms
        self.api_key = api_key
        self.models = list(models)
        self.stats = ServerStats()
        self.batches = MockBatchStore(batch_faults, batch_processing_s)
        # Unbilled by default (its answers carry the mock's fingerprint); `billed=True` stands in
        # for a paid endpoint, to test what a run costs.
        self.fingerprint = None if billed else MOCK_FINGERPRINT
        self._calls = 0
        self._rules_lock = threading.Lock()
        self._http = _QuietThreadingServer(("127.0.0.1", port), _Handler)
        self._http.mock = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    @property
    def base_url(self) -> str:
        """What to give the SDK (`base_url=`) or put in OPENAI_BASE_URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> MockLLMServer:
        # a short poll so stop() returns at once (shutdown waits for the loop to look)
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), name="mock-llm", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._http.serve_forever()

    def close(self) -> None:
        """Release the listening socket (after `serve_forever` returned)."""
        self._http.server_close()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> MockLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def choose_reply(self, body: Mapping[str, Any]) -> tuple[Reply, int]:
        """The reply for one chat request and its 1-based call index (rules are consumed under a lock:
        `times` must hold when many handler threads ask at once)."""
        last_user = last_user_text(body.get("messages") or [])
        with self._rules_lock:
            self._calls += 1
            call_index = self._calls
            for rule in self.rules:
                if rule.matches(last_user, call_index):
                    rule.used += 1
                    return rule.reply, call_index
        if self.responder is not None:
            answer = self.responder(dict(body), call_index)
            if answer is not None:
                return (answer if isinstance(answer, Reply) else reply_from_dict(answer)), call_index
        return default_reply(body, self.default), call_index

    def answer_line(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """One request of a batch, answered by the same script as an online request."""
        problem = request_problem(body)
        if problem:
            return 400, error_body(400, problem)
        reply, call_index = self.choose_reply(body)
        if reply.status != 200:
            return reply.status, error_body(reply.status, f"mock error {reply.status}")
        if not reply.has_answer:
            fallback = default_reply(body, self.default)
            reply = replace(reply, content=fallback.content, tool_calls=fallback.tool_calls)
        return 200, completion_body(body, reply, call_index, self.fingerprint)

    def key_accepted(self, authorization: str | None) -> bool:
        if self.api_key is None:
            return True
        expected = f"Bearer {self.api_key}".encode()
        return hmac.compare_digest((authorization or "").encode(), expected)


class _QuietThreadingServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # a benchmark opens many connections at once; the default backlog is 5
    mock: MockLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed mid-request (the resume benchmark does it on purpose) is not an error here.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDK reuses connections
    # Headers and body leave in two writes; with Nagle on, the second waits for the client's delayed
    # ACK (~40 ms on Linux), which would add 40 ms to every answer.
    disable_nagle_algorithm = True
    server: _QuietThreadingServer

    def setup(self) -> None:
        super().setup()
        stats = self.server.mock.stats
        with stats.lock:
            stats.connections += 1

    def log_message(self, format: str, *args: Any) -> None:
        pass  # no access log: nothing of a request (let alone its Authorization header) is printed

    def do_GET(self) -> None:
        mock = self.server.mock
        path = self.path.rstrip("/")
        if path == "/_stats":
            self._send_json(200, {**mock.stats.as_dict(), **mock.batches.stats()})
        elif path.startswith(("/v1/files/", "/v1/batches/")):
            self._get_batch_resource(path)
        elif self.path.rstrip("/") == "/v1/models":
            with mock.stats.lock:
                mock.stats.model_requests += 1
            if not mock.key_accepted(self.headers.get("Authorization")):
                self._send_json(401, error_body(401, "Incorrect API key provided."))
                return
            self._send_json(200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "fcbench-mock"} for name in mock.models]})
        else:
            self._send_json(404, error_body(404, f"no route {self.path}"))

    def do_POST(self) -> None:
        mock = self.server.mock
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.rstrip("/")
        if path.startswith(("/v1/files", "/v1/batches")):
            self._post_batch_resource(path, raw)
            return
        if path != "/v1/chat/completions":
            self._send_json(404, error_body(404, f"no route {self.path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        problem = request_problem(body)
        if problem:
            mock.stats.record_chat(400)
            self._send_json(400, error_body(400, problem))
            return
        if not mock.key_accepted(self.headers.get("Authorization")):
            mock.stats.record_chat(401)
            self._send_json(401, error_body(401, "Incorrect API key provided."))
            return
        try:
            reply, call_index = mock.choose_reply(body)
        except Exception as exc:  # a test's responder failing: say so instead of dropping the connection
            mock.stats.record_chat(500)
            self._send_json(500, error_body(500, f"mock responder failed: {type(exc).__name__}: {exc}"))
            return
        # counted on arrival, not after the latency: a client killed mid-request did send it
        mock.stats.record_chat(reply.status)
        delay = (mock.latency_ms + reply.latency_ms) / 1000
        mock.stats.answering(+1)
        self._in_flight = True
        try:
            if delay > 0:
                time.sleep(delay)
            self._answer(body, reply, call_index)
        finally:
            self._leave_flight()

    def _leave_flight(self) -> None:
        """The request is no longer in flight once its answer is ready, before a byte of it reaches
        the client: a client that sends its next request after reading this answer never finds two
        in flight (it did, now and then, when the count dropped after the write)."""
        if getattr(self, "_in_flight", False):
            self._in_flight = False
            self.server.mock.stats.answering(-1)

    # ------------------------------------------------------------------ Files and Batches API
    def _get_batch_resource(self, path: str) -> None:
        mock = self.server.mock
        if not mock.key_accepted(self.headers.get("Authorization")):
            self._send_json(401, error_body(401, "Incorrect API key provided."))
            return
        parts = path.split("/")  # ["", "v1", "files"|"batches", id, ("content")?]
        if parts[2] == "files":
            stored = mock.batches.file(parts[3])
            if stored is None:
                self._send_json(404, error_body(404, f"no file {parts[3]}"))
            elif len(parts) == 5 and parts[4] == "content":
                self._send_bytes(200, stored.data, "application/octet-stream")
            else:
                self._send_json(200, stored.as_object())
            return
        batch = mock.batches.retrieve(parts[3], mock.answer_line)
        if batch is None:
            self._send_json(404, error_body(404, f"no batch {parts[3]}"))
        else:
            self._send_json(200, batch)

    def _post_batch_resource(self, path: str, raw: bytes) -> None:
        mock = self.server.mock
        if not mock.key_accepted(self.headers.get("Authorization")):
            self._send_json(401, error_body(401, "Incorrect API key provided."))
            return
        if path == "/v1/files":
            fields = parse_multipart(self.headers.get("Content-Type", ""), raw)
            if "file" not in fields:
                self._send_json(400, error_body(400, "multipart field 'file' is missing"))
                return
            filename, data = fields["file"]
            purpose = fields.get("purpose", (None, b"batch"))[1].decode("utf-8")
            self._send_json(200, mock.batches.upload(purpose, filename or "upload.jsonl", data))
            return
        if path == "/v1/batches":
            try:
                request = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send_json(400, error_body(400, "request body is not JSON"))
                return
            status, answer = mock.batches.create(request if isinstance(request, dict) else {})
            self._send_json(status, answer)
            return
        parts = path.split("/")
        if len(parts) == 5 and parts[2] == "batches" and parts[4] == "cancel":
            batch = mock.batches.cancel(parts[3])
            if batch is not None:
                self._send_json(200, batch)
                return
        self._send_json(404, error_body(404, f"no route {self.path}"))

    def _answer(self, body: Mapping[str, Any], reply: Reply, call_index: int) -> None:
        if reply.status != 200:
            headers = {"Retry-After": _seconds_text(reply.retry_after)} if reply.retry_after is not None else {}
            self._send_json(reply.status, error_body(reply.status, f"mock error {reply.status}"), headers)
            return
        if reply.malformed == "invalid_json":
            self._send_bytes(200, b'{"id": "chatcmpl-broken", "choices": [{"message": {"content": "unfinished',
                             "application/json")
            return
        if not reply.has_answer:
            fallback = default_reply(body, self.server.mock.default)
            reply = replace(reply, content=fallback.content, tool_calls=fallback.tool_calls)
        completion = completion_body(body, reply, call_index, self.server.mock.fingerprint)
        if reply.malformed == "missing_choices":
            completion.pop("choices")
        self._send_json(200, completion)

    def _send_json(self, status: int, value: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(value, ensure_ascii=False).encode("utf-8"), "application/json", headers)

    def _send_bytes(self, status: int, data: bytes, content_type: str,
                    headers: Mapping[str, str] | None = None) -> None:
        self._leave_flight()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _seconds_text(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


# ------------------------------------------------------------------------------------ foreground
def run_foreground(port: int = 0, script: Path | None = None, latency_ms: float = 0.0,
                   api_key: str | None = None, announce: Callable[[str], None] = print) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM), after announcing the base URL to use."""
    rules = load_script(script) if script else []
    try:
        server = MockLLMServer(rules, latency_ms=latency_ms, port=port, api_key=api_key)
    except OSError as exc:
        raise UserError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
    announce(f"mock LLM server at {server.base_url}  (export OPENAI_BASE_URL={server.base_url}; "
             f"stats at http://127.0.0.1:{server.port}/_stats; Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m fcbench.llm.mock_server`: what `build-dataset mock-llm` runs (used by the benchmark)."""
    parser = argparse.ArgumentParser(description="Local OpenAI-compatible mock LLM server.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args(argv)
    run_foreground(args.port, args.script, args.latency_ms, announce=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
