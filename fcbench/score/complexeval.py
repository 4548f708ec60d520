"""ComplexEval, ComplexFuncBench's multi-step protocol (arXiv 2501.10132, Algorithm 1), as a pure
state machine plus the metrics of the paper's Table 2.

Protocol (one sample):
- the CURRENT golden list starts with the calls of gold step 1;
- at each model turn the predicted calls are format-checked (ComplexEval's messages) and paired
  with the current golden list (`match_step`: exact matches first, then the Hungarian algorithm);
  a matched call is removed from the list and answered with its gold call's recorded response; a
  call with a format problem is answered with the problem (so the model can fix it); any other
  call gets a fixed error response;
- when no required call of the current list is left, the next gold step's calls are added (a
  step's calls are parallel, so they only become callable once the previous step is done);
- a turn where nothing matched and nothing had a format problem ends the session (the published
  evaluator does the same: the model went off the path and nothing it sees will bring it back);
- when the model stops (final text, or a turn without calls) with required gold calls left, the
  sample fails with `stop_early`.

Verdict of a sample: success when every required gold call was matched and the model's last call
turn had no failed call (a call that failed earlier and was then corrected is forgiven, as in the
published evaluator, since the protocol feeds errors back precisely so that the model can correct
them). Call accuracy = correct calls / gold calls, summed over samples (micro average).

Error taxonomy (paper, error analysis), per failed call and per failed sample:
- `func_error`: another function than the gold one (also: an unknown function, a call left over
  once no gold call remains to pair it with, a call after the gold path was complete);
- `param_missing`: a gold (or schema-required) parameter left out;
- `hallucination`: a parameter not in the schema or not in the gold call, or a wrong value that
  appears nowhere in what the model has seen (not grounded: judged by a pluggable
  `GroundingJudge`, rule-based default `value_in_text`);
- `value_error`: a wrong value that is grounded (copied from the query or a response, but the
  wrong one), or a value of the wrong JSON type;
- `stop_early`: the model stopped with required gold calls left.

"Optional" functions (`optional_functions`, e.g. ComplexFuncBench's location look-ups, listed in
`COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS`) never block the next step and are not needed for success:
a model that already knows an id need not look it up. None are optional by default.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from fcbench.environments import Environment
from fcbench.environments.recorded import UNKNOWN_CALL_RESPONSE
from fcbench.resolve import CallSite, UnresolvedReference, resolve_arguments
from fcbench.sample import AcceptableValues, Call, Sample, Tool
from fcbench.errors import JudgeError
from fcbench.score.gold_set import GoldAlignment, align_to_gold, item_id
from fcbench.score.matching import (
    CallDecodeError,
    CallLike,
    CallSimilarity,
    arguments_equivalent,
    FormatIssue,
    MatchDecision,
    MatchLayer,
    PredictedCall,
    StepMatch,
    as_predicted_call,
    call_similarity,
    fill_defaults,
    match_step,
    values_equivalent,
)
from fcbench.score.registry import metric

REPEAT_LAYER = "repeat"  # a judgement's layer for a repeated optional look-up (no error, not counted)
ERROR_TYPES = ("func_error", "param_missing", "hallucination", "value_error", "stop_early")
PARAMETER_TYPES = ("date", "location", "filter", "legs", "token", "slug", "id", "number", "other")

COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS = frozenset(
    {
        "Location_to_Lat_Long",
        "Search_Hotel_Destination",
        "Search_Attraction_Location",
        "Search_Car_Location",
        "Search_Flight_Location",
        "Taxi_Search_Location",
    }
)
"""The look-ups ComplexFuncBench's evaluator treats as free (a model may skip them)."""

# ---------------------------------------------------------------------------------------------
# Parameter types (rule-based, documented)

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_LOCATION_WORDS = frozenset(
    {"latitude", "longitude", "lat", "lng", "lon", "location", "locations", "coordinates", "city",
     "country", "region", "address", "place", "airport", "destination", "dest", "from", "to"}
)
_DATE_WORDS = frozenset({"date", "dates", "time", "day", "checkin", "checkout", "month", "year"})
_FILTER_WORDS = frozenset({"filter", "filters", "sort", "order", "categories", "category"})
_DATE_FORMATS = frozenset({"date", "date-time", "time"})
_DATE_DESCRIPTION = re.compile(r"yyyy-mm-dd|\bdate\b|hh:mm", re.IGNORECASE)
_LOCATION_DESCRIPTION = re.compile(
    r"\b(city|cities|airport|landmark|address|location|place|region|destination|latitude|longitude)\b",
    re.IGNORECASE,
)
_LOOKUP_FUNCTION_WORDS = frozenset({"location", "destination", "lat", "long", "place", "airport", "city"})


def name_words(name: str) -> list[str]:
    """`pick_up_latitude` / `fromId` / `categories_filter` split into lower-case words."""
    return [word.lower() for word in _WORD.findall(name)]


