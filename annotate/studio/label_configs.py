"""Label Studio labeling configs (label_config/*.xml) and their validation before use.

A config is checked three ways, because each catches what the others miss:
- the SDK's `LabelInterface` (XML schema, unique names, `toName` targets);
- our contract with the converters (`ConfigSpec`): every control `annotate/tasks/single.py` reads exists with
  the right tag, every task-data field it fills is the one the config reads, the flag choices are
  exactly `DraftError`. Neither the server nor the SDK rejects an unknown tag (`<Choises>` passes
  both), so tags are also checked against the few this project uses;
- the server itself (POST api/projects/validate/), which knows its own version's rules.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.tasks.error_types import DraftError
from fcbench.config import COMPLEXITIES
from fcbench.errors import ConfigError

CONFIG_DIR = Path(__file__).resolve().parents[2] / "label_config"
# The tags fcbench's configs are written with; anything else is a typo the tools would not catch.
KNOWN_TAGS = {"View", "Style", "Header", "HyperText", "Text", "Choices", "Choice", "TextArea", "Number"}
# Where the stage2 config takes its generated call forms (annotate/tasks/forms.py).
FORM_MARKER = "<!-- fcbench:call-forms -->"
_VARIABLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")


@dataclass(frozen=True)
class ConfigSpec:
    """What the converters expect of one config."""

    file_name: str
    controls: dict[str, str]  # control name -> tag
    data_fields: frozenset[str]  # `$field`s the config reads from task data
    choice_values: dict[str, frozenset[str]] = field(default_factory=dict)  # static choices per control
    optional_fields: frozenset[str] = frozenset()  # carried by tasks, read only by generated parts

    @property
    def path(self) -> Path:
        return CONFIG_DIR / self.file_name


FLAG_VALUES = frozenset(error.value for error in DraftError)
VERDICTS = frozenset({"accept", "fix", "reject"})

SENIOR = ConfigSpec(
    "stage2_senior.xml",
    controls={"verdict": "Choices", "query": "TextArea", "path_json": "TextArea", "delete_entries": "Choices",
              "drop_tools": "Choices", "error_flags": "Choices", "notes": "TextArea"},
    data_fields=frozenset({"feedback_html", "draft_html", "entry_options", "tool_options"}),
    choice_values={"verdict": VERDICTS, "error_flags": FLAG_VALUES},
    optional_fields=frozenset({"ref_options"}),  # the call forms' reference pickers
)
JUNIOR = ConfigSpec(
    "stage3_junior.xml",
    controls={"verdict": "Choices", "arguments_json": "TextArea", "notes": "TextArea"},
    data_fields=frozenset({"feedback_html", "variant_html"}),
    choice_values={"verdict": frozenset({"filled", "cannot_fill"})},
)
QA_REVIEW = ConfigSpec(
    "qa_review.xml",
    controls={"qa_verdict": "Choices", "error_flags": "Choices", "comment": "TextArea"},
    data_fields=frozenset({"review_html"}),
    choice_values={"qa_verdict": frozenset({"gold_correct", "gold_wrong"}), "error_flags": FLAG_VALUES},
)
CONVERSATION = ConfigSpec(
    "stage2_conversation.xml",
    controls={"verdict": "Choices", "conversation_json": "TextArea", "complexities": "Choices", "call_errors": "Choices",
              "notes": "TextArea"},
    data_fields=frozenset({"feedback_html", "scenario_html", "conversation_html", "call_options"}),
    choice_values={"verdict": VERDICTS, "complexities": frozenset(COMPLEXITIES)},
)
SCENARIO_REVIEW = ConfigSpec(
    "stage1_scenario_review.xml",
    controls={"verdict": "Choices", "description": "TextArea", "complexities": "Choices", "scenario_json": "TextArea",
              "notes": "TextArea"},
    data_fields=frozenset({"feedback_html", "scenario_html"}),
    choice_values={"verdict": frozenset({"accept", "edit", "reject"}), "complexities": frozenset(COMPLEXITIES)},
)
SPECS = {spec.file_name: spec for spec in (SENIOR, JUNIOR, QA_REVIEW, CONVERSATION, SCENARIO_REVIEW)}


def load_config(spec: ConfigSpec, directory: Path | None = None) -> str:
    path = (directory or CONFIG_DIR) / spec.file_name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the label config ({exc.strerror})") from None


def contract_problems(xml: str, spec: ConfigSpec) -> list[str]:
    """What in the config breaks the converters' expectations (empty: none)."""
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as exc:
        return [f"not well-formed XML: {exc}"]
    problems = [f"unknown tag <{element.tag}>" for element in root.iter() if element.tag not in KNOWN_TAGS]
    named = {element.get("name"): element for element in root.iter() if element.get("name")}
    for name, tag in spec.controls.items():
        element = named.get(name)
        if element is None:
            problems.append(f"control {name!r} ({tag}) is missing")
        elif element.tag != tag:
            problems.append(f"control {name!r} is <{element.tag}>, expected <{tag}>")
    read_fields = {match.group(1) for element in root.iter()
                   if (match := _VARIABLE.match(element.get("value", "")))}
    for missing in sorted(spec.data_fields - read_fields):
        problems.append(f"task field ${missing} is not shown by any tag")
    for unexpected in sorted(read_fields - spec.data_fields - spec.optional_fields):
        problems.append(f"task field ${unexpected} is read but tasks do not carry it")
    for name, expected in spec.choice_values.items():
        element = named.get(name)
        if element is None:
            continue
        values = {choice.get("value") for choice in element.iter("Choice")}
        if values != expected:
            problems.append(f"choices of {name!r} are {sorted(v or '' for v in values)}, expected {sorted(expected)}")
    return problems


