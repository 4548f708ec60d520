"""ComplexEval compat mode: the verdicts of the published ComplexFuncBench runner (THUDM/
ComplexFuncBench: `runner/base_runner.py`, `runner/gpt_runner.py`, `utils/compare_method.py`),
reproduced on our samples, defects included, so figures can be compared with the paper's.
Pure: no model, no API; the reference's paid layers (a live call to the Booking API, an LLM
comparison) are pluggable `MatchLayer`s and absent by default.

What the reference does, and so what this session does (default mode differs where noted in
bench/README.md, "ComplexEval: compat vs default mode"):

- The golden list starts as gold step 1. A turn whose calls match at least one golden call moves
  the list ONE STEP AHEAD (the next gold step's calls are appended) even when calls of the current
  step are still missing; a turn that matched nothing and had no format problem ends the sample.
- Free look-ups (`FREE_FUNCTIONS`: location searches and Location_to_Lat_Long) are not required: a
  golden list holding only free calls (or a Search_Hotels by hotel name) moves ahead at once, and
  a predicted call identical to ANY free gold call of the sample matches whenever the turn still
  has an unmatched golden call, without using one up. Repeating it counts again as a correct call
  (defect followed: correct calls can exceed gold calls).
- Pairing: calls identical to a golden call (arguments compared as Python values after sorting
  keys) pair first; the rest are paired by the Hungarian algorithm on a similarity (the reference
  uses a BGE embedding; `similarity` is pluggable). Predicted calls left unpaired (duplicates,
  extras) are answered with a fixed message and NOT counted as errors.
- One pair: format check (required parameters, unknown parameters, and the types string, number,
  boolean, array; "integer" is not checked), then equality after sorting keys (numbers compare as
  numbers: 2 == 2.0; `categories_filter` as a set of comma-separated items), then the exact-match
  list of the function (`utils/exact_match_values.json`: a parameter on it that differs is a
  `value_error`, missing is `param_missing`, whatever a later layer would say), then the paid
  layers, in order; none matching: the first difference (param_missing, value_error,
  param_hallucination).
- The run ends on the model's text: the errors of the LAST call turn make the sample fail; else
  the end-of-run clean-up removes free location searches still in the golden list, removing from
  the list it iterates (so the item after each removed one is skipped: defect followed), and the
  sample succeeds only when the golden path is exhausted.
- A gold sample WITHOUT a final assistant text (its conversation ends with the last observation):
  the reference never reads that turn in its call loop (`init_golden` keeps only the call and
  observation turns; `return_result` decides from the golden list alone), so it counts the sample
  a success when every required call matched. A saved trajectory of such a sample that simply
  ends after its calls (no final turn recorded at all, as when the gold itself is replayed, or a
  result whose last message carried no text) is therefore settled from the golden list as the
  reference's `return_result` would settle it, not as a silent stop; an explicit `None` final
  turn (the model answered with neither calls nor text) stays the reference's `unknown_error`.
  Such items say `settled_without_final_text: true`.
- An unknown function name or arguments that are not a JSON object end the sample
  (`decode_error`); calls after the golden list is empty are `func_hallucination`; a model that
  stops without text is the reference's `unknown_error` (it drops such samples: we keep them, as
  failures, and count them).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from fcbench.environments.recorded import UNKNOWN_CALL_RESPONSE
from fcbench.sample import Call, Sample, Tool
from fcbench.score.complexeval import (
    ComplexEvalReport,
    ResponseJudge,
    ResponseJudgeInput,
    SessionRecord,
    Trajectories,
    domain_name,
    gold_steps_with_values,
    judges_used,
    naive_completeness_judge,
    naive_correctness_judge,
    run_response_judge,
    align_trajectories,
)
from fcbench.errors import JudgeError
from fcbench.score.matching import MatchLayer, PredictedCall, call_similarity

FREE_FUNCTIONS = (
    "Location_to_Lat_Long", "Search_Hotel_Destination", "Search_Attraction_Location",
    "Search_Car_Location", "Search_Flight_Location", "Taxi_Search_Location",
)
"""The reference's free look-ups (optional calls)."""

