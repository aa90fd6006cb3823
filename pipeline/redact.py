"""Keys out of error text: every error message an engine or the judge stores (responses.error,
scores.reason, the lake, logs) goes through `redact` first.

Two nets: by value (the current value of every environment variable named as a model's
`api_key_env`, registered by `watch_env` when models are loaded or an engine is built) and by
shape (`Authorization: Bearer ...`, `api-key: ...`, `x-api-key: ...` as a server may echo its
request headers, in header, JSON or repr form)."""

from __future__ import annotations

import os
import re

MASK = "[REDACTED]"
_MIN_SECRET = 4   # shorter values would mask ordinary words; no real key is that short

_ENV_NAMES: set[str] = {"OPENAI_API_KEY"}

# `Authorization: Bearer x`, `"authorization": "Bearer x"`, `'Authorization': 'x'`, `api-key=x` ...
_HEADER = re.compile(
    r"""(?P<head>\b(?:proxy-)?authorization|\b(?:x-)?api[-_]key)(?P<sep>\\?["']?\s*[:=]\s*\\?["']?)"""
    r"""(?:(?P<scheme>bearer|basic|token)\s+)?(?P<value>(?!\[REDACTED\]|(?:bearer|basic|token)\s)[^\s"'\\,;}\]]+)""",
    re.IGNORECASE)
_BEARER = re.compile(r"\b(?P<scheme>bearer)\s+(?P<value>[A-Za-z0-9._~+/=-]{4,})", re.IGNORECASE)


def watch_env(name: str | None) -> None:
    """Treat the value of environment variable `name` as a secret from now on."""
    if name:
        _ENV_NAMES.add(str(name))


def secrets() -> list[str]:
    """The watched variables' current values, longest first (so a key containing another goes first)."""
    values = {os.environ.get(name) or "" for name in _ENV_NAMES}
    return sorted((v for v in values if len(v) >= _MIN_SECRET), key=len, reverse=True)


def _mask_header(match: re.Match) -> str:
    scheme = f"{match['scheme']} " if match["scheme"] else ""
    return f"{match['head']}{match['sep']}{scheme}{MASK}"


def redact(text: str | None, extra: tuple[str, ...] = ()) -> str | None:
    """`text` with every known secret value and every credential header value replaced by MASK."""
    if not text:
        return text
    for secret in sorted({*secrets(), *(s for s in extra if s and len(s) >= _MIN_SECRET)}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _HEADER.sub(_mask_header, text)
    return _BEARER.sub(lambda m: f"{m['scheme']} {MASK}", text)
