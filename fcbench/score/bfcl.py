"""The BFCL AST checker for single-turn categories (pure: parsed JSON in, verdict out).

The rules are those of the Berkeley Function-Calling Leaderboard's AST checker (Python language):
candidate lists per argument, `""` among the candidates meaning "may be omitted", strings compared
after removing spaces and `,./-_*^` and lowercasing, an int accepted where a float is expected (not
the reverse), tuples compared as lists, dicts and lists of dicts compared key by key, lists compared
in order, parallel calls matched without order, and a count rule per category.

Two modes:
- `compat=True` reproduces the leaderboard verdict for verdict, including its known defects.
- the default mode fixes the defects listed in `_DEFAULT_MODE_FIXES`; each fix is also marked where
  it happens with a comment starting "Fix".

`bench/bfcl_agreement.py` compares both modes with the reference implementation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from fcbench.score.registry import metric

_DEFAULT_MODE_FIXES = (
    # 1. Parallel categories: the leaderboard pairs each gold call, in order, with the FIRST still
    #    unpaired prediction it accepts (greedy). When a prediction is acceptable for two gold calls
    #    the greedy choice can leave another gold call without its only match, failing a correct
    #    answer. Default mode looks for a complete pairing (maximum bipartite matching).
    "parallel: complete matching instead of greedy first fit",
    # 2. Parameter types the leaderboard has no entry for raise KeyError there (no verdict at all).
    #    Default mode reads JSON Schema `number` as float and `object` as dict, treats a missing
    #    `required` as [] and a list without `items` as a list of anything.
    "JSON Schema spellings number/object accepted; missing required/items tolerated",
    # 3. The int -> float allowance applies to top-level values only in the leaderboard, so [1, 2]
    #    fails for a list of floats while 1 passes for a float. Default mode applies it to items too.
    "int accepted for float inside lists",
    # 4. In the leaderboard an optional marker "" among a list parameter's candidates switches the
    #    item type check off (it is not a list, so nothing is checked and the check "passes"), which
    #    lets [True] through for a list of integers ([True] == [1] in Python). Default mode checks
    #    the items against the real candidate lists only.
    "an optional marker does not switch the item type check off",
)

OMITTED = ""  # BFCL's marker, among an argument's candidates, for "this argument may be left out"

# BFCL type names -> the Python type a decoded value must have. "any" is checked as a string, as
# the leaderboard does (its decoder turns unknown values into strings).
_BFCL_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
# JSON Schema spellings accepted in default mode only (fix 2).
_JSON_SCHEMA_ALIASES: dict[str, type] = {"number": float, "object": dict}
_LIST_TYPES = ("array", "tuple")
_PUNCTUATION_IGNORED = re.compile(r"[ ,./\-_*^]")
_VERSION_PREFIX = re.compile(r"^BFCL_v\d+_")
_ID_SUFFIX = re.compile(r"_\d+(?:-\d+)*$")


class BfclSchemaError(ValueError):
    """The question's function doc cannot be checked (the leaderboard would crash on it)."""


@dataclass(frozen=True)
class BfclVerdict:
    valid: bool
    error_type: str | None = None
    errors: tuple[str, ...] = ()


_VALID = BfclVerdict(True)


def _invalid(error_type: str, *errors: str) -> BfclVerdict:
    return BfclVerdict(False, error_type, tuple(errors))


@dataclass(frozen=True)
class _Rules:
    """What differs between default mode and compat mode (see `_DEFAULT_MODE_FIXES`)."""

    compat: bool
    dotted_names_as_underscores: bool = False


# --------------------------------------------------------------------------------------------
# Entry point


