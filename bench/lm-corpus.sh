#!/usr/bin/env bash
# The language-modelling benchmark's corpus: the King James Version of the Bible, as Debian's
# packages ship it, one verse per line, nothing downloaded at run time.
#
#   bash bench/lm-corpus.sh [OUT]          (default bench/data/lm-corpus.txt)
#
# Source: Debian package `bible-kjv-text` (4.38 in bookworm; public-domain text), file
# /usr/lib/bible.data, a compressed random-access form of the text (with /usr/lib/bible.data.conc,
# its concordance). Debian package `bible-kjv` (same source, 4.38) ships /usr/bin/bible, the only
# reader of that format; `bible -f Gen1:1-Rev22:21` dumps every verse, one line each, prefixed
# with its reference ("Ge1:1 In the beginning ..."). The prefix is cut, leaving 31,102 lines of
# plain ASCII prose, 4,137,850 bytes (sha256 printed below), Genesis to Revelation in order. The
# loader (gpu-runner/python/tasks/text.py `_corpus`) cuts it into 16,163 rows and holds the last
# 3,233 out as the test split: the New Testament from Matthew 27 on. The same text (with
# references) is the Canterbury large corpus's bible.txt, a classic compression benchmark.
#
# Idempotent: installs `bible-kjv` (which pulls `bible-kjv-text`) with apt-get only when
# /usr/bin/bible is missing, and rewrites OUT only when its content would change. Needs root for
# the install (as on this project's machines). Prints the path, size, sha256, and the packages'
# names and versions.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench/data/lm-corpus.txt}"

if ! command -v bible >/dev/null 2>&1 || [ ! -f /usr/lib/bible.data ]; then
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends bible-kjv bible-kjv-text >/dev/null 2>&1; then
    apt-get update >/dev/null
    apt-get install -y --no-install-recommends bible-kjv bible-kjv-text >/dev/null
  fi
fi

mkdir -p "$(dirname "$out")"
tmp="$(mktemp "$(dirname "$out")/.lm-corpus.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
# -f turns pretty-printing off: one verse per line, each after its reference, which sed removes.
bible -f Gen1:1-Rev22:21 | sed -E 's/^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ //' > "$tmp"

lines="$(wc -l < "$tmp")"
if [ "$lines" -ne 31102 ] || grep -qE '^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ ' "$tmp"; then
  echo "lm-corpus: unexpected output from bible ($lines lines, expected 31102 verses)" >&2
  exit 1
fi
if [ -f "$out" ] && cmp -s "$tmp" "$out"; then
  rm -f "$tmp"
else
  chmod 644 "$tmp"
  mv "$tmp" "$out"
fi

echo "corpus: $out"
echo "bytes: $(wc -c < "$out")"
echo "lines: $(wc -l < "$out")"
echo "sha256: $(sha256sum "$out" | cut -d' ' -f1)"
echo "source: $(dpkg-query -W -f='${Package} ${Version}, ' bible-kjv-text bible-kjv | sed 's/, $//') (Debian)"
