"""Repair the almost-JSON that models write, in pure code (no LLM, no eval).

CallNavi washed unparsable outputs with a GPT-4o prompt; fcbench repairs the usual defects
deterministically instead, and says which repairs it made so that "valid only after repair" can
be counted apart from "valid as written":

- `code_fence`: the JSON is inside a Markdown ``` block;
- `surrounding_text`: prose before the first `{`/`[` or after the value ends;
- `python_literals`: True / False / None;
- `single_quotes`: 'strings' instead of "strings";
- `unquoted_keys`: {API: [...]} (and bare words as values, quoted as strings);
- `trailing_commas`: [1, 2,] and {"a": 1,};
- `numbers`: .5, -.5, 1. (spellings JSON refuses);
- `truncated`: an unterminated string and unclosed brackets at the end of the text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(?P<body>.*?)(?:```|$)", re.DOTALL)
_WORD_START = re.compile(r"[A-Za-z_$]")
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$\-.]*")
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}
_JSON_LITERALS = {"true", "false", "null"}
_CLOSER = {"{": "}", "[": "]"}


@dataclass(frozen=True)
class JsonRepair:
    """The outcome of `repair_json`: the parsed value (when `ok`) and the repairs that were needed."""

    ok: bool
    value: Any = None
    repairs: tuple[str, ...] = ()
    error: str = ""

    @property
    def repaired(self) -> bool:
        return bool(self.repairs)


def repair_json(text: str) -> JsonRepair:
    """Parse `text` as JSON, repairing it when it does not parse as written."""
    try:
        return JsonRepair(True, json.loads(text))
    except (json.JSONDecodeError, TypeError):
        pass
    repairs: list[str] = []
    body = _strip_fence(text, repairs)
    body = _from_first_bracket(body, repairs)
    if body is None:
        return JsonRepair(False, repairs=tuple(repairs), error="no JSON object or array in the text")
    rewritten = _rewrite(body, repairs)
    try:
        value, end = json.JSONDecoder().raw_decode(rewritten)
    except json.JSONDecodeError as exc:
        return JsonRepair(False, repairs=tuple(repairs), error=str(exc))
    if rewritten[end:].strip():
        repairs.append("surrounding_text")
    return JsonRepair(True, value, tuple(dict.fromkeys(repairs)))


def _strip_fence(text: str, repairs: list[str]) -> str:
    match = _FENCE.search(text)
    if match is None:
        return text
    repairs.append("code_fence")
    return match.group("body")


def _from_first_bracket(text: str, repairs: list[str]) -> str | None:
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    if text[:start].strip():
        repairs.append("surrounding_text")
    return text[start:]


def _rewrite(text: str, repairs: list[str]) -> str:
    """One pass over the text, outside strings rewriting what JSON does not allow."""
    return _Rewriter(text, repairs).run()


class _Rewriter:
    """Copies tokens to `out`, tracking the open brackets and whether a key is expected."""

    def __init__(self, text: str, repairs: list[str]) -> None:
        self.text = text
        self.repairs = repairs
        self.out: list[str] = []
        self.stack: list[list[Any]] = []  # [opener, expecting_key]
        self.last_token_was_key = False

    def run(self) -> str:
        text, i = self.text, 0
        while i < len(text):
            char = text[i]
            if char in "\"'":
                self.last_token_was_key = self._expecting_key()
                i = _copy_string(text, i, self.out, self.repairs)
                continue
            if char in "{[":
                self.stack.append([char, char == "{"])
                self.out.append(char)
            elif char in "}]":
                _drop_trailing_comma(self.out, self.repairs)
                if self.stack:
                    self.stack.pop()
                self.out.append(char)
                if not self.stack:
                    self.out.append(text[i + 1 :])  # the value is complete: the rest is surrounding text
                    return "".join(self.out)
            elif char in "-." or char.isdigit():
                number = _NUMBER.match(text, i)
                token = number.group(0) if number else char
                self.out.append(_json_number(token, self.repairs))
                i += len(token)
                continue
            elif _WORD_START.match(char):
                self.last_token_was_key = False
                i = _copy_word(text, i, self.out, self.repairs)
                continue
            else:
                self._separator(char)
                self.out.append(char)
            i += 1
        self._close_truncated()
        return "".join(self.out)

    def _expecting_key(self) -> bool:
        return bool(self.stack) and self.stack[-1][0] == "{" and self.stack[-1][1]

    def _separator(self, char: str) -> None:
        if self.stack and self.stack[-1][0] == "{" and char in ",:":
            self.stack[-1][1] = char == ","

    def _close_truncated(self) -> None:
        if not self.stack:
            return
        self.repairs.append("truncated")
        _drop_trailing_comma(self.out, self.repairs)
        last = self.out[_last_significant_index(self.out)].rstrip() if self.out else ""
        if last.endswith(":"):
            self.out.append(" null")  # a key whose value was cut off
        elif last.endswith('"') and self.last_token_was_key and self._expecting_key():
            self.out.append(": null")  # a key cut off before its colon
        self.out.extend(_CLOSER[opener] for opener, _ in reversed(self.stack))


def _json_number(token: str, repairs: list[str]) -> str:
    """`.5` -> `0.5`, `-.5` -> `-0.5`, `1.` -> `1.0` (JavaScript/Python spellings JSON refuses)."""
    fixed = re.sub(r"^(-?)\.", r"\g<1>0.", token)
    fixed = re.sub(r"\.(?=$|[eE])", ".0", fixed)
    if fixed != token:
        repairs.append("numbers")
    return fixed


def _copy_string(text: str, start: int, out: list[str], repairs: list[str]) -> int:
    """Copy a string literal as a double-quoted JSON string; return the index after it."""
    quote = text[start]
    if quote == "'":
        repairs.append("single_quotes")
    chars = ['"']
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            escaped = text[i + 1]
            # \' is not a JSON escape: it becomes a plain quote.
            chars.append("'" if escaped == "'" else char + escaped)
            i += 2
            continue
        if char == quote:
            chars.append('"')
            out.append("".join(chars))
            return i + 1
        if char == '"':  # a double quote inside a single-quoted string
            chars.append('\\"')
        elif char == "\n":
            chars.append("\\n")
        else:
            chars.append(char)
        i += 1
    repairs.append("truncated")
    chars.append('"')
    out.append("".join(chars))
    return i


def _copy_word(text: str, start: int, out: list[str], repairs: list[str]) -> int:
    word = _WORD.match(text, start).group(0)
    end = start + len(word)
    if _next_significant(text, end) == ":":
        repairs.append("unquoted_keys")
        out.append(json.dumps(word))
    elif word in _JSON_LITERALS:
        out.append(word)
    elif word in _PYTHON_LITERALS:
        repairs.append("python_literals")
        out.append(_PYTHON_LITERALS[word])
    else:
        repairs.append("unquoted_keys")  # a bare word used as a value: read it as a string
        out.append(json.dumps(word))
    return end


def _next_significant(text: str, index: int) -> str:
    while index < len(text) and text[index].isspace():
        index += 1
    return text[index] if index < len(text) else ""


def _last_significant_index(out: list[str]) -> int:
    for index in range(len(out) - 1, -1, -1):
        if out[index].strip():
            return index
    return -1


def _drop_trailing_comma(out: list[str], repairs: list[str]) -> None:
    index = _last_significant_index(out)
    if index >= 0 and out[index].rstrip().endswith(","):
        out[index] = out[index].rstrip()[:-1]
        repairs.append("trailing_commas")