@metric("bfcl")
def check_bfcl(
    question: dict[str, Any],
    answer: dict[str, Any] | None,
    prediction: Any,
    category: str,
    compat: bool = False,
    *,
    dotted_names_as_underscores: bool = False,
) -> BfclVerdict:
    """Grade one decoded prediction `[{"func_name": {"arg": value}}, ...]` against a BFCL item.

    `question` and `answer` are the raw JSON lines of `BFCL_v4_<category>.json` and
    `possible_answer_BFCL_v4_<category>.json` (`answer` may be None for relevance categories).
    `dotted_names_as_underscores` expects `a.b` spelled `a_b`, as the leaderboard does for models
    whose API forbids dots in function names.
    """
    category = normalise_category(category)
    if "multi_turn" in category or category.endswith(("_java", "_javascript")):
        # Multi-turn items are graded by executing the calls; Java/JavaScript need the
        # leaderboard's type converters: neither is this checker's job.
        raise BfclSchemaError(f"category {category!r} is not a Python single-turn category")
    if "irrelevance" in category:
        if _is_empty_output(prediction):
            return _VALID
        return _invalid(
            "irrelevance_error:decoder_success",
            "Valid syntax. Successfully decode AST when it should not.",
        )
    if "relevance" in category:
        if _is_empty_output(prediction):
            return _invalid("relevance_error:decoder_failed", "No function call was decoded.")
        return _VALID
    if not is_bfcl_call_list(prediction):
        return _invalid(
            "ast_decoder:decoder_wrong_output_format",
            "Did not output in the specified format: a list of {function name: {argument: value}}.",
        )
    if answer is None:
        raise BfclSchemaError(f"category {category!r} needs the possible answer")
    rules = _Rules(compat=compat, dotted_names_as_underscores=dotted_names_as_underscores)
    functions: list[dict[str, Any]] = question["function"]
    gold: list[dict[str, Any]] = answer["ground_truth"]
    if "parallel" in category:
        return _check_parallel(functions, prediction, gold, rules)
    if "multiple" in category:
        return _check_multiple(functions, prediction, gold, rules)
    return _check_simple(functions, prediction, gold, rules)


def normalise_category(category: str) -> str:
    """`BFCL_v4_simple_python` or `simple_python` -> `simple_python`."""
    return _VERSION_PREFIX.sub("", category)


def category_from_id(item_id: str) -> str:
    """`simple_python_12` -> `simple_python`; `live_multiple_3-1-0` -> `live_multiple`."""
    return _ID_SUFFIX.sub("", item_id)


def is_bfcl_call_list(prediction: Any) -> bool:
    """The decoded form the checker reads: a list of one-key dicts whose value is a dict."""
    if type(prediction) is not list:
        return False
    return all(
        type(item) is dict and len(item) == 1 and type(next(iter(item.values()))) is dict
        for item in prediction
    )


def _is_empty_output(prediction: Any) -> bool:
    # The leaderboard counts anything that is not a call list, [] and [{}] as "no call".
    if not is_bfcl_call_list(prediction):
        return True
    return len(prediction) == 0 or (len(prediction) == 1 and len(prediction[0]) == 0)


