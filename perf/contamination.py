"""Contamination scan of a real corpus against every benchmark item: throughput, memory, verdicts,
and a plain-Python scanner as a baseline.

    .venv/bin/python perf/contamination.py                 # chinese-poetry, naive, 1 GB (local + Ray)
    .venv/bin/python perf/contamination.py --quick         # chinese-poetry and the naive scanner only
    .venv/bin/python perf/contamination.py --gb 2 --no-ray # a 2 GB corpus, local engine only

The corpus is the MIT-licensed npm package chinese-poetry 2.0.1 (Quan Tangshi in traditional
script, Song ci, Yuan qu, Shijing, Chuci, the Analects and Mencius, the primers...), fetched once
with `npm pack` into data/cache/corpora/ and unpacked there. Its tonal patterns (strains/), search
rankings (rank/) and a table of component descriptions are left out: they are not text. The items
are those `perf/prepare.py` builds: WenMind, AC-EVAL and WYWEB from the benchmarks' own files
(default ../shared/upstream, or --upstream), Fùxì and CP-DUE from the bundled samples.

Printed:
1. the corpus: per collection, files, MB on disk, documents and MB of text (UTF-8);
2. the local engine (pipeline/contamination, both cores) on it: MB/s (bytes of the files read /
   wall seconds), wall time, peak RSS of the process tree (VmRSS of this process and all its
   descendants, summed, sampled every 0.1 s); per benchmark: items checked, too short,
   contaminated and rate, input vs label, share histograms in tenths, items with a share >= 0.2,
   >= 0.5 and with any 13-gram hit (the GPT-3 / lm-eval rule), and up to 5 items on each side of
   the threshold with their evidence;
3. a naive scanner in this process on one core (a dict of every 13-character slice of the items'
   text after OpenCC t2s and without punctuation; documents read with json.load, slice by slice):
   its MB/s, the ratio, and whether both find the same items with any hit;
4. a corpus of --gb GB (default 1) made from chinese-poetry (shuffled copies with a few percent of
   characters swapped or replaced, some documents converted s2t or t2s, punctuation changed), as
   jsonl shards under data/cache/corpora/ (made once; the time it took is printed, not counted),
   scanned by the local engine and by Ray on a local 2-CPU Ray (ray/local wall time);
5. the targets, PASS or FAIL: >= 1 GB in <= 60 s on 2 cores, >= 4x the naive scanner's MB/s on
   chinese-poetry, peak RSS <= 2 GB, Ray within 1.5x of local.

Every timed scan gets a fresh cache folder: the engine's per-file cache would make a rerun a read
of parquet files. Progress lines of the engine go to stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))

from measure import PeakRSS  # noqa: E402  (perf/measure.py)

from pipeline.contamination.corpora import CorpusSpec, shard_paths  # noqa: E402

CORPORA = ROOT / "data" / "cache" / "corpora"
PACKAGE, VERSION = "chinese-poetry", "2.0.1"
NGRAM = 13
# (folder or glob under dist/, what it is); every one of them is a JSON list of records or one record
COLLECTIONS = [
    ("quantangshi/poet.tang.*.json", "Quan Tangshi: Tang poems (traditional script)"),
    ("quantangshi/poet.song.*.json", "Quan Songshi: Song poems (traditional script)"),
    ("quantangshi/authors.*.json", "Tang and Song poets' biographies"),
    ("quantangshi/唐诗*.json", "300 Tang poems, Tang supplement"),
    ("quantangshi/error/*.json", "poems and poets with doubtful characters"),
    ("yudingquantangshi/json/*.json", "Yuding Quan Tangshi (imperial edition)"),
    ("songci/*.json", "Song ci and their authors"),
    ("yuanqu/*.json", "Yuan qu"),
    ("wudaishici/**/*.json", "Five Dynasties ci (Huajianji, Nantang)"),
    ("shijing/*.json", "Shijing"),
    ("chuci/*.json", "Chuci"),
    ("lunyu/*.json", "Lunyu"),
    ("sishuwujing/*.json", "Daxue, Zhongyong, Mengzi"),
    ("mengxue/*.json", "primers: Sanzijing, Qianziwen, Guwen Guanzhi..."),
    ("caocaoshiji/*.json", "Cao Cao's poems"),
    ("nalanxingde/*.json", "Nalan Xingde's poems"),
    ("shuimotangshi/*.json", "Shuimo Tangshi"),
    ("youmengying/*.json", "Youmengying"),
]
# every key that holds text in some collection (dotted: the nested chapters of the primers); lists are
# joined, and a key a record lacks is skipped. Not: author and name (a name, not text), id, tags,
# volume, strains (tonal patterns), spells (pinyin), the search engines' counts.
FIELDS = ["title", "rhythmic", "chapter", "section", "subchapter", "paragraphs", "para", "content",
          "content.title", "content.chapter", "content.paragraphs", "content.content.chapter",
          "content.content.paragraphs", "content.content.paragraphs.paragraphs", "content.content.source",
          "abstract", "preface", "prologue", "desc", "description", "biography", "notes", "comment"]
BIG_FIELDS = ["text"]
TARGET_SECONDS, TARGET_SPEEDUP, TARGET_RSS_MB, TARGET_RAY = 60.0, 4.0, 2048.0, 1.5


# ---- the corpus ----------------------------------------------------------------------------------

def fetch_poetry() -> Path:
    """dist/ of the unpacked package: `npm pack` once, unpacked once, reused after."""
    folder = CORPORA / f"{PACKAGE}-{VERSION}"
    dist = folder / "package" / "dist"
    if dist.is_dir():
        return dist
    CORPORA.mkdir(parents=True, exist_ok=True)
    tarball = CORPORA / f"{PACKAGE}-{VERSION}.tgz"
    if not tarball.is_file():
        print(f"fetching {PACKAGE}@{VERSION} with npm pack ...", flush=True)
        subprocess.run(["npm", "pack", f"{PACKAGE}@{VERSION}", "--silent"], cwd=CORPORA, check=True,
                       stdout=subprocess.DEVNULL)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(tmp, filter="data")
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return dist


def poetry_spec(dist: Path) -> CorpusSpec:
    return CorpusSpec(paths=[str(dist / pattern) for pattern, _ in COLLECTIONS], format="json", fields=FIELDS,
                      id_field="id", version=VERSION, license="MIT", ngram=NGRAM)


def describe(dist: Path, spec: CorpusSpec) -> dict:
    """Per collection: files, bytes on disk, documents, characters and UTF-8 bytes of their text, as
    the engine's reader extracts it."""
    from pipeline.contamination.scan import Documents, FileStats, parse_json

    docs = Documents(spec.fields, spec.id_field)
    rows, seen = [], set()
    for pattern, what in COLLECTIONS:
        files = [f for f in shard_paths(spec.model_copy(update={"paths": [str(dist / pattern)]})) if f not in seen]
        seen.update(files)
        stats, text_bytes = FileStats(pattern), 0
        for file in files:
            texts, _ = parse_json(Path(file).read_bytes(), docs, stats)
            stats.documents += len(texts)
            stats.characters += sum(map(len, texts))
            text_bytes += sum(len(t.encode()) for t in texts)
        rows.append((pattern, what, len(files), stats.bytes, stats.documents, stats.characters, text_bytes))
    print(f"corpus: {PACKAGE} {VERSION} (npm, MIT), {dist.relative_to(ROOT)}")
    print(f"  {'collection':<32} {'files':>6} {'MB':>7} {'docs':>9} {'chars (M)':>10} {'MB text':>8}  what")
    for pattern, what, n, size, documents, chars, text in rows:
        print(f"  {pattern:<32} {n:>6,} {size / 1e6:>7.1f} {documents:>9,} {chars / 1e6:>10.2f} {text / 1e6:>8.1f}  "
              f"{what}")
    total = [sum(r[i] for r in rows) for i in range(2, 7)]
    print(f"  {'total':<32} {total[0]:>6,} {total[1] / 1e6:>7.1f} {total[2]:>9,} {total[3] / 1e6:>10.2f} "
          f"{total[4] / 1e6:>8.1f}")
    print(f"  fields: {', '.join(spec.fields)}; id_field: {spec.id_field}")
    return {"files": total[0], "bytes": total[1], "documents": total[2], "chars": total[3], "text_bytes": total[4]}