def sdk_problems(xml: str) -> list[str]:
    from label_studio_sdk.label_interface import LabelInterface

    try:
        LabelInterface(xml).validate()
    except Exception as exc:  # the SDK raises its own validation error, or lxml's on broken XML
        return [f"LabelInterface: {exc}"]
    return []


def validate_config(xml: str, spec: ConfigSpec) -> None:
    """Offline checks (SDK + contract); raises `ConfigError` listing every problem."""
    problems = sdk_problems(xml) + contract_problems(xml, spec)
    if problems:
        raise ConfigError(f"{spec.file_name}: " + "; ".join(problems))


def server_problems(client: Any, xml: str) -> list[str]:
    """The server's verdict on a config (204 valid, 400 with messages)."""
    from annotate.studio.client import raw_request

    response = raw_request(client, "POST", "api/projects/validate/", json={"label_config": xml})
    if response.status_code in (200, 204):
        return []
    try:
        body = response.json()
    except ValueError:
        return [f"server answered {response.status_code}"]
    messages = body.get("label_config") if isinstance(body, dict) else None
    if isinstance(messages, list):
        return [f"server: {message}" for message in messages]
    return [f"server answered {response.status_code}: {body}"]


def with_forms(xml: str, forms: str) -> str:
    """The config with its generated call forms in place of the marker (no marker: unchanged)."""
    return xml.replace(FORM_MARKER, forms)


def validated_config(spec: ConfigSpec, client: Any | None = None, directory: Path | None = None,
                     forms: str = "") -> str:
    """The config text (with `forms` at its marker), checked offline and (when a client is given)
    by the server."""
    xml = with_forms(load_config(spec, directory), forms)
    validate_config(xml, spec)
    if client is not None:
        problems = server_problems(client, xml)
        if problems:
            raise ConfigError(f"{spec.file_name}: " + "; ".join(problems))
    return xml


def prediction_problems(xml: str, prediction: dict[str, Any]) -> list[str]:
    """The SDK's check of a prediction against the config (the server does not check them)."""
    from label_studio_sdk.label_interface import LabelInterface

    return list(LabelInterface(xml).validate_prediction(prediction, return_errors=True))


class PredictionValidator:
    """`prediction_problems` with the config parsed once (pushing 1,000 tasks validates 1,000)."""

    def __init__(self, xml: str) -> None:
        from label_studio_sdk.label_interface import LabelInterface

        self._interface = LabelInterface(xml)

    def problems(self, prediction: dict[str, Any]) -> list[str]:
        return list(self._interface.validate_prediction(prediction, return_errors=True))
