"""A toy benchmark kept as one folder, as a sixth benchmark would be: this card, its protocol and
its sample file. tests/integration/graph/test_extra_card.py registers it through WENHENG_CARDS
and runs it through the whole graph; nothing outside this folder names it."""

from pipeline.benchmark_card import BenchmarkCard
from pipeline.config import SourceSpec
from pipeline.sources.accounting import ParseResult
from pipeline.sources.jsonl import parse_files, record_id
from pipeline.sources.keys import provenance
from pipeline.sources.layout import JSONL


def parse(spec: SourceSpec) -> ParseResult:
    def rows(split, shown, objects, result):
        for locator, rec in objects:
            result.raw_counts[shown] += 1
            if record_id(rec) is None or rec.get("answer") not in ("A", "B"):
                result.reject(spec.benchmark, shown, locator, "needs id and answer A or B", rec)
                continue
            result.items.append({
                "item_id": f"toybench/{split}/pairs/{rec['id']}",
                **provenance(spec, shown, locator, "Apache-2.0"),
                "split": split, "task": "pairs", "task_group": "pairs", "domain": None, "capability": None,
                "format": "mcq_single", "context": None, "question": rec["question"],
                "choices": rec["options"], "answer": rec["answer"], "references": [], "metadata": {}})
    return parse_files(spec, rows)


CARD = BenchmarkCard(name="toybench", title="Toy bench", paper="written for wenheng's tests", parse=parse,
                     layout=JSONL)
