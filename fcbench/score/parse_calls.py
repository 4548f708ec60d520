"""Reading function calls out of raw model text (pure: no I/O, never `eval`).

Models do not answer in one clean shape. The real NESTful prediction files alone show: a bare JSON
list; a list after paragraphs of reasoning; a list inside a code fence; one JSON object per line;
several one-call lists in a row; a single object instead of a list; `Thought: ... Action: {...}`
blocks; lists cut off mid-way; Python-isms such as `1/7` as a value. `parse_calls` recovers every
call it can from all of these and says when it found none.

How: the text is cleaned of chat-template tags, think blocks and code fences; if it is one JSON value
that value is read; otherwise the text is scanned for JSON values (each `[` or `{` where a value
decodes) and the calls in all of them are concatenated in order, because models that split their
answer (one list per step, one object per line) mean the whole sequence. Where JSON fails, the same
bracketed span is read as a Python literal with `ast` (literal nodes only, plus arithmetic between
number literals, so `1/7` becomes 0.142857...); a text with no JSON at all may still hold Python-style
calls `add(arg_0=1, arg_1=2)`, also read with `ast`.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

Call = dict[str, Any]  # {"name": str, "arguments": dict, "label"?: str}


@dataclass(frozen=True)
class ParsedCalls:
    """The calls read from one text. `ok` is False when the text held no readable answer at all;
    an explicit empty list (`[]`, "no call is needed") is ok with no calls."""

    calls: list[Call] = field(default_factory=list)
    ok: bool = True
    error: str | None = None


def parse_calls(text: str) -> ParsedCalls:
    """Recover the function calls a model wrote, whatever the surrounding shape."""
    if not isinstance(text, str):
        return ParsedCalls(ok=False, error=f"generated text is {type(text).__name__}, not a string")
    cleaned = clean_model_text(text)
    if not cleaned:
        return ParsedCalls(ok=False, error="empty text")

    whole = _read_json_or_literal(cleaned)
    if whole is not _NOT_READ:
        calls = calls_in_value(whole)
        if calls or whole == []:
            return ParsedCalls(calls=calls)

    calls: list[Call] = []
    saw_empty_list = False
    for value in scan_values(cleaned):
        calls.extend(calls_in_value(value))
        saw_empty_list = saw_empty_list or value == []
    if calls:
        return ParsedCalls(calls=calls)

    python_calls = _python_style_calls(cleaned)
    if python_calls:
        return ParsedCalls(calls=python_calls)
    if saw_empty_list:
        return ParsedCalls(calls=[])
    return ParsedCalls(ok=False, error="no function call found in the text")


def parse_whole_json(text: str) -> tuple[bool, Any]:
    """The whole text as one JSON value, as NESTful's reference scorer reads a generic model's
    output (its plain-JSON parser: `json.loads` of the stripped text, then once more with newlines
    and `\\_` escapes removed). Returns (False, None) when that fails; nothing else is tried."""
    if not isinstance(text, str):
        return False, None
    stripped = text.strip()
    for candidate in (stripped, stripped.replace("\n", "").replace("\\_", "_")):
        try:
            return True, json.loads(candidate)
        except ValueError:
            continue
    return False, None


# --- cleaning -------------------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
# Chat-template and tool-call tags that wrap calls without being part of them.
_TAGS = re.compile(r"<\|[^|>]*\|>|</?tool_call>|</?think>|</?function_call>")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*")


def clean_model_text(text: str) -> str:
    """Drop what is never a call: closed think blocks (drafts the model did not commit to),
    template tags and code-fence markers."""
    text = _THINK_BLOCK.sub("\n", text)
    text = _TAGS.sub("\n", text)
    text = _FENCE.sub("\n", text)
    return text.strip()


# --- finding values in text -----------------------------------------------------------------------

_NOT_READ = object()
_OPENERS = re.compile(r"[\[{]")


def scan_values(text: str) -> Iterator[Any]:
    """Yield each JSON (or Python-literal) value that starts at a `[` or `{`, left to right,
    skipping over a value once read so its inner objects are not read twice."""
    decoder = json.JSONDecoder()
    position = 0
    while True:
        match = _OPENERS.search(text, position)
        if match is None:
            return
        start = match.start()
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            value, end = _literal_span(text, start)
        if value is _NOT_READ:
            position = start + 1
            continue
        yield value
        position = end


def _literal_span(text: str, start: int) -> tuple[Any, int]:
    """Read the bracketed span starting at `start` as a Python literal; (_NOT_READ, start) if not."""
    end = _matching_bracket_end(text, start)
    if end is None:
        return _NOT_READ, start
    value = _read_literal(text[start:end])
    return value, end


def _matching_bracket_end(text: str, start: int) -> int | None:
    """Index just past the bracket closing the one at `start`, skipping quoted strings."""
    depth = 0
    quote: str | None = None
    index = start
    while index < len(text):
        char = text[index]
        if quote is not None:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


def _read_json_or_literal(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _read_literal(text)


# --- safe literal reading (ast, never eval) -------------------------------------------------------

_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
# JSON spellings a Python parser sees as names.
_NAMED_CONSTANTS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


class _NotLiteral(Exception):
    pass


def _read_literal(text: str) -> Any:
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _literal(tree.body)
    except (SyntaxError, ValueError, _NotLiteral, ZeroDivisionError, RecursionError, OverflowError):
        return _NOT_READ


def _literal(node: ast.AST) -> Any:
    """Value of a literal node: constants, lists, tuples, dicts, and + - * / between numbers
    (models write `1/7` for a value). Anything else (names, calls, sets...) is refused."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMED_CONSTANTS:
        return _NAMED_CONSTANTS[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):  # `**spread`
            raise _NotLiteral("dict unpacking")
        return {_dict_key(key): _literal(value) for key, value in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _number(_literal(node.operand))
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_number(_literal(node.left)), _number(_literal(node.right)))
    raise _NotLiteral(type(node).__name__)


