"""The http environment on a misbehaving server: HTML, empty and gzip bodies, 500s (retried, honouring
Retry-After), a timeout, a 50 MB answer. Each is one clear failure naming the call; the run goes on
and what was recorded before is kept. The auth token goes in a header and nowhere else."""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fcbench.environments import ErrorReason
from fcbench.environments.http_env import HttpEnvironment, retry_after_seconds
from fcbench.environments.recorded import load_store_and_journal
from fcbench.sample import Tool

TOKEN = "h12-failures-token-93f1"
SEEN: dict[str, list] = {"auth": [], "flaky": 0}


class Misbehaving(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json", extra: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): expected here
            pass

    def do_GET(self) -> None:
        SEEN["auth"].append(self.headers.get("Authorization"))
        path = self.path.split("?")[0]
        if path == "/ok":
            self._send(200, json.dumps({"data": [{"id": self.path}]}).encode())
        elif path == "/html":
            self._send(200, b"<html><body>Service unavailable</body></html>", "text/html")
        elif path == "/empty":
            self._send(200, b"")
        elif path == "/gzip":
            self._send(200, gzip.compress(b'{"zipped": true}'))
        elif path == "/broken-gzip":
            self._send(200, b"\x1f\x8bnot really gzip")
        elif path == "/boom":
            self._send(500, b'{"error": "internal"}')
        elif path == "/flaky":
            SEEN["flaky"] += 1
            if SEEN["flaky"] < 3:
                self._send(429, b'{"error": "slow down"}', extra={"Retry-After": "0"})
            else:
                self._send(200, b'{"data": "third time"}')
        elif path == "/slow":
            time.sleep(1.0)
            self._send(200, b"{}")
        elif path == "/huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()  # no Content-Length: the cap must stop the stream itself
            chunk = b" " * (1024 * 1024)
            try:
                for _ in range(50):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True


def tool(name: str) -> Tool:
    return Tool(name=name, parameters={"type": "object", "properties": {"q": {"type": "string"}}},
                meta={"method": "GET", "endpoint": f"/{name.replace('_', '-')}", "host": "api.example.test",
                      "openapi": {"source": "stub", "locations": {"q": "query"}, "server": "https://api.example.test"}})


TOOLS = [tool(name) for name in ("ok", "html", "empty", "gzip", "broken_gzip", "boom", "flaky", "slow", "huge")]


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_every_bad_answer_is_one_clear_failure_and_the_recording_survives(server, tmp_path, monkeypatch):
    monkeypatch.setenv("STUB_TOKEN", TOKEN)
    store = tmp_path / "recorded.json"
    with HttpEnvironment(TOOLS, base_url=server, record_path=store, auth_env="STUB_TOKEN", timeout=0.3,
                         retries=2, backoff_s=0.01, max_response_bytes=5 * 1024 * 1024) as env:
        assert env.call("ok", {"q": "first"}).ok
        outcomes = {name: env.call(name, {"q": "x"}) for name in ("html", "empty", "broken_gzip", "boom", "slow", "huge")}
        gz = env.call("gzip", {"q": "x"})
        flaky = env.call("flaky", {})
        assert env.call("ok", {"q": "after"}).ok  # the run goes on
    assert gz.ok and gz.response == {"zipped": True}
    assert flaky.ok and flaky.response == {"data": "third time"} and SEEN["flaky"] == 3  # 429 twice, retried
    html = outcomes["html"]
    assert html.reason is ErrorReason.UNEXPECTED_RESPONSE and "html (GET http://127.0.0.1" in html.error
    assert "an HTML page" in html.error
    assert "an empty body" in outcomes["empty"].error
    assert "gzip body that does not decompress" in outcomes["broken_gzip"].error
    boom = outcomes["boom"]
    assert boom.reason is ErrorReason.HTTP_STATUS and "HTTP 500" in boom.error and boom.response == {"error": "internal"}
    assert outcomes["slow"].reason is ErrorReason.TIMEOUT and "slow (GET" in outcomes["slow"].error
    assert outcomes["huge"].reason is ErrorReason.UNEXPECTED_RESPONSE and "larger than 5242880 bytes" in outcomes["huge"].error
    recorded = load_store_and_journal(store, TOOLS)
    assert {call.name for call in recorded.calls.values()} == {"ok", "gzip", "flaky"} and len(recorded) == 4
    assert set(SEEN["auth"]) == {f"Bearer {TOKEN}"}  # the token went in the header of every request...
    assert TOKEN not in store.read_text()  # ...and into no file
    assert all(TOKEN not in (o.error or "") for o in outcomes.values())


def test_a_missing_auth_variable_is_a_clear_error(monkeypatch):
    from fcbench.errors import UserError

    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    with pytest.raises(UserError, match="NOT_SET_ANYWHERE"):
        HttpEnvironment(TOOLS, auth_env="NOT_SET_ANYWHERE")


def test_retry_after_in_seconds_or_as_a_date_and_capped():
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("3600") == 30.0
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:05 GMT", now=1445412480.0) == 5.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_arguments_go_where_the_description_says():
    from fcbench.environments.http_env import build_request

    tool = Tool(name="book", parameters={"type": "object", "properties": {}}, meta={
        "method": "POST", "endpoint": "/orders/{order-id}/items", "host": "api.example.test",
        "openapi": {"source": "shop", "server": "https://api.example.test/v2", "produces": ["application/vnd.x+json"],
                    "locations": {"order-id": "path", "ids": "query", "tags": "query", "X-Trace": "header",
                                  "session": "cookie", "note": "body", "body_note": "body", "count": "body"},
                    "wire_names": {"body_note": "note2"}, "array_styles": {"ids": "csv", "tags": "multi"}}})
    request = build_request(tool, {"order-id": "a/b", "ids": ["1", "2"], "tags": ["x", "y"], "X-Trace": 7,
                                   "session": "s1", "note": "hi", "body_note": "there", "count": 2},
                            base_urls={"shop": "http://127.0.0.1:1234"})
    assert request.url == "http://127.0.0.1:1234/orders/a%2Fb/items"  # the base URL replaces server + base path
    assert request.params == (("ids", "1,2"), ("tags", "x"), ("tags", "y"))
    assert request.headers["X-Trace"] == "7" and request.headers["Cookie"] == "session=s1"
    assert request.headers["Accept"] == "application/vnd.x+json"
    assert request.json_body == {"note": "hi", "note2": "there", "count": 2} and request.has_json_body
    whole = Tool(name="raw", meta={"method": "PUT", "endpoint": "/raw", "openapi": {
        "source": "s", "server": "https://h.test", "locations": {"body": "body_whole", "token": "form"}}})
    assert build_request(whole, {"body": [1, 2]}).json_body == [1, 2]
    form = build_request(whole, {"token": "t"})
    assert form.form == {"token": "t"} and not form.has_json_body
    assert form.url == "https://h.test/raw" and "Authorization" not in form.headers  # auth is added only when sent
