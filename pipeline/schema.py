"""The one place that defines wenheng's tables: items, quarantine, responses, judgements, scores,
and the warehouse's own (history, bookkeeping, paper tables).

Every stage builds plain dicts, then `to_frame(rows, SCHEMA)` (pipeline/rows.py) turns them into
a pandas frame with exactly these columns and Arrow types, so parquet files and DuckDB tables
always agree. The row helpers are importable from here too.
"""

from __future__ import annotations

import pyarrow as pa

from pipeline.rows import JSON_COLUMNS as JSON_COLUMNS
from pipeline.rows import OPTION_LETTERS as OPTION_LETTERS
from pipeline.rows import answer_hash as answer_hash
from pipeline.rows import canonical_json as canonical_json
from pipeline.rows import content_hash as content_hash
from pipeline.rows import derive_fields as derive_fields
from pipeline.rows import gc_paused as gc_paused
from pipeline.rows import records as records
from pipeline.rows import stable_hash as stable_hash
from pipeline.rows import stable_json as stable_json
from pipeline.rows import to_frame as to_frame

ITEM_FORMATS = (
    "mcq_single", "mcq_multi", "fill_blank", "open_qa", "generation",
    "classification", "labeling", "translation",
)

_str = pa.string()
_list_str = pa.list_(pa.string())

ITEMS = pa.schema([
    ("item_id", _str),          # benchmark/split/task/source-key: stable across versions
    ("benchmark", _str),
    ("source_version", _str),
    ("split", _str),
    ("task", _str),             # fine-grained task
    ("task_group", _str),       # coarse task / AC-EVAL category / WYWEB task family
    ("domain", _str),
    ("capability", _str),
    ("format", _str),
    ("context", _str),
    ("question", _str),
    ("choices", _list_str),     # option texts, in label order (A, B, C, ...)
    ("answer", _str),           # gold; null where the benchmark withholds it
    ("references", _list_str),  # extra acceptable answers / translation references
    ("metadata", _str),         # JSON object: difficulty, label sets, explanations, rule specs
    ("script", _str),           # simplified / traditional / mixed / neutral (no script-specific character)
    ("content_hash", _str),
    ("answer_hash", _str),
    ("source_file", _str),
    ("source_locator", _str),   # line number or array index inside source_file
    ("license", _str),
])

QUARANTINE = pa.schema([
    ("benchmark", _str),
    ("source_file", _str),
    ("source_locator", _str),
    ("reason", _str),
    ("raw", _str),              # the row as read, up to 4 KB, then its length and sha256 (pipeline/sources/text.py)
])

# What a raw_items partition (one benchmark) holds: items (before hashing) and quarantined rows in one table;
# `reason` is null for an item.
RAW_ROWS = ITEMS.append(QUARANTINE.field("reason")).append(QUARANTINE.field("raw"))

CORRECTIONS_AUDIT = pa.schema([
    ("item_id", _str),
    ("benchmark", _str),
    ("field", _str),            # question / answer / choices / context / references / ...
    ("old", _str),              # JSON-encoded value before
    ("new", _str),              # JSON-encoded value after
    ("reason", _str),
    ("date", _str),
    ("status", _str),           # applied / stale (old no longer matches) / unknown_item / out_of_scope /
                                # changed_upstream / removed_upstream / added_upstream / reverted (applied
                                # by the previous build, no longer applied: the item has its upstream value)
    ("origin", _str),           # the corrections file, or "upstream <old version> -> <new version>"
])

VARIANTS = ("original", "simplified", "traditional")

ITEM_VARIANTS = pa.schema([
    ("item_id", _str),
    ("variant", _str),
    ("benchmark", _str),
    ("context", _str),
    ("question", _str),
    ("choices", _list_str),
    ("answer", _str),
    ("references", _list_str),
])

DEDUP_CLUSTERS = pa.schema([
    ("item_id", _str),
    ("benchmark", _str),
    ("cluster_id", _str),       # the representative's item_id
    ("cluster_size", pa.int64()),
    ("is_representative", pa.bool_()),
    ("max_jaccard", pa.float64()),
    ("exact_duplicate", pa.bool_()),
])

