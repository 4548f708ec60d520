"""Stage1, NESTful-style: drafts made from seed examples (`stages.stage1.from_seeds`).

NESTful's sequences are nested: a call reads an earlier call's result (`$var_1.result$`). Here a
seed's *call structure* (which tool each call runs, which argument reads which earlier result,
which literal values are equal) is what a new draft keeps:

- offline (`structure_of`, `instantiate`, `render_query`: pure): each draft takes one seed's
  structure, gives its literal values new ones drawn by the seeded generator (equal values stay
  equal, each near the original's size, whole numbers stay whole), names every result with a
  letter and writes the question from the pipeline's phrases, one clause per call ("Let a be 20
  divided by 137. Let b be the product of 9000 and a. What is 9000 minus b?"): the path is exactly
  what the question says. A seed's repeated identical call is one call (a person says it once).
  The draft is executed in the pipeline's environment; a draw that fails (division by zero, a
  huge power) is drawn again, and a seed that never runs is a reject with its reason.
- with an LLM (`SeedPromptDrafter`): the model is shown `few_shot` seeds (question and call
  sequence, drawn by the seeded generator) and the tools, and writes a new question and its
  sequence as JSON; the sequence is executed, and a draft that does not run, calls an unknown tool
  or reads no earlier result is a reject.
Either way the filter then applies its usual checks, `min_nested_calls` among them.
"""

from __future__ import annotations

import json
import math
import random
import re
import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from fcbench.errors import ItemRejected, UserError
from fcbench.references import iter_references
from fcbench.sample import Call, Provenance, Sample, Tool

GENERATOR = "seed-structures"
SEEDS_PROMPT = Path(__file__).resolve().parents[1] / "prompts" / "stage1_from_seeds.txt"
WINDOW_DRAFTS = 64  # LLM drafts asked concurrently
MAX_ATTEMPTS = 8  # value draws per draft before its seed is a reject
MAX_ANSWER = 1e12  # an answer above this is no question a person asks (a power gone wild)
LETTERS = string.ascii_lowercase
_RESULT_REFERENCE = re.compile(r"^\$(?P<label>[A-Za-z_][\w-]*)\.result\$$")


class SeedUnusable(Exception):
    """A seed whose structure cannot be re-instantiated; `str(exc)` is the reason code."""


@dataclass(frozen=True)
class Ref:
    call: int  # index of the earlier call whose result is read


@dataclass(frozen=True)
class SeedCall:
    name: str
    arguments: tuple[tuple[str, Any], ...]  # (name, Ref | literal), in the seed's order


@dataclass(frozen=True)
class SeedStructure:
    seed_id: str
    calls: tuple[SeedCall, ...]
    offered: tuple[str, ...]  # the seed's tool names that the catalog has

    @property
    def literals(self) -> list[Any]:
        """The distinct literal values, in order of first use."""
        found: list[Any] = []
        for call in self.calls:
            for _, value in call.arguments:
                if not isinstance(value, Ref) and not any(_same(value, seen) for seen in found):
                    found.append(value)
        return found


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------------------- structures
def structure_of(seed: Sample, catalog: Mapping[str, Tool], phrases: Mapping[str, str] | None,
                 max_calls: int) -> SeedStructure:
    """The seed's call structure, repeated identical calls merged; SeedUnusable(reason) when a call
    runs a tool the catalog (or the phrases) lacks, reads anything but an earlier `result`, the
    structure is longer than `max_calls`, reads nothing earlier, or has more than one final result."""
    calls: list[SeedCall] = []
    index_of_label: dict[str, int] = {}
    for call in seed.all_calls():
        if call.name not in catalog:
            raise SeedUnusable("tool_not_in_catalog")
        if phrases is not None and call.name not in phrases:
            raise SeedUnusable("no_phrase_for_tool")
        arguments = []
        for name, value in call.arguments.items():
            if isinstance(value, str) and value.startswith("$"):
                match = _RESULT_REFERENCE.match(value)
                if not match or match.group("label") not in index_of_label:
                    raise SeedUnusable("reference_not_to_an_earlier_result")
                arguments.append((name, Ref(index_of_label[match.group("label")])))
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                arguments.append((name, value))
            else:
                raise SeedUnusable("non_numeric_literal")
        shaped = SeedCall(call.name, tuple(arguments))
        if shaped in calls:  # the same computation again: read the first one instead
            index_of_label[call.label] = calls.index(shaped)
            continue
        index_of_label[call.label] = len(calls)
        calls.append(shaped)
    if len(calls) > max_calls or len(calls) > len(LETTERS):
        raise SeedUnusable("too_many_calls")
    read = {value.call for call in calls for _, value in call.arguments if isinstance(value, Ref)}
    if not read:
        raise SeedUnusable("no_nested_call")
    if len(set(range(len(calls))) - read) != 1:  # only the last result may be left unread
        raise SeedUnusable("several_final_results")
    offered = tuple(name for name in catalog if name in seed.tool_names() or any(c.name == name for c in calls))
    return SeedStructure(seed.id, tuple(calls), offered)


