"""The query text lint: each glitch kind of issue 26 gets its code, good text gets none, and on the
published queries of ../shared/external it flags exactly the hand-labelled texts."""

from __future__ import annotations

import json
import pytest

from conftest import REPO, TEST_DATA
from fcbench.checks.query_text import Problem, TextProblemCode, api_spellings, query_text_problems
from fcbench.formats import FormatOptions, read_samples
from fcbench.sample import Sample, Tool

EXTERNAL = REPO.parent / "shared" / "external"
C = TextProblemCode

FLIGHTS = Tool(name="Search_Flights", description="Search flights between two places.", parameters={
    "type": "object", "properties": {
        "fromId": {"type": "string"}, "cabinClass": {"type": "string", "enum": ["ECONOMY", "PREMIUM_ECONOMY", "BUSINESS"]},
        "currency_code": {"type": "string", "enum": ["USD", "EUR"]}, "adults": {"type": "integer"}}})
HOTELS = Tool(name="Search_Hotels", description="Search hotels.", parameters={
    "type": "object", "properties": {"sort_by": {"type": "string", "enum": ["popularity", "price", "review_score"]}}})
AIRPORTS = Tool(name="getAirportCitySearch", description="Returns a list of airports and cities matching a given keyword.",
                parameters={"type": "object", "properties": {
                    "subType": {"type": "array", "items": {"type": "string", "enum": ["AIRPORT", "CITY"]}},
                    "keyword": {"type": "string"}}})
TOOLS = [FLIGHTS, HOTELS, AIRPORTS]


def codes(text: str, tools=()) -> list[str]:
    return [problem.code.value for problem in query_text_problems(text, tools)]


# ------------------------------------------------------------------------------ each glitch kind
@pytest.mark.parametrize("text, code", [
    # issue 26's own examples first
    ("Find hotels near Kensington, then list the rooms of the first hotel, then and the booking conditions of "
     "the first room.", C.JOINED_CLAUSES),
    ("Find flights from Paris to Rome. Also, and book a taxi from Rome airport.", C.JOINED_CLAUSES),
    ("Book a taxi from Orly and and then to the hotel.", C.JOINED_CLAUSES),
    ("Show me the the details of the second flight.", C.DOUBLED_WORD),
    ("Find flights from Paris to London on {departDate}.", C.UNFILLED_SLOT),
    ("Show me the details of {token|flight}.", C.UNFILLED_SLOT),
    ("Find hotels in {{city}} for two nights.", C.UNFILLED_SLOT),
    ("Get the rooms of $var_2.data.hotels[1].hotel_id$.", C.UNFILLED_SLOT),
    ("Find flights from to Paris on June 12, 2025.", C.UNFILLED_SLOT),
    ("Book a taxi on None at 09:00.", C.UNFILLED_SLOT),
    ("Find hotels in Paris from June 12, 2025 to June 15, 2025, then.", C.DANGLING_CONNECTIVE),
    ("List the attractions in Rome and.", C.DANGLING_CONNECTIVE),
    ("Find hotels in the , then list their rooms.", C.DANGLING_CONNECTIVE),
    ("Find flights to Paris, , then show the first flight.", C.DANGLING_CONNECTIVE),
    ("Find flights from Paris to Rome in PREMIUM_ECONOMY class.", C.API_CODE),
    ("Find hotels in Paris for 1 adults.", C.NUMBER_AGREEMENT),
    ("Book one rooms in Paris.", C.NUMBER_AGREEMENT),
    ("Find hotels in Paris for 2 adult.", C.NUMBER_AGREEMENT),
    ("Find hotels in Paris for three night and show the first hotel.", C.NUMBER_AGREEMENT),
    ("Book a taxi from Orly on May 9, 2026 at 23:10 pm.", C.AM_PM_24_HOUR),
    ("Pick the car up at 00:30 am.", C.AM_PM_24_HOUR),
    ("Leave at 13 PM.", C.AM_PM_24_HOUR),
    ("Search flights from Paris and from Rome, then show me the first result.", C.VAGUE_REFERENCE),
])
def test_each_glitch_kind_gets_its_code(text: str, code: TextProblemCode) -> None:
    found = query_text_problems(text)
    assert code.value in [problem.code.value for problem in found], found
    problem = next(problem for problem in found if problem.code is code)
    assert problem.reason == f"text.{code.value}"
    assert text[problem.start:problem.end] == problem.text and problem.text.strip()


