"""Ingestion and dedup at 200,000 items: a synthetic file in WenMind's JSON format through the
real adapter, standardize and `pipeline.dedup.cluster`, with wall time and peak memory.

    .venv/bin/python perf/ingest_200k.py [--items 200000] [--seed 0] [--keep FILE]
    .venv/bin/python perf/ingest_200k.py --baseline <git revision>   # also run that revision
    .venv/bin/python perf/ingest_200k.py --text-scale 3              # texts three times as long

The file is generated here (nothing is downloaded): Chinese-like text drawn from a Zipf-weighted
pool of CJK characters with clause punctuation, lengths from a log-normal (median about 60
characters, a long tail up to 2,000), 42 tasks with their own instruction templates, MCQ / QA / FB
in WenMind's proportions, and a realistic share of duplicates: 2% exact copies, 6% near copies
(other punctuation, up to 1% of the characters changed: most are found) and 2% loose copies
(15-30% changed: not duplicates).

Each measurement runs in a fresh child process, so its peak RSS (`ru_maxrss` from `wait4`) is
that run's alone; the child also records the peak after each stage, which says where memory
goes. With `--baseline REV`, the `pipeline/` package of that git revision is exported to a
temporary folder and measured the same way in the same run, on the same file.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (fine task en, fine zh, coarse en, coarse zh, format, template with {} for the item's text)
TASKS = [
    ("function words", "虚词", "function words", "虚词", "MCQ", "{}。上面句子中加点字的用法是："),
    ("homophones", "通假字", "homophones", "通假字", "MCQ", "下列句子中含有通假字的一项是：{}"),
    ("polysemy", "单字多义", "polysemy", "单字多义", "QA", "“{}”中加点字的意思是什么？"),
    ("classical Chinese to modern Chinese", "文言文翻译", "translation", "翻译", "QA",
     "请把下面的文言文翻译成现代汉语：{}"),
    ("modern Chinese to classical Chinese", "白话文翻译", "translation", "翻译", "QA",
     "请把下面的现代汉语翻译成文言文：{}"),
    ("ancient poetry translation", "古诗词翻译", "translation", "翻译", "QA", "请翻译这首古诗词：{}"),
    ("punctuation", "断句", "punctuation", "断句", "QA", "请给下面的文言文加上标点：{}"),
    ("named entity recognition", "命名实体识别", "NER", "命名实体识别", "QA",
     "找出下面句子中的人名、地名和书名：{}"),
    ("sentiment classification", "情感分类", "sentiment", "情感分类", "MCQ", "{}这首诗表达的情感是："),
    ("topic classification", "题材分类", "topic", "题材分类", "MCQ", "{}这首诗的题材是："),
    ("content Q&A", "内容问答", "content", "内容问答", "QA", "阅读下文，回答问题。{}"),
    ("title and author Q&A", "标题作者问答", "content", "内容问答", "QA", "“{}”出自哪首诗？作者是谁？"),
    ("analysis of imagery", "意象分析", "appreciation", "赏析", "QA", "分析下面诗句中的意象：{}"),
    ("appreciation exam questions", "鉴赏考题", "appreciation", "赏析", "QA", "{}请赏析这两句诗的妙处。"),
    ("knowledge of sinology Q&A", "国学常识问答", "sinology", "国学常识", "QA", "{}"),
    ("genre judgment", "体裁判断", "genre", "体裁判断", "MCQ", "{}请问这首古诗词的体裁是什么？"),
    ("poet introduction", "诗人介绍", "poet", "诗人介绍", "QA", "请介绍一下诗人{}的生平。"),
    ("word explanation", "词语解释", "words", "词语", "QA", "解释下列句子中的词语：{}"),
    ("write the next sentence", "写出下句", "dictation", "默写", "QA", "{}的下一句是什么？"),
    ("write the previous sentence", "写出上句", "dictation", "默写", "QA", "{}的上一句是什么？"),
    ("ancient prose writing", "古文写作", "writing", "写作", "QA", "以“{}”为题，写一篇文言短文。"),
    ("historical Chinese phonology", "音韵", "phonology", "音韵", "QA", "{}中这个字的中古音韵地位是什么？"),
    ("synonyms", "近义词", "words", "词语", "QA", "写出下列词语的近义词：{}"),
    ("idiom explanation", "成语解释", "idioms", "成语", "QA", "请解释成语“{}”的意思。"),
    ("the origin of idioms", "成语出处", "idioms", "成语", "QA", "成语“{}”出自哪里？"),
    ("idiom finding", "成语查找", "idioms", "成语", "QA", "根据描述找出成语：{}"),
    ("riddle", "谜语", "riddle", "谜语", "QA", "猜一猜这个谜语：{}"),
    ("reading comprehension", "阅读理解", "reading", "阅读理解", "QA", "阅读下面的文言文，回答问题。{}"),
    ("free appreciation", "自由赏析", "appreciation", "赏析", "QA", "请自由赏析：{}"),
    ("xiehouyu", "歇后语", "xiehouyu", "歇后语", "QA", "{}——下半句是什么？"),
    ("couplet following", "对联续写", "couplet", "对联", "QA", "上联：{}，请对出下联。"),
    ("couplet writing", "对联写作", "couplet", "对联", "QA", "以“{}”为主题写一副对联。"),
    ("HengPi writing", "横批写作", "couplet", "对联", "QA", "为这副对联写横批：{}"),
    ("ancient poetry to English", "古诗英译", "translation", "翻译", "QA", "Translate into English: {}"),
    ("Ci writing", "词写作", "writing", "写作", "QA", "以{}为词牌，写一首词。"),
    ("sentence structure identification", "句式判断", "sentence structure", "句式", "MCQ",
     "{}这个句子是什么句式？"),
    ("elliptical sentence", "省略句", "sentence structure", "句式", "QA", "{}是一句省略句，省略了什么？"),
    ("comprehension dictation", "理解性默写", "dictation", "默写", "FB", "{}，____。"),
    ("poetry writing", "诗歌写作", "writing", "写作", "QA", "以“{}”为题写一首五言绝句。"),
    ("Qu writing", "曲写作", "writing", "写作", "QA", "以{}为曲牌写一支小令。"),
    ("inverted sentence structure", "倒装句语序", "sentence structure", "句式", "QA",
     "{}上面倒装句的正确语序是："),
    ("inverted sentence types", "倒装句类型", "sentence structure", "句式", "MCQ", "{}这个倒装句属于哪一类？"),
]
_PUNCTUATION = str.maketrans("，。；、", "、；。，")
DOMAINS = ("ancient prose", "ancient poetry", "ancient literary knowledge")
CAPABILITIES = ("understanding", "generation", "knowledge")


def generate(path: Path, n: int, seed: int, text_scale: float = 1.0) -> dict[str, int]:
    """Writes n items in WenMind's format to `path`; returns how many of each kind."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pool = (0x4E00 + rng.choice(0x9FA5 - 0x4E00, 4000, replace=False)).astype(np.uint32)
    weights = 1.0 / np.arange(1, len(pool) + 1) ** 0.9
    weights /= weights.sum()
    commas = np.array([ord("，"), ord("。"), ord("；"), ord("、")], dtype=np.uint32)

    def texts(lengths: np.ndarray) -> list[str]:
        codes = pool[rng.choice(len(pool), int(lengths.sum()), p=weights)]
        clause = rng.random(len(codes)) < 1 / 9  # a clause every ~9 characters
        codes[clause] = commas[rng.integers(0, len(commas), int(clause.sum()))]
        cuts = np.cumsum(lengths)[:-1]
        return [part.tobytes().decode("utf-32-le") for part in np.split(codes, cuts)]

    def edit(text: str, share: float) -> str:
        chars = list(text)
        for i in np.flatnonzero(rng.random(len(chars)) < share).tolist():
            chars[i] = chr(int(pool[rng.integers(0, len(pool))]))
        return "".join(chars) if chars != list(text) or not chars else text

    lengths = np.clip(rng.lognormal(np.log(60 * text_scale), 0.8, n), 6, 2000 * text_scale).astype(np.int64)
    bodies = texts(lengths)
    options = texts(rng.integers(2, 9, 4 * n))
    task_of = rng.choice(len(TASKS), n, p=_task_weights(rng))
    kind = rng.random(n)
    counts = {"items": n, "exact": 0, "near": 0, "loose": 0}
    records = []
    for i in range(n):
        en, zh, coarse_en, coarse_zh, fmt, template = TASKS[int(task_of[i])]
        body, choices, answer = bodies[i], options[4 * i:4 * i + 4], ""
        if i > 1000 and kind[i] < 0.10:  # a copy of an earlier item of the same task
            j = int(rng.integers(0, i))
            while records[j]["fine_grained_task_en"] != en:
                j = int(rng.integers(0, i))
            body, choices, answer = records[j]["_body"], records[j]["_choices"], records[j]["answer"]
            if kind[i] < 0.02:
                counts["exact"] += 1
            elif kind[i] < 0.08:
                counts["near"] += 1  # other punctuation, and up to 1% of the characters changed
                body = edit(body.translate(_PUNCTUATION), rng.uniform(0.0, 0.01))
            else:
                counts["loose"] += 1
                body = edit(body, rng.uniform(0.15, 0.30))
        question = template.format(body)
        if fmt == "MCQ":
            question += "\n" + "  ".join(f"{letter}、{text}" for letter, text in zip("ABCD", choices))
            answer = answer or "ABCD"[int(rng.integers(0, 4))]
        else:
            answer = answer or body[: max(4, len(body) // 2)]
        records.append({
            "id": i, "domain": DOMAINS[int(task_of[i]) % 3], "capability": CAPABILITIES[int(task_of[i]) % 3],
            "question_format": fmt, "coarse_grained_task_zh": coarse_zh, "coarse_grained_task_en": coarse_en,
            "fine_grained_task_zh": zh, "fine_grained_task_en": en, "question": question, "answer": answer,
            "_body": body, "_choices": choices,
        })
    with path.open("w", encoding="utf-8") as out:
        out.write("[\n")
        for i, rec in enumerate(records):
            public = {k: v for k, v in rec.items() if not k.startswith("_")}
            out.write(("" if i == 0 else ",\n") + json.dumps(public, ensure_ascii=False, indent=4))
        out.write("\n]\n")
    return counts


def _task_weights(rng) -> list[float]:
    weights = [200.0 if k < 12 else 100.0 if k < 33 else 40.0 for k in range(len(TASKS))]
    total = sum(weights)
    return [w / total for w in weights]


def child(path: Path) -> None:
    """One measured run (in its own process): parse, standardize, dedup; prints JSON figures."""
    stages: dict[str, dict[str, float]] = {}
    last = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        stages[name] = {"s": now - last, "peak_mb": _maxrss_mb(resource.RUSAGE_SELF)}
        last = now

    from pipeline.config import SourceSpec
    from pipeline.dedup import cluster
    from pipeline.ingest import parse_source
    from pipeline.standardize import standardize
    stage("imports")
    result = parse_source(SourceSpec("wenmind", path, "synthetic"))
    stage("parse")
    items, duplicates = standardize(result.items)
    del result
    stage("standardize")
    rows, contamination = cluster(items)
    stage("dedup")
    print(json.dumps({
        "items": len(items), "quarantined": len(duplicates), "cluster_rows": len(rows),
        "clusters": len({r["cluster_id"] for r in rows}), "contamination": len(contamination),
        "stages": stages, "package": str(Path(sys.modules["pipeline"].__file__).parent.parent),
    }))


def _maxrss_mb(who) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux: KiB


def measure(path: Path, package_root: Path) -> dict:
    """Runs `child` in a fresh interpreter with `package_root` first on sys.path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package_root), str(ROOT)]))
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", str(path)],
                            env=env, stdout=subprocess.PIPE, cwd=package_root)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"the measured run failed (exit {proc.returncode})")
    figures = json.loads(out.decode().strip().splitlines()[-1])
    figures.update(wall_s=wall, peak_mb=usage.ru_maxrss / 1024)
    return figures


def export_revision(revision: str, into: Path) -> Path:
    """`pipeline/` as it was at `revision`, unpacked under `into` (the working tree is untouched)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision, "pipeline"],
                             check=True, capture_output=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    tar_path = into / "pipeline.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tarred:
        tarred.extractall(into, filter="data")
    return into


def report(label: str, f: dict) -> None:
    work = sum(s["s"] for name, s in f["stages"].items() if name != "imports")
    print(f"{label}: {f['items']:,} items, {f['clusters']:,} clusters ({f['cluster_rows']:,} items in them); "
          f"parse + standardize + dedup {work:.1f} s ({f['items'] / work:,.0f} items/s), "
          f"peak RSS {f['peak_mb']:,.0f} MB, process wall {f['wall_s']:.1f} s")
    print("  " + ", ".join(f"{name} {s['s']:.1f} s -> peak {s['peak_mb']:,.0f} MB"
                           for name, s in f["stages"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--text-scale", type=float, default=1.0,
                        help="multiply the text lengths (1: WenMind's, about 730 bytes per item in the file)")
    parser.add_argument("--keep", type=Path, help="write the synthetic file here and keep it")
    parser.add_argument("--baseline", metavar="REV", help="also measure pipeline/ of this git revision")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if args.generate:
        print(json.dumps(generate(args.generate, args.items, args.seed, args.text_scale)))
        return
    with tempfile.TemporaryDirectory(prefix="wenheng-200k-") as tmp:
        path = args.keep or Path(tmp) / "WenMind_synthetic.json"
        started = time.perf_counter()
        # in a child too: a child's ru_maxrss starts from its parent's size at fork time (Linux)
        generated = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--generate", str(path),
                                    "--items", str(args.items), "--seed", str(args.seed),
                                    "--text-scale", str(args.text_scale)],
                                   check=True, capture_output=True, text=True)
        counts = json.loads(generated.stdout)
        print(f"generated {path.name}: {counts['items']:,} items ({counts['exact']:,} exact, {counts['near']:,} near "
              f"and {counts['loose']:,} loose copies), {path.stat().st_size / 2**20:,.0f} MiB "
              f"in {time.perf_counter() - started:.1f} s")
        current = measure(path, ROOT)
        report("this checkout", current)
        if args.baseline:
            base_root = export_revision(args.baseline, Path(tmp) / "baseline")
            base = measure(path, base_root)
            if Path(base["package"]) != base_root:
                raise SystemExit(f"the baseline run imported pipeline/ from {base['package']}, not {base_root}")
            report(f"baseline {args.baseline}", base)
            same = (base["clusters"], base["cluster_rows"], base["contamination"]) == \
                (current["clusters"], current["cluster_rows"], current["contamination"])
            print(f"baseline / this checkout: peak RSS {base['peak_mb'] / current['peak_mb']:.2f}x, "
                  f"wall {base['wall_s'] / current['wall_s']:.2f}x; same clusters: {same}")


if __name__ == "__main__":
    main()