def new_value(value: int | float, rng: random.Random) -> int | float:
    """A value of the same kind and about the same size (half to one and a half times)."""
    if isinstance(value, int):
        if value == 0:
            return 0
        magnitude = rng.randint(max(1, round(abs(value) * 0.5)), max(2, round(abs(value) * 1.5)))
        return magnitude if value > 0 else -magnitude
    decimals = min(2, len(repr(value).split(".")[-1])) if "." in repr(value) else 2
    drawn = round(value * rng.uniform(0.5, 1.5), decimals)
    return drawn if drawn != 0 else value


def instantiate(structure: SeedStructure, rng: random.Random) -> list[Call]:
    """The structure's calls with new literal values (equal values stay equal), each reading
    earlier results as `$var_k.result$`."""
    mapping = [(old, new_value(old, rng)) for old in structure.literals]

    def value_of(value: Any) -> Any:
        if isinstance(value, Ref):
            return f"$var_{value.call + 1}.result$"
        return next(new for old, new in mapping if _same(old, value))

    return [Call(label=f"var_{index + 1}", name=call.name,
                 arguments={name: value_of(value) for name, value in call.arguments})
            for index, call in enumerate(structure.calls)]


def say_number(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) + ".0"
    return str(value)


def render_query(calls: Sequence[Call], phrases: Mapping[str, str]) -> str:
    """One clause per call: 'Let a be <phrase>.' for the results read later, 'What is <phrase>?'
    for the last; an argument reading an earlier result is said as that result's letter."""
    letter_of = {call.label: LETTERS[index] for index, call in enumerate(calls)}
    clauses = []
    for index, call in enumerate(calls):
        said = {}
        for name, value in call.arguments.items():
            references = list(iter_references(value)) if isinstance(value, str) else []
            said[name] = letter_of[references[0].label] if references else say_number(value)
        phrase = phrases[call.name]
        for name, text in said.items():
            phrase = phrase.replace("{" + name + "}", text)
        if "{" in phrase:
            raise UserError(f"phrase for {call.name!r} names an argument the call does not have: {phrases[call.name]!r}")
        last = index == len(calls) - 1
        clauses.append(f"What is {phrase}?" if last else f"Let {LETTERS[index]} be {phrase}.")
    return " ".join(clauses)


def usable_answer(answer: Any) -> str | None:
    """Why an executed answer makes no question (None: it does)."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return "answer_not_a_number"
    if isinstance(answer, float) and not math.isfinite(answer):
        return "answer_not_finite"
    if abs(answer) > MAX_ANSWER:
        return "answer_too_large"
    return None


def load_phrases(path: Any) -> dict[str, str]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read the phrases ({exc})") from None
    phrases = document.get("phrases") if isinstance(document, dict) else None
    if not isinstance(phrases, dict) or not all(isinstance(v, str) for v in phrases.values()):
        raise UserError(f"{path}: expected {{\"phrases\": {{tool name: noun phrase with {{arg_0}} ...}}}}")
    return phrases


def skipped_seeds(reasons: Counter[str]) -> dict[str, int]:
    return dict(sorted(reasons.items()))


# ----------------------------------------------------------------------------- the LLM path
def parse_llm_draft(text: str, catalog: Mapping[str, Tool]) -> tuple[str, list[Call]]:
    """`{"question": ..., "calls": [{"name", "arguments"}]}` -> (question, calls labelled var_k);
    ItemRejected with its reason for anything else."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ItemRejected("stage1.unreadable_draft", f"not JSON ({exc.msg})", text) from None
    question = document.get("question") if isinstance(document, dict) else None
    steps = document.get("calls") if isinstance(document, dict) else None
    if not isinstance(question, str) or not question.strip() or not isinstance(steps, list) or not steps:
        raise ItemRejected("stage1.unreadable_draft", "expected {\"question\": text, \"calls\": [...]}", text)
    calls = []
    for index, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("arguments"), dict):
            raise ItemRejected("stage1.unreadable_draft", f"call {index + 1} is not {{name, arguments}}", text)
        if step.get("name") not in catalog:
            raise ItemRejected("stage1.unknown_tool", f"call {index + 1} runs {step.get('name')!r}, not a tool", text)
        for value in step["arguments"].values():
            for reference in iter_references(value) if isinstance(value, str) else []:
                earlier = {f"var_{k}" for k in range(1, index + 1)}
                if reference.label not in earlier:
                    raise ItemRejected("stage1.bad_reference", f"call {index + 1} reads {value!r}, "
                                       f"not an earlier call's result", text)
        calls.append(Call(label=f"var_{index + 1}", name=step["name"], arguments=step["arguments"]))
    if not any(list(iter_references(v)) for call in calls for v in call.arguments.values() if isinstance(v, str)):
        raise ItemRejected("stage1.no_nested_call", "no call reads an earlier call's result", text)
    return question.strip(), calls


