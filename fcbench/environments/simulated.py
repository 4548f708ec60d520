"""The response simulator (`environment.kind: simulated`): no tool implementation; the pipeline's LLM
answers each call from the tool's description, parameter schema and output schema (`returns`), as
CONFETTI simulated its APIs' returns.

Every answer goes through `fcbench.llm.client.LLMClient` and its request cache, keyed on the tool
spec and the arguments: the same call gets the same answer on every run (and a re-run pays for
nothing), so the filter can re-execute a conversation against it. The answer must be a JSON object;
`{"error": "..."}` is how the simulated API refuses a call (an `execution_exception` to handle), and
becomes a failed outcome (`tool_error`). An unusable answer (not JSON, after the client's re-asks)
is a failed outcome too, never a made-up response.

State: `session()` gives a view of the environment for one conversation; each call it answers is
asked with the calls and responses the session answered before (in the prompt), so a simulated API
stays consistent across a conversation (an id it returned is the id it knows later). Re-executing a
conversation in order through a new session asks the same prompts again, so the cache answers.
The environment is synchronous like the others:
the LLM client runs on its own event loop in a background thread, so it serves sync callers (the
filter) and async ones (stage1's agents) alike.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

from fcbench.config import LLMConfig
from fcbench.environments import CallOutcome, Environment, ErrorReason
from fcbench.llm.prompts import PromptFile
from fcbench.sample import Tool

PROMPT = Path(__file__).resolve().parents[1] / "prompts" / "response_simulator.txt"


def parse_simulated_response(completion: Any) -> Any:
    """The JSON object the simulator answered; `ParseError` (asked again) otherwise."""
    from fcbench.llm.client import json_object_answer

    return json_object_answer(completion)


class SimulatedEnvironment(Environment):
    def __init__(self, tools: Sequence[Tool], llm: LLMConfig, cache_path: Path, reference_time: str = "",
                 jitter_seed: int | None = None) -> None:
        from fcbench.llm.cache import RequestCache
        from fcbench.llm.client import LLMClient

        self.tools = {tool.name: tool for tool in tools}
        self.reference_time = reference_time
        self.prompt = PromptFile.load(PROMPT, PROMPT.parent)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="response-simulator", daemon=True)
        self._thread.start()
        self._cache = RequestCache(cache_path)

        async def make_client() -> Any:
            return LLMClient(llm, self._cache, jitter_seed=jitter_seed)

        self._client = asyncio.run_coroutine_threadsafe(make_client(), self._loop).result()
        self.calls = 0

    def _request(self, tool: Tool, arguments: Mapping[str, Any], history: Sequence[dict[str, Any]]) -> Any:
        from fcbench.llm.client import ChatRequest

        spec = {"name": tool.name, "description": tool.description, "parameters": tool.parameters,
                "returns": tool.returns}
        text = self.prompt.render(tool=json.dumps(spec, ensure_ascii=False, indent=1),
                                  arguments=json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True),
                                  reference_time=self.reference_time or "not given",
                                  history=json.dumps(list(history), ensure_ascii=False) if history else "nothing yet")
        return ChatRequest(messages=[{"role": "user", "content": text}], response_format={"type": "json_object"},
                           prompt_hash=self.prompt.sha256)

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        """A call outside any conversation (no earlier calls in the prompt)."""
        return self.answer(name, arguments, ())

    def session(self) -> "SimulatedSession":
        """A view for one conversation: its calls are answered knowing the earlier ones."""
        return SimulatedSession(self)

    def answer(self, name: str, arguments: Mapping[str, Any], history: Sequence[dict[str, Any]]) -> CallOutcome:
        from fcbench.llm.client import LLMRejection

        tool = self.tools.get(name)
        if tool is None:
            return CallOutcome.failure(ErrorReason.UNKNOWN_TOOL, f"no tool named {name!r}")
        self.calls += 1
        future = asyncio.run_coroutine_threadsafe(
            self._client.complete(self._request(tool, arguments, history), parse_simulated_response), self._loop)
        outcome = future.result()
        if isinstance(outcome, LLMRejection):
            return CallOutcome.failure(ErrorReason.UNEXPECTED_RESPONSE, f"the response simulator gave no usable "
                                       f"answer: {outcome.reason}")
        response = outcome.parsed
        if set(response) == {"error"}:
            return CallOutcome.failure(ErrorReason.TOOL_ERROR, str(response["error"]), response)
        return CallOutcome.success(response)

    def summary(self) -> dict[str, Any]:
        return self._client.summary()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self._client.aclose(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self._cache.close()


class SimulatedSession(Environment):
    """One conversation's view of a `SimulatedEnvironment`: it remembers what it answered."""

    def __init__(self, environment: SimulatedEnvironment) -> None:
        self.environment = environment
        self.history: list[dict[str, Any]] = []

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        outcome = self.environment.answer(name, arguments, self.history)
        if outcome.reason is not ErrorReason.UNKNOWN_TOOL and outcome.reason is not ErrorReason.UNEXPECTED_RESPONSE:
            self.history.append({"name": name, "arguments": dict(arguments), "response": outcome.response})
        return outcome

    def session(self) -> "SimulatedSession":
        return SimulatedSession(self.environment)

    def close(self) -> None:
        """The environment it views is closed by its owner."""
