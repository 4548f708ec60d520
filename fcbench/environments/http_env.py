"""HTTP environment: calls the REST endpoint each catalog tool describes, over httpx.

Where an argument goes:
- a tool imported from an OpenAPI description (`fcbench.catalog.openapi`) carries
  `meta["openapi"]["locations"]`: each argument goes to the path, the query, a header, a form field,
  a property of the JSON body, or is the whole JSON body, exactly as the description says; an array
  in the query is sent as the description's style (`csv` a,b or `multi` a=..&a=..);
- a NESTful v1 tool (`method`, `endpoint`, `host` in `meta`) keeps NESTful's rules: `{name}`
  placeholders and path parameters in the path, the rest in the query for GET/DELETE and in a JSON
  body otherwise; its `output_parser` (`result.data[0].{param}`) picks the part of the answer
  references read.

Where the request goes: `base_urls[source]` (one server per description, e.g. one Prism per file),
else `base_url`, else the description's own server (`meta["openapi"]["server"]`, or
`https://{host}` for NESTful). A base URL replaces the server URL whole, base path included.

Sending: a per-call timeout; retries with exponential backoff on 429 and 5xx and on transport
errors, honouring `Retry-After`; at most `max_per_host` requests in flight per host (calls of a step
and paths run concurrently up to that); a response larger than `max_response_bytes` is cut off and
reported. A body that is not JSON (an HTML error page, an empty body, gzip bytes without a
Content-Encoding) is an `unexpected_response` naming the call, never a crash.

Secrets: `auth_env` names an environment variable whose value goes in a header (`Authorization:
Bearer …` by default; `auth_in: query` or `cookie` for an API key sent as a query parameter or a
cookie named `auth_header`) and nowhere else. The RapidAPI key of NESTful tools (RAPIDAPI_KEY) goes
only to RapidAPI hosts. httpx follows no redirect, so no secret is ever sent to another host.
Every secret the environment sends (those two, the value of any header, query parameter or cookie
the description declares as a security scheme, and sensitive static headers) is REDACTED from the
outcome before anyone sees it (`redaction.py`): an API that echoes the request cannot put it in the
recording, a draft, a sample, an export or a log; error messages name method + URL, never a header
or the auth parameter.

Path parameters are percent-encoded whole (every character but letters, digits, `-`, `_` and `~`;
`/` and `.` too), and a value that is empty, `.` or `..` is refused (`unsafe_argument`): no
argument can change the request's path (`/weather/{cityId}` with `..` would reach `GET /api/v1`
with the token).

Recording: with `record_path`, every successful answer is appended at once to a journal beside the
store (`<store>.journal.jsonl`, one line per call, flushed) and `close()` folds it into the store
file atomically. A killed recording loses nothing it had received; a re-run loads store + journal
and sends only the calls not recorded yet. Replay is `RecordedEnvironment` over the same store.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import httpx

from fcbench.environments import CallOutcome, Environment, ErrorReason, PlannedCall, PathRun, run_path
from fcbench.environments.recorded import RecordedStore, RecordingJournal
from fcbench.environments.redaction import SecretRedactor
from fcbench.resolve import walk_path

if TYPE_CHECKING:
    from fcbench.sample import Tool

RAPIDAPI_KEY_ENV_VAR = "RAPIDAPI_KEY"
# static headers whose value is a secret whatever the description says
_SENSITIVE_HEADER = re.compile(r"^(proxy-)?authorization$|^cookie$|api[-_]?key|token|secret|password", re.IGNORECASE)
_BODY_METHODS = {"POST", "PUT", "PATCH"}
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class HttpEndpoint:
    method: str
    host: str
    endpoint: str
    path_parameters: tuple[str, ...] = ()


@dataclass(frozen=True)
class HttpRequest:
    """One call as it goes on the wire (pure data; secrets are added only when it is sent)."""

    method: str
    url: str
    params: tuple[tuple[str, str], ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    json_body: Any = None
    has_json_body: bool = False
    form: Mapping[str, str] | None = None

    def describe(self) -> str:
        """Method and URL with its query: what an error message may say (never a header, never the
        auth parameter: it is added only when the request is sent)."""
        query = urllib.parse.urlencode(self.params)
        return f"{self.method} {self.url}{'?' + query if query else ''}"

    @property
    def host(self) -> str:
        return urllib.parse.urlsplit(self.url).netloc


def http_meta(tool: "Tool") -> Mapping[str, Any]:
    """Where a tool's HTTP facts are: its `meta` (NESTful adapter, OpenAPI import in memory) or,
    for a catalog file written by `build-dataset new`, the spec's own `http` key (which the
    OpenAI-style reader keeps under `meta["openai"]["extra"]`)."""
    if "method" in tool.meta:
        return tool.meta
    openai = tool.meta.get("openai")
    extra = openai.get("extra") if isinstance(openai, dict) else None
    http = extra.get("http") if isinstance(extra, dict) else None
    return http if isinstance(http, dict) else tool.meta


def endpoint_of(tool: "Tool") -> HttpEndpoint | None:
    """The HTTP endpoint a catalog tool describes, or None when it describes none."""
    meta = http_meta(tool)
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


def server_url(tool: "Tool", base_url: str | None, base_urls: Mapping[str, str] | None = None) -> str:
    meta = http_meta(tool)
    openapi = meta.get("openapi") if isinstance(meta.get("openapi"), dict) else None
    if openapi and base_urls and openapi.get("source") in base_urls:
        return base_urls[openapi["source"]].rstrip("/")
    if base_url:
        return base_url.rstrip("/")
    if openapi and openapi.get("server"):
        return str(openapi["server"]).rstrip("/")
    return f"https://{meta.get('host') or ''}"


def build_request(tool: "Tool", arguments: Mapping[str, Any], base_url: str | None = None,
                  base_urls: Mapping[str, str] | None = None, headers: Mapping[str, str] | None = None) -> HttpRequest:
    """The request for one call (pure: nothing is sent). Raises ValueError for a tool with no endpoint."""
    endpoint = endpoint_of(tool)
    if endpoint is None:
        raise ValueError(f"{tool.name}: the catalog gives no HTTP method/endpoint")
    root = server_url(tool, base_url, base_urls)
    openapi = http_meta(tool).get("openapi")
    if isinstance(openapi, dict) and isinstance(openapi.get("locations"), dict):
        return _openapi_request(endpoint, openapi, arguments, root, headers or {})
    path, rest = _fill_path(endpoint, arguments)
    url = root + (path if path.startswith("/") else "/" + path)
    all_headers = {"Accept": "application/json", **(headers or {})}
    if endpoint.method in _BODY_METHODS:
        return HttpRequest(endpoint.method, url, (), all_headers, dict(rest), True)
    params = tuple((name, _query_text(value)) for name, value in rest.items() if value is not None)
    return HttpRequest(endpoint.method, url, params, all_headers)


def _openapi_request(endpoint: HttpEndpoint, openapi: Mapping[str, Any], arguments: Mapping[str, Any], root: str,
                     headers: Mapping[str, str]) -> HttpRequest:
    locations: Mapping[str, str] = openapi["locations"]
    wire: Mapping[str, str] = openapi.get("wire_names") or {}
    styles: Mapping[str, str] = openapi.get("array_styles") or {}
    path = endpoint.endpoint
    params: list[tuple[str, str]] = []
    accept = ", ".join(openapi.get("produces") or []) or "application/json"
    all_headers = {"Accept": accept, **headers}
    body: dict[str, Any] = {}
    whole: Any = None
    has_body = False
    form: dict[str, str] = {}
    for name, value in arguments.items():
        where = locations.get(name, "query" if endpoint.method not in _BODY_METHODS else "body")
        sent_as = wire.get(name, name)
        if value is None and where != "body_whole":
            continue
        if where == "path":
            path = path.replace("{" + sent_as + "}", path_segment(name, value))
        elif where == "query":
            if isinstance(value, (list, tuple)) and styles.get(name) == "multi":
                params.extend((sent_as, _query_text(item)) for item in value)
            else:
                params.append((sent_as, _query_text(value, styles.get(name, "csv"))))
        elif where == "header":
            all_headers[sent_as] = _query_text(value)
        elif where == "cookie":
            all_headers["Cookie"] = "; ".join(filter(None, [all_headers.get("Cookie"), f"{sent_as}={_query_text(value)}"]))
        elif where == "form":
            form[sent_as] = _query_text(value)
        elif where == "body_whole":
            whole, has_body = value, True
        else:
            body[sent_as] = value
            has_body = True
    if body and whole is None:
        whole = body
    return HttpRequest(endpoint.method, root + path, tuple(params), all_headers, whole, has_body, form or None)


def _fill_path(endpoint: HttpEndpoint, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    path = endpoint.endpoint
    rest = dict(arguments)
    for name in list(rest):
        placeholder = "{" + name + "}"
        if placeholder in path:
            path = path.replace(placeholder, path_segment(name, rest.pop(name)))
    for name in endpoint.path_parameters:  # NESTful v1 path parameters follow the endpoint: /news/v1/US
        if name in rest:
            path = path.rstrip("/") + "/" + path_segment(name, rest.pop(name))
    return path, rest


class UnsafePathArgument(ValueError):
    """A path argument that would change which resource the request names (refused, not sent)."""


def path_segment(name: str, value: Any) -> str:
    """A path argument as one percent-encoded segment: every character but ASCII letters, digits,
    `-`, `_` and `~` is encoded (`/` and `.` included), so no value adds a segment or a dot segment;
    an empty value, `.` and `..` are refused outright (a server that decodes before it resolves
    would still climb, and an empty segment names the collection instead of the item)."""
    text = _query_text(value)
    if text in ("", ".", ".."):
        raise UnsafePathArgument(f"path parameter {name}={text!r} would change the request's path: not sent")
    return urllib.parse.quote(text, safe="").replace(".", "%2E")


_SEPARATORS = {"csv": ",", "ssv": " ", "tsv": "\t", "pipes": "|"}


def _query_text(value: Any, style: str = "csv") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)) and all(not isinstance(item, (dict, list)) for item in value):
        return _SEPARATORS.get(style, ",").join(_query_text(item) for item in value)
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


class _NotJson(ValueError):
    pass


def decode_body(body: bytes, content_type: str, strict: bool) -> Any:
    """The JSON value of a body. `strict` (tools whose description promises JSON): an empty body,
    an HTML page or other text raises `_NotJson` with what it was; otherwise text is kept as text."""
    if body[:2] == b"\x1f\x8b":  # gzip bytes the server did not label with Content-Encoding
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as exc:
            raise _NotJson(f"a gzip body that does not decompress ({exc})") from None
    if not body.strip():
        if strict:
            raise _NotJson("an empty body")
        return None
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        if not strict:
            return text
        kind = "an HTML page" if "html" in content_type.lower() or text.lstrip()[:1] == "<" else f"a non-JSON body ({content_type or 'no content type'})"
        raise _NotJson(f"{kind}: {text.strip()[:80]!r}") from None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` as seconds to wait (delta-seconds or an HTTP date), capped; None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, min(when - (now if now is not None else time.time()), MAX_RETRY_AFTER_S))


class _TooLarge(Exception):
    pass


class HttpEnvironment(Environment):
    def __init__(
        self,
        tools: Iterable["Tool"],
        *,
        base_url: str | None = None,
        base_urls: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        headers: Mapping[str, str] | None = None,
        auth_env: str | None = None,
        auth_header: str = "Authorization",
        auth_scheme: str = "Bearer",
        auth_in: str = "header",
        record_to: RecordedStore | None = None,
        record_path: str | Path | None = None,
        parse_output: bool = True,
        retries: int = 3,
        backoff_s: float = 0.2,
        max_per_host: int = 8,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.base_url = base_url
        self.base_urls = dict(base_urls or {})
        self.parse_output = parse_output
        self.timeout = timeout
        self.headers = dict(headers or {})
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_per_host = max_per_host
        self.max_response_bytes = max_response_bytes
        self._secrets = SecretRedactor()
        self._auth = self._auth_header(auth_env, auth_header, auth_scheme)
        self._auth_in = auth_in
        if self._auth is not None:
            self._secrets.add(str(auth_env), os.environ.get(str(auth_env)))
            self._secrets.add(str(auth_env), self._auth[1])
        for header, value in self.headers.items():
            if _SENSITIVE_HEADER.search(header):
                self._secrets.add(header, value)
        self._limits: dict[str, threading.Semaphore] = {}
        self._limits_lock = threading.Lock()
        self._client = httpx.Client(timeout=timeout, follow_redirects=False,
                                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
        self.record_path = Path(record_path) if record_path else None
        self.journal: RecordingJournal | None = None
        if self.record_path is not None:
            self.store, self.journal = RecordingJournal.open(self.record_path, self.tools.values())
        else:
            self.store = record_to
        self._scrub_store()
        self.sent = 0  # requests that went on the wire (retries included)
        self.from_store = 0  # record mode: calls answered from what an earlier run recorded

    @staticmethod
    def _auth_header(variable: str | None, header: str, scheme: str) -> tuple[str, str] | None:
        if not variable:
            return None
        secret = os.environ.get(variable)
        if not secret:
            from fcbench.errors import UserError

            raise UserError(f"the environment variable {variable} (auth_env) is not set")
        return header, f"{scheme} {secret}" if scheme else secret

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        tool = self.tools.get(name)
        if tool is None:
            return CallOutcome.failure(ErrorReason.UNKNOWN_TOOL, f"no tool named {name!r} in the catalog")
        if self.journal is not None:
            known = self.store.lookup(name, arguments)
            if known is not None:  # a re-run of a recording sends only what is missing
                self.from_store += 1
                return CallOutcome.success(known.response)
        try:
            request = build_request(tool, arguments, self.base_url, self.base_urls, self.headers)
        except UnsafePathArgument as exc:
            return CallOutcome.failure(ErrorReason.UNSAFE_ARGUMENT, f"{name}: {exc}")
        except ValueError as exc:
            return CallOutcome.failure(ErrorReason.UNKNOWN_TOOL, str(exc))
        meta = http_meta(tool)
        self._note_security_values(meta, request)
        strict = isinstance(meta.get("openapi"), dict)  # the description promises JSON
        host = str(meta.get("host") or "")
        outcome = self._send(name, request, host if _is_rapidapi_host(host) else None, strict)
        if outcome.ok and self.parse_output:
            outcome = _parsed_output(name, tool, outcome)
        outcome = self._redacted(outcome)  # before it is recorded, returned, logged or written anywhere
        if outcome.ok and self.store is not None:
            if self.store.add(name, arguments, outcome.response) and self.journal is not None:
                self.journal.append(name, arguments, outcome.response)
        return outcome

    # ---- secrets
    def _scrub_store(self) -> None:
        """A store recorded before secrets were redacted (or with an echo this run now knows to be a
        secret) is cleaned in memory; a recording run writes it back clean when it closes."""
        if self.store is None or not self._secrets:
            return
        for key, call in list(self.store.calls.items()):
            clean = self._secrets.redact(call.response)
            if clean != call.response:
                self.store.calls[key] = replace(call, response=clean)

    def _note_security_values(self, meta: Mapping[str, Any], request: HttpRequest) -> None:
        """A value sent in a slot the description declares as a security scheme is a secret."""
        openapi = meta.get("openapi")
        slots = openapi.get("security") if isinstance(openapi, dict) else None
        if not slots:
            return
        headers = {name.lower(): value for name, value in request.headers.items()}
        params = dict(request.params)
        cookies = dict(part.strip().split("=", 1) for part in headers.get("cookie", "").split(";") if "=" in part)
        for slot in slots:
            where, slot_name = slot.get("in"), str(slot.get("name", ""))
            value = {"header": headers.get(slot_name.lower()), "query": params.get(slot_name),
                     "cookie": cookies.get(slot_name)}.get(where)
            self._secrets.add(slot_name, value)

    def _redacted(self, outcome: CallOutcome) -> CallOutcome:
        if not self._secrets:
            return outcome
        return outcome._replace(response=self._secrets.redact(outcome.response),
                                error=None if outcome.error is None else self._secrets.text(outcome.error))

    # ---- sending
    def _limit(self, host: str) -> threading.Semaphore:
        with self._limits_lock:
            if host not in self._limits:
                self._limits[host] = threading.Semaphore(self.max_per_host)
            return self._limits[host]

    def _send(self, name: str, request: HttpRequest, rapidapi_host: str | None, strict: bool) -> CallOutcome:
        where = f"{name} ({request.describe()})"
        headers = dict(request.headers)
        params = list(request.params)
        if self._auth is not None:
            slot, value = self._auth
            if self._auth_in == "query":
                params.append((slot, value))
            elif self._auth_in == "cookie":
                headers["Cookie"] = "; ".join(filter(None, [headers.get("Cookie"), f"{slot}={value}"]))
            else:
                headers[slot] = value
        if rapidapi_host:  # the key only for a catalog host that is RapidAPI itself or a subdomain of it
            headers["X-RapidAPI-Host"] = rapidapi_host
            key = os.environ.get(RAPIDAPI_KEY_ENV_VAR)
            if key:
                headers["X-RapidAPI-Key"] = key
                self._secrets.add(RAPIDAPI_KEY_ENV_VAR, key)
        outcome = CallOutcome.failure(ErrorReason.NETWORK, f"{where}: not sent")
        for attempt in range(self.retries + 1):
            wait: float | None = None
            try:
                with self._limit(request.host):
                    self.sent += 1
                    status, content_type, body, retry_after = self._exchange(request, headers, params)
            except _TooLarge:
                return CallOutcome.failure(ErrorReason.UNEXPECTED_RESPONSE,
                                           f"{where}: response larger than {self.max_response_bytes} bytes: not kept")
            except httpx.TimeoutException:
                outcome = CallOutcome.failure(ErrorReason.TIMEOUT, f"{where}: no answer within {self.timeout:g} s")
            except httpx.HTTPError as exc:
                outcome = CallOutcome.failure(ErrorReason.NETWORK, f"{where}: {type(exc).__name__}: {exc}")
            else:
                if status < 400:
                    if status == 204:
                        return CallOutcome.success(None)
                    try:
                        return CallOutcome.success(decode_body(body, content_type, strict))
                    except _NotJson as exc:
                        return CallOutcome.failure(ErrorReason.UNEXPECTED_RESPONSE, f"{where}: HTTP {status} with {exc}")
                try:
                    error_body = decode_body(body, content_type, False)
                except _NotJson:
                    error_body = None
                outcome = CallOutcome.failure(ErrorReason.HTTP_STATUS, f"{where}: HTTP {status}", error_body)
                if status not in RETRY_STATUSES:
                    return outcome
                wait = retry_after_seconds(retry_after)
            if attempt < self.retries:
                time.sleep(wait if wait is not None else self.backoff_s * (2 ** attempt))
        return outcome

    def _exchange(self, request: HttpRequest, headers: Mapping[str, str],
                  params: Sequence[tuple[str, str]]) -> tuple[int, str, bytes, str | None]:
        kwargs: dict[str, Any] = {"params": list(params), "headers": headers}
        if request.form is not None:
            kwargs["data"] = dict(request.form)
        elif request.has_json_body:
            kwargs["content"] = json.dumps(request.json_body, ensure_ascii=False).encode()
            kwargs["headers"] = {**headers, "Content-Type": "application/json"}
        with self._client.stream(request.method, request.url, **kwargs) as response:
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > self.max_response_bytes:
                raise _TooLarge()
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise _TooLarge()
                chunks.append(chunk)
            return (response.status_code, response.headers.get("content-type", ""), b"".join(chunks),
                    response.headers.get("retry-after"))

    # ---- concurrency: the calls of a step, and paths, run side by side (per-host limit applies)
    def call_step(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        if len(calls) <= 1:
            return [self.call(name, arguments) for name, arguments in calls]
        with ThreadPoolExecutor(max_workers=min(len(calls), self.max_per_host)) as pool:
            return list(pool.map(lambda call: self.call(*call), calls))

    def iter_run_paths(self, paths: Sequence[Sequence[Sequence[PlannedCall]]]) -> Iterator[tuple[int, PathRun]]:
        if len(paths) <= 1:
            yield from super().iter_run_paths(paths)
            return
        with ThreadPoolExecutor(max_workers=self.max_per_host) as pool:
            yield from enumerate(pool.map(lambda path: run_path(path, self.call_step), paths))

    def close(self) -> None:
        self._client.close()
        if self.journal is not None:
            self.journal.close()  # folds the journal into the store file, atomically
        elif self.store is not None and self.record_path is not None:
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
