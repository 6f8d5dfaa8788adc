#!/usr/bin/env bash
# run.sh - time `rttlens analyze` on a large capture (see bench/README.md).
set -euo pipefail

PATH="$PATH:/usr/sbin:/sbin"
export LC_ALL=C

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(git -C "$SCRIPT_DIR" rev-parse --show-toplevel 2>/dev/null || (cd -- "$SCRIPT_DIR/.." && pwd))
PROG=${0##*/}

CAPTURE="$SCRIPT_DIR/data/bench.pcap"
RUNS=${RUNS:-3}
CPU=${CPU:-0}
COMPARE=0
BUILD=1
EXTRA=()

usage() {
    cat <<EOF
Usage: $PROG [CAPTURE] [--runs N] [--cpu N] [--compare] [--no-build] [-- extra rttlens args]

Build rttlens (cargo build --release -p rttlens), create CAPTURE with
make-capture.sh if it does not exist (default: ${CAPTURE#"$ROOT"/}), then time
  taskset -c CPU rttlens analyze CAPTURE --format json [extra args] > /dev/null
RUNS times and print packets/s, MiB/s and peak RSS.

Options:
  --runs N     timed runs, the best wall time is reported (default $RUNS, env RUNS)
  --cpu N      core to pin the measured processes to (default $CPU, env CPU)
  --compare    also time tshark (conv,tcp, no desegmentation) and tcpdump -r
               on the same capture, as reference points (one run each)
  --no-build   do not run cargo build
Environment:
  RTTLENS=PATH use this binary instead of building target/release/rttlens
EOF
}

die()  { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }
note() { printf '%s\n' "$*" >&2; }

CAPTURE_SET=0
while (($#)); do
    case $1 in
        --runs)     [[ $# -ge 2 ]] || die "$1 needs a value"; RUNS=$2; shift 2 ;;
        --runs=*)   RUNS=${1#*=}; shift ;;
        --cpu)      [[ $# -ge 2 ]] || die "$1 needs a value"; CPU=$2; shift 2 ;;
        --cpu=*)    CPU=${1#*=}; shift ;;
        --compare)  COMPARE=1; shift ;;
        --no-build) BUILD=0; shift ;;
        -h|--help)  usage; exit 0 ;;
        --)         shift; EXTRA=("$@"); break ;;
        -*)         usage >&2; die "unknown option: $1 (rttlens arguments go after --)" ;;
        *)
            ((CAPTURE_SET == 0)) || die "more than one capture given: $CAPTURE and $1"
            CAPTURE=$1; CAPTURE_SET=1; shift ;;
    esac
done
if ! [[ $RUNS =~ ^[0-9]+$ ]] || ((RUNS < 1 || RUNS > 100)); then die "--runs must be in 1..100, got '$RUNS'"; fi
[[ $CPU =~ ^[0-9]+$ ]] || die "--cpu must be a core number, got '$CPU'"

# ---- requirements -----------------------------------------------------------
[[ -x /usr/bin/time ]] || die "GNU time not found at /usr/bin/time; install it with: apt-get install -y time"
command -v taskset >/dev/null 2>&1 || die "taskset not found; install it with: apt-get install -y util-linux"
taskset -c "$CPU" true 2>/dev/null || die "cannot pin to CPU $CPU (taskset -c $CPU failed); choose another with --cpu"

# ---- rttlens binary ---------------------------------------------------------
if [[ -n ${RTTLENS:-} ]]; then
    BIN=$(command -v -- "$RTTLENS") || die "RTTLENS=$RTTLENS is not an executable"
else
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/rttlens"
    if ((BUILD)); then
        command -v cargo >/dev/null 2>&1 || die "cargo not found (install Rust from https://rustup.rs), or set RTTLENS=/path/to/rttlens"
        note "building: cargo build --release -p rttlens"
        (cd -- "$ROOT" && cargo build --release -p rttlens) || die "cargo build failed"
    fi
    [[ -x $BIN ]] || die "$BIN not found (build it, or set RTTLENS=/path/to/rttlens)"
fi

# ---- capture ----------------------------------------------------------------
if [[ ! -f $CAPTURE ]]; then
    note "capture $CAPTURE not found, generating it with make-capture.sh"
    if [[ $EUID -ne 0 ]]; then
        die "make-capture.sh needs root; run: sudo $SCRIPT_DIR/make-capture.sh $CAPTURE"
    fi
    "$SCRIPT_DIR/make-capture.sh" "$CAPTURE" || die "make-capture.sh failed"
fi
[[ -r $CAPTURE ]] || die "cannot read $CAPTURE"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rttlens-run.XXXXXX")
trap 'rm -rf -- "$WORK"' EXIT

# measure OUT CMD... : run CMD pinned to $CPU under GNU time, stdout to OUT.
# Sets M_WALL (s, own nanosecond clock), M_RSS (KiB), M_USER, M_SYS (s).
measure() {
    local out=$1 t0 t1 rc=0
    shift
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$WORK/time.txt" taskset -c "$CPU" "$@" >"$out" 2>"$WORK/stderr.txt" || rc=$?
    t1=$(date +%s%N)
    if ((rc != 0)); then
        note "command failed (exit $rc): $*"
        tail -n 20 "$WORK/stderr.txt" >&2
        return "$rc"
    fi
    M_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    M_RSS=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$WORK/time.txt")
    M_USER=$(awk -F': ' '/User time \(seconds\)/ { print $2 }' "$WORK/time.txt")
    M_SYS=$(awk -F': ' '/System time \(seconds\)/ { print $2 }' "$WORK/time.txt")
    [[ -n $M_RSS && -n $M_USER && -n $M_SYS ]] || die "could not parse /usr/bin/time -v output: $(head -c 300 "$WORK/time.txt")"
}

# count_packets FILE : prints "COUNT METHOD"; capinfos if present, else tcpdump -r | wc -l.
count_packets() {
    local n=""
    if command -v capinfos >/dev/null 2>&1; then
        n=$(capinfos -M -c -- "$1" 2>/dev/null | awk -F: '/Number of packets/ { gsub(/ /, "", $2); print $2 }')
        [[ -z $n ]] || { echo "$n capinfos"; return 0; }
    fi
    command -v tcpdump >/dev/null 2>&1 || die "need capinfos (wireshark-common) or tcpdump to count packets"
    n=$(tcpdump -r "$1" -qn 2>/dev/null | wc -l)
    echo "$n tcpdump"
}

# json_frames FILE : capture.frames from rttlens' JSON output, or nothing.
json_frames() {
    command -v python3 >/dev/null 2>&1 || return 0
    python3 - "$1" <<'EOF' 2>/dev/null || true
import json, sys
try:
    with open(sys.argv[1]) as f:
        v = json.load(f)["capture"]["frames"]
    if isinstance(v, int) and not isinstance(v, bool):
        print(v)
except Exception:
    pass
EOF
}

CMD=("$BIN" analyze "$CAPTURE" --format json "${EXTRA[@]}")
SIZE=$(stat -c %s -- "$CAPTURE")
MIB=$(awk -v s="$SIZE" 'BEGIN { printf "%.1f", s / 1048576 }')
SHOWN=${CAPTURE#"$ROOT"/}

note "command: taskset -c $CPU ${CMD[*]}"
# Warm-up (untimed): brings the capture into the page cache, checks the command
# works, and provides the JSON from which the frame count is read.
note "warm-up run"
measure "$WORK/out.json" "${CMD[@]}" || die "rttlens analyze failed (is 'analyze --format json' implemented yet?)"

if [[ ! -s $WORK/out.json ]]; then
    note "WARNING: rttlens printed nothing on stdout; is 'analyze --format json' implemented? The figures below may be meaningless."
elif command -v python3 >/dev/null 2>&1 && ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$WORK/out.json" 2>/dev/null; then
    note "WARNING: rttlens output is not valid JSON"
fi
PACKETS=$(json_frames "$WORK/out.json")
if [[ -n $PACKETS ]]; then
    PK_SRC="rttlens JSON (capture.frames)"
else
    read -r PACKETS PK_SRC <<<"$(count_packets "$CAPTURE")"
fi
if ! [[ $PACKETS =~ ^[0-9]+$ ]] || ((PACKETS == 0)); then die "could not count the packets in $CAPTURE"; fi

BEST="" PEAK=0 WALLS=()
for ((i = 1; i <= RUNS; i++)); do
    measure /dev/null "${CMD[@]}" || die "timed run $i failed"
    note "run $i: ${M_WALL} s wall, ${M_USER} s user, ${M_SYS} s sys, RSS $(awk -v k="$M_RSS" 'BEGIN { printf "%.1f", k / 1024 }') MiB"
    WALLS+=("$M_WALL")
    if [[ -z $BEST ]] || awk -v a="$M_WALL" -v b="$BEST" 'BEGIN { exit !(a < b) }'; then BEST=$M_WALL; fi
    ((M_RSS > PEAK)) && PEAK=$M_RSS
done

# line LABEL RUNS WALL RSS_KIB
line() {
    awk -v label="$1" -v n="$2" -v w="$3" -v rss="$4" -v pk="$PACKETS" -v mib="$MIB" 'BEGIN {
        if (w <= 0) w = 0.001
        printf "%-12s best of %d: %.3f s  ->  %.2f M packets/s  %.0f MB/s  peak RSS %.1f MB\n",
            label, n, w, pk / w / 1e6, mib / w, rss / 1024
    }'
}

echo
printf '%-12s %s  %s MB  %s packets\n' capture "$SHOWN" "$MIB" "$PACKETS"
line rttlens "$RUNS" "$BEST" "$PEAK"

if ((COMPARE)); then
    if command -v tshark >/dev/null 2>&1; then
        note "reference: tshark -r CAPTURE -o tcp.desegment_tcp_streams:FALSE -q -z conv,tcp"
        if measure /dev/null tshark -r "$CAPTURE" -o tcp.desegment_tcp_streams:FALSE -q -z conv,tcp; then
            line tshark 1 "$M_WALL" "$M_RSS"
        fi
    else
        note "tshark not found (apt-get install -y tshark): skipping it"
    fi
    if command -v tcpdump >/dev/null 2>&1; then
        note "reference: tcpdump -r CAPTURE -w /dev/null"
        if measure /dev/null tcpdump -r "$CAPTURE" -w /dev/null; then
            line tcpdump 1 "$M_WALL" "$M_RSS"
        fi
    else
        note "tcpdump not found (apt-get install -y tcpdump): skipping it"
    fi
fi
echo
echo "packets counted by: $PK_SRC; MB = MiB (2^20 bytes); wall = best of the timed runs (${WALLS[*]} s), pinned to CPU $CPU"