# ---- the items -------------------------------------------------------------------------------------

def benchmark_items(upstream: Path) -> list[dict]:
    """The items of every benchmark, as the `items` stage of perf/prepare.py builds them."""
    from prepare import sources

    from pipeline import paths
    from pipeline.ingest import parse_source
    from pipeline.standardize import build_items

    items = []
    for spec in sources(upstream).values():
        items += build_items(parse_source(spec).rows(), paths.corrections_dir(), None)[0]
    return items


def timed_scan(spec: CorpusSpec, name: str, index, engine: str, workers: int) -> tuple:
    """(scan, wall seconds, peak RSS MB, processes at the peak), with a fresh cache folder."""
    from pipeline.contamination.engines import scan_corpus

    with tempfile.TemporaryDirectory(prefix="wenheng-contam-") as cache, PeakRSS() as rss:
        started = time.perf_counter()
        scan = scan_corpus(spec, name, index, Path(cache), engine=engine, workers=workers)
        wall = time.perf_counter() - started
    if scan.quarantine:
        print(f"  quarantined: {len(scan.quarantine)} files, e.g. {scan.quarantine[0]}")
    return scan, wall, rss.mb, rss.peak_procs


def scan_line(label: str, scan, wall: float, rss_mb: float, procs: int) -> str:
    mb = scan.bytes_scanned / 1e6
    return (f"{label}: {len(scan.files):,} files, {mb:,.1f} MB in {wall:.1f} s = {mb / wall:,.1f} MB/s; "
            f"peak RSS {rss_mb:,.0f} MB ({procs} processes); {scan.matches.num_rows:,} item n-grams found "
            f"(load {os.getloadavg()[0]:.1f})")


