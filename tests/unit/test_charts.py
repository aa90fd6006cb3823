"""Paper-table charts: PNG/SVG bytes, deterministic, small, n/coverage in the labels, no tofu."""

from __future__ import annotations

import html
import json
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


def test_a_row_its_judge_cannot_stand_behind_gets_no_bar():
    frame = table(["judged", "rules"], ["m"], score=lambda r, m: 100.0)
    frame["uninformative_share"] = [1.0, None]
    texts = svg_texts(charts.paper_table_chart(frame, "t", "svg"))
    assert texts.count("no score") == 1   # the judged row; the rule-scored one keeps its bar
    frame["uninformative_share"] = [0.5, None]   # partly: the bar stays, the tables say the share
    assert "no score" not in svg_texts(charts.paper_table_chart(frame, "t", "svg"))


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


# ---- one colour per model, series with no score ------------------------------------------------------

def palette_fills(svg: bytes) -> set[str]:
    """The palette colours the SVG fills something with (bars and legend patches)."""
    fills = set(re.findall(r"fill: ?(#[0-9a-f]{6})", svg.decode().lower()))
    return fills & {c.lower() for c in charts.COLOURS}


def test_a_model_keeps_its_colour_in_every_chart():
    colours = charts.model_colours(["random", "oracle", "big-model", "oracle"])
    assert colours == {"big-model": charts.COLOURS[0], "oracle": charts.COLOURS[1], "random": charts.COLOURS[2]}
    everyone = charts.paper_table_chart(table(["a", "b"], ["big-model", "oracle", "random"]), "t", "svg", colours)
    alone = charts.paper_table_chart(table(["a", "b"], ["random"]), "t", "svg", colours)
    pair = charts.paper_table_chart(table(["a", "b"], ["oracle", "random"]), "t", "svg", colours)
    assert palette_fills(everyone) == {c.lower() for c in charts.COLOURS[:3]}
    assert palette_fills(alone) == {charts.COLOURS[2].lower()}   # random: its colour, not the first one
    assert palette_fills(pair) == {charts.COLOURS[1].lower(), charts.COLOURS[2].lower()}
    # without a mapping, as before: a series gets the colour of its place in its chart
    assert palette_fills(charts.paper_table_chart(table(["a"], ["random"]), "t", "svg")) == {
        charts.COLOURS[0].lower()}


def test_a_models_further_series_are_hatched_in_its_colour():
    frame = pd.concat([table(["a"], ["m"]), table(["a"], ["m"]).assign(setting="five_shot")])
    svg = charts.paper_table_chart(frame, "t", "svg", {"m": charts.COLOURS[3]})
    colour = charts.COLOURS[3].lower()
    assert palette_fills(svg) == {colour}
    assert "<pattern" in svg.decode() and re.search(rf"stroke: ?{colour}", svg.decode().lower())


def test_the_cache_key_holds_the_colours(tmp_path):
    frame = table(["reading"], ["oracle", "random"])
    first, second = charts.model_colours(["oracle", "random"]), charts.model_colours(["a", "oracle", "random"])
    keys = {charts.chart_key(frame, "t", "svg"), charts.chart_key(frame, "t", "svg", first),
            charts.chart_key(frame, "t", "svg", second)}
    assert len(keys) == 3
    # a colour of a model the chart does not draw is not part of its key
    assert charts.chart_key(frame, "t", "svg", first) == charts.chart_key(frame, "t", "svg", first | {"z": "#000000"})
    drawn = charts.cached_chart(frame, "t", "svg", tmp_path, second)
    assert drawn == charts.paper_table_chart(frame, "t", "svg", second)
    assert drawn != charts.cached_chart(frame, "t", "svg", tmp_path, first)
    assert len(list(tmp_path.iterdir())) == 2


def test_series_without_a_single_score_are_not_drawn():
    """AC-EVAL's test split (answers withheld) beside its scored dev split: no empty series."""
    scored = table(["history", "poetry"], ["oracle", "random"]).assign(split="dev")
    withheld = table(["history", "poetry"], ["oracle", "random"], score=lambda r, m: None).astype(
        {"score": float, "ci_low": float, "ci_high": float})
    texts = svg_texts(charts.paper_table_chart(pd.concat([scored, withheld]), "t", "svg"))
    assert {"oracle · dev", "random · dev"} <= set(texts)
    assert not {"oracle · test", "random · test"} & set(texts)
    assert "no score" not in texts
    assert "no score, not drawn: oracle · test, random · test" in texts
    assert "n=7, cov 100%" in texts   # the rows' n and coverage are those of the drawn series
    # a drawn series' unscored row still says so; nothing scored at all: every series says so
    assert svg_texts(charts.paper_table_chart(withheld, "t", "svg")).count("no score") == 4


