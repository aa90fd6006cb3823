"""The error of a source that cannot be used as a whole, in a module that imports nothing of
wenheng's, so that the readers (text.py) and the accounting (accounting.py, which re-exports it)
both raise it."""


class SourceError(ValueError):
    """The configured source as a whole cannot be used (its path is not the benchmark's layout, a
    side file such as AC-EVAL's subject_mapping.json is broken, it yields no rows): never a
    quarantine row, the benchmark's ingestion fails with this one line."""
