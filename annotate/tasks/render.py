"""HTML shown to annotators (HyperText tags in label_config/*.xml). Pure string building.

Every piece of sample text is escaped: queries, tool descriptions and responses come from LLMs and
APIs, and HyperText renders inside the annotator's logged-in page. JSON is pretty-printed in <pre>
blocks so nested arguments and responses read at a glance; a long response shows its first
MAX_RESPONSE_CHARS and folds the rest in a <details> (the page of a 500 kB task stays short and
renders fast), which the browser's find-in-page (Ctrl+F) opens by itself on a match inside it.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from html import escape
from typing import Any, Iterable, Sequence

from annotate.tasks.ambiguity import Ambiguity
from annotate.tasks.entries import ResponseEntry, parse_entry_id
from fcbench.sample import Call, Sample, Tool

MAX_RESPONSE_CHARS = 4000  # shown at once; the rest of a response is folded
MAX_FOLDED_CHARS = 2_000_000  # a 128k-token sample's responses fit; past this the page itself gets slow
MAX_OPTION_CHARS = 180
ENTRY_LINE_CHARS = 600


def pretty_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def compact_json(value: Any, width: int = 96, indent: str = "") -> str:
    """JSON laid out for reading: a container that fits on one line stays on one line; a longer
    one is opened, one child per line. Items of a list of objects are prefixed with their index
    (`[2]`), the number a reference like `data[2].id` uses; this text is shown, never parsed."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(indent) + len(flat) <= width or not isinstance(value, (dict, list)) or not value or _is_flat(value):
        return flat
    inner = indent + "  "
    if isinstance(value, dict):
        lines = [f"{inner}{json.dumps(key, ensure_ascii=False)}: {compact_json(item, width, inner).lstrip()}"
                 for key, item in value.items()]
        return "{\n" + ",\n".join(lines) + f"\n{indent}}}"
    numbered = all(isinstance(item, dict) for item in value)
    # an entry (one hotel) reads best whole on one wrapped line, unless it is really large
    item_width = ENTRY_LINE_CHARS if numbered else width
    lines = [f"{inner}{f'[{index}] ' if numbered else ''}{compact_json(item, item_width, inner).lstrip()}"
             for index, item in enumerate(value)]
    return "[\n" + ",\n".join(lines) + f"\n{indent}]"


def _is_flat(value: dict[str, Any] | list[Any]) -> bool:
    """A record of plain values (one hotel, one airport) reads best as one wrapped line."""
    items = value.values() if isinstance(value, dict) else value
    return all(not isinstance(item, (dict, list)) for item in items)


def _pre(value: Any, limit: int | None = None) -> str:
    """JSON in a <pre>; past `limit` characters the rest is folded in a <details>, up to
    MAX_FOLDED_CHARS. Folded text is not laid out until opened, yet the browser's find-in-page
    (Ctrl+F; not `window.find`) searches it and opens the fold at a match. The summary is sticky
    (label config CSS), so a fold opened deep down can be folded again from where the match is."""
    text = compact_json(value)
    if limit is None or len(text) <= limit:
        return f"<pre>{escape(text)}</pre>"
    cut = text.rfind("\n", 0, limit)
    cut = cut if cut > 0 else limit
    shown, rest = text[:cut], text[cut:].lstrip("\n")
    dropped = ""
    if len(rest) > MAX_FOLDED_CHARS:
        dropped = f'<div class="muted">… {len(rest) - MAX_FOLDED_CHARS} more characters not shown</div>'
        rest = rest[:MAX_FOLDED_CHARS]
    lines = rest.count("\n") + 1
    return (f"<pre>{escape(shown)}</pre>"
            f'<details class="fold"><summary>{lines} more lines ({len(rest) // 1000} kB) folded: click to open '
            f"or fold; Ctrl+F finds text in them while folded</summary><pre>{escape(rest)}</pre></details>{dropped}")


def last_user_text(sample: Sample) -> str:
    for message in reversed(sample.messages):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return ""


def _call_html(call: Call, flagged_lists: set[str]) -> str:
    head = f"<b>{escape(call.label)}</b> = <b>{escape(call.name)}</b>"
    body = _pre(call.arguments)
    if "response" in call.model_fields_set:
        marker = ' <span class="flagged">⚠ holds ambiguous entries</span>' if call.label in flagged_lists else ""
        body += f'<div class="muted">response{marker}</div>{_pre(call.response, MAX_RESPONSE_CHARS)}'
    else:
        body += '<div class="muted">no response recorded</div>'
    return f'<div class="call">{head}{body}</div>'


