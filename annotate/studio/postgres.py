"""PostgreSQL for Label Studio: a server of the studio's own, or an external one named by a DSN.

Label Studio's SQLite default serialises writes: a team annotating at once needs PostgreSQL. Two
ways to get one, in this order:

1. `FCBENCH_STUDIO_DATABASE_URL=postgresql://user:password@host:port/name` (an existing server;
   the URL stays in the environment and is never written to a file or a log);
2. otherwise a local server this module manages with Debian's `postgresql` binaries
   (/usr/lib/postgresql/<version>/bin, newest first; FCBENCH_PG_BIN to choose):

    <studio dir>/postgres/          owned by the server's user, mode 0700
        data/                       the cluster (initdb on the first start)
        run/                        its Unix socket (none in /var/run: no root needed)
        server.log
    <studio dir>/postgres.json      0600: port, role, password, database

   It listens on 127.0.0.1 only, on a port free at its first start (kept for the next ones),
   with password (scram-sha-256) authentication for TCP. PostgreSQL refuses to run as root: then
   the cluster belongs to the `postgres` system user the Debian package creates (`nobody`
   otherwise), the data folder is chowned to it, and the studio folder becomes traversable (0711,
   not listable) so that user can reach its own folder inside.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from fcbench.errors import UserError

DATABASE_URL_VARIABLE = "FCBENCH_STUDIO_DATABASE_URL"
PG_BIN_VARIABLE = "FCBENCH_PG_BIN"
DATABASE_NAME = "labelstudio"
ROLE = "fcbench"
START_TIMEOUT_S = 60


class PostgresError(UserError):
    """The database server could not be prepared, started or stopped; the message says why."""


@dataclass(frozen=True)
class DatabaseSettings:
    """What Label Studio needs to reach its database (its POSTGRE_* variables)."""

    name: str
    user: str
    password: str = field(repr=False)
    host: str
    port: int
    managed: bool  # True: the studio's own server (started and stopped with the studio)

    def label_studio_environment(self) -> dict[str, str]:
        return {"DJANGO_DB": "default", "POSTGRE_NAME": self.name, "POSTGRE_USER": self.user,
                "POSTGRE_PASSWORD": self.password, "POSTGRE_HOST": self.host, "POSTGRE_PORT": str(self.port)}

    def describe(self) -> str:
        """Where the database is, without the password."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.name}"


def parse_database_url(url: str) -> DatabaseSettings:
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql") or not parts.hostname or not parts.username:
        raise PostgresError(f"{DATABASE_URL_VARIABLE} must look like postgresql://user:password@host:port/name")
    name = unquote(parts.path.lstrip("/")) or DATABASE_NAME
    return DatabaseSettings(name, unquote(parts.username), unquote(parts.password or ""), parts.hostname,
                            parts.port or 5432, managed=False)


def external_database(environ: dict[str, str] | os._Environ[str] = os.environ) -> DatabaseSettings | None:
    url = environ.get(DATABASE_URL_VARIABLE)
    return parse_database_url(url) if url else None


# --------------------------------------------------------------------------------- the managed server
def find_pg_bin() -> Path:
    configured = os.environ.get(PG_BIN_VARIABLE)
    candidates = [Path(configured)] if configured else []
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                      key=lambda path: [int(part) for part in re.findall(r"\d+", path.parent.name)] or [0],
                      reverse=True)
    candidates += versions
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    raise PostgresError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): "
                        "apt-get install postgresql, or set FCBENCH_STUDIO_DATABASE_URL to an existing server")


