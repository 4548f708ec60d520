"""The webhook receiver process against malformed and hostile requests, over raw sockets.

The real receiver (`build-dataset studio webhook`, a background process) is started against a
Label Studio URL nobody listens on: the HTTP side is what is tested here (the checks against a real
server are in test_ls_webhook.py). It must check the secret before reading any body, read at most
MAX_BODY_BYTES and only with a plain Content-Length, answer every malformed request with a 4xx
(never a 5xx, never silence), keep a traceback out of its log, and tell nothing on /health about
the pipeline or its projects.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from annotate.webhook import MAX_BODY_BYTES, SECRET_HEADER, WEBHOOK_PATH, body_length, log_file, read_receiver_state
from annotate.studio.server import StudioConfig
from fcbench.cli import app
from fcbench.runtime.localhost import free_port
from ls_helpers import write_pipeline

DEADLINE_S = 60.0  # an answer is waited for this long (the machine may be loaded); no duration is asserted


@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    """The receiver process of a pipeline, its address and secret; stopped after the module."""
    folder = tmp_path_factory.mktemp("hook")
    write_pipeline(folder, name="hook")
    studio = folder / "studio"
    studio.mkdir()
    runner = CliRunner()
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("FCBENCH_LS_URL", f"http://127.0.0.1:{free_port()}")  # no server: registering fails quietly
    monkeypatch.setenv("FCBENCH_LS_TOKEN", "not-a-real-token")
    command = ["studio", "webhook", "hook", "--file", str(folder / "pipelines.yaml"), "--dir", str(studio)]
    started = runner.invoke(app, [*command, "--json"])
    assert started.exit_code == 0, started.output
    state = read_receiver_state(StudioConfig(root=studio))
    url = state["url"]
    port = int(url.split(":")[2].split("/")[0])
    try:
        yield {"port": port, "secret": state["secret"], "studio": StudioConfig(root=studio), "pid": state["pid"]}
    finally:
        runner.invoke(app, [*command, "--stop"])
        monkeypatch.undo()


def _exchange(port: int, head: bytes, body: bytes = b"", close_write: bool = False) -> tuple[int, dict]:
    """Send raw bytes, then read the answer (status, JSON body) while the connection stays open
    for writing: an answer that waited for more body than was sent never comes."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as connection:
        connection.sendall(head + body)
        if close_write:
            connection.shutdown(socket.SHUT_WR)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer) < _expected_length(answer):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    status = int(status_line.split()[1])
    payload = rest.partition(b"\r\n\r\n")[2]
    try:
        return status, json.loads(payload) if payload else {}
    except ValueError:
        return status, {"raw": payload.decode("utf-8", "replace")}


def _expected_length(answer: bytes) -> int:
    head, _, _ = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(head) + 4 + int(line.split(b":", 1)[1])
    return 0


def _post(secret: str | None, length: str | None, path: str = WEBHOOK_PATH, extra: str = "") -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    if secret is not None:
        lines.append(f"{SECRET_HEADER}: {secret}")
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines += [line for line in extra.split("\n") if line]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


EVENT = json.dumps({"action": "ANNOTATION_CREATED", "annotation": {"id": 7}, "task": {"id": 3},
                    "project": {"id": 99}}).encode()


def test_the_secret_is_checked_before_any_body_is_read(receiver):
    # a huge body announced and never sent: without the secret the answer comes at once
    status, answer = _exchange(receiver["port"], _post(None, "1000000000"))
    assert (status, answer) == (403, {"error": "wrong or missing secret"})
    status, _ = _exchange(receiver["port"], _post("wrong", "-1"))
    assert status == 403


