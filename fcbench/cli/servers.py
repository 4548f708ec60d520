"""Servers: the local Label Studio (studio) and the mock OpenAI-compatible LLM server (mock-llm)."""

from __future__ import annotations

import functools

from pathlib import Path
from typing import Any, Optional

import typer

from fcbench.cli.common import (JsonOption, PIPELINES_FILE, PipelinesFileOption, _load_pipeline, app, console, print_json,
                                user_errors)
from fcbench.errors import UserError

PANEL = "Servers"
command = functools.partial(app.command, rich_help_panel=PANEL)


# ------------------------------------------------------------------------------ studio (Label Studio)
studio_app = typer.Typer(help="The local Label Studio server annotators work in (loopback only, own data dir).",
                         no_args_is_help=True)
app.add_typer(rich_help_panel=PANEL, typer_instance=studio_app, name="studio")


def _studio_config(studio_dir: Optional[Path], port: Optional[int] = None, database: str = "sqlite"):
    from annotate.studio.server import DEFAULT_PORT, StudioConfig, default_studio_dir, read_state

    root = studio_dir or default_studio_dir()
    if port is None:  # stop/status and a restart use the port the server was started on
        state = read_state(StudioConfig(root=root))
        port = int(state["port"]) if state else DEFAULT_PORT
    if database not in ("sqlite", "postgresql"):
        raise UserError(f"unknown database {database!r}; choose sqlite or postgresql")
    return StudioConfig(root=root, port=port, database=database)  # type: ignore[arg-type]


def _print_studio_status(status: Any, as_json: bool, config: Any = None, receiver: Any = None) -> None:
    login = _login(config) if config is not None and status.running else None
    if as_json:
        data = status.as_dict()
        if login:
            data["login"] = login
        if receiver is not None:
            data["webhook"] = receiver.as_dict()
        print_json(data)
        return
    state = "running" if status.running and status.healthy else ("not answering" if status.running else "stopped")
    where = f" at {status.url} (pid {status.pid})" if status.running else ""
    console.print(f"studio {state}{where}; data in {status.root}", highlight=False, soft_wrap=True)
    if login:
        console.print(f"log in at {login['url']} as {login['username']} (password: \"password\" in "
                      f"{login['credentials']}; annotator accounts are listed there too)", highlight=False,
                      soft_wrap=True, markup=False)
    if receiver is not None:
        _print_receiver(receiver)


def _login(config: Any) -> dict[str, str] | None:
    """Who to log in as (never the password itself: it stays in the 0600 credentials file)."""
    from annotate.studio.server import StudioError, read_credentials

    try:
        username = read_credentials(config).username
    except (StudioError, OSError, ValueError, KeyError):
        return None
    return {"url": f"{config.url}/user/login/", "username": username, "credentials": str(config.credentials_file)}


def _print_receiver(receiver: Any) -> None:
    if receiver.running:
        console.print(f"webhook receiver for pipeline {receiver.pipeline} at {receiver.url} (pid {receiver.pid})"
                      + ("" if receiver.healthy else ", not answering"), highlight=False, soft_wrap=True)
    else:
        console.print("webhook receiver: not running (build-dataset studio webhook PIPELINE)", highlight=False,
                      soft_wrap=True)


@studio_app.command("start", epilog="Examples:\n\n  build-dataset studio start --port 8089\n\n"
                    "  build-dataset studio start --database postgresql --dir /srv/fcbench-studio\n\n"
                    "Install the server first (own venv): annotate/studio/install_studio.sh")
@user_errors
def studio_start(
    port: Optional[int] = typer.Option(None, "--port", help="Port on 127.0.0.1 [default: last used, else 8089]."),
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder [default: $FCBENCH_STUDIO_DIR "
                                              "or ~/.local/share/fcbench/studio]."),
    database: str = typer.Option("sqlite", "--database", help="sqlite, or postgresql: the server in "
                                 "$FCBENCH_STUDIO_DATABASE_URL (postgresql://user:password@host:port/name), else "
                                 "the studio's own PostgreSQL under <dir>/postgres (Debian's postgresql, "
                                 "127.0.0.1, started and stopped with the studio)."),
    webhook: Optional[str] = typer.Option(None, "--webhook", help="Also start the webhook receiver that checks "
                                          "this pipeline's annotations as they are submitted (see studio webhook)."),
    file: PipelinesFileOption = PIPELINES_FILE,
    as_json: JsonOption = False,
) -> None:
    """Start Label Studio on loopback with its own data dir, an admin and an API token.

    Prints the URL and the user to log in as. The admin password and token are created on the
    first start and kept in <dir>/credentials.json (mode 0600); neither is printed. Analytics and
    update checks are off, sign-up is closed. A fresh database takes about half a minute (migrations)."""
    from annotate.studio.server import start

    config = _studio_config(studio_dir, port, database)
    status = start(config)
    receiver = _start_receiver(config, webhook, file) if webhook else None
    _print_studio_status(status, as_json, config, receiver)


