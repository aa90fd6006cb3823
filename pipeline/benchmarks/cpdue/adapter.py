"""CP-DUE (6 single-choice tasks on ancient poetry): no data is published, so wenheng defines the
file format (see pipeline/sources/README.md): `<dir>/<split>.jsonl`, one question per line.

  CK  {"id","task":"CK","question","options":[3],"answer"}
  TH  {"id","task":"TH","title","author","content","options":[10 themes],"answer"}
  ST  {"id","task":"ST","title","author","content","answer"}        (options default to the 8 styles)
  WS  {"id","task":"WS","question": poem with one "*","options":[4],"answer"}
  AU  {"id","task":"AU","group","part":"figure|source|meaning","line","options":[3],"answer":"A-D"}
  OQ  {"id","task":"OQ","group","part":"best|worst","options":[3 poems],"answer"}

AU's three questions about one line, and OQ's best/worst pair over one triplet, are separate
rows linked by `group`, so each is one item scored by the usual option scorer, while "all three"
(AU) and "both" (OQ) accuracy are computed per group. A group that is incomplete or inconsistent
is quarantined as a whole, so every group that reaches the items table can be scored that way.
AU's fourth option ("no allusion, or not among these") is added by the adapter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipeline.config import SourceSpec
from pipeline.sources.reading import ParseResult, letter, provenance
from pipeline.sources.jsonl import parse_files, record_id, string_list, text_field

LICENSE = "wenheng-defined format; no public CP-DUE data"

# CP-DUE's eight Song-ci styles, in its letter order (A-H).
STYLES = ["真率明朗", "高旷清雄", "婉约清新", "奇艳俊秀", "典丽精工", "豪迈奔放", "骚雅清劲", "密丽险涩"]
NO_ALLUSION = "诗句没有用典，或所用典故不在以上选项中"
AU_PARTS = {"figure": "这句诗所用典故涉及的人物是谁？",
            "source": "这句诗所用典故出自哪里？",
            "meaning": "这句诗所用典故表达了什么含义？"}
OQ_PARTS = {"best": "三首作品中，整体写得最好的是哪一首？",
            "worst": "三首作品中，整体写得最差的是哪一首？"}


@dataclass(frozen=True)
class Task:
    name: str
    module: str
    level: int
    n_options: int


TASKS = {t.name: t for t in [
    Task("CK", "cultural knowledge", 1, 3),
    Task("TH", "theme and style", 2, 10),
    Task("ST", "theme and style", 2, 8),
    Task("WS", "word selection", 3, 4),
    Task("AU", "allusion understanding", 4, 3),   # + the adapter's "no allusion" option
    Task("OQ", "overall quality", 5, 3),
]}

Row = tuple[dict[str, Any] | None, str]


def parse(spec: SourceSpec) -> ParseResult:
    return parse_files(spec, lambda split, shown, rows, result: _parse_rows(spec, split, shown, rows, result))


def _parse_rows(spec: SourceSpec, split: str, shown: str, rows: Iterator[tuple[str, dict]],
                result: ParseResult) -> None:
    seen: set[str] = set()
    accepted: list[tuple[str, dict, dict]] = []
    for locator, record in rows:
        item, reason = _item(record)
        if item is None:
            result.reject("cpdue", shown, locator, reason, record)
            continue
        key = record_id(record)
        if key in seen:
            result.reject("cpdue", shown, locator, f"duplicate id {key}", record)
            continue
        seen.add(key)
        item.update({
            "item_id": f"cpdue/{split}/{item['task']}/{key}",
            **provenance(spec, shown, locator, LICENSE),
            "split": split,
            "domain": "ancient poetry",
        })
        accepted.append((locator, record, item))
    broken = _broken_groups([item for _, _, item in accepted])
    for locator, record, item in accepted:
        group = item["metadata"].get("group")
        if (item["task"], group) in broken:
            result.reject("cpdue", shown, locator, broken[(item["task"], group)], record)
        else:
            result.items.append(item)


def _item(record: dict) -> Row:
    if record_id(record) is None:
        return None, "missing or invalid id (a non-empty string or integer without '/')"
    task = TASKS.get(record.get("task"))
    if task is None:
        return None, f"task {record.get('task')!r} is not one of {sorted(TASKS)}"
    options = record.get("options", STYLES if task.name == "ST" else None)
    options = string_list(options, task.n_options)
    if options is None:
        return None, f"{task.name} needs 'options': {task.n_options} non-empty strings"
    if task.name == "AU":
        options = options + [NO_ALLUSION]
    answer = record.get("answer")
    letters = [letter(i) for i in range(len(options))]
    if answer not in letters:
        return None, f"answer {answer!r} is not one of {''.join(letters)}"
    meta = record.get("meta", {})
    if not isinstance(meta, dict):
        return None, "meta must be an object"
    metadata: dict[str, Any] = {**meta, "level": task.level}
    context = question = None
    if task.name in ("CK", "WS"):
        question = text_field(record, "question")
        if question is None:
            return None, "missing or empty: question"
        if task.name == "WS" and question.count("*") != 1:
            return None, "the WS poem must mark its one blank with a single '*'"
    elif task.name in ("TH", "ST"):
        content = text_field(record, "content")
        if content is None:
            return None, "missing or empty: content"
        heading = " ".join(filter(None, (text_field(record, "title"), text_field(record, "author"))))
        context = f"{heading}\n{content}" if heading else content
        metadata.update({k: record[k] for k in ("title", "author") if text_field(record, k)})
    else:
        parts = AU_PARTS if task.name == "AU" else OQ_PARTS
        group, part = record.get("group"), record.get("part")
        if not isinstance(group, (str, int)) or isinstance(group, bool) or str(group).strip() == "":
            return None, f"{task.name} needs 'group' linking its {len(parts)} questions"
        if part not in parts:
            return None, f"part {part!r} is not one of {sorted(parts)}"
        question = parts[part]
        metadata.update({"group": str(group), "part": part})
        if task.name == "AU":
            context = text_field(record, "line")
            if context is None:
                return None, "missing or empty: line"
    return {"task": task.name, "task_group": task.module, "capability": "knowledge" if task.name == "CK"
            else "understanding", "format": "mcq_single", "context": context, "question": question,
            "choices": options, "answer": answer, "references": [], "metadata": metadata}, ""


def _broken_groups(items: list[dict]) -> dict[tuple[str, str], str]:
    """(task, group) -> why the group cannot be scored as a whole."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for item in items:
        if item["task"] in ("AU", "OQ"):
            groups.setdefault((item["task"], item["metadata"]["group"]), []).append(item)
    broken = {}
    for (task, group), members in groups.items():
        parts = sorted(m["metadata"]["part"] for m in members)
        wanted = sorted(AU_PARTS if task == "AU" else OQ_PARTS)
        if parts != wanted:
            broken[(task, group)] = f"{task} group {group} has parts {parts}, needs exactly {wanted}"
        elif task == "AU" and len({m["context"] for m in members}) > 1:
            broken[(task, group)] = f"AU group {group}: its questions quote different lines"
        elif task == "OQ" and members[0]["choices"] != members[1]["choices"]:
            broken[(task, group)] = f"OQ group {group}: best and worst must offer the same three poems"
        elif task == "OQ" and members[0]["answer"] == members[1]["answer"]:
            broken[(task, group)] = f"OQ group {group}: the same poem cannot be both best and worst"
    return broken