CLEANUP_FUNCTIONS = frozenset(FREE_FUNCTIONS) - {"Location_to_Lat_Long"}
"""What the reference's end-of-run clean-up removes (Location_to_Lat_Long is not among them)."""

# The reference's exact-match list (utils/exact_match_values.json): per function, the parameters a
# paid layer may not overrule. Written out here as data (the names of real API parameters).
EXACT_MATCH_PARAMETERS: dict[str, tuple[str, ...]] = {
    "Search_Hotels_By_Coordinates": ("arrival_date", "departure_date", "latitude", "longitude", "currency_code",
                                     "languagecode"),
    "Get_Room_List_With_Availability": ("hotel_id", "departure_date", "arrival_date", "currency_code", "languagecode"),
    "Get_Room_Availability": ("currency_code", "hotel_id"),
    "Get_Question_And_Answer": ("languagecode", "hotel_id"),
    "Get_Nearby_Cities": ("languagecode", "longitude", "latitude"),
    "Get_Popular_Attraction_Near_By": ("languagecode", "hotel_id"),
    "Get_Hotel_Reviews(Tips)": ("languagecode", "hotel_id", "sort_option_id"),
    "Get_Hotel_Reviews(Tips)_Sort_Option": ("languagecode", "hotel_id"),
    "Get_Hotel_Review_Scores": ("languagecode", "hotel_id"),
    "Get_Hotel_Reviews_Filter_Metadata": ("languagecode", "hotel_id"),
    "Property_Children_Policies": ("languagecode", "hotel_id"),
    "Get_Hotel_Policies": ("languagecode", "hotel_id"),
    "Get_Room_List": ("currency_code", "languagecode", "departure_date", "arrival_date", "hotel_id"),
    "Get_Description_And_Info": ("languagecode", "hotel_id"),
    "Get_Hotel_Details": ("currency_code", "languagecode", "departure_date", "hotel_id", "arrival_date"),
    "Get_Filter": ("search_type", "languagecode", "dest_id", "departure_date", "arrival_date", "categories_filter"),
    "Search_Hotel_Destination": (),
    "Get_Sort_By": ("search_type", "departure_date", "languagecode", "dest_id", "arrival_date"),
    "Payment_features_of_the_Hotel": ("languagecode", "hotel_id"),
    "Search_Hotels": ("currency_code", "languagecode", "search_type", "arrival_date", "dest_id", "departure_date",
                      "categories_filter", "sort_by"),
    "Search_Car_Rentals": ("currency_code", "languagecode", "pick_up_longitude", "drop_off_time", "drop_off_latitude",
                           "drop_off_date", "pick_up_time", "pick_up_date", "drop_off_longitude"),
    "Search_Car_Location": ("languagecode",),
    "Booking_Summary": ("currency_code", "languagecode", "search_key", "vehicle_id"),
    "Vehicle_Supplier_Ratings": ("currency_code", "languagecode", "vehicle_id", "search_key"),
    "Vehicle_Details": ("currency_code", "languagecode", "vehicle_id", "search_key"),
    "Vehicle_Supplier_Details": ("currency_code", "languagecode", "vehicle_id", "search_key"),
    "Get_Packages": ("currency_code", "languagecode", "vehicle_id", "search_key"),
    "Vehicle_Supplier_Review": ("languagecode", "vehicle_id", "search_key"),
    "Location_to_Lat_Long": (),
    "Get_Exchange_Rates": (),
    "Get_Currency": (),
    "Get_Languages": (),
    "Get_Attraction_Details": ("currency_code", "languagecode", "slug"),
    "Search_Attractions": ("currency_code", "languagecode", "endDate", "startDate", "id"),
    "Get_Availability_Calendar": ("languagecode", "id"),
    "Get_Availability": ("currency_code", "languagecode", "slug", "date"),
    "Search_Attraction_Location": ("languagecode",),
    "Get_Min_Price_Multi_Stops": ("currency_code",),
    "Get_Flight_Details": ("currency_code", "token"),
    "Get_Min_Price": ("currency_code", "fromId", "returnDate", "toId", "departDate"),
    "Get_Seat_Map": ("currency_code", "offerToken"),
    "Search_Flights_Multi_Stops": ("currency_code", "sort"),
    "Search_Flights": ("currency_code", "toId", "fromId", "returnDate", "departDate", "sort"),
    "Search_Flight_Location": ("languagecode",),
    "Search_Taxi": ("currency_code", "languagecode", "drop_off_place_id", "pick_up_place_id", "pick_up_time",
                    "pick_up_date"),
    "Taxi_Search_Location": ("languagecode",),
}

