"""The LLM layer of the generation stages: chat completions through the `openai` SDK, cached,
bounded, retried, and accounted.

- Endpoint: `llm.base_url` from pipelines.yaml, else OPENAI_BASE_URL, else OpenAI's. The key comes
  from the environment variable named by `llm.api_key_env` and stays inside the SDK client: errors
  name the variable, never the value, and no cache row, summary or provenance holds it.
- Every answer is written to the `RequestCache` as soon as it arrives, keyed on what shapes it
  (model, messages, tools, sampling parameters, seed, prompt file hash, sample index, attempt), so
  a re-run after a kill re-sends only what had no answer.
- At most `llm.concurrency` requests are in flight (a semaphore held only while sending, not while
  waiting to retry). The SDK's own retries are off (`max_retries=0`): retries are `tenacity`'s,
  driven by `should_retry` (429, 5xx, 408, timeouts, dropped connections, malformed bodies; never
  another 4xx), and each is counted. 429/503 wait for `Retry-After`; the rest back off
  exponentially with jitter; all waits are `asyncio.sleep`.
- A caller's `parse` callable turns a completion into its result or raises `ParseError`; the
  request is then asked again as attempt k (its own cache row and a derived seed, so a seeded
  endpoint does not repeat itself) and, after `parse_attempts`, returned as an `LLMRejection`
  keeping the raw text. Nothing is dropped.
- `llm.mode: batch` sends the same requests through the OpenAI Batch API instead (`batch.py`): same
  cache keys and rows, same parse re-asks and retry budget, cost at batch prices; a request waits
  for the batch that carries it, so the stages do not know which mode runs.
- Requests go out through the SDK's documented `client.post` (auth, headers, error classes as
  `chat.completions.create`) on the SDK's own httpx client, its keep-alive pool sized to
  `llm.concurrency` so every request in flight reuses a connection (bench/llm_throughput.py: 0.95
  of the ideal rate at 50 in flight against a 200 ms endpoint).
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import json
import logging
import os
import random
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

import openai
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from fcbench.config import LLMConfig
from fcbench.errors import UserError
from fcbench.llm.accounting import RunAccounting, Usage
from fcbench.llm.batch import BatchAnswer, BatchLedger, BatchSender
from fcbench.llm.cache import RequestCache, cache_key, canonical_json

log = logging.getLogger(__name__)


# `client.post(path, cast_to=<Response>, body=...)` is the SDK's documented way to send a request
# as given: same auth, headers, timeout and error classes as `chat.completions.create`, without its
# per-call re-typing of the parameters, which cost a quarter of the client's CPU per request (see
# bench/README.md) and brings nothing to a body that is already plain JSON.
def _sdk_http_module() -> Any:
    """The HTTP library the installed SDK is built on (httpx for openai 1.x and 2.x, its fork httpx2
    for 3.x), found from the SDK's own client class, so `Limits` and `Response` are the SDK's."""
    http_client_base = openai.DefaultAsyncHttpxClient.__mro__[1]
    return importlib.import_module(http_client_base.__module__.split(".")[0])


HTTP_LIBRARY = _sdk_http_module()
_RAW_RESPONSE = HTTP_LIBRARY.Response
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# A seeded endpoint gives the same answer to the same request: variants and re-asks need their own
# seed. Sample i, attempt k is sent with seed + i * SEED_STRIDE + k (attempts stay below the stride).
SEED_STRIDE = 1000


class ParseError(ValueError):
    """Raised by a caller's `parse` callable when a completion is unusable (bad JSON, wrong schema)."""


