"""Small helpers for servers this machine runs for fcbench (Label Studio, PostgreSQL, Prism, the
mock LLM): loopback ports, and files holding secrets (owner-only, refused when readable by others)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from fcbench.errors import UserError

LOOPBACK = "127.0.0.1"


def write_private_json(path: Path, value: Any) -> None:
    """Write a JSON file readable by its owner only (0600 from creation: no window where it is not)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(tmp, path)


def read_private_json(path: Path) -> Any:
    """Read a secrets file, refusing it when group or others may read it (as ssh does)."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise UserError(f"{path}: permissions {mode:o} are too open; run chmod 600 {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """Whether nothing listens on the port. SO_REUSEADDR as the server itself sets it: connections
    left in TIME_WAIT by a stopped server do not keep it from binding, nor should they fail this."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port nobody listens on now (for tests and benchmarks starting their own studio)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])