SUCCESS_MESSAGE = "Success."
_SET_VALUED = "categories_filter"  # compared as a set of comma-separated items

CompatSimilarity = Callable[[Mapping[str, Any], Mapping[str, Any]], float]
"""(predicted call, golden call) -> similarity, both as {"name", "arguments"} with sorted keys."""


def fuzzy_similarity(predicted: Mapping[str, Any], golden: Mapping[str, Any]) -> float:
    """Offline stand-in for the reference's embedding similarity (no model ships with fcbench)."""
    gold = Call(label="golden", name=golden["name"], arguments=dict(golden["arguments"]))
    return call_similarity(PredictedCall(predicted["name"], dict(predicted["arguments"])), gold)


@dataclass(frozen=True)
class CompatOptions:
    layers: Sequence[MatchLayer] = ()  # the paid layers (response, LLM), in the reference's order
    similarity: CompatSimilarity = fuzzy_similarity
    exact_parameters: Mapping[str, Collection[str]] = field(default_factory=lambda: dict(EXACT_MATCH_PARAMETERS))
    free_functions: Collection[str] = FREE_FUNCTIONS


class CompatCrash(RuntimeError):
    """Where the reference itself raises: the sample has no verdict there (recorded as `crash`)."""


@dataclass
class CompatCall:
    """What happened to one predicted call of one turn."""

    turn: int
    index: int
    name: str
    arguments: Any
    outcome: str  # matched | free | format_error | mismatch | unpaired
    layer: str | None = None  # rule | exact | <paid layer name> | judge_error | format
    error_type: str | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {"turn": self.turn, "index": self.index, "name": self.name, "arguments": self.arguments,
                "outcome": self.outcome, "matched": self.outcome in ("matched", "free")}
        if self.layer:
            data["layer"] = self.layer
        if self.error_type:
            data["error_type"] = self.error_type
            data["detail"] = self.detail
        return data


def _sorted_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    arguments = call["arguments"]
    return {"name": call["name"], "arguments": {key: arguments[key] for key in sorted(arguments)}}


def _free_key(call: Mapping[str, Any]) -> str:
    # The reference keys free calls by their JSON text: key order matters, as it does there.
    return json.dumps({"name": call["name"], "arguments": call["arguments"]})


def _filter_items(value: Any) -> set[str]:
    if not isinstance(value, str):
        raise CompatCrash(f"{_SET_VALUED} is not a string: the reference splits it")
    return {item.strip() for item in value.split(",")}


