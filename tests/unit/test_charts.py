"""Paper-table charts: PNG/SVG bytes, deterministic, small, n/coverage in the labels, no tofu."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import time

import pandas as pd
import pytest
from conftest import ROOT

from pipeline import charts


def table(rows: list[str], models: list[str], score=lambda r, m: 10.0 * (r + 1) + m) -> pd.DataFrame:
    out = []
    for r, label in enumerate(rows):
        for m, model in enumerate(models):
            value = score(r, m)
            out.append({"model": model, "row_label": label, "row_order": r, "metric": "accuracy",
                        "score": value, "ci_low": None if value is None else value - 5,
                        "ci_high": None if value is None else value + 5, "n_items": 7 + r,
                        "n_scored": 7 + r if value is not None else 0,
                        "coverage": 1.0 if value is not None else 0.0, "split": "test",
                        "setting": "zero_shot", "variant": "original", "capped": False})
    return pd.DataFrame(out)


def svg_texts(svg: bytes) -> list[str]:
    """The SVG's text elements (one per line of a label), unescaped."""
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg.decode())]


def test_png_and_svg_are_deterministic_and_small():
    frame = table([f"fine-grained task {i}" for i in range(40)], [f"model-{m}" for m in range(8)])
    png = charts.paper_table_chart(frame, "Table 3: a large one", "png")
    svg = charts.paper_table_chart(frame, "Table 3: a large one", "svg")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert b"<svg" in svg[:1000]
    assert png == charts.paper_table_chart(frame, "Table 3: a large one", "png")
    assert svg == charts.paper_table_chart(frame, "Table 3: a large one", "svg")
    assert len(png) < 150_000 and len(svg) < 150_000


def test_labels_show_rows_models_n_and_coverage():
    frame = table(["reading", "writing"], ["oracle", "random"])
    frame.loc[(frame["row_label"] == "writing") & (frame["model"] == "random"), "coverage"] = 0.5
    texts = svg_texts(charts.paper_table_chart(frame, "Table 1: demo", "svg"))
    assert {"reading", "writing", "oracle", "random", "Table 1: demo"} <= set(texts)
    assert "n=7, cov 100%" in texts
    assert "n=8, cov 50-100%" in texts


def test_unscored_rows_say_so_and_metrics_are_named():
    frame = table(["done", "withheld"], ["m"], score=lambda r, m: None if r == 1 else 40.0)
    frame.loc[0, "metric"] = "corpus_bleu"
    texts = svg_texts(charts.paper_table_chart(frame, "t", "svg"))
    assert "done (BLEU)" in texts
    assert texts.count("no score") == 1 and "n=8, cov 0%" in texts
    assert texts.count("0") == 1   # the axis tick only: 40 has a bar, no zero label


def test_zero_scores_are_labelled():
    frame = table(["zero", "some"], ["m"], score=lambda r, m: 0.0 if r == 0 else 40.0)
    texts = svg_texts(charts.paper_table_chart(frame, "t", "svg"))
    assert texts.count("0") == 2   # the axis tick and the zero bar's label


def test_varying_settings_become_separate_series():
    frame = pd.concat([table(["a"], ["m"]), table(["a"], ["m"]).assign(setting="five_shot")])
    texts = svg_texts(charts.paper_table_chart(frame, "t", "svg"))
    assert {"m · zero_shot", "m · five_shot"} <= set(texts)


def test_labels_only_use_characters_the_fonts_can_draw():
    _, covered = charts.fonts()
    for text in ["文衡 古文", "Fùxì", "WenMind T1 句读"]:
        label = charts.safe_label(text)
        assert all(ord(ch) in covered or ch.isspace() for ch in label), label
    if charts.cjk_font() is None:
        assert charts.safe_label("文衡") == "\\u6587\\u8861"
    else:
        assert charts.safe_label("文衡") == "文衡"
    assert charts.safe_label("plain ascii") == "plain ascii"


def test_cjk_labels_do_not_fail_the_chart():
    frame = table(["句读", "翻译"], ["模型"])
    svg = charts.paper_table_chart(frame, "文衡", "svg")
    texts = svg_texts(svg)
    assert charts.safe_label("句读") in texts and charts.safe_label("模型") in texts


def test_bad_format_and_empty_frame_are_errors():
    with pytest.raises(ValueError, match="png"):
        charts.paper_table_chart(table(["a"], ["m"]), "t", "jpg")
    with pytest.raises(ValueError, match="no rows"):
        charts.paper_table_chart(table([], ["m"]), "t", "png")


# ---- the chart cache -------------------------------------------------------------------------------

def test_a_cached_chart_is_not_drawn_again_and_a_changed_value_is(tmp_path, monkeypatch):
    drawn = []
    draw = charts.paper_table_chart
    monkeypatch.setattr(charts, "paper_table_chart", lambda *a: drawn.append(a[1]) or draw(*a))
    frame = table(["reading", "writing"], ["oracle", "random"])
    first = charts.cached_chart(frame, "Table 1", "png", tmp_path)
    assert first == draw(frame, "Table 1", "png") and len(drawn) == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"{charts.chart_key(frame, 'Table 1', 'png')}.png"]
    # the same rows (in any order, with other columns beside them): read back, not drawn
    shuffled = frame.iloc[::-1].assign(note="not drawn")
    assert charts.cached_chart(shuffled, "Table 1", "png", tmp_path) == first and len(drawn) == 1
    # a changed score, title or format is another chart
    changed = frame.assign(score=frame["score"].where(frame.index != 0, 12.5))
    assert charts.cached_chart(changed, "Table 1", "png", tmp_path) != first and len(drawn) == 2
    charts.cached_chart(frame, "Table 1 (new title)", "png", tmp_path)
    charts.cached_chart(frame, "Table 1", "svg", tmp_path)
    assert len(drawn) == 4 and len(list(tmp_path.iterdir())) == 4
    # no cache folder: always drawn
    charts.cached_chart(frame, "Table 1", "png", None)
    assert len(drawn) == 5


def test_reading_a_cached_chart_does_not_import_matplotlib(tmp_path):
    frame = table(["reading"], ["oracle"])
    png = charts.cached_chart(frame, "t", "png", tmp_path)
    frame.to_pickle(tmp_path / "frame.pkl")
    script = (f"import sys, pandas as pd; from pipeline import charts; "
              f"frame = pd.read_pickle({str(tmp_path / 'frame.pkl')!r}); "
              f"png = charts.cached_chart(frame, 't', 'png', {str(tmp_path)!r}); "
              f"sys.stdout.buffer.write(png); assert 'matplotlib' not in sys.modules and 'PIL' not in sys.modules")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT, check=True)
    assert out.stdout == png


def test_charts_not_used_for_a_month_are_pruned_and_an_unwritable_cache_is_skipped(tmp_path):
    old = tmp_path / f"{'0' * 64}.png"
    old.write_bytes(b"old")
    month_ago = time.time() - (charts.CACHE_DAYS + 1) * 86400
    os.utime(old, (month_ago, month_ago))
    frame = table(["reading"], ["oracle"])
    charts.cached_chart(frame, "t", "png", tmp_path)
    assert not old.exists() and len(list(tmp_path.iterdir())) == 1
    blocked = tmp_path / "file"
    blocked.write_bytes(b"")   # a file where the folder should be: nothing cached, the chart still drawn
    assert charts.cached_chart(frame, "t", "png", blocked / "charts").startswith(b"\x89PNG")
