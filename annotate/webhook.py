"""The webhook receiver: every submitted or updated annotation checked within seconds, with the
same checks as `pull`, and the result shown on the task (feedback, Data Manager columns), with a
task that needs fixing sent back to the queue of the annotator who submitted it.

How it runs. `build-dataset studio webhook PIPELINE` (or `studio start --webhook PIPELINE`) starts
one receiver process per studio, on a free loopback port; `<studio dir>/webhook.json` (0600) holds
its pid, URL, pipeline and the shared secret, `<studio dir>/webhook.log` its output, and `studio
stop` stops it with the server. The receiver registers a Label Studio webhook (ANNOTATION_CREATED,
ANNOTATION_UPDATED, with payload and the secret as a header) on each of the pipeline's projects,
and looks again every few seconds for projects pushed since. Label Studio refuses loopback webhook
URLs unless SSRF_PROTECTION_ENABLED=false, which `annotate.studio.server` sets for the server it starts.

What it accepts. Only POST on the webhook path with the secret header, checked before a byte of
the body is read; then a body of one plain Content-Length of at most MAX_BODY_BYTES (64 MiB).
Anything else is answered with a 4xx and one line in the log, never a traceback: a wrong path
(404) or method (405), no or a wrong secret (403), no length or a chunked body (411), a negative,
non-numeric or repeated length (400), a larger one (413), a body cut short (400) or stalled
(408 after REQUEST_TIMEOUT_S), JSON that names no annotation (400), a request line http.server
cannot parse (400, 431). `/health` answers whether it is alive and idle, with counters, and
nothing about the pipeline, its projects or the server.

Why a queue. Without Redis, Label Studio sends a webhook inside the annotator's own request, with
a 1 s timeout, and never retries. So the handler only parses the body and queues the task id (a
task already waiting is not queued twice), and answers at once; one worker thread does the checks.

Why results cannot go to the wrong annotation. The payload only says which task to look at: the
worker reads the task and its annotations back from the server, checks each annotation whose key
(id + hash of its content, `live_check.annotation_key`) has no stored result yet, and before
writing reads the annotations again: if one changed meanwhile, nothing is written and the task is
checked again. A webhook delivered twice finds every key already checked and writes nothing. A
receiver that is down or slow loses nothing: `pull` reads every annotation anyway and decides
(the live result is only a preview of pull's verdict, stale drafts refused as pull refuses them),
and a receiver that starts queues the tasks with more annotations than checks.

Sending a task back to its annotator (Label Studio's open-source queue has no "rework" state,
annotate/studio/rework.py): the annotator's last annotation becomes a postponed draft of theirs, so
the task comes back at the end of their "Label All Tasks" queue and opens, from the queue or the
task list, on their own work with the checks' note above it; an empty skip by them, listed after
their annotation, keeps it from everyone else. Once their latest annotation passes, the overlap is
restored and what was added is deleted.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from annotate.studio.client import Connection, open_client
from annotate.studio.rework import (REWORK_MARKERS_FIELD, AsUser, annotator_sessions, real_annotations, server_task,
                                   sync_rework)
from annotate.exchange.push import find_project, list_tasks
from annotate.review.live_check import (ACTIONS, LIVE_CHECKS_FIELD, BadEvent, LiveCheck, annotation_key,
                                 check_from_outcome, parse_event, stored_checks, task_view)
from annotate.exchange.pull import junior_builder, process_tasks, senior_builder
from annotate.exchange.shared import (LazyEnvironment, annotation_catalog, draft_fingerprints, drafts_in_tasks,
                              pipeline_environment, refuse_stale_drafts)
from annotate.studio.server import StudioConfig, StudioError
from annotate.tasks.single import JUNIOR_KIND, STAGE2_KIND, ToolCatalog
from annotate.studio.team import ASSIGNED_FIELD, ASSIGNED_IDS_FIELD, OVERLAP_FIELD
from fcbench.config import PipelineConfig
from fcbench.stage import DRAFTS
from fcbench.runtime.localhost import LOOPBACK, free_port, port_is_free, read_private_json, write_private_json

WEBHOOK_PATH = "/fcbench-webhook"
SECRET_HEADER = "X-Fcbench-Webhook-Secret"
# The largest body read: Label Studio's payload carries the task's data (the draft as HTML and
# JSON, responses folded up to 2 M characters), a few MB for a ComplexFuncBench-sized task. A
# larger one is answered 413 unread (pull still checks that annotation).
MAX_BODY_BYTES = 64 * 1024 * 1024
REQUEST_TIMEOUT_S = 30.0  # a client that stops sending mid-request is dropped, not waited for
REGISTER_EVERY_S = 5.0  # how often the receiver looks for newly pushed projects
RETRY_DELAYS_S = (1.0, 3.0, 10.0)  # a check that failed on a server error is tried again this late
START_TIMEOUT_S = 60.0
KINDS = {STAGE2_KIND: (senior_builder, "stage2"), JUNIOR_KIND: (junior_builder, "stage3")}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------------ the checker
@dataclass
class CheckRound:
    """What one look at a task did (for the log, the /health counters and the tests)."""

    task_id: int
    checked: int = 0  # annotations checked now
    reused: int = 0  # annotations whose current content already had a result
    written: bool = False  # the task data changed
    changed_meanwhile: bool = False  # an annotation changed during the check: nothing written, try again
    requeued_for: list[int] = field(default_factory=list)
    released_for: list[int] = field(default_factory=list)
    skipped: str = ""  # why the task was not checked (not an fcbench task, gone)


class LiveChecker:
    """Checks one task's annotations against the server and writes the result back."""

    def __init__(self, pipeline: PipelineConfig, connection: Connection, client: Any = None,
                 as_user: AsUser | None = None, studio: StudioConfig | None = None) -> None:
        self.pipeline = pipeline
        self.connection = connection
        self.client = client or open_client(connection)
        # who a sent-back task's draft can be made as (annotate.studio.rework)
        self.as_user = as_user or annotator_sessions(connection, self.client, studio)
        self.catalog: ToolCatalog = annotation_catalog(pipeline)
        self._users: dict[int, str] = {}
        # With a tool catalog the environment's tools do not depend on the task: one environment
        # serves every check (as one serves a whole pull), instead of starting workers per check.
        self._shared: LazyEnvironment | None = None
        if pipeline.tools_path is not None:
            self._shared = pipeline_environment(pipeline, lambda: [])
        self._drafts: tuple[tuple[int, int], dict[str, str] | None] | None = None  # (file stat, fingerprints)

    def close(self) -> None:
        if self._shared is not None:
            self._shared.close()

    # -- reading
    def annotator(self, user_id: Any) -> str:
        if isinstance(user_id, dict):
            return str(user_id.get("email") or user_id.get("id"))
        if isinstance(user_id, int) and user_id not in self._users:
            self._users = {int(user.id): user.email or user.username or f"user {user.id}"
                           for user in self.client.users.list()}
        return self._users.get(user_id, f"user {user_id}") if user_id is not None else "unknown"

    # -- one task
    def check_task(self, task_id: int) -> CheckRound:
        result = CheckRound(task_id)
        task = server_task(self.client, task_id)
        if task is None:
            result.skipped = "no such task"
            return result
        data: dict[str, Any] = task["data"]
        if data.get("kind") not in KINDS:
            result.skipped = "not an fcbench task"
            return result
        annotations = real_annotations(task)
        stored = stored_checks(data)
        checks: list[LiveCheck] = []
        for annotation in annotations:
            key = annotation_key(annotation)
            if key in stored:
                checks.append(stored[key])
                result.reused += 1
            else:
                checks.append(self._check(task, annotation))
                result.checked += 1
        # read again before writing: a result must never land on content it was not made for
        again = server_task(self.client, task_id)
        now_keys = {annotation_key(item) for item in real_annotations(again)} if again else set()
        if again is None or now_keys != {check.key for check in checks}:
            result.changed_meanwhile = True
            return result
        view = task_view(checks)
        current: dict[str, Any] = again["data"]
        new_data = {**current, **view.data_fields()}
        change = sync_rework(self.client, again, view.rework_annotations, self.as_user)
        new_data[REWORK_MARKERS_FIELD] = change.markers
        result.requeued_for, result.released_for = change.requeued_for + change.marked_for, change.released_for
        if new_data != current:
            self.client.tasks.update(id=str(task_id), data=new_data)
            result.written = True
        return result

    def _check(self, task: Mapping[str, Any], annotation: Mapping[str, Any]) -> LiveCheck:
        """The annotation alone through pull's own `process_tasks`: schema, references and
        re-execution in the pipeline's environment, exactly as `pull` checks it."""
        data = {key: value for key, value in task["data"].items()
                if key not in (ASSIGNED_FIELD, ASSIGNED_IDS_FIELD, OVERLAP_FIELD)}  # this annotation, not the team's
        builder, stage = KINDS[data["kind"]]
        alone = {"id": task["id"], "project": task.get("project"), "data": data, "annotations": [dict(annotation)]}
        annotator = self.annotator(annotation.get("completed_by"))  # a user object, or an id in older servers
        users = {annotation["completed_by"]: annotator} if isinstance(annotation.get("completed_by"), int) else {}
        environment = self._shared or pipeline_environment(self.pipeline,
                                                            lambda: drafts_in_tasks([alone], self.catalog))
        try:
            outcomes = process_tasks([alone], data["kind"], builder, environment, users, stage, task.get("project"),
                                     self.catalog)
        finally:
            if environment is not self._shared:
                environment.close()
        if data["kind"] == STAGE2_KIND:  # as stage2 pull does (without --allow-stale)
            refuse_stale_drafts(outcomes, self.drafts_file, self._current_drafts(), self.catalog)
        return check_from_outcome(outcomes[0], annotation, annotator, _now())

    @property
    def drafts_file(self) -> Path:
        return self.pipeline.build_dir / DRAFTS

    def _current_drafts(self) -> dict[str, str] | None:
        """The current drafts' fingerprints, read again only when the file changed."""
        try:
            stat = self.drafts_file.stat()
        except FileNotFoundError:
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        if self._drafts is None or self._drafts[0] != key:
            self._drafts = (key, draft_fingerprints(self.drafts_file))
        return self._drafts[1]


