"""Shared by the protocol tests (tests/fcbench/evaluate/test_protocols_*.py): small benchmarks with
known gold, the scripted models that answer them over real HTTP (the mock server's responder),
and the pipelines they run in. Every expected score is computed by hand in the tests themselves.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from typer.testing import CliRunner

from conftest import EXTERNAL, REPO
from fcbench.cli import app
from fcbench.formats import read_samples, write_samples
from fcbench.sample import Sample

runner = CliRunner()
MODEL = "scripted/m1"
SLUG = "scripted-m1"
NESTFUL_TOOLS = REPO / "datasets" / "nestful-math" / "tools.py"
NESTFUL_SEEDS = REPO / "datasets" / "nestful-math" / "seeds.jsonl"
CALLNAVI_BANK = EXTERNAL / "callnavi" / "Questions" / "bank.json"

# Three published NESTful math samples with two-call gold paths (datasets/nestful-math/seeds.jsonl):
# S1 divide(529, 23) -> subtract($var_1.result$, 5) = 18.0
# S2 multiply(15, 100) -> divide($var_1.result$, 15) = 100.0
# S3 divide(60, 15) -> multiply($var_1.result$, 10) = 40.0
NESTFUL_IDS = ("04833334-0a98-443d-b24e-41b78da083b1", "6dab689a-7d58-4d74-8286-0b328f3316fe",
               "d156dd17-ea2e-45f8-bdae-e4f3a47015ed")
# Four published CallNavi bank questions: two easy, one medium, one hard.
CALLNAVI_IDS = ("ban01", "ban02", "ban047", "ban042")


def write_pipelines(root: Path, body: str) -> Path:
    """pipelines.yaml with one pipeline `bench` (build folder root/data/build)."""
    path = root / "pipelines.yaml"
    path.write_text("pipelines:\n  bench:\n    dataset_dir: data\n    seed: 1\n" + body, encoding="utf-8")
    return path


def llm_block(concurrency: int = 2, seed: int | None = None) -> str:
    seeded = f", seed: {seed}" if seed is not None else ""
    return f"    llm: {{model: generator, concurrency: {concurrency}, max_retries: 0{seeded}}}\n"


def nestful_pipeline(root: Path, concurrency: int = 2, environment: bool = True) -> Path:
    env = (f"    environment: {{kind: python, module: {NESTFUL_TOOLS}, timeout_s: 5}}\n" if environment else "")
    return write_pipelines(root, llm_block(concurrency) + env)


def nestful_input(root: Path) -> tuple[Path, list[Sample]]:
    by_id = {s.id: s for s in read_samples(NESTFUL_SEEDS, "fcbench") if isinstance(s, Sample)}
    samples = [by_id[sample_id] for sample_id in NESTFUL_IDS]
    path = root / "nestful.canonical.jsonl"
    write_samples(samples, path, "fcbench")
    return path, samples


def callnavi_input(root: Path) -> tuple[Path, list[Sample]]:
    by_id = {s.id: s for s in read_samples(CALLNAVI_BANK, "callnavi") if isinstance(s, Sample)}
    samples = [by_id[sample_id] for sample_id in CALLNAVI_IDS]
    path = root / "callnavi.canonical.jsonl"
    write_samples(samples, path, "fcbench")
    return path, samples


def evaluate(pipelines: Path, base_url: str, *extra: str):
    return runner.invoke(app, ["evaluate", "bench", "--file", str(pipelines), "--model", MODEL, "--base-url", base_url,
                               "--json", *extra])


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def stats(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats") as response:
        return json.loads(response.read())


class Scripted:
    """A responder answering from `answer(body) -> reply dict` and counting requests by a key
    `key(body)` (e.g. the sample a request is about)."""

    def __init__(self, answer: Callable[[dict[str, Any]], dict[str, Any]],
                 key: Callable[[dict[str, Any]], str] = lambda body: "all") -> None:
        self.answer = answer
        self.key = key
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any], call_index: int) -> dict[str, Any]:
        with self.lock:
            self.requests.append(body)
        return self.answer(body)

    def counts(self) -> Counter:
        with self.lock:
            return Counter(self.key(body) for body in self.requests)


def user_texts(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] in ("user", "system")
                     and isinstance(m.get("content"), str))


# --------------------------------------------------------------------------------- NESTful models
def nestful_sample_of(body: dict[str, Any], samples: list[Sample]) -> Sample:
    question = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return next(s for s in samples if s.messages[0]["content"] in question)


def icl_answer(samples: list[Sample]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """S1 the gold list; S2 a multiply where the gold divides second; S3 prose (not a call list)."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        sample = nestful_sample_of(body, samples)
        if sample.id == NESTFUL_IDS[0]:
            calls = [{"name": "divide", "label": "$var_1", "arguments": {"arg_0": 529, "arg_1": 23}},
                     {"name": "subtract", "label": "$var_2", "arguments": {"arg_0": "$var_1.result$", "arg_1": 5}}]
            return {"content": json.dumps(calls)}
        if sample.id == NESTFUL_IDS[1]:
            calls = [{"name": "multiply", "label": "$var_1", "arguments": {"arg_0": 15, "arg_1": 100}},
                     {"name": "multiply", "label": "$var_2", "arguments": {"arg_0": "$var_1.result$", "arg_1": 15}}]
            return {"content": json.dumps(calls)}
        return {"content": "I think the answer is 40."}

    return answer


