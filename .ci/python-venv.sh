#!/usr/bin/env bash
# Creates .ci/.venv (gitignored), the Python the outside-reader tests run: pyarrow and fastavro
# for the spec reader, and the packages pyiceberg needs (pyiceberg itself is not installed: it is
# run from its source at ../shared/tools/pyiceberg, see test/iceberg/outside-readers.ts). Reused
# while it imports them all; otherwise made again from the machine's pip index (~12 s measured on
# the 2-core CI machine; pip there reads local indexes, so no retries). Prints why it failed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.ci/.venv
PACKAGES=(pyarrow fastavro pydantic mmh3 fsspec requests click rich pyparsing tenacity cachetools zstandard sortedcontainers)
IMPORTS='import pyarrow, fastavro, pydantic, mmh3, fsspec, requests, click, rich, pyparsing, tenacity, cachetools, zstandard, sortedcontainers'

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$IMPORTS" 2>/dev/null; then exit 0; fi

# The machine's pyenv Python is not on PATH for non-login shells: search it explicitly (as .ci/run does for moto).
BASE=""
for p in python3 "$HOME"/.pyenv/shims/python3 /usr/bin/python3 /usr/local/bin/python3 "$HOME"/.pyenv/versions/3.1[0-9]*/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys, venv, ensurepip; assert sys.version_info >= (3, 9)' 2>/dev/null; then BASE=$p; break; fi
done
if [ -z "$BASE" ]; then
  echo "no python3 (>= 3.9) with venv and ensurepip found (tried python3, ~/.pyenv, /usr/bin, /usr/local/bin)" >&2
  exit 1
fi
rm -rf "$VENV"
"$BASE" -m venv "$VENV"
if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 0 "${PACKAGES[@]}" 2>"$VENV.log"; then
  echo "pip install ${PACKAGES[*]} into $VENV failed:" >&2
  grep -v '^WARNING: Location' "$VENV.log" | tail -5 >&2
  exit 1
fi
rm -f "$VENV.log"
"$VENV/bin/python" -c "$IMPORTS"