# ----------------------------------------------------------------------------- registration
def register_webhook(client: Any, project_id: int, url: str, secret: str) -> str:
    """Make the project's fcbench webhook point at `url` (created, updated or left): returns what
    was done. Webhooks of an earlier receiver (another port) are moved, not duplicated."""
    ours = [hook for hook in client.webhooks.list(project=project_id)
            if str(getattr(hook, "url", "")).endswith(WEBHOOK_PATH)]
    settings = {"url": url, "project": project_id, "send_payload": True, "send_for_all_actions": False,
                "actions": list(ACTIONS), "headers": {SECRET_HEADER: secret}, "is_active": True}
    if not ours:
        client.webhooks.create(**settings)
        return "created"
    first, extra = ours[0], ours[1:]
    for hook in extra:
        client.webhooks.delete(id=hook.id)
    same = (first.url == url and bool(first.is_active) and set(first.actions or []) == set(ACTIONS)
            and (first.headers or {}).get(SECRET_HEADER) == secret and first.send_payload)
    if same:
        return "kept"
    client.webhooks.update(id=first.id, **{key: value for key, value in settings.items() if key != "project"})
    return "updated"


def project_ids(client: Any, titles: Sequence[str]) -> dict[str, int]:
    found = {}
    for title in titles:
        project = find_project(client, title)
        if project is not None:
            found[title] = int(project.id)
    return found