@pytest.mark.parametrize("text, spelling", [
    ("Find hotels in Paris sorted by review_score.", "review_score"),  # issue 26
    ("Find the flights that offer ECONOMY seats.", "ECONOMY"),
    ("Search airports (subType AIRPORT, keyword MUC).", "subType"),
    ("Search cities with cabinClass business.", "cabinClass"),
])
def test_the_tools_spellings_in_prose_are_api_codes(text: str, spelling: str) -> None:
    found = [problem for problem in query_text_problems(text, TOOLS) if problem.code is C.API_CODE]
    assert spelling in [problem.text for problem in found]
    assert codes(text) == []  # only the tools say these are the API's spellings


def test_a_pasted_api_summary_is_an_api_code() -> None:
    text = "Returns a list of airports and cities matching a given keyword (keyword MAD)."
    found = [problem for problem in query_text_problems(text, TOOLS) if problem.code is C.API_CODE]
    assert [problem.message for problem in found] == ["the description of getAirportCitySearch pasted in"]
    # a user repeating an imperative description is how people ask: not flagged
    calc = Tool(name="area", description="Calculate the area of a triangle given its base and height.",
                parameters={"type": "object", "properties": {}})
    assert codes("Calculate the area of a triangle given its base and height, with base 3 and height 4.", [calc]) == []


def test_which_tool_spellings_count() -> None:
    spellings = api_spellings(TOOLS)
    assert {"fromId", "cabinClass", "currency_code", "sort_by", "subType", "PREMIUM_ECONOMY", "ECONOMY", "BUSINESS",
            "review_score", "AIRPORT", "CITY"} <= set(spellings)
    # plain words and three-letter codes are how people write: "sorted by price", "in USD"
    assert not {"price", "popularity", "USD", "EUR", "adults", "keyword"} & set(spellings)
    assert spellings["review_score"] == "an enum value of Search_Hotels.sort_by"


# ------------------------------------------------------------------------------------- good text
@pytest.mark.parametrize("text", [
    "Find flights from Paris to London on June 12, 2025 and then show me the details of the second flight.",
    "Check the fare and then, only then, book it.",
    "Then and only then should you book the flight.",
    "I want to fly to Bora Bora, it is very very important.",
    "Find hotels near Kensington for 2 adult tickets... no, for 2 adults.",
    "A 1.5 hours tour, for 1 adult, picked up at 10:30 a.m. and back by 11:10 pm.",
    "Pick me up at 12:30 am, or at 6 PM at the latest.",
    "Find hotels in Washington D.C., and list the first hotel's rooms with prices in USD.",
    "Find the cheapest hotel sorted by price, then list its rooms for 3 nights.",
    "Plan A. The equation of line a is y = 2x; is the point on line a?",
    "Set the mode to 'AIR_CLEAN' please.",  # a code the user quotes on purpose
    "Remove the second item from my todo list, then use that result to add two more.",
])
def test_good_text_is_not_flagged(text: str) -> None:
    assert query_text_problems(text, TOOLS) == []


def test_problems_come_in_text_order_and_describe_themselves() -> None:
    found = query_text_problems("Find the the hotels for 1 adults at 23:10 pm.")
    assert [problem.code for problem in found] == [C.DOUBLED_WORD, C.NUMBER_AGREEMENT, C.AM_PM_24_HOUR]
    assert found[0] == Problem(C.DOUBLED_WORD, 5, 12, "the the", "a word written twice")
    assert found[1].describe() == "number_agreement: '1 adults' (one takes 'adult')"


def test_a_huge_query_is_linted_in_one_pass() -> None:
    """Issue 23: a 10 MB annotated query must not stall a stage; every rule is one linear scan."""
    text = "Find hotels in Paris for 2 adults, then list the rooms of the second hotel. " * 140_000
    assert len(text) > 10_000_000
    assert query_text_problems(text, TOOLS) == []


