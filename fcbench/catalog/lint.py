"""Tool catalog linter (pure, over canonical tools).

A benchmark is only as fair as its tools: a model cannot pick the right function when two tools
say the same thing, nor fill an argument whose meaning is undocumented. ComplexFuncBench's senior
annotators removed overlapping tools by hand; this linter finds the candidates up front.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from enum import Enum
from itertools import combinations
from typing import Any, Iterator

from rapidfuzz import fuzz, utils

from fcbench.catalog.types import SOURCE_TYPE_KEY
from fcbench.sample import Tool

# Below this many characters a description rarely says more than the name already does.
MIN_DESCRIPTION_CHARS = 20
# rapidfuzz token-sort ratio (0-100) from which two descriptions count as the same text with words
# moved around: CallNavi bank's getAccountID/getCustomerID score 100. Character similarity cannot
# see that one changed word flips the meaning (enableVoLTE/disableVoLTE score 94-96, car/house
# insurance 91), so only near-identical text is flagged.
OVERLAP_RATIO = 97.0

# Keys that give a parameter schema a type even without `type`.
_TYPING_KEYS = ("type", "anyOf", "oneOf", "allOf", "enum", "const", "$ref")


class Severity(str, Enum):
    ERROR = "error"  # the catalog is wrong or ambiguous for a model: fix before building
    WARNING = "warning"  # the catalog works but makes the benchmark harder than it should be


class Code(str, Enum):
    MISSING_DESCRIPTION = "missing-description"
    SHORT_DESCRIPTION = "short-description"
    PARAMETER_WITHOUT_DESCRIPTION = "parameter-without-description"
    UNTYPED_PARAMETER = "untyped-parameter"
    SIMILAR_PARAMETER_NAMES = "similar-parameter-names"
    REQUIRED_NOT_IN_PROPERTIES = "required-not-in-properties"
    DUPLICATE_TOOL_NAME = "duplicate-tool-name"
    OVERLAPPING_TOOLS = "overlapping-tools"


SEVERITY: dict[Code, Severity] = {
    Code.MISSING_DESCRIPTION: Severity.ERROR,
    Code.SHORT_DESCRIPTION: Severity.WARNING,
    Code.PARAMETER_WITHOUT_DESCRIPTION: Severity.WARNING,
    Code.UNTYPED_PARAMETER: Severity.WARNING,
    Code.SIMILAR_PARAMETER_NAMES: Severity.ERROR,
    Code.REQUIRED_NOT_IN_PROPERTIES: Severity.ERROR,
    Code.DUPLICATE_TOOL_NAME: Severity.ERROR,
    Code.OVERLAPPING_TOOLS: Severity.WARNING,
}


@dataclass(frozen=True)
class Finding:
    tool: str
    parameter: str | None  # dotted path for nested object properties (`filters.max_price`)
    code: Code
    message: str
    severity: Severity

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["code"] = self.code.value
        data["severity"] = self.severity.value
        return data


def _finding(tool: str, parameter: str | None, code: Code, message: str) -> Finding:
    return Finding(tool, parameter, code, message, SEVERITY[code])


def lint_tools(tools: list[Tool], overlap_ratio: float = OVERLAP_RATIO) -> list[Finding]:
    """Every finding for the catalog: per tool first (in catalog order), then across tools."""
    findings: list[Finding] = []
    for tool in tools:
        findings.extend(lint_tool(tool))
    findings.extend(_duplicate_tool_names(tools))
    findings.extend(_overlapping_tools(tools, overlap_ratio))
    return findings


def lint_tool(tool: Tool) -> Iterator[Finding]:
    yield from _description_findings(tool)
    yield from _parameter_findings(tool.name, tool.parameters, prefix="")


def count_by_code(findings: list[Finding]) -> dict[str, int]:
    return dict(Counter(finding.code.value for finding in findings))


def has_errors(findings: list[Finding]) -> bool:
    return any(finding.severity is Severity.ERROR for finding in findings)


# ----------------------------------------------------------------------------------------- per tool
def _description_findings(tool: Tool) -> Iterator[Finding]:
    description = tool.description.strip()
    if not description:
        yield _finding(tool.name, None, Code.MISSING_DESCRIPTION, "tool has no description")
    elif len(description) < MIN_DESCRIPTION_CHARS:
        yield _finding(tool.name, None, Code.SHORT_DESCRIPTION,
                       f"description {description!r} is shorter than {MIN_DESCRIPTION_CHARS} characters")


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _parameter_findings(tool_name: str, schema: dict[str, Any], prefix: str) -> Iterator[Finding]:
    """Checks on one object schema's properties, recursing into nested objects (BFCL `dict`s)."""
    properties = _properties(schema)
    for name, property_schema in properties.items():
        path = f"{prefix}{name}"
        if not isinstance(property_schema, dict):
            yield _finding(tool_name, path, Code.UNTYPED_PARAMETER, "parameter schema is not an object")
            continue
        if not str(property_schema.get("description", "")).strip():
            yield _finding(tool_name, path, Code.PARAMETER_WITHOUT_DESCRIPTION, "parameter has no description")
        if _is_untyped(property_schema):
            yield _finding(tool_name, path, Code.UNTYPED_PARAMETER, "parameter accepts any type")
        if _properties(property_schema) or "required" in property_schema:
            yield from _parameter_findings(tool_name, property_schema, prefix=f"{path}.")
    yield from _similar_names(tool_name, list(properties), prefix)
    yield from _required_not_declared(tool_name, schema, properties, prefix)