class CompatSession:
    """One sample through the reference's protocol: `respond(calls)` per model turn, then
    `stop(final_text)`; `outcome()` gives the verdict."""

    def __init__(self, sample: Sample, options: CompatOptions = CompatOptions()) -> None:
        self.sample = sample
        self.options = options
        self.tools: dict[str, Tool] = {tool.name: tool for tool in sample.tools}
        self.chain: list[list[dict[str, Any]]] = []
        self.chain_responses: list[list[Any]] = []
        for step in gold_steps_with_values(sample):
            self.chain.append([{"name": call.name, "arguments": copy.deepcopy(call.arguments)} for call in step])
            self.chain_responses.append([copy.deepcopy(call.response) for call in step])
        self.free: dict[str, dict[str, Any]] = {}
        for step, responses in zip(self.chain, self.chain_responses):
            for call, response in zip(step, responses):
                if call["name"] in options.free_functions and _free_key(call) not in self.free:
                    self.free[_free_key(call)] = {"called": False, "response": response}
        self.step_index = 0
        self.correct_calls = 0
        self.golden: list[dict[str, Any]] = copy.deepcopy(self.chain[0]) if self.chain else []
        self.golden_responses: list[Any] = copy.deepcopy(self.chain_responses[0]) if self.chain else []
        self.last_errors: list[dict[str, Any]] | None = None  # errors of the last compared turn
        self.turns: list[list[CompatCall]] = []
        self.paid_layer_pairs = 0  # pairs that reached the paid layers (undecidable offline without them)
        self.context: list[str] = [_text(message.get("content")) for message in sample.messages]
        self.finished = False
        self.message: Any = None  # "Success." or the reference's error info
        self.final_text: str | None = None
        if self._only_free(self.golden):
            self._step_ahead()

    @property
    def n_gold_calls(self) -> int:
        return sum(len(step) for step in self.chain)

    # -- the golden list ----------------------------------------------------------------------
    def _only_free(self, calls: Sequence[Mapping[str, Any]]) -> bool:
        if any(_is_hotel_name_search(call) for call in calls):
            return True
        return {call["name"] for call in calls} <= set(self.options.free_functions)

    def _step_ahead(self) -> None:
        self.step_index += 1
        if self.step_index < len(self.chain):
            self.golden.extend(copy.deepcopy(self.chain[self.step_index]))
            self.golden_responses.extend(copy.deepcopy(self.chain_responses[self.step_index]))

    def _drop_called_free(self) -> None:
        positions = [self.golden.index(call) for call in self.golden
                     if _free_key(call) in self.free and self.free[_free_key(call)]["called"]]
        for position in sorted(positions, reverse=True):
            self.golden.pop(position)
            self.golden_responses.pop(position)

    # -- a turn -------------------------------------------------------------------------------
    def respond(self, calls: Sequence[Mapping[str, Any]]) -> list[Any]:
        if self.finished:
            raise RuntimeError(f"session of sample {self.sample.id!r} has already ended")
        turn = len(self.turns)
        if not calls:
            self.stop(None)
            return []
        if not self.golden:
            self.turns.append([CompatCall(turn, i, str(c.get("name")), c.get("arguments"), "unpaired")
                               for i, c in enumerate(calls)])
            self._finish({"error_type": "func_hallucination",
                          "content": "The golden list is empty but the model made another call."})
            return [dict(UNKNOWN_CALL_RESPONSE) for _ in calls]
        decoded = []
        for index, call in enumerate(calls):
            name, arguments = call.get("name"), call.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except json.JSONDecodeError:
                    arguments = _UNDECODABLE
            if arguments is None:
                arguments = {}
            if name not in self.tools or not isinstance(arguments, dict):
                self.turns.append([CompatCall(turn, index, str(name), call.get("arguments"), "format_error",
                                              "decode", "decode_error", "unknown function or arguments not a JSON object")])
                self._finish({"error_type": "decode_error", "content": f"call {index} could not be decoded"})
                return []
            decoded.append({"name": name, "arguments": arguments})
        return self._compare_turn(turn, decoded)

    def _compare_turn(self, turn: int, predicted: list[dict[str, Any]]) -> list[Any]:
        self._drop_called_free()
        if not self.golden:
            raise CompatCrash("the golden list emptied by the free look-ups already called (the reference raises)")
        predicted = [_sorted_arguments(call) for call in predicted]
        self.golden[:] = [_sorted_arguments(call) for call in self.golden]  # the reference sorts in place
        judged = [CompatCall(turn, i, call["name"], call["arguments"], "unpaired") for i, call in enumerate(predicted)]
        responses: list[Any] = [dict(UNKNOWN_CALL_RESPONSE) for _ in predicted]
        errors: list[dict[str, Any]] = []
        matched_golden: list[dict[str, Any]] = []
        for index, golden, response in self._pairs(predicted):
            judgement = judged[index]
            problem = self._format_problem(predicted[index])
            if problem is not None:
                judgement.outcome, judgement.layer, judgement.detail = "format_error", "format", problem
                judgement.error_type = "format_error"
                responses[index] = {"error": problem}
                continue
            layer, error = self._compare_pair(predicted[index], golden,
                                              self.free[_free_key(predicted[index])]["response"]
                                              if response is _FREE_MARK else response)
            judgement.layer = layer
            if error is None:
                judgement.outcome = "free" if response is _FREE_MARK else "matched"
                responses[index] = self.free[_free_key(predicted[index])]["response"] if response is _FREE_MARK else response
                matched_golden.append(golden)
            else:
                judgement.outcome, judgement.error_type, judgement.detail = "mismatch", error["error_type"], error["content"]
                errors.append(error)
        self.turns.append(judged)
        self.last_errors = errors
        format_errors = any(j.outcome == "format_error" for j in judged)
        if not matched_golden and not format_errors:
            self._finish(errors)
            return responses
        self.correct_calls += len(matched_golden)
        self._process_matches(matched_golden)
        self.context.extend(_text(response) for response in responses)
        return responses

    def _pairs(self, predicted: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any], Any]]:
        """(predicted index, golden call, its response or _FREE_MARK): identical calls and free
        look-ups first, then the Hungarian algorithm on the similarity for the rest."""
        pairs = []
        used: set[int] = set()
        left_predicted = []
        for p_index, call in enumerate(predicted):
            found = False
            for g_index, golden in enumerate(self.golden):
                if g_index in used:
                    continue
                if call == golden:
                    pairs.append((p_index, golden, self.golden_responses[g_index]))
                    used.add(g_index)
                    found = True
                    break
                if _free_key(call) in self.free:  # any unmatched golden call lets a free call through
                    pairs.append((p_index, call, _FREE_MARK))
                    self.free[_free_key(call)]["called"] = True
                    found = True
                    break
            if not found:
                left_predicted.append(p_index)
        left_golden = [g for g in range(len(self.golden)) if g not in used]
        if left_predicted and left_golden:
            scores = np.array([[self.options.similarity(predicted[p], self.golden[g]) for g in left_golden]
                               for p in left_predicted], dtype=float)
            rows, columns = linear_sum_assignment(-scores)
            for row, column in zip(rows, columns):
                g_index = left_golden[column]
                pairs.append((left_predicted[row], self.golden[g_index], self.golden_responses[g_index]))
        return pairs

    def _format_problem(self, call: Mapping[str, Any]) -> str | None:
        schema = self.tools[call["name"]].parameters
        required = list(schema.get("required") or [])
        properties = schema.get("properties") or {}
        given = call["arguments"]
        missing = [param for param in required if param not in given]
        if missing:
            return f"Function {call['name']} requires parameters {required}, but {list(given)} do not provide {missing}"
        unknown = [param for param in given if param not in properties]
        if unknown:
            return f"Function {call['name']} does not have parameters {unknown}"
        for param, value in given.items():
            expected = (properties.get(param) or {}).get("type")
            if expected in _REFERENCE_TYPE_CHECKS and not _REFERENCE_TYPE_CHECKS[expected](value):
                return f"Parameter {param} of function {call['name']} should be a {expected}, but {type(value).__name__} is provided."
        return None

    def _compare_pair(self, predicted: dict[str, Any], golden: dict[str, Any],
                      golden_response: Any) -> tuple[str, dict[str, Any] | None]:
        """(deciding layer, None when equivalent or the reference's error)."""
        if _rule_equal(predicted, golden):
            return "rule", None
        if predicted["name"] != golden["name"]:
            return "exact", {"error_type": "func_error", "content": "Do not call the correct function."}
        if predicted["name"] not in self.options.exact_parameters:
            raise CompatCrash(f"{predicted['name']} is not on the reference's exact-match list (it raises KeyError)")
        for param, value in golden["arguments"].items():
            if param not in self.options.exact_parameters[predicted["name"]]:
                continue
            if param not in predicted["arguments"]:
                return "exact", {"error_type": "param_missing", "content": f"Missing parameter {param} in prediction."}
            if not _value_equal(param, predicted["arguments"][param], value):
                return "exact", {"error_type": "value_error", "content": f"Parameter {param} value is not correct in prediction."}
        self.paid_layer_pairs += 1  # the reference would now ask the Booking API, then an LLM
        # the golden call with its recorded response, for a response-comparison layer
        gold_call = Call(label="golden", name=golden["name"], arguments=dict(golden["arguments"]),
                         response=golden_response)
        call = PredictedCall(predicted["name"], dict(predicted["arguments"]))
        for layer in self.options.layers:
            try:
                tool = self.tools.get(golden["name"])
                if (layer.decide(call, gold_call, tool, self.context_text()) if layer.needs_context  # type: ignore[call-arg]
                        else layer.decide(call, gold_call, tool)):
                    return layer.name, None
            except JudgeError as exc:
                return "judge_error", {"error_type": "judge_error", "content": str(exc)}
        return "rule", _first_difference(predicted, golden)

    def _process_matches(self, matched_golden: list[dict[str, Any]]) -> None:
        for golden in matched_golden:
            if golden in self.golden:
                self.golden_responses.pop(self.golden.index(golden))
                self.golden.remove(golden)
        if matched_golden:
            self._step_ahead()
        for key, entry in self.free.items():
            call = json.loads(key)
            if entry["called"] and call in self.golden:
                self.golden_responses.pop(self.golden.index(call))
                self.golden.remove(call)
        if self._only_free(self.golden):
            self._step_ahead()

    # -- the end ------------------------------------------------------------------------------
    def stop(self, final_text: str | None) -> None:
        if self.finished:
            raise RuntimeError(f"session of sample {self.sample.id!r} has already ended")
        self.final_text = final_text
        if final_text is None:  # the reference gets no message and drops the sample
            self._finish({"error_type": "unknown_error", "content": "the model stopped without text"})
            return
        self._return_result()

    def settle_without_final_text(self) -> None:
        """The trajectory ended after its calls with no final turn, on a gold sample that has no
        final assistant text either: the reference's `return_result` from the golden list."""
        if self.finished:
            raise RuntimeError(f"session of sample {self.sample.id!r} has already ended")
        self.final_text = None
        self._return_result()

    def _return_result(self) -> None:
        if self.last_errors:
            self._finish(self.last_errors)
            return
        for call in self.golden:  # removing from the list being iterated, as the reference does
            if _is_hotel_name_search(call):
                self.golden.remove(call)
            if call["name"] in CLEANUP_FUNCTIONS:
                self.golden.remove(call)
        if self.step_index < len(self.chain) or self.golden:
            self._finish({"error_type": "stop_early", "content": "Stop early."})
        else:
            self._finish(SUCCESS_MESSAGE)

    def context_text(self) -> str:
        return "\n".join(self.context)

    def _finish(self, message: Any) -> None:
        self.finished = True
        self.message = message

    @property
    def success(self) -> bool:
        return self.message == SUCCESS_MESSAGE

    @property
    def error_type(self) -> str | None:
        if self.success or self.message is None:
            return None
        first = self.message[0] if isinstance(self.message, list) and self.message else self.message
        return first.get("error_type", "unknown") if isinstance(first, dict) else "unknown"

    @property
    def error_detail(self) -> str:
        first = self.message[0] if isinstance(self.message, list) and self.message else self.message
        return str(first.get("content", "")) if isinstance(first, dict) else ""


