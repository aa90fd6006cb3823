"""A failed step in words: its cause in one line for the terminal, its traceback for the run's
log file. Plain functions over Dagster's serializable error records (no Dagster import)."""

from __future__ import annotations

import datetime as dt


def failure_cause(data) -> str:
    """What made a step fail, in one line: a dg.Failure's description; else the exception user
    code raised (unwrapped from Dagster's errors around it), its class name and the first line
    of its message. Never the stack trace: that goes to the run's log file."""
    failure = getattr(data, "user_failure_data", None)
    if failure is not None and failure.description:
        return " ".join(failure.description.split())
    error = getattr(data, "error", None)
    # Dagster wraps the error user code raised: its cause is what the user needs to read
    while error is not None and error.cause is not None and (error.cls_name or "").startswith("Dagster"):
        error = error.cause
    if error is None:
        return "no error was recorded (see the run in the Dagster UI)"
    name = error.cls_name or "Error"
    text = (error.message or "").strip()
    head, sep, rest = text.partition(":")   # format_exception_only: `module.Class: message`
    if head.rsplit(".", 1)[-1] == name:
        text = rest.strip() if sep else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if first.endswith(":") and len(lines) > 1:   # `1 blocking asset check failed ...:` + what failed
        first = " ".join(lines)[:500]
    return f"{name}: {first}" if first else name


def traceback_text(error) -> str:
    """Dagster's record of an error (SerializableErrorInfo) as Python prints a traceback: the
    first cause first, each exception's stack above its message."""
    chain, joins = [], []
    while error is not None:
        chain.append(error)
        if error.cause is not None:
            joins.append("The above exception was the direct cause of the following exception:")
            error = error.cause
        else:
            joins.append("During handling of the above exception, another exception occurred:")
            error = error.context
    parts = []
    for i, err in enumerate(reversed(chain)):
        if i:
            parts.append(f"\n{joins[len(chain) - 1 - i]}\n\n")
        stack = "".join(err.stack or [])
        parts.append(("Traceback (most recent call last):\n" + stack if stack else "")
                     + (err.message or err.cls_name or "").rstrip() + "\n")
    return "".join(parts)


def append_log(run_tag: str, blocks: list[str]):
    """Appends to the run's log file; returns its path, or None when it cannot be written (a full
    disk is one reason a step fails)."""
    from pipeline import paths

    path = paths.run_log_file(run_tag)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            stamp = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            out.writelines(f"\n{stamp} {block.rstrip()}\n" for block in blocks)
    except OSError:
        return None
    return path