def _is_untyped(schema: dict[str, Any]) -> bool:
    if str(schema.get(SOURCE_TYPE_KEY, "")).strip().lower() == "any":
        return True  # converted from BFCL/NESTful "any": the `{}` schema says nothing either
    return not any(key in schema for key in _TYPING_KEYS)


def normalised_name(name: str) -> str:
    """`accountID`, `account_id` and `Account-Id` all become `accountid`."""
    return re.sub(r"[_\-\s]", "", name).lower()


def _similar_names(tool_name: str, names: list[str], prefix: str) -> Iterator[Finding]:
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(normalised_name(name), []).append(name)
    for group in groups.values():
        if len(group) > 1:
            yield _finding(tool_name, f"{prefix}{group[0]}", Code.SIMILAR_PARAMETER_NAMES,
                           f"parameters differ only by case or separators: {', '.join(group)}")


def _required_not_declared(tool_name: str, schema: dict[str, Any], properties: dict[str, Any],
                           prefix: str) -> Iterator[Finding]:
    required = schema.get("required")
    for name in required if isinstance(required, list) else []:
        if name not in properties:
            yield _finding(tool_name, f"{prefix}{name}", Code.REQUIRED_NOT_IN_PROPERTIES,
                           "listed as required but not declared in properties")


# ------------------------------------------------------------------------------------- across tools
def _duplicate_tool_names(tools: list[Tool]) -> Iterator[Finding]:
    counts = Counter(tool.name for tool in tools)
    for name, count in counts.items():
        if count > 1:
            yield _finding(name, None, Code.DUPLICATE_TOOL_NAME, f"{count} tools are named {name!r}")


def description_similarity(first: str, second: str) -> float:
    """0-100: how alike two descriptions are once case, punctuation and word order are ignored."""
    if utils.default_process(first) == utils.default_process(second):
        return 100.0  # also covers two empty texts, which rapidfuzz scores 0
    return fuzz.token_sort_ratio(first, second, processor=utils.default_process)


def shared_boilerplate(descriptions: list[str]) -> str:
    """The leading sentences every description repeats (BFCL multi-turn files open each one with
    "This tool belongs to the Math API, ... Tool description:"). Left in, that shared text makes
    max_value and min_value look 99% alike; only whole sentences are cut, never a shared word."""
    if len(descriptions) < 2:
        return ""
    word_lists = [text.split() for text in descriptions]
    common: list[str] = []
    for words in zip(*word_lists):
        if any(word != words[0] for word in words):
            break
        common.append(words[0])
    while common and not common[-1].endswith((".", ":")):
        common.pop()
    return " ".join(common)


def _without_prefix(text: str, prefix: str) -> str:
    return " ".join(text.split())[len(prefix):].strip() if prefix else text


def _overlapping_tools(tools: list[Tool], overlap_ratio: float) -> Iterator[Finding]:
    """Pairs a model cannot tell apart: same parameter names and near-identical descriptions.

    Only tools with the same parameter-name set are compared, which keeps this cheap on large
    catalogs (CallNavi telecommunications has 101 tools) and avoids flagging tools that merely
    share wording but take different inputs.
    """
    described = [tool for tool in tools if tool.description.strip()]
    boilerplate = shared_boilerplate([tool.description for tool in described])
    by_parameter_set: dict[frozenset[str], list[Tool]] = {}
    for tool in described:
        by_parameter_set.setdefault(frozenset(_properties(tool.parameters)), []).append(tool)
    for group in by_parameter_set.values():
        for first, second in combinations(group, 2):
            if first.name == second.name:
                continue  # reported as a duplicate name already
            score = description_similarity(_without_prefix(first.description, boilerplate),
                                           _without_prefix(second.description, boilerplate))
            if score >= overlap_ratio:
                yield _finding(first.name, None, Code.OVERLAPPING_TOOLS,
                               f"overlaps {second.name!r}: same parameters and descriptions "
                               f"{score:.0f}% alike")
