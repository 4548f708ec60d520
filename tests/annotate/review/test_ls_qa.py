"""QA of annotations: draft-vs-gold differences classified into error types, and agreement."""

from __future__ import annotations

from annotate.tasks.error_types import DraftError
from annotate.review.qa import agreement, diff_sample, summarise
from fcbench.sample import Call, Sample
from ls_helpers import call
from ls_fixtures import drafts, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)


def with_path(sample: Sample, steps: list[list[Call]], query: str | None = None) -> Sample:
    update: dict = {"calls": steps}
    if query is not None:
        update["messages"] = [{"role": "user", "content": query}]
    return sample.model_copy(deep=True, update=update)


def test_an_unchanged_sample_has_no_difference(drafts) -> None:
    draft = drafts["hotels-paris"]
    diff = diff_sample(draft, draft.model_copy(deep=True))
    assert not diff.changed and diff.deepdiff == {} and not diff.error_types


def test_value_fix_is_a_value_error_on_a_string_parameter(drafts) -> None:
    draft = drafts["hotels-rome-wrong"]
    gold = with_path(draft, [[call("var_1", "Search_Hotel_Destination", query="Rome")], draft.calls[1]])
    diff = diff_sample(draft, gold)
    assert dict(diff.error_types) == {"value_error": 1}
    assert dict(diff.arguments_fixed_by_type) == {"string": 1}
    assert diff.changes == ["argument value fixed: var_1.query"]
    assert diff.deepdiff == {"values_changed": {"root['calls'][0][0]['arguments']['query']":
                                                {"new_value": "Rome", "old_value": "Paris"}}}


def test_added_removed_and_reordered_calls_and_a_rewritten_query(drafts) -> None:
    draft = drafts["two-cities"]  # [[SFL Sydney, SFL Tokyo]]
    sydney, tokyo = draft.calls[0]
    taxi = call("var_3", "Taxi_Search_Location", query="Sydney Opera House")
    gold = with_path(draft, [[tokyo], [sydney, taxi]], query="Tokyo first, then Sydney and a taxi spot.")
    diff = diff_sample(draft, gold)
    assert diff.query_rewritten and diff.calls_added == 1 and diff.calls_removed == 0 and diff.reordered
    assert dict(diff.error_types) == {"query_rewritten": 1, "call_missing": 1, "order_error": 1}
    removed = diff_sample(draft, with_path(draft, [[sydney]]))
    assert removed.calls_removed == 1 and dict(removed.error_types) == {"call_redundant": 1}
    assert removed.changes == ["call removed: var_2 Search_Flight_Location"]


def test_another_function_with_the_same_parameters_is_a_func_error(drafts) -> None:
    draft = drafts["airports-sydney"]
    gold = with_path(draft, [[call("var_1", "Taxi_Search_Location", query="Sydney")]])
    diff = diff_sample(draft, gold)
    assert dict(diff.error_types) == {"func_error": 1}
    assert diff.changes == ["function changed: var_1 Search_Flight_Location -> Taxi_Search_Location"]


def test_missing_and_hallucinated_arguments_by_parameter_type(drafts) -> None:
    draft = drafts["hotels-paris"]
    hotels = draft.calls[1][0]
    arguments = dict(hotels.arguments, adults=2)
    arguments.pop("departure_date")
    gold = with_path(draft, [draft.calls[0], [hotels.model_copy(update={"arguments": arguments})]])
    diff = diff_sample(draft, gold, entries_deleted=4, tools_dropped=["Search_Taxi"])
    assert dict(diff.error_types) == {"param_missing": 1, "param_hallucination": 1, "ambiguous_response": 1,
                                      "overlapping_tools": 1}
    assert dict(diff.arguments_fixed_by_type) == {"integer": 1, "string": 1}


def test_summary_counts_what_annotators_fixed(drafts) -> None:
    draft = drafts["hotels-rome-wrong"]
    fixed = diff_sample(draft, with_path(draft, [[call("var_1", "Search_Hotel_Destination", query="Rome")], draft.calls[1]]))
    same = diff_sample(drafts["airports-sydney"], drafts["airports-sydney"])
    summary = summarise([fixed, same], [["value_error"], []])
    assert summary["samples"] == 2 and summary["corrected"] == 1 and summary["accepted_unchanged"] == 1
    assert summary["arguments_fixed_by_type"] == {"string": 1}
    assert summary["samples_by_error_type"]["value_error"] == 1
    assert summary["flags_ticked_by_annotators"]["value_error"] == 1
    assert set(summary["samples_by_error_type"]) == {error.value for error in DraftError}
    assert summary["agreement"] == {"tasks_with_several_annotations": 0}


def test_agreement_of_two_annotations_by_the_shared_scorer(drafts) -> None:
    draft = drafts["two-cities"]
    sydney, tokyo = draft.calls[0]
    same = agreement(draft, draft.model_copy(deep=True))
    assert same.call_agreement == 1.0 and same.exact_path and same.same_query
    # a trailing space and different case are the same value for the scorer
    respelt = with_path(draft, [[sydney.model_copy(update={"arguments": {"query": "sydney "}}), tokyo]])
    assert agreement(draft, respelt).call_agreement == 1.0
    one_wrong = with_path(draft, [[sydney, tokyo.model_copy(update={"arguments": {"query": "Kyoto"}})]])
    result = agreement(draft, one_wrong)
    assert result.call_agreement == 0.5 and not result.exact_path
    split = with_path(draft, [[sydney], [tokyo]])  # same calls, not in parallel
    assert agreement(draft, split).call_agreement == 1.0 and not agreement(draft, split).exact_path
    summary = summarise([], [], [same, result])
    assert summary["agreement"] == {"tasks_with_several_annotations": 2, "mean_call_agreement": 0.75,
                                    "exact_path_rate": 0.5, "same_query_rate": 1.0}