def first_candidate_prediction(
    answer: dict[str, Any], question: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The prediction made of each argument's first candidate (an optional-first argument left out).

    Handy to check that a checker accepts the gold answer itself. With the `question`, the choice
    follows the function docs where the published possible answers contradict them: a required
    argument whose first candidate is the optional marker takes its first real candidate, and an
    optional argument the doc does not describe is left out.
    """
    docs = {doc["name"]: doc for doc in question["function"]} if question else {}
    prediction = []
    for gold_call in answer["ground_truth"]:
        name, candidates_by_arg = next(iter(gold_call.items()))
        doc = docs.get(name)
        if doc is not None:
            candidates_by_arg = _candidates_fitting_doc(candidates_by_arg, doc["parameters"])
        prediction.append({name: _first_candidates(candidates_by_arg)})
    return prediction


def _candidates_fitting_doc(
    candidates_by_arg: dict[str, list[Any]], parameters: dict[str, Any]
) -> dict[str, list[Any]]:
    required = set(parameters.get("required", []))
    properties = parameters.get("properties", {})
    fitting = {}
    for arg, candidates in candidates_by_arg.items():
        real = [c for c in candidates if c != OMITTED]
        if arg not in properties and OMITTED in candidates:
            continue
        fitting[arg] = real if arg in required and real else candidates
    return fitting


def _first_candidates(candidates_by_key: dict[str, list[Any]], depth: int = 0) -> dict[str, Any]:
    # A dict argument is itself a "key -> candidates" map in BFCL's possible answers, and so is
    # each dict of a list of dicts; one level down, values are literal (the checker compares them
    # as they are).
    return {
        key: _first_value(candidates[0]) if depth == 0 else candidates[0]
        for key, candidates in candidates_by_key.items()
        if candidates and candidates[0] != OMITTED
    }


def _first_value(candidate: Any) -> Any:
    if type(candidate) is dict:
        return _first_candidates(candidate, depth=1)
    if type(candidate) is list and candidate and all(type(item) is dict for item in candidate):
        return [_first_candidates(item, depth=1) for item in candidate]
    return candidate


# --------------------------------------------------------------------------------------------
# Count rules per category


def _check_simple(
    functions: list[dict[str, Any]],
    prediction: list[dict[str, Any]],
    gold: list[dict[str, Any]],
    rules: _Rules,
) -> BfclVerdict:
    if len(prediction) != 1:
        return _invalid("simple_function_checker:wrong_count", "Wrong number of functions.")
    # The leaderboard grades a simple item against its first function doc.
    return _check_call(functions[0], prediction[0], gold[0], rules)


def _check_multiple(
    functions: list[dict[str, Any]],
    prediction: list[dict[str, Any]],
    gold: list[dict[str, Any]],
    rules: _Rules,
) -> BfclVerdict:
    if len(prediction) != len(gold):
        return _invalid("multiple_function_checker:wrong_count", "Wrong number of functions.")
    doc = _function_doc(functions, _gold_name(gold[0]))
    return _check_call(doc, prediction[0], gold[0], rules)


def _check_parallel(
    functions: list[dict[str, Any]],
    prediction: list[dict[str, Any]],
    gold: list[dict[str, Any]],
    rules: _Rules,
) -> BfclVerdict:
    if len(prediction) != len(gold):
        return _invalid(
            "parallel_function_checker_no_order:wrong_count", "Wrong number of functions."
        )
    docs = [_function_doc(functions, _gold_name(gold_call)) for gold_call in gold]
    if rules.compat:
        return _pair_greedily(docs, prediction, gold, rules)
    return _pair_completely(docs, prediction, gold, rules)


def _pair_greedily(
    docs: list[dict[str, Any]],
    prediction: list[dict[str, Any]],
    gold: list[dict[str, Any]],
    rules: _Rules,
) -> BfclVerdict:
    """The leaderboard's pairing: each gold call takes the first unpaired prediction it accepts."""
    paired: set[int] = set()
    for gold_index, gold_call in enumerate(gold):
        reasons = []
        for index, predicted_call in enumerate(prediction):
            if index in paired:
                continue
            verdict = _check_call(docs[gold_index], predicted_call, gold_call, rules)
            if verdict.valid:
                paired.add(index)
                break
            reasons.append(f"prediction {index}: {verdict.error_type}: {'; '.join(verdict.errors)}")
        else:
            return _no_match(gold_index, prediction, paired, reasons)
    return _VALID


def _pair_completely(
    docs: list[dict[str, Any]],
    prediction: list[dict[str, Any]],
    gold: list[dict[str, Any]],
    rules: _Rules,
) -> BfclVerdict:
    """Fix 1: accept when SOME one-to-one pairing makes every gold call accept its prediction."""
    verdicts = [
        [_check_call(docs[g], predicted_call, gold_call, rules) for predicted_call in prediction]
        for g, gold_call in enumerate(gold)
    ]
    accepts = np.array([[v.valid for v in row] for row in verdicts], dtype=bool)
    if accepts.size == 0:
        return _VALID
    rows, cols = linear_sum_assignment(accepts, maximize=True)
    if accepts[rows, cols].all():
        return _VALID
    # Report the first gold call left without an acceptable partner in the best pairing.
    unmatched_gold = int(next(r for r, c in zip(rows, cols) if not accepts[r, c]))
    reasons = [
        f"prediction {index}: {v.error_type}: {'; '.join(v.errors)}"
        for index, v in enumerate(verdicts[unmatched_gold])
        if not v.valid
    ]
    paired = {int(c) for r, c in zip(rows, cols) if accepts[r, c]}
    return _no_match(unmatched_gold, prediction, paired, reasons)


def _no_match(
    gold_index: int, prediction: list[Any], paired: set[int], reasons: list[str]
) -> BfclVerdict:
    considered = [i for i in range(len(prediction)) if i not in paired]
    return _invalid(
        "parallel_function_checker_no_order:cannot_find_match",
        f"Could not find a matching function among index {considered} of model output "
        f"for index {gold_index} of possible answers.",
        *reasons,
    )


def _gold_name(gold_call: dict[str, Any]) -> str:
    return next(iter(gold_call))


def _function_doc(functions: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for doc in functions:
        if doc["name"] == name:
            return doc
    raise BfclSchemaError(f"the possible answer calls {name!r}, which no function doc describes")


# --------------------------------------------------------------------------------------------
# One call


def _check_call(
    doc: dict[str, Any],
    predicted_call: dict[str, Any],
    gold_call: dict[str, Any],
    rules: _Rules,
) -> BfclVerdict:
    candidates_by_arg: dict[str, list[Any]] = next(iter(gold_call.values()))
    name = doc["name"]
    if rules.dotted_names_as_underscores:
        name = name.replace(".", "_")
    if name not in predicted_call:
        return _invalid(
            "simple_function_checker:wrong_func_name",
            f"Function name {name!r} not found in model output.",
        )
    arguments = predicted_call[name]
    parameters = doc["parameters"]
    properties: dict[str, Any] = parameters["properties"]
    required = _required(parameters, rules)

    for param in required:
        if param not in arguments:
            return _invalid(
                "simple_function_checker:missing_required",
                f"Missing required parameter: {param!r}.",
            )
    for param, value in arguments.items():
        if param not in properties or param not in candidates_by_arg:
            return _invalid(
                "simple_function_checker:unexpected_param", f"Unexpected parameter: {param!r}."
            )
        verdict = _check_argument(param, value, properties[param], candidates_by_arg[param], rules)
        if not verdict.valid:
            return verdict
    for param, candidates in candidates_by_arg.items():
        if param not in arguments and OMITTED not in candidates:
            return _invalid(
                "simple_function_checker:missing_optional",
                f"Optional parameter {param!r} not provided and not marked as optional.",
            )
    return _VALID


def _required(parameters: dict[str, Any], rules: _Rules) -> list[str]:
    if "required" in parameters:
        return parameters["required"]
    if rules.compat:
        raise BfclSchemaError("function doc has no 'required' list (the leaderboard needs one)")
    return []  # Fix 2.


def _python_type(type_name: str, rules: _Rules) -> type:
    if type_name in _BFCL_TYPES:
        return _BFCL_TYPES[type_name]
    if not rules.compat and type_name in _JSON_SCHEMA_ALIASES:
        return _JSON_SCHEMA_ALIASES[type_name]  # Fix 2.
    raise BfclSchemaError(f"parameter type {type_name!r} is not a BFCL type")


def _item_type(schema: dict[str, Any], rules: _Rules) -> type | None:
    """The type every item of a list parameter must have (None: items are not checked)."""
    if schema["type"] not in _LIST_TYPES:
        return None
    items = schema.get("items")
    if items is None or "type" not in items:
        if rules.compat:
            raise BfclSchemaError("list parameter without 'items.type' (the leaderboard needs one)")
        return None  # Fix 2.
    return _python_type(items["type"], rules)


def _check_argument(
    param: str, value: Any, schema: dict[str, Any], candidates: list[Any], rules: _Rules
) -> BfclVerdict:
    type_name: str = schema["type"]
    expected = _python_type(type_name, rules)
    item_expected = _item_type(schema, rules)

    # A tuple stands for a list (JSON has no tuple), as the leaderboard does for "tuple" params.
    if type_name == "tuple" and type(value) is tuple:
        value = list(value)
    # An int is accepted where a float is expected (Python would convert it); not the reverse.
    if expected is float and type(value) is int:
        value = float(value)

    verdict, is_variable = _check_type(
        param, value, type_name, expected, item_expected, candidates, rules
    )
    if not verdict.valid:
        return verdict
    # When the gold candidates are of another type than the parameter (a variable name standing
    # for a value, as in BFCL's data), the value is compared as is, with no normalisation.
    if not is_variable:
        if expected is dict:
            return _check_dict(value, candidates)
        if expected is list and item_expected is dict:
            return _check_list_of_dicts(value, candidates)
        if expected is str:
            return _check_string(param, value, candidates)
        if expected is list:
            return _check_list(param, value, candidates)
    if value not in candidates:
        return _invalid(
            "value_error:others",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {candidates}.",
        )
    return _VALID


def _candidate_type(candidates: list[Any]) -> type | None:
    """Type of the first real candidate (None when the only candidate is the optional marker)."""
    for candidate in candidates:
        if candidate != OMITTED:
            return type(candidate)
    return None


def _check_type(
    param: str,
    value: Any,
    type_name: str,
    expected: type,
    item_expected: type | None,
    candidates: list[Any],
    rules: _Rules,
) -> tuple[BfclVerdict, bool]:
    """(verdict, is_variable): is_variable when the gold candidates have another type."""
    candidate_type = _candidate_type(candidates)
    is_variable = candidate_type is not None and candidate_type is not expected
    nested_failure: BfclVerdict | None = None

    if type(value) is expected:
        if item_expected is None or _items_have_type(value, item_expected, candidates, rules):
            return _VALID, is_variable
        nested_failure = _invalid(
            "type_error:nested",
            f"Nested type checking failed for parameter {param!r}. Expected outer type "
            f"{type_name} with inner type {item_expected.__name__}. Parameter value: {value!r}.",
        )
    # A value of the candidates' own type is a variable standing for the value: the leaderboard
    # lets it through (but keeps a nested failure, which it reports as such).
    if candidate_type is not None and type(value) is candidate_type:
        return (nested_failure or _VALID), True
    simple_error = (
        f"Incorrect type for parameter {param!r}. Expected type {type_name}, "
        f"got {type(value).__name__}. Parameter value: {value!r}."
    )
    errors = ([*nested_failure.errors] if nested_failure else []) + [simple_error]
    return _invalid("type_error:simple", *errors), False


def _items_have_type(
    value: list[Any], item_expected: type, candidates: list[Any], rules: _Rules
) -> bool:
    """The leaderboard's one-level item check: passes if the items fit one candidate's typing."""
    for candidate in candidates:
        if type(candidate) is not list:
            if rules.compat:
                return True  # The leaderboard's "check" of a non-list candidate passes (fix 4).
            continue
        if all(_item_has_type(item, item_expected, candidate, rules) for item in value):
            return True
    return False


def _item_has_type(item: Any, item_expected: type, gold_items: list[Any], rules: _Rules) -> bool:
    if type(item) is item_expected:
        return True
    if not rules.compat and item_expected is float and type(item) is int:
        return True  # Fix 3.
    # Same variable rule as for a top-level value, the gold list's items giving the type.
    gold_item_type = _candidate_type(gold_items)
    return gold_item_type is not None and type(item) is gold_item_type


# --------------------------------------------------------------------------------------------
# Values


def standardise_string(text: str) -> str:
    """The leaderboard's string normalisation: `April 1, 2024` == `april 1 2024` == `April1,2024`."""
    return _PUNCTUATION_IGNORED.sub("", text).lower().replace("'", '"')


def _standardised(value: Any) -> Any:
    return standardise_string(value) if type(value) is str else value


def _check_string(param: str, value: str, candidates: list[Any]) -> BfclVerdict:
    allowed = [standardise_string(c) for c in candidates if type(c) is str]
    if standardise_string(value) not in allowed:
        return _invalid(
            "value_error:string",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {candidates}. "
            "Case insensitive.",
        )
    return _VALID


def _check_list(param: str, value: list[Any], candidates: list[Any]) -> BfclVerdict:
    # Only top-level strings are standardised; order matters. A candidate that is not a list is
    # iterated as the leaderboard does: the optional marker "" becomes [], so [] is then accepted.
    standardised_value = [_standardised(item) for item in value]
    allowed = [_standardised_items(candidate) for candidate in candidates]
    if standardised_value not in allowed:
        return _invalid(
            "value_error:list/tuple",
            f"Invalid value for parameter {param!r}: {value!r}. Expected one of {candidates}.",
        )
    return _VALID


def _standardised_items(candidate: Any) -> Any:
    if isinstance(candidate, (list, tuple, str)):
        return [_standardised(item) for item in candidate]
    return candidate  # Never equal to a list: the value is rejected, where the leaderboard crashes.


def _check_dict(value: dict[str, Any], candidates: list[Any]) -> BfclVerdict:
    """Accept when one (non-optional) candidate dict accepts every key of the value.

    A candidate dict maps each key to its own candidate list; string values are standardised one
    level deep, nested dicts are compared as they are (as the leaderboard does).
    """
    verdict = _invalid("dict_checker:unclear")
    for candidate in candidates:
        if candidate == OMITTED:
            continue
        verdict = _check_dict_candidate(value, candidate)
        if verdict.valid:
            return _VALID
    return verdict


def _check_dict_candidate(value: Any, candidate: Any) -> BfclVerdict:
    if type(value) is not dict or type(candidate) is not dict:
        # Only reachable through malformed data (the leaderboard crashes there): reject.
        return _invalid("dict_checker:unclear", f"Cannot compare {value!r} with {candidate!r}.")
    verdict = _first_bad_dict_key_or_value(value, candidate)
    # The missing-key check runs even after a bad value was found, and its error type then wins,
    # as in the leaderboard (its messages accumulate).
    for key, allowed_values in candidate.items():
        if key not in value and OMITTED not in allowed_values:
            return _invalid(
                "value_error:dict_key", *verdict.errors, f"Missing dict key parameter: '{key}'."
            )
    return verdict


def _first_bad_dict_key_or_value(value: dict[str, Any], candidate: dict[str, Any]) -> BfclVerdict:
    for key, item in value.items():
        if key not in candidate:
            return _invalid("value_error:dict_key", f"Unexpected dict key parameter: '{key}'.")
        allowed = [_standardised(c) for c in candidate[key]]
        if _standardised(item) not in allowed:
            return _invalid(
                "value_error:dict_value",
                f"Invalid value for parameter {key!r}: {item!r}. Expected one of {allowed}.",
            )
    return _VALID


def _check_list_of_dicts(value: list[Any], candidates: list[Any]) -> BfclVerdict:
    """Each candidate is a list of candidate dicts compared position by position."""
    verdict = _invalid("list_dict_checker:unclear")
    for candidate in candidates:
        if not isinstance(candidate, (list, str)) or len(value) != len(candidate):
            verdict = _invalid(
                "value_error:list_dict_count", "Wrong number of dictionaries in the list."
            )
            continue
        verdict = _VALID
        for item, candidate_dict in zip(value, candidate):
            verdict = _check_dict(item, [candidate_dict])
            if not verdict.valid:
                break
        if verdict.valid:
            return _VALID
    return verdict


# --------------------------------------------------------------------------------------------
# Batch helper


@dataclass(frozen=True)
class BfclItem:
    """One BFCL single-turn item: the question line and its possible-answer line."""

    question: dict[str, Any]
    answer: dict[str, Any] | None

    @property
    def category(self) -> str:
        return category_from_id(self.question["id"])


def bfcl_accuracy(
    items: Sequence[BfclItem],
    predict: Callable[[BfclItem], Any],
    compat: bool = False,
) -> float:
    """Share of items whose prediction (from `predict`) the checker accepts."""
    if not items:
        return 0.0
    valid = sum(
        check_bfcl(item.question, item.answer, predict(item), item.category, compat).valid
        for item in items
    )
    return valid / len(items)
