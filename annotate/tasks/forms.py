"""The gold path as forms in Label Studio: one numbered call slot per call, built from the catalog.

Open-source Label Studio has no custom-interface tag (ReactCode is Enterprise only), so the forms are
plain labeling controls generated per pipeline from its tool catalog:
- slot k has a tool picker (`c{k}_tool`, a drop-down of the catalog's tools, or "(no call)"), the
  call's label (`c{k}_label`, the name references use) and its step number (`c{k}_step`: calls
  with the same number run in parallel; the path is ordered by step, then slot);
- for each tool, a block shown only while that tool is picked (`visibleWhen="choice-selected"`)
  with one control per parameter of its JSON Schema: a drop-down for an enum or a boolean, a one-line
  text field otherwise, its header giving the type, "required" and the description;
- two reference pickers per slot (`c{k}_ref{n}_to`: which parameter; `c{k}_ref{n}`: which field),
  whose options are the task's `$ref_options`: every field of the draft's responses, listed without
  the dollars (`var_2.data.hotels[0].id`: Label Studio would read a `$` option as a task field) and
  read back as the reference `$var_2.data.hotels[0].id$`.

Values typed in a text field are read by the parameter's schema type: a string parameter takes
the text as it is; integer, number, boolean, array and object parameters take JSON (`2`, `4.5`,
`["a"]`); a `$label.path$` reference is kept as it is, whatever the type. A picked reference is the
argument's value (the text field is then ignored). An empty field omits the argument.

Pure: XML and result building, reading a result back. No server, no files.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from html import escape
from typing import Any, Iterator, Sequence

from fcbench.references import format_reference, parse_reference
from fcbench.sample import Call, Sample, Step, Tool

NO_CALL = "(no call)"
DEFAULT_SLOTS = 8  # calls a form holds at least: the longest draft plus room to add calls
EXTRA_SLOTS = 2
MAX_SLOTS = 30
MAX_REF_OPTIONS = 200  # picker options per task; a 500 kB response has thousands of fields
MAX_REF_VALUE_CHARS = 60
FORM_OBJECT = "draft"  # toName of every form control (the draft HyperText)
SEPARATOR = "__"
REF_PICKS = 2  # reference pickers per call (more references: type them as `$var_1.data[0].id$`)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class FormLayout:
    """The slots and tools of one project's form (its label config is built from it)."""

    slots: int
    tools: tuple[Tool, ...]

    def tool(self, name: str) -> Tool | None:
        return next((tool for tool in self.tools if tool.name == name), None)


def slot_count(drafts: Sequence[Sample]) -> int:
    """Slots for a project: the longest draft plus room to add calls. Computed over the whole
    drafts file, so every push of one stage1 run builds the same config."""
    return slots_for_longest(max((len(draft.all_calls()) for draft in drafts), default=0))


def slots_for_longest(longest: int) -> int:
    """Slots for a project whose longest draft has `longest` calls."""
    return min(MAX_SLOTS, max(DEFAULT_SLOTS, longest + EXTRA_SLOTS))


def formable_tools(tools: Sequence[Tool]) -> tuple[Tool, ...]:
    """The tools whose names (and parameter names) can be part of a control name."""
    return tuple(tool for tool in tools if _SAFE_NAME.match(tool.name) and SEPARATOR not in tool.name
                 and all(_SAFE_NAME.match(name) for name in _properties(tool)))


# ------------------------------------------------------------------------------------------ names
def tool_control(slot: int) -> str:
    return f"c{slot}_tool"


def label_control(slot: int) -> str:
    return f"c{slot}_label"


def step_control(slot: int) -> str:
    return f"c{slot}_step"


def param_control(slot: int, name: str, schema: Any) -> str:
    return f"c{slot}{SEPARATOR}{parameter_suffix(name, schema)}"


def ref_control(slot: int, pick: int) -> str:
    return f"c{slot}_ref{pick}"


def ref_target_control(slot: int, pick: int) -> str:
    return f"c{slot}_ref{pick}_to"


def select_class(control: str) -> str:
    """The CSS class around a drop-down: Label Studio renders it without the control's name."""
    return f"fcb-ctl-{control}"


def is_form_control(name: str) -> bool:
    return bool(re.match(r"^c\d+(_tool|_label|_step|_ref\d|__)", name))


# ------------------------------------------------------------------------------------------ config
def _properties(tool: Tool) -> dict[str, Any]:
    properties = tool.parameters.get("properties") or {}
    return properties if isinstance(properties, dict) else {}


def _required(tool: Tool) -> set[str]:
    return set(tool.parameters.get("required") or [])


