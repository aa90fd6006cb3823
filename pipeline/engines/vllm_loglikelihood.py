"""Log-likelihood on offline vLLM (lm-eval's `multiple_choice`): each continuation of a request is
scored after its prompt, the summed log-probability of the continuation's tokens.

Two paths, chosen per request by how its continuations tokenise:
- **one token each** (option letters, most labels): one request per prompt, `max_tokens=1` with
  `logprob_token_ids` = the continuations' ids. vLLM returns the raw log-probability of exactly
  those tokens at the answer position (before any sampling processor), from one forward pass
  that also shares the prefix cache.
- **longer** (option texts): one request per continuation, prompt = context ids + continuation ids
  with `prompt_logprobs=0`, as lm-eval's vLLM backend does; the continuation's positions are
  summed. Context and continuation are tokenised apart and joined, so the boundary never merges
  (lm-eval's `_encode_pair`: trailing spaces of the context move onto the continuation).

A request with `picks` above 1 (several questions, one letter each) is scored round by round, each
round after the letters the model ranked first in the rounds before (its own answers, greedy).

Ctrl-C / SIGTERM past the grace period, a refused prompt or a dead engine: the requests not done
become error rows (never cached), the rest are kept."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pipeline import stopping
from pipeline.engines import Completion, Request, best_option


def score_requests(engine: Any, llm: Any, requests: Sequence[Request],
                   finish: Callable[[int, Completion], None]) -> None:
    """`finish(index, completion)` once per request: its numbers (`Completion.logprobs`, `picks`
    rounds one after another), or an error."""
    tokenizer = llm.get_tokenizer()
    started = time.perf_counter()
    # the rendered chat template already holds <bos>; a plain prompt gets the tokenizer's own
    add_special = not engine.chat_template
    contexts = [engine.prompt_text(llm, req) for req in requests]
    chosen = [""] * len(requests)                   # letters picked in the rounds so far
    numbers: list[list[float]] = [[] for _ in requests]
    tokens_in = [0] * len(requests)
    live = list(range(len(requests)))
    for round_ in range(max((req.picks for req in requests), default=0)):
        batch = [i for i in live if round_ < requests[i].picks]
        jobs = [_job(tokenizer, contexts[i] + chosen[i], requests[i].continuations, add_special) for i in batch]
        results = _run(llm, [prompt for job in jobs for prompt, _ in job.prompts],
                       [params for job in jobs for _, params in job.prompts])
        at = 0
        for i, job in zip(batch, jobs):
            got = job.read(results[at:at + len(job.prompts)])
            at += len(job.prompts)
            if isinstance(got, str):
                finish(i, Completion(text=None, error=got, latency_s=time.perf_counter() - started))
                live.remove(i)
                continue
            numbers[i] += got
            tokens_in[i] += job.tokens
            req = requests[i]
            if round_ + 1 < req.picks:   # the model's own answer leads into the next question
                chosen[i] += req.continuations[best_option(got)]
            else:
                finish(i, Completion(text=None, logprobs=tuple(numbers[i]), finish_reason="scored",
                                     tokens_in=tokens_in[i], tokens_out=0,
                                     latency_s=time.perf_counter() - started))
                live.remove(i)


class _Job:
    """One context's continuations as vLLM prompts, and how to read their outputs back."""

    def __init__(self, prompts: list[tuple[dict[str, Any], Any]], read: Callable[[list[Any]], list[float] | str],
                 tokens: int):
        self.prompts, self.read, self.tokens = prompts, read, tokens


def _job(tokenizer, context: str, continuations: Sequence[str], add_special: bool) -> _Job:
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    spaces = len(context) - len(context.rstrip())
    moved = context[len(context) - spaces:] if spaces else ""
    context_ids = tokenizer(context[:len(context) - spaces], add_special_tokens=add_special).input_ids
    pieces = [tokenizer(moved + c, add_special_tokens=False).input_ids for c in continuations]
    if not context_ids or any(not piece for piece in pieces):
        return _Job([], lambda _: "ValueError: an empty context or continuation cannot be scored", 0)
    if all(len(piece) == 1 for piece in pieces) and len({p[0] for p in pieces}) == len(pieces):
        ids = [piece[0] for piece in pieces]
        params = SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=ids, detokenize=False,
                                output_kind=RequestOutputKind.FINAL_ONLY)

        def read_next(outputs: list[Any]) -> list[float] | str:
            (out,) = outputs
            if isinstance(out, str):
                return out
            at_answer = out.outputs[0].logprobs[0]
            return [float(at_answer[token].logprob) for token in ids]

        return _Job([({"prompt_token_ids": context_ids}, params)], read_next, len(context_ids))
    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False,
                            output_kind=RequestOutputKind.FINAL_ONLY)

    def read_prompts(outputs: list[Any]) -> list[float] | str:
        sums = []
        for out, piece in zip(outputs, pieces):
            if isinstance(out, str):
                return out
            rows = out.prompt_logprobs[len(context_ids):]
            sums.append(sum(float(row[token].logprob) for row, token in zip(rows, piece)))
        return sums

    return _Job([({"prompt_token_ids": context_ids + piece}, params) for piece in pieces], read_prompts,
                len(context_ids) * len(pieces))


def external_id(request_id: str) -> str:
    """enqueue returns the engine's internal id (LLM's counter, then "-" and a random suffix that
    keeps ids unique); outputs and abort_request use the counter part."""
    return request_id.partition("-")[0]


def _run(llm, prompts: list[dict[str, Any]], params: list[Any]) -> list[Any]:
    """Every prompt's final output, in order, or an error text where it failed: all are added to
    the engine at once (its scheduler batches them), then the engine is stepped until done."""
    results: list[Any] = ["RuntimeError: no result"] * len(prompts)
    pending: dict[str, int] = {}
    for index, (prompt, param) in enumerate(zip(prompts, params)):
        try:
            (request_id,) = llm.enqueue([prompt], [param], use_tqdm=False)
        except Exception as exc:  # e.g. longer than max_model_len: this one fails, the rest go on
            results[index] = f"{type(exc).__name__}: {exc}"
            continue
        pending[external_id(request_id)] = index
    engine = llm.llm_engine
    try:
        while pending and engine.has_unfinished_requests():
            if stopping.grace_over():
                engine.abort_request(list(pending))
                for index in pending.values():
                    results[index] = "stopped: the run was interrupted"
                pending.clear()
                break
            for out in engine.step():
                if out.finished and out.request_id in pending:
                    results[pending.pop(out.request_id)] = out
    except Exception as exc:  # the engine died: what finished is kept
        engine.abort_request(list(pending))
        for index in pending.values():
            results[index] = f"{type(exc).__name__}: {exc}"
    return results
