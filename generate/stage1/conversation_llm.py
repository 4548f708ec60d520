"""Drafting conversations with an LLM: the scenario written by the LLM, then an LLM user simulator
and an LLM agent talking, the agent calling the scenario's APIs by function calling against the
pipeline's environment. Every request goes through `LLMClient` and its request cache (a re-run
pays for nothing and gives the same conversation).

Prompts are files (generate/prompts/conversation_*.txt). A conversation is rejected, never cut
short silently, when:
- the scenario text or a user turn is not the JSON asked for, after the client's re-asks, or the
  user simulator steps out of its role (writes as the assistant): `off_script`, with the raw text;
- the user simulator is still talking at `conversation.max_turns` user turns: `turn_cap`;
- the agent keeps calling tools past `stages.stage1.max_steps` steps in one turn: `max_steps`;
- an LLM request fails (unreachable after retries): `llm_failed`;
- the environment cannot answer a call at all (a timeout, no usable simulated answer):
  `environment_failed` (an API that refuses a call is kept: that is an execution exception).
The agent's turns get draft dialog acts from what they do (calls: function call; a sentence that
refuses: reject; a question: seek information; any other sentence: provide information):
annotators correct them in stage2. A failed_conversation scenario's goal calls (its required
APIs) are chosen to fail, as an author would choose (`fcbench.environments.chosen`): they answer
the service's outage unexecuted, and the conversation records the choice (`chosen_errors`).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from fcbench.errors import ItemRejected
from fcbench.runtime.progress import StageProgress, progress_of
from fcbench.catalog.openai import openai_tool_param
from fcbench.config import PipelineConfig
from fcbench.conversation import Scenario, conversation_environment, conversation_sample, tool_call, tool_result
from fcbench.environments import Environment, ErrorReason
from fcbench.environments.chosen import call_step_with_chosen_errors
from fcbench.llm.client import json_object_answer
from fcbench.llm.prompts import PromptFile
from fcbench.sample import Provenance, Sample, Tool
from generate.common import PROMPTS
from generate.stage1.scenarios import COMPLEXITY_TEXT, offered_tools

SCENARIO_PROMPT = PROMPTS / "conversation_scenario.txt"
USER_PROMPT = PROMPTS / "conversation_user.txt"
AGENT_PROMPT = PROMPTS / "conversation_agent.txt"
# The error a failed_conversation's goal calls answer (the author's choice: the service is down).
SERVICE_DOWN = "The service is temporarily unavailable. Please try again later."
# An agent sentence that turns the request down (draft act: agent_reject_request).
_REFUSAL = re.compile(r"\b(i\s*(?:am|'m)\s+(?:sorry|afraid)[^.?!]*\b(?:can(?:no|')t|unable|not able)|i\s+(?:can(?:no|')t|am\s+"
                      r"unable\s+to|am\s+not\s+able\s+to)\s+(?:help|do|book|assist|provide|make|reserve|buy|check)|"
                      r"(?:is|are)\s+not\s+(?:supported|something\s+i\s+can))", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# A user simulator writing the assistant's part (or narrating) has left its role.
_OUT_OF_ROLE = re.compile(r"^\s*(assistant|agent|system)\s*:|\bas an ai\b|\btool_call", re.IGNORECASE)


def parse_description(completion: Any) -> str:
    from fcbench.llm.client import ParseError

    value = json_object_answer(completion).get("description")
    if not isinstance(value, str) or not value.strip():
        raise ParseError("expected {\"description\": non-empty text}")
    return value.strip()


def parse_user_turn(completion: Any) -> tuple[str, bool]:
    """(message, done) of the user simulator; off-script answers raise ParseError (re-asked)."""
    from fcbench.llm.client import ParseError

    value = json_object_answer(completion)
    message, done = value.get("message"), value.get("done", False)
    if not isinstance(message, str) or not message.strip() or not isinstance(done, bool):
        raise ParseError("expected {\"message\": non-empty text, \"done\": true|false}")
    if _OUT_OF_ROLE.search(message):
        raise ParseError("the user simulator wrote outside its role (as the assistant, or about the conversation)")
    return message.strip(), done


def draft_acts(text: str | None, calls: bool) -> list[str]:
    """Draft dialog acts of an agent turn from its calls and its sentences (annotators correct them)."""
    acts = ["agent_function_calling"] if calls else []
    sentences = [part for part in _SENTENCE.split(text.strip()) if part] if text and text.strip() else []
    if any(_REFUSAL.search(sentence) for sentence in sentences):
        acts.append("agent_reject_request")
    elif any(not sentence.endswith("?") for sentence in sentences):
        acts.append("agent_inform_user")
    if any(sentence.endswith("?") for sentence in sentences):
        acts.append("agent_seek_information")
    return acts or ["agent_other"]


@dataclass
class ConversationDrafter:
    pipeline: PipelineConfig
    client: Any  # fcbench.llm.client.LLMClient
    environment: Environment
    prompts: tuple[PromptFile, PromptFile, PromptFile]  # scenario, user, agent

    async def draft(self, index: int, scenario: Scenario, catalog: Sequence[Tool],
                    described: bool = False) -> Sample | dict[str, Any]:
        """One conversation; `described`: the scenario's text is final (a reviewer's), not rewritten."""
        offered = offered_tools(scenario, catalog)
        chosen: dict[str, str] = {}
        try:
            if not described:
                scenario = scenario.model_copy(update={"description": await self._describe(index, scenario, offered)})
            messages, failed = await self._talk(index, scenario, offered, chosen)
        except ItemRejected as reject:
            record: dict[str, Any] = {"id": scenario.id, "reason": f"stage1.{reject.reason}", "detail": reject.detail,
                                      "scenario": scenario.model_dump(mode="json")}
            if reject.raw_text is not None:
                record["raw"] = reject.raw_text
            return record
        scenario_prompt, user_prompt, agent_prompt = self.prompts
        provenance = Provenance(stage="stage1", model=self.client.config.model, prompt_file=agent_prompt.shown_as,
                                prompt_hash=agent_prompt.sha256, seed=self.pipeline.seed,
                                sampled_tools=[tool.name for tool in offered])
        return conversation_sample(scenario.id, scenario, messages, offered, provenance, failed,
                                   {"prompts": {p.shown_as: p.sha256 for p in self.prompts},
                                    "llm": self.client.provenance()}, chosen_errors=chosen)

    async def _describe(self, index: int, scenario: Scenario, offered: Sequence[Tool]) -> str:
        from fcbench.llm.client import ChatRequest, LLMRejection

        prompt = self.prompts[0]
        apis = json.dumps([openai_tool_param(tool) for tool in offered], ensure_ascii=False, indent=1)
        domain = scenario.domain if isinstance(scenario.domain, str) else " and ".join(scenario.domain)
        text = prompt.render(domain=domain, apis=apis, required=", ".join(scenario.required_apis),
                             complexities=", ".join(scenario.complexities),
                             complexity_text="; ".join(COMPLEXITY_TEXT[c] for c in scenario.complexities),
                             reference_time=scenario.reference_time, min_turns=str(scenario.min_turns))
        request = ChatRequest(messages=[{"role": "user", "content": text}], response_format={"type": "json_object"},
                              sample_index=index, prompt_hash=prompt.sha256)
        outcome = await self.client.complete(request, parse_description)
        if isinstance(outcome, LLMRejection):
            raise ItemRejected("off_script", f"the scenario writer did not answer as asked: {outcome.reason}", outcome.raw_text)
        return outcome.parsed

    async def _user_says(self, index: int, scenario: Scenario, messages: list[dict[str, Any]]) -> tuple[str, bool]:
        """The user simulator's next turn; it reads the conversation with the roles swapped."""
        from fcbench.llm.client import ChatRequest, LLMRejection

        prompt = self.prompts[1]
        seen: list[dict[str, Any]] = [{"role": "system", "content": prompt.render(scenario=scenario.description)}]
        for message in messages:
            if message["role"] == "user":
                seen.append({"role": "assistant", "content": json.dumps({"message": message["content"], "done": False})})
            elif message["role"] == "assistant" and message.get("content"):
                seen.append({"role": "user", "content": message["content"]})
        if len(seen) == 1:
            seen.append({"role": "user", "content": "(The assistant is waiting for you to start.)"})
        request = ChatRequest(messages=seen, response_format={"type": "json_object"}, sample_index=index,
                              prompt_hash=prompt.sha256)
        outcome = await self.client.complete(request, parse_user_turn)
        if isinstance(outcome, LLMRejection):
            raise ItemRejected("off_script", f"the user simulator left its script: {outcome.reason}", outcome.raw_text)
        return outcome.parsed

    async def _agent_turn(self, index: int, scenario: Scenario, offered: Sequence[Tool], messages: list[dict[str, Any]],
                          labels: list[int], failed: list[str], environment: Environment, chosen: dict[str, str]) -> None:
        """The agent's turn: steps of tool calls (executed) until it answers in text."""
        from fcbench.llm.client import ChatRequest, LLMRejection

        prompt = self.prompts[2]
        specs = [openai_tool_param(tool) for tool in offered]
        names = {tool.name for tool in offered}
        system = {"role": "system", "content": prompt.render(reference_time=scenario.reference_time)}
        max_steps = self.pipeline.stages.stage1.max_steps
        made_calls = False
        for step in range(max_steps + 1):
            history = [system, *({k: v for k, v in m.items() if k not in ("dialog_acts", "name") or m["role"] == "tool"}
                                 for m in messages)]
            request = ChatRequest(messages=history, tools=specs, sample_index=index, prompt_hash=prompt.sha256)
            outcome = await self.client.complete(request)
            if isinstance(outcome, LLMRejection):
                raise ItemRejected("llm_failed", outcome.reason, outcome.raw_text)
            completion = outcome.completion
            if not completion.tool_calls:
                if not (completion.content or "").strip():
                    raise ItemRejected("off_script", "the agent answered with neither text nor a call", completion.raw_text)
                messages.append({"role": "assistant", "content": completion.content.strip(),
                                 "dialog_acts": draft_acts(completion.content, made_calls)})
                return
            if step == max_steps:
                raise ItemRejected("max_steps", f"the agent still calls tools after max_steps={max_steps} steps in one turn",
                              completion.raw_text)
            planned = []
            for call in completion.tool_calls:
                if call.name not in names:
                    raise ItemRejected("off_script", f"the agent called {call.name!r}, which the scenario does not offer",
                                  completion.raw_text)
                try:
                    arguments = json.loads(call.arguments or "{}")
                except json.JSONDecodeError:
                    raise ItemRejected("off_script", f"the agent's arguments for {call.name} are not JSON",
                                  completion.raw_text) from None
                if not isinstance(arguments, dict):
                    raise ItemRejected("off_script", f"the agent's arguments for {call.name} are not an object", completion.raw_text)
                labels[0] += 1
                planned.append((f"var_{labels[0]}", call.name, arguments))
            down = set(scenario.required_apis) if "failed_conversation" in scenario.complexities else set()
            choices = [SERVICE_DOWN if name in down else None for _, name, _ in planned]
            outcomes = call_step_with_chosen_errors(environment, [(name, arguments) for _, name, arguments in planned],
                                                    choices)
            chosen.update((label, message) for (label, _, _), message in zip(planned, choices) if message is not None)
            for (label, name, _), result in zip(planned, outcomes):
                # an API that refuses a call is part of the conversation (execution_exception); an
                # environment that could not answer at all (timeout, no usable simulated answer) is not
                if not result.ok and result.reason not in (ErrorReason.TOOL_ERROR, ErrorReason.BAD_ARGUMENTS,
                                                           ErrorReason.HTTP_STATUS):
                    raise ItemRejected("environment_failed", f"{label} ({name}): {result.error}")
            messages.append({"role": "assistant", "content": completion.content or None,
                             "tool_calls": [tool_call(label, name, arguments) for label, name, arguments in planned]})
            for (label, name, _), result in zip(planned, outcomes):
                if not result.ok:
                    failed.append(label)
                messages.append(tool_result(label, name, result.response if result.ok else
                                            {"error": result.error or "the call failed"}))
            made_calls = True

    async def _talk(self, index: int, scenario: Scenario, offered: Sequence[Tool],
                    chosen: dict[str, str]) -> tuple[list[dict[str, Any]], list[str]]:
        messages: list[dict[str, Any]] = []
        failed: list[str] = []
        labels = [0]
        cap = self.pipeline.conversation.max_turns if self.pipeline.conversation else 12
        environment = conversation_environment(self.environment)  # state carried from call to call
        while True:
            text, done = await self._user_says(index, scenario, messages)
            user_turns = sum(1 for message in messages if message["role"] == "user")
            if done and user_turns >= scenario.min_turns:
                return messages, failed  # the user's closing words need no answer
            if user_turns >= cap:
                raise ItemRejected("turn_cap", f"the user simulator was still talking after {cap} user turns "
                                          f"(conversation.max_turns)", text)
            messages.append({"role": "user", "content": text})
            await self._agent_turn(index, scenario, offered, messages, labels, failed, environment, chosen)


