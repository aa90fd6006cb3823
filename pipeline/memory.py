"""Giving memory back between the runs of one `wenheng run`: a process that runs prepare,
evaluate and publish one after the other would otherwise carry each phase's leftovers to its end."""

from __future__ import annotations

import gc
import sys


def release() -> None:
    """Between two runs: what the last one left goes back to the system before the next starts.

    - its cyclic garbage is collected now; the next run's gc.freeze() would otherwise freeze it,
      uncollectable until run_pipeline returns;
    - the pages glibc's malloc holds free are returned (malloc_trim): the next phases allocate
      much of their memory elsewhere (DuckDB's own allocator, Arrow's pool), where they would not
      be reused;
    - Arrow's pool hands back what it caches (a no-op for the system pool `wenheng run` picks)."""
    import ctypes

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc (macOS, musl): nothing to trim
        pass
    pyarrow = sys.modules.get("pyarrow")   # not imported yet: it holds nothing
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()


def release_converters() -> None:
    """OpenCC's dictionaries, cached while the prepare runs convert texts (s2t's alone hold some
    27 MB), are not kept through evaluate and publish, which convert nothing: reloading one takes
    a few hundredths of a second."""
    script = sys.modules.get("pipeline.script")
    if script is not None and script.converter.cache_info().currsize:
        script.converter.cache_clear()
        release()
