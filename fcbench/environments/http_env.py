"""HTTP environment: calls the REST endpoint each catalog tool describes (standard library only).

A tool is callable over HTTP when its `meta` carries what NESTful v1's RapidAPI specs carry:
`method`, `endpoint` and `host` (the NESTful adapter puts them there). Path parameters are those the
catalog marks as such (NESTful v1 `path_parameters`, kept by the adapter under
`meta["nestful"]["group_of"]`, or a property with `"x-in": "path"`), or any `{name}` placeholder in
the endpoint; they are substituted into (or appended to) the path. The other arguments go to the
query string for GET/DELETE and to a JSON body otherwise.

NESTful v1 specs also give an `output_parser` such as `result.data[0].{param}`: the gold paths'
references (`$var1.skyId$`) read the object at that path of the API's answer, so the environment
answers with that object (`result` is the whole answer). A parser it cannot follow (`result.{}.…`)
leaves the answer whole.

`base_url` replaces `https://{host}` (a local mock, a proxy, a recorded server). With a
`RecordedStore`, every successful answer is recorded and `close()` saves it, so a benchmark is built
once against a live API and replayed offline with `RecordedEnvironment`.
API keys come from the process environment (RAPIDAPI_KEY) and are never recorded.
"""

from __future__ import annotations

import json
import os
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from fcbench.environments import CallOutcome, Environment, ErrorReason
from fcbench.environments.recorded import RecordedStore
from fcbench.resolve import walk_path

if TYPE_CHECKING:
    from fcbench.sample import Tool

RAPIDAPI_KEY_ENV_VAR = "RAPIDAPI_KEY"
_BODY_METHODS = {"POST", "PUT", "PATCH"}


@dataclass(frozen=True)
class HttpEndpoint:
    method: str
    host: str
    endpoint: str
    path_parameters: tuple[str, ...] = ()


def endpoint_of(tool: "Tool") -> HttpEndpoint | None:
    """The HTTP endpoint a catalog tool describes, or None when it describes none."""
    meta = tool.meta
    method, endpoint = meta.get("method"), meta.get("endpoint")
    if not isinstance(method, str) or not isinstance(endpoint, str):
        return None
    return HttpEndpoint(method.upper(), str(meta.get("host") or ""), endpoint, _path_parameters(tool))


def _path_parameters(tool: "Tool") -> tuple[str, ...]:
    properties = tool.parameters.get("properties") or {}
    group_of = (tool.meta.get("nestful") or {}).get("group_of") or {}
    names = [name for name, group in group_of.items() if group == "path_parameters"]
    names += [name for name, schema in properties.items() if isinstance(schema, dict) and schema.get("x-in") == "path"]
    return tuple(dict.fromkeys(names))


def build_request(
    endpoint: HttpEndpoint, arguments: Mapping[str, Any], base_url: str | None, headers: Mapping[str, str]
) -> urllib.request.Request:
    """The request for one call (pure: nothing is sent)."""
    path, rest = _fill_path(endpoint, arguments)
    root = (base_url or f"https://{endpoint.host}").rstrip("/")
    url = root + (path if path.startswith("/") else "/" + path)
    data = None
    all_headers = {"Accept": "application/json", **headers}
    if endpoint.method in _BODY_METHODS:
        data = json.dumps(rest, ensure_ascii=False).encode()
        all_headers["Content-Type"] = "application/json"
    elif rest:
        url += ("&" if "?" in url else "?") + urllib.parse.urlencode(
            [(name, _query_text(value)) for name, value in rest.items() if value is not None]
        )
    return urllib.request.Request(url, data=data, method=endpoint.method, headers=all_headers)


