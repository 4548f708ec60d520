"""The filter's toy candidates: one line per kind of failure, with the verdict each must get, and
a pipeline that filters them. Shared by the filter, output-guard, memory and Ray tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

from conftest import TEST_DATA
from fcbench.jsonl import dumps_line
from fcbench.sample import Call, Sample, Tool, sample_to_dict

TOOLS_MODULE = TEST_DATA / "filter_tools.py"
INT = {"type": "integer"}
TOOLS = [
    Tool(name="add", description="Add two integers.",
         parameters={"type": "object", "properties": {"a": INT, "b": INT}, "required": ["a", "b"]},
         returns={"type": "object", "properties": {"result": INT}}),
    Tool(name="lookup", description="Find places by city name.",
         parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    Tool(name="boom", description="Always fails.",
         parameters={"type": "object", "properties": {"a": INT}, "required": ["a"]}),
    Tool(name="ticket", description="Hands out the next ticket number.", parameters={"type": "object", "properties": {}}),
    Tool(name="slow_add", description="Add two integers, slowly.",
         parameters={"type": "object", "properties": {"a": INT, "b": INT}, "required": ["a", "b"]},
         returns={"type": "object", "properties": {"result": INT}}),
]


def candidate_line(sample_id: str, query: str, calls: list[list[Call]], **fields) -> dict:
    return sample_to_dict(Sample(id=sample_id, messages=[{"role": "user", "content": query}], tools=TOOLS,
                                 calls=calls, **fields))


def one_of_each_failure() -> list[str]:
    """Candidate lines, in order: their expected reason is in EXPECTED."""
    add = lambda label, a, b: Call(label=label, name="add", arguments={"a": a, "b": b})  # noqa: E731
    lines = [
        candidate_line("passes", "Add 2 and 3.", [[add("c1", 2, 3)]], answer=5),
        candidate_line("nested_passes", "Add 2 and 3, then add 4 to the sum.",
                [[add("c1", 2, 3)], [Call(label="c2", name="add", arguments={"a": "$c1.result$", "b": 4})]], answer=9),
        candidate_line("unknown_tool", "Multiply 2 by 3.", [[Call(label="c1", name="multiply", arguments={"a": 2, "b": 3})]]),
        candidate_line("missing_required", "Add 2 to something.", [[Call(label="c1", name="add", arguments={"a": 2})]]),
        candidate_line("wrong_type", "Add two and 3.", [[add("c1", "two", 3)]]),
        candidate_line("unknown_parameter", "Add 2 and 3 quickly.",
                [[Call(label="c1", name="add", arguments={"a": 2, "b": 3, "fast": True})]]),
        candidate_line("bad_reference", "Add 2 and 3, then 4.",
                [[add("c1", 2, 3)], [Call(label="c2", name="add", arguments={"a": "$c9.result$", "b": 4})]]),
        candidate_line("ungrounded", "Add 2 and 3.", [[add("c1", 7, 8)]], answer=15),
        candidate_line("tool_raises", "Run the failing tool on 1.", [[Call(label="c1", name="boom", arguments={"a": 1})]]),
        candidate_line("wrong_answer", "Add 2 and 3.", [[add("c1", 2, 3)]], answer=6),
        candidate_line("wrong_response", "Add 2 and 3.", [[Call(label="c1", name="add", arguments={"a": 2, "b": 3},
                                                        response={"result": 23})]]),
        candidate_line("nondeterministic", "Give me a ticket.", [[Call(label="c1", name="ticket")]]),
        candidate_line("broken_text", "Add 2 and 3, then and add 4 to the sum.",
                [[add("c1", 2, 3)], [Call(label="c2", name="add", arguments={"a": "$c1.result$", "b": 4})]], answer=9),
    ]
    return [dumps_line(line) for line in lines] + ['{"id": "broken", "messages": [}']


EXPECTED = {
    "passes": ("passed", None),
    "nested_passes": ("passed", None),
    "unknown_tool": ("failed_format", "format.unknown_tool"),
    "missing_required": ("failed_format", "format.missing_required"),
    "wrong_type": ("failed_format", "format.wrong_type"),
    "unknown_parameter": ("failed_format", "format.unknown_parameters"),
    "bad_reference": ("failed_format", "format.bad_reference"),
    "ungrounded": ("failed_grounding", "grounding.ungrounded_value"),
    "tool_raises": ("failed_execution", "execution.tool_error"),
    "wrong_answer": ("failed_reproduction", "reproduction.answer_mismatch"),
    "wrong_response": ("failed_reproduction", "reproduction.response_mismatch"),
    "nondeterministic": ("failed_reproduction", "reproduction.nondeterministic"),
    "broken_text": ("failed_text", "text.joined_clauses"),
}


def write_pipeline(tmp_path: Path, candidates: list[str], *, grounding: str = "reject", min_nested_calls: int = 0) -> Path:
    dataset = tmp_path / "toy"
    dataset.mkdir()
    (dataset / "candidates.jsonl").write_text("\n".join(candidates) + "\n")
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(textwrap.dedent(f"""\
        pipelines:
          toy:
            dataset_dir: toy
            seed: 3
            environment: {{kind: python, module: {TOOLS_MODULE}, timeout_s: 5, workers: 2}}
            stages:
              filter:
                input: toy/candidates.jsonl
                grounding: {grounding}
                repeat: 2
                min_nested_calls: {min_nested_calls}
        """))
    return pipelines