_FREE_MARK = object()  # a pair made by the free look-up rule (its response is the free call's own)
_UNDECODABLE = object()

_REFERENCE_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    "number": lambda value: isinstance(value, (int, float)),  # a bool passes, as in Python
    "boolean": lambda value: isinstance(value, bool),
    "array": lambda value: isinstance(value, list),
}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _is_hotel_name_search(call: Mapping[str, Any]) -> bool:
    arguments = call.get("arguments") or {}
    return call.get("name") == "Search_Hotels" and arguments.get("search_type") == "hotel"


def _value_equal(param: str, predicted: Any, golden: Any) -> bool:
    if param == _SET_VALUED:
        return _filter_items(predicted) == _filter_items(golden)
    return predicted == golden  # Python equality: 2 == 2.0 (and True == 1), as the reference


def _rule_equal(predicted: Mapping[str, Any], golden: Mapping[str, Any]) -> bool:
    if predicted["name"] != golden["name"] or sorted(predicted["arguments"]) != sorted(golden["arguments"]):
        return False
    for param, value in predicted["arguments"].items():
        if param == _SET_VALUED and isinstance(value, str) and _filter_items(value) == _filter_items(golden["arguments"][param]):
            continue
        if value != golden["arguments"][param]:
            return False
    return True


def _first_difference(predicted: Mapping[str, Any], golden: Mapping[str, Any]) -> dict[str, Any]:
    for param, value in golden["arguments"].items():
        if param not in predicted["arguments"]:
            return {"error_type": "param_missing", "content": f"Missing parameter {param} in prediction."}
        if value != predicted["arguments"][param]:
            return {"error_type": "value_error", "content": f"Parameter {param} value do not equal to golden."}
    for param in predicted["arguments"]:
        if param not in golden["arguments"]:
            return {"error_type": "param_hallucination", "content": f"Parameter {param} is hallucinated."}
    return {"error_type": "value_error", "content": "The call is not equivalent to the golden call."}