# --------------------------------------------------------------------------------- the receiver
class _QuietServer(ThreadingHTTPServer):
    """A request that breaks the handler (a client gone mid-answer, a bug) is one line in the
    log, never a traceback."""

    log: Callable[[str], None] = staticmethod(lambda line: None)  # type: ignore[assignment]

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        self.log(f"request from {client_address[0] if client_address else '?'} failed: "
                 f"{type(error).__name__}: {str(error)[:200]}")


class Receiver:
    """The HTTP endpoint and the worker behind it (both in this process)."""

    def __init__(self, checker: LiveChecker, secret: str, titles: Sequence[str], port: int = 0,
                 log: Callable[[str], None] | None = None) -> None:
        self.checker = checker
        self.secret = secret
        self.titles = list(titles)
        self.log = log or (lambda line: print(line, flush=True))
        self.jobs: "queue.Queue[tuple[int, int]]" = queue.Queue()
        self.waiting: set[int] = set()  # task ids queued and not started: one job per task
        self.lock = threading.Lock()
        self.counters = {"received": 0, "queued": 0, "duplicates": 0, "refused": 0, "rounds": 0, "checked": 0,
                         "written": 0, "retried": 0, "failed": 0}
        self.registered: dict[int, str] = {}
        self.stopping = threading.Event()
        self.server = _QuietServer((LOOPBACK, port), self._handler_class())
        self.server.daemon_threads = True
        self.server.log = self.log
        self.url = f"http://{LOOPBACK}:{self.server.server_address[1]}{WEBHOOK_PATH}"
        self._threads: list[threading.Thread] = []

    # -- receiving (must answer within Label Studio's 1 s)
    def authorized(self, secret: str | None) -> bool:
        """Whether the request carries the secret: checked before its body is read."""
        with self.lock:
            self.counters["received"] += 1
        if secret and secrets.compare_digest(secret.encode("utf-8", "surrogateescape"),
                                             self.secret.encode("utf-8")):
            return True
        self.refuse()
        return False

    def refuse(self) -> None:
        with self.lock:
            self.counters["refused"] += 1

    def receive(self, body: bytes, secret: str | None) -> tuple[int, dict[str, Any]]:
        if not self.authorized(secret):
            return 403, {"error": "wrong or missing secret"}
        return self.receive_authorized(body)

    def receive_authorized(self, body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            event = parse_event(body)
        except BadEvent as exc:
            self.refuse()
            return 400, {"error": str(exc)}
        if event.project_id is not None and event.project_id not in self.registered:
            return 200, {"queued": False, "ignored": "not a project of this pipeline"}
        return 200, {"queued": self.enqueue(event.task_id)}

    def enqueue(self, task_id: int, attempt: int = 0) -> bool:
        with self.lock:
            if task_id in self.waiting:
                self.counters["duplicates"] += 1
                return False
            self.waiting.add(task_id)
            self.counters["queued"] += 1
        self.jobs.put((task_id, attempt))
        return True

    def idle(self) -> bool:
        """No task waiting and none being checked (tests wait for this)."""
        with self.lock:
            return not self.waiting and self.jobs.unfinished_tasks == 0

    # -- working
    def work(self) -> None:
        while not self.stopping.is_set():
            try:
                task_id, attempt = self.jobs.get(timeout=0.5)
            except queue.Empty:
                continue
            with self.lock:
                self.waiting.discard(task_id)
            try:
                self._run(task_id, attempt)
            finally:
                self.jobs.task_done()

    def _run(self, task_id: int, attempt: int) -> None:
        try:
            result = self.checker.check_task(task_id)
        except Exception as exc:  # noqa: BLE001 (a server error must not stop the worker; pull still decides)
            if attempt < len(RETRY_DELAYS_S):
                with self.lock:
                    self.counters["retried"] += 1
                self.log(f"task {task_id}: {type(exc).__name__}: {exc}; trying again in {RETRY_DELAYS_S[attempt]:g} s")
                timer = threading.Timer(RETRY_DELAYS_S[attempt], self.enqueue, (task_id, attempt + 1))
                timer.daemon = True
                timer.start()
            else:
                with self.lock:
                    self.counters["failed"] += 1
                self.log(f"task {task_id}: given up after {attempt + 1} attempts ({exc}); pull will check it")
            return
        with self.lock:
            self.counters["rounds"] += 1
            self.counters["checked"] += result.checked
            self.counters["written"] += int(result.written)
        if result.changed_meanwhile:
            self.log(f"task {task_id}: an annotation changed during its check; checking again")
            self.enqueue(task_id)
        elif result.checked or result.written:
            self.log(f"task {task_id}: checked {result.checked}, reused {result.reused}, written {result.written}"
                     + (f", sent back to users {result.requeued_for}" if result.requeued_for else "")
                     + (f", released for users {result.released_for}" if result.released_for else ""))

    def register(self) -> None:
        """Register the webhook on every project of the pipeline that exists now, and queue the
        tasks annotated while no receiver listened (more annotations than checks)."""
        try:
            for title, project_id in project_ids(self.checker.client, self.titles).items():
                if project_id not in self.registered:
                    done = register_webhook(self.checker.client, project_id, self.url, self.secret)
                    self.registered[project_id] = title
                    missed = [task.id for task in list_tasks(self.checker.client, project_id)
                              if task.annotations > len(task.data.get(LIVE_CHECKS_FIELD) or {})]
                    for task_id in missed:
                        self.enqueue(task_id)
                    self.log(f"webhook {done} on project {project_id} ({title}); {len(missed)} tasks to catch up on")
        except Exception as exc:  # noqa: BLE001 (the server may be restarting: try again next round)
            self.log(f"registering the webhook failed ({type(exc).__name__}: {exc}); trying again")

    def deactivate(self) -> None:
        """Switch our webhooks off on the way out: Label Studio would otherwise keep sending
        annotations to a port some other program may listen on later (best effort: the server
        may be gone already; the next start switches them on again)."""
        for project_id in sorted(self.registered):
            try:
                for hook in self.checker.client.webhooks.list(project=project_id):
                    if hook.url == self.url:
                        self.checker.client.webhooks.update(id=hook.id, is_active=False)
            except Exception as exc:  # noqa: BLE001 (stopping must not fail on a server that stopped first)
                self.log(f"could not switch off the webhook of project {project_id}: {type(exc).__name__}")

    def _register_loop(self) -> None:
        while not self.stopping.wait(REGISTER_EVERY_S):
            self.register()

    # -- running
    def start(self) -> None:
        self.register()
        for target in (self.server.serve_forever, self.work, self._register_loop):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=5)
        close = getattr(self.checker, "close", None)
        if close is not None:
            close()

    def health(self) -> dict[str, Any]:
        """What `/health` (no secret needed) tells: alive, idle, and counters; nothing about the
        pipeline, its projects or the server."""
        with self.lock:
            counters = dict(self.counters)
        return {"ok": True, "idle": self.idle(), **counters}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)


