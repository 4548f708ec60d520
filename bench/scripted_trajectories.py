"""Scripted model trajectories made from gold samples, for measuring the scorer (pure: no I/O).

A scripted "model" follows each sample's gold path, one turn per gold step, and deviates from it
with a documented, seeded mix (`DEFAULT_MIX`), then answers in text. Every predicted call carries
the kind of deviation it got and whether it is meant to be equivalent to its gold call, so a mock
judge can answer as a correct judge would and a report can say which kinds reach the judge.

Per call, one kind (weights in `DEFAULT_MIX.call`; a kind that cannot apply to a call falls back
along `FALLBACK`, ending at `exact`, and the applied kind is what is recorded):

- equivalent, for the rule layer: `exact`; `reordered` (arguments in reverse order);
  `number_spelling` (2 -> 2.0, 180.0 -> 180); `text_spelling` (case and spacing of a free-text
  string: no enum, pattern, format or identifier); `default_added` (an optional parameter given its
  schema default); `default_omitted` (an argument equal to its default left out);
- equivalent only by judgement, for the LLM judge: `place_qualified` (a place query with its
  country added: "Orchard" -> "Orchard, Singapore", the judge prompt's rule 3); `rounded_coordinate`
  (a latitude or longitude rounded to 3 decimals);
- not equivalent: `wrong_pick` (an argument read from another entry of the same earlier response:
  "the second hotel" for "the cheapest"); `wrong_value` (another date, time, number, enum member,
  or another place of the same request); `missing_optional` (an optional argument the gold call sets is left out);
  `wrong_function` (a sibling tool taking the same arguments).

Per step: `missing_call` (one call of a parallel step is not made) and `extra_call` (a call of the
step made twice). Per sample: `stop_early` (the model answers before the last step). After a
non-equivalent call the model corrects itself in the next turn with probability
`correct_after_error` (the protocol feeds the error back for that); otherwise it goes on.
`WEAK_MIX` doubles every rate of a mistake, for a weaker model.

Date spellings other than YYYY-MM-DD are not scripted: the travel schemas pin the format with a
pattern, and the rule layer does not treat other spellings as equal.
"""

from __future__ import annotations

import copy
import datetime
import json
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from fcbench.references import parse_reference
from fcbench.resolve import walk_path
from fcbench.sample import Call, Sample, Tool
from fcbench.score.complexeval import gold_steps_with_values, parameter_type

EQUIVALENT_KINDS = ("exact", "reordered", "number_spelling", "text_spelling", "default_added", "default_omitted")
JUDGEMENT_KINDS = ("place_qualified", "rounded_coordinate")
WRONG_KINDS = ("wrong_pick", "wrong_value", "missing_optional", "wrong_function")
# What a kind becomes when it cannot apply to a call (a look-up has no optional parameter to add):
# an equivalent variant tries the other variants before `exact`, a wrong kind becomes `wrong_value`.
FALLBACK = {
    "place_qualified": "rounded_coordinate", "rounded_coordinate": "reordered",
    "reordered": "text_spelling", "text_spelling": "default_added", "default_added": "number_spelling",
    "number_spelling": "default_omitted", "default_omitted": "exact",
    "wrong_pick": "wrong_value", "missing_optional": "wrong_value", "wrong_function": "wrong_value",
    "wrong_value": "exact",
}
OTHER_PLACES = ("Lisbon", "Osaka", "Vancouver", "Marrakesh", "Reykjavik", "Valparaiso")


@dataclass(frozen=True)
class DeviationMix:
    call: tuple[tuple[str, float], ...]
    missing_call: float  # per step with two calls or more
    extra_call: float  # per step
    stop_early: float  # per sample with two steps or more
    correct_after_error: float  # per non-equivalent call


DEFAULT_MIX = DeviationMix(
    call=(("exact", 0.55), ("reordered", 0.08), ("number_spelling", 0.05), ("text_spelling", 0.05),
          ("default_added", 0.05), ("default_omitted", 0.04), ("place_qualified", 0.02),
          ("rounded_coordinate", 0.02), ("wrong_pick", 0.06), ("wrong_value", 0.05),
          ("missing_optional", 0.01), ("wrong_function", 0.02)),
    missing_call=0.03, extra_call=0.02, stop_early=0.03, correct_after_error=0.5,
)


