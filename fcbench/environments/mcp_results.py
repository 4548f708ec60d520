"""What an MCP tool result becomes in a sample, and the fixed paths a sandbox is shown as (pure).

A `tools/call` result is `{"content": [blocks], "structuredContent": ..., "isError": bool}`. The
response a sample records (and later calls reference, `$var_1.target.datetime$`) is:
1. `isError: true`: a failed call (`tool_error`) whose message is the result's text;
2. `structuredContent` when the server gives it (every tool with an output schema must);
3. otherwise the text blocks, read per server (`text_results`): `auto` parses JSON when the text is
   JSON and keeps the text otherwise, `json` requires JSON (a text that is not is an
   `unexpected_response`), `python` reads a Python literal (sqlite prints rows as Python reprs;
   `ast.literal_eval` evaluates no code), `text` keeps the text;
4. a result with images, audio or resources keeps its content blocks: `{"content": [...]}`.
A server that reports errors in plain text with `isError: false` (sqlite's "Error: ...") names a
pattern (`error_text`) that makes such a text a tool error.

Sandboxes live in temporary folders whose names change from run to run; the filesystem server
writes absolute paths into its answers. Responses show each sandbox folder as a fixed alias
(`/workspace`), and a path argument given with the alias is sent with the real folder, so a
recording made in one sandbox replays in any other.

Recordings of stateful servers are keyed by the sample's earlier calls to the same server
(`state_key`): `read_text_file("a.txt")` after a `write_file` is another call than before it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from fcbench.environments import CallOutcome, ErrorReason

TEXT_RESULT_MODES = ("auto", "json", "python", "text")


@dataclass(frozen=True)
class ResultReading:
    """How one server's results are read (from its `McpServerConfig`)."""

    text_results: str = "auto"
    error_text: re.Pattern[str] | None = None


def result_text(result: Mapping[str, Any]) -> str:
    blocks = result.get("content") or []
    return "\n".join(block.get("text", "") for block in blocks if isinstance(block, dict) and block.get("type") == "text")


def result_outcome(result: Mapping[str, Any], reading: ResultReading, where: str) -> CallOutcome:
    """The sample's view of one `tools/call` result (see the module docstring)."""
    text = result_text(result)
    if result.get("isError"):
        message = text.strip() or "the tool reported an error without a message"
        return CallOutcome.failure(ErrorReason.TOOL_ERROR, f"{where}: {message}", {"error": message})
    if "structuredContent" in result:
        return CallOutcome.success(result["structuredContent"])
    blocks = result.get("content") or []
    if reading.error_text is not None and reading.error_text.search(text):
        return CallOutcome.failure(ErrorReason.TOOL_ERROR, f"{where}: {text.strip()}", {"error": text.strip()})
    if any(isinstance(block, dict) and block.get("type") != "text" for block in blocks):
        return CallOutcome.success({"content": list(blocks)})
    mode = reading.text_results
    if mode == "text":
        return CallOutcome.success(text)
    if mode == "python":
        try:
            return CallOutcome.success(_plain_json(ast.literal_eval(text)))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return CallOutcome.failure(ErrorReason.UNEXPECTED_RESPONSE, f"{where}: the result is not a Python literal: "
                                       f"{_short(text)}")
    try:
        return CallOutcome.success(json.loads(text))
    except ValueError:
        if mode == "json":
            return CallOutcome.failure(ErrorReason.UNEXPECTED_RESPONSE, f"{where}: the result is not JSON: {_short(text)}")
        return CallOutcome.success(text)


def _plain_json(value: Any) -> Any:
    """A Python literal as JSON values: tuples become lists, sets sorted lists, other keys strings."""
    if isinstance(value, dict):
        return {str(key): _plain_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_json(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain_json(item) for item in value), key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, complex):
        raise TypeError("a complex number is not JSON")
    return value


def _short(text: str, limit: int = 120) -> str:
    text = text.strip().replace("\n", " ")
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


# ---------------------------------------------------------------------------------- path aliases
@dataclass(frozen=True)
class PathAliases:
    """Real sandbox folders <-> the fixed paths samples show; longest real path first."""

    pairs: tuple[tuple[str, str], ...]  # (real, alias)

    @classmethod
    def of(cls, real_to_alias: Iterable[tuple[str, str]]) -> "PathAliases":
        pairs = {real.rstrip("/") or "/": alias.rstrip("/") for real, alias in real_to_alias}
        return cls(tuple(sorted(pairs.items(), key=lambda pair: -len(pair[0]))))

    def to_alias(self, value: Any) -> Any:
        """Every real sandbox path inside any string of a response, written as its alias."""
        if not self.pairs:
            return value
        if isinstance(value, str):
            for real, alias in self.pairs:
                if real in value:
                    value = re.sub(re.escape(real) + r"(?![\w.-])", lambda _: alias, value)
            return value
        if isinstance(value, list):
            return [self.to_alias(item) for item in value]
        if isinstance(value, dict):
            return {key: self.to_alias(item) for key, item in value.items()}
        return value

    def to_real(self, value: Any) -> Any:
        """Argument strings that are an alias path (the alias, or under it) with the real folder.
        Only whole path-shaped strings change: text that merely mentions the alias is sent as written."""
        if not self.pairs:
            return value
        if isinstance(value, str):
            for real, alias in sorted(self.pairs, key=lambda pair: -len(pair[1])):
                if value == alias or value.startswith(alias + "/"):
                    return real + value[len(alias):]
            return value
        if isinstance(value, list):
            return [self.to_real(item) for item in value]
        if isinstance(value, dict):
            return {key: self.to_real(item) for key, item in value.items()}
        return value


# ------------------------------------------------------------------------------------ state keys
def state_key(earlier_calls: Sequence[str]) -> str:
    """The recording key's state part for a call of a stateful server: a digest of the canonical
    keys of the sample's earlier successful calls to that server ("" for the first one, so a
    sample's first call is keyed like any stateless call)."""
    if not earlier_calls:
        return ""
    digest = hashlib.sha256("\n".join(earlier_calls).encode("utf-8")).hexdigest()
    return digest[:16]
