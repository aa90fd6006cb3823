"""What a contamination scan is given, and how it reads it: remembered corpora whose files vanished,
names and corpus paths that cannot be (an unknown protocol, a symlink loop, a FIFO), empty files
and bad lines said aloud, the field check over every file, lines of any length in bounded memory,
Ray's log levels, `--sources`, and shares printed on the right side of their threshold."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml

from pipeline.config import ConfigError
from pipeline.contamination import engines, fields, reading
from pipeline.contamination.corpora import CorpusSpec, load_corpora, save_scanned, shard_paths
from pipeline.contamination.index import Lookup, build_index
from pipeline.contamination.ngrams import keyed
from pipeline.contamination.reading import Reading, scan_bytes, scan_range
from pipeline.contamination.scan import smallest_per_hash
from pipeline.contamination.shares import share_text

N = 13
PASSAGES = [
    "北冥有鱼，其名为鲲。鲲之大，不知其几千里也；化而为鸟，其名为鹏。",
    "晋太元中，武陵人捕鱼为业。缘溪行，忘路之远近。忽逢桃花林，夹岸数百步。",
    "山不在高，有仙则名。水不在深，有龙则灵。斯是陋室，惟吾德馨。",
]
ITEMS = [{"item_id": f"q{i}", "benchmark": "mine", "task": "t", "format": "open_qa", "context": None,
          "question": text, "choices": [], "answer": "古文", "references": []} for i, text in enumerate(PASSAGES)]


def _lookup(texts=PASSAGES) -> Lookup:
    return Lookup(np.unique(keyed(list(texts)).hashes(N)[1]))


def _filler(seed: int, chars: int) -> str:
    codes = np.random.default_rng(seed).integers(0x4E00, 0x9FA5, chars, dtype=np.uint32)
    return codes.tobytes().decode("utf-32-le")


def _jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


# ---- remembered corpora and names ------------------------------------------------------------

def _remember(cache: Path, name: str, path: Path) -> Path:
    scanned = cache / "corpora.scanned.yaml"
    save_scanned(scanned, name, CorpusSpec(paths=[str(path)], fields=["text"], version="1"))
    return scanned


def test_a_remembered_corpus_whose_files_vanished_is_skipped_with_one_line(tmp_path):
    kept = _jsonl(tmp_path / "kept.jsonl", [{"text": PASSAGES[0]}])
    gone = _jsonl(tmp_path / "gone.jsonl", [{"text": PASSAGES[1]}])
    scanned = _remember(tmp_path, "gone", gone)
    _remember(tmp_path, "kept", kept)
    gone.unlink()
    lines: list[str] = []
    corpora = load_corpora(tmp_path / "corpora.yaml", scanned, warn=lines.append)
    assert list(corpora) == ["kept"]
    assert len(lines) == 1 and "'gone'" in lines[0] and str(gone) in lines[0] and "does not exist" in lines[0]
    # a new scan under the same name replaces the entry
    again = _jsonl(tmp_path / "again.jsonl", [{"text": PASSAGES[2]}])
    _remember(tmp_path, "gone", again)
    lines.clear()
    assert load_corpora(tmp_path / "corpora.yaml", scanned, warn=lines.append)["gone"].paths == [str(again)]
    assert lines == []


def test_bad_names_are_refused_before_writing_and_skipped_when_remembered(tmp_path):
    corpus = _jsonl(tmp_path / "c.jsonl", [{"text": PASSAGES[0]}])
    scanned = _remember(tmp_path, "good", corpus)
    before = scanned.read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match=r"--name: the name may hold .*'a/b'"):
        _remember(tmp_path, "a/b", corpus)
    assert scanned.read_text(encoding="utf-8") == before
    # an entry written by an older wenheng, under a name that is not one
    data = yaml.safe_load(before)
    data["corpora"]["a/b"] = data["corpora"]["good"]
    scanned.write_text(yaml.safe_dump(data), encoding="utf-8")
    lines: list[str] = []
    assert list(load_corpora(tmp_path / "corpora.yaml", scanned, warn=lines.append)) == ["good"]
    assert len(lines) == 1 and "'a/b'" in lines[0]


def test_corpora_yaml_written_by_the_user_still_fails_clearly(tmp_path):
    gone = tmp_path / "gone.jsonl"
    config = tmp_path / "corpora.yaml"
    config.write_text(f"corpora:\n  mine: {{paths: [{gone}], fields: [text], version: '1'}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"corpora.mine: paths: {gone} does not exist"):
        load_corpora(config, tmp_path / "corpora.scanned.yaml")
    # a remembered corpus of a name corpora.yaml now holds gives way, with a line
    _jsonl(gone, [{"text": "x"}])
    scanned = _remember(tmp_path, "mine", gone)
    lines: list[str] = []
    assert list(load_corpora(config, scanned, warn=lines.append)) == ["mine"] and len(lines) == 1


@pytest.mark.parametrize("kind", ["protocol", "s3", "loop"])
def test_corpus_paths_that_cannot_be_read_are_one_config_line(tmp_path, kind):
    if kind == "s3":
        pytest.importorskip("fsspec")
        try:
            import s3fs  # noqa: F401
            pytest.skip("s3fs is installed")
        except ImportError:
            pass
    loop = tmp_path / "loop.jsonl"
    os.symlink(loop, loop)
    path, message = {"protocol": ("foo://x/y.jsonl", "unknown protocol 'foo'"),
                     "s3": ("s3://bucket/y.jsonl", "needs a package that is not installed"),
                     "loop": (str(loop), "a symlink loop")}[kind]
    config = tmp_path / "corpora.yaml"
    config.write_text(f"corpora:\n  mine: {{paths: ['{path}'], fields: [text], version: '1'}}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_corpora(config)
    assert message in str(caught.value) and path in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1


def test_fifos_and_symlink_loops_a_glob_matches_are_quarantined_with_the_reason(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    _jsonl(folder / "a.jsonl", [{"text": PASSAGES[0]}])
    os.mkfifo(folder / "pipe.jsonl")
    os.symlink(folder / "loop.jsonl", folder / "loop.jsonl")
    spec = CorpusSpec(paths=[str(folder / "*.jsonl")], fields=["text"], version="1")
    assert shard_paths(spec) == sorted(str(folder / f) for f in ("a.jsonl", "loop.jsonl", "pipe.jsonl"))
    fields.check_fields(spec, "odd", warn=pytest.fail)   # neither opened (a FIFO would block), no warning
    scan = engines.scan_corpus(spec, "odd", build_index(ITEMS, N), tmp_path / "cache", log=lambda line: None)
    reasons = {Path(q["path"]).name: q["reason"] for q in scan.quarantine}
    assert "FIFO" in reasons["pipe.jsonl"] and "symlink loop" in reasons["loop.jsonl"]
    assert list(scan.files) == [str(folder / "a.jsonl")] and scan.matches.num_rows


# ---- what the files held ---------------------------------------------------------------------

def test_reading_summary_counts_documents_bad_lines_and_empty_files(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"text": PASSAGES[0]}, ensure_ascii=False) + "\nnot json\n\n",
                                    encoding="utf-8")
    (folder / "b.txt").write_text(PASSAGES[1] + "\n" + PASSAGES[2] + "\n", encoding="utf-8")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "blank.txt").write_text("  \n\n\t\n", encoding="utf-8")
    (folder / "none.json").write_text("[]", encoding="utf-8")
    spec = CorpusSpec(paths=[str(folder)], fields=["text"], version="1")
    scan = engines.scan_corpus(spec, "mine", build_index(ITEMS, N), tmp_path / "cache", log=lambda line: None)
    assert scan.quarantine == []
    assert scan.reading_summary() == {"documents": 3, "bad lines": 1, "empty files": 3, "invalid utf-8": 0}
    from pipeline.contamination.scan_cache import load_reading

    notes = load_reading(tmp_path / "cache" / "contamination" / "mine")   # what the command prints after the run
    assert notes["empty paths"] == sorted(str(folder / f) for f in ("blank.txt", "empty.jsonl", "none.json"))
    lines = engines.reading_lines("mine", notes)
    assert lines[0] == ("mine: 3 documents read from 5 files, 1 bad lines skipped, 3 empty files, "
                        "0 invalid UTF-8 sequences")
    assert sum("empty file" in line and "blank.txt" in line for line in lines) == 1
    assert "not JSON" in lines[-1]


# ---- the field check -------------------------------------------------------------------------

def _poetry(folder: Path, tang: int, ci: int) -> None:
    """chinese-poetry's shape: Tang files with a title, songci files with a rhythmic instead."""
    folder.mkdir()
    for i in range(tang):
        (folder / f"poet.tang.{i}.json").write_text(json.dumps(
            [{"title": "静夜思", "paragraphs": [PASSAGES[0]]}], ensure_ascii=False), encoding="utf-8")
    for i in range(ci):
        (folder / f"z.ci.song.{i}.json").write_text(json.dumps(
            [{"rhythmic": "水调歌头", "paragraphs": [PASSAGES[1]]}], ensure_ascii=False), encoding="utf-8")