# ---------------------------------------------------------------------------------------------
# Replaying a saved trajectory


@dataclass
class CompatVerdict:
    sample_id: str
    domain: str
    success: bool
    n_gold_calls: int
    n_correct_calls: int
    error_type: str | None
    error_detail: str
    paid_layer_pairs: int
    turns: list[list[CompatCall]]
    final_text: str | None
    crash: str | None = None
    context: str = ""  # everything the model saw (for the final-answer judges)
    remaining: list[str] = field(default_factory=list)  # golden calls left at the end, by name
    settled_without_final_text: bool = False  # see the module docstring

    def to_json(self, completeness: Any, correctness: Any) -> dict[str, Any]:
        return {
            "id": self.sample_id,
            "domain": self.domain,
            "success": self.success,
            "n_gold_calls": self.n_gold_calls,
            "n_correct_calls": self.n_correct_calls,
            "call_accuracy": self.n_correct_calls / self.n_gold_calls if self.n_gold_calls else 1.0,
            "error": None if self.error_type is None else {"type": self.error_type, "detail": self.error_detail},
            "completeness": completeness,
            "correctness": correctness,
            "paid_layer_pairs": self.paid_layer_pairs,
            "crash": self.crash,
            "settled_without_final_text": self.settled_without_final_text,
            "calls": [call.to_json() for turn in self.turns for call in turn],
        }


