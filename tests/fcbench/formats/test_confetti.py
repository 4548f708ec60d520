"""CONFETTI adapter, checked on the published ground-truth files as they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fcbench.formats import FormatError, FormatOptions, Rejected, read_samples, write_samples
from fcbench.sample import AcceptableValues, Call, Sample, sample_to_dict
from fcbench.checks.validate import validate_record
from conftest import EXTERNAL, read_all, through_canonical

CONFETTI = EXTERNAL / "confetti"
FUNCTION_CALLING = CONFETTI / "possible_answer_BFCL_v2_conversationsclean.json"
DIALOG_ACTS = CONFETTI / "possible_answer_BFCL_v2_dialogacts.json"


def _json_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _by_id(path: Path) -> dict[str, Sample]:
    return {sample.id: sample for sample in read_all(path, "confetti")}


@pytest.mark.parametrize(("path", "count"), [(FUNCTION_CALLING, 506), (DIALOG_ACTS, 463)])
def test_published_files_round_trip_through_canonical(path, count, tmp_path):
    samples = read_all(path, "confetti")
    assert len(samples) == count
    for sample in samples:
        assert validate_record(sample_to_dict(sample)) == [], sample.id
        assert sample.messages == []
        assert all(tool.meta == {"inferred": True} for tool in sample.tools)

    back = through_canonical(samples, tmp_path)
    out = tmp_path / "out.json"
    assert write_samples(back, out, "confetti") == []
    assert _json_lines(out) == _json_lines(path)


def test_function_calling_turn_values():
    samples = _by_id(FUNCTION_CALLING)
    sample = samples["conversationsclean_4"]
    assert sample.meta == {"confetti": {"dialog_id": "0b28ca41-19f0-44fb-b2b0-f4097e5d6f35_4"}}
    [[call]] = sample.calls
    assert call.name == "BookFlight_search_flights"
    assert call.arguments == {"departure_airport": "SAN", "arrival_airport": "DEN", "departure_date": "2024-04-24"}
    assert sample.acceptable["call_1"]["departure_airport"] == AcceptableValues(values=["SAN"], may_omit=False)
    [tool] = sample.tools
    assert tool.name == "BookFlight_search_flights"
    assert tool.parameters["properties"]["departure_date"] == {"type": "string"}

    # Two acceptable star ratings: the first is the gold argument, both are acceptable.
    ratings = samples["conversationsclean_137"]
    assert ratings.acceptable["call_1"]["star_ratings"].values == [4, 5]
    assert ratings.calls[0][0].arguments["star_ratings"] == 4
    assert ratings.tools[0].parameters["properties"]["star_ratings"] == {"type": "integer"}
    assert all(len(s.all_calls()) == 1 for s in samples.values())


def test_dict_candidate_that_is_not_nested_is_kept_as_published():
    sample = _by_id(FUNCTION_CALLING)["conversationsclean_27"]
    assert sample.calls[0][0].arguments["items"] == {"quantity": 1, "product_id": "O73S9XPLQV"}
    assert sample.meta["confetti"]["candidates"] == {"call_1": {"items": [{"quantity": 1, "product_id": "O73S9XPLQV"}]}}


def test_dialog_act_turn_values():
    samples = _by_id(DIALOG_ACTS)
    first = samples["dialogacts_0"]
    assert first.dialog_acts == ["agent_function_calling", "agent_seek_information", "agent_inform_user"]
    [[call]] = first.calls
    assert call.name == "Telecom.SendVerificationToken"
    assert call.arguments == {"to": "csmith@gmail.com", "channel": "EMAIL", "last_name": "Smith"}
    assert first.meta["confetti"]["reply"].startswith("Thanks for providing your details.")
    assert first.tool_names() == {"Telecom.SendVerificationToken"}

    # Two calls of one agent turn: one unordered step, as BFCL's checker scores them.
    second = samples["dialogacts_1"]
    assert [[c.name for c in step] for step in second.calls] == [["Telecom.ViewAccount", "Telecom.CancelService"]]

    # `class=` is a Python keyword; the call still parses and is written back as published.
    booking = samples["dialogacts_317"]
    assert booking.calls[0][0].arguments["class"] == "Business"

    text_only = samples["dialogacts_11"]
    assert (text_only.calls, text_only.acceptable, text_only.dialog_acts) == ([], None, ["agent_seek_information"])
    assert sample_to_dict(text_only)["difficulty"] == "none"
    assert sum(1 for s in samples.values() if s.calls) == 313


def test_edited_dialog_act_call_is_spelled_from_the_canonical_fields(tmp_path):
    sample = _by_id(DIALOG_ACTS)["dialogacts_0"]
    sample.calls[0][0].arguments["channel"] = "SMS"
    sample.acceptable["call_1"]["channel"] = AcceptableValues(values=["SMS", "TEXT"], may_omit=False)
    out = tmp_path / "out.json"
    write_samples([sample], out, "confetti")
    content = _json_lines(out)[0]["ground_truth_content"]
    assert content[0] == "Telecom.SendVerificationToken(to=['csmith@gmail.com'],channel=['SMS', 'TEXT'],last_name=['Smith'])"
    assert content[1].startswith("Thanks for providing your details.")


def test_sample_from_elsewhere_reports_what_is_not_written(tmp_path):
    sample = Sample(id="x", messages=[{"role": "user", "content": "hi"}], tools=[],
                    calls=[[Call(label="a", name="f", arguments={"v": 1}, response=2)]])
    warnings = write_samples([sample], tmp_path / "out.json", "confetti")
    assert warnings == [
        "1 samples whose messages were not written (CONFETTI files hold ground truth only)",
        "1 call responses not written",
    ]
    assert _json_lines(tmp_path / "out.json") == [{"id": "x", "ground_truth": [{"f": {"v": [1]}}]}]


def test_other_files_are_format_errors(tmp_path):
    with pytest.raises(FormatError, match="not a CONFETTI ground-truth file"):
        list(read_samples(EXTERNAL / "bfcl" / "BFCL_v4_simple_python.json", "confetti"))
    empty = tmp_path / "empty.json"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(FormatError, match="no CONFETTI records"):
        list(read_samples(empty, "confetti"))


def test_bad_item_is_rejected_and_the_run_goes_on(tmp_path):
    lines = FUNCTION_CALLING.read_text(encoding="utf-8").splitlines()[:2]
    path = tmp_path / "part.json"
    bad = json.dumps({"id": "conversationsclean_x", "dialog_id": "d", "ground_truth": [{"f": {"a": "not a list"}}]})
    path.write_text("\n".join([lines[0], bad, lines[1]]) + "\n", encoding="utf-8")
    items = list(read_samples(path, "confetti", FormatOptions()))
    assert [type(item).__name__ for item in items] == ["Sample", "Rejected", "Sample"]
    rejected = items[1]
    assert isinstance(rejected, Rejected)
    assert rejected.source == f"{path}:2"
    assert "candidates must be a list" in rejected.reason