def test_a_field_only_later_files_have_is_accepted_with_one_warning(tmp_path):
    _poetry(tmp_path / "poetry", tang=5, ci=2)
    spec = CorpusSpec(paths=[str(tmp_path / "poetry")], fields=["rhythmic", "paragraphs"], version="1")
    lines: list[str] = []
    fields.check_fields(spec, "poetry", warn=lines.append)
    assert len(lines) == 1 and "field rhythmic is in 2 of the 7 files probed" in lines[0]


def test_a_field_no_file_has_is_refused_and_a_rest_not_probed_only_warns(tmp_path, monkeypatch):
    _poetry(tmp_path / "poetry", tang=5, ci=2)
    spec = CorpusSpec(paths=[str(tmp_path / "poetry")], fields=["body"], version="1")
    with pytest.raises(ConfigError, match="field body appears in none .*their keys: paragraphs, title, rhythmic"):
        fields.check_fields(spec, "poetry", warn=pytest.fail)
    monkeypatch.setattr(fields, "PROBE_MAX_FILES", 3)
    lines: list[str] = []
    fields.check_fields(spec, "poetry", warn=lines.append)
    assert len(lines) == 1 and "4 files were not probed" in lines[0]


# ---- lines of any length ---------------------------------------------------------------------

PLANTED = [_filler(100 + i, 30) for i in range(1000)]   # each n-gram in one place: every one is a row