def path_html(steps: Sequence[Sequence[Call]], flagged_labels: set[str] = frozenset()) -> str:
    if not steps:
        return '<div class="muted">(no calls)</div>'
    parts = []
    for number, step in enumerate(steps, start=1):
        parallel = " (parallel calls)" if len(step) > 1 else ""
        parts.append(f'<div class="step">Step {number}{parallel}</div>')
        parts.extend(_call_html(call, flagged_labels) for call in step)
    return "".join(parts)


def tools_html(tools: Iterable[Tool], highlighted: set[str] = frozenset(), detailed: set[str] | None = None) -> str:
    """The tools offered. Those in `detailed` (the ones the path calls; all when None) get one line
    per parameter (name, type, required, description): the arguments are checked against them.
    The others get their description and parameter names (`*` = required), enough to decide to
    drop one or to call it instead, without repeating a whole catalog in every task."""
    parts = []
    for tool in tools:
        mark = ' class="flagged"' if tool.name in highlighted else ""
        required = set(tool.parameters.get("required") or [])
        properties = tool.parameters.get("properties") or {}
        head = f"<b>{escape(tool.name)}</b>: {escape(tool.description)}"
        if detailed is None or tool.name in detailed:
            rows = "".join(
                f"<li><code>{escape(name)}</code> <span class=\"muted\">{escape(_type_text(schema))}"
                f"{', required' if name in required else ''}</span> {escape(str(_description(schema)))}</li>"
                for name, schema in properties.items())
            parts.append(f"<div{mark}>{head}<ul>{rows}</ul></div>")
        else:
            names = ", ".join(f"{name}{'*' if name in required else ''}" for name in properties)
            parts.append(f'<div{mark}>{head} <span class="muted">({escape(names)})</span></div>')
    return "".join(parts)


