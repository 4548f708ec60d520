"""The label configs in label_config/: valid for the SDK, and exactly what the converters read."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import pytest

from fcbench.errors import ConfigError
from annotate.studio.label_configs import (JUNIOR, QA_REVIEW, SENIOR, SPECS, contract_problems, load_config,
                              sdk_problems, validate_config)
from annotate.tasks.error_types import DraftError


@pytest.mark.parametrize("spec", list(SPECS.values()), ids=list(SPECS))
def test_every_shipped_config_passes_the_sdk_and_the_contract(spec) -> None:
    xml = load_config(spec)
    assert sdk_problems(xml) == []
    assert contract_problems(xml, spec) == []
    validate_config(xml, spec)  # raises on any problem


def test_flag_choices_are_the_draft_error_types_in_both_configs_that_have_them() -> None:
    expected = {error.value for error in DraftError}
    assert SENIOR.choice_values["error_flags"] == expected
    assert QA_REVIEW.choice_values["error_flags"] == expected
    assert len(expected) == 10


def test_senior_config_reads_the_task_fields_the_converter_fills() -> None:
    assert SENIOR.data_fields == {"feedback_html", "draft_html", "entry_options", "tool_options"}
    assert JUNIOR.controls == {"verdict": "Choices", "arguments_json": "TextArea", "notes": "TextArea"}


def test_a_misspelt_tag_that_the_sdk_accepts_is_caught() -> None:
    xml = load_config(SENIOR).replace('<Choices name="drop_tools"', '<Choises name="drop_tools"')
    assert sdk_problems(xml) == []  # the SDK lets it through, which is why the contract check exists
    problems = contract_problems(xml, SENIOR)
    assert "unknown tag <Choises>" in problems
    assert "control 'drop_tools' is <Choises>, expected <Choices>" in problems


def test_a_missing_control_and_a_changed_verdict_are_named() -> None:
    xml = load_config(SENIOR).replace('<Choice value="reject" hint="The draft cannot be made into a good sample"/>', "")
    xml = xml.replace('<TextArea name="notes" toName="draft" editable="true" transcription="true" maxSubmissions="1" rows="2"/>', "")
    problems = contract_problems(xml, SENIOR)
    assert "control 'notes' (TextArea) is missing" in problems
    assert "choices of 'verdict' are ['accept', 'fix'], expected ['accept', 'fix', 'reject']" in problems
    with pytest.raises(ConfigError, match="stage2_senior.xml: control 'notes'"):
        validate_config(xml, SENIOR)


def test_a_wrong_to_name_fails_the_sdk_check() -> None:
    xml = load_config(JUNIOR).replace('name="notes" toName="variant"', 'name="notes" toName="nowhere"')
    problems = sdk_problems(xml)
    assert len(problems) == 1 and 'toName="nowhere" not found' in problems[0]


def test_broken_xml_is_reported_not_raised() -> None:
    assert contract_problems("<View><Text name='t' value='$t'></View>", QA_REVIEW)[0].startswith("not well-formed XML")


@pytest.mark.parametrize("spec", list(SPECS.values()), ids=list(SPECS))
def test_no_shipped_style_holds_what_label_studio_escapes(spec) -> None:
    """Label Studio passes a <Style>'s text through its HTML sanitiser, which writes `>` as `&gt;`
    (and `<`, `&` likewise): a rule with a child combinator then silently never applies, as the
    sticky fold summary did until this was found in the browser."""
    styles = [element.text or "" for element in ElementTree.fromstring(load_config(spec)).iter("Style")]
    assert styles, "every shipped config styles its task view"
    assert not [char for text in styles for char in "<>&" if char in text]
