"""Start and stop Prism (`prism mock`), the OpenAPI mock server installed by fcbench/environments/install_prism.sh.

Prism serves one description per process, at the description's paths without its server's base
path, so each description gets its own process on its own free port on 127.0.0.1; the http
environment's `base_urls` maps each description (file stem) to its process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from fcbench.runtime.localhost import free_port

REPO = Path(__file__).resolve().parents[2]
PRISM_BIN = REPO / ".prism" / "node_modules" / ".bin" / "prism"


class PrismError(RuntimeError):
    pass


def prism_binary() -> Path:
    if not PRISM_BIN.exists():
        raise PrismError(f"{PRISM_BIN}: Prism is not installed (run fcbench/environments/install_prism.sh)")
    return PRISM_BIN


@dataclass
class PrismServers:
    """One `prism mock` process per description; `base_urls` is what HttpEnvironment takes."""

    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    base_urls: dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()

    def __enter__(self) -> "PrismServers":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_prism(descriptions: list[Path], log_dir: Path, timeout_s: float = 60.0) -> PrismServers:
    """Start one Prism per description and wait until each answers (a 404 on / is an answer)."""
    binary = prism_binary()
    servers = PrismServers()
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        for description in descriptions:
            port = free_port()
            log = (log_dir / f"prism-{description.stem}.log").open("w")
            servers.processes[description.stem] = subprocess.Popen(
                [str(binary), "mock", "-h", "127.0.0.1", "-p", str(port), str(description)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            servers.base_urls[description.stem] = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout_s
        for stem, url in servers.base_urls.items():
            while True:
                if servers.processes[stem].poll() is not None:
                    raise PrismError(f"prism mock {stem} exited (see {log_dir}/prism-{stem}.log)")
                try:
                    httpx.get(url + "/", timeout=1.0)
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise PrismError(f"prism mock {stem} did not answer within {timeout_s:g} s") from None
                    time.sleep(0.2)
    except BaseException:
        servers.stop()
        raise
    return servers