# dedup's per-item signatures (pipeline/dedup/signatures.py fills it)
ITEM_SIGNATURES = pa.schema([
    ("item_id", pa.string()),
    ("benchmark", pa.string()),
    ("key_hash", pa.string()),   # sha256 of the template-free key and every DedupParams field
    ("key", pa.string()),        # template-free match key ("" when nothing is left to compare)
    ("full_key", pa.string()),   # match key with the template (pairs across tasks are checked on it)
    ("minhash", pa.binary()),    # num_perm uint32 values, little-endian; null for an empty key
])

CONTAMINATION = pa.schema([
    ("benchmark_a", _str),
    ("item_a", _str),
    ("benchmark_b", _str),
    ("item_b", _str),
    ("similarity", pa.float64()),   # exact Jaccard of the template-free match keys
])

# The contamination index of one benchmark's items (pipeline/contamination/index.py): one row per
# item x field x n-gram size, its n-grams in order; `corpus_overlap` reads it, never the items.
ITEM_NGRAMS = pa.schema([
    ("item_id", _str),
    ("benchmark", _str),
    ("task", _str),
    ("format", _str),
    ("field", _str),                        # input (context, question, options) or label (gold, references)
    ("ngram", pa.int32()),                  # characters per n-gram
    ("hashes", pa.list_(pa.uint64())),      # each n-gram's hash, in text order
    ("kinds", pa.list_(pa.int8())),         # 0 specific, 1 source, 2 template (index.KINDS)
    ("parts", pa.list_(pa.int32())),        # the text (context, question, an option, ...) it lies in
    ("positions", pa.list_(pa.int64())),    # its place in the benchmark's joined key
    ("options", pa.list_(pa.bool_())),      # whether it is one of the item's options'
    ("pieces", pa.list_(pa.int32())),       # its part, an option's where the question repeats the option
])


def _overlap_field(name: str) -> list[tuple[str, pa.DataType]]:
    return [(f"{name}_ngrams", pa.int64()),      # the field's n-grams (0: shorter than n characters)
            (f"{name}_matched", pa.int64()),     # ... found in the corpus
            (f"{name}_share", pa.float64()),     # matched / ngrams; null without n-grams
            (f"{name}_longest", pa.int64()),     # characters covered by the longest run of matched n-grams
            (f"{name}_file", _str),              # evidence: the corpus file of that run's first n-gram,
            (f"{name}_doc", _str),               # ... the document (its id field, or file@sha1 of its text),
            (f"{name}_offset", pa.int64()),      # ... characters into the document's text,
            (f"{name}_snippet", _str)]           # ... and the original text there


# One row per item x user corpus (pipeline/contamination/overlap.py): input = context + question +
# options, label = the gold as text (an MCQ's right option) + references. Counts leave the template
# out; `specific` and `source` split the item's own n-grams from the passage it quotes.
CORPUS_OVERLAP = pa.schema([
    ("item_id", _str),
    ("benchmark", _str),
    ("task", _str),
    ("corpus", _str),
    ("corpus_version", _str),
    ("ngram", pa.int64()),
    ("threshold", pa.float64()),
    *_overlap_field("input"),            # every non-template n-gram of the field, source included
    *_overlap_field("label"),
    ("input_specific_ngrams", pa.int64()),
    ("input_specific_matched", pa.int64()),
    ("label_specific_ngrams", pa.int64()),
    ("label_specific_matched", pa.int64()),
    ("input_document_share", pa.float64()),  # the largest share of input_specific one document holds
    ("label_document_share", pa.float64()),  # ... of label_specific (null for multiple choice)
    *_overlap_field("specific"),         # the item's own n-grams (both fields)
    *_overlap_field("source"),           # the passage it quotes (its card's, or a reference corpus's)
    ("template_ngrams", pa.int64()),     # set aside: shared by many items of the benchmark
    ("input_flagged", pa.bool_()),       # input_document_share >= threshold
    ("label_flagged", pa.bool_()),       # label_document_share >= threshold
    ("answer_file", _str),               # item_with_answer: the document holding question and answer
    ("answer_doc", _str),
    ("answer_offset", pa.int64()),
    ("level", _str),                     # item_with_answer | item | source_only | clean | too_short
    ("status", _str),                    # checked | too_short (no n-gram of its own: no verdict)
    ("contaminated", pa.bool_()),        # level is item or item_with_answer; null when too_short
])