def parameter_type(name: str, schema: Mapping[str, Any] | None = None, function_name: str = "") -> str:
    """Classify a parameter into one of `PARAMETER_TYPES`, first rule that fires:

    1. legs / token / slug: the word appears in the name (`legs`, `offerToken`, `productSlug`);
    2. filter: a name word among filter, sort, order, categories (`categories_filter`, `sort_by`);
    3. date: a name word among date, time, day, checkin, checkout..., or the schema `format` is
       date/date-time/time;
    4. location: a name word among latitude, longitude, location, city, airport, dest, from, to...
       (`fromId`, `dest_id`, `drop_off_latitude`: an id OF a place is a location);
    5. id: the last name word is id/ids;
    6. number: the schema type is integer or number;
    7. description fallback: "yyyy-mm-dd" / "date" -> date; city, airport, landmark, address,
       destination... -> location;
    8. the free-text `query` of a look-up function named after places (`Search_Car_Location`,
       `Search_Hotel_Destination`) -> location;
    9. other.
    """
    words = name_words(name)
    schema = schema or {}
    for kind in ("legs", "token", "slug"):
        if kind in words or kind + "s" in words:
            return kind
    if _FILTER_WORDS.intersection(words):
        return "filter"
    if _DATE_WORDS.intersection(words) or schema.get("format") in _DATE_FORMATS:
        return "date"
    if _LOCATION_WORDS.intersection(words):
        return "location"
    if words and words[-1] in ("id", "ids"):
        return "id"
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared]
    if "integer" in types or "number" in types:
        return "number"
    description = str(schema.get("description", ""))
    if _DATE_DESCRIPTION.search(description):
        return "date"
    if _LOCATION_DESCRIPTION.search(description):
        return "location"
    if words == ["query"] and _LOOKUP_FUNCTION_WORDS.intersection(name_words(function_name)):
        return "location"
    return "other"


# ---------------------------------------------------------------------------------------------
# Grounding: is a value something the model has seen?

GroundingJudge = Callable[[Any, str], bool]
"""`(value, context_text) -> grounded?`; the context is everything the model has seen."""

# A minus sign right after a digit is a separator, so "2024-11-15" gives 2024, 11 and 15.
_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?")


def numbers_in_text(text: str) -> set[float]:
    return {float(match) for match in _NUMBER.findall(text)}


