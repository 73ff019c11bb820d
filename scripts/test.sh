#!/usr/bin/env bash
# The whole test suite: set-up, type check, the Python worker's own tests
# (pytest), then vitest against real parts (nats-server, the sandboxed runner
# with real torch, LanceDB on disk).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SETUP_TESTS=1 bash scripts/setup.sh
# The type checks beside the worker's tests: each side keeps one core busy. Their output is shown
# in this order once both are done, and either failing stops the suite before vitest.
out="$(mktemp -d)"
{
  ./node_modules/.bin/tsc --noEmit
  # The dashboard's pages: browser code (DOM, JSX), checked with their own settings.
  ./node_modules/.bin/tsc --noEmit -p dashboard/web
} > "$out/tsc" 2>&1 &
tsc=$!
# The worker under both interpreters the runner supports: the project's venv (torch 2.x, the
# default) and Debian's python3 (torch 1.13, the fallback); RUNNER_PYTHON adds its own.
{
  for py in .venv/bin/python /usr/bin/python3 ${RUNNER_PYTHON:-}; do
    echo "pytest with $py ($("$py" -c 'import torch; print("torch", torch.__version__)'))"
    "$py" -m pytest -q test/python
  done
  # The export writer's own tests need the trackers' libraries, which .venv-export alone has.
  echo "pytest of the export writer with .venv-export/bin/python"
  .venv-export/bin/python -m pytest -q test/export-python
} > "$out/pytest" 2>&1 &
pytest=$!
failed=0
wait "$tsc" || failed=1
cat "$out/tsc"
wait "$pytest" || failed=1
cat "$out/pytest"
rm -rf "$out"
[ "$failed" = 0 ] || exit 1
# Each file's seconds and the machine (bench/out/suite/times.json, not committed): scripts/suite-times.ts.
exec ./node_modules/.bin/vitest run --reporter=default --reporter=./scripts/suite-times.ts "$@"
