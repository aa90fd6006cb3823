"""The one text-table helper every command prints with: columns line up in a terminal, Chinese
text included (a wide character takes two columns)."""

from __future__ import annotations

from pipeline.cli.output import print_frame, text_table
from pipeline.texttable import table, width


def test_columns_line_up_in_terminal_columns_with_chinese_text():
    out = table(["task", "score"], [["诗词鉴赏", "1.0"], ["punc", "100.0"]], align="l").splitlines()
    assert out == ["task      score", "诗词鉴赏    1.0", "punc      100.0"]
    assert {width(line) for line in out} == {15}
    assert table(["a"], [["x"]], indent="  ") == "  a\n  x"


def test_the_commands_tables_are_that_helper(capsys):
    import pandas as pd

    assert text_table(["model", "n"], [["a", "1,000"]], left=1) == table(["model", "n"], [["a", "1,000"]])
    print_frame(pd.DataFrame({"name": ["诗", None], "n": [1, 22], "text": ["x" * 100, "y"]}))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "n", "text"] and lines[1].startswith("诗") and lines[2].startswith(" ")
    # the numbers' column ends at one terminal column on every line, after the wide character too
    ends = {width(line[:line.index(cell) + len(cell)]) for line, cell in zip(lines, [" n ", " 1 ", "22 "])}
    assert len(ends) == 1
    assert lines[1].endswith("x…") and width(lines[1]) == width(lines[0].split("text")[0]) + 60
