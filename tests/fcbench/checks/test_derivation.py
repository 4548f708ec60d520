"""Parameter value reasoning: the values ComplexFuncBench's queries imply, found and explained by rule."""

from fcbench.config import FilterConfig
from fcbench.checks.derivation import QueryFacts, relative_references
from fcbench.checks.grounding import grounding_report
from fcbench.sample import Sample
from fcbench.checks.verdicts import FilterCategory, static_verdict

# The example, in ComplexFuncBench's style.
FAMILY_TRIP = ("We are a family of four flying from Sydney to Melbourne for a week starting April 3, 2026; "
               "show prices in € and pick the cheapest flight leaving before 10 am.")


def test_a_week_starting_a_date_gives_the_return_date_and_the_family_its_size():
    facts = QueryFacts(FAMILY_TRIP)
    assert facts.explain("2026-04-03").rule == "date.spelled"
    back = facts.explain("2026-04-10")
    assert back.rule == "date.offset" and "a week" in back.because
    assert facts.explain("2026-04-11") is None  # eight days is not a week
    assert facts.explain(4).rule == "count.words"
    assert facts.explain(5) is None
    assert facts.explain("EUR").rule == "currency"
    assert facts.explain("GBP") is None
    assert facts.explain("10:00").rule == "time"


def test_durations_offsets_and_party_phrases():
    facts = QueryFacts("A couple needs a hotel from June 12, 2025 for 3 nights, then a taxi the next day.")
    assert facts.explain("2025-06-15").rule == "date.offset"  # three nights
    assert facts.explain("2025-06-13").rule == "date.offset"  # the next day
    assert facts.explain(2).rule == "count.words"
    assert facts.explain(3).rule in ("count.words", "duration")
    alone = QueryFacts("I am travelling alone to Rome.")
    assert alone.explain(1).rule == "count.words"
    assert QueryFacts("Book a room for me and my wife.").explain(2).rule == "count.words"


def test_a_price_per_night_is_no_stay():
    # travel-full-draft-0190-v1: "under 250 USD a night" read as a one-night stay moved a date by a day
    priced = QueryFacts("Hotels in London from November 15, 2025 under 250 USD a night, rooms for three nights.")
    assert [text for _, text in priced.durations] == ["three nights"]
    assert priced.explain("2025-11-18").rule == "date.offset"
    assert priced.explain("2025-11-16") is None
    for said in ("under $180 a night", "at most 300 euros per night"):
        assert QueryFacts(f"Hotels in Rome from June 12, 2025 {said}.").durations == []
    assert QueryFacts("From June 12, 2025 3 nights.").durations == [(3, "3 nights")]  # a date's year is no price


def test_a_stay_end_follows_from_its_start_argument_and_a_stated_duration():
    facts = QueryFacts("Find hotels near the Colosseum for two weeks.")
    assert facts.explain("2025-07-15", other_values=["2025-07-01"]).rule == "date.offset"
    assert facts.explain("2025-07-16", other_values=["2025-07-01"]) is None


def test_units_times_currencies_and_enum_words():
    facts = QueryFacts("Hotels within 3 miles, pick-up at half past six in the evening or at noon, "
                       "in premium economy, paying in yen, for half an hour.")
    assert facts.explain(4.83).rule == "unit"
    assert facts.explain(4.8).rule == "unit"  # rounded by whoever wrote it
    assert facts.explain(9.0) is None
    assert facts.explain("18:30").rule == "time"
    assert facts.explain("12:00").rule == "time"
    assert facts.explain("06:30") is None  # evening, not morning
    assert facts.explain("JPY").rule == "currency"
    cabin = {"type": "string", "enum": ["ECONOMY", "PREMIUM_ECONOMY", "BUSINESS"]}
    assert facts.explain("PREMIUM_ECONOMY", cabin).rule == "enum.words"
    assert facts.explain("BUSINESS", cabin) is None
    assert facts.explain(30).rule == "unit"  # half an hour in minutes


def test_relative_references_are_the_words_that_pick_an_entry():
    assert relative_references("Book the cheapest hotel rated above 8, then the second car.") == \
        ["the cheapest", "rated above", "the second"]


def _tool(name, properties):
    return {"name": name, "description": name, "parameters": {"type": "object", "properties": properties}}


def _sample(query, calls, meta=None):
    tools = [_tool("Search_Flights", {"fromId": {"type": "string"}, "departDate": {"type": "string"},
                                      "returnDate": {"type": "string"}, "adults": {"type": "integer"},
                                      "currency_code": {"type": "string"}}),
             _tool("Get_Flight_Details", {"token": {"type": "string"}})]
    return Sample.model_validate({"id": "s", "messages": [{"role": "user", "content": query}], "tools": tools,
                                  "calls": calls, **({"meta": meta} if meta else {})})


def _flight_path(adults=4, token="tok-2"):
    return [[{"label": "var_1", "name": "Search_Flights",
              "arguments": {"fromId": "SYD.CITY", "departDate": "2026-04-03", "returnDate": "2026-04-10",
                            "adults": adults, "currency_code": "EUR"},
              "response": {"offers": [{"token": "tok-1", "price": 300}, {"token": "tok-2", "price": 120}]}}],
            [{"label": "var_2", "name": "Get_Flight_Details", "arguments": {"token": token}}]]


def test_the_report_says_which_rule_explained_which_argument():
    report = grounding_report(_sample(FAMILY_TRIP.replace("Sydney", "SYD.CITY"), _flight_path()))
    assert report.ungrounded == []
    rules = {(d.label, d.parameter): d.rule for d in report.derived}
    assert rules == {("var_1", "departDate"): "date.spelled", ("var_1", "returnDate"): "date.offset",
                     ("var_1", "adults"): "count.words", ("var_1", "currency_code"): "currency",
                     ("var_2", "token"): "response"}
    token = next(d for d in report.derived if d.parameter == "token")
    assert "the cheapest" in token.because


def test_what_no_rule_explains_is_rejected_without_a_semantic_check_and_deferred_with_one():
    sample = _sample(FAMILY_TRIP.replace("Sydney", "SYD.CITY"), _flight_path(adults=6))
    settings = FilterConfig(grounding="reject")
    closed = static_verdict(sample, settings)
    assert closed.category is FilterCategory.FAILED_GROUNDING and "adults=6" in closed.detail
    deferred = static_verdict(sample, settings, semantic_check=True)
    assert deferred.kept and deferred.deferred == ["var_1.adults=6"]
    assert {d["parameter"] for d in deferred.derived} >= {"returnDate", "currency_code"}


def test_an_annotator_mark_explains_a_value_and_keeps_its_reason():
    meta = {"derived": [{"label": "var_1", "parameter": "adults", "reason": "two parents and four kids"}]}
    sample = _sample(FAMILY_TRIP.replace("Sydney", "SYD.CITY"), _flight_path(adults=6), meta)
    verdict = static_verdict(sample, FilterConfig(grounding="reject"))
    assert verdict.kept
    mark = next(d for d in verdict.derived if d["parameter"] == "adults")
    assert mark["rule"] == "annotator" and mark["because"] == "two parents and four kids"
