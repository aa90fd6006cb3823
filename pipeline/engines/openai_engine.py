"""Any OpenAI-compatible server (OpenAI, `vllm serve`, other hosted APIs) behind the Engine interface.

Requests go out concurrently (at most `concurrency` in flight, retries included) as plain JSON
POSTs over one aiohttp session. The official `openai` client's retry policy is reproduced as is
(`should_retry`, `retry_delay`, `retry_after_s` below, each citing the client code it copies):
429, 408, 409 and 5xx, timeouts and dropped connections are retried up to `max_retries` times with
exponential backoff and jitter, honouring Retry-After; everything else fails at once. A call that
still fails becomes an error row (the client's exception name, the status and the server's
message), never an exception. tests/integration/engines/test_openai_engine.py holds the policy to the installed
client's own code.

Why not the client itself: its generic request path costs about 0.8 ms of CPU per call (option
models, header building, an httpx request wrapped around the aiohttp one, response wrappers), which
capped wenheng at ~0.7 of concurrency/latency and at a third of lm-evaluation-harness's calls/s on
the same endpoint (perf/openai_path.py); this path costs about a quarter of that.

`generate` is plain sync code: it runs its own event loop (in a worker thread when the caller is
already inside one), and calls `on_result` in the caller's thread as each answer arrives."""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import queue
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipeline import stopping
from pipeline.engines import Completion, Request, best_option
from pipeline.engines.echoed import continuation_logprobs
from pipeline.engines.identity import cache_identity
from pipeline.engines.vllm_engine import plain_prompt
from pipeline.redact import redact, watch_env

# A placeholder key for servers that check none (a local `vllm serve`), sent as the client sends it.
_NO_KEY = "no-key"

# The official client's retry constants (openai/_constants.py, the same from openai 1.x to 3.x):
INITIAL_RETRY_DELAY = 0.5          # seconds before the first retry, doubled for each one after
MAX_RETRY_DELAY = 8.0              # the backoff's cap
MAX_RETRY_AFTER_DELAY = 2 * 60     # a server's Retry-After is honoured up to this; beyond it, no retry