def body_length(headers: Mapping[str, str], limit: int = MAX_BODY_BYTES) -> tuple[int, int | None, str]:
    """The body length a request declares, checked before anything is read (pure):
    (length, None, "") when it may be read, else (0, status, why). A body comes with one plain
    decimal Content-Length of at most `limit` bytes: no chunked bodies, no negative, signed,
    non-numeric or repeated lengths."""
    if headers.get("Transfer-Encoding") is not None:
        return 0, 411, "a body must come with a Content-Length (no Transfer-Encoding)"
    declared = headers.get_all("Content-Length") if hasattr(headers, "get_all") else None
    values = declared if declared is not None else ([headers["Content-Length"]] if "Content-Length" in headers else [])
    if not values:
        return 0, 411, "Content-Length is required"
    if len(values) > 1:
        return 0, 400, "Content-Length is given more than once"
    text = values[0].strip()
    if not text.isascii() or not text.isdigit():
        return 0, 400, f"Content-Length must be a non-negative whole number, not {text[:20]!r}"
    if len(text) > 20 or int(text) > limit:
        return 0, 413, f"a body of at most {limit} bytes is read"
    return int(text), None, ""


def _handler_for(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    """The HTTP side of the receiver. Every request it cannot take gets a 4xx and one log line,
    never a traceback: wrong path (404) or method (405), no secret (403, before any body is
    read), a missing, malformed or too large Content-Length (411, 400, 413), a body cut short
    (400), JSON that names no annotation (400)."""

    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT_S  # a stalled client is dropped
        protocol_version = "HTTP/1.0"  # one request per connection: nothing left unread is misparsed

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path != WEBHOOK_PATH:
                self._answer(404, {"error": "not found"})
                return
            if not receiver.authorized(self.headers.get(SECRET_HEADER)):  # before the body is read
                self._answer(403, {"error": "wrong or missing secret"})
                return
            length, refused, why = body_length(self.headers)
            if refused is not None:
                receiver.refuse()
                self._answer(refused, {"error": why})
                return
            try:
                body = self.rfile.read(length)
            except TimeoutError:
                receiver.refuse()
                self._answer(408, {"error": f"the body did not arrive within {REQUEST_TIMEOUT_S:g} s"})
                return
            if len(body) < length:
                receiver.refuse()
                self._answer(400, {"error": f"the body ended after {len(body)} of {length} bytes"})
                return
            status, answer = receiver.receive_authorized(body)
            self._answer(status, answer)

        def do_GET(self) -> None:  # noqa: N802
            if self.path != "/health":
                self._answer(404, {"error": "not found"})
                return
            self._answer(200, receiver.health())

        def _not_allowed(self) -> None:
            self._answer(405, {"error": f"method {self.command} not allowed"}, allow="GET, POST")

        def __getattr__(self, name: str) -> Any:
            # any other method (PUT, DELETE, HEAD, made-up ones): 405, where http.server says 501
            if name.startswith("do_"):
                return self._not_allowed
            raise AttributeError(name)

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # http.server's own refusals of a malformed request line: a bad version is the
            # client's fault (400, not 505); headers too long or too many stay 431
            if code >= 500:
                code, message = 400, message or "malformed request"
            # a request line too broken to name its version is answered as HTTP/1.0 (with a status
            # line), not as HTTP/0.9 (a bare body)
            self.request_version = "HTTP/1.0" if self.request_version == "HTTP/0.9" else self.request_version
            self.log_message("%s", f"refused: {code} {message or ''}".strip())
            try:
                super().send_error(code, message, explain)
            except OSError:
                pass  # the client is gone

        def log_request(self, code: Any = "-", size: Any = "-") -> None:
            return  # accepted requests are logged by the worker, refused ones by _answer / send_error

        def log_error(self, format: str, *args: Any) -> None:  # noqa: A002
            if not format.startswith("code "):  # send_error's own line: already logged above
                self.log_message(format, *args)

        def _answer(self, status: int, body: dict[str, Any], allow: str | None = None) -> None:
            data = json.dumps(body).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if allow:
                    self.send_header("Allow", allow)
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass  # the client left before the answer: nothing to tell it
            if status >= 400:
                self.log_message("%s", f"refused: {self.command} {self.path[:80]!r}: {status} {body.get('error', '')}")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            # one line per refused request (accepted ones are logged by the worker)
            text = (format % args if args else format).replace("\n", " ")[:300]
            receiver.log(f"request from {self.client_address[0]}: {text}")

    return Handler


# -------------------------------------------------------------------------- the receiver process
@dataclass(frozen=True)
class ReceiverStatus:
    running: bool
    url: str | None = None
    pid: int | None = None
    pipeline: str | None = None
    healthy: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"running": self.running, "healthy": self.healthy, "url": self.url, "pid": self.pid,
                "pipeline": self.pipeline}


