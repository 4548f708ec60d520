"""CallNavi adapter and catalog, checked on the published files as they are."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from fcbench.catalog.callnavi import (
    parameter_names_from_api_ports,
    tools_from_api_ports,
    tools_from_api_schema,
    tools_to_api_ports,
    tools_to_api_schema,
)
from fcbench.formats import FormatError, FormatOptions, Rejected, read_samples, write_samples
from fcbench.sample import AcceptableValues, Call, Sample, Tool, sample_to_dict
from fcbench.checks.validate import validate_record
from conftest import EXTERNAL, read_all, through_canonical

CALLNAVI = EXTERNAL / "callnavi"
DOMAINS = sorted(path.stem for path in (CALLNAVI / "Questions").glob("*.json"))


def _questions(domain: str) -> Path:
    return CALLNAVI / "Questions" / f"{domain}.json"


def _load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _by_id(samples: list[Sample]) -> dict[str, Sample]:
    return {sample.id: sample for sample in samples}


@pytest.fixture(scope="module")
def all_samples() -> list[Sample]:
    return [sample for domain in DOMAINS for sample in read_all(_questions(domain), "callnavi")]


def test_ten_domains_are_published():
    assert len(DOMAINS) == 10


# ------------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("domain", DOMAINS)
def test_questions_file_goes_through_canonical_and_back_equal(domain, tmp_path):
    original = _questions(domain)
    samples = through_canonical(read_all(original, "callnavi"), tmp_path)
    written = tmp_path / f"{domain}.json"
    warnings = write_samples(samples, written, "callnavi")
    assert warnings == []
    assert _load(written) == _load(original)


@pytest.mark.parametrize("domain", DOMAINS)
def test_api_schema_form_converts_to_tools_and_back_equal(domain):
    specs = _load(CALLNAVI / "APISchema" / f"{domain}.json")
    names = parameter_names_from_api_ports(_load(CALLNAVI / "APIs" / f"{domain}.json"))
    assert tools_to_api_schema(tools_from_api_schema(specs)) == specs
    assert tools_to_api_schema(tools_from_api_schema(specs, names)) == specs


@pytest.mark.parametrize("domain", DOMAINS)
def test_api_ports_form_converts_to_tools_and_back_equal(domain, tmp_path):
    document = _load(CALLNAVI / "APIs" / f"{domain}.json")
    tools = tools_from_api_ports(document)
    # through JSON as a canonical file would store them
    stored = [Tool.model_validate(json.loads(tool.model_dump_json(exclude_unset=True))) for tool in tools]
    assert tools_to_api_ports(stored) == document


def test_tools_out_writes_the_domain_api_schema_back(tmp_path):
    samples = read_all(_questions("aviation"), "callnavi")
    tools_out = tmp_path / "APISchema.json"
    write_samples(samples, tmp_path / "q.json", "callnavi", FormatOptions(tools_out=tools_out))
    # inferred tools (names the catalog lacks) are not written into the catalog
    assert _load(tools_out) == _load(CALLNAVI / "APISchema" / "aviation.json")


# ------------------------------------------------------------------------------------ contents
def test_counts_by_published_difficulty(all_samples):
    assert len(all_samples) == 729
    labels = Counter(sample.meta["callnavi"]["difficulty"] for sample in all_samples)
    assert labels == {"easy": 456, "medium": 187, "hard": 86}


def test_ban01_is_one_getaccountid_call():
    sample = _by_id(read_all(_questions("bank"), "callnavi"))["ban01"]
    assert sample.domain == "bank"
    assert sample.messages == [
        {"role": "user", "content": "Can you retrieve the account ID for account number 123456?"}
    ]
    assert len(sample.calls) == 1 and len(sample.calls[0]) == 1
    call = sample.calls[0][0]
    assert (call.label, call.name, call.arguments) == ("call_1", "getAccountID", {"accountNumber": "123456"})
    assert "response" not in sample_to_dict(sample)["calls"][0][0]
    assert len(sample.tools) == 96  # every API of the bank domain
    assert sample_to_dict(sample)["difficulty"] == "single"


def test_hard_item_keeps_the_wildcard_literally():
    sample = _by_id(read_all(_questions("telecommunications"), "callnavi"))["tel051"]
    assert sample.meta["callnavi"]["difficulty"] == "hard"
    assert [[call.name for call in step] for step in sample.calls] == [
        ["getDataUsage"], ["getAvailablePlans"], ["updateDataPlan"]
    ]
    assert [call.label for step in sample.calls for call in step] == ["call_1", "call_2", "call_3"]
    assert sample.calls[0][0].arguments == {"phoneNumber": "6668415999", "startDate": "$$$", "endDate": "$$$"}
    assert sample.calls[1][0].arguments == {}
    assert sample.calls[2][0].arguments == {"phoneNumber": "6668415999", "dataPlanId": "$$$"}
    # "$$$" is not a reference: CallNavi does not say which call it comes from
    assert sample_to_dict(sample)["difficulty"] == "multiple"


def test_parameters_shorter_than_api_list_is_kept(all_samples, tmp_path):
    short = [s for s in all_samples if s.meta["callnavi"].get("parameters_length") is not None]
    assert sorted(s.id for s in short) == ["sho005", "sho029", "sho030", "sho031", "sho036", "sho038"]
    sho005 = _by_id(short)["sho005"]
    assert sho005.calls[0][0].name == "getCartItems" and sho005.calls[0][0].arguments == {}
    write_samples([sho005], tmp_path / "q.json", "callnavi")
    assert _load(tmp_path / "q.json")[0]["ground_truth"] == {"API": ["getCartItems"], "parameters": []}


def test_every_sample_validates(all_samples):
    problems = {s.id: validate_record(sample_to_dict(s)) for s in all_samples}
    assert {sample_id: found for sample_id, found in problems.items() if found} == {}


def test_apis_missing_from_the_catalog_become_inferred_tools(all_samples):
    inferred = {
        (s.id, tool.name): tool for s in all_samples for tool in s.tools if tool.meta.get("inferred")
    }
    assert sorted(inferred) == [
        ("avi059", "getpassengerName"), ("avi059", "updatepassengerName"), ("avi066", "getpassengerName"),
        ("avi07", "getpassengerName"), ("avi08", "updatepassengerName"), ("hr035", "updateEmploymentContract"),
    ]
    tool = inferred[("avi07", "getpassengerName")]
    call = _by_id(all_samples)["avi07"].all_calls()[0]
    assert set(tool.parameters["properties"]) == set(call.arguments)


# ------------------------------------------------------------------------------------ tools
def test_telecom_parameter_names_come_from_api_ports_beside_the_schema():
    sample = read_all(_questions("telecommunications"), "callnavi")[0]
    tools = {tool.name: tool for tool in sample.tools}
    assert tools["getBillForNumber"].parameters == {
        "type": "object",
        "properties": {"phoneNumber": {"type": "string"}, "billingPeriod": {"type": "string"}},
        "required": ["phoneNumber", "billingPeriod"],
    }


def test_api_schema_without_names_allows_any_parameter_of_the_item_type():
    specs = _load(CALLNAVI / "APISchema" / "telecommunications.json")
    tool = tools_from_api_schema(specs)[0]
    assert tool.parameters == {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}


def test_api_schema_values():
    tools = {t.name: t for t in tools_from_api_schema(_load(CALLNAVI / "APISchema" / "hotel.json"))}
    assert tools["getRoomTypes"].parameters == {"type": "object", "properties": {}}
    assert tools["getRoomTypes"].meta == {"callnavi": {"schema_uri": "http://json-schema.org/schema#"}}
    assert tools["getRoomTypes"].returns == {"type": "object", "properties": {"RoomTypes": {"type": "string"}}}
    assert "$schema" not in tools["bookRoom"].parameters


def test_api_ports_values():
    aviation = {t.name: t for t in tools_from_api_ports(_load(CALLNAVI / "APIs" / "aviation.json"))}
    payment = aviation["bookFlight"].parameters["properties"]["paymentInfo"]
    assert payment == {
        "type": "string", "enum": ["VISA", "MASTER", "AMEX", "JCB"], "x-source-type": "VISA/MASTER/AMEX/JCB"
    }
    assert aviation["bookFlight"].returns == {
        "type": "object", "properties": {"BookingConfirmation": {}, "bookingId": {}}
    }
    hr = {t.name: t for t in tools_from_api_ports(_load(CALLNAVI / "APIs" / "hr.json"))}
    contract = hr["createEmploymentContract"].parameters["properties"]["contractDetails"]
    assert contract["properties"]["salary"] == {"type": "integer", "examples": [60000], "x-source-value": 60000}
    assert contract["required"] == ["startDate", "endDate", "salary", "jobTitle"]


def test_falls_back_to_api_ports_then_fails_without_tools(tmp_path):
    (tmp_path / "Questions").mkdir()
    (tmp_path / "APIs").mkdir()
    questions = tmp_path / "Questions" / "gov.json"
    shutil.copy(_questions("gov"), questions)
    with pytest.raises(FormatError, match="no CallNavi tools found"):
        list(read_samples(questions, "callnavi"))
    shutil.copy(CALLNAVI / "APIs" / "gov.json", tmp_path / "APIs" / "gov.json")
    samples = read_all(questions, "callnavi")
    assert len(samples) == 85
    passport = {t.name: t for t in samples[0].tools}["applyForPassport"]
    assert passport.parameters["properties"]["applicationType"]["enum"] == ["new", "replacement"]


def test_tools_option_names_the_catalog(tmp_path):
    questions = tmp_path / "hr_questions.json"
    shutil.copy(_questions("hr"), questions)
    samples = read_all(questions, "callnavi", FormatOptions(tools=CALLNAVI / "APISchema" / "hr.json"))
    assert len(samples) == 35 and samples[0].domain == "hr_questions"
    assert len([t for t in samples[0].tools if not t.meta.get("inferred")]) == 21


def test_bad_item_is_rejected_and_the_file_goes_on(tmp_path):
    items = _load(_questions("hr"))[:2]
    items[0]["ground_truth"]["API"] = "getEmployee"  # not a list
    questions = tmp_path / "hr.json"
    questions.write_text(json.dumps(items), encoding="utf-8")
    results = list(read_samples(questions, "callnavi", FormatOptions(tools=CALLNAVI / "APIs" / "hr.json")))
    assert isinstance(results[0], Rejected) and results[0].source == f"{questions}#0"
    assert "ground_truth.API" in results[0].reason
    assert isinstance(results[1], Sample) and results[1].id == items[1]["id"]


def test_a_file_that_is_not_a_question_list_is_a_format_error(tmp_path):
    not_questions = tmp_path / "x.json"
    not_questions.write_text('{"api_ports": []}', encoding="utf-8")
    with pytest.raises(FormatError, match="not a CallNavi Questions file"):
        list(read_samples(not_questions, "callnavi", FormatOptions(tools=CALLNAVI / "APIs" / "hr.json")))


# ------------------------------------------------------------------------------------ writer losses
def _foreign_sample() -> Sample:
    """A nested, parallel sample with responses, as another format would give it."""
    return Sample(
        id="x1",
        messages=[{"role": "user", "content": "Find the flight and book it"}],
        tools=[Tool(name="search"), Tool(name="book")],
        calls=[
            [
                Call(label="a", name="search", arguments={"q": "NYC"}, response={"id": 7}),
                Call(label="b", name="search", arguments={"q": "LA"}, response=None),
            ],
            [Call(label="c", name="book", arguments={"id": "$a.id$", "more": ["$b$", "keep"]})],
        ],
        acceptable={"a": {"q": AcceptableValues(values=["New York"])}},
    )


def test_writer_warns_about_each_kind_of_loss_with_a_count(tmp_path):
    written = tmp_path / "q.json"
    warnings = write_samples([_foreign_sample(), _foreign_sample()], written, "callnavi")
    assert warnings == [
        "CallNavi cannot store call responses: 4 responses dropped",
        "CallNavi cannot store acceptable alternative values: 2 samples lost them",
        'CallNavi cannot store references to earlier outputs: 4 references written as "$$$"',
        "CallNavi cannot mark parallel calls: 2 samples with parallel steps written in sequence",
    ]
    item = _load(written)[0]
    assert item == {
        "id": "x1",
        "question": [{"role": "user", "content": "Find the flight and book it"}],
        "ground_truth": {
            "API": ["search", "search", "book"],
            "parameters": [{"q": "NYC"}, {"q": "LA"}, {"id": "$$$", "more": ["$$$", "keep"]}],
        },
        "difficulty": "hard",  # no published label: derived from the nested path
    }
