#!/usr/bin/env bash
# Regenerates the committed TypeScript in proto/gen from proto/**/*.proto.
# Run it (npm run gen) after changing a .proto file and commit the result;
# test/core/proto-gen.test.ts fails while proto/gen is stale. Debian's protoc
# with the protoc-gen-es plugin writes the same bytes buf did, without buf's
# 93 MB binary in node_modules.
#   scripts/gen-proto.sh [OUT]   (default proto/gen; the test writes elsewhere)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/proto/gen}")"
if ! command -v protoc >/dev/null 2>&1; then
  echo "gen-proto: protoc not found: apt-get install protobuf-compiler (or run bash scripts/setup.sh)" >&2
  exit 1
fi
mkdir -p "$(dirname "$OUT")"
# Written beside OUT and swapped in whole, so a failed run leaves the old tree.
TMP="$(dirname "$OUT")/.gen-proto.$$"
mkdir "$TMP"
trap 'rm -rf "$TMP"' EXIT
cd "$ROOT/proto"
mapfile -t PROTOS < <(find . -name '*.proto' -printf '%P\n' | LC_ALL=C sort)
protoc --plugin=protoc-gen-es="$ROOT/node_modules/.bin/protoc-gen-es" \
  --es_out="$TMP" --es_opt=target=ts,import_extension=js "${PROTOS[@]}"
rm -rf "$OUT"
mv "$TMP" "$OUT"