def few_shot_text(seeds: Sequence[Sample]) -> str:
    """The examples as the prompt shows them: question, then the call sequence as JSON."""
    blocks = []
    for number, seed in enumerate(seeds, start=1):
        calls = [{"name": call.name, "arguments": call.arguments} for call in seed.all_calls()]
        question = next((m["content"] for m in seed.messages if m.get("role") == "user"), "")
        blocks.append(f"Example {number}\nQuestion: {question}\nOutput: "
                      + json.dumps({"question": question, "calls": calls}, ensure_ascii=False))
    return "\n\n".join(blocks)


# ------------------------------------------------------------------------------- the stage runs
def read_seeds(pipeline: Any) -> list[Sample]:
    from fcbench.formats import read_samples

    settings = pipeline.stages.stage1.from_seeds
    path = pipeline.resolve(settings.file)
    if not path.is_file():
        raise UserError(f"{path}: no such seeds file (stages.stage1.from_seeds.file)")
    seeds = [item for item in read_samples(path, "fcbench") if isinstance(item, Sample)]
    if not seeds:
        raise UserError(f"{path}: no readable seed sample (stages.stage1.from_seeds.file)")
    return seeds


def run_offline(pipeline: Any, tools: list[Tool], environment: Any, add: Any, draft_id: Any) -> dict[str, Any]:
    """Every draft from one seed structure (in a seeded order, each seed once before any twice);
    `add` takes a Sample or a reject. Returns what the summary says about the seeds."""
    from fcbench.environments.execution import execute_gold_path
    from fcbench.llm.prompts import PromptFile

    settings = pipeline.stages.stage1.from_seeds
    if settings.phrases is None:
        raise UserError("stages.stage1.from_seeds.phrases is not set: the offline generator writes each question "
                        "from the phrases file (or configure `llm:` and set stage1.offline: false)")
    phrases_path = pipeline.resolve(settings.phrases)
    if not phrases_path.is_file():
        raise UserError(f"{phrases_path}: no such phrases file (stages.stage1.from_seeds.phrases)")
    phrases = load_phrases(phrases_path)
    phrases_file = PromptFile.load(phrases_path, pipeline.resolve("."))
    catalog = {tool.name: tool for tool in tools}
    structures: list[SeedStructure] = []
    skipped: Counter[str] = Counter()
    for seed in read_seeds(pipeline):
        try:
            structures.append(structure_of(seed, catalog, phrases, settings.max_calls))
        except SeedUnusable as exc:
            skipped[str(exc)] += 1
    if not structures:
        raise UserError(f"no seed structure usable with this catalog and phrases (skipped: {skipped_seeds(skipped)})")
    order = list(structures)
    random.Random(f"{pipeline.seed}:from_seeds:order").shuffle(order)
    seen_queries: set[str] = set()
    for index in range(pipeline.stages.stage1.queries):
        structure = order[index % len(order)]
        failures: Counter[str] = Counter()
        outcome: Sample | dict[str, Any] | None = None
        for attempt in range(MAX_ATTEMPTS):
            calls = instantiate(structure, random.Random(f"{pipeline.seed}:from_seeds:{index}:{attempt}"))
            query = render_query(calls, phrases)
            if query in seen_queries:
                failures["query_repeats_an_earlier_draft"] += 1
                continue
            offered = [catalog[name] for name in structure.offered]
            draft = Sample(id=draft_id(pipeline, index), domain=pipeline.domains[0] if pipeline.domains else None,
                           messages=[{"role": "user", "content": query}], tools=offered, calls=[[call] for call in calls],
                           provenance=Provenance(stage="stage1", model=GENERATOR, prompt_file=phrases_file.shown_as,
                                                 prompt_hash=phrases_file.sha256, seed=pipeline.seed,
                                                 parent_id=structure.seed_id, sampled_tools=list(structure.offered)),
                           meta={"stage1": {"from_seed": structure.seed_id, "attempts": attempt + 1}})
            result = execute_gold_path(draft, environment)
            problem = (f"execution.{result.failure.outcome.reason.value if result.failure and result.failure.outcome.reason else 'error'}"
                       if not result.ok else usable_answer(result.answer))
            if problem:
                failures[problem] += 1
                continue
            seen_queries.add(query)
            outcome = result.sample.model_copy(update={"answer": result.answer})
            break
        if outcome is None:
            outcome = {"id": draft_id(pipeline, index), "reason": "stage1.seed_not_executable",
                       "detail": f"{MAX_ATTEMPTS} value draws; most frequent problem: {failures.most_common(1)[0][0]}",
                       "seed": structure.seed_id}
        add(outcome)
    return {"file": settings.file, "read": len(structures) + sum(skipped.values()), "usable": len(structures),
            "skipped": skipped_seeds(skipped)}