# What a corpus's files held, one row per corpus (pipeline/contamination/engines.py
# CorpusScan.reading_summary): documents read, lines or records skipped, empty files.
CORPUS_READING = pa.schema([
    ("corpus", _str),
    ("files", pa.int64()),
    ("documents", pa.int64()),
    ("bad_lines", pa.int64()),          # lines or records that are not documents (not JSON, not an object)
    ("empty_files", pa.int64()),        # 0 bytes, whitespace only, an empty list or table
    ("invalid_utf8", pa.int64()),       # byte sequences that are not UTF-8 (read as U+FFFD)
    ("first_error", _str),              # the first bad line's file and reason
])

# A corpus file that could not be read: the scan went on without it.
CORPUS_QUARANTINE = pa.schema([
    ("corpus", _str),
    ("path", _str),
    ("reason", _str),
])

PROMPTS = pa.schema([
    ("item_id", _str),
    ("benchmark", _str),
    ("variant", _str),
    ("setting", _str),
    ("messages", _str),         # JSON list of {"role", "content"} chat turns
    ("max_tokens", pa.int64()),
    ("prompt_hash", _str),
])

# What one model's answers read of its benchmark's items (pipeline.inference.model_inputs): a
# served model none of the golds, so a corrected gold leaves its responses up to date.
MODEL_INPUTS = pa.schema([
    ("item_id", _str),
    ("content_hash", _str),
    ("task", _str),
    ("format", _str),
    ("choices", _list_str),
    ("metadata", _str),
    ("answer", _str),           # the gold where the answers read it (the oracle; random's open items), else null
])

# What names one response: an item asked in one script variant and protocol setting of one model.
RESPONSE_KEY = [("item_id", _str), ("benchmark", _str), ("variant", _str), ("setting", _str), ("model", _str)]

RESPONSES = pa.schema([
    *RESPONSE_KEY,
    ("prompt_hash", _str),
    ("cache_key", _str),
    ("max_tokens", pa.int64()),     # the generation budget used (null: up to the model's context)
    ("text", _str),
    ("finish_reason", _str),
    ("tokens_in", pa.int64()),
    ("tokens_out", pa.int64()),
    ("latency_s", pa.float64()),
    ("error", _str),
    ("created_at", pa.timestamp("us", tz="UTC")),
    ("stop", _list_str),            # where a base model's answer was cut (the setting's stop sequences)
    ("continuations", _list_str),   # a log-likelihood answer: what was scored after the prompt ...
    ("logprobs", pa.list_(pa.float64())),   # ... each one's summed log-probability (text: the best)
])

SCORES = pa.schema([
    *RESPONSE_KEY,
    ("kind", _str),             # rule | judge: one rule row per response, and the judge's beside it
    ("scorer", _str),           # name@version (judge:<score type>@<prompt set>-<version>)
    ("score", pa.float64()),    # 0..1; null when it could not be scored
    ("reason", _str),           # why the score is null (or a note)
    ("extracted", _str),
    ("judge_model", _str),
    ("details", _str),          # JSON
])

# One row per response a benchmark card routes to the LLM judge (pipeline/judge).
JUDGEMENTS = pa.schema([
    *RESPONSE_KEY,                  # model: the evaluated model
    ("judge_model", _str),          # the judge's models.yaml entry (its engine identity: details.judge)
    ("prompt_set", _str),           # wenheng (the card's judge.yaml) | official (a user's prompt file)
    ("prompt_version", _str),
    ("score_type", _str),           # mcq_single | mcq_multi | subjective | scoring_points | binary
    ("prompt_id", _str),            # the card's type/criteria, or the official prompt's id
    ("attempts", pa.int64()),       # judge calls made for it (retries of unreadable verdicts included)
    ("cache_key", _str),            # the last attempt's key in the response cache
    ("verdict", _str),              # the last attempt's text as the judge wrote it
    ("messages", _str),             # JSON: the last attempt's prompt as sent to the judge
    ("score", pa.float64()),        # 0..1; null with `reason`
    ("p_all", pa.float64()),        # scoring points: in the reference
    ("p_obtain", pa.float64()),     # ... and obtained (clamped to p_all)
    ("extracted", _str),
    ("reason", _str),
    ("details", _str),              # JSON: judge identity, the verdict's values, failed attempts
    ("created_at", pa.timestamp("us", tz="UTC")),
])

