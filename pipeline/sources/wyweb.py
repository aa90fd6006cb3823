"""WYWEB: <dir>/<task>/<split>.<ext>, one folder per task, no id fields (the line number is the key).

Implemented so far: WYWMT (`classical<TAB>modern`, translation) and TLC
(`period<TAB>dynasty<TAB>text`, period classification verbalised as lettered options)."""

from __future__ import annotations

from pipeline.config import SourceSpec
from pipeline.sources import ParseResult, display_path, read_text

TLC_PERIODS = ["远古", "中古", "近古"]   # fixed order, so option letters are stable across versions
LICENSE = "no licence file published"


def parse(spec: SourceSpec) -> ParseResult:
    result = ParseResult()
    root = spec.path
    readers = {"wywmt": _wywmt, "tlc": _tlc}
    for task, reader in readers.items():
        for path in sorted((root / task).glob("*.tsv")):
            shown = display_path(path, root)
            try:
                lines = read_text(path).split("\n")
            except UnicodeDecodeError as exc:
                result.raw_counts[shown] += 1
                result.reject("wyweb", shown, "file", f"not UTF-8: {exc}", "")
                continue
            if lines and lines[-1] == "":
                lines.pop()  # a trailing newline is not a row
            for number, line in enumerate(lines, start=1):
                result.raw_counts[shown] += 1
                item, reason = reader(line)
                if item is None:
                    result.reject("wyweb", shown, f"line {number}", reason, line)
                    continue
                split = path.stem
                item.update({
                    "item_id": f"wyweb/{split}/{task}/{number}",
                    "benchmark": "wyweb",
                    "source_version": spec.version,
                    "split": split,
                    "task": task,
                    "domain": "ancient prose",
                    "capability": "understanding",
                    "references": item.get("references", []),
                    "source_file": shown,
                    "source_locator": f"line {number}",
                    "license": spec.license or LICENSE,
                })
                result.items.append(item)
    return result


def _wywmt(line: str):
    parts = line.split("\t")
    if len(parts) != 2:
        return None, f"expected 2 tab-separated fields, got {len(parts)}"
    source, target = (p.strip() for p in parts)
    if not source or not target:
        return None, "empty source or reference translation"
    return {"task_group": "translation", "format": "translation", "context": source,
            "question": None, "choices": [], "answer": target, "metadata": {"direction": "classical->modern"}}, ""


def _tlc(line: str):
    parts = line.split("\t")
    if len(parts) != 3:
        return None, f"expected 3 tab-separated fields, got {len(parts)}"
    period, dynasty, text = (p.strip() for p in parts)
    if period not in TLC_PERIODS:
        return None, f"period label {period!r} not in {TLC_PERIODS}"
    if not text:
        return None, "empty text"
    letter = "ABC"[TLC_PERIODS.index(period)]
    return {"task_group": "classification", "format": "classification", "context": text,
            "question": None, "choices": list(TLC_PERIODS), "answer": letter,
            "metadata": {"dynasty": dynasty, "label": period}}, ""
