#!/usr/bin/env bash
# Produces data/debian-paths.txt: every file path in Debian's package archive
# (the first column of the apt Contents indexes), unique, shuffled with a fixed
# seed. About 7.3 million paths, 464 MB of key bytes. Needs root (or sudo) for
# apt-get, plus lz4 and python3.
#
#   bash data/make-debian-paths.sh            # writes data/debian-paths.txt
#   bash data/make-debian-paths.sh --sample   # also rewrites the committed 100k sample
#
# The result is deterministic for a given state of the archive: the same
# Contents files give the same bytes in the same order. The sha256 and line
# count are printed so that runs on different days can be compared.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/debian-paths.txt"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

if ! command -v apt-file >/dev/null || ! command -v lz4 >/dev/null; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq apt-file lz4 python3
fi
$sudo apt-file update >/dev/null

shopt -s nullglob
contents=(/var/lib/apt/lists/*_Contents-*.lz4)
if [ ${#contents[@]} -eq 0 ]; then
    echo "error: no Contents-*.lz4 under /var/lib/apt/lists after 'apt-file update'" >&2
    exit 1
fi
echo "reading ${#contents[@]} Contents indexes:" >&2
printf '  %s\n' "${contents[@]}" >&2

# The first whitespace-separated column is the path (Contents has no header on
# modern archives; paths with spaces are cut at the first space, as apt-file's
# own first column is).
trap 'rm -f "$out.tmp"' EXIT
for f in "${contents[@]}"; do lz4 -dc "$f"; done | awk '{ print $1 }' | python3 "$here/shuffle.py" > "$out.tmp"
mv "$out.tmp" "$out"

lines=$(wc -l < "$out")
bytes=$(($(wc -c < "$out") - lines))
echo "wrote $out: $lines paths, $bytes key bytes, sha256 $(sha256sum "$out" | cut -d' ' -f1)" >&2

if [ "${1:-}" = "--sample" ]; then
    head -n 100000 "$out" > "$here/debian-paths-100k.txt"
    echo "wrote $here/debian-paths-100k.txt (first 100,000 of the shuffled set)" >&2
fi
