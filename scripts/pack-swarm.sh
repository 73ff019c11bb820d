#!/usr/bin/env bash
# Packs the whole swarm for an offline host (Linux x86-64, glibc): every process bundled, this
# machine's Node, nats-server, LanceDB's native module, bubblewrap and openssl with their
# libraries, the Python worker; nothing to fetch or install there but a Python with torch.
#
#   scripts/pack-swarm.sh [--out DIR] [--dataset NAME]... [--optuna PYVER] [--fast]
#
# Writes DIR/*.tar.xz (default dist/swarm), each at most 60 MB and extractable on its own, so each
# can travel alone: swarm-app (the processes, worker and assets), swarm-node, swarm-lancedb,
# swarm-tools (nats-server, bwrap, openssl), and per --dataset a swarm-data-NAME with the files of
# /usr/share/datasets/NAME (uncompressed, then xz). DIR/MANIFEST.txt lists each part's files.
# --fast: xz -0, for tests: larger parts, held to the same 60 MB.
# --optuna PYVER: a swarm-optuna part with Optuna and its dependencies as wheels for that Python
# (e.g. 3.12; numpy left out, the host's torch has its own), fetched from the package index here,
# for scripts/gpu-check.sh's peer on a host that cannot install them.
#
# On the host, every part extracted into one folder makes the pack:
#   mkdir swarm && for p in swarm-*.tar.xz; do tar -C swarm -xf "$p"; done
#   RUNNER_PYTHON=/opt/torch/.venv/bin/python3 swarm/research-agent launch --goal "..." \
#     [--data-dir swarm/datasets/fashion-mnist]
# Also swarm/runner (the gpu-runner service; gpu-runner/ is its code), swarm/quick-evaluator,
# swarm/runner-bench and swarm/seeds-bench. Each runs the packed Node whatever node is on PATH, the packed nats-server
# unless NATS_SERVER names another, the host's bwrap and openssl before the packed ones. The
# runner's Python is RUNNER_PYTHON (it needs torch, numpy, scipy and scikit-learn); unset,
# /usr/bin/python3. Similarity search uses the hashing embedder (the MiniLM model is not packed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/dist/swarm"
DATASETS=()
FAST=0
OPTUNA_PY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$(realpath -m "$2")"; shift 2 ;;
    --dataset) DATASETS+=("$2"); shift 2 ;;
    --fast) FAST=1; shift ;;
    --optuna) OPTUNA_PY="$2"; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack-swarm: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
# A transfer to the host carries at most 64 MiB; parts are sent one or several at a time.
MAX_PART_BYTES=60000000
need() { command -v "$1" >/dev/null || { echo "pack-swarm: $1 is not installed here, so it cannot be packed ($2)" >&2; exit 1; }; }
need bwrap "apt-get install bubblewrap"
need openssl "apt-get install openssl"
need strip "apt-get install binutils"
NATS="/usr/sbin/nats-server"
[ -x "$NATS" ] || NATS="$(command -v nats-server || true)"
[ -n "$NATS" ] || { echo "pack-swarm: nats-server is not installed here (apt-get install nats-server)" >&2; exit 1; }
for name in "${DATASETS[@]}"; do
  [ -d "/usr/share/datasets/$name" ] || { echo "pack-swarm: no /usr/share/datasets/$name to pack" >&2; exit 1; }
done

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT"

# --- app: bundles, the web app and LanceDB's node_modules (deploy/pack.ts), assets, wrappers ---
APP="$STAGE/app"
mkdir -p "$APP"
node --import "$ROOT/node_modules/tsx/dist/esm/index.mjs" "$ROOT/deploy/pack.ts" "$APP"
mkdir -p "$STAGE/lancedb"
mv "$APP/node_modules" "$STAGE/lancedb/"
# Debug symbols of the native module: 30 MB of its 186.
find "$STAGE/lancedb" -name '*.node' -exec strip --strip-unneeded {} +
# Files the processes read at run time, where their sources expect them (deploy/pack.ts).
for asset in gpu-runner/python swarm/prompts research/corpus.jsonl core/compiler/blocks.py core/embed_server.py test/fixtures/make_datasets.py scripts/gpu-check.sh bench/optuna_baseline.py bench/handwritten_resnet9.py bench/fmnist.py; do
  mkdir -p "$APP/$(dirname "$asset")"
  cp -r "$ROOT/$asset" "$APP/$asset"
