"""Is a contamination verdict right? A labelled evaluation on corpora wenheng did not write.

    .venv/bin/python perf/leakage.py                 # negatives, positives, audit sample
    .venv/bin/python perf/leakage.py --items 300     # more planted items per shape

Negatives: chinese-poetry 2.0.1 whole (npm, MIT; fetched by perf/contamination.py, never committed).
A poetry collection holds no benchmark item: every `item` or `item_with_answer` on it is a false
flag. Printed per benchmark: the levels, and beside them the rule wenheng used before (a field's
share of all its n-grams >= 0.5, template and passages included) computed in the same process on
the same scan. Then the same corpus split in two by file: one half named as the reference corpus
(`reference: true`), the other half scanned.

Positives: the items of WenMind, AC-EVAL and WYWEB (the real files, ../shared/upstream) planted in
the shapes training data has, each shape in simplified and in traditional script, as one more file
beside the whole of chinese-poetry (the mixed corpus: every flag outside the planted items is a
false one too):
  instruction   {"instruction": question with options, "output": the answer}
  exam          a paper of four questions with options, the answer key at the end
  qa_page       a web page: prose, 问：the question, 答：the answer, prose
  translation   the classical text and its translation (translation items only)
  mcq_marked    the question, its options and 正确答案：the right option (multiple choice only)
  question      the question with its options alone, no answer
Recall is the share of planted items whose level is item or item_with_answer; `question` is
reported apart (no answer planted). Items with no n-gram of their own (all template or passage)
cannot be told from a quotation (status too_short, no verdict): recall is over the checked items,
and the number left out is shown.

Audit: 50 flags drawn at random (seeded) from the mixed corpus, printed with the item and the
evidence, to be read; and every flag on the negative corpus.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))

from contamination import benchmark_items, fetch_poetry, poetry_spec  # noqa: E402  (perf/contamination.py)

from pipeline.contamination.corpora import CorpusSpec, shard_paths  # noqa: E402

SHAPES = ("instruction", "exam", "qa_page", "translation", "mcq_marked", "question")
ANSWERED = SHAPES[:-1]
BENCHMARKS = ("wenmind", "aceval", "wyweb")
LETTERS = "ABCDEFGH"
FILLER = ("今日天气晴好，与友人同游城郊，归来记之。", "以下内容整理自网络，仅供学习参考。", "欢迎转载，请注明出处。",
          "点击查看更多相关题目与解析。")


def contaminated(row: dict) -> bool:
    return row["level"] in ("item", "item_with_answer")


def old_rule(row: dict) -> bool:
    """The rule before levels: a field's share of all its n-grams (template included) >= threshold."""
    return (row["input_share"] or 0) >= row["threshold"] or (row["label_share"] or 0) >= row["threshold"]


def print_levels(title: str, rows: list[dict], old: dict[str, bool] | None = None) -> None:
    levels = ("item_with_answer", "item", "source_only", "clean", "too_short")
    print(title)
    print(f"  {'benchmark':<9} {'items':>6} {'checked':>7} " + " ".join(f"{lv:>16}" for lv in levels)
          + f" {'contaminated':>12}" + (f" {'before':>12}" if old else ""))
    for bench in [*sorted({r["benchmark"] for r in rows}), None]:
        group = [r for r in rows if bench is None or r["benchmark"] == bench]
        checked = [r for r in group if r["status"] == "checked"]
        count = Counter(r["level"] for r in group)
        flagged = sum(map(contaminated, checked))
        line = (f"  {bench or 'all':<9} {len(group):>6,} {len(checked):>7,} "
                + " ".join(f"{count[lv]:>16,}" for lv in levels)
                + f" {flagged:>5,} ({flagged / max(len(checked), 1):>5.2%})")
        if old:   # the rule before, over the items it checked (any n-gram)
            had = [old[r["item_id"]] for r in group if old[r["item_id"]] is not None]
            line += f" {sum(had):>5,} ({sum(had) / max(len(had), 1):>5.2%})"
        print(line)


# ---- planted shapes ---------------------------------------------------------------------------------

