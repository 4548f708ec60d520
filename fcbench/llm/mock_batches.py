"""The mock server's Files and Batches API (`/v1/files`, `/v1/batches`), enough of OpenAI's to run
fcbench's batch mode over real HTTP, faults included.

A batch is processed when it is first retrieved `processing_s` after it was created: every input
line is answered by the same script as online chat requests (`answer_line`), and the output and
error files are written as OpenAI writes them (one JSON line per request, `custom_id` kept).

Faults, taken in creation order from `faults` (one per batch; `ok` when the list is used up):
- `ok`: every line answered (a scripted non-200 reply goes to the error file, as OpenAI does);
- `fail`: the batch fails validation, no output at all;
- `expire`: the window ends after half of the lines: they are in the output, the rest nowhere;
- `drop:N`: completed, but N lines are missing from the output (a partial file);
- `error:N`: the first N lines are in the error file with HTTP 500.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

# (request body) -> (HTTP status, response body)
AnswerLine = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]

_TERMINAL = {"completed", "failed", "expired", "cancelled"}


@dataclass
class _StoredFile:
    id: str
    purpose: str
    filename: str
    data: bytes
    created_at: int

    def as_object(self) -> dict[str, Any]:
        return {"id": self.id, "object": "file", "bytes": len(self.data), "created_at": self.created_at,
                "filename": self.filename, "purpose": self.purpose, "status": "processed"}


@dataclass
class _Batch:
    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, Any] | None
    created_at: int
    created_monotonic: float
    fault: str
    status: str = "validating"
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: dict[str, Any] | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})

    def as_object(self) -> dict[str, Any]:
        return {"id": self.id, "object": "batch", "endpoint": self.endpoint, "errors": self.errors,
                "input_file_id": self.input_file_id, "completion_window": self.completion_window,
                "status": self.status, "output_file_id": self.output_file_id, "error_file_id": self.error_file_id,
                "created_at": self.created_at, "request_counts": dict(self.counts), "metadata": self.metadata}


class MockBatchStore:
    def __init__(self, faults: Sequence[str] = (), processing_s: float = 0.0) -> None:
        self.faults = list(faults)
        self.processing_s = processing_s
        self.files: dict[str, _StoredFile] = {}
        self.batches: dict[str, _Batch] = {}
        self.lines_by_custom_id: Counter[str] = Counter()  # every input line ever submitted, by custom_id
        self._lock = threading.Lock()

    # ---------------------------------------------------------------------------------- files
    def upload(self, purpose: str, filename: str, data: bytes) -> dict[str, Any]:
        stored = _StoredFile(f"file-{uuid.uuid4().hex[:24]}", purpose, filename, data, int(time.time()))
        with self._lock:
            self.files[stored.id] = stored
        return stored.as_object()

    def file(self, file_id: str) -> _StoredFile | None:
        return self.files.get(file_id)

    # -------------------------------------------------------------------------------- batches
    def create(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        input_file = self.files.get(str(request.get("input_file_id")))
        if input_file is None:
            return 400, {"error": {"message": f"no file {request.get('input_file_id')!r}", "type": "invalid_request_error"}}
        if request.get("endpoint") != "/v1/chat/completions":
            return 400, {"error": {"message": "only /v1/chat/completions is served", "type": "invalid_request_error"}}
        with self._lock:
            fault = self.faults.pop(0) if self.faults else "ok"
            batch = _Batch(f"batch_{uuid.uuid4().hex[:24]}", input_file.id, request["endpoint"],
                           str(request.get("completion_window", "24h")), request.get("metadata"),
                           int(time.time()), time.monotonic(), fault)
            self.batches[batch.id] = batch
            for line in _input_lines(input_file.data):
                self.lines_by_custom_id[str(line.get("custom_id"))] += 1
        return 200, batch.as_object()

    def retrieve(self, batch_id: str, answer_line: AnswerLine) -> dict[str, Any] | None:
        batch = self.batches.get(batch_id)
        if batch is None:
            return None
        with self._lock:
            if batch.status not in _TERMINAL and time.monotonic() - batch.created_monotonic >= self.processing_s:
                self._process(batch, answer_line)
            elif batch.status == "validating":
                batch.status = "in_progress"
        return batch.as_object()

    def cancel(self, batch_id: str) -> dict[str, Any] | None:
        batch = self.batches.get(batch_id)
        if batch is None:
            return None
        with self._lock:
            if batch.status not in _TERMINAL:
                batch.status = "cancelled"
        return batch.as_object()

    def _process(self, batch: _Batch, answer_line: AnswerLine) -> None:
        lines = _input_lines(self.files[batch.input_file_id].data)
        batch.counts["total"] = len(lines)
        kind, _, number = batch.fault.partition(":")
        if kind == "fail":
            batch.status = "failed"
            batch.errors = {"object": "list", "data": [{"code": "invalid_request", "message": "mock: batch failed"}]}
            return
        answered = lines[: len(lines) // 2] if kind == "expire" else lines
        if kind == "drop":
            answered = answered[: max(0, len(answered) - int(number or 1))]
        forced_errors = int(number or 1) if kind == "error" else 0
        output, errors = [], []
        for position, line in enumerate(answered):
            custom_id = line.get("custom_id")
            if position < forced_errors:
                status, body = 500, {"error": {"message": "mock: item failed", "type": "server_error"}}
            else:
                status, body = answer_line(dict(line.get("body") or {}))
            record = {"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": custom_id,
                      "response": {"status_code": status, "request_id": uuid.uuid4().hex[:16], "body": body},
                      "error": None}
            (output if status == 200 else errors).append(record)
        batch.counts["completed"], batch.counts["failed"] = len(output), len(errors)
        if output:
            batch.output_file_id = self._write(f"{batch.id}_output.jsonl", output)
        if errors:
            batch.error_file_id = self._write(f"{batch.id}_error.jsonl", errors)
        batch.status = "expired" if kind == "expire" else "completed"

    def _write(self, filename: str, records: list[dict[str, Any]]) -> str:
        data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")
        stored = _StoredFile(f"file-{uuid.uuid4().hex[:24]}", "batch_output", filename, data, int(time.time()))
        self.files[stored.id] = stored
        return stored.id

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"batches": len(self.batches), "batch_lines": sum(self.lines_by_custom_id.values()),
                    "batch_lines_repeated": sum(count - 1 for count in self.lines_by_custom_id.values() if count > 1)}


def _input_lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """Form fields of a multipart/form-data body: name -> (filename, bytes)."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return fields