done
find "$APP" -name __pycache__ -prune -exec rm -rf {} +
# wrapper NAME BUNDLE [cd]: a top-level command; `cd` runs it in the pack's folder.
wrapper() {
  local cd=""
  [ "${3:-}" = cd ] && cd='cd "$here"'
  cat > "$APP/$1" <<EOF
#!/bin/sh
# $1 from the packed swarm (scripts/pack-swarm.sh): the packed Node, not one on PATH, for it and
# every process it starts; its nats-server unless NATS_SERVER names another; the host's bwrap and
# openssl before the packed ones. RUNNER_PYTHON: a Python with torch, numpy, scipy and scikit-learn.
here="\$(dirname "\$(readlink -f "\$0")")"
# A Node parent's IPC variable must not make this process adopt an fd it does not own.
unset NODE_CHANNEL_FD NODE_CHANNEL_SERIALIZATION_MODE
export NATS_SERVER="\${NATS_SERVER:-\$here/bin/nats-server}"
export PATH="\$PATH:\$here/bin"
$cd
exec "\$here/bin/node" "\$here/$2" "\$@"
EOF
  chmod +x "$APP/$1"
}
wrapper research-agent cli/research-agent.mjs
wrapper quick-evaluator cli/quick-evaluator.mjs
# Not "gpu-runner": the folder of that name holds the runner's bundle and its Python worker.
wrapper runner gpu-runner/main.mjs
# The benchmark finds test/fixtures/ and writes bench/results/ from its working directory.
wrapper runner-bench bench/runner-bench.mjs cd
wrapper seeds-bench bench/seeds-bench.mjs cd

# --- node ---
mkdir -p "$STAGE/node/bin"
cp "$(readlink -f "$(command -v node)")" "$STAGE/node/bin/node"

# --- tools: nats-server (static), bwrap and openssl with the libraries they link ---
TOOLS="$STAGE/tools"
mkdir -p "$TOOLS/bin" "$TOOLS/lib"
cp "$NATS" "$TOOLS/bin/nats-server"
# libraries of a binary, but libc and the loader, which stay the host's.
own_libs() { ldd "$1" | awk '/=> \// {print $3}' | grep -v -E '/(libc|libm|libdl|libpthread)\.so' | xargs -r -I{} cp -L {} "$TOOLS/lib/"; }
for tool in bwrap openssl; do
  cp "$(command -v "$tool")" "$TOOLS/lib/$tool"
  own_libs "$TOOLS/lib/$tool"
done
# A host without openssl may lack its configuration too.
cp -L "$(openssl version -d | sed 's/^OPENSSLDIR: "\(.*\)"$/\1/')/openssl.cnf" "$TOOLS/lib/openssl.cnf"
cat > "$TOOLS/bin/bwrap" <<'EOF'
#!/bin/sh
# The packed bubblewrap with the libraries it was linked against; the sandbox clears the environment, so none of this reaches the trials.
here="$(dirname "$(readlink -f "$0")")"
LD_LIBRARY_PATH="$here/../lib" exec "$here/../lib/bwrap" "$@"
EOF
cat > "$TOOLS/bin/openssl" <<'EOF'
#!/bin/sh
# The packed openssl with its libraries and configuration (a launch makes its credentials with it, core/secrets.ts).
here="$(dirname "$(readlink -f "$0")")"
LD_LIBRARY_PATH="$here/../lib" OPENSSL_CONF="$here/../lib/openssl.cnf" exec "$here/../lib/openssl" "$@"
EOF
chmod +x "$TOOLS/bin/bwrap" "$TOOLS/bin/openssl"