# ---- verdicts ----------------------------------------------------------------------------------------

def _any_hit(row: dict) -> bool:
    return row["input_matched"] + row["label_matched"] > 0


def print_examples(rows: list[dict], items: dict[str, dict], dist: Path, k: int = 4) -> None:
    """The highest shares at each level: contaminated, source_only, and clean items with some of
    their own n-grams found."""
    def share(r: dict, name: str) -> float:
        return r[f"{name}_share"] or 0.0

    groups = [("contaminated (item, item_with_answer)", "specific",
               [r for r in rows if r["contaminated"]]),
              ("source_only (the corpus holds the passage the item quotes)", "source",
               [r for r in rows if r["level"] == "source_only"]),
              ("clean, with some of the item's own n-grams found", "specific",
               [r for r in rows if r["level"] == "clean" and r["specific_matched"]])]
    for title, name, group in groups:
        print(f"examples, {title}: {len(group):,}")
        for r in sorted(group, key=lambda r: (-share(r, name), r["item_id"]))[:k]:
            item = items[r["item_id"]]
            where = os.path.relpath(r[f"{name}_file"], dist) if r[f"{name}_file"] else "-"
            print(f"  {r['item_id']}  [{r['level']}; own {r['specific_matched']}/{r['specific_ngrams']}, passage "
                  f"{r['source_matched']}/{r['source_ngrams']}, template {r['template_ngrams']}]")
            print(f"    item:     {_short(item.get('context'), 40) + ' | ' if item.get('context') else ''}"
                  f"{_short(item.get('question'), 60)}  -> {_short(item.get('answer'), 20)}")
            print(f"    evidence: {where} doc {r[f'{name}_doc']} @{r[f'{name}_offset']}: "
                  f"{_short(r[f'{name}_snippet'], 48)}")


