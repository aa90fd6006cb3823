"""WenMind's official judge prompts: its repository's JSON/Task_Score_Prompt.json, pinned here
and read here (the card's `OFFICIAL_JUDGE_PROMPTS` hook, which pipeline/judge/prompts.py asks
the registry for).

The file holds 28 records {id, type, prompt} with positional `{}` slots filled as
`prompt.format(response, answer, question)`, as WenMind's LLM_Scoring.py does. `prompts: official`
downloads it once from WenMind's repository at the commit pinned below (OFFICIAL_URL), verified
against OFFICIAL_SHA256, into the download cache (pipeline/config/judges.py, through
pipeline/sources/fetch.py); `prompts: {official: <path>}` reads the user's own copy. Its text
(CC BY-NC-SA) is never stored in wenheng's repository."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from pipeline.judge.prompts import OfficialPrompts, OfficialSource, PromptError
from pipeline.rows import stable_hash

# The file's first eight prompts, by id; ids 8-27 are QA-Poem-<form>.
OFFICIAL_TYPES = ("MCQ-Single", "MCQ-Multi", "QA-General", "QA-Idiom", "QA-Couplet-A", "QA-Couplet-B",
                  "QA-Couplet-C", "QA-WYW")
OFFICIAL_POEM = "QA-Poem-"
OFFICIAL_COUNT = 28
# The positional slots of each prompt, in order (WenMind's LLM_Scoring.py).
OFFICIAL_SLOTS = ("response", "answer", "question")
# WenMind's official judge prompts, pinned: the file as added in this commit (unchanged since, as
# of the repository's head 91e8c05), and the sha256 of its bytes.
OFFICIAL_REPO = "SCUT-DLVCLab/WenMind"
OFFICIAL_COMMIT = "586481c5202493d23e3ad8eb02550dd1ec1b858b"
OFFICIAL_FILE = "JSON/Task_Score_Prompt.json"
OFFICIAL_SHA256 = "88256fd2b05f1d86d8f8dd52055a7375284bbbaaefff4542caa7f398441eacc0"


@cache
def load_official(path: Path) -> OfficialPrompts:
    """Task_Score_Prompt.json, checked record by record: ids in order, each record's type the
    one WenMind gives that id."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PromptError(f"{path}: cannot read the official prompts: {exc}") from exc
    if not isinstance(records, list) or len(records) != OFFICIAL_COUNT:
        raise PromptError(f"{path}: expected WenMind's {OFFICIAL_COUNT} prompt records (Task_Score_Prompt.json)")
    for index, record in enumerate(records):
        if not isinstance(record, dict) or not {"id", "type", "prompt"} <= set(record) or int(record["id"]) != index:
            raise PromptError(f"{path}: record {index} must be {{id: {index}, type, prompt}}")
        expected = OFFICIAL_TYPES[index] if index < len(OFFICIAL_TYPES) else OFFICIAL_POEM
        if not str(record["type"]).startswith(expected):
            raise PromptError(f"{path}: record {index} has type {record['type']!r}, expected {expected!r}")
    forms = tuple((str(r["type"])[len(OFFICIAL_POEM):], int(r["id"])) for r in records[len(OFFICIAL_TYPES):])
    return OfficialPrompts(path, tuple(str(r["prompt"]) for r in records), forms, stable_hash(records)[:12],
                           OFFICIAL_SLOTS)


OFFICIAL_JUDGE_PROMPTS = OfficialSource(repo=OFFICIAL_REPO, commit=OFFICIAL_COMMIT, file=OFFICIAL_FILE,
                                        sha256=OFFICIAL_SHA256, load=load_official)
OFFICIAL_URL = OFFICIAL_JUDGE_PROMPTS.url