# --- datasets, where `launch --data-dir DIR/datasets/NAME` finds them ---
for name in "${DATASETS[@]}"; do
  data="$STAGE/data-$name/datasets/$name"
  mkdir -p "$data"
  cp -r "/usr/share/datasets/$name/." "$data/"
  # gzip hides the redundancy xz would find: 26.5 MB of xz instead of 30 MB of .gz for Fashion-MNIST.
  find "$data" -name '*.gz' -exec gunzip {} +
done

# --- Optuna for the GPU check's peer, as wheels for the host's Python ---
if [ -n "$OPTUNA_PY" ]; then
  mkdir -p "$STAGE/optuna/wheels/optuna"
  python3 -m pip download optuna --only-binary=:all: --python-version "$OPTUNA_PY" --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 -d "$STAGE/optuna/wheels/optuna" -q
  rm -f "$STAGE/optuna/wheels/optuna"/numpy-*.whl
fi

# --- parts ---
# part NAME STAGE_DIR XZ_LEVEL WHAT
part() {
  local level="$3"
  [ "$FAST" = 1 ] && level=0
  (cd "$2" && find . -mindepth 1 \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort) > "$STAGE/$1.files"
  # Only the files' own paths (no "./"), so extracting one part never changes the folder it lands in.
  tar -C "$2" --owner=0 --group=0 --numeric-owner -cf - -T "$STAGE/$1.files" | xz -T0 "-$level" > "$OUT/$1.tar.xz"
  local bytes
  bytes="$(stat -c %s "$OUT/$1.tar.xz")"
  printf '%s\t%s\t%s\t%s\n' "$1.tar.xz" "$bytes" "-$level" "$4" >> "$STAGE/parts.tsv"
  if [ "$bytes" -gt "$MAX_PART_BYTES" ]; then
    echo "pack-swarm: $1.tar.xz is $bytes bytes, over the $MAX_PART_BYTES a part may have" >&2
    exit 1
  fi
}
: > "$STAGE/parts.tsv"
# xz -9 where it pays: LanceDB 35.4 MB (-6: 5 MB more); the bundles, which repeat one another, 0.9 MB.
# Node gains 0.3 MB from -9 for two and a half times the time.
part swarm-app "$APP" 9 "the processes (bundled), the Python worker, assets, the commands"
part swarm-node "$STAGE/node" 6 "Node $("$STAGE/node/bin/node" --version)"
part swarm-lancedb "$STAGE/lancedb" 9 "node_modules: LanceDB with its native module, apache-arrow"
part swarm-tools "$TOOLS" 9 "nats-server $("$NATS" --version | awk '{print $NF}'), bwrap, openssl"
for name in "${DATASETS[@]}"; do part "swarm-data-$name" "$STAGE/data-$name" 9 "datasets/$name"; done
if [ -n "$OPTUNA_PY" ]; then part swarm-optuna "$STAGE/optuna" 6 "wheels/optuna: Optuna for Python $OPTUNA_PY"; fi

{
  echo "# The packed swarm (scripts/pack-swarm.sh) of $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . 2>/dev/null || echo ' with uncommitted changes'), $(date -u +%Y-%m-%dT%H:%MZ)."
  echo "# Extract every part into one folder: mkdir swarm && for p in swarm-*.tar.xz; do tar -C swarm -xf \"\$p\"; done"
  while IFS=$'\t' read -r name bytes level what; do
    echo
    echo "## $name ($bytes bytes, xz $level): $what"
    cat "$STAGE/${name%.tar.xz}.files"
  done < "$STAGE/parts.tsv"
} > "$OUT/MANIFEST.txt"

{
  printf '%-34s %9s  %s\n' part size holds
  awk -F'\t' '{ printf "%-34s %6.1f MB  %s\n", $1, $2 / 1e6, $4; total += $2 } END { printf "%-34s %6.1f MB\n", "total", total / 1e6 }' "$STAGE/parts.tsv"
  echo "in $OUT (files per part: MANIFEST.txt)"
} >&2