def _dict_key(node: ast.AST | None) -> str:
    key = _literal(node) if node is not None else None
    if not isinstance(key, str):
        raise _NotLiteral("non-string key")
    return key


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _NotLiteral("arithmetic on a non-number")
    return value


# --- from values to calls -------------------------------------------------------------------------


def calls_in_value(value: Any) -> list[Call]:
    """The calls a decoded value holds: a call object, a list of them (or of one-call lists, as
    models write step by step), or a `{"tool_calls": [...]}` wrapper. Other values hold none."""
    if isinstance(value, dict):
        wrapped = value.get("tool_calls")
        if isinstance(wrapped, list):
            return calls_in_value(wrapped)
        call = normalize_call(value)
        return [call] if call is not None else []
    if isinstance(value, list):
        calls: list[Call] = []
        for item in value:
            if isinstance(item, (dict, list)):
                calls.extend(calls_in_value(item))
        return calls
    return []


def normalize_call(obj: dict[str, Any]) -> Call | None:
    """`{"name", "arguments", "label"?}` from the spellings models use (NESTful's `arguments` or
    `parameters`, OpenAI's `{"function": {"name", "arguments": "<json>"}}`); None if not a call.
    A tool spec echoed back (it has a description or output parameters) is not a call."""
    if isinstance(obj.get("function"), dict):
        inner = dict(obj["function"])
        if "label" in obj and "label" not in inner:
            inner["label"] = obj["label"]
        obj = inner
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    if "description" in obj or "output_parameters" in obj:
        return None
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        arguments = _json_object_or_none(arguments)
    call: Call = {"name": name, "arguments": arguments if isinstance(arguments, dict) else {}}
    if isinstance(obj.get("label"), str):
        call["label"] = obj["label"]
    return call


def _json_object_or_none(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# --- Python-style calls ---------------------------------------------------------------------------


def _python_style_calls(text: str) -> list[Call]:
    """Calls written as Python, `[add(arg_0=1), f(x=2)]` or one per line, read with `ast`.
    Positional arguments become `arg_0`, `arg_1`... (NESTful's own naming for unnamed inputs)."""
    calls = _calls_in_python(text)
    if calls:
        return calls
    found: list[Call] = []
    for line in text.splitlines():
        found.extend(_calls_in_python(line))
    return found


def _calls_in_python(source: str) -> list[Call]:
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return []
    body = tree.body
    nodes = body.elts if isinstance(body, (ast.List, ast.Tuple)) else [body]
    calls: list[Call] = []
    for node in nodes:
        call = _python_call(node)
        if call is None:
            return []
        calls.append(call)
    return calls


def _python_call(node: ast.AST) -> Call | None:
    if not isinstance(node, ast.Call):
        return None
    name = _dotted_name(node.func)
    if name is None:
        return None
    try:
        arguments = {f"arg_{index}": _literal(arg) for index, arg in enumerate(node.args)}
        for keyword in node.keywords:
            if keyword.arg is None:  # `**kwargs`
                return None
            arguments[keyword.arg] = _literal(keyword.value)
    except (_NotLiteral, ZeroDivisionError, OverflowError):
        return None
    return {"name": name, "arguments": arguments}


def _dotted_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        prefix = _dotted_name(node.value)
        return f"{prefix}.{node.attr}" if prefix else None
    return None