def value_in_text(value: Any, context: str) -> bool:
    """Rule-based grounding: a string is grounded when it appears (case-folded) in the context, a
    number when the same number is written there, a list or object when all its leaves are;
    booleans and null carry no content that could be invented, so they count as grounded."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, str):
        return " ".join(value.split()).casefold() in " ".join(context.split()).casefold()
    if isinstance(value, (int, float)):
        return math.isfinite(value) and float(value) in numbers_in_text(context)
    if isinstance(value, list):
        return all(value_in_text(item, context) for item in value)
    if isinstance(value, dict):
        return all(value_in_text(item, context) for item in value.values())
    return False


# ---------------------------------------------------------------------------------------------
# Per-call and per-parameter judgements


@dataclass(frozen=True)
class ParameterCheck:
    """One parameter of a predicted call compared with the gold call it was paired with."""

    parameter: str
    parameter_type: str
    ok: bool
    problem: str | None = None  # missing | wrong_value | extra


@dataclass
class CallJudgement:
    """What happened to one predicted call of one model turn."""

    turn: int
    index: int
    name: str
    arguments: dict[str, Any]
    response: Any
    gold_label: str | None = None  # the gold call it was paired with
    matched: bool = False
    layer: str | None = None  # the matching layer that decided (rule, acceptable, response, ...)
    error_type: str | None = None  # one of ERROR_TYPES (never stop_early) when not matched
    detail: str = ""
    parameters: list[ParameterCheck] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"turn": self.turn, "index": self.index, "name": self.name,
                                "arguments": self.arguments, "matched": self.matched}
        if self.gold_label is not None:
            data["gold_label"] = self.gold_label
        if self.layer is not None:
            data["layer"] = self.layer
        if self.error_type is not None:
            data["error_type"] = self.error_type
            data["detail"] = self.detail
        return data


@dataclass
class SessionRecord:
    """Everything a session saw and decided, in order; enough to audit a verdict."""

    turns: list[list[CallJudgement]] = field(default_factory=list)
    final_text: str | None = None
    matched_labels: list[str] = field(default_factory=list)
    remaining_labels: list[str] = field(default_factory=list)  # required gold calls never matched
    error_type: str | None = None
    error_detail: str = ""
    stop_reason: str | None = None  # final_text | no_calls | off_path | after_complete

    @property
    def success(self) -> bool:
        return self.stop_reason is not None and self.error_type is None

    def judgements(self) -> list[CallJudgement]:
        return [judgement for turn in self.turns for judgement in turn]


class SessionFinished(RuntimeError):
    """`respond` was called on a session that has already ended."""


@dataclass(frozen=True)
class ComplexEvalOptions:
    """How calls are compared and how the session answers; shared by every entry point."""

    layers: Sequence[MatchLayer] = ()  # costly equivalence layers (response-based, LLM judge...)
    similarity: CallSimilarity = call_similarity  # pairing of the non-exact calls
    exact_parameters: Mapping[str, Collection[str]] | None = None  # by function name
    optional_functions: Collection[str] = ()
    grounding: GroundingJudge = value_in_text
    stop_on_unmatched_turn: bool = True
    unknown_call_response: Any = field(default_factory=lambda: dict(UNKNOWN_CALL_RESPONSE))


def response_match_layer(environment: Environment) -> MatchLayer:
    """ComplexEval's response-based layer: a predicted call is equivalent to the gold call when
    the environment answers it with the gold call's recorded response. Undecided (None) when the
    call fails or the gold call has no recorded response, so later layers still get a say."""

    def decide(predicted: PredictedCall, gold: Call, tool: Tool | None) -> bool | None:
        if "response" not in gold.model_fields_set:
            return None
        outcome = environment.call(predicted.name, predicted.arguments)
        if outcome.ok and outcome.response == gold.response:
            return True
        return None

    return MatchLayer("response", decide)


# ---------------------------------------------------------------------------------------------
# Differences a rule can settle (before the LLM judge)

TYPED_DIFFERENCE_LAYER = "rule_typed"
_IDENTIFIER_WORDS = frozenset({"id", "ids", "key", "token", "slug"})


def typed_difference_layer() -> MatchLayer:
    """Says "not equivalent" for pairs whose difference no reading of the conversation can undo,
    so the LLM judge is asked only about what needs judgement (`typed_difference`); undecided
    (None) otherwise. It comes after the response layer: a call that gets the gold call's response
    is equivalent whatever its arguments say."""

    def decide(predicted: PredictedCall, gold: Call, tool: Tool | None) -> bool | None:
        if predicted.name != gold.name:
            return None
        difference = typed_difference(predicted.arguments, gold.arguments, tool.parameters if tool else None,
                                      gold.name)
        return False if difference is not None else None

    return MatchLayer(TYPED_DIFFERENCE_LAYER, decide)


def typed_difference(predicted: Mapping[str, Any], gold: Mapping[str, Any], schema: Mapping[str, Any] | None,
                     function_name: str = "") -> str | None:
    """The first parameter whose values cannot mean the same thing, by the kind of value the schema
    declares, or None when only judgement can tell. These are the differences the judge prompt
    (`complexeval_call_equivalence.txt`) itself lists as making two calls different: another date,
    another id, another number of people, another sort order, a missing or an extra filter.

    Settled, after schema defaults are filled on both sides (so an omitted default is no difference):
    - two different booleans; two different integers;
    - two different numbers, unless one is the other rounded (48.8566 and 48.86: judgement);
    - two different members of an enum (another sort order, another currency);
    - two different dates, times or date-times (each parsed as ISO 8601; parse failure: undecided);
    - two different identifiers (a token, slug, key or id parameter, neither value with spaces,
      neither written inside the other): they name two different things;
    - a parameter of one of those kinds given on one side only (a filter set on one side only),
      unless its description speaks of a default the schema does not declare.
    Free text (place names, queries), lists and objects are never settled here: "NY" and "New York"
    are for the judge."""
    properties = (schema or {}).get("properties") or {}
    left, right = fill_defaults(predicted, schema), fill_defaults(gold, schema)
    for param in [*right, *(p for p in left if p not in right)]:
        param_schema = properties.get(param) if isinstance(properties.get(param), Mapping) else {}
        if param in left and param in right:
            if values_equivalent(left[param], right[param], param_schema):
                continue
            if _distinct_values(left[param], right[param], param_schema, param, function_name):
                return f"Parameter {param}: {left[param]!r} and {right[param]!r} cannot mean the same."
        else:
            value = left[param] if param in left else right[param]
            # a default documented only in words ("5 km by default") is the judge's to apply
            described_default = "default" in str(param_schema.get("description", "")).lower()
            if not described_default and _settled_kind(value, param_schema, param, function_name):
                side = "the prediction" if param in left else "the gold call"
                return f"Parameter {param} is set only in {side}."
    return None


def _settled_kind(value: Any, schema: Mapping[str, Any], param: str, function_name: str) -> bool:
    """Whether a value is of a kind whose presence alone changes the call (typed, not free text)."""
    if isinstance(value, bool) or _is_number_value(value):
        return True
    if isinstance(value, str):
        return (value in (schema.get("enum") or ()) or _iso_kind(schema, param) is not None
                or _is_identifier(value, param, schema, function_name))
    return False


def _distinct_values(left: Any, right: Any, schema: Mapping[str, Any], param: str, function_name: str) -> bool:
    if isinstance(left, bool) and isinstance(right, bool):
        return left != right
    if _is_number_value(left) and _is_number_value(right):
        return not (_rounds_to(left, right) or _rounds_to(right, left))
    if not (isinstance(left, str) and isinstance(right, str)):
        return False
    enum = [member.casefold() for member in schema.get("enum") or () if isinstance(member, str)]
    if enum and left.strip().casefold() in enum and right.strip().casefold() in enum:
        return True
    kind = _iso_kind(schema, param)
    if kind is not None:
        parsed = _parse_iso(left.strip(), kind), _parse_iso(right.strip(), kind)
        return None not in parsed and parsed[0] != parsed[1]
    if not (_is_identifier(left, param, schema, function_name) and _is_identifier(right, param, schema, function_name)):
        return False
    # "LHR" and "LHR.AIRPORT": one id written inside the other may be a shorter spelling (judgement)
    small, large = sorted((left.strip().casefold(), right.strip().casefold()), key=len)
    return small not in large


def _is_number_value(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _rounds_to(precise: float, rounded: float) -> bool:
    """`rounded` is `precise` rounded to the decimals `rounded` is written with (0 to 12)."""
    text = repr(float(rounded))
    if "e" in text or "E" in text:
        return False
    decimals = len(text.split(".")[1].rstrip("0"))
    # within half a unit of its last written decimal (whichever way a tie was rounded)
    return decimals <= 12 and abs(float(precise) - float(rounded)) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9)


def _iso_kind(schema: Mapping[str, Any], param: str) -> str | None:
    """date / time / date-time when the schema says so (format, or a date / HH:MM pattern)."""
    declared = schema.get("format")
    if declared in ("date", "time", "date-time"):
        return str(declared)
    pattern = str(schema.get("pattern") or "")
    if r"\d{4}-\d{2}-\d{2}" in pattern:
        return "date"
    described = "hh:mm" in str(schema.get("description", "")).lower()
    if "time" in name_words(param) and (":" in pattern or described):
        return "time"
    return None


def _parse_iso(text: str, kind: str) -> Any:
    parser = {"date": datetime.date.fromisoformat, "time": datetime.time.fromisoformat,
              "date-time": datetime.datetime.fromisoformat}[kind]
    try:
        return parser(text)
    except ValueError:
        return None


def _is_identifier(value: str, param: str, schema: Mapping[str, Any], function_name: str) -> bool:
    """An opaque identifier: a token/slug/key/id parameter (by name) holding a value without spaces."""
    words = name_words(param)
    named = bool(words) and (words[-1] in _IDENTIFIER_WORDS
                             or parameter_type(param, schema, function_name) in ("token", "slug", "id"))
    return named and bool(value.strip()) and not any(ch.isspace() for ch in value.strip())


# ---------------------------------------------------------------------------------------------
# The session (pure state machine)


class ComplexEvalSession:
    """Drive one sample through ComplexEval: feed each model turn's calls to `respond`, which
    returns the responses to show the model (same order); end with `stop(final_text)`. A driver
    loops while `not session.finished`."""

    def __init__(self, sample: Sample, options: ComplexEvalOptions = ComplexEvalOptions()) -> None:
        self.sample = sample
        self.options = options
        self.tools = list(sample.tools)
        self.tools_by_name = {tool.name: tool for tool in self.tools}
        self.steps = gold_steps_with_values(sample)
        self.record = SessionRecord()
        self.finished = False
        self._current: list[Call] = []
        self._matched_optional: list[Call] = []  # optional gold calls already matched (a repeat is free)
        self._next_step = 0
        self._context = [_message_text(message) for message in sample.messages]
        self._advance()

    # -- state ------------------------------------------------------------------------------

    @property
    def n_gold_calls(self) -> int:
        return sum(len(step) for step in self.steps)

    @property
    def current_gold(self) -> list[Call]:
        """The gold calls the model may make now (a copy)."""
        return list(self._current)

    def _is_optional(self, call: Call) -> bool:
        return call.name in self.options.optional_functions

    def _required_left(self) -> list[Call]:
        later = [call for step in self.steps[self._next_step:] for call in step]
        return [call for call in self._current + later if not self._is_optional(call)]

    def _advance(self) -> None:
        # Add the next step once nothing required is left in the current list (a step with only
        # optional calls is passed at once, optional calls stay callable).
        while self._next_step < len(self.steps) and all(self._is_optional(c) for c in self._current):
            self._current.extend(self.steps[self._next_step])
            self._next_step += 1

    def context_text(self) -> str:
        """What the model has seen so far: the messages and every response given to it."""
        return "\n".join(self._context)

    # -- turns ------------------------------------------------------------------------------

    def respond(self, calls: Sequence[CallLike]) -> list[Any]:
        """Judge one model turn and return the response of each call, in the calls' order. An
        empty turn means the model stopped without text."""
        if self.finished:
            raise SessionFinished(f"session of sample {self.sample.id!r} has already ended")
        if not calls:
            self.stop(None, reason="no_calls")
            return []
        turn = len(self.record.turns)
        decoded, decode_issues = _decode_calls(calls)
        if not self._current:  # every gold call matched: any further call is one too many
            judgements = self._judge_after_complete(turn, decoded)
            self.record.turns.append(judgements)
            self._finish(judgements[0].error_type, judgements[0].detail, "after_complete")
            return [j.response for j in judgements]
        step_match = match_step(
            decoded,
            self._current,
            self.tools,
            self.sample.acceptable,
            self.options.layers,
            self.options.similarity,
            self.options.exact_parameters,
            context=self.context_text(),
        )
        issues = {**step_match.format_issues, **decode_issues}
        judgements = self._judge_turn(turn, decoded, step_match, issues)
        self.record.turns.append(judgements)
        self._apply_matches(judgements)
        self._context.extend(_response_text(j.response) for j in judgements)
        progressed = any(j.matched or j.layer == REPEAT_LAYER for j in judgements)
        if self.options.stop_on_unmatched_turn and not progressed and not issues:
            self._finish(judgements[0].error_type, judgements[0].detail, "off_path")
        else:
            self._advance()
        return [j.response for j in judgements]

    def stop(self, final_text: str | None, reason: str = "final_text") -> None:
        """The model answered in text (or stopped): settle the verdict."""
        if self.finished:
            raise SessionFinished(f"session of sample {self.sample.id!r} has already ended")
        self.record.final_text = final_text
        last_failures = [j for j in (self.record.turns[-1] if self.record.turns else [])
                         if not j.matched and j.error_type is not None]
        if last_failures:
            self._finish(last_failures[0].error_type, last_failures[0].detail, reason)
        elif self._required_left():
            left = ", ".join(call.label for call in self._required_left())
            self._finish("stop_early", f"Stopped with gold calls left: {left}.", reason)
        else:
            self._finish(None, "", reason)

    def _finish(self, error_type: str | None, detail: str, reason: str) -> None:
        self.finished = True
        self.record.error_type = error_type
        self.record.error_detail = detail
        self.record.stop_reason = reason
        self.record.remaining_labels = [call.label for call in self._required_left()]

    def _apply_matches(self, judgements: list[CallJudgement]) -> None:
        matched = {j.gold_label for j in judgements if j.matched}
        self._matched_optional.extend(c for c in self._current if c.label in matched and self._is_optional(c))
        self.record.matched_labels.extend(c.label for c in self._current if c.label in matched)
        self._current = [call for call in self._current if call.label not in matched]

    # -- judging ----------------------------------------------------------------------------

    def _judge_after_complete(self, turn: int, calls: list[PredictedCall]) -> list[CallJudgement]:
        detail = "Called a function after every gold call was matched."
        return [
            CallJudgement(turn, i, call.name, call.arguments, self._unknown(), error_type="func_error", detail=detail)
            for i, call in enumerate(calls)
        ]

    def _judge_turn(
        self, turn: int, calls: list[PredictedCall], step_match: StepMatch, issues: Mapping[int, FormatIssue]
    ) -> list[CallJudgement]:
        context = self.context_text()
        by_predicted = {d.pair.predicted_index: d for d in step_match.decisions if d.pair.predicted_index is not None}
        judgements = []
        for index, call in enumerate(calls):
            pair = by_predicted[index]
            gold = self._current[pair.pair.gold_index] if pair.pair.gold_index is not None else None
            judgement = self._judge_call(turn, index, call, gold, pair.decision, issues.get(index), context)
            judgements.append(self._as_repeat(judgement, call) if not judgement.matched else judgement)
        return judgements

    def _as_repeat(self, judgement: CallJudgement, call: PredictedCall) -> CallJudgement:
        """An optional look-up made again, identical to one already matched: answered with the same
        response, neither an error nor another correct call (the published runner counts it again)."""
        for done in self._matched_optional:
            if done.name == call.name and arguments_equivalent(call.arguments, done.arguments,
                                                               self._schema(done.name)):
                return CallJudgement(judgement.turn, judgement.index, call.name, call.arguments, done.response,
                                     gold_label=done.label, layer=REPEAT_LAYER,
                                     detail="Repeated an optional look-up already made.")
        return judgement

    def _schema(self, name: str) -> Mapping[str, Any] | None:
        tool = self.tools_by_name.get(name)
        return tool.parameters if tool else None

    def _judge_call(
        self,
        turn: int,
        index: int,
        call: PredictedCall,
        gold: Call | None,
        decision: MatchDecision | None,
        issue: FormatIssue | None,
        context: str,
    ) -> CallJudgement:
        judgement = CallJudgement(turn, index, call.name, call.arguments, self._unknown())
        if gold is not None:
            judgement.gold_label = gold.label
            if gold.name == call.name:
                judgement.parameters = self._check_parameters(call, gold)
        if issue is not None:
            judgement.layer = "format"
            judgement.error_type = FORMAT_ISSUE_ERROR_TYPES.get(issue.kind, "value_error")
            if gold is not None and gold.name != call.name:
                judgement.error_type = "func_error"  # the root cause: arguments fit another function
            judgement.detail = issue.message
            judgement.response = {"error": issue.message}  # shown to the model so it can fix the call
            return judgement
        if decision is not None and decision.matched and gold is not None:
            judgement.matched, judgement.layer = True, decision.layer
            judgement.response = gold.response
            # A layer (acceptable values, response, judge) found the call equivalent: every
            # parameter counts as right, whatever the literal comparison said.
            judgement.parameters = [ParameterCheck(p.parameter, p.parameter_type, True) for p in judgement.parameters]
            return judgement
        if decision is None:
            judgement.error_type = "func_error"
            judgement.detail = "No gold call is left to pair this call with."
            return judgement
        judgement.layer = decision.layer
        judgement.error_type, judgement.detail = self._refine_error(decision, judgement, context)
        return judgement

    def _refine_error(self, decision: MatchDecision, judgement: CallJudgement, context: str) -> tuple[str, str]:
        error_type = MATCH_ERROR_TYPES.get(decision.error_type or "", "value_error")
        if error_type != "value_error":
            return error_type, decision.detail
        wrong = next((p for p in judgement.parameters if p.problem == "wrong_value"), None)
        if wrong is not None and not self.options.grounding(judgement.arguments.get(wrong.parameter), context):
            return "hallucination", f"Parameter {wrong.parameter} value is not grounded in the conversation."
        return error_type, decision.detail or "The call is not equivalent to the gold call."

    def _check_parameters(self, call: PredictedCall, gold: Call) -> list[ParameterCheck]:
        tool = self.tools_by_name.get(gold.name)
        acceptable = (self.sample.acceptable or {}).get(gold.label, {})
        schema = tool.parameters if tool else None
        return check_parameters(call.arguments, gold.arguments, schema, acceptable, gold.name)

    def _unknown(self) -> Any:
        return json.loads(json.dumps(self.options.unknown_call_response))  # a fresh copy each time


FORMAT_ISSUE_ERROR_TYPES = {
    "unknown_function": "func_error",
    "missing_required": "param_missing",
    "unknown_parameters": "hallucination",
    "wrong_type": "value_error",
    "bad_arguments": "value_error",
}
MATCH_ERROR_TYPES = {
    "func_error": "func_error",
    "param_missing": "param_missing",
    "param_hallucination": "hallucination",
    "value_error": "value_error",
    "format_error": "value_error",
    "judge_error": "judge_error",
}


def check_parameters(
    predicted: Mapping[str, Any],
    gold: Mapping[str, Any],
    schema: Mapping[str, Any] | None,
    acceptable: Mapping[str, AcceptableValues] | None = None,
    function_name: str = "",
) -> list[ParameterCheck]:
    """Every gold parameter (missing / wrong value / right) then every extra predicted parameter,
    each with its type; schema defaults are filled on both sides and accepted alternatives count
    as right."""
    acceptable = acceptable or {}
    properties = (schema or {}).get("properties") or {}
    filled_predicted, filled_gold = fill_defaults(predicted, schema), fill_defaults(gold, schema)
    checks = []
    for param, value in filled_gold.items():
        kind = parameter_type(param, properties.get(param), function_name)
        alternatives = acceptable.get(param)
        if param not in filled_predicted:
            omittable = alternatives is not None and alternatives.may_omit
            checks.append(ParameterCheck(param, kind, omittable, None if omittable else "missing"))
            continue
        candidates = [value, *(alternatives.values if alternatives else [])]
        ok = any(values_equivalent(filled_predicted[param], c, properties.get(param)) for c in candidates)
        checks.append(ParameterCheck(param, kind, ok, None if ok else "wrong_value"))
    for param in filled_predicted:
        if param not in filled_gold:
            kind = parameter_type(param, properties.get(param), function_name)
            checks.append(ParameterCheck(param, kind, False, "extra"))
    return checks


def gold_steps_with_values(sample: Sample) -> list[list[Call]]:
    """The gold path with `$label.path$` references replaced by the values the gold responses give
    (a model writes literal values); a reference that cannot be resolved stays as written."""
    outputs: dict[str, Any] = {}
    steps = []
    for step_index, step in enumerate(sample.all_steps()):
        resolved_step = []
        for call in step:
            try:
                arguments = resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name, step_index))
            except UnresolvedReference:
                arguments = call.arguments
            resolved_step.append(call.model_copy(update={"arguments": arguments}))
        for call in step:
            if "response" in call.model_fields_set:
                outputs[call.label] = call.response
        steps.append(resolved_step)
    return steps


def _decode_calls(calls: Sequence[CallLike]) -> tuple[list[PredictedCall], dict[int, FormatIssue]]:
    decoded, issues = [], {}
    for index, call in enumerate(calls):
        try:
            decoded.append(as_predicted_call(call))
        except CallDecodeError as exc:
            spec = call.get("function", call) if isinstance(call, Mapping) else {}
            name = spec.get("name", "") if isinstance(spec, Mapping) else ""
            decoded.append(PredictedCall(str(name), {}))
            issues[index] = FormatIssue("bad_arguments", str(exc))
    return decoded, issues


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _response_text(response: Any) -> str:
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# Final-response judges (completeness, correctness: 0, 1 or 2)


@dataclass(frozen=True)
class ResponseJudgeInput:
    sample: Sample
    final_text: str | None
    record: SessionRecord
    context: str  # everything the model saw (query and responses)


ResponseJudge = Callable[[ResponseJudgeInput], int]
"""Scores the final answer 0 (bad), 1 (partly) or 2 (good); an LLM judge plugs in here and raises
JudgeError when it gets no usable verdict."""


def naive_completeness_judge(given: ResponseJudgeInput) -> int:
    """RULE-BASED STAND-IN for the paper's LLM judge: 0 without an answer, 2 when every required
    gold call was made (all the information asked for was fetched), 1 otherwise."""
    if not (given.final_text or "").strip():
        return 0
    return 2 if not given.record.remaining_labels else 1


def naive_correctness_judge(given: ResponseJudgeInput) -> int:
    """RULE-BASED STAND-IN for the paper's LLM judge: 0 without an answer; 2 when every number in
    the answer was seen in the query or a response (nothing made up), 1 otherwise."""
    text = (given.final_text or "").strip()
    if not text:
        return 0
    return 2 if numbers_in_text(text) <= numbers_in_text(given.context) else 1


# ---------------------------------------------------------------------------------------------
# Verdicts and the report


@dataclass
class ComplexEvalVerdict:
    sample_id: str
    domain: str
    success: bool
    n_gold_calls: int
    n_correct_calls: int
    error_type: str | None
    error_detail: str
    completeness: int | None  # None: the judge gave no verdict (judge_errors says why)
    correctness: int | None
    record: SessionRecord
    judge_errors: dict[str, str] = field(default_factory=dict)

    @property
    def call_accuracy(self) -> float:
        return self.n_correct_calls / self.n_gold_calls if self.n_gold_calls else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.sample_id,
            "domain": self.domain,
            "success": self.success,
            "n_gold_calls": self.n_gold_calls,
            "n_correct_calls": self.n_correct_calls,
            "call_accuracy": self.call_accuracy,
            "error": None if self.error_type is None else {"type": self.error_type, "detail": self.error_detail},
            "completeness": "judge_error" if self.completeness is None else self.completeness,
            "correctness": "judge_error" if self.correctness is None else self.correctness,
            "judge_errors": self.judge_errors,
            "stop_reason": self.record.stop_reason,
            "remaining": self.record.remaining_labels,
            "calls": [j.to_json() for j in self.record.judgements()],
        }


TrajectoryTurn = Union[Sequence[CallLike], str, None]
"""A model turn: its calls (a list), or its final text (a string; None: stopped silently)."""


def run_trajectory(
    sample: Sample, turns: Iterable[TrajectoryTurn], options: ComplexEvalOptions = ComplexEvalOptions()
) -> ComplexEvalSession:
    """Replay saved model turns through a session; turns after the session ended are ignored (a
    live model would never have been asked for them)."""
    session = ComplexEvalSession(sample, options)
    for turn in turns:
        if session.finished:
            break
        if turn is None or isinstance(turn, str):
            session.stop(turn)
        else:
            session.respond(list(turn))
    if not session.finished:
        session.stop(None, reason="no_calls")
    return session


def score_trajectory(
    sample: Sample,
    turns: Iterable[TrajectoryTurn],
    options: ComplexEvalOptions = ComplexEvalOptions(),
    completeness_judge: ResponseJudge = naive_completeness_judge,
    correctness_judge: ResponseJudge = naive_correctness_judge,
) -> ComplexEvalVerdict:
    """The verdict of one saved trajectory (model turns, each a list of calls, then a text)."""
    return verdict_of(run_trajectory(sample, turns, options), completeness_judge, correctness_judge)


def verdict_of(
    session: ComplexEvalSession,
    completeness_judge: ResponseJudge = naive_completeness_judge,
    correctness_judge: ResponseJudge = naive_correctness_judge,
) -> ComplexEvalVerdict:
    """The verdict of a finished session (a live run drives the session itself)."""
    if not session.finished:
        raise ValueError(f"session of sample {session.sample.id!r} has not ended")
    record = session.record
    judge_input = ResponseJudgeInput(session.sample, record.final_text, record, session.context_text())
    completeness, completeness_error = run_response_judge(completeness_judge, judge_input)
    correctness, correctness_error = run_response_judge(correctness_judge, judge_input)
    judge_errors = {name: error for name, error in (("completeness", completeness_error),
                                                    ("correctness", correctness_error)) if error}
    return ComplexEvalVerdict(
        sample_id=session.sample.id,
        domain=domain_name(session.sample),
        success=record.success,
        n_gold_calls=session.n_gold_calls,
        n_correct_calls=len(record.matched_labels),
        error_type=record.error_type,
        error_detail=record.error_detail,
        completeness=completeness,
        correctness=correctness,
        record=record,
        judge_errors=judge_errors,
    )


def run_response_judge(judge: ResponseJudge, given: ResponseJudgeInput) -> tuple[int | None, str | None]:
    """(score, None), or (None, why) when the judge gave no usable verdict: never guessed, left
    out of the averages and counted as a judge_error."""
    try:
        return judge(given), None
    except JudgeError as exc:
        return None, str(exc)


def domain_name(sample: Sample) -> str:
    if isinstance(sample.domain, list):
        return "+".join(sample.domain) or "unknown"
    return sample.domain or "unknown"


@dataclass
class ComplexEvalReport:
    summary: dict[str, Any]
    items: list[dict[str, Any]]  # one per gold sample, in the gold's order
    gold_set: dict[str, Any] | None = None  # GoldAlignment.listing(): missing, duplicate, foreign lines


Trajectories = Union[Mapping[str, Sequence[TrajectoryTurn]], Sequence[Mapping[str, Any]]]
"""`{sample id: turns}` or lines `{"id": ..., "turns": [...]}`."""


@metric("complexeval", llm_judged=True)
def score_complexeval(
    samples: Iterable[Sample],
    trajectories: Trajectories,
    options: ComplexEvalOptions = ComplexEvalOptions(),
    completeness_judge: ResponseJudge = naive_completeness_judge,
    correctness_judge: ResponseJudge = naive_correctness_judge,
    options_for: Callable[[Sample], ComplexEvalOptions] | None = None,
) -> ComplexEvalReport:
    """Score saved trajectories against the gold set `samples`; summary in the shape of
    ComplexFuncBench's Table 2. Items follow the samples (`fcbench.score.gold_set`): the first
    trajectory of a sample is its answer (later ones are listed as duplicates), a sample without
    one is scored as a failure with no correct call, and a trajectory for an id no sample has is
    listed, never scored. `options_for(sample)` gives per-sample options (an LLM judge that sees
    the sample's query). (`evaluate` scores one sample at a time into a `ComplexEvalTally`
    instead: the same figures.)"""
    samples = list(samples)
    alignment = align_trajectories(samples, trajectories)
    tally, items = ComplexEvalTally(), []
    for sample in samples:
        line = alignment.answer(sample.id)
        if line is None:
            items.append(tally.add_missing(sample))
            continue
        sample_options = options_for(sample) if options_for is not None else options
        verdict = score_trajectory(sample, line.get("turns") or [], sample_options, completeness_judge, correctness_judge)
        items.append(tally.add(verdict))
    for _, foreign_id in alignment.foreign:
        tally.add_unknown(foreign_id)
    tally.complete = alignment.complete
    return ComplexEvalReport(tally.summary(completeness_judge, correctness_judge), items, alignment.listing())


def align_trajectories(samples: Sequence[Sample], trajectories: Trajectories) -> GoldAlignment[str]:
    """Which trajectory answers which sample (the gold set's rules, `fcbench.score.gold_set`)."""
    if isinstance(trajectories, Mapping):
        lines: list[Any] = [{"id": str(sample_id), "turns": turns} for sample_id, turns in trajectories.items()]
    else:
        lines = list(trajectories)
    return align_to_gold([sample.id for sample in samples], lines, item_id)


RULE_BASED_JUDGES = {"naive_completeness_judge", "naive_correctness_judge"}


def judges_used(completeness_judge: ResponseJudge, correctness_judge: ResponseJudge) -> dict[str, Any]:
    """Which judges produced completeness and correctness (both on a 0-2 scale), said with the
    figures: a report must never pass a rule-based stand-in off as an LLM judge."""
    names = {"completeness": getattr(completeness_judge, "__name__", type(completeness_judge).__name__),
             "correctness": getattr(correctness_judge, "__name__", type(correctness_judge).__name__)}
    return {**names, "scale": "0-2", "rule_based": all(name in RULE_BASED_JUDGES for name in names.values())}


def judges_line(judges: Mapping[str, Any]) -> str:
    """The sentence a ComplexEval report starts with: who judged (a rule-based stand-in is never
    passed off as an LLM judge)."""
    if judges.get("rule_based", True):
        return ("ComplexEval judges: RULE-BASED STAND-INS, not LLM judges (no judge LLM configured): call "
                "equivalence by rules only; completeness and correctness (0-2) by "
                f"{judges.get('completeness', '?')} and {judges.get('correctness', '?')}")
    return (f"ComplexEval judges: call equivalence by rules, then responses, then an LLM; completeness and "
            f"correctness (0-2) by {judges.get('completeness', '?')} and {judges.get('correctness', '?')}")


def summarise(verdicts: Sequence[ComplexEvalVerdict]) -> dict[str, Any]:
    """Overall figures, error counts, per-parameter-type error rates and per-domain figures."""
    tally = ComplexEvalTally()
    for verdict in verdicts:
        tally.add(verdict)
    return tally.figures()


@dataclass
class _Figures:
    """The counts behind one row of Table 2 (all integers: a sum taken one verdict at a time gives
    the same floats as a sum over a list)."""

    n: int = 0
    successes: int = 0
    correct_calls: int = 0
    gold_calls: int = 0
    completeness_sum: int = 0
    completeness_n: int = 0
    correctness_sum: int = 0
    correctness_n: int = 0

    def add_missing(self, n_gold_calls: int) -> None:
        """A sample without a trajectory: a failure, none of its calls made, judged 0 and 0."""
        self.n += 1
        self.gold_calls += n_gold_calls
        self.completeness_n += 1
        self.correctness_n += 1

    def add(self, verdict: ComplexEvalVerdict) -> None:
        self.n += 1
        self.successes += verdict.success
        self.correct_calls += verdict.n_correct_calls
        self.gold_calls += verdict.n_gold_calls
        if verdict.completeness is not None:
            self.completeness_sum += verdict.completeness
            self.completeness_n += 1
        if verdict.correctness is not None:
            self.correctness_sum += verdict.correctness
            self.correctness_n += 1

    def as_dict(self) -> dict[str, Any]:
        n = self.n
        return {
            "n": n,
            "success_rate": self.successes / n if n else 0.0,
            "call_accuracy": self.correct_calls / self.gold_calls if self.gold_calls else 0.0,
            "completeness": self.completeness_sum / self.completeness_n if self.completeness_n else 0.0,
            "correctness": self.correctness_sum / self.correctness_n if self.correctness_n else 0.0,
        }


class ComplexEvalTally:
    """The summary of many verdicts, counted one verdict at a time: a scorer that streams keeps
    counts, never the verdicts (each holds its whole session record). `add` returns the item."""

    def __init__(self) -> None:
        self._overall = _Figures()
        self._by_domain: dict[str, _Figures] = {}
        self._errors: Counter[str | None] = Counter()
        self._judge_errors = {"samples": 0, "calls": 0, "completeness": 0, "correctness": 0}
        self._call_errors: Counter[str] = Counter()
        self._parameters = {kind: {"errors": 0, "total": 0} for kind in PARAMETER_TYPES}
        self._layers: Counter[str] = Counter()
        self._unknown: list[str] = []
        self._missing = 0
        # False once a gold sample had no trajectory: the per-parameter-type error rates are over
        # the calls made, so a missing sample would improve them; they are then not reported
        self.complete = True

    def add(self, verdict: ComplexEvalVerdict) -> dict[str, Any]:
        self._overall.add(verdict)
        self._by_domain.setdefault(verdict.domain, _Figures()).add(verdict)
        self._errors[verdict.error_type] += 1
        self._judge_errors["samples"] += verdict.error_type == "judge_error"
        self._judge_errors["completeness"] += verdict.completeness is None
        self._judge_errors["correctness"] += verdict.correctness is None
        for judgement in verdict.record.judgements():
            self._judge_errors["calls"] += judgement.error_type == "judge_error"
            if judgement.error_type:
                self._call_errors[judgement.error_type] += 1
            self._layers[judgement.layer or "none"] += 1
            for check in judgement.parameters:
                self._parameters[check.parameter_type]["total"] += 1
                self._parameters[check.parameter_type]["errors"] += not check.ok
        return verdict.to_json()

    def add_missing(self, sample: Sample) -> dict[str, Any]:
        """A gold sample no trajectory answers: counted as a failure (no call made, completeness
        and correctness 0), and its item says so."""
        n_gold_calls = sum(len(step) for step in sample.calls)
        domain = domain_name(sample)
        self._overall.add_missing(n_gold_calls)
        self._by_domain.setdefault(domain, _Figures()).add_missing(n_gold_calls)
        self._missing += 1
        self.complete = False
        return {"id": sample.id, "domain": domain, "success": False, "n_gold_calls": n_gold_calls,
                "n_correct_calls": 0, "call_accuracy": 0.0,
                "error": {"type": "missing_prediction", "detail": "no trajectory for this sample"},
                "completeness": 0, "correctness": 0}

    def add_unknown(self, sample_id: str) -> dict[str, Any]:
        """A trajectory whose id has no sample: counted, and its item says so."""
        self._unknown.append(sample_id)
        return {"id": sample_id, "error": {"type": "unknown_id", "detail": "no sample has this id"}}

    def figures(self) -> dict[str, Any]:
        """Overall figures, error counts, per-parameter-type error rates and per-domain figures."""
        summary = self._overall.as_dict()
        summary["errors"] = {kind: self._errors.get(kind, 0) for kind in ERROR_TYPES}
        # the scorer's own failures, apart from the model's: a judge that gave no verdict (never guessed)
        summary["judge_errors"] = dict(self._judge_errors)
        summary["call_errors"] = {kind: self._call_errors.get(kind, 0) for kind in ERROR_TYPES if kind != "stop_early"}
        # error rate per parameter type over the parameters of calls made to the right function
        # (matched or not): errors / checked, an extra parameter counting as one checked and wrong;
        # calls to another function are func_errors and say nothing about parameters
        counts = {kind: dict(c) for kind, c in self._parameters.items() if c["total"]}
        summary["param_type_error_rate"] = {kind: c["errors"] / c["total"] for kind, c in counts.items()} \
            if self.complete else {}
        if not self.complete:
            summary["param_type_error_rate_note"] = (f"not reported: {self._missing} samples have no trajectory, and "
                                                     "these rates are over the calls made")
        summary["param_type_counts"] = counts
        summary["missing"] = self._missing
        summary["by_domain"] = {d: self._by_domain[d].as_dict() for d in sorted(self._by_domain)}
        return summary

    def summary(self, completeness_judge: ResponseJudge = naive_completeness_judge,
                correctness_judge: ResponseJudge = naive_correctness_judge) -> dict[str, Any]:
        """`figures()` with the unknown ids, who judged, and which layer decided how many calls."""
        summary = self.figures()
        summary["unknown_ids"] = list(self._unknown)
        summary["judges"] = judges_used(completeness_judge, correctness_judge)
        summary["call_layers"] = dict(sorted(self._layers.items()))
        return summary