WEAK_MIX = DeviationMix(
    call=(("exact", 0.40), ("reordered", 0.08), ("number_spelling", 0.05), ("text_spelling", 0.05),
          ("default_added", 0.05), ("default_omitted", 0.04), ("place_qualified", 0.02),
          ("rounded_coordinate", 0.02), ("wrong_pick", 0.12), ("wrong_value", 0.10),
          ("missing_optional", 0.02), ("wrong_function", 0.05)),
    missing_call=0.06, extra_call=0.04, stop_early=0.06, correct_after_error=0.5,
)
"""A weaker model: twice the wrong calls, missing and extra calls and early stops of `DEFAULT_MIX`."""
MIXES = {"default": DEFAULT_MIX, "weak": WEAK_MIX}


@dataclass(frozen=True)
class Scene:
    """What a deviation may draw on: the sample's tools, the gold responses of earlier steps, and
    the free-text values of the whole gold path (a wrong place is most often another place of the
    same request)."""

    tools: Mapping[str, Tool]
    outputs: Mapping[str, Any]
    texts: tuple[str, ...]


@dataclass(frozen=True)
class ScriptedCall:
    """One predicted call: where it is, what it deviates by, and whether it means the gold call."""

    turn: int
    index: int
    kind: str
    name: str
    arguments: dict[str, Any]
    gold_label: str | None
    equivalent: bool | None  # None: no gold call of its own (an extra call)


@dataclass
class ScriptedTrajectory:
    sample_id: str
    turns: list[Any] = field(default_factory=list)  # lists of {"name", "arguments"}, then a final text
    calls: list[ScriptedCall] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # gold labels never called (missing_call, stop_early)

    def to_line(self) -> dict[str, Any]:
        """A line of the `score --metric complexeval` predictions file."""
        return {"id": self.sample_id, "turns": self.turns}


def script_trajectory(sample: Sample, seed: int, mix: DeviationMix = DEFAULT_MIX) -> ScriptedTrajectory:
    """The scripted trajectory of one sample: deterministic from (seed, sample id)."""
    rng = random.Random(f"{seed}:{sample.id}")
    tools = {tool.name: tool for tool in sample.tools}
    resolved_steps, raw_steps = gold_steps_with_values(sample), sample.all_steps()
    texts = tuple(sorted({value for step in resolved_steps for call in step for param, value in call.arguments.items()
                          if _free_text(param, value, _properties(tools.get(call.name)), call.name)}))
    trajectory = ScriptedTrajectory(sample.id)
    stop_at = rng.randrange(1, len(raw_steps)) if len(raw_steps) > 1 and rng.random() < mix.stop_early else None
    outputs: dict[str, Any] = {}
    kinds, weights = zip(*mix.call)
    for step_index, (resolved, raw) in enumerate(zip(resolved_steps, raw_steps)):
        if step_index == stop_at:
            trajectory.skipped += [call.label for step in raw_steps[step_index:] for call in step]
            break
        skip = rng.randrange(len(raw)) if len(raw) > 1 and rng.random() < mix.missing_call else None
        turn, corrections = len(trajectory.turns), []
        made: list[dict[str, Any]] = []
        for position, (gold, raw_call) in enumerate(zip(resolved, raw)):
            if position == skip:
                trajectory.skipped.append(gold.label)
                continue
            wanted = rng.choices(kinds, weights)[0]
            kind, name, arguments = deviate(wanted, gold, raw_call, Scene(tools, outputs, texts), rng)
            equivalent = kind not in WRONG_KINDS
            trajectory.calls.append(ScriptedCall(turn, len(made), kind, name, arguments, gold.label, equivalent))
            made.append({"name": name, "arguments": arguments})
            if not equivalent and rng.random() < mix.correct_after_error:
                corrections.append(gold)
        if made and rng.random() < mix.extra_call:
            twin = copy.deepcopy(made[rng.randrange(len(made))])
            trajectory.calls.append(ScriptedCall(turn, len(made), "extra_call", twin["name"], twin["arguments"],
                                                 None, None))
            made.append(twin)
        if made:
            trajectory.turns.append(made)
        if corrections:
            turn = len(trajectory.turns)
            trajectory.turns.append([{"name": gold.name, "arguments": copy.deepcopy(gold.arguments)}
                                     for gold in corrections])
            trajectory.calls += [ScriptedCall(turn, i, "correction", gold.name, gold.arguments, gold.label, True)
                                 for i, gold in enumerate(corrections)]
        for call in raw:
            if "response" in call.model_fields_set:
                outputs[call.label] = call.response
    trajectory.turns.append(final_text(sample))
    return trajectory