def _server_user() -> pwd.struct_passwd | None:
    """None: run as ourselves. As root, the `postgres` system user (or nobody): initdb refuses root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresError("running as root and no unprivileged user (postgres, nobody) to own the database")


def _check_traversable(folder: Path, user: pwd.struct_passwd) -> None:
    """The server's user must be able to walk down to the studio folder. Its parents are not
    opened up silently (a home folder made traversable is a surprise): say what to do instead."""
    groups = {group.gr_gid for group in grp.getgrall() if user.pw_name in group.gr_mem} | {user.pw_gid}
    for parent in [folder, *folder.parents]:
        info = parent.stat()
        if info.st_uid == user.pw_uid:
            allowed = info.st_mode & 0o100
        elif info.st_gid in groups:
            allowed = info.st_mode & 0o010
        else:
            allowed = info.st_mode & 0o001
        if not allowed:
            raise PostgresError(
                f"the studio's PostgreSQL runs as user {user.pw_name} (it refuses root), which cannot enter "
                f"{parent}: put the studio in a folder it can reach (--dir /srv/fcbench-studio, or "
                f"FCBENCH_STUDIO_DIR), or use an existing server with {DATABASE_URL_VARIABLE}")


@dataclass(frozen=True)
class ManagedPostgres:
    """The studio's own PostgreSQL cluster under `<studio dir>/postgres`."""

    studio_root: Path

    @property
    def folder(self) -> Path:
        return self.studio_root / "postgres"

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def socket_dir(self) -> Path:
        return self.folder / "run"

    @property
    def log_file(self) -> Path:
        return self.folder / "server.log"

    @property
    def settings_file(self) -> Path:
        return self.studio_root / "postgres.json"

    def settings(self) -> DatabaseSettings:
        from fcbench.runtime.localhost import read_private_json, write_private_json

        if self.settings_file.exists():
            data = read_private_json(self.settings_file)
        else:
            from fcbench.runtime.localhost import free_port

            data = {"port": free_port(), "user": ROLE, "password": secrets.token_urlsafe(24), "name": DATABASE_NAME}
            write_private_json(self.settings_file, data)
        return DatabaseSettings(data["name"], data["user"], data["password"], "127.0.0.1", int(data["port"]),
                                managed=True)

    # -- running the binaries as the cluster's owner --------------------------------------------
    def _run(self, program: str, *args: str, password: str | None = None, check: bool = True,
             timeout: float = START_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        user = _server_user()
        command = [str(find_pg_bin() / program), *args]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8",
               "HOME": str(self.folder)}
        if password is not None:  # in the child's environment, never on its command line
            env["PGPASSWORD"] = password
        try:
            result = subprocess.run(command, capture_output=True, text=True, env=env,
                                    cwd=self.folder, timeout=timeout,
                                    user=user.pw_uid if user else None, group=user.pw_gid if user else None,
                                    extra_groups=[] if user else None)
        except subprocess.TimeoutExpired:
            raise PostgresError(f"{program} did not finish within {timeout:g} s; see {self.log_file}") from None
        if check and result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
            raise PostgresError(f"{program} failed: {detail[0]}")
        return result

    def _prepare_folders(self) -> None:
        user = _server_user()
        if user is not None:
            _check_traversable(self.studio_root.resolve().parent, user)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if user is not None:
            # the server's user must reach its folder: the studio folder becomes traversable, not listable
            self.studio_root.chmod(0o711)
            for path in (self.folder, self.socket_dir):
                os.chown(path, user.pw_uid, user.pw_gid)
        for path in (self.folder, self.socket_dir):
            path.chmod(0o700)

    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").is_file()

    def running(self) -> bool:
        if not self.initialised():
            return False
        return self._run("pg_ctl", "status", "-D", str(self.data_dir), check=False).returncode == 0

    def start(self) -> DatabaseSettings:
        """Initialise the cluster on the first call, start it if needed, and make sure the role
        and the database exist. Idempotent."""
        settings = self.settings()
        self._prepare_folders()
        if not self.initialised():
            self._initdb(settings)
        if not self.running():
            from fcbench.runtime.localhost import port_is_free

            if not port_is_free(settings.port):
                raise PostgresError(f"port {settings.port} on 127.0.0.1 (the studio database's) is busy; "
                                    f"stop what uses it, or delete {self.settings_file} to pick another")
            options = f"-h 127.0.0.1 -p {settings.port} -k {self.socket_dir}"
            self._run("pg_ctl", "start", "-w", "-t", str(START_TIMEOUT_S), "-D", str(self.data_dir),
                      "-l", str(self.log_file), "-o", options)
        self._ensure_database(settings)
        return settings

    def _initdb(self, settings: DatabaseSettings) -> None:
        if self.data_dir.exists():
            shutil.rmtree(self.data_dir)  # a half-made cluster from an interrupted first start
        password_file = self.folder / ".pwfile"
        password_file.write_text(settings.password + "\n", encoding="utf-8")
        password_file.chmod(0o600)
        user = _server_user()
        if user is not None:
            os.chown(password_file, user.pw_uid, user.pw_gid)
        try:
            # the cluster's superuser is our role, and every login (TCP or the socket) needs its password
            self._run("initdb", "-D", str(self.data_dir), "-U", settings.user, f"--pwfile={password_file}",
                      "--auth=scram-sha-256", "-E", "UTF8", "--no-instructions",
                      timeout=120)
        finally:
            password_file.unlink(missing_ok=True)

    def _psql(self, settings: DatabaseSettings, sql: str, database: str = "postgres") -> str:
        result = self._run("psql", "-h", str(self.socket_dir), "-p", str(settings.port), "-U", settings.user,
                           "-d", database, "-v", "ON_ERROR_STOP=1", "-tAc", sql, password=settings.password)
        return result.stdout.strip()

    def query(self, sql: str) -> str:
        """One SQL statement against Label Studio's database (unaligned output): for checks."""
        settings = self.settings()
        return self._psql(settings, sql, settings.name)

    def _ensure_database(self, settings: DatabaseSettings) -> None:
        exists = self._psql(settings, f"SELECT 1 FROM pg_database WHERE datname = '{settings.name}'")
        if exists != "1":
            self._psql(settings, f'CREATE DATABASE "{settings.name}" OWNER "{settings.user}"')

    def stop(self) -> bool:
        """Stop the server; False when it was not running."""
        if not self.running():
            return False
        self._run("pg_ctl", "stop", "-w", "-m", "fast", "-D", str(self.data_dir))
        return True

    def restart(self) -> None:
        """Stop and start again (a fault drill for pulls)."""
        settings = self.settings()
        options = f"-h 127.0.0.1 -p {settings.port} -k {self.socket_dir}"
        self._run("pg_ctl", "restart", "-w", "-m", "fast", "-D", str(self.data_dir), "-l", str(self.log_file),
                  "-o", options)


def database_for_studio(studio_root: Path) -> DatabaseSettings:
    """The database a PostgreSQL studio uses: the external one when FCBENCH_STUDIO_DATABASE_URL is
    set, else the studio's own server, started if needed."""
    external = external_database()
    if external is not None:
        return external
    return ManagedPostgres(studio_root).start()
