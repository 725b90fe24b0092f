#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian machine and run them.
#   bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: headless Chromium and its driver for the browser tests; a C/C++ toolchain and cmake to
# build llama.cpp for llm.local (llama-cpp-python ships only a source distribution).
NEED=()
command -v chromium >/dev/null 2>&1 || NEED+=(chromium)
command -v chromedriver >/dev/null 2>&1 || NEED+=(chromium-driver)
command -v cmake >/dev/null 2>&1 || NEED+=(cmake)
{ command -v g++ >/dev/null 2>&1 && command -v make >/dev/null 2>&1; } || NEED+=(build-essential)
if [ "${#NEED[@]}" -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${NEED[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
# The local-model extra builds llama.cpp from source once (about 20 min on 2 busy cores; pip caches the wheel),
# lean and portable: the same CMake options as the builder's "Install local model runtime" button.
CMAKE_ARGS="${CMAKE_ARGS:-$(.venv/bin/python -c 'from flowbuilder.nodes.llms.local_runtime import build_cmake_args as a; print(a())')}" \
  .venv/bin/python -m pip install -q -e ".[test,local]"

# One worker per core plus one, each test file on one worker (tests/README.md: what makes the workers independent).
# The extra worker runs while the others wait on a browser or a subprocess: on 2 idle cores 591 s against 633 s.
WORKERS="${PYTEST_WORKERS:-$(($(nproc) + 1))}"
exec .venv/bin/python -m pytest -q -n "$WORKERS" --dist loadfile "$@"
