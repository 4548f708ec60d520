"""Reference resolution: every spelling the published files use, and every way it can fail."""

from __future__ import annotations

import pytest

from fcbench.references import parse_reference
from fcbench.resolve import (
    CallSite,
    PathIndex,
    ReferenceProblem,
    UnresolvedReference,
    check_references,
    resolve_arguments,
    resolve_value,
    walk_path,
)
from fcbench.sample import Call

HOTELS = {"hotels": [{"id": "h-17", "name": "Ritz", "rooms": [{"beds": 2}]}, {"id": "h-42"}], "count": 2}
OUTPUTS = {
    "var_1": {"result": 0.2},
    "var_2": HOTELS,
    "var1": {"skyId": "NYCA", "entityId": "27537542"},  # NESTful v1 label spelling
    "var_3": [10, 20, 30],
    "var_4": 7,
}
SITE = CallSite("var_9", "book_hotel", step_index=5)


def resolve(value):
    return resolve_value(value, OUTPUTS, SITE)


def test_nested_keys_and_list_indexes():
    assert resolve("$var_2.hotels[0].id$") == "h-17"
    assert resolve("$var_2.hotels[1].id$") == "h-42"
    assert resolve("$var_2.hotels[0].rooms[0].beds$") == 2
    assert resolve("$var_2.hotels[-1].id$") == "h-42"  # negative index counts from the end
    assert resolve("$var_3[2]$") == 30


def test_whole_output():
    assert resolve("$var_2$") is HOTELS
    assert resolve("$var_4$") == 7


def test_nestful_spellings():
    assert resolve("$var_1.result$") == 0.2  # v2: label `$var_1` in the file, `var_1` canonical
    assert resolve("$var1.skyId$") == "NYCA"  # v1: label var1
    assert resolve("$var1.entityId$") == "27537542"


def test_numeric_key_on_a_list_is_an_index():
    assert resolve("$var_2.hotels.1.id$") == "h-42"


def test_references_inside_lists_and_dicts():
    arguments = {
        "ids": ["$var_2.hotels[0].id$", "$var_2.hotels[1].id$", "literal"],
        "filter": {"min": "$var_1.result$", "nested": [{"sky": "$var1.skyId$"}]},
        "plain": 3,
    }
    assert resolve_arguments(arguments, OUTPUTS, SITE) == {
        "ids": ["h-17", "h-42", "literal"],
        "filter": {"min": 0.2, "nested": [{"sky": "NYCA"}]},
        "plain": 3,
    }


def test_values_without_references_are_returned_untouched():
    literal = {"a": [1, 2, {"b": "text"}], "c": "$not a reference"}
    assert resolve(literal) is literal
    assert resolve("$$") == "$$"
    assert resolve("price in $") == "price in $"


def error_of(value, index=None, site=SITE) -> UnresolvedReference:
    with pytest.raises(UnresolvedReference) as caught:
        resolve_value(value, OUTPUTS, site, index)
    return caught.value


def test_missing_label_names_the_call_and_the_reference():
    error = error_of("$var_77.result$")
    assert error.problem is ReferenceProblem.UNKNOWN_LABEL
    assert (error.call_label, error.call_name, error.reference) == ("var_9", "book_hotel", "$var_77.result$")
    assert "var_9" in str(error) and "$var_77.result$" in str(error) and "book_hotel" in str(error)


def test_reference_to_a_later_call():
    index = PathIndex([["var_1"], ["var_5"], ["var_6", "var_7"]])
    site = CallSite("var_5", "add", step_index=1)
    assert error_of("$var_6.result$", index, site).problem is ReferenceProblem.LATER_CALL
    assert "step 3" in str(error_of("$var_7$", index, site))


def test_reference_within_the_same_step_and_to_itself():
    index = PathIndex([["var_a", "var_b"]])
    site = CallSite("var_a", "add", step_index=0)
    assert error_of("$var_b.result$", index, site).problem is ReferenceProblem.SAME_STEP
    assert error_of("$var_a.result$", index, site).problem is ReferenceProblem.SELF


def test_reference_to_an_earlier_call_without_output():
    index = PathIndex([["var_0"], ["var_9"]])
    error = error_of("$var_0.result$", index)
    assert error.problem is ReferenceProblem.NOT_EXECUTED


def test_missing_key_and_bad_index_and_not_a_container():
    missing = error_of("$var_2.hotels[0].price$")
    assert missing.problem is ReferenceProblem.MISSING_KEY
    assert "price" in missing.detail and "hotels[0]" in missing.detail
    assert error_of("$var_2.hotels[5].id$").problem is ReferenceProblem.BAD_INDEX
    assert error_of("$var_4.result$").problem is ReferenceProblem.NOT_A_CONTAINER
    assert error_of("$var_2.hotels.first$").problem is ReferenceProblem.NOT_A_CONTAINER
    assert error_of("$var1.skyID$").problem is ReferenceProblem.MISSING_KEY  # keys are case-sensitive


def test_error_inside_a_nested_argument_is_reported():
    with pytest.raises(UnresolvedReference) as caught:
        resolve_arguments({"a": [{"b": "$var_2.nope$"}]}, OUTPUTS, SITE)
    assert caught.value.reference == "$var_2.nope$"


def test_walk_path_uses_the_parsed_path():
    reference = parse_reference("$var_2.hotels[0].rooms[0].beds$")
    assert reference is not None
    assert walk_path(OUTPUTS[reference.label], reference.path) == 2


def test_check_references_on_a_gold_path():
    steps = [
        [Call(label="var_1", name="a"), Call(label="var_2", name="b", arguments={"x": "$var_1.result$"})],
        [Call(label="var_3", name="c", arguments={"x": "$var_2.result$", "y": ["$var_4$"], "z": "$ghost.k$"})],
        [Call(label="var_4", name="d", arguments={"x": "$var_3.result$"})],
    ]
    problems = check_references(steps)
    assert [(p.call_label, p.reference, p.problem) for p in problems] == [
        ("var_2", "$var_1.result$", ReferenceProblem.SAME_STEP),
        ("var_3", "$var_4$", ReferenceProblem.LATER_CALL),
        ("var_3", "$ghost.k$", ReferenceProblem.UNKNOWN_LABEL),
    ]