# The client's exception names for failed statuses (OpenAI._make_status_error in openai/_client.py).
_STATUS_ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                  404: "NotFoundError", 409: "ConflictError", 422: "UnprocessableEntityError",
                  429: "RateLimitError"}


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """The server's requested wait in seconds, or None: `retry-after-ms` first, then `retry-after`
    as seconds (floats allowed) or as an HTTP date. BaseClient._parse_retry_after_header."""
    if headers is None:
        return None
    for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in ("inf", "+inf", "infinity", "+infinity"):
            return MAX_RETRY_AFTER_DELAY + 1   # an overflowing number: too long, not malformed
        return delay / divisor
    try:
        date = email.utils.parsedate_tz(headers.get("retry-after"))
        if date is None:
            return None
        moment = email.utils.mktime_tz(date)
    except (TypeError, ValueError, OverflowError, OSError):
        return None
    return float(moment - time.time())


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a failed status is worth another try. BaseClient._should_retry: never when the
    server asks for more than MAX_RETRY_AFTER_DELAY; then `x-should-retry: true|false` decides;
    else 408 (request timeout), 409 (lock timeout), 429 (rate limit) and every 5xx."""
    wait = retry_after_s(headers)
    if wait is not None and math.isfinite(wait) and wait > MAX_RETRY_AFTER_DELAY:
        return False
    verdict = headers.get("x-should-retry")
    if verdict == "true":
        return True
    if verdict == "false":
        return False
    return status in (408, 409, 429) or status >= 500


def retry_delay(retries_taken: int, headers: Mapping[str, str] | None = None) -> float:
    """Seconds to wait before retry number `retries_taken + 1`. BaseClient._calculate_retry_timeout:
    the server's Retry-After when it is in (0, MAX_RETRY_AFTER_DELAY]; else
    min(INITIAL_RETRY_DELAY * 2 ** retries_taken, MAX_RETRY_DELAY), less a random 0-25%."""
    wait = retry_after_s(headers)
    if wait is not None and math.isfinite(wait) and 0 < wait <= MAX_RETRY_AFTER_DELAY:
        return wait
    backoff = min(INITIAL_RETRY_DELAY * pow(2.0, min(retries_taken, 1000)), MAX_RETRY_DELAY)
    return max(backoff * (1 - 0.25 * random.random()), 0.0)


def status_error(status: int, body: bytes) -> str:
    """The error row for a failed status: the client's exception name and message
    (BaseClient._make_status_error_from_response: "Error code: N - <the error's message>"); a
    body that is not JSON (a proxy's HTML page) is quoted, cut to 200 characters."""
    name = _STATUS_ERRORS.get(status) or ("InternalServerError" if status >= 500 else "APIStatusError")
    text = redact(body.decode("utf-8", "replace").strip())  # before the cut, which could halve a key
    message = f"Error code: {status}"
    try:
        payload = json.loads(text)
    except ValueError:
        if text:
            message += f" - {text[:200]}"
    else:
        error = payload.get("error", payload) if isinstance(payload, Mapping) else None
        detail = error.get("message") if isinstance(error, Mapping) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
    return f"{name}: {message}"


class OpenAIEngine:
    """Cache identity: what the answers depend on, not where they come from. The served model name,
    `revision`, chat vs completions, the seed and `extra_body` are in it; `base_url`, the key,
    `concurrency`, `timeout_s` and `max_retries` are not, so moving an endpoint to another host or
    port, or tuning its transport, keeps every cached answer.

    The flip side: two endpoints that serve different weights under the same name (`vllm serve
    --served-model-name`, a provider's alias that moves to a new snapshot) would share answers.
    That is what `revision` is for: any string that names the weights behind the endpoint (a hub
    commit, a checkpoint tag, a dated snapshot); change it when the weights change, and the
    cache asks again. A fully pinned provider name (`gpt-4o-2024-08-06`) needs none."""

    KIND = "openai"
    TRANSPORT = ("base_url", "api_key_env", "concurrency", "timeout_s", "max_retries")
    LEFT_OUT_AT = {"revision": None}   # added after answers were cached: their keys stay valid

    def __init__(self, model: str, base_url: str = "https://api.openai.com/v1",
                 api_key_env: str | None = "OPENAI_API_KEY", chat: bool = True, concurrency: int = 8,
                 timeout_s: float = 300.0, max_retries: int = 5,
                 seed: int | None = None, extra_body: dict[str, Any] | None = None,
                 revision: str | None = None):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        self.model = model                      # the name the server serves the model under
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env          # the variable's name; the key itself is never kept
        watch_env(api_key_env)                  # its value is masked in every error text (pipeline.redact)
        self.chat, self.concurrency = chat, concurrency
        # A deadline per attempt: from waiting for a pooled connection to the last byte of the
        # answer, so a server that trickles bytes (or stalls mid-body) cannot hold a call forever;
        # each retry gets a deadline of its own. The whole call (retries and their waits included)
        # has no overall limit. The official client's timeout is per phase and per read instead,
        # which a trickle of one byte every few seconds never trips.
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.seed = seed
        self.extra_body = dict(extra_body or {})
        if revision is not None and not isinstance(revision, str | int):
            raise ValueError(f"revision must be a string naming the served weights, got {revision!r}")
        self.revision = None if revision is None else str(revision)

    def identity(self) -> dict[str, Any]:
        """The constructor's parameters but TRANSPORT (pipeline/engines/identity.py)."""
        return cache_identity(self)

    def load(self) -> None:
        self._api_key()  # fail before sending anything when the key is missing

    def loglikelihood_refusal(self) -> str | None:
        """Why this endpoint cannot score continuations, or None: only a completions endpoint
        echoes the prompt's log-probabilities (`echo` + `logprobs`, as `vllm serve` does)."""
        if self.chat:
            return ("a chat endpoint returns no log-probabilities of a prompt: use a completions endpoint "
                    "(chat: false, e.g. vllm serve's /v1/completions), or ask this model by generation")
        return None

    def _api_key(self) -> str:
        if not self.api_key_env:
            return _NO_KEY
        key = os.environ.get(self.api_key_env)
        if not key:
            raise RuntimeError(f"environment variable {self.api_key_env} (api_key_env of model {self.model!r}) "
                               "is not set; set it, or set api_key_env: null for a server that needs no key")
        return key

    def body(self, request: Request) -> dict[str, Any]:
        """The JSON sent for one request."""
        body: dict[str, Any] = {"model": self.model, "temperature": request.temperature}
        if self.chat:
            body["messages"] = list(request.messages)
            # max_completion_tokens: OpenAI's newer models reject max_tokens; vLLM takes both. No
            # budget: left out, which both read as "up to the context".
            if request.max_tokens is not None:
                body["max_completion_tokens"] = request.max_tokens
        else:
            # Completions default to 16 tokens when max_tokens is left out (OpenAI and vLLM alike):
            # no budget is an explicit null, which vLLM reads as "up to the context".
            body.update(prompt=plain_prompt(request.messages), max_tokens=request.max_tokens)
        if request.stop:   # a base model's answer ends at its setting's stop sequences
            body["stop"] = list(request.stop)
        if self.seed is not None:
            body["seed"] = self.seed
        if request.seed is not None:  # the request's own (the judge's repeats at temperature > 0)
            body["seed"] = request.seed
        body.update(self.extra_body)
        if request.constrain_to:  # a constrained-choice protocol setting
            body["structured_outputs"] = {"choice": list(request.constrain_to)}  # vLLM >= 0.12 server form
        elif request.json_schema is not None:  # JSON under a schema (the judge's verdicts)
            if self.chat:
                body["response_format"] = {"type": "json_schema",
                                           "json_schema": {"name": "verdict", "schema": dict(request.json_schema)}}
            else:  # completions have no response_format: vLLM's own form
                body["structured_outputs"] = {"json": dict(request.json_schema)}
        return body

    def generate(self, requests: Sequence[Request],
                 on_result: Callable[[int, Completion], None] | None = None) -> list[Completion]:
        results: list[Completion | None] = [None] * len(requests)

        def record(index: int, completion: Completion) -> None:
            if completion.error:  # a server may echo the request's headers, the key among them
                completion.error = redact(completion.error)
            results[index] = completion
            if on_result:
                on_result(index, completion)

        if requests:
            try:
                asyncio.get_running_loop()
            except RuntimeError:  # the usual case (a Dagster asset, a script): run the loop right here
                asyncio.run(self._send_all(requests, record))
            else:
                self._run_beside_running_loop(requests, record)
        return [completion or Completion(text=None, error="RuntimeError: no result") for completion in results]

    def _run_beside_running_loop(self, requests: Sequence[Request], record) -> None:
        """Called from inside a running loop (a notebook): the calls run on a private loop in a
        worker thread, and results come back through a queue so that `on_result` still runs in
        the caller's thread (a SQLite connection must stay in the thread that made it)."""
        arrivals: queue.SimpleQueue = queue.SimpleQueue()
        loop = asyncio.new_event_loop()
        sending = loop.create_task(self._send_all(requests, lambda *arrival: arrivals.put(arrival)))
        sending.add_done_callback(lambda _: arrivals.put(None))

        def work() -> None:
            try:
                loop.run_until_complete(sending)
            except BaseException:  # noqa: BLE001, S110 - surfaced below from `sending`
                pass
            loop.run_until_complete(loop.shutdown_asyncgens())

        worker = threading.Thread(target=work, name="openai-engine", daemon=True)
        worker.start()
        try:
            while (arrival := arrivals.get()) is not None:
                record(*arrival)
        finally:
            loop.call_soon_threadsafe(sending.cancel)  # a no-op when all went through; else stop sending
            worker.join()
            loop.close()
        if not sending.cancelled() and sending.exception() is not None:
            raise sending.exception()

    async def _send_all(self, requests: Sequence[Request], record) -> None:
        """Every request gets exactly one `record(index, completion)`; if `record` raises, the
        remaining calls are cancelled and the exception propagates."""
        import aiohttp

        try:
            session = self._session(aiohttp)
        except Exception as exc:  # noqa: BLE001 - e.g. the key vanished after load(): error rows, as promised
            for index in range(len(requests)):
                record(index, Completion(text=None, error=_describe(exc)))
            return
        url = self.base_url + ("/chat/completions" if self.chat else "/completions")
        pending = iter(enumerate(requests))

        async def worker() -> None:
            # `concurrency` workers take the requests in order: a slot is held from the first
            # attempt to the answer being recorded, retry waits included, so at most `concurrency`
            # answers are ever received but not yet stored (a kill loses at most that many).
            # After a stop request (pipeline.stopping) no new request goes out; unsent ones get no
            # result (generate fills them in as errors, which are never cached).
            for index, request in pending:
                if stopping.stop_requested():
                    return
                record(index, await self._call(session, url, request))

        async with session:
            workers = [asyncio.ensure_future(worker()) for _ in range(min(self.concurrency, len(requests)))]
            watchdog = asyncio.ensure_future(_cancel_after_grace(workers))
            try:
                await asyncio.gather(*workers)
            except BaseException as exc:
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                if not (isinstance(exc, asyncio.CancelledError) and watchdog.done() and not watchdog.cancelled()):
                    raise
            finally:
                watchdog.cancel()

    def _session(self, aiohttp):
        # aiohttp's total: one timer per request, from waiting for a pooled connection to the end
        # of the body (every read of the response runs under it); none per read. Deadlines of 5 s
        # and more are rounded up to a whole second of the loop's clock (ClientTimeout.ceil_threshold).
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        headers = {"Authorization": f"Bearer {self._api_key()}", "Content-Type": "application/json",
                   "Accept": "application/json", "User-Agent": "wenheng"}
        connector = aiohttp.TCPConnector(limit=self.concurrency, ssl=_ssl_context(self.base_url))
        return aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers,
                                     cookie_jar=aiohttp.DummyCookieJar())

    async def _call(self, session, url: str, request: Request) -> Completion:
        """One request to its answer or its error row."""
        if request.continuations:
            return await self._score(session, request)
        started = time.perf_counter()
        raw = await self._post(session, url, self.body(request), started)
        if isinstance(raw, Completion):
            return raw
        # latency_s covers the whole call, retry waits included.
        try:
            answer = json.loads(raw)
            choice = answer["choices"][0]
            text = choice["message"]["content"] if self.chat else choice["text"]
            usage = answer.get("usage") or {}
            return Completion(text=text or "", finish_reason=choice.get("finish_reason"),
                              tokens_in=usage.get("prompt_tokens"), tokens_out=usage.get("completion_tokens"),
                              latency_s=time.perf_counter() - started)
        except Exception as exc:  # noqa: BLE001 - a 2xx that is not a completion: an error row
            return Completion(text=None, error=f"APIResponseValidationError: {_describe(exc)}",
                              latency_s=time.perf_counter() - started)

    def score_body(self, context: str, continuations: Sequence[str]) -> dict[str, Any]:
        """The JSON that scores `continuations` after `context`: the joined texts echoed with their
        tokens' log-probabilities and nothing generated (`vllm serve`'s /v1/completions)."""
        body: dict[str, Any] = {"model": self.model, "prompt": [context + c for c in continuations],
                                "max_tokens": 0, "echo": True, "logprobs": 0, "temperature": 0.0}
        if self.seed is not None:
            body["seed"] = self.seed
        return body | self.extra_body

    async def _score(self, session, request: Request) -> Completion:
        """A log-likelihood request: one call per question (`picks`), each continuation one prompt
        of it; question k is asked after the letters ranked first for the ones before it."""
        started = time.perf_counter()
        url = self.base_url + "/completions"
        context, chosen, numbers, tokens = plain_prompt(request.messages), "", [], 0
        for round_ in range(request.picks):
            raw = await self._post(session, url, self.score_body(context + chosen, request.continuations), started)
            if isinstance(raw, Completion):
                return raw
            try:
                answer = json.loads(raw)
                values = continuation_logprobs(answer, len(context + chosen), len(request.continuations))
            except Exception as exc:  # noqa: BLE001 - no log-probabilities where they should be
                return Completion(text=None, error=f"APIResponseValidationError: no prompt log-probabilities "
                                  f"({_describe(exc)}); the endpoint must support echo with logprobs",
                                  latency_s=time.perf_counter() - started)
            numbers += values
            tokens += (answer.get("usage") or {}).get("prompt_tokens") or 0
            if round_ + 1 < request.picks:
                chosen += request.continuations[best_option(values)]
        return Completion(text=None, logprobs=tuple(numbers), finish_reason="scored", tokens_in=tokens or None,
                          tokens_out=0, latency_s=time.perf_counter() - started)

    async def _post(self, session, url: str, payload: dict[str, Any], started: float) -> bytes | Completion:
        """One POST to its 2xx body or its error row, retrying as the official client does
        (AsyncAPIClient.request in openai/_base_client.py)."""
        import aiohttp

        data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        retries_taken = 0
        while True:
            if retries_taken and stopping.stop_requested():  # no retry goes out after a stop request
                return Completion(text=None, error="Stopped: not retried after a stop request",
                                  latency_s=time.perf_counter() - started)
            try:  # one attempt, under the session's total timeout (`_session`)
                async with session.post(url, data=data) as response:
                    status, headers = response.status, response.headers
                    raw = await response.read()
            except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, ConnectionError) as exc:
                # Timeouts and transport failures: retried, with backoff (no Retry-After to honour).
                if retries_taken < self.max_retries and not stopping.stop_requested():
                    await asyncio.sleep(retry_delay(retries_taken))
                    retries_taken += 1
                    continue
                kind = ("APITimeoutError: Request timed out." if isinstance(exc, TimeoutError)
                        else "APIConnectionError: Connection error.")
                return Completion(text=None, error=f"{kind} ({_describe(exc)})",
                                  latency_s=time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001 - e.g. a malformed response: not retried, an error row
                return Completion(text=None, error=_describe(exc), latency_s=time.perf_counter() - started)
            if 200 <= status < 300:
                break
            if retries_taken < self.max_retries and should_retry(status, headers) and not stopping.stop_requested():
                await asyncio.sleep(retry_delay(retries_taken, headers))
                retries_taken += 1
                continue
            return Completion(text=None, error=status_error(status, raw), latency_s=time.perf_counter() - started)
        return raw


async def _cancel_after_grace(workers: list[asyncio.Future]) -> None:
    """After a stop request, the calls in flight get `stopping.grace_s()` to be answered (and
    stored); then the rest are cancelled."""
    while not stopping.grace_over():
        if all(task.done() for task in workers):
            return
        await asyncio.sleep(0.05)
    for task in workers:
        task.cancel()


def _describe(exc: BaseException) -> str:
    """`Type: message`, plus the root cause when it says more. Only str() of exceptions: the
    repr of some (aiohttp's request info) would show the request's headers, the key among them."""
    text = f"{type(exc).__name__}: {exc}"
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    if root is not exc and str(root) and str(root) not in text:
        text += f" ({type(root).__name__}: {root})"
    return text


def _ssl_context(base_url: str):
    """For https: verified against certifi's roots when installed (as the official client does),
    else the system's. None (aiohttp's default) for plain http."""
    if not base_url.startswith("https:"):
        return None
    import ssl

    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())