def _choice_values(schema: Any) -> list[str] | None:
    """The drop-down values of a parameter (enum or boolean), as the texts the form stores."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return [_choice_text(value) for value in schema["enum"]]
    if schema.get("type") == "boolean":
        return ["true", "false"]
    return None


def _choice_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _type_text(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    declared = schema.get("type")
    return "/".join(declared) if isinstance(declared, list) else str(declared or "any")


def _attr(value: str) -> str:
    return escape(value, quote=True)


def _param_header(name: str, schema: Any, required: bool) -> str:
    description = schema.get("description", "") if isinstance(schema, dict) else ""
    text = f"{name}{' *' if required else ''} ({_type_text(schema)}{', required' if required else ''})"
    if description:
        text += f": {description}"
    return text if len(text) <= 240 else text[:239] + "…"


def form_xml(layout: FormLayout) -> str:
    """The form part of the stage2 label config: one block per slot."""
    params = catalog_parameters(layout.tools)
    parts = ['<View className="fcb-forms">',
             '<Header value="3. Gold path as forms: one block per call. Pick the tool, then fill its arguments '
             '(* = required). Calls with the same step number run in parallel. Pick a reference to set an argument '
             'to an earlier response field; set the tool to (no call) to remove a call." size="5"/>']
    for slot in range(1, layout.slots + 1):
        parts.append(_slot_xml(slot, layout.tools, params))
    parts.append("</View>")
    return "\n".join(parts)


@dataclass(frozen=True)
class FormParameter:
    """One argument control of a slot, shared by every tool with a parameter of that name and
    kind (Label Studio slows down past a few hundred controls: sharing keeps a slot at the number of
    distinct parameter names, not the sum over tools)."""

    suffix: str  # the control name after `c{k}__`
    name: str
    choices: tuple[str, ...] | None  # a drop-down's values; None: a one-line text field
    tools: tuple[str, ...]  # the tools showing it


def parameter_suffix(name: str, schema: Any) -> str:
    values = _choice_values(schema)
    if values is None:
        return name
    digest = hashlib.sha256(json.dumps(values).encode("utf-8")).hexdigest()[:6]
    return f"{name}{SEPARATOR}{digest}"


def catalog_parameters(tools: Sequence[Tool]) -> list[FormParameter]:
    """The argument controls of a slot, in the catalog's order of first appearance."""
    found: dict[str, FormParameter] = {}
    for tool in tools:
        for name, schema in _properties(tool).items():
            suffix = parameter_suffix(name, schema)
            current = found.get(suffix)
            if current is None:
                values = _choice_values(schema)
                found[suffix] = FormParameter(suffix, name, tuple(values) if values else None, (tool.name,))
            else:
                found[suffix] = FormParameter(suffix, name, current.choices, current.tools + (tool.name,))
    return list(found.values())


def _slot_xml(slot: int, tools: Sequence[Tool], params: Sequence[FormParameter]) -> str:
    choices = "".join(f'<Choice value="{_attr(tool.name)}"/>' for tool in tools)
    names = sorted({param.name for param in params})
    targets = "".join(f'<Choice value="{_attr(name)}"/>' for name in names)
    lines = ['<View className="fcb-call">',
             '<View style="display: flex; gap: 8px; align-items: center;">',
             f'<Header value="Call {slot}" size="6"/>',
             f'<View style="flex: 3;" className="{select_class(tool_control(slot))}"><Choices name="{tool_control(slot)}" toName="{FORM_OBJECT}" choice="single" '
             f'layout="select"><Choice value="{NO_CALL}"/>{choices}</Choices></View>',
             f'<View style="flex: 2;"><TextArea name="{label_control(slot)}" toName="{FORM_OBJECT}" rows="1" '
             f'editable="true" transcription="true" maxSubmissions="1" placeholder="label, e.g. var_{slot}"/></View>',
             '<Header value="step" size="6"/>',
             f'<View style="flex: 1;"><Number name="{step_control(slot)}" toName="{FORM_OBJECT}" min="1"/></View>',
             '</View>']
    for tool in tools:  # the tool's own help: each parameter's type, "required" and description
        required = _required(tool)
        help_lines = [_param_header(name, schema, name in required) for name, schema in _properties(tool).items()]
        lines.append(f'<View visibleWhen="choice-selected" whenTagName="{tool_control(slot)}" '
                     f'whenChoiceValue="{_attr(tool.name)}" className="fcb-help">'
                     + "".join(f'<Header value="{_attr(text)}" size="6" underline="false"/>' for text in help_lines)
                     + "</View>")
    for param in params:
        control = f"c{slot}{SEPARATOR}{param.suffix}"
        lines.append(f'<View visibleWhen="choice-selected" whenTagName="{tool_control(slot)}" '
                     f'whenChoiceValue="{_attr(",".join(param.tools))}" '
                     'style="display: flex; gap: 8px; align-items: center;">')
        lines.append(f'<View style="width: 160px;"><Header value="{_attr(param.name)}" size="6"/></View>')
        if param.choices is not None:
            options = "".join(f'<Choice value="{_attr(value)}"/>' for value in param.choices)
            lines.append(f'<View style="flex: 1;" className="{select_class(control)}"><Choices name="{control}" '
                         f'toName="{FORM_OBJECT}" choice="single" layout="select">{options}</Choices></View>')
        else:
            lines.append(f'<View style="flex: 1;"><TextArea name="{control}" toName="{FORM_OBJECT}" rows="1" '
                         f'editable="true" transcription="true" maxSubmissions="1"/></View>')
        lines.append("</View>")
    all_tools = ",".join(tool.name for tool in tools)
    lines.append(f'<View visibleWhen="choice-selected" whenTagName="{tool_control(slot)}" '
                 f'whenChoiceValue="{_attr(all_tools)}">')
    for pick in range(1, REF_PICKS + 1):
        target, reference = ref_target_control(slot, pick), ref_control(slot, pick)
        lines.append('<View style="display: flex; gap: 8px; align-items: center;">'
                     f'<Header value="reference {pick}: set" size="6"/>'
                     f'<View style="flex: 1;" className="{select_class(target)}"><Choices name="{target}" '
                     f'toName="{FORM_OBJECT}" choice="single" layout="select">{targets}</Choices></View>'
                     '<Header value="to" size="6"/>'
                     f'<View style="flex: 3;" className="{select_class(reference)}"><Choices name="{reference}" '
                     f'toName="{FORM_OBJECT}" choice="single" layout="select" value="$ref_options"/></View></View>')
    lines.append("</View>")
    lines.append("</View>")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ task data