def gold_text(item: dict) -> str:
    answer = item.get("answer") or ""
    choices = item.get("choices") or []
    if item.get("format") in ("mcq_single", "mcq_multi") and choices:
        picked = [choices[LETTERS.index(c)] for c in answer.upper() if c in LETTERS and LETTERS.index(c) < len(choices)]
        return "；".join(picked) or answer
    return "\n".join([answer, *(item.get("references") or [])]).strip()


def question_text(item: dict) -> str:
    options = [f"{LETTERS[k]}．{c}" for k, c in enumerate(item.get("choices") or []) if k < len(LETTERS)]
    return "\n".join(t for t in [item.get("context"), item.get("question"), *options] if t)


def is_mcq(item: dict) -> bool:
    return item.get("format") in ("mcq_single", "mcq_multi") and bool(item.get("choices"))


def is_translation(item: dict) -> bool:
    """A translation pair: a classical text and its translation (not a multiple-choice question
    about translations)."""
    return not is_mcq(item) and (item.get("format") == "translation" or "translation" in str(item.get("task"))
                                 or " to " in str(item.get("task")))


def has_answer(item: dict) -> bool:
    """Withheld answers (AC-EVAL's test split) cannot be planted."""
    return bool(gold_text(item))


def plant(shape: str, item: dict, others: list[dict], rng: random.Random) -> str | dict | None:
    """The document of `shape` holding `item`: its text, or its fields (None: the shape does not fit
    the item)."""
    q, a = question_text(item), gold_text(item)
    if shape == "instruction":
        return {"instruction": q, "output": a}
    if shape == "exam":
        paper = [*others[:3], item]
        rng.shuffle(paper)
        body = "\n".join(f"{k + 1}. {question_text(p)}" for k, p in enumerate(paper))
        key = "  ".join(f"{k + 1}. {p.get('answer') if is_mcq(p) else gold_text(p)}" for k, p in enumerate(paper))
        return f"古文阶段测试卷\n{body}\n参考答案：{key}"
    if shape == "qa_page":
        return f"{rng.choice(FILLER)}\n问：{q}\n答：{a}\n{rng.choice(FILLER)}"
    if shape == "translation":
        if not is_translation(item):
            return None
        return f"{item.get('context') or item.get('question')}\n译文：{a}"
    if shape == "mcq_marked":
        if not is_mcq(item):
            return None
        return f"{q}\n正确答案：{item.get('answer')}．{a}"
    return q


