"""JSON syntax errors told the way an annotator can fix them.

`json` reports where the parser gave up, in its own words: a path missing one `]` reads
"Expecting ',' delimiter", pointing far from the bracket. Brackets are checked first (outside
strings), so an unclosed or unmatched bracket is named with the line and column where it was
opened or found; anything else keeps the parser's message with its line and column.
Pure; no I/O.
"""

from __future__ import annotations

import json

_CLOSING = {"[": "]", "{": "}"}
_OPENING = {"]": "[", "}": "{"}
_NAMES = {"[": "bracket '['", "{": "brace '{'", "]": "bracket ']'", "}": "brace '}'"}
_BRACKET_SYMPTOMS = {"Expecting ',' delimiter", "Extra data"}


def describe_json_error(text: str, error: json.JSONDecodeError) -> str:
    where = f"line {error.lineno} column {error.colno}"
    # Brackets explain the errors a missing or extra bracket gives (the reader then expects a comma,
    # finds extra data, or runs out of text); other messages already point at the place.
    about_brackets = error.msg in _BRACKET_SYMPTOMS or error.pos >= len(text.rstrip())
    bracket = bracket_problem(text) if about_brackets else None
    if bracket is not None:
        return f"{bracket} (the JSON reader stopped at {where})"
    return f"{error.msg} at {where}"


def bracket_problem(text: str) -> str | None:
    """The first unbalanced bracket outside strings, described with where it is; None if balanced."""
    stack: list[tuple[str, int, int]] = []
    line, column = 1, 0
    in_string = escaped = False
    for char in text:
        if char == "\n":
            line, column = line + 1, 0
            if in_string:  # JSON strings cannot span lines: the quote was left open
                return f"the string opened on line {line - 1} is not closed with '\"' before the line ends"
            continue
        column += 1
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
        elif char in _CLOSING:
            stack.append((char, line, column))
        elif char in _OPENING:
            if not stack:
                return f"{_NAMES[char]} at line {line} column {column} closes nothing: remove it, or add the missing '{_OPENING[char]}' before it"
            opened, at_line, at_column = stack.pop()
            if _CLOSING[opened] != char:
                return (f"{_NAMES[char]} at line {line} column {column} does not match the {_NAMES[opened]} opened "
                        f"at line {at_line} column {at_column}: a '{_CLOSING[opened]}' is missing before it")
    if in_string:
        return f"a string is not closed with '\"' (line {line})"
    if stack:
        # Brackets pair innermost first, so the one reported open may be an outer one: say how many
        # are missing and which is left open, and let the reader's position point at the place.
        opened, at_line, at_column = stack[-1]
        missing = "".join(_CLOSING[item[0]] for item in reversed(stack))
        return (f"a closing '{missing}' is missing: the {_NAMES[opened]} opened at line {at_line} column "
                f"{at_column} is never closed")
    return None
