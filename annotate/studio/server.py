"""The local Label Studio server: start, stop and status (the only module that runs the server).

The server is the `label-studio` program installed into its own venv by `annotate/studio/install_studio.sh`
(it pins Django and friends; fcbench only talks to it over HTTP). One studio lives in one folder:

    <studio dir>/               (FCBENCH_STUDIO_DIR, default ~/.local/share/fcbench/studio), mode 0700
        data/                   Label Studio's data dir (SQLite database, media)
        home/                   HOME of the server process: label-studio writes under ~/.local/share
        credentials.json  0600  admin username, password and API token, created on the first start
        server.json             pid, port and URL of the running server
        server.log              the server's output

Choices made here, and why:
- loopback only (`--internal-host 127.0.0.1`): the default binds 0.0.0.0;
- a busy port is refused up front: Label Studio would silently move to port+1;
- analytics, update checks and Sentry off; sign-up without an invite link closed;
- the admin and its token are created non-interactively through environment variables (not command
  line flags, which any local user could read in `ps`); legacy tokens are enabled on the first start,
  since a preset token answers 401 otherwise;
- unprefixed USERNAME/PASSWORD/PORT/HOST/USER_TOKEN are removed from the server's environment:
  Label Studio reads them as fallbacks.
- SSRF protection off: webhooks to the loopback receiver (annotate/webhook.py, `studio webhook`)
  are refused otherwise (`build-dataset studio stop` stops that receiver with the server).
- PostgreSQL for teams: `database="postgresql"` runs Label Studio on the database
  `annotate.studio.postgres` provides: the server named by FCBENCH_STUDIO_DATABASE_URL, else one given by
  Label Studio's own POSTGRE_NAME/USER/PASSWORD/HOST/PORT variables when all are set, else the
  studio's own PostgreSQL under <studio dir>/postgres (started with the studio, stopped with it).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fcbench.runtime.localhost import LOOPBACK, free_port, port_is_free, read_private_json, write_private_json  # noqa: F401 (part of the studio interface)
from fcbench.errors import UserError

if TYPE_CHECKING:
    from annotate.studio.postgres import DatabaseSettings

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PORT = 8089
START_TIMEOUT_S = 180.0  # a fresh database runs its migrations first (about 33 s on 2 cores)
STOP_TIMEOUT_S = 20.0
DEFAULT_ADMIN = "fcbench-admin@example.com"
POSTGRES_VARIABLES = ("POSTGRE_NAME", "POSTGRE_USER", "POSTGRE_PASSWORD", "POSTGRE_HOST", "POSTGRE_PORT")
# Read by Label Studio as fallbacks for its own settings: a stray PORT would move the server.
_FALLBACK_VARIABLES = ("USERNAME", "PASSWORD", "PORT", "HOST", "USER_TOKEN")

Database = Literal["sqlite", "postgresql"]


class StudioError(UserError):
    """The server could not be started, stopped or reached; the message says what to do."""


def default_studio_dir() -> Path:
    configured = os.environ.get("FCBENCH_STUDIO_DIR")
    if configured:
        return Path(configured).expanduser()
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data_home / "fcbench" / "studio"


def find_studio_binary() -> Path:
    """The `label-studio` program: FCBENCH_STUDIO_BIN, the project's .venv-studio, or PATH."""
    configured = os.environ.get("FCBENCH_STUDIO_BIN")
    candidates = [Path(configured)] if configured else []
    venv = Path(os.environ.get("FCBENCH_STUDIO_VENV") or REPO_ROOT / ".venv-studio")
    candidates.append(venv / "bin" / "label-studio")
    on_path = shutil.which("label-studio")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise StudioError("label-studio is not installed; run annotate/studio/install_studio.sh "
                      "(or set FCBENCH_STUDIO_BIN to the label-studio program)")


@dataclass(frozen=True)
class StudioConfig:
    """Where a studio lives and how its server is started."""

    root: Path = field(default_factory=default_studio_dir)
    port: int = DEFAULT_PORT
    database: Database = "sqlite"
    binary: Path | None = None  # None: `find_studio_binary()`

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def home_dir(self) -> Path:
        return self.root / "home"

    @property
    def credentials_file(self) -> Path:
        return self.root / "credentials.json"

    @property
    def state_file(self) -> Path:
        return self.root / "server.json"

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
    token: str = field(repr=False)  # never printed: repr hides it, and no command shows it