def _start_receiver(config: Any, pipeline: str, file: Path) -> Any:
    from annotate.webhook import start_receiver

    _load_pipeline(pipeline, file)  # a typo in the name is one clear error here, not a dead background process
    return start_receiver(config, pipeline, file)


@studio_app.command("stop", epilog="Example:  build-dataset studio stop")
@user_errors
def studio_stop(
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder."),
    as_json: JsonOption = False,
) -> None:
    """Stop the Label Studio server started from this studio folder (its data is kept), and its
    webhook receiver."""
    from annotate.studio.server import stop
    from annotate.webhook import stop_receiver

    config = _studio_config(studio_dir)
    stop_receiver(config)
    stopped = stop(config)
    if as_json:
        print_json({"stopped": stopped})
    else:
        print("studio stopped" if stopped else "studio was not running")


@studio_app.command("status", epilog="Example:  build-dataset studio status --json")
@user_errors
def studio_status(
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder."),
    as_json: JsonOption = False,
) -> None:
    """Say whether the studio's server and its webhook receiver run and answer, where, and who to log in as."""
    from annotate.studio.server import status
    from annotate.webhook import receiver_status

    config = _studio_config(studio_dir)
    _print_studio_status(status(config), as_json, config, receiver_status(config))


@studio_app.command("webhook", epilog="Examples:\n\n  build-dataset studio webhook travel\n\n"
                    "  build-dataset studio webhook travel --stop\n\n"
                    "  build-dataset studio start --webhook travel   (the server and the receiver at once)")
@user_errors
def studio_webhook(
    pipeline: str = typer.Argument(..., help="The pipeline whose stage2 and junior-fill projects are checked."),
    file: PipelinesFileOption = PIPELINES_FILE,
    studio_dir: Optional[Path] = typer.Option(None, "--dir", help="Studio folder."),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="Port on 127.0.0.1 (0 picks a free one)."),
    stop: bool = typer.Option(False, "--stop", help="Stop the receiver instead."),
    foreground: bool = typer.Option(False, "--foreground", help="Run in this terminal until Ctrl-C (the background "
                                    "process runs this)."),
    as_json: JsonOption = False,
) -> None:
    """Check every annotation as it is submitted or updated, and show the result on its task.

    Starts a receiver in the background (one per studio, on a free loopback port; pid, URL and
    secret in <dir>/webhook.json, log in <dir>/webhook.log) and registers a Label Studio webhook
    on the pipeline's stage2 and junior-fill projects (projects pushed later are found within
    seconds). Each annotation gets pull's own checks (JSON, schema, references, re-execution in
    the pipeline's environment); the verdict goes to the task's feedback and its verdict, rework
    and annotator columns, and a task that needs fixing goes back to the queue of the annotator who
    submitted it until their annotation passes. `pull` still reads every annotation and decides:
    with the receiver down nothing is lost. `studio stop` stops it with the server."""
    from annotate.webhook import receiver_status, stop_receiver

    config = _studio_config(studio_dir)
    if stop:
        stopped = stop_receiver(config)
        if as_json:
            print_json({"stopped": stopped})
        else:
            print("webhook receiver stopped" if stopped else "webhook receiver was not running")
        return
    if foreground:
        _serve_receiver(config, pipeline, file, port)
        return
    from annotate.webhook import start_receiver

    _load_pipeline(pipeline, file)
    start_receiver(config, pipeline, file, port)
    receiver = receiver_status(config)
    if as_json:
        print_json(receiver.as_dict())
    else:
        _print_receiver(receiver)


def _serve_receiver(config: Any, pipeline_name: str, file: Path, port: int) -> None:
    from annotate.studio.client import resolve_connection
    from annotate.stage3.junior import junior_project_title
    from annotate.stage2.senior import project_title
    from annotate.webhook import serve_receiver

    pipeline = _load_pipeline(pipeline_name, file)
    serve_receiver(config, pipeline, [project_title(pipeline), junior_project_title(pipeline)],
                   resolve_connection(config), port)


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