# ---- the font facts cache --------------------------------------------------------------------------

FONT_SCRIPT = """
import json, sys, pandas as pd
from pipeline import charts
frame = pd.read_pickle(sys.argv[1])
svg = charts.paper_table_chart(frame, sys.argv[2], "svg")
print(json.dumps({"svg": svg.decode(), "matplotlib": "matplotlib" in sys.modules}))
"""


def svg_in_fresh_process(frame: pd.DataFrame, title: str, cache: os.PathLike) -> tuple[bytes, bool]:
    """The chart drawn by a new process with WENHENG_CACHE=`cache`, and whether it imported matplotlib."""
    path = os.path.join(cache, "frame.pkl")
    os.makedirs(cache, exist_ok=True)
    frame.to_pickle(path)
    out = subprocess.run([sys.executable, "-c", FONT_SCRIPT, path, title], capture_output=True, cwd=ROOT, check=True,
                         env={**os.environ, "WENHENG_CACHE": str(cache)})
    result = json.loads(out.stdout)
    return result["svg"].encode(), result["matplotlib"]


def test_a_fresh_and_a_warm_font_cache_give_the_same_svg(tmp_path):
    frame = table(["句读 sentence pauses", "allusions", "Café ☃"], ["模型甲", "random"])
    expected = charts.paper_table_chart(frame, "文衡 Table 1", "svg")
    fonts_file = tmp_path / "fonts.json"
    first, imported = svg_in_fresh_process(frame, "文衡 Table 1", tmp_path)
    assert first == expected and imported and fonts_file.is_file()
    # the facts are read back: matplotlib is not imported
    warm, imported = svg_in_fresh_process(frame, "文衡 Table 1", tmp_path)
    assert warm == expected and not imported
    # characters the cache has not measured yet: matplotlib measures them once and the cache keeps them
    measured = len(json.loads(fonts_file.read_text())["advance"])
    other = table(["翻译 translation", "Ωmega"], ["zzz-model"])
    new, imported = svg_in_fresh_process(other, "Table 2 ¶", tmp_path)
    assert new == charts.paper_table_chart(other, "Table 2 ¶", "svg") and imported
    assert len(json.loads(fonts_file.read_text())["advance"]) > measured
    again, imported = svg_in_fresh_process(other, "Table 2 ¶", tmp_path)
    assert again == new and not imported
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b'{"key": 1}', b"[]",
                                     b'{"key": ["0.0", [["fontlist-v0.json", 1, 1]]], "families": ["X"], '
                                     b'"files": [], "covered": [], "advance": {}}'])
def test_a_corrupt_or_stale_font_cache_is_ignored_and_written_again(tmp_path, content):
    frame = table(["句读", "reading"], ["oracle"])
    (tmp_path / "fonts.json").write_bytes(content)
    svg, imported = svg_in_fresh_process(frame, "t", tmp_path)
    assert svg == charts.paper_table_chart(frame, "t", "svg") and imported
    assert json.loads((tmp_path / "fonts.json").read_text())["families"] == list(charts.fonts()[0])
    warm, imported = svg_in_fresh_process(frame, "t", tmp_path)
    assert warm == svg and not imported


def test_png_keeps_each_model_colour_exact_even_where_it_draws_few_pixels():
    """The compact palette is seeded with the chart's own colours: a model whose bars are a few
    pixels (a score of 0.5 beside seven models' 28-85) keeps its colour exactly, as in the SVG."""
    import io

    from PIL import Image

    from pipeline.charts.colours import COLOURS, model_colours

    models = [f"model-{k}" for k in range(8)]
    frame = table([f"task {r}" for r in range(5)], models, score=lambda r, m: 0.5 if m == 0 else 20.0 + 8 * m + r)
    colours = model_colours(models)
    png = charts.paper_table_chart(frame, "Table 2: many models", "png", colours=colours)
    with Image.open(io.BytesIO(png)) as image:
        present = {"#{:02X}{:02X}{:02X}".format(*rgb) for _, rgb in image.convert("RGB").getcolors(1 << 20)}
    assert set(colours.values()) <= present, sorted(set(colours.values()) - present)
    assert colours["model-0"] == COLOURS[0]