def _fill_path(endpoint: HttpEndpoint, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    path = endpoint.endpoint
    rest = dict(arguments)
    for name in list(rest):
        placeholder = "{" + name + "}"
        if placeholder in path:
            path = path.replace(placeholder, urllib.parse.quote(_query_text(rest.pop(name)), safe=""))
    for name in endpoint.path_parameters:  # NESTful v1 path parameters follow the endpoint: /news/v1/US
        if name in rest:
            path = path.rstrip("/") + "/" + urllib.parse.quote(_query_text(rest.pop(name)), safe="")
    return path, rest


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)) and all(not isinstance(item, (dict, list)) for item in value):
        return ",".join(_query_text(item) for item in value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


_PARSER_PART = re.compile(r"\.(?P<key>[^.\[\]]+)|\[(?P<index>\d+)\]")


def output_parser_path(parser: str) -> tuple[str | int, ...] | None:
    """`result.data[0].{param}` -> ("data", 0); None when the parser is not a plain path."""
    if not parser.startswith("result") or not parser.endswith(".{param}"):
        return None
    body = parser[len("result") : -len(".{param}")]
    parts: list[str | int] = []
    position = 0
    for match in _PARSER_PART.finditer(body):
        if match.start() != position or match.group("key") == "{}":
            return None
        parts.append(match.group("key") if match.group("key") is not None else int(match.group("index")))
        position = match.end()
    return tuple(parts) if position == len(body) else None


def _decode_body(body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


class HttpEnvironment(Environment):
    def __init__(
        self,
        tools: Iterable["Tool"],
        *,
        base_url: str | None = None,
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        record_to: RecordedStore | None = None,
        record_path: str | Path | None = None,
        parse_output: bool = True,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.base_url = base_url
        self.parse_output = parse_output
        self.timeout = timeout
        self.headers = dict(headers or {})
        self.record_path = Path(record_path) if record_path else None
        self.store = record_to if record_to is not None else (RecordedStore(self.tools.values()) if self.record_path else None)

    def _with_key(self, request: urllib.request.Request, endpoint: HttpEndpoint) -> urllib.request.Request:
        """Add the RapidAPI key only for a catalog host that is RapidAPI itself or a subdomain of it
        (not any name merely ending in "rapidapi.com"). A `base_url` the user configured (a local
        replay or a proxy) gets it too: that routing is the user's own choice. The key is never
        copied onto a redirect."""
        if _is_rapidapi_host(endpoint.host):
            request.add_header("X-rapidapi-host", endpoint.host)
            key = os.environ.get(RAPIDAPI_KEY_ENV_VAR)
            if key:
                request.add_unredirected_header("X-rapidapi-key", key)  # never copied onto a redirect
        return request

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        tool = self.tools.get(name)
        if tool is None:
            return CallOutcome.failure(ErrorReason.UNKNOWN_TOOL, f"no tool named {name!r} in the catalog")
        endpoint = endpoint_of(tool)
        if endpoint is None:
            return CallOutcome.failure(ErrorReason.UNKNOWN_TOOL, f"{name}: the catalog gives no HTTP method/endpoint")
        request = self._with_key(build_request(endpoint, arguments, self.base_url, self.headers), endpoint)
        outcome = self._send(name, request)
        if outcome.ok and self.parse_output:
            outcome = _parsed_output(name, tool, outcome)
        if outcome.ok and self.store is not None:
            self.store.add(name, arguments, outcome.response)
        return outcome

    def _send(self, name: str, request: urllib.request.Request) -> CallOutcome:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return CallOutcome.success(_decode_body(answer.read()))
        except urllib.error.HTTPError as exc:
            body = _decode_body(exc.read() or b"")
            return CallOutcome.failure(ErrorReason.HTTP_STATUS, f"{name}: HTTP {exc.code} {exc.reason}", body)
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                return _timed_out(name, self.timeout)
            return CallOutcome.failure(ErrorReason.NETWORK, f"{name}: {exc.reason}")
        except (TimeoutError, socket.timeout):
            return _timed_out(name, self.timeout)
        except OSError as exc:  # connection reset mid-answer and the like
            return CallOutcome.failure(ErrorReason.NETWORK, f"{name}: {exc}")

    def close(self) -> None:
        if self.store is not None and self.record_path is not None:
            self.store.save(self.record_path)


def _is_rapidapi_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host == "rapidapi.com" or host.endswith(".rapidapi.com")


def _parsed_output(name: str, tool: "Tool", outcome: CallOutcome) -> CallOutcome:
    parser = tool.meta.get("output_parser")
    path = output_parser_path(parser) if isinstance(parser, str) else None
    if path is None:
        return outcome
    try:
        return CallOutcome.success(walk_path(outcome.response, path))
    except (LookupError, TypeError) as exc:
        return CallOutcome.failure(
            ErrorReason.UNEXPECTED_RESPONSE, f"{name}: answer does not follow {parser}: {exc}", outcome.response
        )


def _timed_out(name: str, seconds: float) -> CallOutcome:
    return CallOutcome.failure(ErrorReason.TIMEOUT, f"{name}: no answer within {seconds:g} s")
