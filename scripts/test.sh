#!/usr/bin/env bash
# The whole test suite: set-up, type check, then vitest against real parts
# (nats-server, the sandboxed runner with real torch, LanceDB on disk).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
./node_modules/.bin/tsc --noEmit
exec ./node_modules/.bin/vitest run "$@"
