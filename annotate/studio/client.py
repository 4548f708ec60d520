"""Connecting to a Label Studio server: where it is, which token, and the SDK client.

The token comes from, in order: FCBENCH_LS_TOKEN (environment), the file named by
FCBENCH_LS_TOKEN_FILE (must be 0600), or the local studio's credentials file (0600, written by
`studio start`). It is never printed; `Connection.__repr__` hides it. The URL comes from
FCBENCH_LS_URL, else the local studio's server.json.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from annotate.studio.server import StudioConfig, StudioError, read_credentials, read_state

# Connection reuse against Label Studio's development server stalled each request by ~40 ms here;
# a fresh connection per request is faster overall.
_HEADERS = {"Connection": "close"}
REQUEST_TIMEOUT_S = 300.0  # a 1,000-task import or a snapshot download takes seconds, not minutes


@dataclass(frozen=True)
class Connection:
    url: str
    token: str = field(repr=False)


def read_token_file(path: Path) -> str:
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise StudioError(f"{path}: permissions {mode:o} are too open for a token; run chmod 600 {path}")
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise StudioError(f"{path}: the token file is empty")
    return token


def resolve_connection(studio: StudioConfig | None = None) -> Connection:
    studio = studio or StudioConfig()
    url = os.environ.get("FCBENCH_LS_URL")
    if not url:
        state = read_state(studio)
        if not state:
            raise StudioError(f"no Label Studio URL: set FCBENCH_LS_URL or run build-dataset studio start "
                              f"(studio dir {studio.root})")
        if state.get("pid") is None:
            raise StudioError(f"the studio in {studio.root} is stopped: run build-dataset studio start")
        url = str(state["url"])
    token = os.environ.get("FCBENCH_LS_TOKEN")
    if not token and os.environ.get("FCBENCH_LS_TOKEN_FILE"):
        token = read_token_file(Path(os.environ["FCBENCH_LS_TOKEN_FILE"]).expanduser())
    if not token:
        token = read_credentials(studio).token
    return Connection(url.rstrip("/"), token)


def open_client(connection: Connection) -> Any:
    """A `label_studio_sdk.LabelStudio` for the connection (imported here: the SDK is slow to import)."""
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=connection.url, api_key=connection.token, headers=dict(_HEADERS),
                       timeout=REQUEST_TIMEOUT_S)


def raw_request(client: Any, method: str, path: str, **kwargs: Any) -> Any:
    """An HTTP call the SDK has no method for (config validation without a project), made with the
    SDK's own HTTP client so authentication (legacy token or personal access token) is the same."""
    # the SDK exposes no public generic request method; its wrapper adds the auth headers itself
    return client._client_wrapper.httpx_client.request(path, method=method, **kwargs)


class ServerError(StudioError):
    """The server could not be reached or refused a request; nothing half-done is recorded as done."""


@contextmanager
def server_errors(connection: Connection, doing: str) -> Iterator[None]:
    """Turn transport and API errors into one clear line naming the server and what was being done
    (a stopped server mid-pull must not print a traceback of httpx internals)."""
    import httpx
    from label_studio_sdk.core.api_error import ApiError

    try:
        yield
    except httpx.TransportError as exc:
        raise ServerError(f"Label Studio at {connection.url} stopped answering while {doing} "
                          f"({type(exc).__name__}); nothing was lost: re-run the command when it is back "
                          "(build-dataset studio status)") from None
    except ApiError as exc:
        raise ServerError(f"Label Studio at {connection.url} refused a request while {doing}: "
                          f"HTTP {exc.status_code}: {_short_body(exc.body)}") from None


def _short_body(body: Any, limit: int = 300) -> str:
    text = body if isinstance(body, str) else repr(body)
    if "<html" in text[:200].lower() or "<!doctype" in text[:200].lower():
        return "(an HTML error page)"
    return text if len(text) <= limit else text[:limit] + "…"
