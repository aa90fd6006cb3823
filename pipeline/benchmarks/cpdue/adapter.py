"""CP-DUE (6 single-choice tasks on ancient poetry): no data is published, so wenheng defines the
file format (see pipeline/sources/README.md): `<dir>/<split>.jsonl`, one question per line.

  CK  {"id","task":"CK","question","options":[3],"answer"}
  TH  {"id","task":"TH","title","author","content","options":[10 themes],"answer"}
  ST  {"id","task":"ST","title","author","content","answer"}        (the 8 styles, A-H)
  WS  {"id","task":"WS","question": poem with one "*","options":[4],"answer"}
  AU  {"id","task":"AU","group","part":"figure|source|meaning","line","options":[3],"answer":"A-D"}
  OQ  {"id","task":"OQ","group","part":"best|worst","options":[3 poems],"answer"}

AU: the paper asks the three questions about one line (allusion figure, source, meaning) in ONE
prompt answered with three letters (e.g. `CAB`), so the three rows of a group become one item:
context = the line, question = the three option blocks as the paper's prompt prints them (each
with its fourth option D = no allusion / not among these, added here), answer = the three
letters in the order figure, source, meaning; `metadata.questions` lists the parts. Its scorer
(`option_sequence`) gives 1 when all three are right (the paper's AU-all) and each question's
0/1 in details (AU Q1-Q3). The item keeps its group's first line as `source_locator` and lists
the other two in `metadata.merged_rows`, which the row reconciliation counts
(`pipeline.sources.accounting.rows_accounted`): raw rows = items + merged rows + quarantined.

OQ: the paper asks best and worst as two prompts, so they stay two items linked by `group`
(`metadata.group`, `metadata.part`); "both right" (OQ-all) is computed per group.

A group that is incomplete or inconsistent is quarantined as a whole (every row of it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipeline.config import SourceSpec
from pipeline.sources.accounting import ParseResult, Row
from pipeline.sources.jsonl import parse_files, record_id, record_task, string_list, text_field
from pipeline.sources.keys import item_id, provenance
from pipeline.sources.options import letter
from pipeline.sources.records import unique_items
from pipeline.sources.text import non_text

LICENSE = "wenheng-defined format; no public CP-DUE data"

# CP-DUE's eight Song-ci styles, in its letter order (A-H; App. C, Table 4). The ST prompt's
# 风格解释 (protocol.yaml) names them with these letters, so an ST row cannot bring its own.
STYLES = ["真率明朗", "高旷清雄", "婉约清新", "奇艳俊秀", "典丽精工", "豪迈奔放", "骚雅清劲", "密丽险涩"]
# AU's fourth option, verbatim from the paper's prompt (Figure 6).
NO_ALLUSION = "没有使用典故或使用的典故不在以上三个选项里。"
# AU's three questions in the paper's order, with the label its prompt gives each option block.
AU_PARTS = {"figure": "典故人物", "source": "典故出处", "meaning": "典故含义"}
# OQ's two prompts differ in one word: the paper's template reads 最好(坏).
OQ_PARTS = {"best": "最好", "worst": "最坏"}


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
    Task("AU", "allusion understanding", 4, 3),   # per question; + the "no allusion" option
    Task("OQ", "overall quality", 5, 3),
]}


def parse(spec: SourceSpec) -> ParseResult:
    return parse_files(spec, lambda split, shown, rows, result: _parse_rows(spec, split, shown, rows, result))


def au_question(blocks: list[tuple[str, list[str]]]) -> str:
    """AU's three option blocks as the paper's prompt prints them: `典故人物:A. …` then B-D, one
    option per line, for each (label, options with D) in order."""
    return "\n".join(f"{label}:" + "\n".join(f"{letter(i)}. {text}" for i, text in enumerate(options))
                     for label, options in blocks)


def _parse_rows(spec: SourceSpec, split: str, shown: str, rows: Iterator[tuple[str, dict]],
                result: ParseResult) -> None:
    accepted: list[tuple[str, dict, dict]] = []
    for locator, record, item in unique_items(result, "cpdue", shown, rows, lambda _, record: _item(record),
                                              key=lambda record, _: record_id(record)):
        item.update({
            "item_id": item_id("cpdue", split, item["task"], record_id(record)),
            **provenance(spec, shown, locator, LICENSE),
            "split": split,
            "domain": "ancient poetry",
        })
        accepted.append((locator, record, item))
    broken = _broken_groups([item for _, _, item in accepted])
    au_groups: dict[str, list[tuple[str, dict]]] = {}
    for locator, record, item in accepted:
        group = item["metadata"].get("group")
        if (item["task"], group) in broken:
            result.reject("cpdue", shown, locator, broken[(item["task"], group)], record)
        elif item["task"] == "AU":
            au_groups.setdefault(group, []).append((locator, item))
        else:
            result.items.append(item)
    for group, members in au_groups.items():
        result.items.append(_merge_au(spec, split, shown, group, members))


def _merge_au(spec: SourceSpec, split: str, shown: str, group: str, members: list[tuple[str, dict]]) -> dict:
    """One AU item from its group's three rows (checked complete and consistent)."""
    by_part = {item["metadata"]["part"]: item for _, item in members}
    ordered = [by_part[part] for part in AU_PARTS]
    in_file = sorted(members, key=lambda member: int(member[0].split()[-1]))   # "line N"
    first = ordered[0]
    metadata: dict[str, Any] = {"level": first["metadata"]["level"], "group": group,
                                "options_per_question": len(first["choices"]), "questions": []}
    for item in ordered:
        extra = {k: v for k, v in item["metadata"].items() if k not in ("level", "group", "part")}
        metadata["questions"].append({"part": item["metadata"]["part"], "label": AU_PARTS[item["metadata"]["part"]],
                                      "id": _row_id(item), **({"meta": extra} if extra else {})})
    # the rows besides the first that this item stands for (pipeline.sources.accounting.MERGED_ROWS)
    metadata["merged_rows"] = [{"source_locator": locator, "id": _row_id(item), "part": item["metadata"]["part"]}
                               for locator, item in in_file[1:]]
    return {
        "task": "AU", "task_group": first["task_group"], "capability": "understanding", "format": "mcq_single",
        "context": first["context"],
        "question": au_question([(AU_PARTS[item["metadata"]["part"]], item["choices"]) for item in ordered]),
        "choices": [], "answer": "".join(item["answer"] for item in ordered), "references": [],
        "metadata": metadata,
        "item_id": item_id("cpdue", split, "AU", group),
        **provenance(spec, shown, in_file[0][0], LICENSE),
        "split": split, "domain": "ancient poetry",
    }


def _row_id(item: dict) -> str:
    return item["item_id"].rsplit("/", 1)[1]


def _item(record: dict) -> Row:
    task, problem = record_task(record, TASKS, str(sorted(TASKS)))
    if problem:
        return None, problem
    wrong = non_text(record, ("question", "title", "author", "content", "line"))
    if wrong:
        return None, wrong
    if task.name == "ST" and record.get("options", STYLES) != STYLES:
        return None, f"ST options must be CP-DUE's eight styles in order ({'、'.join(STYLES)}): its prompt names them"
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
        # the paper's prompt shows the title and the poem (词作: {title} {content}), not the author
        title = text_field(record, "title")
        context = f"{title}\n{content}" if title else content
        metadata.update({k: record[k] for k in ("title", "author") if text_field(record, k)})
    else:
        parts = AU_PARTS if task.name == "AU" else OQ_PARTS
        group, part = record.get("group"), record.get("part")
        if not isinstance(group, (str, int)) or isinstance(group, bool) or str(group).strip() == "":
            return None, f"{task.name} needs 'group' linking its {len(parts)} questions"
        if task.name == "AU" and "/" in str(group):
            return None, "an AU group becomes the item's id: no '/'"
        if not isinstance(part, str) or part not in parts:
            return None, f"part {part!r} is not one of {sorted(parts)}"
        metadata.update({"group": str(group).strip(), "part": part})
        if task.name == "AU":
            context = text_field(record, "line")
            if context is None:
                return None, "missing or empty: line"
        else:
            question = parts[part]
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