def planted_corpus(shape: str, items: list[dict], folder: Path, script: str, rng: random.Random,
                   also: dict[str, str]) -> dict[str, str]:
    """A jsonl file of `shape` documents (item id -> document id), in `script`; `also` gets the
    items an exam paper holds besides the one it was made for."""
    from pipeline.script import convert

    docs, planted = [], {}
    for item in items:
        others = rng.sample(items, 4)
        others = [o for o in others if o["item_id"] != item["item_id"]][:3]
        doc = plant(shape, item, others, rng)
        if doc is None:
            continue
        fields = doc if isinstance(doc, dict) else {"text": doc}
        if script == "traditional":
            fields = {k: convert(v, "s2t") for k, v in fields.items()}
        doc_id = f"{shape}-{script}-{len(docs):04d}"
        docs.append({"id": doc_id, **fields})
        planted[item["item_id"]] = doc_id
        if shape == "exam":   # the paper's other questions are in it too (without their answer nearby)
            for other in others:
                also.setdefault(other["item_id"], doc_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"planted-{shape}-{script}.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return planted


# ---- the run ------------------------------------------------------------------------------------------

def scan_rows(spec: CorpusSpec, name: str, index, cache: Path, references: dict | None = None) -> list[dict]:
    from pipeline.contamination.engines import scan_corpus
    from pipeline.contamination.overlap import overlap_rows
    from pipeline.contamination.run import reference_hashes

    scan = scan_corpus(spec, name, index, cache, workers=2, log=lambda line: None)
    held = reference_hashes(index, references, cache, workers=2, log=lambda line: None) if references else None
    return overlap_rows(index, scan, name, spec, reference=held)


def negatives(items, index, spec, cache) -> list[dict]:
    from pipeline.contamination.index import build_index

    started = time.perf_counter()
    rows = scan_rows(spec, "chinese-poetry", index, cache)
    # the rule before levels, on the same scan: every n-gram counts (no template, no passage)
    plain = build_index(items, index.n, passages=lambda item: [], template_min_items=len(items) + 1)
    plain.gram_kind[:] = 0
    before = {r["item_id"]: old_rule(r) if r["input_ngrams"] + r["label_ngrams"] else None
              for r in scan_rows(spec, "chinese-poetry-plain", plain, cache)}
    print(f"negative corpus: chinese-poetry 2.0.1 whole ({time.perf_counter() - started:.1f} s)")
    print_levels("  levels (contaminated: item or item_with_answer; before: the share rule on every n-gram)", rows,
                 before)
    files = shard_paths(spec)
    half_a, half_b = files[0::2], files[1::2]
    ref = {"half-a": spec.model_copy(update={"paths": half_a, "reference": True})}
    b_spec = spec.model_copy(update={"paths": half_b})
    alone = scan_rows(b_spec, "half-b", index, cache)
    with_ref = scan_rows(b_spec, "half-b", index, cache, references=ref)
    print(f"\nthe same corpus in two halves by file ({len(half_a)} and {len(half_b)} files): half b scanned")
    print_levels("  alone", alone)
    print_levels("  with half a named as the reference corpus (reference: true)", with_ref)
    return rows


def positives(items, index, spec, cache, per_shape: int, seed: int) -> tuple[dict, list[dict]]:
    rng = random.Random(seed)
    pool = [it for it in items if it["benchmark"] in BENCHMARKS]
    by_bench = defaultdict(list)
    for it in pool:
        by_bench[it["benchmark"]].append(it)
    results, flags = {}, []
    with tempfile.TemporaryDirectory(prefix="wenheng-leakage-") as tmp:
        for shape in SHAPES:
            for script in ("simplified", "traditional"):
                chosen = _choose(shape, by_bench, per_shape, rng)
                also: dict[str, str] = {}
                planted = planted_corpus(shape, chosen, Path(tmp), script, rng, also)
                mixed = spec.model_copy(update={
                    "paths": [*spec.paths, str(Path(tmp) / f"planted-{shape}-{script}.jsonl")], "format": None,
                    "fields": [*spec.fields, "text", "instruction", "output"]})
                rows = {r["item_id"]: r for r in scan_rows(mixed, "mixed", index, cache)}
                results[shape, script] = (planted, rows, also)
                flags += [(shape, script, r) for r in rows.values() if contaminated(r)]
    return results, flags


def _choose(shape: str, by_bench: dict, n: int, rng: random.Random) -> list[dict]:
    fits = {"translation": is_translation, "mcq_marked": is_mcq}.get(shape, lambda it: True)
    if shape in ANSWERED:
        fits = (lambda f: lambda it: f(it) and has_answer(it))(fits)
    out = []
    for bench in BENCHMARKS:
        candidates = [it for it in by_bench[bench] if fits(it)]
        out += rng.sample(candidates, min(n // len(BENCHMARKS), len(candidates)))
    return out


def print_recall(results: dict) -> dict[str, tuple[int, int]]:
    print("\npositives: planted items found (level item or item_with_answer), per shape and script; recall over "
          "the checked items (too short: no n-gram of its own, no verdict possible)")
    print(f"  {'shape':<12} {'script':<12} {'checked':>7} {'found':>6} {'recall':>7} {'with answer':>11} "
          f"{'too short':>13} {'missed':>6}  misses by level")
    totals: dict[str, list[int]] = {"answered": [0, 0], "question": [0, 0]}
    for (shape, script), (planted, rows, _) in results.items():
        every = [rows[i] for i in planted]
        got = [r for r in every if r["status"] == "checked"]
        found = sum(map(contaminated, got))
        answer = sum(r["level"] == "item_with_answer" for r in got)
        no_own = len(every) - len(got)
        missed = Counter(r["level"] for r in got if not contaminated(r))
        bucket = totals["question" if shape == "question" else "answered"]
        bucket[0] += found
        bucket[1] += len(got)
        print(f"  {shape:<12} {script:<12} {len(got):>7,} {found:>6,} {found / max(len(got), 1):>7.1%} "
              f"{answer:>11,} {no_own:>13,} {len(got) - found:>6,}  {dict(missed)}")
    for name, (found, planted) in totals.items():
        print(f"  {name}: {found:,} of {planted:,} = {found / max(planted, 1):.1%}")
    return {k: (v[0], v[1]) for k, v in totals.items()}


def print_audit(flags: list, negative_rows: list[dict], items: dict, results: dict, k: int, seed: int) -> None:
    def show(r: dict, truth: str) -> None:
        it = items[r["item_id"]]
        doc = r["answer_doc"] or r["specific_doc"]
        print(f"  {r['item_id']}  {r['level']}  own {r['specific_matched']}/{r['specific_ngrams']}, "
              f"passage {r['source_matched']}/{r['source_ngrams']}, best document: input "
              f"{_f(r['input_document_share'])} label {_f(r['label_document_share'])}  [{truth}]")
        print(f"    item: {_short(question_text(it), 90)}  ->  {_short(gold_text(it), 30)}")
        print(f"    in {doc}: {_short(r['specific_snippet'], 60)}")

    negative = [r for r in negative_rows if contaminated(r)]
    print(f"\naudit: every flag on the negative corpus ({len(negative)})")
    for r in negative:
        show(r, "negative corpus")
    rng = random.Random(seed)
    sample = rng.sample(flags, min(k, len(flags)))
    print(f"\naudit: {len(sample)} flags drawn at random from the mixed corpora ({len(flags):,} flags in all)")
    planted_docs = {key: (planted, also) for key, (planted, _, also) in results.items()}
    for shape, script, r in sample:
        planted, also = planted_docs[shape, script]
        doc = planted.get(r["item_id"])
        where = {r["answer_doc"], r["specific_doc"]} - {None}
        truth = (f"planted as {shape}/{script} in {doc}, {'the' if doc in where else 'NOT the'} evidence" if doc else
                 f"another question of exam paper {also[r['item_id']]}" if r["item_id"] in also else "not planted")
        show(r, truth)


def _f(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def _short(text, n: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[:n - 1] + "…"


def main() -> None:
    from prepare import UPSTREAM

    from pipeline import paths
    from pipeline.contamination.index import build_index

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=150, help="items planted per shape and script (150)")
    parser.add_argument("--audit", type=int, default=50, help="flags drawn for the audit (50)")
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--upstream", type=Path, default=UPSTREAM)
    args = parser.parse_args()
    if not (args.upstream / "wenmind").is_dir():
        sys.exit(f"the benchmarks' own files are not under {args.upstream} (--upstream)")
    dist = fetch_poetry()
    spec = poetry_spec(dist)
    items = benchmark_items(args.upstream)
    started = time.perf_counter()
    index = build_index(items, spec.ngram)
    print(f"items: {len(items):,}; index in {time.perf_counter() - started:.1f} s\n")
    cache = paths.cache_dir() / "perf-leakage"   # the poetry files' scans are reused between runs
    negative_rows = negatives(items, index, spec, cache)
    results, flags = positives(items, index, spec, cache, args.items, args.seed)
    totals = print_recall(results)
    print_audit(flags, negative_rows, {it["item_id"]: it for it in items}, results, args.audit, args.seed)

    print("\ntargets:")
    worst = max((sum(map(contaminated, g)) / max(len(g), 1), b) for b, g in _by_bench(negative_rows).items())
    print(f"  {'PASS' if worst[0] <= 0.005 else 'FAIL'}  chinese-poetry whole: contaminated <= 0.5% of every "
          f"benchmark (highest: {worst[1]} {worst[0]:.2%})")
    found, planted = totals["answered"]
    print(f"  {'PASS' if found >= 0.95 * planted else 'FAIL'}  recall >= 95% where the answer is planted "
          f"({found:,}/{planted:,} = {found / max(planted, 1):.1%})")
    found, planted = totals["question"]
    print(f"  {'PASS' if found >= 0.90 * planted else 'FAIL'}  recall >= 90% for a question with its options alone "
          f"({found:,}/{planted:,} = {found / max(planted, 1):.1%})")


def _by_bench(rows: list[dict]) -> dict[str, list[dict]]:
    out = defaultdict(list)
    for r in rows:
        if r["status"] == "checked":
            out[r["benchmark"]].append(r)
    return out


if __name__ == "__main__":
    main()