def json_object_answer(completion: Any) -> dict[str, Any]:
    """The JSON object a prompt told the model to answer with (a ```json fence around it is
    tolerated); `ParseError` for anything else, so the request is asked again."""
    text = (completion.content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").strip().removeprefix("json").strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"the answer is not a JSON object ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ParseError("the answer is not a JSON object")
    return value


# ------------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class ChatRequest:
    """One request of a stage. `sample_index` tells apart N variants asked with the same prompt;
    `prompt_hash` is the hash of the prompt file the messages were rendered from."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    response_format: dict[str, Any] | None = None
    sample_index: int = 0
    prompt_hash: str | None = None
    stop: tuple[str, ...] = ()  # stop sequences (a ReAct agent stops before writing the observation)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # as the model wrote it: parsing (and its failure) is the caller's `parse`


@dataclass(frozen=True)
class Completion:
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    body: dict[str, Any]  # the whole completion JSON, as received or replayed

    @property
    def raw_text(self) -> str:
        """What the model wrote: its text, or its tool calls when it wrote none."""
        if self.content:
            return self.content
        if self.tool_calls:
            return json.dumps([{"name": c.name, "arguments": c.arguments} for c in self.tool_calls], ensure_ascii=False)
        return ""


@dataclass(frozen=True)
class LLMReply:
    request: ChatRequest
    completion: Completion
    parsed: Any
    attempts: int  # answers needed until one parsed (1 = the first)
    cached: bool  # the accepted answer was replayed from the cache


@dataclass(frozen=True)
class LLMRejection:
    """A request that ended without a usable answer; `raw_text` is the last thing received."""

    request: ChatRequest
    reason: str
    raw_text: str
    attempts: int


Outcome = LLMReply | LLMRejection
Parse = Callable[[Completion], Any]


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries. `max_retries` extra tries per request for 429/5xx/timeouts/dropped
    connections/malformed bodies; `parse_attempts` answers at most per request."""

    max_retries: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 300.0  # a server asking for longer is waited this long at most
    parse_attempts: int = 3

    def backoff_s(self, retry_number: int, rng: random.Random) -> float:
        """Exponential with "equal jitter": half fixed, half random, so retries spread out."""
        delay = min(self.max_delay_s, self.base_delay_s * 2 ** (retry_number - 1))
        return delay / 2 + rng.uniform(0, delay / 2)

    def retry_after_wait_s(self, retry_after: float, rng: random.Random) -> float:
        """At least what the server asked (plus up to 10% so a burst of 429s does not return at once)."""
        wait = min(retry_after, self.max_retry_after_s)
        return wait * (1 + 0.1 * rng.random())


# ------------------------------------------------------------------------------ pure helpers
def completion_from_body(body: Mapping[str, Any]) -> Completion:
    message = body["choices"][0]["message"]
    calls = [ToolCall(id=str(call.get("id", "")), name=call["function"]["name"],
                      arguments=call["function"].get("arguments") or "")
             for call in message.get("tool_calls") or []]
    return Completion(content=message.get("content"), tool_calls=calls,
                      finish_reason=body["choices"][0].get("finish_reason"), body=dict(body))


def check_completion_text(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """(body, None) for a usable chat completion, else (None, what is wrong with it)."""
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        return None, "body is not valid JSON"
    if not isinstance(body, dict):
        return None, "body is not a JSON object"
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        return None, "no choices in the body"
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        return None, "no message in choices[0]"
    try:
        completion_from_body(body)
    except (KeyError, TypeError, AttributeError):
        return None, "malformed tool_calls in choices[0].message"
    return body, None


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` (OpenAI) or `Retry-After` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


def derived_seed(seed: int | None, sample_index: int, attempt: int) -> int | None:
    return None if seed is None else seed + sample_index * SEED_STRIDE + attempt


def display_url(url: str) -> str:
    """The URL without user:password, query or fragment (`?api-key=...`), fit for messages and
    provenance."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc, query="", fragment=""))


@dataclass(frozen=True)
class Endpoint:
    """Where to send and which variable holds the key. The key itself is not a field of anything
    printable: it is passed once, to the SDK client."""

    base_url: str
    api_key_env: str


def resolve_endpoint(config: LLMConfig, environ: Mapping[str, str]) -> tuple[Endpoint, str]:
    """(endpoint, key). A local endpoint (vLLM, Ollama, the mock server) may run without a key."""
    base_url = config.base_url or environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    key = environ.get(config.api_key_env, "")
    if not key:
        if urlsplit(base_url).hostname not in LOOPBACK_HOSTS:
            raise UserError(f"no API key: set ${config.api_key_env} (the variable named by llm.api_key_env) "
                            f"for the LLM endpoint at {display_url(base_url)}")
        key = "no-key"  # local servers ignore it; the SDK insists on one
    return Endpoint(base_url=base_url, api_key_env=config.api_key_env), key


class _Retryable(Exception):
    """One failed try that may be retried: why, what to wait (None: backoff), the text received."""

    def __init__(self, reason: str, wait_s: float | None = None, raw_text: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait_s = wait_s
        self.raw_text = raw_text


class _NotRetryable(Exception):
    """A status no retry fixes for this one request (400, 413, 422...): it is rejected at once."""

    def __init__(self, reason: str, raw_text: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw_text = raw_text


def should_retry(failure: BaseException) -> bool:
    """Retry what another try may fix: 429/503 (after Retry-After), other 5xx, 408, timeouts,
    dropped connections, malformed bodies. Never another 4xx, a refused key or a user error."""
    return isinstance(failure, _Retryable)


def sdk_http_client(concurrency: int) -> Any:
    """The SDK's httpx client with a keep-alive pool as large as the requests in flight (the
    SDK's default keeps 20 idle connections: with more in flight, the rest reconnect each time)."""
    limits = HTTP_LIBRARY.Limits(max_connections=concurrency, max_keepalive_connections=concurrency,
                                 keepalive_expiry=30.0)
    return openai.DefaultAsyncHttpxClient(limits=limits)


# ------------------------------------------------------------------------ tool-call messages
def tool_call_ids(tool_calls: Sequence[ToolCall], turn: int) -> list[str]:
    """The ids the `tool` messages answer; some servers send none or repeat one, and every tool
    message must point at exactly one call of the assistant message."""
    ids: list[str] = []
    for index, call in enumerate(tool_calls):
        call_id = call.id or f"call_{turn}_{index}"
        ids.append(call_id if call_id not in ids else f"{call_id}_{index}")
    return ids


def assistant_message(completion: Completion, ids: Sequence[str]) -> dict[str, Any]:
    """The model's turn as it goes back into the history (arguments exactly as written)."""
    return {
        "role": "assistant",
        "content": completion.content,
        "tool_calls": [{"id": call_id, "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments}}
                       for call_id, call in zip(ids, completion.tool_calls)],
    }


def tool_message(call_id: str, response: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(response, ensure_ascii=False)}


# ------------------------------------------------------------------------------------ client
class LLMClient:
    """Use as `async with LLMClient(config, cache) as llm: outcomes = await llm.complete_all(requests, parse)`.

    `summary()` is the run's accounting (requests sent, cache hits, retries and rejections by
    reason, tokens, cost from `llm.prices`). One client serves one event loop (one `asyncio.run`):
    its connections and semaphore belong to that loop."""

    def __init__(self, config: LLMConfig, cache: RequestCache | None = None, *,
                 environ: Mapping[str, str] | None = None, retry: RetryPolicy | None = None,
                 timeout_s: float = 120.0, jitter_seed: int | None = None) -> None:
        self.config = config
        self.cache = cache
        self.endpoint, key = resolve_endpoint(config, os.environ if environ is None else environ)
        self._key = key  # only for scrubbing server messages before they reach an error
        self.retry = retry or RetryPolicy(max_retries=config.max_retries)
        self.accounting = RunAccounting(prices=config.prices)
        # jitter only spreads retries in time; it never changes an answer, so it needs no pipeline seed
        self._rng = random.Random(jitter_seed)
        self._semaphore = asyncio.Semaphore(config.concurrency)
        self._reached = False  # any HTTP answer yet: tells "unreachable" from "dropped mid-run"
        self._sdk = openai.AsyncOpenAI(api_key=key, base_url=self.endpoint.base_url, max_retries=0, timeout=timeout_s,
                                       http_client=sdk_http_client(config.concurrency))
        self._batch: BatchSender | None = None
        if config.mode == "batch":
            if cache is None:
                raise UserError("llm.mode: batch needs the request cache (answers arrive later, into the cache)")
            self._ledger = BatchLedger(cache.path)
            self._batch = BatchSender(self._sdk, cache, self._ledger, config.batch, check_completion_text)

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._sdk.close()
        if self._batch is not None:
            self._ledger.close()

    @property
    def parallelism(self) -> int:
        """How many requests a stage should have waiting at once: `llm.concurrency` online; in batch
        mode as many as fit in one batch file (capped: each waiting request is a coroutine), since
        the requests waiting together are what one batch carries."""
        if self._batch is None:
            return self.config.concurrency
        return min(self.config.batch.max_requests_per_file, 5_000)

    def provenance(self) -> dict[str, Any]:
        """What a generated sample records about its model (never the key)."""
        return {"model": self.config.model, "base_url": display_url(self.endpoint.base_url),
                "temperature": self.config.temperature, "seed": self.config.seed, "max_tokens": self.config.max_tokens}

    def summary(self) -> dict[str, Any]:
        batch = ({"mode": "batch", "batches_submitted": self._batch.batches_submitted,
                  "batches_resumed": self._batch.batches_resumed} if self._batch is not None else {"mode": "online"})
        return {"model": self.config.model, "base_url": display_url(self.endpoint.base_url),
                **batch, **self.accounting.as_dict()}

    # ------------------------------------------------------------------------------ batches
    async def run(self, requests: Iterable[ChatRequest], on_outcome: Callable[[int, Outcome], Any],
                  parse: Parse | None = None) -> None:
        """Answer every request, calling `on_outcome(index, outcome)` as each finishes (in completion
        order). Requests are pulled lazily by `concurrency` workers, so memory does not grow with
        the number of requests. A `UserError` (unreachable endpoint, refused key) stops the run."""
        pending = enumerate(requests)

        async def worker() -> None:
            # One shared iterator: next() runs between awaits, so two workers never take the same item.
            for index, request in pending:
                on_outcome(index, await self.complete(request, parse))

        await run_workers(worker, self.parallelism)

    async def complete_all(self, requests: Sequence[ChatRequest], parse: Parse | None = None) -> list[Outcome]:
        """The outcomes in request order."""
        outcomes: list[Outcome | None] = [None] * len(requests)

        def keep(index: int, outcome: Outcome) -> None:
            outcomes[index] = outcome

        await self.run(requests, keep, parse)
        return [outcome for outcome in outcomes if outcome is not None]

    # ------------------------------------------------------------------------------ one request
    async def complete(self, request: ChatRequest, parse: Parse | None = None) -> Outcome:
        """Answer one request; with `parse`, re-ask (as attempt k) until it parses or attempts run out."""
        last_error, last_raw = "", ""
        attempts = max(1, self.retry.parse_attempts) if parse else 1
        for attempt in range(attempts):
            answer = await self._answer(request, attempt)
            if isinstance(answer, LLMRejection):
                return self._reject(answer)
            completion, cached = answer
            if parse is None:
                self.accounting.completed += 1
                return LLMReply(request, completion, None, attempt + 1, cached)
            try:
                parsed = parse(completion)
            except ParseError as exc:
                last_error, last_raw = str(exc), completion.raw_text
                if attempt + 1 < attempts:
                    self.accounting.retries["unparseable output"] += 1
                continue
            self.accounting.completed += 1
            return LLMReply(request, completion, parsed, attempt + 1, cached)
        # None of the answers was usable: forget them, so that a re-run asks again instead of
        # replaying the same unusable answers from the cache forever (the raw text stays in the
        # rejection).
        if self.cache is not None:
            for attempt in range(attempts):
                self.cache.delete(cache_key(canonical_json(self.cache_fields(request, attempt))))
        return self._reject(LLMRejection(request, f"unparseable output after {attempts} attempts: {last_error}",
                                         last_raw, attempts))

    def _reject(self, rejection: LLMRejection) -> LLMRejection:
        self.accounting.rejections[rejection.reason.split(":")[0]] += 1
        return rejection

    def request_payload(self, request: ChatRequest, attempt: int) -> dict[str, Any]:
        """The body sent to the endpoint (the sampling settings come from pipelines.yaml)."""
        payload: dict[str, Any] = {"model": self.config.model, "messages": request.messages,
                                   "temperature": self.config.temperature, "max_tokens": self.config.max_tokens}
        seed = derived_seed(self.config.seed, request.sample_index, attempt)
        if seed is not None:
            payload["seed"] = seed
        if request.tools:
            payload["tools"] = request.tools
        if request.tool_choice is not None:
            payload["tool_choice"] = request.tool_choice
        if request.response_format is not None:
            payload["response_format"] = request.response_format
        if request.stop:
            payload["stop"] = list(request.stop)
        return payload

    def cache_fields(self, request: ChatRequest, attempt: int) -> dict[str, Any]:
        """Everything that shapes the answer, plus which variant and which attempt it is."""
        return {**self.request_payload(request, attempt), "sample_index": request.sample_index,
                "attempt": attempt, "prompt_hash": request.prompt_hash}

    async def _answer(self, request: ChatRequest, attempt: int) -> tuple[Completion, bool] | LLMRejection:
        """(completion, replayed from cache?) for one attempt, sending only on a cache miss."""
        key_text = canonical_json(self.cache_fields(request, attempt))
        key = cache_key(key_text)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                self.accounting.add_cached(Usage.from_completion(cached))
                return completion_from_body(cached), True
        if self._batch is not None:
            return await self._answer_by_batch(key, key_text, request, attempt)
        sent = await self._send_with_retries(self.request_payload(request, attempt), request, attempt)
        if isinstance(sent, LLMRejection):
            return sent
        body, body_text = sent
        if self.cache is not None:
            self.cache.put(key, key_text, body_text)  # now, not at the end: a kill must not lose it
        self.accounting.add_received(Usage.from_completion(body))
        return completion_from_body(body), False

    async def _answer_by_batch(self, key: str, key_text: str, request: ChatRequest,
                               attempt: int) -> tuple[Completion, bool] | LLMRejection:
        """The Batch API's answer (already cached by the sender); a failed item is sent again in a
        later batch while the retry budget lasts, like a failed online request."""
        assert self._batch is not None
        tries = self.retry.max_retries + 1
        for number in range(1, tries + 1):
            outcome = await self._batch.answer(key, key_text, self.request_payload(request, attempt))
            if isinstance(outcome, BatchAnswer):
                self.accounting.add_received(Usage.from_completion(outcome.body), batch=True)
                return completion_from_body(outcome.body), False
            if not outcome.retryable:
                return LLMRejection(request, outcome.reason, self._scrub(outcome.raw_text), attempt + 1)
            if number < tries:
                self.accounting.retries[outcome.reason] += 1
        return LLMRejection(request, f"{outcome.reason} after {tries} tries", self._scrub(outcome.raw_text), attempt + 1)

    async def _send_with_retries(self, payload: dict[str, Any], request: ChatRequest,
                                 attempt: int) -> tuple[dict[str, Any], str] | LLMRejection:
        tries = self.retry.max_retries + 1
        retrying = AsyncRetrying(
            stop=stop_after_attempt(tries),
            retry=retry_if_exception(should_retry),
            wait=self._wait_s,
            before_sleep=self._count_retry,
            sleep=asyncio.sleep,
            reraise=True,
        )
        try:
            async for try_ in retrying:
                with try_:
                    return await self._send_once(payload)
        except _NotRetryable as failure:
            return LLMRejection(request, failure.reason, failure.raw_text, attempt + 1)
        except _Retryable as failure:
            if failure.reason == "connection error" and not self._reached:
                raise UserError(f"cannot reach the LLM endpoint at {display_url(self.endpoint.base_url)}") from None
            return LLMRejection(request, f"{failure.reason} after {tries} tries", failure.raw_text, attempt + 1)
        raise AssertionError("unreachable")  # tenacity returns on success or re-raises the last failure

    def _wait_s(self, state: RetryCallState) -> float:
        """What the server asked for (Retry-After), else exponential backoff with jitter."""
        failure = state.outcome.exception() if state.outcome else None
        if isinstance(failure, _Retryable) and failure.wait_s is not None:
            return failure.wait_s
        return self.retry.backoff_s(state.attempt_number, self._rng)

    def _count_retry(self, state: RetryCallState) -> None:
        failure = state.outcome.exception() if state.outcome else None
        reason = failure.reason if isinstance(failure, _Retryable) else type(failure).__name__
        self.accounting.retries[reason] += 1
        wait = state.next_action.sleep if state.next_action else 0.0
        # warning, not info: a run that is retrying is slower than it looks, and the user should see why
        log.warning("LLM request failed (%s); retry %d/%d in %.2f s", reason, state.attempt_number,
                    self.retry.max_retries, wait)

    async def _send_once(self, payload: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """One HTTP request: the completion body (parsed, and as received), or a failure (`_Retryable`, `_NotRetryable`, or
        `UserError` for what the user must fix)."""
        async with self._semaphore:
            self.accounting.requests_sent += 1
            try:
                response = await self._sdk.post("/chat/completions", cast_to=_RAW_RESPONSE, body=payload)
                text = response.text
            except openai.APIStatusError as exc:
                self._reached = True
                raise self._status_failure(exc) from None
            except openai.APITimeoutError:
                raise _Retryable("timeout") from None
            except openai.APIConnectionError:
                raise _Retryable("connection error") from None
        self._reached = True
        body, problem = check_completion_text(text)
        if body is None:
            raise _Retryable(f"malformed response ({problem})", raw_text=self._scrub(text))
        return body, text

    def _status_failure(self, exc: openai.APIStatusError) -> Exception:
        status = exc.status_code
        body_text = self._scrub(exc.response.text)
        if status == 401:
            return UserError(f"the LLM endpoint refused the API key from ${self.endpoint.api_key_env} (HTTP 401)")
        if status == 404:
            return UserError(f"the LLM endpoint at {display_url(self.endpoint.base_url)} has no model "
                             f"{self.config.model!r} or no chat completions route (HTTP 404)")
        if status in (429, 503):
            retry_after = parse_retry_after({name.lower(): value for name, value in exc.response.headers.items()})
            wait = None if retry_after is None else self.retry.retry_after_wait_s(retry_after, self._rng)
            return _Retryable(f"HTTP {status}", wait, body_text)
        if status >= 500 or status == 408:
            return _Retryable(f"HTTP {status}", raw_text=body_text)
        # Other 4xx (a prompt too long, a bad parameter): this request's problem, not the run's.
        return _NotRetryable(f"HTTP {status}", body_text)

    def _scrub(self, text: str) -> str:
        """Some endpoints quote part of a wrong key back; never let the key travel on in a message."""
        return text.replace(self._key, "***") if self._key else text


async def run_workers(worker: Callable[[], Awaitable[None]], count: int) -> None:
    """Run `count` copies of a worker coroutine (they share one iterator of work); if one fails or
    the run is cancelled, the others are cancelled too before the error goes on."""
    tasks = [asyncio.create_task(worker()) for _ in range(count)]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def run_sync(coroutine: Awaitable[Any]) -> Any:
    """For synchronous callers (the CLI stages): run one coroutine to its end."""
    return asyncio.run(coroutine)  # type: ignore[arg-type]