def final_text(sample: Sample) -> str:
    """A plain final answer; the answer judges are asked about it, whatever it says."""
    return f"Here is what I found for your request ({len(sample.all_calls())} look-ups made)."


# ------------------------------------------------------------------------------- one call's deviation
def deviate(kind: str, gold: Call, raw: Call, scene: Scene, rng: random.Random) -> tuple[str, str, dict[str, Any]]:
    """(applied kind, name, arguments) of the predicted call; `gold` has literal values, `raw` the
    gold call as written (with its references)."""
    tool = scene.tools.get(gold.name)
    properties = _properties(tool)
    required = set((tool.parameters.get("required") or []) if tool else [])
    arguments = copy.deepcopy(dict(gold.arguments))
    while True:
        changed = _apply(kind, gold, raw, arguments, properties, required, scene, rng)
        if changed is not None:
            name, new_arguments = changed
            return kind, name, new_arguments
        kind = FALLBACK.get(kind, "exact")


def _properties(tool: Tool | None) -> Mapping[str, Any]:
    return (tool.parameters.get("properties") or {}) if tool else {}


def _apply(kind: str, gold: Call, raw: Call, arguments: dict[str, Any], properties: Mapping[str, Any],
           required: set[str], scene: Scene, rng: random.Random) -> tuple[str, dict[str, Any]] | None:
    name = gold.name
    if kind == "exact":
        return name, arguments
    if kind == "reordered":
        return (name, dict(reversed(list(arguments.items())))) if len(arguments) > 1 else None
    if kind == "number_spelling":
        params = [p for p, v in arguments.items() if _is_number(v) and float(v).is_integer()]
        return _with(name, arguments, rng, params, lambda v: float(v) if isinstance(v, int) else int(v))
    if kind == "text_spelling":
        params = [p for p, v in arguments.items() if _free_text(p, v, properties, name)]
        return _with(name, arguments, rng, params, lambda v: _respell(v, rng))
    if kind == "default_added":
        params = [p for p, s in properties.items() if p not in arguments and isinstance(s, dict) and "default" in s]
        if not params:
            return None
        param = rng.choice(params)
        return name, {**arguments, param: properties[param]["default"]}
    if kind == "default_omitted":
        params = [p for p, v in arguments.items() if p not in required
                  and (properties.get(p) or {}).get("default", object()) == v]
        return _without(name, arguments, rng, params)
    if kind == "missing_optional":
        params = [p for p, v in arguments.items() if p not in required
                  and (properties.get(p) or {}).get("default", object()) != v]
        return _without(name, arguments, rng, params)
    if kind == "place_qualified":
        country = _country(gold.response) if "response" in gold.model_fields_set else None
        params = [p for p, v in arguments.items() if _free_text(p, v, properties, name)
                  and country and country.casefold() not in v.casefold()]
        return _with(name, arguments, rng, params, lambda v: f"{v}, {country}")
    if kind == "rounded_coordinate":
        params = [p for p, v in arguments.items() if isinstance(v, float) and _decimals(v) > 3
                  and parameter_type(p, properties.get(p), name) == "location"]
        return _with(name, arguments, rng, params, lambda v: round(v, 3))
    if kind == "wrong_pick":
        return _wrong_pick(name, arguments, raw, scene.outputs, rng)
    if kind == "wrong_value":
        wrong = {p: _wrong(v, properties.get(p) or {}, p, name, scene.texts, rng) for p, v in arguments.items()}
        params = sorted(p for p, value in wrong.items() if value is not None)
        if not params:
            return None
        param = rng.choice(params)
        return name, {**arguments, param: wrong[param]}
    if kind == "wrong_function":
        siblings = [t.name for t in scene.tools.values() if t.name != name
                    and set(t.parameters.get("required") or []) <= set(arguments)
                    and set(arguments) <= set(t.parameters.get("properties") or {})]
        return (rng.choice(sorted(siblings)), arguments) if siblings else None
    raise ValueError(f"unknown deviation kind {kind!r}")


