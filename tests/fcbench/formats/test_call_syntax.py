"""Python-call strings: parsed with literals only (never evaluated), spelled back exactly."""

from __future__ import annotations

import json

import pytest

from fcbench.formats.call_syntax import (
    CallSyntaxError,
    ParsedCall,
    format_call,
    format_value,
    parse_call,
    separator_reproducing,
)
from conftest import EXTERNAL


def _json_lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_keyword_positional_and_dotted_names():
    assert parse_call("cd(folder='document')") == ParsedCall("cd", [], {"folder": "document"})
    assert parse_call("sort('final_report.pdf')") == ParsedCall("sort", ["final_report.pdf"], {})
    parsed = parse_call("post_tweet('Tires checked!', tags=['#RoadTrip'], mentions=['@AutoUpdates'])")
    assert parsed.positional == ["Tires checked!"]
    assert parsed.keywords == {"tags": ["#RoadTrip"], "mentions": ["@AutoUpdates"]}
    dotted = parse_call("Telecom.ViewAccount(to=['csmith@gmail.com'],last_name=['Smith'])")
    assert dotted.name == "Telecom.ViewAccount"
    assert list(dotted.keywords) == ["to", "last_name"]


def test_literal_values_become_json_values():
    parsed = parse_call("f(a=-1, b=2.5, c=True, d=None, e={'k': [1, (2, 3)]}, g=())")
    assert parsed.keywords == {"a": -1, "b": 2.5, "c": True, "d": None, "e": {"k": [1, [2, 3]]}, "g": []}
    assert parse_call("fillFuelTank(15.0)").positional == [15.0]
    assert isinstance(parse_call("fillFuelTank(15.0)").positional[0], float)


def test_reserved_word_as_keyword_name_is_accepted():
    # CONFETTI writes `class=` (a Python keyword) in book_flight calls.
    parsed = parse_call("BookFlight.book_flight(itinerary_number=['UX441'],class=['economy'])")
    assert parsed.keywords == {"itinerary_number": ["UX441"], "class": ["economy"]}
    assert format_call(parsed, ",") == "BookFlight.book_flight(itinerary_number=['UX441'],class=['economy'])"
    # The word inside a string literal is data and stays untouched.
    assert parse_call("f(x='a, class=b')").keywords == {"x": "a, class=b"}


@pytest.mark.parametrize(
    "text",
    [
        "f(x=y)",  # a name, not a literal
        "f(x=__import__('os').system('ls'))",
        "f(x=1 + open('p').read())",
        "f()()",  # calling a call result
        "f[0](x=1)",
        "f(*args)",
        "f(**kwargs)",
        "x + 1",
        "f(x={1, 2})",  # a set has no JSON form
        "f(x=b'raw')",
        "f(x=1j)",
        "f(x={1: 'a'})",  # non-string dict keys
        "f(x=float('nan'))",
        "f(x=",
        "",
    ],
)
def test_anything_but_a_literal_call_is_refused(text):
    with pytest.raises(CallSyntaxError):
        parse_call(text)


def test_format_value_spells_python_literals():
    assert format_value({"status": "Urgent", "priority": 5}) == "{'status': 'Urgent', 'priority': 5}"
    assert format_value([True, None, 1.5, "it's"]) == "[True, None, 1.5, \"it's\"]"


def test_separator_that_reproduces_each_spelling():
    spaced, tight = "a(x='1', y=2)", "a(x='1',y=2)"
    assert separator_reproducing(spaced, parse_call(spaced)) == ", "
    assert separator_reproducing(tight, parse_call(tight)) == ","
    odd = "mean(numbers=[3,16,60])"  # list without spaces: no separator of ours gives it back
    assert separator_reproducing(odd, parse_call(odd)) is None


def test_every_published_call_string_parses():
    multi_turn = _json_lines(EXTERNAL / "bfcl" / "possible_answer_BFCL_v4_multi_turn_base.json")
    texts = [text for record in multi_turn for turn in record["ground_truth"] for text in turn]
    assert len(texts) == 1142
    parsed = [parse_call(text) for text in texts]
    reproduced = sum(1 for text, call in zip(texts, parsed) if separator_reproducing(text, call) is not None)
    assert reproduced == 1119  # the other 23 are kept verbatim by the BFCL adapter
    assert sum(1 for call in parsed if call.positional) == 40

    dialog_acts = _json_lines(EXTERNAL / "confetti" / "possible_answer_BFCL_v2_dialogacts.json")
    calls = [parse_call(text) for record in dialog_acts for text in record["ground_truth_content"][:-1]]
    assert len(calls) == 506
    assert all(isinstance(value, list) for call in calls for value in call.keywords.values())