@dataclass(frozen=True)
class StudioStatus:
    running: bool  # the process recorded in server.json is alive
    healthy: bool  # and answers GET /health
    url: str | None = None
    pid: int | None = None
    root: Path | None = None
    started_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"running": self.running, "healthy": self.healthy, "url": self.url, "pid": self.pid,
                "studio_dir": str(self.root) if self.root else None, "started_at": self.started_at}


# ------------------------------------------------------------------------------------ secrets on disk
def load_or_create_credentials(config: StudioConfig) -> Credentials:
    if config.credentials_file.exists():
        data = read_private_json(config.credentials_file)
        return Credentials(data["username"], data["password"], data["token"])
    # 40 hex characters: the length of Label Studio's legacy token key column
    credentials = Credentials(os.environ.get("FCBENCH_LS_USERNAME", DEFAULT_ADMIN),
                              secrets.token_urlsafe(18), secrets.token_hex(20))
    write_private_json(config.credentials_file,
                       {"username": credentials.username, "password": credentials.password,
                        "token": credentials.token})
    return credentials


def read_credentials(config: StudioConfig) -> Credentials:
    if not config.credentials_file.exists():
        raise StudioError(f"{config.root}: no studio here yet; run build-dataset studio start")
    data = read_private_json(config.credentials_file)
    return Credentials(data["username"], data["password"], data["token"])


# ------------------------------------------------------------------------------------------ processes
def health_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:  # noqa: S310 (loopback)
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[-1].split()[0] == "Z"


def _is_label_studio(pid: int) -> bool:
    """Guard before signalling a recorded pid: after a reboot the number may belong to another program."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return _process_alive(pid)  # no /proc (not Linux): trust the record
    return b"label-studio" in command or b"label_studio" in command


def server_environment(config: StudioConfig, credentials: Credentials,
                       database: "DatabaseSettings | None" = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in _FALLBACK_VARIABLES and not key.startswith("LABEL_STUDIO_")}
    env.update({
        "HOME": str(config.home_dir),
        "LABEL_STUDIO_BASE_DATA_DIR": str(config.data_dir),
        "LATEST_VERSION_CHECK": "false",
        "COLLECT_ANALYTICS": "false",
        "SENTRY_DSN": "",
        "FRONTEND_SENTRY_DSN": "",
        "LABEL_STUDIO_USERNAME": credentials.username,
        "LABEL_STUDIO_PASSWORD": credentials.password,
        "LABEL_STUDIO_USER_TOKEN": credentials.token,
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        # the webhook receiver (annotate/webhook.py) listens on loopback, which Label Studio's
        # SSRF protection refuses as a webhook URL; the server itself is bound to loopback only
        "SSRF_PROTECTION_ENABLED": "false",
        "PYTHONUNBUFFERED": "1",
    })
    for name in (*POSTGRES_VARIABLES, "DJANGO_DB", "FCBENCH_STUDIO_DATABASE_URL"):
        env.pop(name, None)
    if config.database == "postgresql":
        if database is None:
            raise StudioError("database postgresql: no database settings (see annotate.studio.postgres)")
        env.update(database.label_studio_environment())
    else:
        for name in (*POSTGRES_VARIABLES, "DJANGO_DB"):
            env.pop(name, None)
    return env


def studio_database(config: StudioConfig) -> "DatabaseSettings | None":
    """The PostgreSQL database of a `database="postgresql"` studio (None for SQLite): the external
    one named by FCBENCH_STUDIO_DATABASE_URL or by all of POSTGRE_*, else the studio's own server."""
    if config.database != "postgresql":
        return None
    from annotate.studio.postgres import DatabaseSettings, database_for_studio, external_database

    given = [name for name in POSTGRES_VARIABLES if os.environ.get(name)]
    if external_database() is None and given:
        missing = [name for name in POSTGRES_VARIABLES if name not in given]
        if missing:
            raise StudioError(f"database postgresql needs {', '.join(missing)} in the environment "
                              f"(or none of POSTGRE_* for the studio's own server)")
        return DatabaseSettings(os.environ["POSTGRE_NAME"], os.environ["POSTGRE_USER"],
                                os.environ["POSTGRE_PASSWORD"], os.environ["POSTGRE_HOST"],
                                int(os.environ["POSTGRE_PORT"]), managed=False)
    return database_for_studio(config.root)