def react_answer(samples: list[Sample]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """S1 acts as the gold path (passing $var_1.result$), reads the observations and answers 18;
    S2 copies the intermediate value (1500) instead of referring to it, answers 100; S3 names a
    tool that does not exist, then answers 40 without acting. Each step depends on the observation
    before it, so a wrong observation would derail the script."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        sample = nestful_sample_of(body, samples)
        observations = [m["content"] for m in body["messages"] if m["role"] == "user" and
                        m["content"].startswith("Observation")]
        step = len(observations)
        if sample.id == NESTFUL_IDS[0]:
            script = ['Thought: price per metre first.\nAction: divide\nAction Input: {"arg_0": 529, "arg_1": 23}',
                      'Thought: minus the profit.\nAction: subtract\nAction Input: {"arg_0": "$var_1.result$", "arg_1": 5}',
                      "Thought: I now know the final answer\nFinal Answer: 18"]
            expected = [None, 'Observation ($var_1): {"result": 23.0}', 'Observation ($var_2): {"result": 18.0}']
        elif sample.id == NESTFUL_IDS[1]:
            script = ['Action: multiply\nAction Input: {"arg_0": 15, "arg_1": 100}',
                      'Action: divide\nAction Input: {"arg_0": 1500, "arg_1": 15}',
                      "Final Answer: 100"]
            expected = [None, 'Observation ($var_1): {"result": 1500}', 'Observation ($var_2): {"result": 100.0}']
        else:
            script = ['Action: calculator\nAction Input: {"expression": "60 / 15 * 10"}', "Final Answer: 40"]
            expected = [None, "Observation (not run): {\"error\": \"unknown tool 'calculator'; use one of the tools listed\"}"]
        if step and observations[-1] != expected[step]:
            return {"content": f"Final Answer: unexpected observation {observations[-1]}"}
        return {"content": script[step]}

    return answer


# -------------------------------------------------------------------------------- CallNavi model
CALLNAVI_ANSWERS: dict[str, list[str]] = {
    # ban01 (easy): one answer in three spellings (spacing, quote style, key order, a code fence)
    "ban01": ['{"API": ["getAccountID"], "parameters": [{"accountNumber": "123456"}]}',
              "{'API': ['getAccountID'], 'parameters': [{'accountNumber': '123456'}]}",
              '```json\n{"parameters":[{"accountNumber":"123456"}],"API":["getAccountID"]}\n```'],
    # ban02 (easy): right, then twice a wrong account id
    "ban02": ['{"API": ["getAccountBalance"], "parameters": [{"accountID": "987654"}]}',
              '{"API": ["getAccountBalance"], "parameters": [{"accountID": "111111"}]}',
              '{"API": ["getAccountBalance"], "parameters": [{"accountID": "111111"}]}'],
    # ban047 (medium): right twice, then an empty answer
    "ban047": ['{"API": ["getAccountBalance", "getOverdraftLimit"], "parameters": [{"accountID": "987654"}, '
               '{"accountID": "987654"}]}'] * 2 + [""],
    # ban042 (hard): the transfer only, three times (its status check left out)
    "ban042": ['{"API": ["initiateTransfer"], "parameters": [{"fromAccountID": "123456", "toAccountID": "654321", '
               '"amount": "1000", "currency": "USD"}]}'] * 3,
}


def callnavi_answer(samples: list[Sample]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The question from the prompt, the run from the request's seed (llm.seed 0: run r is sent
    with seed r * 1000, fcbench.llm.client.derived_seed)."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        text = body["messages"][0]["content"]
        if "total rating" in text:  # a GPT-score judge request, for the judge tests
            return {"content": "[[0.9]]"}
        sample = next(s for s in samples if s.messages[0]["content"] in text)
        run = body["seed"] // 1000
        return {"content": CALLNAVI_ANSWERS[sample.id][run]}

    return answer


# -------------------------------------------------------------------------------- CONFETTI set
def _tool(name: str, *params: tuple[str, str]) -> dict[str, Any]:
    return {"name": name, "description": name.replace("_", " "),
            "parameters": {"type": "object", "properties": {p: {"type": t} for p, t in params},
                           "required": [p for p, _ in params]}}


BOOK = _tool("book_table", ("restaurant", "string"), ("people", "integer"), ("time", "string"))
LOCATE = _tool("get_location", ("query", "string"))
WEATHER = _tool("get_weather", ("location_id", "string"))
CANCEL = _tool("cancel_booking", ("booking_id", "string"))


def confetti_records() -> list[dict[str, Any]]:
    """Two function-calling turns and two response-quality turns of hand-made conversations."""
    located = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "var_1", "type": "function", "function": {"name": "get_location", "arguments": '{"query": "Paris"}'}}]}
    return [
        {"id": "conv-1_f0", "domain": "dining", "tools": [BOOK],
         "messages": [{"role": "user", "content": "Book a table at Luigi for 2 people tonight at 19:00."}],
         "calls": [[{"label": "var_1", "name": "book_table",
                     "arguments": {"restaurant": "Luigi", "people": 2, "time": "19:00"}}]]},
        {"id": "conv-2_f1", "domain": "weather", "tools": [LOCATE, WEATHER],
         "messages": [{"role": "user", "content": "What is the weather in Paris?"}, located,
                      {"role": "tool", "tool_call_id": "var_1", "content": '{"id": "P1"}'}],
         "calls": [[{"label": "var_2", "name": "get_weather", "arguments": {"location_id": "P1"}}]]},
        {"id": "conv-1_r0", "domain": "dining", "tools": [BOOK], "dialog_acts": ["agent_seek_information"],
         "messages": [{"role": "user", "content": "Book a table at Luigi."}], "calls": []},
        {"id": "conv-3_r0", "domain": "dining", "tools": [CANCEL], "dialog_acts": ["agent_function_calling"],
         "messages": [{"role": "user", "content": "Cancel my booking B-7."}],
         "calls": [[{"label": "var_1", "name": "cancel_booking", "arguments": {"booking_id": "B-7"}}]]},
    ]


def confetti_input(root: Path) -> tuple[Path, list[Sample]]:
    from fcbench.sample import sample_from_dict

    samples = [sample_from_dict(record) for record in confetti_records()]
    path = root / "confetti.canonical.jsonl"
    write_samples(samples, path, "fcbench")
    return path, samples


def confetti_answer(body: dict[str, Any]) -> dict[str, Any]:
    """f0: book_table with 3 people (the user said 2); f1: looks Paris up again (wrong function);
    r0 (Luigi): asks a question; r0 (cancel): refuses."""
    first = body["messages"][0]["content"]
    if first.startswith("Book a table at Luigi for 2"):
        return {"tool_calls": [{"name": "book_table", "arguments": {"restaurant": "Luigi", "people": 3, "time": "19:00"}}]}
    if first.startswith("What is the weather"):
        return {"tool_calls": [{"name": "get_location", "arguments": {"query": "Paris, France"}}]}
    if first.startswith("Book a table at Luigi."):
        return {"content": "For how many people, and at what time?"}
    return {"content": "Sorry, I cannot do that."}
