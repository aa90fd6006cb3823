"""A loopback OpenAI-compatible server for tests and benchmarks.

It answers /v1/chat/completions, /v1/completions and /v1/models deterministically (the answer is
a function of the prompt), can add latency and inject faults (429 with Retry-After or
retry-after-ms, 500, 400, a hang past the client's timeout, a 200 whose body trickles in a byte at
a time, a connection reset, a 401 or a plain-text 502 echoing the request's headers, key included,
as a careless proxy does), and counts what arrived: attempts and successful completions per
prompt, requests in flight.

A success is counted only when the client is still connected as the answer is written, so a
client that timed out, or was killed, never shows up as served.

    with OpenAIServer(latency_s=0.05, faults=[Fault("429", prompt="p1", retry_after=1)]) as server:
        ... OpenAIEngine(model=server.model, base_url=server.base_url, api_key_env=None) ...
        assert server.successes["p1"] == 1

Run as a script (`python -m pipeline.testing.openai_server --latency 0.05`) it serves in its own process and
prints `READY <port>`; GET /stats then returns the counters."""

from __future__ import annotations

import argparse
import json
import select
import socket
import struct
import sys
import threading
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

KINDS = ("429", "500", "400", "timeout", "trickle", "reset", "echo", "echo-text")


@dataclass(frozen=True)
class Fault:
    """Fail matching attempts: those of `prompt` (any prompt when None), and of the given
    1-based request numbers (counted over all prompts) when `requests` is set; only the first
    `times` attempts of each prompt, or every attempt when `times` is None."""

    kind: str
    prompt: str | None = None
    times: int | None = 1
    requests: frozenset[int] | None = None
    retry_after: float | None = None   # 429: the Retry-After header, in seconds
    retry_after_ms: float | None = None  # 429: the retry-after-ms header
    hang_s: float = 5.0                # timeout: how long to hold the request before dropping it;
    #                                    trickle: how long to keep trickling before dropping it
    trickle_s: float = 0.1             # trickle: seconds between the bytes of the body

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"fault kind must be one of {KINDS}, got {self.kind!r}")

    def matches(self, prompt: str, attempt: int, number: int) -> bool:
        return ((self.prompt is None or self.prompt == prompt)
                and (self.requests is None or number in self.requests)
                and (self.times is None or attempt <= self.times))


def prompt_of(body: dict) -> str:
    """The counters' key: a chat's turns joined the way the engine joins them for /v1/completions
    (several prompts in one call: joined by U+241E)."""
    if "messages" in body:
        return "\n\n".join(m["content"] for m in body["messages"])
    prompt = body["prompt"]
    return "\u241e".join(prompt) if isinstance(prompt, list) else prompt


def char_logprob(before: str, char: str) -> float:
    """The fake model's log-probability of `char` after `before` (one token per character): a
    function of the character and the one before it, in [-10, -0.01]."""
    return -0.01 - (zlib.crc32((before[-1:] + char).encode()) % 1000) / 100


def echoed(prompt: str) -> dict:
    """OpenAI's completions `logprobs` object for an echoed prompt (`echo` with `max_tokens: 0`):
    one token per character, the first without a log-probability, as servers give it."""
    return {"tokens": list(prompt), "text_offset": list(range(len(prompt))), "top_logprobs": None,
            "token_logprobs": [None, *(char_logprob(prompt[:i], prompt[i]) for i in range(1, len(prompt)))]}


def answer(prompt: str, max_tokens: int, choices: list[str] | None = None) -> tuple[str, str]:
    """(text, finish_reason); one 'token' per character."""
    if choices:
        return choices[zlib.crc32(prompt.encode()) % len(choices)], "stop"
    text = "echo:" + prompt
    return (text[:max_tokens], "length") if len(text) > max_tokens else (text, "stop")


def cut_at_stop(text: str, finish: str, stop: list[str] | str | None) -> tuple[str, str]:
    """A server's `stop`: the text before the first stop sequence, finish_reason "stop"."""
    stop = [stop] if isinstance(stop, str) else stop or []
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[:min(cuts)], "stop") if cuts else (text, finish)


