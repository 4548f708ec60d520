"""An LLM judge: one narrow question per item, rendered from a prompt file, answered through the
`LLMClient`, read by a strict parser. Any scorer that needs an LLM verdict uses it the same way.

- Every verdict is cached: the accepted answer is the client's `RequestCache` row (keyed on the
  model, the rendered prompt and the prompt file's hash), so scoring the same file again sends
  nothing. Identical questions in one run are asked once.
- An answer the parser cannot read is asked again once (`JUDGE_PARSE_ATTEMPTS`, as attempt 1 with
  its own cache row); when that one is unreadable too, the item gets a `JudgeError` with the
  reason and the raw text, never a guessed verdict, and both unusable answers are removed from the
  cache so that the next run asks again. (When the re-ask is readable, the unreadable first answer
  stays cached as attempt 0: a re-run then replays the same two rows and gives the same verdict
  without a request.) A request that failed for good (retries spent, a 4xx) is a `JudgeError` too.
- The judge runs at temperature 0 whatever the pipeline's sampling settings: a verdict should not
  depend on a draw.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, Callable, Coroutine, Generic, Mapping, Sequence, TypeVar

from fcbench.config import LLMConfig
from fcbench.errors import JudgeError
from fcbench.llm.cache import canonical_json
from fcbench.llm.client import ChatRequest, Completion, LLMClient, LLMRejection, RetryPolicy, json_object_answer
from fcbench.llm.prompts import PromptFile

JUDGE_PARSE_ATTEMPTS = 2  # the first answer and one re-ask
T = TypeVar("T")


def judge_llm_config(base: LLMConfig | None, model: str | None, base_url: str | None,
                     batch: bool = False) -> LLMConfig | None:
    """The judge's endpoint: a pipeline's llm block (key variable, concurrency, retries, prices,
    online or batch mode) with the model and endpoint given on the command line, as `evaluate`
    resolves them, and `batch` forcing the Batch API as `evaluate --batch` does; None when no
    model is named anywhere (no LLM configured: the caller grades offline)."""
    if base is None and model is None:
        return None
    update: dict[str, Any] = {"temperature": 0.0}
    if model is not None:
        update["model"] = model
    if base_url is not None:
        update["base_url"] = base_url
    if batch:
        update["mode"] = "batch"
    if base is None:
        return LLMConfig(model=model, base_url=base_url, temperature=0.0, mode="batch" if batch else "online")
    return base.model_copy(update=update)


def judge_client(config: LLMConfig, cache: Any, environ: Mapping[str, str] | None = None) -> LLMClient:
    """An `LLMClient` that re-asks an unreadable answer once, no more."""
    return LLMClient(config, cache, environ=environ,
                     retry=RetryPolicy(max_retries=config.max_retries, parse_attempts=JUDGE_PARSE_ATTEMPTS))


class LLMJudge(Generic[T]):
    """One narrow question to an LLM, asked the one way every judge of fcbench asks: render the
    prompt file with the question's `{{name}}` values -> ask through the client (cached, retried)
    -> read the answer (`read` gets its JSON object, or `parse` the whole completion) -> the
    verdict, or a `JudgeError` with the reason (fail closed: never a guessed verdict).

    `await judge.ask_all(questions)`: one verdict per question, in order, the questions asked
    concurrently. A question asked again by this judge (in the same call or a later one) gets the
    verdict it got the first time, judge errors included, without a request: the scorer's replay
    of a run sees what the run saw."""

    def __init__(self, client: LLMClient, prompt: PromptFile, read: Callable[[dict[str, Any]], T] | None = None, *,
                 parse: Callable[[Completion], T] | None = None, json_answer: bool = True) -> None:
        if (read is None) == (parse is None):
            raise ValueError("give the judge `read` (the answer's JSON object) or `parse` (the completion)")
        self.client = client
        self.prompt = prompt
        self._parse = parse or (lambda completion: read(json_object_answer(completion)))  # type: ignore[misc]
        self._verdicts: dict[str, T | JudgeError] = {}
        # False for a published prompt that asks for another answer shape than a JSON object
        # (CallNavi's GPT score: "[[0.85]]"): the request then asks for no JSON response format
        self.json_answer = json_answer

    def request(self, question: Mapping[str, str]) -> ChatRequest:
        response_format = {"type": "json_object"} if self.json_answer else None
        return ChatRequest(messages=[{"role": "user", "content": self.prompt.render(**question)}],
                           response_format=response_format, prompt_hash=self.prompt.sha256)

    async def ask_all(self, questions: Sequence[Mapping[str, str]]) -> list[T | JudgeError]:
        keys = [canonical_json(dict(question)) for question in questions]
        new = [key for key in dict.fromkeys(keys) if key not in self._verdicts]
        outcomes = await self.client.complete_all([self.request(json.loads(key)) for key in new], self._parse)
        for key, outcome in zip(new, outcomes):
            self._verdicts[key] = (JudgeError(outcome.reason, outcome.raw_text) if isinstance(outcome, LLMRejection)
                                   else outcome.parsed)
        return [self._verdicts[key] for key in keys]

    async def ask(self, question: Mapping[str, str]) -> T | JudgeError:
        return (await self.ask_all([question]))[0]


class JudgeSession:
    """Judges asked from synchronous code (a scorer that decides one pair at a time, possibly
    inside another event loop, as `evaluate` runs it): the session owns the one background event
    loop of the LLM layer's judges, the request cache, and a judge client made in that loop.
    `session.ask(judge, question)` blocks the calling thread only. Use as a context manager."""

    def __init__(self, config: LLMConfig, cache_path: Path, *, environ: Mapping[str, str] | None = None) -> None:
        from fcbench.llm.cache import RequestCache

        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="llm-judges", daemon=True)
        self._thread.start()
        self._cache = RequestCache(cache_path)

        async def open_client() -> LLMClient:  # made in the session's loop, which it belongs to
            return judge_client(config, self._cache, environ)

        try:
            self.client: LLMClient = self._run(open_client())
        except BaseException:
            self._stop()
            raise

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def judge(self, prompt_path: Path, read: Callable[[dict[str, Any]], T] | None = None, *,
              parse: Callable[[Completion], T] | None = None) -> LLMJudge[T]:
        return LLMJudge(self.client, load_prompt(prompt_path), read, parse=parse)

    def ask(self, judge: LLMJudge[T], question: Mapping[str, str]) -> T | JudgeError:
        return self._run(judge.ask(question))

    def ask_all(self, judge: LLMJudge[T], questions: Sequence[Mapping[str, str]]) -> list[T | JudgeError]:
        return self._run(judge.ask_all(questions))

    def summary(self) -> dict[str, Any]:
        return self.client.summary()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
        self._cache.close()

    def close(self) -> None:
        try:
            self._run(self.client.aclose())
        finally:
            self._stop()

    def __enter__(self) -> JudgeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load_prompt(path: Path) -> PromptFile:
    return PromptFile.load(path, path.parent)


JUDGE_CACHE_FILE = "judges.sqlite"


def default_judge_cache(build_dir: Path | None, environ: Mapping[str, str]) -> Path:
    """Where verdicts are cached when no file is given: the pipeline's build folder
    (`build/score/judges.sqlite`), else the user's cache folder ($XDG_CACHE_HOME or ~/.cache)."""
    if build_dir is not None:
        return build_dir / "score" / JUDGE_CACHE_FILE
    base = Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "fcbench" / JUDGE_CACHE_FILE
