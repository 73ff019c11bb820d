#!/usr/bin/env bash
# The whole test suite: set-up, type check, the Python worker's own tests
# (pytest), then vitest against real parts (nats-server, the sandboxed runner
# with real torch, LanceDB on disk).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
./node_modules/.bin/tsc --noEmit
# The runner's interpreter: Debian's torch lives with it, not with whatever python3 is first on PATH.
"${RUNNER_PYTHON:-/usr/bin/python3}" -m pytest -q test/python
exec ./node_modules/.bin/vitest run "$@"