# ------------------------------------------------------------------------- the published queries
def _published() -> dict[str, list[tuple[str, str, Sample]]]:
    """corpus -> (key, user text, sample) for every user turn of the published files."""
    corpora: dict[str, list[Sample]] = {"callnavi": [], "nestful": [], "bfcl": []}
    for questions in sorted((EXTERNAL / "callnavi" / "Questions").glob("*.json")):
        options = FormatOptions(tools=EXTERNAL / "callnavi" / "APISchema" / questions.name)
        corpora["callnavi"] += [s for s in read_samples(questions, "callnavi", options) if isinstance(s, Sample)]
    nestful = EXTERNAL / "nestful"
    corpora["nestful"] += [s for s in read_samples(nestful / "v1" / "executable-data.json", "nestful",
                                                   FormatOptions(tools=nestful / "v1" / "executable-spec.json"))
                           if isinstance(s, Sample)]
    for name in ("toy_data.jsonl", "icl_examples.json"):
        corpora["nestful"] += [s for s in read_samples(nestful / name, "nestful") if isinstance(s, Sample)]
    for questions in sorted((EXTERNAL / "bfcl").glob("BFCL_v4_*.json")):
        answers = EXTERNAL / "bfcl" / f"possible_answer_{questions.name}"
        options = FormatOptions(answers=answers) if answers.is_file() else FormatOptions(no_gold=True)
        corpora["bfcl"] += [s for s in read_samples(questions, "bfcl", options) if isinstance(s, Sample)]
    out: dict[str, list[tuple[str, str, Sample]]] = {}
    for corpus, samples in corpora.items():
        rows = out.setdefault(corpus, [])
        for sample in samples:
            messages = list(sample.messages) + [m for turn in sample.turns or [] for m in turn.messages]
            texts = [m["content"] for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
            rows += [(f"{corpus}:{sample.id}:{index}", text, sample) for index, text in enumerate(texts)]
    return out


@pytest.fixture(scope="module")
def published():
    return _published()


def test_on_the_published_queries_the_lint_flags_exactly_the_labelled_texts(published) -> None:
    """Every text it flags was read and labelled (tests/data/query_text_published_flags.json): a
    rule that starts flagging other published text fails here until someone reads what it found."""
    labels = json.loads((TEST_DATA / "query_text_published_flags.json").read_text())["flags"]
    assert {corpus: len(rows) for corpus, rows in published.items()} == {"callnavi": 729, "nestful": 92, "bfcl": 3325}
    found = {}
    for rows in published.values():
        for key, text, sample in rows:
            generic = sorted({p.code.value for p in query_text_problems(text)})
            with_tools = sorted({p.code.value for p in query_text_problems(text, sample.tools)})
            if generic or with_tools:
                found[key] = {"generic": generic, "with_tools": with_tools}
    assert found == {key: {"generic": label["generic"], "with_tools": label["with_tools"]} for key, label in labels.items()}


def test_false_positive_rate_on_the_published_queries(published) -> None:
    """A false positive is a flagged text a person would accept as written (labelled "fine").
    Without tools: 1 of 4,146 texts (0.02 %); with the samples' tools: 10 (0.24 %), all but one a
    developer naming an argument (user_id, song_id) in a BFCL question."""
    labels = json.loads((TEST_DATA / "query_text_published_flags.json").read_text())["flags"]
    total = sum(len(rows) for rows in published.values())
    fine_generic = sum(1 for label in labels.values() if label["label"] == "fine" and label["generic"])
    fine_tools = sum(1 for label in labels.values() if label["label"] == "fine" and label["with_tools"])
    glitches = sum(1 for label in labels.values() if label["label"] == "glitch")
    assert total == 4146 and (fine_generic, fine_tools, glitches) == (1, 10, 5)
    assert fine_generic / total < 0.001 and fine_tools / total < 0.005


def test_the_published_glitches_are_real(published) -> None:
    by_key = {key: text for rows in published.values() for key, text, _ in rows}
    assert "the the current weather" in by_key["bfcl:live_multiple_801-175-7:0"]
    assert "freezing point point" in by_key["bfcl:irrelevance_25:0"]


def test_the_published_nestful_math_queries_pass_the_lint() -> None:
    """The executable NESTful math samples bundled as nestful-math's candidates (published text,
    tokenised as MathQA writes it): "the average age of a , b , c and d" is a list of variables,
    not a dangling article, and "the average of 13 result ... Find the 8th result" names a list the
    query states itself. The filter keeps all 84 (tests/fcbench/pipeline/test_run_pipeline.py)."""
    samples = [sample for sample in read_samples(REPO / "datasets" / "nestful-math" / "seeds.jsonl", "fcbench")
               if isinstance(sample, Sample)]
    assert len(samples) == 84
    flagged = {sample.id: query_text_problems(sample.messages[0]["content"]) for sample in samples}
    assert {key: problems for key, problems in flagged.items() if problems} == {}
    assert query_text_problems("Book a hotel for a , then")  # a bare article before a comma still is one