def describe_with_llm(pipeline: PipelineConfig, scenarios: Sequence[Scenario], tools: list[Tool],
                      environment: Environment) -> tuple[list[Scenario | dict[str, Any]], dict[str, Any]]:
    """The LLM's text for each scenario, before it is reviewed (the same requests drafting would
    send, from the same cache); a scenario the writer could not describe is a reject record."""
    from fcbench.llm.cache import LLM_CACHE_FILE, RequestCache
    from fcbench.llm.client import LLMClient

    assert pipeline.llm is not None
    base = pipeline.resolve(".")
    prompts = (PromptFile.load(SCENARIO_PROMPT, base), PromptFile.load(USER_PROMPT, base), PromptFile.load(AGENT_PROMPT, base))

    async def describe_one(drafter: ConversationDrafter, index: int, scenario: Scenario) -> Scenario | dict[str, Any]:
        try:
            text = await drafter._describe(index, scenario, offered_tools(scenario, tools))
        except ItemRejected as reject:
            record: dict[str, Any] = {"id": scenario.id, "reason": f"stage1.{reject.reason}", "detail": reject.detail,
                                      "scenario": scenario.model_dump(mode="json")}
            if reject.raw is not None:
                record["raw"] = reject.raw
            return record
        return scenario.model_copy(update={"description": text})

    async def run_all() -> tuple[list[Scenario | dict[str, Any]], dict[str, Any]]:
        cache = RequestCache(pipeline.build_dir / LLM_CACHE_FILE)
        try:
            async with LLMClient(pipeline.llm, cache, jitter_seed=pipeline.seed) as client:
                drafter = ConversationDrafter(pipeline, client, environment, prompts)
                with StageProgress("stage1 scenarios", len(scenarios)) as progress:
                    results = await asyncio.gather(*(progress_of(describe_one(drafter, index, scenario), progress)
                                                     for index, scenario in enumerate(scenarios)))
                return list(results), client.summary()
        finally:
            cache.close()

    return asyncio.run(run_all())


