"""Python-call strings such as `cd(folder='document')` or `Telecom.ViewAccount(to=['a@b.com'])`:
parsing them into a name and literal arguments, and spelling them back (pure, no I/O).

BFCL multi-turn ground truth and CONFETTI dialog-act content publish gold calls this way. The text
is data, never code: it is parsed with `ast.parse(mode="eval")` and every argument node goes through
`ast.literal_eval`, so nothing is ever evaluated. Anything that is not a plain call of a (dotted)
name with literal arguments is refused with a `CallSyntaxError`.
"""

from __future__ import annotations

import ast
import io
import keyword
import math
import tokenize
from dataclasses import dataclass, field
from typing import Any

# Published strings separate arguments either way (`a(x=1, y=2)` and `a(x=1,y=2)`).
DEFAULT_SEPARATOR = ", "
SEPARATORS = (", ", ",")

# Reserved words used as keyword names (CONFETTI writes `book_flight(..., class=['Economy'])`) are
# renamed to this prefix + word before `ast.parse`, which would otherwise refuse the string.
_RESERVED_PLACEHOLDER = "fcbench_reserved__"


class CallSyntaxError(ValueError):
    """The string is not a call of a (dotted) name with literal arguments."""


@dataclass(frozen=True)
class ParsedCall:
    name: str
    positional: list[Any] = field(default_factory=list)
    keywords: dict[str, Any] = field(default_factory=dict)  # in source order


def parse_call(text: str) -> ParsedCall:
    """Parse one call string; raise `CallSyntaxError` (with the reason) for anything else."""
    source, renamed = _rename_reserved_keywords(text.strip())
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise CallSyntaxError(f"not a call: {exc.msg}: {text!r}") from None
    node = tree.body
    if not isinstance(node, ast.Call):
        raise CallSyntaxError(f"not a call: {text!r}")
    name = _dotted_name(node.func)
    if name is None:
        raise CallSyntaxError(f"the called thing is not a (dotted) name: {text!r}")
    positional = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise CallSyntaxError(f"*args is not a literal argument: {text!r}")
        positional.append(_literal(arg, text))
    keywords: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise CallSyntaxError(f"**kwargs is not a literal argument: {text!r}")
        arg_name = renamed.get(kw.arg, kw.arg)
        keywords[arg_name] = _literal(kw.value, text)
    return ParsedCall(name=name, positional=positional, keywords=keywords)


def format_call(call: ParsedCall, separator: str = DEFAULT_SEPARATOR) -> str:
    """Spell a call back as Python-call text (keyword names are written as they are)."""
    parts = [format_value(value) for value in call.positional]
    parts += [f"{name}={format_value(value)}" for name, value in call.keywords.items()]
    return f"{call.name}({separator.join(parts)})"


def format_value(value: Any) -> str:
    """Python literal spelling of a JSON value (`True`, `None`, `'text'`, `[1, 2]`)."""
    if isinstance(value, list):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def separator_reproducing(text: str, call: ParsedCall) -> str | None:
    """The argument separator with which `format_call` gives `text` back exactly, if any."""
    for separator in SEPARATORS:
        if format_call(call, separator) == text:
            return separator
    return None


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _dotted_name(node.value)
        return None if owner is None else f"{owner}.{node.attr}"
    return None


def _literal(node: ast.expr, text: str) -> Any:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise CallSyntaxError(f"argument is not a literal ({ast.unparse(node)}): {text!r}") from None
    return _json_value(value, text)


def _json_value(value: Any, text: str) -> Any:
    """Literal values as JSON can hold them: tuples become lists; sets, bytes, complex are refused."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CallSyntaxError(f"non-finite number has no JSON form: {text!r}")
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(item, text) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise CallSyntaxError(f"dict with non-string keys has no JSON form: {text!r}")
        return {key: _json_value(item, text) for key, item in value.items()}
    raise CallSyntaxError(f"{type(value).__name__} value has no JSON form: {text!r}")


def _rename_reserved_keywords(text: str) -> tuple[str, dict[str, str]]:
    """Rename `class=`-style keyword arguments so `ast.parse` accepts the string.

    Returns the rewritten source and {placeholder: original word}. Tokens are located by
    `tokenize`, so a reserved word inside a string literal is never touched.
    """
    try:
        tokens = [tok for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                  if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text, {}  # let ast.parse report the problem
    line_starts = _line_offsets(text)
    edits: list[tuple[int, int, str]] = []
    renamed: dict[str, str] = {}
    for before, token, after in zip(tokens, tokens[1:], tokens[2:]):
        is_keyword_name = (token.type == tokenize.NAME and keyword.iskeyword(token.string)
                           and before.string in ("(", ",") and after.string == "=")
        if is_keyword_name:
            placeholder = _RESERVED_PLACEHOLDER + token.string
            renamed[placeholder] = token.string
            start = line_starts[token.start[0] - 1] + token.start[1]
            edits.append((start, start + len(token.string), placeholder))
    for start, end, replacement in reversed(edits):
        text = text[:start] + replacement + text[end:]
    return text, renamed


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets
