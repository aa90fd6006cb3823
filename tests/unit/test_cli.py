"""The command line's own logic, without running the pipeline: the parser, the end-of-run table,
run ids and where the report's page is."""

from __future__ import annotations

import argparse
import re

import pytest

from pipeline import cli

MATERIALIZATIONS = [
    {"asset": "prompts", "partition": "aceval", "metadata": {"rows": 90}},
    {"asset": "responses", "partition": "aceval|gemma3-270m",
     "metadata": {"prompts": 12345, "cache_hits": 345, "prompts_sent": 11990, "prompts_collapsed": 10, "errors": 3,
                  "engine_seconds": 1234.5678, "output_tokens_per_s": 35.24, "engine": "vllm"}},
    {"asset": "judgements", "partition": "aceval|gemma3-270m", "metadata": {"judge_calls_sent": 1500}},
    {"asset": "responses", "partition": "aceval|oracle",
     "metadata": {"prompts": 9, "cache_hits": 0, "prompts_sent": 9, "errors": 0, "engine_seconds": 0.003,
                  "output_tokens_per_s": 0.0, "engine": "baseline"}},
    {"asset": "responses", "partition": "wenmind|oracle",
     "metadata": {"prompts": 14, "cache_hits": 14, "prompts_sent": 0, "errors": 0, "engine_seconds": 0.0,
                  "output_tokens_per_s": 0.0, "engine": "baseline"}},
    {"asset": "responses", "partition": "cpdue|served",
     "metadata": {"prompts": 20, "cache_hits": 0, "prompts_sent": 20, "errors": 0, "engine_seconds": 4.0,
                  "output_tokens_per_s": 0.0, "engine": "openai"}},
    {"asset": "judgements", "partition": "fuxi|random", "metadata": {"judge_calls_sent": 0}},  # no responses: no row
]


def test_the_end_of_run_table_has_one_row_per_partition_with_formatted_numbers():
    rows = cli.partition_rows(MATERIALIZATIONS)
    assert [(r["benchmark"], r["model"]) for r in rows] == [
        ("aceval", "gemma3-270m"), ("aceval", "oracle"), ("wenmind", "oracle"), ("cpdue", "served")]
    assert rows[0]["judge_sent"] == 1500 and rows[0]["calls_per_s"] == pytest.approx(11990 / 1234.5678)
    assert all(r["sent"] + r["cache_hits"] + r["collapsed"] == r["prompts"] for r in rows)   # the row adds up
    lines = cli.summary_table(rows).splitlines()
    assert re.split(r"\s{2,}", lines[0]) == ["benchmark", "model", "prompts", "sent", "cache hits", "identical",
                                             "errors", "throughput", "seconds", "judge calls sent"]
    assert re.split(r"\s{2,}", lines[1]) == ["aceval", "gemma3-270m", "12,345", "11,990", "345", "10", "3",
                                             "35.2 tok/s", "1,234.6", "1,500"]
    # a baseline generates nothing: no rate of microseconds' work
    assert re.split(r"\s{2,}", lines[2]) == ["aceval", "oracle", "9", "9", "0", "0", "0", "baseline", "-", "0"]
    assert re.split(r"\s{2,}", lines[3]) == ["wenmind", "oracle", "14", "0", "14", "0", "0", "-", "-", "0"]
    assert re.split(r"\s{2,}", lines[4]) == ["cpdue", "served", "20", "20", "0", "0", "0", "5.0 calls/s", "4.0", "0"]
    assert len({len(line) for line in lines}) == 1   # numbers right-aligned under their headers
    assert "judge" not in cli.summary_table(rows[1:])   # no judge calls anywhere: no column


def test_run_ids_are_utc_timestamps_with_the_tag_after_them():
    assert cli.make_run_id(1795375800.0) == "20261122-193000"
    assert cli.make_run_id(1795375800.0, "nightly") == "20261122-193000-nightly"


def _actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((f"{name} {a}", h) for a, h in _actions(sub))
        elif not isinstance(action, argparse._HelpAction):
            yield "/".join(action.option_strings) or action.dest, action.help


def test_every_argument_of_every_command_has_help():
    found = dict(_actions(cli.build_parser()))
    assert {"run --benchmark", "run --limit", "models --models", "tasks benchmark", "report --out", "diff --from",
            "diff --to", "--version"} <= set(found)
    assert [name for name, text in found.items() if not text] == []
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert [c.dest for c in sub._choices_actions if not c.help] == []   # every command too


def test_version_names_the_package_and_the_commit(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out.strip()
    commit = cli.git_commit()
    assert out == f"wenheng {cli.package_version()}" + (f" (git {commit})" if commit else "")
    assert re.fullmatch(r"wenheng \d+\.\d+\.\d+\S*( \(git [0-9a-f]{7,}(-dirty)?\))?", out)


@pytest.mark.parametrize("bad", ["0", "-3", "two", "1.5"])
def test_limit_must_be_a_positive_whole_number(bad, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["run", "--limit", bad])
    assert done.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("wenheng run: argument --limit: expected a positive whole number")


def test_an_error_share_never_rounds_onto_its_limit():
    from pipeline.runner import _share

    assert (_share(3 / 57), _share(0.05), _share(1.0), _share(0.0)) == ("5.3%", "5%", "100%", "0%")