def run_compat_trajectory(sample: Sample, turns: Sequence[Any], options: CompatOptions = CompatOptions()) -> CompatVerdict:
    """Replay saved model turns (lists of calls, then the final text) through the reference's
    protocol; turns after the session ended are ignored (a live model is not asked for them)."""
    n_gold = sum(len(step) for step in sample.all_steps())
    if not n_gold:
        return CompatVerdict(sample.id, domain_name(sample), False, 0, 0, "crash",
                             "a sample without gold calls (the reference raises)", 0, [], None, "no gold calls")
    session = CompatSession(sample, options)
    settled = False
    try:
        for turn in turns:
            if session.finished:
                break
            if turn is None or isinstance(turn, str):
                session.stop(turn)
            else:
                session.respond(list(turn))
        if not session.finished:
            settled = not gold_has_final_text(sample) and bool(session.turns)
            if settled:
                session.settle_without_final_text()
            else:
                session.stop(None)
    except CompatCrash as exc:
        return CompatVerdict(sample.id, domain_name(sample), False, n_gold, session.correct_calls, "crash", str(exc),
                             session.paid_layer_pairs, session.turns, None, str(exc), session.context_text())
    return CompatVerdict(sample.id, domain_name(sample), session.success, n_gold, session.correct_calls,
                         session.error_type, session.error_detail, session.paid_layer_pairs, session.turns,
                         session.final_text, None, session.context_text(), [c["name"] for c in session.golden],
                         settled_without_final_text=settled)


def gold_has_final_text(sample: Sample) -> bool:
    """Whether the gold conversation ends with an assistant text (ComplexFuncBench's reader keeps
    it as `meta["complexfuncbench"]["final_response"]`; samples of other sources have none)."""
    meta = sample.meta.get("complexfuncbench")
    return isinstance(meta, dict) and bool(meta.get("final_response"))