def _stop_own_database(config: StudioConfig) -> None:
    """The studio's own PostgreSQL stops with the studio (an external server is left alone)."""
    from annotate.studio.postgres import ManagedPostgres

    own = ManagedPostgres(config.root)
    if own.initialised():
        own.stop()


def read_state(config: StudioConfig) -> dict[str, Any] | None:
    try:
        return json.loads(config.state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def status(config: StudioConfig) -> StudioStatus:
    state = read_state(config)
    if not state or state.get("pid") is None:  # never started, or stopped (the port is remembered)
        return StudioStatus(False, False, root=config.root)
    pid = int(state["pid"])
    running = _process_alive(pid) and _is_label_studio(pid)
    healthy = running and health_ok(state["url"])
    return StudioStatus(running, healthy, state["url"], pid, config.root, state.get("started_at"))


def start(config: StudioConfig, timeout: float = START_TIMEOUT_S) -> StudioStatus:
    """Start the server (or return the one already running from this folder) and wait until healthy."""
    current = status(config)
    if current.running:
        if current.healthy or _wait_healthy(current.url or config.url, current.pid or 0, timeout):
            return status(config)
        raise StudioError(f"the studio in {config.root} runs (pid {current.pid}) but does not answer; "
                          f"see {config.log_file} or run build-dataset studio stop")
    if not port_is_free(config.port):
        raise StudioError(f"port {config.port} on {LOOPBACK} is busy; choose another with --port")
    binary = config.binary or find_studio_binary()
    for folder in (config.root, config.data_dir, config.home_dir):
        folder.mkdir(parents=True, exist_ok=True)
    config.root.chmod(0o700)  # the database holds every annotation and the token
    credentials = load_or_create_credentials(config)
    database = studio_database(config)
    command = [str(binary), "start", "--no-browser", "--internal-host", LOOPBACK,
               "-p", str(config.port), "--data-dir", str(config.data_dir)]
    with open(config.log_file, "ab") as log:
        process = subprocess.Popen(command, env=server_environment(config, credentials, database), cwd=config.root,
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # own process group: stop signals it whole
    state = {"pid": process.pid, "port": config.port, "url": config.url,
             "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "database": database.describe() if database else "sqlite"}
    config.state_file.write_text(json.dumps(state), encoding="utf-8")
    if not _wait_healthy(config.url, process.pid, timeout, process):
        _stop_pid(process.pid)
        config.state_file.unlink(missing_ok=True)
        raise StudioError(f"label-studio did not become healthy within {timeout:g} s; "
                          f"last lines of {config.log_file}: {_log_tail(config.log_file)}")
    return status(config)


def _wait_healthy(url: str, pid: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if health_ok(url):
            return True
        exited = process.poll() is not None if process is not None else not _process_alive(pid)
        if exited:
            return False
        time.sleep(0.5)
    return False


def _log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:])


def stop(config: StudioConfig, timeout: float = STOP_TIMEOUT_S) -> bool:
    """Stop the server started from this folder; False when none was running."""
    state = read_state(config)
    if not state or state.get("pid") is None:
        return False
    pid = int(state["pid"])
    was_running = _process_alive(pid) and _is_label_studio(pid)
    if was_running:
        _stop_pid(pid, timeout)
    _stop_own_database(config)
    # keep the port, so `studio start` without --port brings the server back where clients expect it
    config.state_file.write_text(json.dumps({"pid": None, "port": state.get("port"), "url": state.get("url")}),
                                 encoding="utf-8")
    return was_running


def _stop_pid(pid: int, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the server's process group (the server and any reloader child), SIGKILL if it lingers."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            _reap(pid)
            if not _process_alive(pid):
                return
            time.sleep(0.2)


def _reap(pid: int) -> None:
    """Collect the exit status when this process is the parent (tests start and stop in one process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
