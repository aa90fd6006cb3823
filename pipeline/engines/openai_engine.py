"""Any OpenAI-compatible server (OpenAI, `vllm serve`, other hosted APIs) behind the Engine interface.

Requests go out concurrently (at most `concurrency` in flight, retries included) through the
official async client, which retries 429, 5xx, timeouts and dropped connections with exponential
backoff and honours Retry-After. A call that still fails becomes an error row, never an exception.

`generate` is plain sync code: it runs its own event loop (in a worker thread when the caller is
already inside one), and calls `on_result` in the caller's thread as each answer arrives."""

from __future__ import annotations

import asyncio
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from pipeline.engines import Completion, Request
from pipeline.engines.vllm_engine import plain_prompt

# A placeholder key for servers that check none (a local `vllm serve`); the client insists on one.
_NO_KEY = "no-key"


class OpenAIEngine:
    def __init__(self, model: str, base_url: str = "https://api.openai.com/v1",
                 api_key_env: str | None = "OPENAI_API_KEY", chat: bool = True, concurrency: int = 8,
                 timeout_s: float = 300.0, max_retries: int = 5,
                 seed: int | None = None, extra_body: dict[str, Any] | None = None):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.model = model                      # the name the server serves the model under
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env          # the variable's name; the key itself is never kept
        self.chat, self.concurrency = chat, concurrency
        self.timeout_s, self.max_retries = timeout_s, max_retries
        self.seed = seed
        self.extra_body = dict(extra_body or {})

    def identity(self) -> dict[str, Any]:
        # Not the key, concurrency, timeout or retries: they change how outputs arrive, not what they are.
        return {"engine": "openai", "base_url": self.base_url, "model": self.model, "chat": self.chat,
                "seed": self.seed, "extra_body": self.extra_body}

    def load(self) -> None:
        self._api_key()  # fail before sending anything when the key is missing

    def _api_key(self) -> str:
        if not self.api_key_env:
            return _NO_KEY
        key = os.environ.get(self.api_key_env)
        if not key:
            raise RuntimeError(f"environment variable {self.api_key_env} (api_key_env of model {self.model!r}) "
                               "is not set; set it, or set api_key_env: null for a server that needs no key")
        return key

    def generate(self, requests: Sequence[Request],
                 on_result: Callable[[int, Completion], None] | None = None) -> list[Completion]:
        results: list[Completion | None] = [None] * len(requests)

        def record(index: int, completion: Completion) -> None:
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
        from openai import AsyncOpenAI

        try:
            client = AsyncOpenAI(api_key=self._api_key(), base_url=self.base_url, timeout=self.timeout_s,
                                 max_retries=self.max_retries, http_client=_http_client())
        except Exception as exc:  # noqa: BLE001 - e.g. the key vanished after load(): error rows, as promised
            for index in range(len(requests)):
                record(index, Completion(text=None, error=_describe(exc)))
            return
        gate = asyncio.Semaphore(self.concurrency)

        async def one(index: int, request: Request) -> None:
            async with gate:
                # Recorded while still holding the slot: at most `concurrency` answers are ever
                # received but not yet stored, so a kill loses at most that many.
                record(index, await self._call(client, request))

        async with client:
            tasks = [asyncio.ensure_future(one(index, request)) for index, request in enumerate(requests)]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _call(self, client, request: Request) -> Completion:
        body: dict[str, Any] = {"model": self.model, "temperature": request.temperature}
        if self.chat:
            # max_completion_tokens: OpenAI's newer models reject max_tokens; vLLM takes both.
            body.update(messages=list(request.messages), max_completion_tokens=request.max_tokens)
        else:
            body.update(prompt=plain_prompt(request.messages), max_tokens=request.max_tokens)
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra_body)
        if request.constrain_to:  # a constrained-choice protocol setting
            body["structured_outputs"] = {"choice": list(request.constrain_to)}  # vLLM >= 0.12 server form
        started = time.perf_counter()
        try:
            # The client's generic `post` with the request's JSON as is, rather than the typed
            # `create`: the same retries, Retry-After, timeouts and errors, at about two thirds of
            # the CPU per call (benchmarks/openai_path.py), which bounds calls/s at high concurrency.
            response = await client.post("/chat/completions" if self.chat else "/completions",
                                         body=body, cast_to=object)
            choice = response["choices"][0]
            text = choice["message"]["content"] if self.chat else choice["text"]
            usage = response.get("usage") or {}
        except Exception as exc:  # noqa: BLE001 - retries exhausted, not retryable, or malformed: an error row
            return Completion(text=None, error=_describe(exc), latency_s=time.perf_counter() - started)
        # latency_s covers the whole call, retry waits included.
        return Completion(text=text or "", finish_reason=choice.get("finish_reason"),
                          tokens_in=usage.get("prompt_tokens"), tokens_out=usage.get("completion_tokens"),
                          latency_s=time.perf_counter() - started)


def _describe(exc: BaseException) -> str:
    """`Type: message`, plus the root cause when it says more (the client reports a refused
    connection as a bare "Connection error." or "Request timed out.")."""
    text = f"{type(exc).__name__}: {exc}"
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    if root is not exc and str(root) and str(root) not in text:
        text += f" ({type(root).__name__}: {root})"
    return text


def _http_client():
    """The client's aiohttp transport when aiohttp is installed (the openai[aiohttp] extra): it costs
    about 40% less CPU per call than the default httpx transport under concurrency (see
    benchmarks/openai_path.py). None means the client's default."""
    from openai import DefaultAioHttpClient

    try:
        return DefaultAioHttpClient()
    except RuntimeError:  # aiohttp missing
        return None