# How far the judge can be trusted, per benchmark x evaluated model x task (and "(all)").
JUDGE_RELIABILITY = pa.schema([
    ("benchmark", _str),
    ("model", _str),
    ("task", _str),
    ("judge_model", _str),
    ("prompt_set", _str),               # e.g. wenheng-1
    ("n_judged", pa.int64()),           # responses routed to the judge
    ("n_scored", pa.int64()),           # ... with a readable verdict
    ("mean_score", pa.float64()),
    ("repeats", pa.int64()),            # k: judged again this many times
    ("repeat_temperature", pa.float64()),
    ("repeat_items", pa.int64()),       # sampled items with at least two readable repeats
    ("repeat_sd", pa.float64()),        # mean over items of the repeats' standard deviation
    ("repeat_max_range", pa.float64()),  # largest max - min over items
    ("repeat_all_equal", pa.float64()),  # share of items whose repeats all agree
    ("repeat_mad", pa.float64()),       # mean |mean of repeats - the temperature-0 score|
    ("exact_items", pa.int64()),        # items with an exact answer scored by both judge and rule
    ("exact_accuracy", pa.float64()),   # share where the judge's score equals the rule's
    ("exact_kappa", pa.float64()),      # Cohen's kappa of the two (null: undefined)
    ("swap_items", pa.int64()),         # pairwise / ordered items judged with options swapped
    ("swap_consistency", pa.float64()),
    ("note", _str),
])

# Whether the judge tells right from wrong, per benchmark x task (and "(all)"): known-answer
# controls (pipeline/judge/validity.py). The controls do not depend on the evaluated model: every
# model partition of a benchmark measures the same judge on the same controls (sent once, then
# from the cache), and its rows say so under that partition's `model`.
JUDGE_VALIDITY = pa.schema([
    ("benchmark", _str),
    ("model", _str),                    # the partition that measured it
    ("task", _str),
    ("judge_model", _str),
    ("prompt_set", _str),
    ("n_positive", pa.int64()),         # items judged with their own gold as the answer (readable verdicts)
    ("accepted_positive", pa.int64()),  # ... accepted (score >= 0.5)
    ("positive_rate", pa.float64()),
    ("positive_low", pa.float64()),     # Wilson 95% interval
    ("positive_high", pa.float64()),
    ("n_negative", pa.int64()),         # judged with another item's gold, an off-topic or an empty answer
    ("accepted_negative", pa.int64()),
    ("negative_rate", pa.float64()),
    ("negative_low", pa.float64()),
    ("negative_high", pa.float64()),
    ("unreadable", pa.int64()),         # controls with no readable verdict (left out of the rates)
    ("youden_j", pa.float64()),         # positive_rate - negative_rate
    ("j_low", pa.float64()),            # Newcombe 95% interval of the difference
    ("j_high", pa.float64()),
    ("informative", pa.bool_()),        # J >= the judge's min_j and its interval above 0
    ("note", _str),
])

# ---- the warehouse's own tables (pipeline/warehouse) ------------------------------------------

# What the history (pipeline/history.py) adds to each row it records.
HISTORY_COLUMNS = pa.schema([
    ("snapshot", _str),         # version, or version+c<corrections hash>
    ("version", _str),          # the source version the rows were computed for
    ("corrections", _str),      # hash of the applied corrections ('' for none)
    ("recorded_at", pa.timestamp("us", tz="UTC")),
    ("recording", _str),        # the file the row came from: <UTC time>-<content hash>
])


def _with_history(base: pa.Schema) -> pa.Schema:
    for f in HISTORY_COLUMNS:
        base = base.append(f)
    return base


# warehouse table -> schema: the lake table each records, with the history's columns
HISTORY_TABLES: dict[str, pa.Schema] = {
    "item_history": _with_history(ITEMS),
    "response_history": _with_history(RESPONSES),
    "score_history": _with_history(SCORES),
    "audit_history": _with_history(CORRECTIONS_AUDIT),
}

# The value a column takes in the rows of files written before it existed (the column missing,
# or null there), set once, as the warehouse loads lake and history files: score files written
# before `kind` existed hold rule rows only.
LOAD_DEFAULTS: dict[str, dict[str, str]] = {
    "scores": {"kind": "rule"},
    "score_history": {"kind": "rule"},
}