def run_llm(pipeline: Any, tools: list[Tool], environment: Any, add: Any,
            draft_id: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Few-shot drafts: for draft i, `few_shot` seeds drawn by the seeded generator are shown with
    the tools; the model's question and sequence are executed. Returns (LLM summary, seeds summary)."""
    import asyncio

    from fcbench.catalog.openai import openai_tool_param
    from fcbench.environments.execution import execute_gold_path
    from fcbench.llm.cache import LLM_CACHE_FILE, RequestCache
    from fcbench.llm.client import ChatRequest, LLMClient, LLMRejection, ParseError
    from fcbench.llm.prompts import PromptFile
    from generate.common import in_windows

    settings = pipeline.stages.stage1.from_seeds
    seeds = read_seeds(pipeline)
    prompt = PromptFile.load(SEEDS_PROMPT, pipeline.resolve("."))
    catalog = {tool.name: tool for tool in tools}
    specs = json.dumps([openai_tool_param(tool) for tool in tools], ensure_ascii=False, indent=1)

    def parse(completion: Any) -> tuple[str, list[Call]]:
        try:
            return parse_llm_draft((completion.content or "").strip(), catalog)
        except ItemRejected as exc:
            raise ParseError(f"{exc.reason}: {exc.detail}") from None

    async def draft(client: Any, index: int) -> Sample | dict[str, Any]:
        chosen = random.Random(f"{pipeline.seed}:from_seeds:llm:{index}").sample(seeds, min(settings.few_shot, len(seeds)))
        text = prompt.render(tools=specs, examples=few_shot_text(chosen))
        request = ChatRequest(messages=[{"role": "user", "content": text}], response_format={"type": "json_object"},
                              sample_index=index, prompt_hash=prompt.sha256)
        outcome = await client.complete(request, parse)
        if isinstance(outcome, LLMRejection):
            return {"id": draft_id(pipeline, index), "reason": "stage1.unusable_draft", "detail": outcome.reason,
                    "raw": outcome.raw_text}
        question, calls = outcome.parsed
        sample = Sample(id=draft_id(pipeline, index), domain=pipeline.domains[0] if pipeline.domains else None,
                        messages=[{"role": "user", "content": question}], tools=list(tools),
                        calls=[[call] for call in calls],
                        provenance=Provenance(stage="stage1", model=client.config.model, prompt_file=prompt.shown_as,
                                              prompt_hash=prompt.sha256, seed=pipeline.seed,
                                              sampled_tools=[tool.name for tool in tools]),
                        meta={"stage1": {"few_shot": [seed.id for seed in chosen], "llm": client.provenance()}})
        result = execute_gold_path(sample, environment)
        problem = (f"{result.failure.name if result.failure else '?'}: {result.failure.outcome.error if result.failure else ''}"
                   if not result.ok else usable_answer(result.answer))
        if problem:
            return {"id": sample.id, "reason": "stage1.not_executable", "detail": problem,
                    "raw": json.dumps({"question": question, "calls": [c.model_dump() for c in calls]})}
        return result.sample.model_copy(update={"answer": result.answer})

    async def run_all() -> dict[str, Any]:
        cache = RequestCache(pipeline.build_dir / LLM_CACHE_FILE)
        try:
            async with LLMClient(pipeline.llm, cache, jitter_seed=pipeline.seed) as client:
                # windows of drafts asked concurrently, each written in order before the next
                for window in in_windows(range(pipeline.stages.stage1.queries), WINDOW_DRAFTS):
                    for outcome in await asyncio.gather(*(draft(client, index) for index in window)):
                        add(outcome)
                return client.summary()
        finally:
            cache.close()

    return asyncio.run(run_all()), {"file": settings.file, "read": len(seeds), "few_shot": settings.few_shot}
