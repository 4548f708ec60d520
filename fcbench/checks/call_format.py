"""Is a call well formed for the tools it may use? (pure)

Shared by the scorer (feedback to a model under evaluation, in ComplexEval's words) and the
filter stage (gold paths whose tools, parameters or types do not fit are rejected). The messages
are ComplexEval's: function not in the list; required parameters missing; unknown parameters;
wrong type.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from fcbench.catalog.types import json_type_names
from fcbench.sample import Call, Tool

# ---------------------------------------------------------------------------------------------
# Predicted calls


@dataclass(frozen=True)
class PredictedCall:
    """A call as a model made it: a function name and decoded arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


CallLike = Union[PredictedCall, Call, Mapping[str, Any]]


class CallDecodeError(ValueError):
    """A predicted call whose arguments are not a JSON object."""


def as_predicted_call(call: CallLike) -> PredictedCall:
    """Accept a `PredictedCall`, a canonical `Call`, `{name, arguments}` or OpenAI's
    `{"function": {name, arguments}}` (arguments may be the JSON string the API returns)."""
    if isinstance(call, PredictedCall):
        return call
    if isinstance(call, Call):
        return PredictedCall(call.name, dict(call.arguments))
    if "function" in call and isinstance(call["function"], Mapping):
        call = call["function"]
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise CallDecodeError(f"arguments of {call.get('name')!r} are not JSON: {exc}") from exc
    if not isinstance(arguments, dict):
        raise CallDecodeError(f"arguments of {call.get('name')!r} are not a JSON object")
    return PredictedCall(str(call.get("name", "")), arguments)


# ---------------------------------------------------------------------------------------------
# Format check (ComplexEval)


@dataclass(frozen=True)
class FormatIssue:
    """Why a predicted call cannot be run; `message` is meant for the model to read."""

    kind: str  # unknown_function | missing_required | unknown_parameters | wrong_type
    message: str


def check_call_format(
    call: CallLike, tools: Sequence[Tool], skip_type_check: Callable[[Any], bool] | None = None
) -> FormatIssue | None:
    """The first format problem of a call (None when it is well formed), in ComplexEval's order.

    `skip_type_check(value)` exempts values whose type is only known later: a gold path's
    `$label.path$` references are strings until the path runs."""
    call = as_predicted_call(call)
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None:
        return FormatIssue(
            "unknown_function", f"Function {call.name} is not defined in the function list."
        )
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    required: list[str] = tool.parameters.get("required", [])
    given = list(call.arguments)
    missing = [p for p in required if p not in call.arguments]
    if missing:
        return FormatIssue(
            "missing_required",
            f"Function {tool.name} requires parameters {required}, but {given} do not provide "
            f"{missing}.",
        )
    unknown = [p for p in given if p not in properties]
    # Unknown parameters are errors (ComplexEval) unless the schema explicitly allows extras.
    extras_allowed = tool.parameters.get("additionalProperties") not in (None, False)
    if unknown and not extras_allowed:
        return FormatIssue(
            "unknown_parameters", f"Function {tool.name} does not have parameters {unknown}."
        )
    for param, value in call.arguments.items():
        if skip_type_check is not None and skip_type_check(value):
            continue
        types = json_type_names(properties.get(param, {}))
        if types and not any(_has_json_type(value, t) for t in types):
            expected = " or ".join(types)
            return FormatIssue(
                "wrong_type",
                f"Parameter {param} of function {tool.name} should be {_article(expected)} "
                f"{expected}, but {_json_type_of(value)} is provided.",
            )
    return None


def _has_json_type(value: Any, type_name: str) -> bool:
    # bool is a subclass of int in Python, never a number in JSON.
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        # JSON Schema: "integer" is any number with a zero fractional part, so 2.0 is an integer
        # (a model writing `"adults": 2.0` wrote the right value).
        if isinstance(value, float):
            return math.isfinite(value) and value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "boolean":
        return isinstance(value, bool)
    if type_name == "array":
        return isinstance(value, list)
    if type_name == "object":
        return isinstance(value, dict)
    if type_name == "null":
        return value is None
    return True  # a type name JSON Schema does not define: nothing to check


def _json_type_of(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _has_json_type(value, name):
            return name
    return type(value).__name__


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