def draft_with_llm(pipeline: PipelineConfig, scenarios: Sequence[Scenario], tools: list[Tool],
                   environment: Environment, described: bool = False) -> tuple[list[Sample | dict[str, Any]], dict[str, Any], str]:
    """Every scenario drafted; `described`: the scenarios were reviewed, their texts are kept."""
    from fcbench.llm.cache import LLM_CACHE_FILE, RequestCache
    from fcbench.llm.client import LLMClient

    assert pipeline.llm is not None
    base = pipeline.resolve(".")
    prompts = (PromptFile.load(SCENARIO_PROMPT, base), PromptFile.load(USER_PROMPT, base), PromptFile.load(AGENT_PROMPT, base))

    async def run_all() -> tuple[list[Sample | dict[str, Any]], dict[str, Any]]:
        cache = RequestCache(pipeline.build_dir / LLM_CACHE_FILE)
        try:
            async with LLMClient(pipeline.llm, cache, jitter_seed=pipeline.seed) as client:
                drafter = ConversationDrafter(pipeline, client, environment, prompts)
                with StageProgress("stage1 conversations", len(scenarios)) as progress:
                    results = await asyncio.gather(*(progress_of(drafter.draft(index, scenario, tools, described), progress)
                                                     for index, scenario in enumerate(scenarios)))
                return list(results), client.summary()
        finally:
            cache.close()

    outcomes, summary = asyncio.run(run_all())
    return outcomes, summary, pipeline.llm.model
