#!/usr/bin/env bash
# Produces data/debian-paths.txt: the file paths of the apt Contents indexes
# of this machine's apt sources (the first column of each line), unique,
# shuffled with a fixed seed. Needs root (or sudo) for apt-get, plus lz4 and
# python3.
#
#   bash data/make-debian-paths.sh                # writes data/debian-paths.txt
#   bash data/make-debian-paths.sh --sample       # also rewrites the committed 100k sample
#   bash data/make-debian-paths.sh --whole-paths  # writes data/debian-whole-paths.txt
#
# Which paths: those of the Contents files that `apt-file update` fetches for
# the sources, release, components and architecture configured here. The
# figures in DESIGN.md come from Debian 12 (bookworm and bookworm-updates,
# main, amd64 and all) of 2026-11-22: 7,303,784 paths, 464 MB of key bytes.
# Another release, architecture or distribution gives another set. The
# input files and their sha256 are listed, and the output's sha256 and line
# count printed, so that runs on different days can be compared. The same
# Contents files give the same bytes in the same order.
#
# The first column: as the dataset was defined, each line is cut at its
# first space. A path that contains spaces (16,766 lines of the 2026-12-01
# files) is therefore cut short: its own path is missing and a shorter key
# that names no file (4,862 of them) takes its place. apt-file reads the
# path as everything before the last column instead; `--whole-paths` does
# that too (7,315,688 paths from the same files), into a file of its own,
# since the first-column set is the one every figure so far was measured on.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sample=false
whole=false
for arg in "$@"; do
    case "$arg" in
    --sample) sample=true ;;
    --whole-paths) whole=true ;;
    *)
        echo "usage: $0 [--sample] [--whole-paths]" >&2
        exit 2
        ;;
    esac
done
if $whole; then
    out="$here/debian-whole-paths.txt"
    $sample && { echo "error: --sample takes the first-column set; drop --whole-paths" >&2; exit 2; }
else
    out="$here/debian-paths.txt"
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

if ! command -v apt-file >/dev/null || ! command -v lz4 >/dev/null || ! command -v python3 >/dev/null; then
    $sudo apt-get update -qq
    # Through env: sudo would drop a variable set before it.
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq apt-file lz4 python3
fi
$sudo apt-file update >/dev/null

shopt -s nullglob
contents=(/var/lib/apt/lists/*_Contents-*.lz4)
if [ ${#contents[@]} -eq 0 ]; then
    echo "error: no Contents-*.lz4 under /var/lib/apt/lists after 'apt-file update'" >&2
    exit 1
fi
echo "reading ${#contents[@]} Contents indexes (sha256, path):" >&2
sha256sum "${contents[@]}" | sed 's/^/  /' >&2

# Old archives start each Contents file with a header that ends with the
# line "FILE  LOCATION"; apt-file drops it by the same two patterns. Modern
# ones have none.
paths() {
    if $whole; then
        # Everything before the last column (the packages), as bytes.
        LC_ALL=C sed -E 's/[[:space:]]+[^[:space:]]+[[:space:]]*$//'
    else
        awk '{ print $1 }'
    fi
}
trap 'rm -f "$out.tmp"' EXIT
for f in "${contents[@]}"; do lz4 -dc "$f"; done |
    LC_ALL=C sed '/^This file maps each file available/,/^FILE *LOCATION$/d' |
    paths | python3 "$here/shuffle.py" > "$out.tmp"
mv "$out.tmp" "$out"

lines=$(wc -l < "$out")
bytes=$(($(wc -c < "$out") - lines))
echo "wrote $out: $lines paths, $bytes key bytes, sha256 $(sha256sum "$out" | cut -d' ' -f1)" >&2

if $sample; then
    head -n 100000 "$out" > "$here/debian-paths-100k.txt"
    echo "wrote $here/debian-paths-100k.txt (first 100,000 of the shuffled set)" >&2
fi
