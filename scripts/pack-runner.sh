#!/usr/bin/env bash
# Packs the runner for an offline GPU host: one JavaScript bundle, the Python worker, this
# machine's Node binary and bubblewrap (with the libraries it links), nothing to fetch there.
#
#   scripts/pack-runner.sh [--out DIR] [--no-archive]
#
# Makes DIR (default dist/runner) and DIR.tar.xz (about 26 MB). On the host:
#   tar xf runner.tar.xz && RUNNER_PYTHON=/opt/torch/.venv/bin/python3 runner/gpu-runner --address 127.0.0.1:50051
# The host's bwrap is used when it has one, the bundled one otherwise; the bundled Node always.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/dist/runner"
ARCHIVE=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$(realpath -m "$2")"; shift 2 ;;
    --no-archive) ARCHIVE=0; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack-runner: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
BWRAP="$(command -v bwrap || true)"
[ -n "$BWRAP" ] || { echo "pack-runner: bwrap is not installed here, so it cannot be packed (apt-get install bubblewrap)" >&2; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
# import.meta.url is the bundle's own file, so the worker's code sits next to it (gpu-runner/sandbox.ts).
"$ROOT/node_modules/.bin/esbuild" "$ROOT/gpu-runner/main.ts" --bundle --platform=node --format=esm --target=node20 \
  --log-level=warning --outfile="$OUT/gpu-runner.mjs" \
  --banner:js="import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);"
cp -r "$ROOT/gpu-runner/python" "$OUT/python"
find "$OUT/python" -name __pycache__ -prune -exec rm -rf {} +
cp "$(command -v node)" "$OUT/bin/node"
cp "$BWRAP" "$OUT/lib/bwrap"
# bwrap's own libraries (libc and the loader stay the host's).
ldd "$BWRAP" | awk '/=> \// {print $3}' | grep -v -E '/(libc|libm|libdl|libpthread)\.so' | xargs -r -I{} cp -L {} "$OUT/lib/"
cat > "$OUT/bin/bwrap" <<'EOF'
#!/bin/sh
# The packed bubblewrap with the libraries it was linked against; the sandbox clears the environment, so none of this reaches the trials.
here="$(dirname "$(readlink -f "$0")")"
LD_LIBRARY_PATH="$here/../lib" exec "$here/../lib/bwrap" "$@"
EOF
cat > "$OUT/gpu-runner" <<'EOF'
#!/bin/sh
# The runner from its bundle: the bundled Node; the host's bwrap before the bundled one.
here="$(dirname "$(readlink -f "$0")")"
PATH="$PATH:$here/bin" exec "$here/bin/node" "$here/gpu-runner.mjs" "$@"
EOF
chmod +x "$OUT/bin/bwrap" "$OUT/gpu-runner"
if [ "$ARCHIVE" = 1 ]; then
  tar -C "$(dirname "$OUT")" -cf - "$(basename "$OUT")" | xz -T0 -6 > "$OUT.tar.xz"
  echo "pack-runner: $OUT.tar.xz ($(du -h "$OUT.tar.xz" | cut -f1))" >&2
else
  echo "pack-runner: $OUT ($(du -sh "$OUT" | cut -f1))" >&2
fi