class OpenAIServer:
    def __init__(self, latency_s: float = 0.0, faults: list[Fault] = (), model: str = "fake-model",
                 port: int = 0, hold_after: int | None = None):
        self.latency_s, self.faults, self.model = latency_s, list(faults), model
        self.hold_after = hold_after    # answer this many requests, then hold the rest until release()
        self._released = threading.Event()
        self._lock = threading.Lock()
        self.attempts: Counter[str] = Counter()
        self.successes: Counter[str] = Counter()
        self.abandoned: Counter[str] = Counter()   # answer ready but the client had gone
        self.attempt_times: dict[str, list[float]] = defaultdict(list)
        self.arrivals: list[str] = []              # the prompt of each request, in arrival order
        self.last_body: dict[str, dict] = {}
        self.authorization: set[str] = set()
        self.requests_total = 0
        self.admitted = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.app = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="openai-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def release(self) -> None:
        self._released.set()

    def reset_counters(self) -> None:
        with self._lock:
            for counter in (self.attempts, self.successes, self.abandoned):
                counter.clear()
            self.attempt_times.clear()
            self.arrivals.clear()
            self.requests_total = self.max_in_flight = 0

    def stats(self) -> dict:
        with self._lock:
            return {"requests": self.requests_total, "attempted_prompts": len(self.attempts),
                    "successes": sum(self.successes.values()), "abandoned": sum(self.abandoned.values()),
                    "max_in_flight": self.max_in_flight, "in_flight": self.in_flight}

    # -- called from handler threads ------------------------------------------------------------

    def _begin(self, prompt: str, body: dict, authorization: str | None) -> tuple[Fault | None, bool]:
        with self._lock:
            self.requests_total += 1
            self.attempts[prompt] += 1
            self.attempt_times[prompt].append(time.monotonic())
            self.arrivals.append(prompt)
            self.last_body[prompt] = body
            if authorization:
                self.authorization.add(authorization)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            fault = next((f for f in self.faults if f.matches(prompt, self.attempts[prompt], self.requests_total)),
                         None)
            hold = False
            if fault is None and self.hold_after is not None:
                hold = self.admitted >= self.hold_after
                self.admitted += not hold
            return fault, hold

    def _end(self, prompt: str, outcome: str | None) -> None:
        with self._lock:
            self.in_flight -= 1
            if outcome == "success":
                self.successes[prompt] += 1
            elif outcome == "abandoned":
                self.abandoned[prompt] += 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256   # many clients connect at once; the default backlog of 5 drops SYNs
    allow_reuse_address = True
    app: OpenAIServer

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):   # clients that vanish are part of the tests
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as the client expects
    disable_nagle_algorithm = True  # headers and body go out in two writes; Nagle + delayed ACK adds ~40 ms
    server: _Server

    def log_message(self, *args) -> None:
        pass

    def _json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._json(status, {"error": {"message": message, "type": "fake_error", "code": status}}, headers)

    def do_GET(self) -> None:
        app = self.server.app
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": app.model, "object": "model", "owned_by": "test"}]})
        elif self.path == "/stats":
            self._json(200, app.stats())
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        app = self.server.app
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path not in ("/v1/chat/completions", "/v1/completions"):
            return self._error(404, f"no route {self.path}")
        if body.get("model") != app.model:
            return self._error(404, f"model {body.get('model')!r} does not exist")
        prompt = prompt_of(body)
        fault, hold = app._begin(prompt, body, self.headers.get("Authorization"))
        outcome = None
        try:
            if hold:
                app._released.wait()
            if fault is None:
                outcome = self._answer(app, prompt, body)
            else:
                self._fail(fault, prompt, body)
        finally:
            app._end(prompt, outcome)

    def _answer(self, app: OpenAIServer, prompt: str, body: dict) -> str:
        if app.latency_s:
            time.sleep(app.latency_s)
        if self._client_gone():
            self.close_connection = True
            return "abandoned"
        try:
            self._json(200, self._payload(app, prompt, body))
        except OSError:
            self.close_connection = True
            return "abandoned"
        return "success"

    def _payload(self, app: OpenAIServer, prompt: str, body: dict) -> dict:
        if self.path == "/v1/completions" and body.get("echo") and body.get("max_tokens") == 0:
            return self._scored(app, body)
        choices = (body.get("structured_outputs") or {}).get("choice")
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        text, finish = cut_at_stop(*answer(prompt, max_tokens, choices), body.get("stop"))
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(text), "total_tokens": len(prompt) + len(text)}
        number = app.requests_total
        if self.path == "/v1/chat/completions":
            payload = {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": int(time.time()),
                       "model": app.model, "usage": usage,
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": finish}]}
        else:
            payload = {"id": f"cmpl-{number}", "object": "text_completion", "created": int(time.time()),
                       "model": app.model, "usage": usage,
                       "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}]}
        return payload

    def _scored(self, app: OpenAIServer, body: dict) -> dict:
        """Prompts echoed with their log-probabilities, nothing generated (log-likelihood)."""
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        used = sum(map(len, prompts))
        return {"id": f"cmpl-{app.requests_total}", "object": "text_completion", "created": int(time.time()),
                "model": app.model, "usage": {"prompt_tokens": used, "completion_tokens": 0, "total_tokens": used},
                "choices": [{"index": i, "text": p, "finish_reason": "length",
                             "logprobs": echoed(p) if body.get("logprobs") is not None else None}
                            for i, p in enumerate(prompts)]}

    def _fail(self, fault: Fault, prompt: str, body: dict) -> None:
        if fault.kind == "429":
            headers = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            if fault.retry_after_ms is not None:
                headers["retry-after-ms"] = f"{fault.retry_after_ms:g}"
            self._error(429, "rate limited", headers)
        elif fault.kind == "500":
            self._error(500, "injected server error")
        elif fault.kind == "400":
            self._error(400, "injected bad request")
        elif fault.kind == "echo":  # a 401 whose JSON message quotes the request's headers, key included
            self._error(401, f"invalid credentials; request headers: {json.dumps(dict(self.headers.items()))}")
        elif fault.kind == "echo-text":  # a proxy's plain-text 502 listing the request's headers
            data = ("Bad gateway. Request headers:\n" + str(self.headers)).encode()
            self.send_response(502)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif fault.kind == "timeout":
            time.sleep(fault.hang_s)   # past the client's timeout; then drop the connection unanswered
            self.close_connection = True
        elif fault.kind == "trickle":
            self._trickle(fault, json.dumps(self._payload(self.server.app, prompt, body)).encode())
        else:  # reset: linger 0 turns close() into a TCP RST in the middle of the request
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True

    def _trickle(self, fault: Fault, data: bytes) -> None:
        """A 200 streamed the way an SSE stream is (chunked), one byte every `trickle_s` seconds:
        data keeps coming, so only a deadline on the whole response ends it. After `hang_s` (or
        the client leaving) the connection is dropped mid-body; never counted as a success."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        deadline = time.monotonic() + fault.hang_s
        try:
            for byte in data:
                if time.monotonic() >= deadline:
                    return
                self.wfile.write(b"1\r\n" + bytes([byte]) + b"\r\n")
                self.wfile.flush()
                time.sleep(fault.trickle_s)
        except OSError:   # the client gave up
            return
        if time.monotonic() < deadline:   # the whole body went out: hold the end back until hang_s
            time.sleep(deadline - time.monotonic())

    def _client_gone(self) -> bool:
        # The client sends nothing while it waits for an answer, so a readable socket means EOF or reset.
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument("--model", default="fake-model")
    args = parser.parse_args()
    server = OpenAIServer(latency_s=args.latency, model=args.model, port=args.port).start()
    print(f"READY {server.port}", flush=True)
    try:
        sys.stdin.read()   # serve until the parent closes our stdin (or kills us)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