# The warehouse's bookkeeping: every file it loaded (its fingerprint and the rows it holds, as
# JSON (column, value) pairs), the build (the layout hash of the code that made it), and per
# benchmark x model run a digest of the units its paper_tables rows were computed from.
BOOKKEEPING: dict[str, pa.Schema] = {
    "_published": pa.schema([("table_name", _str), ("path", _str), ("size", pa.int64()),
                             ("mtime_ns", pa.int64()), ("key", _str)]),
    "_build": pa.schema([("layout", _str), ("built_at", pa.timestamp("us", tz="UTC")),
                         ("mode", _str)]),   # full | incremental
    "_paper_inputs": pa.schema([("benchmark", _str), ("model", _str), ("digest", _str)]),
}


def _noted(name: str, type_: pa.DataType, note: str) -> pa.Field:
    """A column whose meaning is not in its name: the note is shown with it (the UI's column schema)."""
    return pa.field(name, type_, metadata={"note": note})


# Every row of every card's paper tables, long form (pipeline/aggregate.paper_tables): per model x
# variant x setting x split x table row x metric.
PAPER_TABLES = pa.schema([
    ("model", _str),
    ("variant", _str),
    ("setting", _str),
    ("split", _str),
    _noted("capped", pa.bool_(), "the model's max_tokens cut the benchmark's generation budget"),
    ("benchmark", _str),
    ("table_name", _str),
    ("title", _str),
    _noted("row_order", pa.int64(), "the row's place in the paper's table"),
    ("row_label", _str),
    ("metric", _str),
    _noted("score", pa.float64(), "x100 (0-100), by the paper's own rule"),
    _noted("ci_low", pa.float64(), "95% bootstrap interval, low end (x100)"),
    _noted("ci_high", pa.float64(), "95% bootstrap interval, high end (x100)"),
    _noted("n_items", pa.int64(), "official rows of the evaluated split: items asked, and rows left out or "
                                  "quarantined (the note says)"),
    _noted("n_scored", pa.int64(), "items with a score"),
    _noted("coverage", pa.float64(), "n_scored / n_items"),
    _noted("headline", pa.bool_(), "a leaderboard row"),
    _noted("note", _str, "why coverage is below 1, why a row is not comparable, how its interval was drawn"),
    _noted("scored_by", _str, "who scored the row's items: rules, or judge MODEL (SET prompts), e.g. "
                                 "judge gpt-4o (official prompts)"),
    _noted("comparable", pa.bool_(), "false: the paper judged these items with an LLM, here rules or the demo "
                                     "judge did"),
    _noted("chance", pa.float64(), "chance level x100 (1/k options, nested like the score); null where an item "
                                   "has none"),
    _noted("uninformative_share", pa.float64(), "of the row's scored items, the share judged where the judge's "
                                                "known-answer controls do not show it tells right from wrong "
                                                "(judge_validity); null where none"),
    _noted("judge_j", pa.float64(), "the highest Youden's J of the judge on those items' tasks; null where none"),
])

# The model rows the benchmarks' papers publish (each card's published.yaml), placed on the rows of
# the card's tables: reference rows shown beside a user's, not runs of wenheng's.
PUBLISHED_SCORES = pa.schema([
    ("benchmark", _str),
    _noted("source", _str, "the paper and its table, e.g. WenMind paper, Table 3"),
    ("paper_table", _str),
    ("table_name", _str),
    ("row_label", _str),
    _noted("model", _str, "as the paper names it"),
    _noted("kind", _str, "model, or what a row that is no model is: average (the paper's mean over its models), "
                         "human, chance"),
    _noted("setting", _str, "the paper's setting, in wenheng's names where wenheng has it (else the paper's words)"),
    ("split", _str),
    _noted("score", pa.float64(), "x100, as printed: no interval, no item count"),
    _noted("note", _str, "how the rows were repaired from the paper's text"),
])

# The paper tables again per scanned corpus, on the items that corpus does not contaminate.
PAPER_TABLES_CLEAN = pa.schema([("corpus", _str), *PAPER_TABLES])

# Every row quarantined at ingestion, with the split and task (and question group and part) its
# card's `quarantine:` layout places it in (aggregate.place_quarantine).
QUARANTINE_PLACED = pa.schema([(name, _str) for name in (
    "benchmark", "unit_id", "source_file", "source_locator", "split", "task", "group", "part")])


def column_notes(table_schema: pa.Schema) -> dict[str, str]:
    """column -> its note, for the columns that have one."""
    return {f.name: f.metadata[b"note"].decode("utf-8") for f in table_schema
            if f.metadata and b"note" in f.metadata}
