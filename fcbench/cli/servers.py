"""Servers: the local Label Studio (studio) and the mock OpenAI-compatible LLM server (mock-llm)."""

from __future__ import annotations

import functools

from pathlib import Path
from typing import Any, Optional

import typer

from fcbench.cli.common import (app, console, print_json,
                                user_errors)
from fcbench.errors import UserError

PANEL = "Servers"
command = functools.partial(app.command, rich_help_panel=PANEL)


# ------------------------------------------------------------------------------ studio (Label Studio)
studio_app = typer.Typer(help="The local Label Studio server annotators work in (loopback only, own data dir).",
                         no_args_is_help=True)
app.add_typer(rich_help_panel=PANEL, typer_instance=studio_app, name="studio")


def _studio_config(studio_dir: Optional[Path], port: Optional[int] = None, database: str = "sqlite"):
    from annotate.studio import DEFAULT_PORT, StudioConfig, default_studio_dir, read_state

    root = studio_dir or default_studio_dir()
    if port is None:  # stop/status and a restart use the port the server was started on
        state = read_state(StudioConfig(root=root))
        port = int(state["port"]) if state else DEFAULT_PORT
    if database not in ("sqlite", "postgresql"):
        raise UserError(f"unknown database {database!r}; choose sqlite or postgresql")
    return StudioConfig(root=root, port=port, database=database)  # type: ignore[arg-type]


def _print_studio_status(status: Any, as_json: bool) -> None:
    if as_json:
        print_json(status.as_dict())
        return
    state = "running" if status.running and status.healthy else ("not answering" if status.running else "stopped")
    where = f" at {status.url} (pid {status.pid})" if status.running else ""
    console.print(f"studio {state}{where}; data in {status.root}", highlight=False, soft_wrap=True)


@studio_app.command("start", epilog="Examples:\n\n  build-dataset studio start --port 8089\n\n"
                    "  build-dataset studio start --database postgresql --dir /srv/fcbench-studio\n\n"
                    "Install the server first (own venv): annotate/install_studio.sh")
@user_errors
def studio_start(
    port: Optional[int] = typer.Option(None, "--port", help="Port on 127.0.0.1 [default: last used, else 8089]."),
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder [default: $FCBENCH_STUDIO_DIR "
                                              "or ~/.local/share/fcbench/studio]."),
    database: str = typer.Option("sqlite", "--database", help="sqlite, or postgresql: the server in "
                                 "$FCBENCH_STUDIO_DATABASE_URL (postgresql://user:password@host:port/name), else "
                                 "the studio's own PostgreSQL under <dir>/postgres (Debian's postgresql, "
                                 "127.0.0.1, started and stopped with the studio)."),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Start Label Studio on loopback with its own data dir, an admin and an API token.

    The admin password and token are created on the first start and kept in <dir>/credentials.json
    (mode 0600); the token is never printed. Analytics and update checks are off, sign-up is closed.
    A fresh database takes about half a minute (migrations)."""
    from annotate.studio import start

    _print_studio_status(start(_studio_config(studio_dir, port, database)), as_json)


@studio_app.command("stop", epilog="Example:  build-dataset studio stop")
@user_errors
def studio_stop(
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Stop the Label Studio server started from this studio folder (its data is kept)."""
    from annotate.studio import stop

    stopped = stop(_studio_config(studio_dir))
    if as_json:
        print_json({"stopped": stopped})
    else:
        print("studio stopped" if stopped else "studio was not running")


@studio_app.command("status", epilog="Example:  build-dataset studio status --json")
@user_errors
def studio_status(
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the status as JSON."),
) -> None:
    """Say whether the studio's server runs and answers, and where."""
    from annotate.studio import status

    _print_studio_status(status(_studio_config(studio_dir)), as_json)


# ------------------------------------------------------------------------------------------ mock-llm
@command(
    "mock-llm",
    epilog=(
        "Examples:\n\n"
        "  build-dataset mock-llm --port 8765 --latency-ms 200\n\n"
        "  build-dataset mock-llm --script tests/data/mock_replies.jsonl   "
        "(then: export OPENAI_BASE_URL=<the printed URL>)\n\n"
        '  script lines look like {"user_contains": "weather", "tool_calls": '
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}]} or {"call": 2, "status": 429, "retry_after": 1}'
    ),
)
@user_errors
def mock_llm(
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Port on 127.0.0.1 (0 picks a free one)."),
    script: Optional[Path] = typer.Option(
        None, "--script", help="JSON or JSONL rules: canned replies matched by user_contains / call / times."),
    latency_ms: float = typer.Option(0.0, "--latency-ms", min=0, help="Delay added to every chat request."),
    require_key_env: Optional[str] = typer.Option(
        None, "--require-key-env", help="Answer 401 unless the client sends the key held by this variable."),
) -> None:
    """Run a local OpenAI-compatible LLM server in the foreground, to dry-run a pipeline.

    Serves POST /v1/chat/completions (text and tool calls), GET /v1/models and GET /_stats.
    Without a script, a request offering tools gets a call to its first tool with placeholder
    arguments, and any other request an echo of the last user message. Ctrl-C stops it."""
    import os

    from fcbench.llm.mock_server import run_foreground

    api_key = None
    if require_key_env is not None:
        api_key = os.environ.get(require_key_env)
        if not api_key:
            raise UserError(f"--require-key-env: ${require_key_env} is not set")
    if script is not None and not script.is_file():
        raise UserError(f"{script}: no such file")
    run_foreground(port, script, latency_ms, api_key, announce=lambda line: print(line, flush=True))