def score_compat(
    samples: Sequence[Sample] | Any,
    trajectories: Trajectories,
    options: CompatOptions = CompatOptions(),
    completeness_judge: ResponseJudge = naive_completeness_judge,
    correctness_judge: ResponseJudge = naive_correctness_judge,
    options_for: Callable[[Sample], CompatOptions] | None = None,
) -> ComplexEvalReport:
    """Score saved trajectories with the reference's verdicts. Items and summary have the default
    mode's shape plus `mode: compat`, the reference's error names, crashes and paid-layer pairs.
    The reference runs every sample of the benchmark, so the gold set's rules hold here as in
    default mode (`score_complexeval`): a sample without a trajectory is a `missing_prediction`
    failure (completeness and correctness 0), duplicate and foreign trajectories are listed only."""
    samples = list(samples)
    alignment = align_trajectories(samples, trajectories)
    items: list[dict[str, Any]] = []
    verdicts: list[tuple[CompatVerdict, int, int]] = []
    for sample in samples:
        line = alignment.answer(sample.id)
        if line is None:
            missing = CompatVerdict(sample.id, domain_name(sample), False, sum(len(step) for step in sample.all_steps()),
                                    0, "missing_prediction", "no trajectory for this sample", 0, [], None)
            verdicts.append((missing, 0, 0))
            items.append(missing.to_json(0, 0))
            continue
        turns = line.get("turns") or []
        verdict = run_compat_trajectory(sample, turns, options_for(sample) if options_for else options)
        record = SessionRecord(final_text=verdict.final_text, remaining_labels=list(verdict.remaining),
                               error_type=verdict.error_type, stop_reason="compat")
        judge_input = ResponseJudgeInput(sample, verdict.final_text, record, verdict.context)
        completeness, completeness_error = run_response_judge(completeness_judge, judge_input)
        correctness, correctness_error = run_response_judge(correctness_judge, judge_input)
        verdicts.append((verdict, completeness, correctness))
        item = verdict.to_json("judge_error" if completeness is None else completeness,
                               "judge_error" if correctness is None else correctness)
        item["judge_errors"] = {name: error for name, error in (("completeness", completeness_error),
                                                                ("correctness", correctness_error)) if error}
        items.append(item)
    summary = _compat_summary(verdicts)
    summary["unknown_ids"] = [foreign_id for _, foreign_id in alignment.foreign]
    summary["judges"] = judges_used(completeness_judge, correctness_judge)
    return ComplexEvalReport(summary, items, alignment.listing())


def _compat_summary(verdicts: Sequence[tuple[CompatVerdict, Any, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {"mode": "compat", **_compat_figures(verdicts)}
    errors: dict[str, int] = {}
    for verdict, _, _ in verdicts:
        if verdict.error_type:
            errors[verdict.error_type] = errors.get(verdict.error_type, 0) + 1
    summary["errors"] = dict(sorted(errors.items()))
    summary["crashes"] = sum(verdict.crash is not None for verdict, _, _ in verdicts)
    summary["paid_layer_pairs"] = sum(verdict.paid_layer_pairs for verdict, _, _ in verdicts)
    domains = sorted({verdict.domain for verdict, _, _ in verdicts})
    summary["by_domain"] = {d: _compat_figures([v for v in verdicts if v[0].domain == d]) for d in domains}
    return summary


def _compat_figures(verdicts: Sequence[tuple[CompatVerdict, Any, Any]]) -> dict[str, Any]:
    n = len(verdicts)
    gold = sum(v.n_gold_calls for v, _, _ in verdicts)
    completeness = [c for _, c, _ in verdicts if isinstance(c, int)]
    correctness = [c for _, _, c in verdicts if isinstance(c, int)]
    return {
        "n": n,
        "success_rate": sum(v.success for v, _, _ in verdicts) / n if n else 0.0,
        "call_accuracy": sum(v.n_correct_calls for v, _, _ in verdicts) / gold if gold else 0.0,
        "completeness": sum(completeness) / len(completeness) if completeness else 0.0,
        "correctness": sum(correctness) / len(correctness) if correctness else 0.0,
    }