def _type_text(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    declared = schema.get("type")
    text = "/".join(declared) if isinstance(declared, list) else str(declared or "any")
    if "enum" in schema:
        text += " one of " + ", ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    return text


def _description(schema: Any) -> str:
    return schema.get("description", "") if isinstance(schema, dict) else ""


MAX_FLAGS_SHOWN = 20  # the rest are the least likely to matter; the panel says how many
MAX_CANDIDATES_SHOWN = 8
CANDIDATE_VALUE_CHARS = 40


def flags_html(flags: Sequence[Ambiguity]) -> str:
    """The "Likely ambiguous" panel: one warning per (call, argument), most likely to change the
    gold path first, each with its candidate entries on one line (`[0] "-2004001" ◀ draft`) and
    what its score is made of. Pure markup for the panel; the classes are the label config's."""
    if not flags:
        return ""
    ranked = sorted(flags, key=lambda flag: -flag.score)  # stable: ties keep the order found
    items = "".join(_flag_html(flag) for flag in ranked[:MAX_FLAGS_SHOWN])
    rest = len(ranked) - MAX_FLAGS_SHOWN
    if rest > 0:
        items += f'<div class="muted">… {rest} lower-ranked warnings not shown</div>'
    return (f"<h3>Likely ambiguous ({len(ranked)})</h3>"
            '<div class="muted">most likely to change the gold path first; tick the entries to delete '
            "below, or say in the query which one</div>" + items)


def _flag_html(flag: Ambiguity) -> str:
    head = escape(flag.key if flag.call else ", ".join(flag.tools) or flag.kind)
    why = " · ".join(flag.reasons)
    meta = f'<span class="muted">score {flag.score:.2f}{" · " + escape(why) if why else ""}</span>'
    body = f"<div>{escape(flag.message)}</div>"
    if flag.candidates:
        shown = flag.candidates[:MAX_CANDIDATES_SHOWN]
        parts = []
        for candidate in shown:
            index = candidate.entry[candidate.entry.rfind("["):] if "[" in candidate.entry else candidate.entry
            value = _short(candidate.value)
            value = value if len(value) <= CANDIDATE_VALUE_CHARS else value[:CANDIDATE_VALUE_CHARS] + "…"
            mark = " ◀ draft" if candidate.chosen else ""
            name = f" ({candidate.name[:CANDIDATE_VALUE_CHARS]})" if candidate.name and candidate.name != candidate.value else ""
            text = f"{index} {value}{name}{mark}"
            parts.append(f"<b>{escape(text)}</b>" if candidate.chosen else escape(text))
        more = len(flag.candidates) - len(shown)
        lists = sorted({candidate.entry[:candidate.entry.rfind("[")] for candidate in flag.candidates})
        body += (f'<div><span class="muted">{escape(", ".join(lists))}:</span> {" · ".join(parts)}'
                 f"{f' · … {more} more' if more > 0 else ''}</div>")
    return f'<div class="flag">⚠ <b>{head}</b> {meta}{body}</div>'


def draft_html(sample: Sample, flags: Sequence[Ambiguity]) -> str:
    flagged_labels = {parsed[0] for flag in flags for entry in flag.entries if (parsed := parse_entry_id(entry))}
    overlapping = {tool for flag in flags for tool in flag.tools}
    domain = sample.domain if isinstance(sample.domain, str) else ", ".join(sample.domain or [])
    return (
        '<div class="fcb">'
        f'<div class="muted">sample {escape(sample.id)}{" · " + escape(domain) if domain else ""}</div>'
        f'<h3>Query</h3><div class="query">{escape(last_user_text(sample))}</div>'
        f"{flags_html(flags)}"
        f"<h3>Draft path</h3>{path_html(sample.calls, flagged_labels)}"
        f"<h3>Tools</h3>{tools_html(sample.tools, overlapping, {call.name for call in sample.all_calls()})}"
        "</div>"
    )


def feedback_html(problems: Sequence[str], when: str = "") -> str:
    """What the last pull found wrong; empty when nothing (the HyperText then shows nothing)."""
    if not problems:
        return ""
    items = "".join(f"<li>{escape(problem)}</li>" for problem in problems)
    stamp = f" (annotation of {escape(readable_time(when))})" if when else ""
    return (f'<div class="fcb"><div class="feedback"><b>Sent back by the checks{stamp}: '
            f"please fix and submit again</b><ul>{items}</ul></div></div>")


def readable_time(stamp: str) -> str:
    """An ISO timestamp from Label Studio (`2026-11-25T08:41:07.123456Z`) as people read it,
    `2026-11-25 08:41 UTC`; a text that is not one is shown as it is."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    return moment.strftime("%Y-%m-%d %H:%M")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_OPTION_CHARS else text[:MAX_OPTION_CHARS] + "…"


def entry_summary(value: Any, limit: int = 110) -> str:
    """An entry as its first scalar fields, `dest_id=-2004001 · search_type=CITY · name=Paris`:
    enough to recognise it beside the full response shown on the left."""
    if not isinstance(value, dict):
        return _short(value)[:limit]
    parts = [f"{key}={item}" for key, item in value.items()
             if isinstance(item, (str, int, float)) and not isinstance(item, bool)]
    text = " · ".join(parts) if parts else _short(value)
    return text if len(text) <= limit else text[:limit] + "…"


def entry_option(entry: ResponseEntry, flagged: bool) -> dict[str, str]:
    """One checkbox of `<Choices value="$entry_options">`: the stored value is the entry id."""
    css = "fcb-opt flagged" if flagged else "fcb-opt"
    mark = "⚠ " if flagged else ""
    return {"value": entry.id,
            "html": f'<span class="{css}">{mark}<b>{escape(entry.id)}</b> {escape(entry_summary(entry.value))}</span>'}


def tool_option(tool: Tool, flagged: bool) -> dict[str, str]:
    css = "fcb-opt flagged" if flagged else "fcb-opt"
    mark = "⚠ " if flagged else ""
    description = tool.description if len(tool.description) <= 90 else tool.description[:90] + "…"
    return {"value": tool.name,
            "html": f'<span class="{css}">{mark}<b>{escape(tool.name)}</b> {escape(description)}</span>'}


def variant_html(sample: Sample, template: Sample | None) -> str:
    """The junior filling view: the variant's query, the path to fill (blanks are null), and the
    template it varies with its own arguments and responses as the worked example."""
    if template is not None:
        example = (f'<h3>Template (worked example)</h3><div class="muted">query: '
                   f"{escape(last_user_text(template))}</div>{path_html(template.calls)}")
    else:
        example = f"<h3>Path to fill</h3>{path_html(sample.calls)}"
    return (
        '<div class="fcb">'
        f'<div class="muted">candidate {escape(sample.id)}</div>'
        f'<h3>Query to fill the arguments for</h3><div class="query">{escape(last_user_text(sample))}</div>'
        f"{example}"
        f"<h3>Tools</h3>{tools_html(sample.tools, set(), {call.name for call in sample.all_calls()})}"
        "</div>"
    )


def review_html(gold: Sample, changes: Sequence[str]) -> str:
    """The QA review view: the gold sample and what the annotator changed in the draft."""
    items = "".join(f'<div class="change">{escape(change)}</div>' for change in changes) or \
        '<div class="muted">the draft was accepted unchanged</div>'
    return (
        '<div class="fcb">'
        f'<div class="muted">gold sample {escape(gold.id)}</div>'
        f'<h3>Query</h3><div class="query">{escape(last_user_text(gold))}</div>'
        f"<h3>Changes from the draft</h3>{items}"
        f"<h3>Gold path</h3>{path_html(gold.calls)}"
        f"<h3>Tools</h3>{tools_html(gold.tools)}"
        "</div>"
    )