def _short(text: str | None, n: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[:n - 1] + "…"


# ---- the naive scanner -------------------------------------------------------------------------------

def _drop_pattern() -> re.Pattern:
    """Every code point whose category is punctuation, separator (space), symbol or control."""
    ranges, start = [], None
    for code in range(0x110000):
        cat = unicodedata.category(chr(code))
        drop = cat[0] in "PZS" or cat in ("Cc", "Cf", "Cs")
        if drop and start is None:
            start = code
        elif not drop and start is not None:
            ranges.append((start, code - 1))
            start = None
    if start is not None:
        ranges.append((start, 0x10FFFF))
    return re.compile("[" + "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                                     for a, b in ranges) + "]+")


class Naive:
    """A dict of every 13-character slice of every item field's normalised text, and a scan that
    looks each slice of each document up in it."""

    def __init__(self, items: list[dict], n: int = NGRAM):
        from pipeline.contamination.index import FIELDS as ITEM_FIELDS
        from pipeline.contamination.index import field_parts
        from pipeline.script import convert

        self.n, self.convert, self.drop = n, convert, _drop_pattern()
        self.slices: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            parts = field_parts(item)
            for f, field in enumerate(ITEM_FIELDS):
                for text in parts[field]:
                    key = self.normalise(text)
                    for j in range(len(key) - n + 1):
                        self.slices.setdefault(key[j:j + n], []).append(2 * i + f)

    def normalise(self, text: str) -> str:
        return self.drop.sub("", self.convert(text, "t2s")).lower()

    @staticmethod
    def _texts(value) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return [t for v in value for t in Naive._texts(v)]
        return []

    @staticmethod
    def _get(record, path: list[str]):
        for key in path:
            if isinstance(record, dict):
                record = record.get(key)
            elif isinstance(record, list):
                record = [r.get(key) for r in record if isinstance(r, dict)]
            else:
                return None
        return record

    def scan(self, files: list[str], fields: list[str]) -> tuple[set[int], int]:
        """The units (item x field) with any slice found, and the bytes read."""
        paths = [f.split(".") for f in fields]
        hit: set[int] = set()
        nbytes, n, slices = 0, self.n, self.slices
        for file in files:
            with open(file, "rb") as f:
                data = f.read()
            nbytes += len(data)
            records = json.loads(data)
            for record in records if isinstance(records, list) else [records]:
                if not isinstance(record, dict):
                    continue
                text = "\n".join(t for p in paths for t in self._texts(self._get(record, p)) if t)
                key = self.normalise(text)
                for j in range(len(key) - n + 1):
                    units = slices.get(key[j:j + n])
                    if units is not None:
                        hit.update(units)
        return hit, nbytes


# ---- the big corpus ----------------------------------------------------------------------------------

PUNCTUATION = [str.maketrans({"，": ",", "。": ".", "？": "?", "！": "!", "：": ":", "；": ";"}),
               str.maketrans({"，": " ", "。": "\n", "、": " ", "；": " "}),
               str.maketrans({"，": "、", "。": "．", "「": "“", "」": "”"})]


def generate(dist: str, out: str, target_bytes: int, shards: int, seed: int = 0) -> None:
    """Shuffled, perturbed copies of chinese-poetry's documents as jsonl shards, until target_bytes.
    Per copy: 1-3% of the CJK characters swapped with the next or replaced by a common character,
    5% of documents converted s2t and 5% t2s, 30% with another punctuation."""
    from pipeline.contamination.scan import Documents, FileStats, parse_json
    from pipeline.script import convert

    spec = poetry_spec(Path(dist))
    docs = Documents(spec.fields, None)
    texts: list[str] = []
    for file in shard_paths(spec):
        texts += parse_json(Path(file).read_bytes(), docs, FileStats(file))[0]
    sample = np.frombuffer("".join(texts[::50]).encode("utf-32-le"), dtype=np.uint32)
    counts = np.bincount(sample[(sample >= 0x4E00) & (sample <= 0x9FFF)])
    alphabet = np.argsort(counts)[::-1][:3000].astype(np.uint32)
    tmp = Path(out + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    handles = [open(tmp / f"part-{s:03d}.jsonl", "w", encoding="utf-8") for s in range(shards)]
    written, copy, line = 0, 0, 0
    try:
        while written < target_bytes:
            rng = np.random.default_rng(seed + copy)
            rate = 0.01 + 0.005 * (copy % 5)
            order = rng.permutation(len(texts))
            for start in range(0, len(order), 50_000):
                chunk = [texts[i] for i in order[start:start + 50_000].tolist()]
                what = rng.random(len(chunk))
                for j in np.flatnonzero(what < 0.10).tolist():
                    chunk[j] = convert(chunk[j], "s2t" if what[j] < 0.05 else "t2s")
                for j in np.flatnonzero((what >= 0.10) & (what < 0.40)).tolist():
                    chunk[j] = chunk[j].translate(PUNCTUATION[j % len(PUNCTUATION)])
                codes = np.frombuffer("\x1e".join(chunk).encode("utf-32-le"), dtype=np.uint32).copy()
                cjk = (codes >= 0x4E00) & (codes <= 0x9FFF)
                pick = np.flatnonzero(cjk & (rng.random(len(codes)) < rate))
                swap = pick[(pick % 2 == 0) & (pick + 1 < len(codes))]
                swap = swap[cjk[swap + 1]]
                codes[swap], codes[swap + 1] = codes[swap + 1], codes[swap].copy()
                replace = pick[pick % 2 == 1]
                codes[replace] = alphabet[rng.integers(len(alphabet), size=len(replace))]
                chunk = codes.tobytes().decode("utf-32-le").split("\x1e")
                lines = [json.dumps({"id": f"c{copy}-{start + j}", "text": t}, ensure_ascii=False) + "\n"
                         for j, t in enumerate(chunk)]
                for s in range(shards):
                    block = "".join(lines[s::shards])
                    handles[(s + line) % shards].write(block)
                    written += len(block.encode())
                line += 1
                if written >= target_bytes:
                    break
            copy += 1
    finally:
        for h in handles:
            h.close()
    (tmp / "MANIFEST.json").write_text(json.dumps({"source": f"{PACKAGE}@{VERSION}", "copies": copy,
                                                   "bytes": written, "shards": shards, "seed": seed}))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


def big_corpus(dist: Path, gb: float, shards: int = 24) -> tuple[Path, dict, float | None]:
    """The folder of the --gb corpus, its manifest, and how long making it took (None: reused)."""
    folder = CORPORA / f"{PACKAGE}-{VERSION}-perturbed-{gb:g}gb"
    manifest = folder / "MANIFEST.json"
    if manifest.is_file():
        return folder, json.loads(manifest.read_text()), None
    import multiprocessing

    print(f"making the {gb:g} GB corpus in {folder.relative_to(ROOT)} ...", flush=True)
    started = time.perf_counter()
    # in a process of its own: the documents and copies it holds are not part of this process's RSS
    child = multiprocessing.get_context("spawn").Process(target=generate,
                                                         args=(str(dist), str(folder), int(gb * 2**30), shards))
    child.start()
    child.join()
    if child.exitcode != 0 or not manifest.is_file():
        raise SystemExit(f"making the corpus failed (exit code {child.exitcode})")
    return folder, json.loads(manifest.read_text()), time.perf_counter() - started


def ray_start(workers: int) -> float:
    from pipeline.contamination.engines import ray_session

    started = time.perf_counter()
    ray_session(None, workers)
    return time.perf_counter() - started


# ---- main --------------------------------------------------------------------------------------------

def print_stored_index(items: list[dict], whole) -> None:
    """What a scan now pays for the index: reading each benchmark's `item_ngrams` table (written
    by its prepare run) and merging them, against building the index from the items."""
    import tempfile

    import pyarrow.parquet as pq

    from pipeline.contamination.index import build_index, index_table, merged

    with tempfile.TemporaryDirectory(prefix="wenheng-index-") as tmp:
        files = []
        for benchmark in sorted({it["benchmark"] for it in items}):
            files.append(Path(tmp) / f"{benchmark}.parquet")
            pq.write_table(index_table(build_index([it for it in items if it["benchmark"] == benchmark], NGRAM)),
                           files[-1])
        started = time.perf_counter()
        stored = merged([pq.read_table(f) for f in files], NGRAM)
        seconds = time.perf_counter() - started
        size_mb = sum(f.stat().st_size for f in files) / 1e6
    print(f"  a scan reads it from the item_ngrams tables ({size_mb:.0f} MB) and merges them in {seconds:.1f} s; "
          f"same digest as the index built whole: {stored.digest == whole.digest}")


def main() -> None:
    from prepare import UPSTREAM

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="chinese-poetry only: no big corpus, no Ray")
    parser.add_argument("--gb", type=float, default=1.0, metavar="N", help="size of the big corpus in GiB (1.0)")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray engine")
    parser.add_argument("--ray-mb", type=float, default=0, metavar="MB",
                        help="scan only the first shards, about MB of them, with Ray (and local, to compare)")
    parser.add_argument("--upstream", type=Path, default=UPSTREAM)
    parser.add_argument("--workers", type=int, default=2, help="processes of the local engine, CPUs of Ray (2)")
    parser.add_argument("--planted", type=int, default=150, metavar="N",
                        help="items planted per shape and script for the recall targets (perf/leakage.py; 0: skip)")
    args = parser.parse_args()
    workers = args.workers
    print(f"{os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"local engine and Ray with {workers} workers")

    from leakage import contaminated, old_rule, positives, print_levels, print_recall

    from pipeline import paths
    from pipeline.contamination.index import build_index
    from pipeline.contamination.overlap import overlap_rows

    dist = fetch_poetry()
    spec = poetry_spec(dist)
    describe(dist, spec)

    started = time.perf_counter()
    items = benchmark_items(args.upstream)
    built = time.perf_counter()
    index = build_index(items, NGRAM)
    indexed = time.perf_counter()
    print(f"items: {len(items):,} {dict(Counter(it['benchmark'] for it in items))} in {built - started:.1f} s; "
          f"index of {len(index.hashes):,} distinct {NGRAM}-grams over {index.units:,} fields in "
          f"{indexed - built:.1f} s (neither counted below)")
    print_stored_index(items, index)

    # ---- 2. the local engine on chinese-poetry: throughput, then the verdicts
    print()
    scan, wall, rss_mb, procs = timed_scan(spec, "chinese-poetry", index, "local", workers)
    local_rate = scan.bytes_scanned / 1e6 / wall
    print(scan_line(f"local engine, {workers} workers, chinese-poetry", scan, wall, rss_mb, procs))
    started = time.perf_counter()
    rows = overlap_rows(index, scan, "chinese-poetry", spec)
    print(f"  verdicts (levels, evidence) in {time.perf_counter() - started:.1f} s")
    # the rule before levels, on every n-gram (no template, no passage): the baseline, and what the
    # naive scanner below is compared with
    plain = build_index(items, NGRAM, passages=lambda item: [], template_min_items=len(items) + 1)
    plain.gram_kind[:] = 0
    plain_scan, *_ = timed_scan(spec, "chinese-poetry-plain", plain, "local", workers)
    plain_rows = overlap_rows(plain, plain_scan, "chinese-poetry", spec)
    before = {r["item_id"]: old_rule(r) if r["input_ngrams"] + r["label_ngrams"] else None for r in plain_rows}
    by_id = {it["item_id"]: it for it in items}
    print_levels(f"per benchmark (contaminated: item or item_with_answer, threshold {spec.threshold}; before: a "
                 "field's share of all its n-grams >= the threshold)", rows, before)
    print_examples(rows, by_id, dist)
    results = {"poetry": (wall, local_rate, rss_mb), "negative": rows}

    # ---- 3. the naive scanner on the same files
    print()
    started = time.perf_counter()
    naive = Naive(items)
    built = time.perf_counter()
    files = shard_paths(spec)
    hit, nbytes = naive.scan(files, spec.fields)
    naive_wall = time.perf_counter() - built
    naive_rate = nbytes / 1e6 / naive_wall
    print(f"naive scanner, 1 core, chinese-poetry: {len(files):,} files, {nbytes / 1e6:,.1f} MB in {naive_wall:.1f} s "
          f"= {naive_rate:,.1f} MB/s (its dict of {len(naive.slices):,} slices built in {built - started:.1f} s, "
          f"not counted)")
    print(f"  wenheng / naive: {local_rate / naive_rate:.1f}x MB/s ({workers} workers against 1 core; "
          f"{local_rate / naive_rate / workers:.1f}x per core)")
    ours = {r["item_id"] for r in plain_rows if _any_hit(r)}
    theirs = {items[u // 2]["item_id"] for u in hit}
    both = ours & theirs
    print(f"  items with any {NGRAM}-gram hit: wenheng {len(ours):,}, naive {len(theirs):,}, both {len(both):,}, "
          f"wenheng only {len(ours - theirs):,}, naive only {len(theirs - ours):,}; "
          f"agreement (Jaccard) {len(both) / max(len(ours | theirs), 1):.2%}")
    for label, only in (("wenheng only", sorted(ours - theirs)[:3]), ("naive only", sorted(theirs - ours)[:3])):
        for item_id in only:
            it = by_id[item_id]
            print(f"    {label}: {item_id}: {_short(it.get('context'), 30)} {_short(it.get('question'), 50)}")
    # what the big scan's peak must not count: this script's own leftovers (an asset holds only the
    # items and their index while it scans)
    del naive, hit, plain, plain_scan, plain_rows, scan
    gc.collect()
    results["naive"] = (naive_wall, naive_rate)

    # ---- 4. the big corpus: local, then Ray
    if not args.quick:
        print()
        folder, manifest, made = big_corpus(dist, args.gb)
        big = CorpusSpec(paths=[str(folder / "*.jsonl")], format="jsonl", fields=BIG_FIELDS, id_field="id",
                         version=f"{VERSION}-perturbed", ngram=NGRAM)
        shards = shard_paths(big)
        print(f"big corpus: {folder.relative_to(ROOT)}: {len(shards)} jsonl shards, {manifest['bytes'] / 1e9:.2f} GB "
              f"({manifest['bytes'] / 2**30:.2f} GiB), {manifest['copies']} perturbed copies of chinese-poetry; "
              + (f"made in {made:.1f} s (not counted)" if made is not None else "reused (made by an earlier run)"))
        scan, wall, rss_mb, procs = timed_scan(big, "big", index, "local", workers)
        print(scan_line(f"local engine, {workers} workers, big corpus", scan, wall, rss_mb, procs))
        results["big"] = (wall, scan.bytes_scanned, rss_mb)
        big_rows = overlap_rows(index, scan, "big", big)
        print(f"  items contaminated: {sum(bool(r['contaminated']) for r in big_rows):,}, "
              f"source_only: {sum(r['level'] == 'source_only' for r in big_rows):,}")
        local_matches = scan.matches
        del scan
        if not args.no_ray:
            ray_spec, subset = big, None
            if args.ray_mb:
                keep, size = [], 0
                for shard in shards:
                    if size >= args.ray_mb * 1e6:
                        break
                    keep.append(shard)
                    size += os.path.getsize(shard)
                ray_spec = big.model_copy(update={"paths": keep})
                subset = size
                print(f"Ray on a subset: the first {len(keep)} shards, {size / 1e6:,.0f} MB (--ray-mb); "
                      f"the local engine again on the same subset, to compare")
                scan, wall, rss_mb, procs = timed_scan(ray_spec, "subset", index, "local", workers)
                print(scan_line(f"local engine, {workers} workers, subset", scan, wall, rss_mb, procs))
                results["big"] = (wall, scan.bytes_scanned, results["big"][2])
                local_matches = scan.matches
            start_s = ray_start(workers)
            print(f"Ray: a local Ray with {workers} CPUs started in {start_s:.1f} s (not counted)")
            scan, wall, rss_mb, procs = timed_scan(ray_spec, "ray", index, "ray", workers)
            print(scan_line(f"Ray engine, {workers} CPUs, {'subset' if subset else 'big corpus'}", scan, wall,
                            rss_mb, procs))
            same = scan.matches.equals(local_matches)
            print(f"  ray / local wall time: {wall / results['big'][0]:.2f}; matches identical to the local "
                  f"engine's: {same}")
            results["ray"] = (wall, rss_mb, subset, same)
            import ray
            ray.shutdown()

    # ---- 5. planted items (perf/leakage.py): recall
    if args.planted:
        recall_results, _ = positives(items, index, spec, paths.cache_dir() / "perf-leakage", args.planted, 20261127)
        results["recall"] = print_recall(recall_results)

    # ---- 6. the targets
    print()
    print("targets:")

    def target(ok: bool, what: str, figure: str) -> None:
        print(f"  {'PASS' if ok else 'FAIL'}  {what:<44} {figure}")

    if "big" in results:
        wall, nbytes, _ = results["big"]
        target(nbytes >= 1e9 and wall <= TARGET_SECONDS, f">= 1 GB end to end in <= {TARGET_SECONDS:.0f} s",
               f"{nbytes / 1e9:.2f} GB in {wall:.1f} s ({nbytes / 1e6 / wall:,.1f} MB/s, {workers} workers)")
    else:
        print(f"  ----  >= 1 GB end to end in <= {TARGET_SECONDS:.0f} s{'':<19} not run (--quick)")
    speedup = local_rate / naive_rate
    target(speedup >= TARGET_SPEEDUP, f">= {TARGET_SPEEDUP:.0f}x the naive scanner (MB/s, chinese-poetry)",
           f"{speedup:.1f}x ({local_rate:,.1f} against {naive_rate:,.1f} MB/s)")
    peaks = {"chinese-poetry": results["poetry"][2], **({"big corpus": results["big"][2]} if "big" in results else {})}
    target(max(peaks.values()) <= TARGET_RSS_MB, f"peak RSS <= {TARGET_RSS_MB / 1024:.0f} GB (local engine)",
           ", ".join(f"{k} {v:,.0f} MB" for k, v in peaks.items()))
    checked = [r for r in results["negative"] if r["status"] == "checked"]
    rates = {b: sum(contaminated(r) for r in checked if r["benchmark"] == b)
             / max(sum(r["benchmark"] == b for r in checked), 1) for b in sorted({r["benchmark"] for r in checked})}
    worst = max(rates, key=rates.get)
    old = [v for v in before.values() if v is not None]
    target(rates[worst] <= 0.005, "chinese-poetry: contaminated <= 0.5% per benchmark",
           f"highest {worst} {rates[worst]:.2%} (before: {sum(old) / max(len(old), 1):.1%} of all items checked)")
    if "recall" in results:
        for name, floor, what in (("answered", 0.95, "answer planted"), ("question", 0.90, "question alone")):
            found, planted = results["recall"][name]
            target(found >= floor * planted, f"recall >= {floor:.0%}, {what}",
                   f"{found:,}/{planted:,} = {found / max(planted, 1):.1%}")
    if "ray" in results:
        wall, rss_mb, subset, same = results["ray"]
        ratio = wall / results["big"][0]
        target(ratio <= TARGET_RAY, f"Ray within {TARGET_RAY}x of local",
               f"{ratio:.2f}x ({wall:.1f} s against {results['big'][0]:.1f} s"
               f"{f', on a {subset / 1e6:,.0f} MB subset' if subset else ''}; Ray's peak RSS {rss_mb:,.0f} MB)")
    else:
        print(f"  ----  Ray within {TARGET_RAY}x of local{'':<22} not run")


if __name__ == "__main__":
    main()