def reference_options(calls: Sequence[Call], limit: int = MAX_REF_OPTIONS) -> list[dict[str, str]]:
    """The picker's options: each leaf field of each recorded response, as a reference (with the
    value it holds in the draft, shortened), in path order; at most `limit`."""
    options: list[dict[str, str]] = []
    for call in calls:
        if "response" not in call.model_fields_set:
            continue
        for path, value in _leaves(call.response, ()):
            if len(options) >= limit:
                return options
            # without its dollars: Label Studio reads an option value starting with `$` as a task field
            reference = format_reference(call.label, path)[1:-1]
            shown = json.dumps(value, ensure_ascii=False)
            if len(shown) > MAX_REF_VALUE_CHARS:
                shown = shown[:MAX_REF_VALUE_CHARS - 1] + "…"
            options.append({"value": reference, "html": f"{escape(reference)} = {escape(shown)}"})
    return options


def _leaves(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (str(key),))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))
    else:
        yield path, value


# ---------------------------------------------------------------------------------- pre-annotation
def encode_argument(value: Any, schema: Any) -> str:
    """What a text field shows for a value: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def form_prefill(steps: Sequence[Step], layout: FormLayout) -> list[dict[str, Any]]:
    """The prediction results that fill the slots from a path (calls beyond the slots, tools not
    in the form and arguments outside a tool's schema stay in the raw JSON only)."""
    results: list[dict[str, Any]] = []
    slot = 0
    for number, step in enumerate(steps, start=1):
        for call in step:
            slot += 1
            if slot > layout.slots:
                return results
            tool = layout.tool(call.name)
            if tool is None:
                continue
            results.append(_choices(tool_control(slot), [call.name]))
            results.append(_text(label_control(slot), call.label))
            results.append({"from_name": step_control(slot), "to_name": FORM_OBJECT, "type": "number",
                            "value": {"number": number}})
            properties = _properties(tool)
            picks = 0
            for name, value in call.arguments.items():
                if name not in properties:
                    continue
                schema = properties[name]
                values = _choice_values(schema)
                if values is None:
                    results.append(_text(param_control(slot, name, schema), encode_argument(value, schema)))
                elif _choice_text(value) in values:
                    results.append(_choices(param_control(slot, name, schema), [_choice_text(value)]))
                elif parse_reference(value) is not None and picks < REF_PICKS:
                    # a drop-down cannot hold a reference: it goes to a reference picker
                    picks += 1
                    results.append(_choices(ref_target_control(slot, picks), [name]))
                    results.append(_choices(ref_control(slot, picks), [value[1:-1]]))
    return results


def _text(name: str, text: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": FORM_OBJECT, "type": "textarea", "value": {"text": [text]}}


def _choices(name: str, values: list[str]) -> dict[str, Any]:
    return {"from_name": name, "to_name": FORM_OBJECT, "type": "choices", "value": {"choices": values}}


# ------------------------------------------------------------------------------------------- pull
@dataclass
class FormPath:
    """The path read from the form part of a result."""

    present: bool  # the result holds form controls at all (a task pushed before forms has none)
    steps: list[Step] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def form_values(values: dict[str, Any]) -> dict[str, Any]:
    """The form controls' values only (from `tasks.read_result`), empty texts dropped."""
    return {name: value for name, value in values.items()
            if is_form_control(name) and value not in (None, "", [])}


def read_form(values: dict[str, Any], tools: Sequence[Tool]) -> FormPath:
    """The path the filled slots describe. `values` maps control names to their values as
    `tasks.read_result` reads them (texts, lists of choices, numbers)."""
    values = form_values(values)
    form = FormPath(present=bool(values))
    if not form.present:
        return form
    by_name = {tool.name: tool for tool in tools}
    slots = sorted({int(match.group(1)) for name in values if (match := re.match(r"^c(\d+)_tool$", name))})
    placed: list[tuple[int, int, Call]] = []
    for slot in slots:
        picked = values.get(tool_control(slot)) or []
        name = picked[0] if picked else NO_CALL
        if name == NO_CALL:
            continue
        where = f"call {slot}"
        tool = by_name.get(name)
        if tool is None:
            form.problems.append(f"{where}: tool {name!r} is not offered in this task")
            continue
        label = str(values.get(label_control(slot), "")).strip()
        if not label:
            form.problems.append(f"{where} ({name}): the label is empty (references name calls by it)")
            continue
        step = values.get(step_control(slot))
        if not isinstance(step, (int, float)) or step < 1 or int(step) != step:
            form.problems.append(f"{where} ({label}): the step number must be a whole number from 1")
            continue
        arguments: dict[str, Any] = {}
        picked = _picked_references(values, slot)
        for param in sorted(set(picked) - set(_properties(tool))):
            form.problems.append(f"{where} ({label}): a reference is picked for {param!r}, which {name} does not take")
        for param, schema in _properties(tool).items():
            if param in picked:  # a picked reference is the value; the text field is ignored
                arguments[param] = picked[param]
                continue
            raw = values.get(param_control(slot, param, schema))
            if raw is None:
                continue
            if isinstance(raw, list):  # a drop-down (enum, boolean)
                arguments[param] = decode_choice(raw[0], schema)
                continue
            value, problem = decode_argument(str(raw), schema)
            if problem:
                form.problems.append(f"{where} ({label}) argument {param!r}: {problem}")
                continue
            arguments[param] = value
        placed.append((int(step), slot, Call(label=label, name=name, arguments=arguments)))
    labels = [call.label for _, _, call in placed]
    for label in sorted({label for label in labels if labels.count(label) > 1}):
        form.problems.append(f"label {label!r} is used by more than one call")
    numbers = sorted({step for step, _, _ in placed})
    form.steps = [[call for step, _, call in sorted(placed) if step == number] for number in numbers]
    return form


def _picked_references(values: dict[str, Any], slot: int) -> dict[str, str]:
    picked: dict[str, str] = {}
    for pick in range(1, REF_PICKS + 1):
        target = values.get(ref_target_control(slot, pick)) or []
        reference = values.get(ref_control(slot, pick)) or []
        if target and reference:  # options are references without their dollars (see reference_options)
            text = reference[0].strip()
            picked[target[0]] = text if parse_reference(text) is not None else f"${text}$"
    return picked


def path_fingerprint(steps: Sequence[Sequence[Call]]) -> str:
    """A hash of a path's labels, tools and arguments in order (responses aside)."""
    bare = [[{"label": call.label, "name": call.name, "arguments": call.arguments} for call in step] for step in steps]
    text = json.dumps(bare, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def shown_form_fingerprint(steps: Sequence[Step], layout: FormLayout) -> str:
    """The fingerprint of the path the pre-filled forms describe (stored in the task at push: a
    form read back with the same fingerprint was left as it was shown)."""
    results = form_prefill(steps, layout)
    values: dict[str, Any] = {}
    for result in results:
        value = result["value"]
        values[result["from_name"]] = (value["text"][0] if "text" in value else
                                       value["choices"] if "choices" in value else value.get("number"))
    return path_fingerprint(read_form(values, layout.tools).steps)


def decode_choice(text: str, schema: Any) -> Any:
    """A drop-down's stored text back to the enum's value (numbers and booleans as JSON)."""
    for value in (schema.get("enum") or []) if isinstance(schema, dict) else []:
        if _choice_text(value) == text:
            return value
    if text in ("true", "false"):
        return text == "true"
    return text


def decode_argument(text: str, schema: Any) -> tuple[Any, str | None]:
    """A text field's value by the parameter's type; a reference stays a string."""
    stripped = text.strip()
    if parse_reference(stripped) is not None:
        return stripped, None
    declared = schema.get("type") if isinstance(schema, dict) else None
    types = set(declared) if isinstance(declared, list) else {declared} if declared else set()
    if types == {"string"}:
        return text, None
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        if "string" in types or not types:
            return text, None
        return None, f"{stripped!r} is not a {_type_text(schema)} (write it as JSON, e.g. 2, 4.5, true, [\"a\"])"
    return value, None
