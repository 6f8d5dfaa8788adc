#!/usr/bin/env bash
# html-render.sh - time the HTML report of the benchmark captures: rttlens
# writing it, and headless Chromium laying it out and painting it.
#
# Chromium's time is measured as a whole run (`--screenshot`, which lays
# out and paints the full page) minus the same run on an empty page (the
# browser's own start and stop), median of --runs each. See bench/README.md.
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
RUNS=5
CAPTURES=()

usage() {
    cat <<EOF
Usage: ${0##*/} [CAPTURE...] [--runs N]

Time 'rttlens analyze CAPTURE --format html' and headless Chromium drawing
the page. Default captures: every bench/data/*.pcap (make them with
make-capture.sh). Needs chromium (Debian package chromium).
EOF
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --runs) RUNS=${2:?--runs needs a value}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
        *) CAPTURES+=("$1"); shift ;;
    esac
done
if [[ ${#CAPTURES[@]} -eq 0 ]]; then
    shopt -s nullglob
    CAPTURES=("$ROOT"/bench/data/*.pcap)
fi
[[ ${#CAPTURES[@]} -gt 0 ]] || { echo "no capture: run bench/make-capture.sh first" >&2; exit 2; }
command -v chromium >/dev/null || { echo "chromium is missing: apt-get install -y chromium" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p rttlens
BIN="$ROOT/target/release/rttlens"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
printf '<!DOCTYPE html><html><body></body></html>\n' > "$WORK/empty.html"

# seconds of one command's wall time
wall() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

shot() {
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$WORK/profile" --window-size=1280,2000 \
        --screenshot="$WORK/shot.png" "file://$1"
}

printf '%-28s %9s %10s %9s %8s %10s %11s %11s %10s\n' \
    capture packets "largest" "analyze" "page" "svg elems" "chromium" "empty page" "render"
for cap in "${CAPTURES[@]}"; do
    name=$(basename "$cap")
    page="$WORK/$name.html"
    t_an=$(wall "$BIN" analyze --no-progress --format html -o "$page" "$cap")
    read -r packets largest < <("$BIN" analyze --no-progress --format json "$cap" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["capture"]["frames"], max((c["frames"] for c in d["connections"]), default=0))')
    elems=$(grep -o '<\(line\|polyline\|polygon\|rect\|circle\|text\) ' "$page" | wc -l)
    size=$(du -k "$page" | cut -f1)
    shot "$page" >/dev/null 2>&1 || true   # warm the disk cache and the profile
    t_page=$(for _ in $(seq "$RUNS"); do wall shot "$page"; done | median)
    t_empty=$(for _ in $(seq "$RUNS"); do wall shot "$WORK/empty.html"; done | median)
    render=$(awk -v a="$t_page" -v b="$t_empty" 'BEGIN { printf "%.3f", a - b }')
    printf '%-28s %9d %10d %8.2fs %6d kB %10d %10.2fs %10.2fs %9.2fs\n' \
        "$name" "$packets" "$largest" "$t_an" "$size" "$elems" "$t_page" "$t_empty" "$render"
done
echo "(largest = packets of the largest connection; render = chromium - empty page, median of $RUNS)"
