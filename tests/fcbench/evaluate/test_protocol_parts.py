"""The pure parts of the protocols: prompts as the published code builds them, the ReAct step
reader, CallNavi's tool listing, the GPT-score reader, and the prompt files' sources."""

from __future__ import annotations

import json

import pytest
from conftest import EXTERNAL

from fcbench.catalog.callnavi import tools_from_api_ports
from fcbench.evaluate.judges_callnavi import read_bracketed_score
from fcbench.evaluate.protocols import PROTOCOLS, default_protocol
from fcbench.evaluate.protocols.callnavi import function_listing
from fcbench.evaluate.protocols.nestful import (ICL_EXAMPLES, PROMPTS, decoded_answer, icl_examples_text,
                                                react_arguments, react_step)
from fcbench.llm.client import ParseError


def test_the_icl_examples_are_nestfuls_file_byte_for_byte():
    assert ICL_EXAMPLES.read_bytes() == (EXTERNAL / "nestful" / "icl_examples.json").read_bytes()


def test_icl_examples_are_written_as_get_icl_str_writes_them():
    examples = json.loads(ICL_EXAMPLES.read_text())
    text = icl_examples_text(examples[:2])
    first = f"\n#Example-1\nInput: {examples[0]['input']}\nOutput: {json.dumps(examples[0]['output'])}\n"
    assert text.startswith(first) and text.count("#Example-") == 2
    assert '"label": "$var_1"' in text  # the gold call lists with their labels and references


def test_every_prompt_file_has_its_source_written_down():
    readme = (PROMPTS / "README.md").read_text()
    for path in PROMPTS.iterdir():
        if path.suffix in (".txt", ".json") and path.name.startswith(("nestful_", "callnavi_")):
            assert f"`{path.name}`" in readme, path.name


@pytest.mark.parametrize(("text", "step"), [
    ("Thought: first the rate.\nAction: divide\nAction Input: {\"arg_0\": 20, \"arg_1\": 100}",
     {"action": "divide", "input": '{"arg_0": 20, "arg_1": 100}'}),
    ("Action: `add`\n\nAction Input: {\"arg_0\": 1}\nObservation: {\"result\": 99}",  # an invented observation cut
     {"action": "add", "input": '{"arg_0": 1}'}),
    ("Thought: done\nFinal Answer: 40.0", {"final": "40.0"}),
    ("The answer is probably 40.", {"error": "neither an Action with an Action Input nor a Final Answer"}),
])
def test_react_steps(text, step):
    assert react_step(text) == step


def test_react_arguments_and_answers():
    assert react_arguments('```json\n{"arg_0": 1}\n```') == {"arg_0": 1}
    assert react_arguments('here: {"arg_0": 1} ok') == {"arg_0": 1}
    assert react_arguments("[1, 2]") is None and react_arguments("arg_0=1") is None
    assert decoded_answer("40.0") == 40.0 and decoded_answer("about 40") == "about 40" and decoded_answer(None) is None


def test_callnavi_tools_are_listed_as_predict_py_lists_them():
    ports = json.loads((EXTERNAL / "callnavi" / "APIs" / "bank.json").read_text())
    listing = function_listing(tools_from_api_ports({"api_ports": ports["api_ports"][:1]}))
    assert listing == ('Function:\ndef getAccountID({\'customerID\': \'string\'})\n   """\n   Retrieves the unique '
                       'account ID associated with a given customer ID.\n\n   Args:\n   customerID (str)\n\n   '
                       'Returns:\n   AccountID: string\n   """\n\n')
    # several arguments: names concatenated without a separator, as the script does
    many = next(p for p in ports["api_ports"] if len(p["parameters"]) >= 2)
    text = function_listing(tools_from_api_ports({"api_ports": [many]}))
    assert "".join(f"{name} (str)" for name in many["parameters"]) in text


def test_the_gpt_score_is_read_as_judge_para_reads_it():
    assert read_bracketed_score("[[0.85]]") == {"score": 0.85}
    assert read_bracketed_score(" [[1.00]]\n") == {"score": 1.0}
    for bad in ("[[high]]", "[[1.5]]", "The score is [[0.5]] overall"):
        with pytest.raises(ParseError):
            read_bracketed_score(bad)


def test_the_registry_and_defaults():
    assert PROTOCOLS.names() == ["complexfuncbench", "nestful-icl", "nestful-react", "callnavi", "confetti"]

    class Kind:
        def __init__(self, kind: str) -> None:
            self.kind = kind

    assert default_protocol(Kind("single")) == "complexfuncbench"  # type: ignore[arg-type]
    assert default_protocol(Kind("conversation")) == "confetti"  # type: ignore[arg-type]
