"""Each benchmark's layout (pipeline/sources/layout.py): the splits its files hold, read from names
only, on the samples and the real files; what a source entry may name."""

from __future__ import annotations

import pytest
from conftest import ROOT, upstream

from pipeline import benchmarks
from pipeline.config import SourceSpec, load_sources
from pipeline.sources.layout import layout_of, path_problem, split_problems


def test_every_registered_card_has_a_layout_its_samples_follow():
    specs = load_sources(ROOT / "data" / "sources.yaml")
    assert all(layout_of(name) is not None for name in benchmarks.names())
    for name, spec in specs.items():
        assert path_problem(spec) is None, name
        assert set(benchmarks.card(name).eval_splits) <= layout_of(name).splits(spec.path), name
        assert split_problems(spec, benchmarks.card(name).eval_splits) == [], name


@pytest.mark.parametrize("benchmark, parts, splits", [
    ("wenmind", ("wenmind", "WenMind_ver1.json"), {"test"}),
    ("aceval", ("aceval",), {"dev", "test"}),
    ("wyweb", ("wyweb",), {"dev", "train"}),
])
def test_the_real_files_hold_the_splits_their_layout_says(benchmark, parts, splits):
    assert layout_of(benchmark).splits(upstream(*parts)) == splits


def test_splits_and_evaluate_name_only_what_the_files_hold(tmp_path):
    (tmp_path / "dev.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "test.jsonl").write_text("{}\n", encoding="utf-8")
    spec = SourceSpec("fuxi", tmp_path, "v", splits=("dev", "train"), evaluate=("test", "nosuch"))
    assert split_problems(spec) == [
        ("splits", f"no split 'train' in {tmp_path} (got ['dev', 'train']); the source has dev, test"),
        ("evaluate", "split 'test' is not ingested (splits: ['dev', 'train']); expected some of dev"),
        ("evaluate", f"no split 'nosuch' in {tmp_path} (got ['test', 'nosuch']); the source has dev, test")]
    only_dev = SourceSpec("fuxi", tmp_path, "v", splits=("dev",))
    (line,) = split_problems(only_dev, default_evaluated=("test",))
    assert line == ("evaluate", "not set, so test would be asked, but fuxi's ingested splits are dev; expected "
                                "evaluate: [dev] (or leave the benchmark out)")
    assert split_problems(only_dev) == []   # ingestion checks what is named, not the card's default


def test_a_file_or_a_folder_as_the_layout_needs(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "geography.csv").write_text(",Question,A,B,C,D,Answer\n", encoding="utf-8")
    assert path_problem(SourceSpec("aceval", tmp_path, "v")) is None
    problem = path_problem(SourceSpec("aceval", tmp_path / "dev" / "geography.csv", "v"))
    assert problem.endswith("geography.csv is a file; expected a folder holding dev/ and/or test/ folders of "
                            "<subject>.csv files, and subject_mapping.json")
    assert path_problem(SourceSpec("fuxi", tmp_path / "dev" / "geography.csv", "v")) is None   # one file is fine
    assert "holds no fuxi file" in path_problem(SourceSpec("fuxi", tmp_path, "v"))
    assert path_problem(SourceSpec("fuxi", tmp_path, "v", allow_empty=True)) is None