def _with(name: str, arguments: dict[str, Any], rng: random.Random, params: Sequence[str],
          change: Any) -> tuple[str, dict[str, Any]] | None:
    if not params:
        return None
    param = rng.choice(sorted(params))
    return name, {**arguments, param: change(arguments[param])}


def _without(name: str, arguments: dict[str, Any], rng: random.Random,
             params: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    if not params:
        return None
    param = rng.choice(sorted(params))
    return name, {p: v for p, v in arguments.items() if p != param}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _decimals(value: float) -> int:
    text = repr(value)
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def _free_text(param: str, value: Any, properties: Mapping[str, Any], function_name: str) -> bool:
    """Words in a string parameter the schema leaves free (no enum, pattern or format), not an identifier."""
    schema = properties.get(param) or {}
    if not isinstance(value, str) or not any(ch.isalpha() for ch in value):
        return False
    if any(key in schema for key in ("enum", "pattern", "format")):
        return False
    identifier = parameter_type(param, schema, function_name) in ("token", "slug", "id") \
        or param.lower().endswith(("id", "key", "token"))
    return not identifier


def _respell(value: str, rng: random.Random) -> str:
    options = [value.lower(), value.upper(), f"  {value} ", value.replace(" ", "  ")]
    return rng.choice([option for option in options if option != value] or [f" {value}"])


def _country(response: Any) -> str | None:
    """The country of a place look-up's first candidate, as its response gives it."""
    data = response.get("data") if isinstance(response, dict) else None
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    country = first.get("country")
    return country if isinstance(country, str) and country else None


def _wrong(value: Any, schema: Mapping[str, Any], param: str, function_name: str, texts: Sequence[str],
           rng: random.Random) -> Any:
    """Another value of the same kind, or None when no plausible other value is known: another
    date or time a day or an hour off, another number, another enum member, another place of the
    same request (else a city it does not name)."""
    if isinstance(value, bool):
        return not value
    enum = schema.get("enum") or []
    if isinstance(value, str) and enum:
        others = [member for member in enum if member != value]
        return rng.choice(others) if others else None
    if _is_number(value):
        if isinstance(value, int) or float(value).is_integer():
            return int(value) + rng.choice((1, 2))
        return round(value + rng.choice((-1, 1)) * 0.05, _decimals(value))
    if isinstance(value, str):
        try:
            return (datetime.date.fromisoformat(value) + datetime.timedelta(days=rng.choice((-1, 1)))).isoformat()
        except ValueError:
            pass
        if len(value) == 5 and value[2] == ":" and value.replace(":", "").isdigit():
            hour = (int(value[:2]) + rng.choice((1, 23))) % 24
            return f"{hour:02d}{value[2:]}"
        if _free_text(param, value, {param: schema}, function_name):
            others = [text for text in texts if text.strip().casefold() != value.strip().casefold()]
            return rng.choice(others or [place for place in OTHER_PLACES if place.casefold() != value.casefold()])
    return None


def _wrong_pick(name: str, arguments: dict[str, Any], raw: Call, outputs: Mapping[str, Any],
                rng: random.Random) -> tuple[str, dict[str, Any]] | None:
    """An argument read from another entry of the list the gold reference indexes into."""
    choices = []
    for param, written in raw.arguments.items():
        reference = parse_reference(written)
        if reference is None or reference.label not in outputs:
            continue
        for position, part in enumerate(reference.path):
            if not isinstance(part, int):
                continue
            try:
                entries = walk_path(outputs[reference.label], reference.path[:position])
            except (LookupError, TypeError):
                continue
            if not isinstance(entries, list):
                continue
            for other in range(len(entries)):
                if other == part:
                    continue
                path = (*reference.path[:position], other, *reference.path[position + 1:])
                try:
                    value = walk_path(outputs[reference.label], path)
                except (LookupError, TypeError):
                    continue
                if value != arguments.get(param) and not isinstance(value, (dict, list)):
                    choices.append((param, value))
    if not choices:
        return None
    param, value = rng.choice(choices)
    return name, {**arguments, param: value}


def pair_key(predicted_name: str, predicted_arguments: Mapping[str, Any], gold: Call) -> str:
    """How a mock judge recognises a pair in its prompt: both calls as the prompt writes them."""
    return json.dumps([{"name": predicted_name, "arguments": predicted_arguments},
                       {"name": gold.name, "arguments": gold.arguments}], sort_keys=True, ensure_ascii=False)