def state_file(studio: StudioConfig) -> Path:
    return studio.root / "webhook.json"


def log_file(studio: StudioConfig) -> Path:
    return studio.root / "webhook.log"


def read_receiver_state(studio: StudioConfig) -> dict[str, Any] | None:
    path = state_file(studio)
    if not path.is_file():
        return None
    try:
        state = read_private_json(path)
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def receiver_status(studio: StudioConfig) -> ReceiverStatus:
    state = read_receiver_state(studio)
    if not state or not state.get("pid"):
        return ReceiverStatus(False)
    pid = int(state["pid"])
    running = _is_receiver(pid)
    health = _health(state["url"]) if running else None
    return ReceiverStatus(running, state.get("url"), pid, state.get("pipeline"), health is not None)


def _health(url: str) -> dict[str, Any] | None:
    health_url = url.removesuffix(WEBHOOK_PATH) + "/health"
    try:
        with urllib.request.urlopen(health_url, timeout=2) as response:  # noqa: S310 (loopback)
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _is_receiver(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (ProcessLookupError, PermissionError, OSError):
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    return state != "Z" and b"webhook" in command and b"--foreground" in command


def serve_receiver(studio: StudioConfig, pipeline: PipelineConfig, titles: Sequence[str], connection: Connection,
                   port: int = 0) -> None:
    """Run the receiver in this process until SIGTERM/SIGINT (the background process's body)."""
    state = read_receiver_state(studio) or {}
    secret = state.get("secret") or secrets.token_urlsafe(24)
    receiver = Receiver(LiveChecker(pipeline, connection, studio=studio), secret, titles, port)
    write_private_json(state_file(studio), {"pid": os.getpid(), "url": receiver.url, "pipeline": pipeline.name,
                                            "secret": secret, "started_at": _now()})
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    receiver.start()
    receiver.log(f"receiving at {receiver.url} for pipeline {pipeline.name}")
    stop.wait()
    receiver.stop()
    receiver.deactivate()


def start_receiver(studio: StudioConfig, pipeline_name: str, pipelines_file: Path, port: int = 0,
                   timeout: float = START_TIMEOUT_S) -> ReceiverStatus:
    """Start the receiver process in the background (replacing one for another pipeline), and wait
    until it answers."""
    current = receiver_status(studio)
    if current.running and current.pipeline == pipeline_name and current.healthy:
        return current
    if current.running:
        stop_receiver(studio)
    if port and not port_is_free(port):
        raise StudioError(f"port {port} on {LOOPBACK} is busy; choose another with --port")
    port = port or free_port()
    command = [sys.executable, "-m", "fcbench.cli", "studio", "webhook", pipeline_name, "--file",
               str(Path(pipelines_file).resolve()), "--dir", str(studio.root), "--port", str(port), "--foreground"]
    started = time.monotonic()
    with open(log_file(studio), "ab") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, cwd=Path(pipelines_file).resolve().parent)
    while time.monotonic() - started < timeout:
        status = receiver_status(studio)
        if status.running and status.pid == process.pid and status.healthy:
            return status
        if process.poll() is not None:
            break
        time.sleep(0.2)
    if process.poll() is None:
        process.terminate()
    raise StudioError(f"the webhook receiver did not start; see {log_file(studio)}")


def stop_receiver(studio: StudioConfig, timeout: float = 10.0) -> bool:
    state = read_receiver_state(studio)
    if not state or not state.get("pid"):
        return False
    pid = int(state["pid"])
    stopped = False
    if _is_receiver(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _is_receiver(pid):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.1)
        if _is_receiver(pid):
            os.kill(pid, signal.SIGKILL)
        stopped = True
    write_private_json(state_file(studio), {**state, "pid": None})
    return stopped