@pytest.mark.parametrize("length, extra, status", [
    ("-1", "", 400),  # read everything up to EOF: the 300 MB growth of issue 23
    ("abc", "", 400), ("+12", "", 400), ("1e3", "", 400), ("12 34", "", 400), ("١٢", "", 400),
    (None, "", 411),
    ("5", "Content-Length: 5", 400),  # given twice
    (None, "Transfer-Encoding: chunked", 411),
    (str(MAX_BODY_BYTES + 1), "", 413), ("9" * 40, "", 413),
])
def test_a_malformed_content_length_is_a_4xx_without_reading_a_body(receiver, length, extra, status):
    answered, answer = _exchange(receiver["port"], _post(receiver["secret"], length, extra=extra))
    assert answered == status and answer.get("error"), answer


def test_bodies_that_are_not_an_event_are_refused(receiver):
    secret = receiver["secret"]
    assert _exchange(receiver["port"], _post(secret, "7"), b"{nope}!")[0] == 400  # not JSON
    assert _exchange(receiver["port"], _post(secret, "2"), b"[]")[0] == 400  # not an object
    cut = _exchange(receiver["port"], _post(secret, "100"), b'{"action": ', close_write=True)
    assert cut[0] == 400 and "ended after 11 of 100 bytes" in cut[1]["error"]
    # a well-formed event of a project the receiver does not watch: taken, and ignored
    assert _exchange(receiver["port"], _post(secret, str(len(EVENT))), EVENT) == (
        200, {"queued": False, "ignored": "not a project of this pipeline"})


@pytest.mark.parametrize("request_bytes, status", [
    (b"PUT /fcbench-webhook HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
    (b"DELETE /health HTTP/1.1\r\n\r\n", 405),
    (b"BREW /fcbench-webhook HTTP/1.1\r\n\r\n", 405),  # http.server says 501 to a method it does not know
    (b"POST /elsewhere HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 404),
    (b"GET /fcbench-webhook HTTP/1.1\r\n\r\n", 404),
    (b"GET /health HTTP/9.9\r\n\r\n", 400),  # http.server says 505
    (b"NONSENSE\r\n\r\n", 400),
    (b"GET /health HTTP/1.1\r\n" + b"X-Long: " + b"a" * 70000 + b"\r\n\r\n", 431),
])
def test_wrong_methods_paths_and_request_lines_are_4xx(receiver, request_bytes, status):
    assert _exchange(receiver["port"], request_bytes)[0] == status


def test_health_says_nothing_about_projects_and_the_log_holds_no_traceback(receiver):
    status, health = _exchange(receiver["port"], b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200 and health["ok"] is True and "idle" in health
    assert not {"projects", "pipeline", "url"} & set(health)
    assert "hook" not in json.dumps(health)  # not even the pipeline's name
    assert health["refused"] > 0  # the requests above were counted as refused
    # a client that announces a body and then stalls is dropped, not waited for forever; the
    # receiver goes on answering the others meanwhile
    with socket.create_connection(("127.0.0.1", receiver["port"]), timeout=DEADLINE_S) as stalled:
        stalled.sendall(_post(receiver["secret"], "50"))
        assert _exchange(receiver["port"], b"GET /health HTTP/1.1\r\n\r\n")[0] == 200
    log = Path(log_file(receiver["studio"])).read_text()
    assert "Traceback" not in log and "refused" in log


def test_body_length_is_decided_from_the_headers_alone():
    from email.message import Message

    def headers(**values: str) -> Message:
        message = Message()
        for name, value in values.items():
            message[name.replace("_", "-")] = value
        return message

    assert body_length(headers(Content_Length="12")) == (12, None, "")
    assert body_length(headers(Content_Length=" 0 ")) == (0, None, "")
    assert body_length(headers(Content_Length="-1"))[1] == 400
    assert body_length(headers())[1] == 411
    assert body_length(headers(Content_Length="11"), limit=10)[1] == 413
    assert body_length(headers(Transfer_Encoding="chunked", Content_Length="3"))[1] == 411


def _wait(probe, timeout: float = DEADLINE_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return True
        time.sleep(0.1)
    return False
