#!/usr/bin/env bash
# Fuzzes every target in turn for SECONDS each (default 300), from the
# corpus kept in fuzz/corpus/<target> (seeded first for the targets that
# need inputs that parse), and says which targets found something. One
# command for a scheduled run (cron, a nightly CI job): it exits 1 if any
# target failed, and leaves the failing inputs in fuzz/artifacts/<target>/.
#
#   bash fuzz/run-all.sh [SECONDS] [TARGET...]
#
# Needs a nightly toolchain and cargo-fuzz (see fuzz/README.md).
set -uo pipefail

cd "$(dirname "$0")"
seconds=${1:-300}
shift || true
case $seconds in '' | *[!0-9]*)
    echo "usage: $0 [SECONDS] [TARGET...]" >&2
    exit 2
    ;;
esac
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
[ "${#targets[@]}" -gt 0 ] || { echo "no fuzz targets found" >&2; exit 2; }

# Inputs that parse, for frozen_file and serde_input (fast; kept if there).
cargo +nightly run --quiet --release --example seeds >/dev/null || exit 2

# memtable_ops: a known leak in crossbeam-skiplist 0.1.3 (fuzz/README.md).
export LSAN_OPTIONS="suppressions=$PWD/lsan.supp"
failed=()
for target in "${targets[@]}"; do
    echo "::: $target for ${seconds} s" >&2
    mkdir -p "corpus/$target"
    if ! cargo +nightly fuzz run -O "$target" "corpus/$target" -- \
        -max_len=4096 -max_total_time="$seconds" -timeout=20 -print_final_stats=1; then
        failed+=("$target")
    fi
done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "found something: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
echo "nothing found by ${targets[*]} (${seconds} s each)" >&2