def _long_line() -> str:
    """About a million characters, a planted text every thousand (some across where windows end;
    every fifth with a comma after each character), and a long run of punctuation; the caller
    adds bytes that are not UTF-8 and the passages."""
    parts, filler = [], _filler(3, 1_000_000)
    for i, at in enumerate(range(0, len(filler), 1000)):
        planted = "，".join(PLANTED[i]) if i % 5 == 2 else PLANTED[i]
        parts.append(filler[at:at + 1000] + planted + ("。" * 12_000 if i == 7 else ""))
    return "".join(parts)


def _scanned(path: Path, fmt: str, ranges: int | None = None):
    spec = CorpusSpec(paths=[str(path)], format=fmt, fields=["text"], version="1")
    look, read = _lookup([*PASSAGES, *PLANTED]), Reading.of(spec)
    if ranges is None:
        return scan_range(str(path), 0, None, read, look)
    size, parts = path.stat().st_size, []
    for start in range(0, size, ranges):
        parts.append(scan_range(str(path), start, min(start + ranges, size), read, look))
    docs = sum(stats.documents for _, stats in parts)
    return smallest_per_hash([t for t, _ in parts]), docs


def _small_caps(monkeypatch, seen: list[int]) -> None:
    monkeypatch.setattr(reading, "BATCH_BYTES", 64 << 10)
    monkeypatch.setattr(reading, "LONG_TXT_LINE", 64 << 10)
    monkeypatch.setattr(reading, "JSONL_LINE_CAP", 64 << 10)
    monkeypatch.setattr(reading, "WINDOW_CHARS", 5000)
    monkeypatch.setattr(reading, "LINE_CHUNK", 1001)   # chunks that split characters
    scan = reading.scan_documents

    def recorded(texts, *args, **kwargs):
        seen.append(max(map(len, texts), default=0))
        return scan(texts, *args, **kwargs)
    monkeypatch.setattr(reading, "scan_documents", recorded)


def test_a_long_txt_line_is_scanned_in_windows_with_the_rows_of_one_scan(tmp_path, monkeypatch):
    line = _long_line()
    path = tmp_path / "long.txt"
    path.write_bytes(PASSAGES[2].encode() + b"\n" + line.encode()[:900_000] + b"\xff\xfe"
                     + line.encode()[900_000:] + b"\n" + PASSAGES[0].encode() + b"\n")
    whole, whole_stats = _scanned(path, "txt")
    assert whole.num_rows > 15_000 and whole_stats.invalid_utf8 > 0
    seen: list[int] = []
    _small_caps(monkeypatch, seen)
    windowed, stats = _scanned(path, "txt")
    assert max(seen) <= reading.WINDOW_GROWTH * reading.WINDOW_CHARS < 100_000, "the long line was scanned whole"
    assert windowed.to_pylist() == whole.to_pylist()   # ids, offsets in the document, snippets
    assert stats.to_dict() == whole_stats.to_dict()
    in_memory, _ = scan_bytes(str(path), path.read_bytes(), Reading.of(CorpusSpec(
        paths=[str(path)], format="txt", version="1")), _lookup([*PASSAGES, *PLANTED]))
    assert in_memory.to_pylist() == whole.to_pylist()
    split, documents = _scanned(path, "txt", ranges=200_000)   # ranges that start inside the long line
    assert split.to_pylist() == whole.to_pylist() and documents == 3


def test_a_jsonl_line_over_the_cap_is_one_bad_line_and_the_next_lines_are_read(tmp_path, monkeypatch):
    path = _jsonl(tmp_path / "long.jsonl", [{"text": PASSAGES[0]}, {"text": _long_line()}, {"text": PASSAGES[1]}])
    long_size = len(path.read_bytes().split(b"\n")[1]) + 1
    seen: list[int] = []
    _small_caps(monkeypatch, seen)
    table, stats = _scanned(path, "jsonl")
    assert (stats.documents, stats.bad_rows, stats.rows) == (2, 1, 3)
    assert f"a line of {long_size:,} bytes" in stats.first_error
    assert max(seen) < 1000, "the long line was parsed"
    found = set(table.column("hash").to_pylist())
    for passage in PASSAGES[:2]:
        assert set(keyed([passage]).hashes(N)[1].tolist()) <= found
    split, documents = _scanned(path, "jsonl", ranges=100_000)
    assert split.to_pylist() == table.to_pylist() and documents == 2


# ---- Ray's log levels, --sources, shares -----------------------------------------------------

def test_ray_log_env_is_quiet_unless_verbose(monkeypatch):
    from pipeline.contamination.ray_engine import QUIET_ENV, VERBOSE_ENV, ray_log_env

    for verbose, expected in ((False, QUIET_ENV), (True, VERBOSE_ENV)):
        for key in expected:
            monkeypatch.delenv(key, raising=False)
        ray_log_env(verbose)
        assert {k: os.environ[k] for k in expected} == expected
    monkeypatch.setenv("RAY_BACKEND_LOG_LEVEL", "debug")   # the user's own choice is kept
    ray_log_env(False)
    assert os.environ["RAY_BACKEND_LOG_LEVEL"] == "debug"


def test_scan_prepares_only_with_sources_or_when_nothing_is_built(tmp_path, monkeypatch):
    from conftest import ROOT

    from pipeline.cli.contamination import _unprepared

    samples = ROOT / "data" / "samples"
    sources = tmp_path / "sources.yaml"
    sources.write_text("benchmarks:\n"
                       f"  wenmind: {{path: {samples / 'wenmind' / 'WenMind_sample.json'}, version: t}}\n"
                       f"  aceval: {{path: {samples / 'aceval'}, version: t, evaluate: [dev]}}\n", encoding="utf-8")
    monkeypatch.setenv("WENHENG_SOURCES", str(sources))
    monkeypatch.setenv("WENHENG_LAKE", str(tmp_path / "lake"))
    assert sorted(_unprepared(False)) == ["aceval", "wenmind"]   # nothing built: the sources file's
    (tmp_path / "lake" / "items").mkdir(parents=True)
    (tmp_path / "lake" / "items" / "wenmind.parquet").write_bytes(b"")
    assert _unprepared(False) == []            # what the last run built is scanned against
    assert _unprepared(True) == ["aceval"]     # --sources: its benchmarks not built yet


@pytest.mark.parametrize("share, threshold, text", [
    (0.498, 0.5, "0.498"), (0.4996, 0.5, "0.4996"), (0.49999999, 0.5, "0.49999999"), (0.5, 0.5, "0.500"),
    (0.5004, 0.5, "0.500"), (1.0, 0.5, "1.000"), (0.0, 0.3, "0.000"), (0.2996, 0.3, "0.2996"),
])
def test_share_text_never_prints_a_share_below_the_threshold_as_the_threshold(share, threshold, text):
    assert share_text(share, threshold) == text
    assert (float(share_text(share, threshold)) >= threshold) == (share >= threshold)


def test_reading_summary_is_plain_numbers_for_metadata():
    scan = engines.CorpusScan(pa.table({}))
    assert scan.reading_summary() == {"documents": 0, "bad lines": 0, "empty files": 0, "invalid utf-8": 0}
