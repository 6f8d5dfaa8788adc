#!/usr/bin/env bash
# analyze-speed.sh - time `rttlens analyze` on two shapes of capture beside
# its peers and the read limit, and check that memory stays flat on a
# capture of 10 GB (see bench/README.md).
set -euo pipefail

PATH="$PATH:/usr/sbin:/sbin"
export LC_ALL=C

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
PROG=${0##*/}
DATA="$SCRIPT_DIR/data"
BULK="$DATA/bench.pcap"
CONNS="$DATA/conns.pcap"
BIG="$DATA/big.pcap"
RUNS=${RUNS:-3}
BUILD=1
BIG_GB=0
PEERS=1
ONLY=""

usage() {
    cat <<EOF
Usage: $PROG [--runs N] [--no-build] [--no-peers] [--only bulk|conns] [--big GB]

Builds rttlens (release), makes the two captures when missing (root: network
namespaces), then prints, per capture, in one run: cat (the read limit),
rttlens on 1 thread and on all threads in text, json and jsonl, tcptrace -ln
and tshark without TCP reassembly: wall time (best of N for cat and rttlens,
one run for the peers), packets/s, MB/s, peak RSS and the ratio to cat.

Captures (bench/data/, git-ignored):
  bulk   $BULK (make-capture.sh: bulk downloads and short HTTPS)
  conns  $CONNS (rttlens bench --lab nginx --capture: ~90 k short HTTPS
         connections with a request each, ~1.8 M packets)

Options:
  --runs N     timed runs of cat and rttlens, the best is shown (default $RUNS)
  --no-build   do not run cargo build
  --no-peers   skip tcptrace and tshark
  --only C     time only capture C (bulk or conns)
  --big GB     also make $BIG of at least GB GB (time-shifted copies of the
               bulk capture, editcap + mergecap) and print rttlens' RSS after
               1, 5, 10, … GB read (disk: GB plus the bulk capture)
EOF
}

die()  { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }
note() { printf '%s\n' "$*" >&2; }

while (($#)); do
    case $1 in
        --runs)     [[ $# -ge 2 ]] || die "$1 needs a value"; RUNS=$2; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --no-peers) PEERS=0; shift ;;
        --only)     [[ $# -ge 2 ]] || die "$1 needs a value"; ONLY=$2; shift 2 ;;
        --big)      [[ $# -ge 2 ]] || die "$1 needs a value"; BIG_GB=$2; shift 2 ;;
        -h|--help)  usage; exit 0 ;;
        *)          usage >&2; die "unknown argument: $1" ;;
    esac
done
[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 1 && RUNS <= 50)) || die "--runs must be in 1..50"
[[ $BIG_GB =~ ^[0-9]+$ ]] && ((BIG_GB <= 200)) || die "--big must be a number of GB up to 200"
case $ONLY in ""|bulk|conns) ;; *) die "--only takes bulk or conns" ;; esac

[[ -x /usr/bin/time ]] || die "GNU time is missing: apt-get install -y time"
command -v python3 >/dev/null || die "python3 is missing: apt-get install -y python3"

BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/rttlens"
if ((BUILD)); then
    note "building: cargo build --release -p rttlens"
    (cd -- "$ROOT" && cargo build --release -q -p rttlens) || die "cargo build failed"
fi
[[ -x $BIN ]] || die "$BIN not found (build it, or drop --no-build)"
CORES=$(nproc)
mkdir -p "$DATA"

# ---- captures -----------------------------------------------------------------
need_root() { [[ $EUID -eq 0 ]] || die "making $1 needs root (network namespaces): sudo $0"; }

make_conns() {
    need_root "$CONNS"
    command -v editcap >/dev/null || die "editcap is missing: apt-get install -y wireshark-common"
    note "making $CONNS: rttlens bench --lab nginx --rate 1300 --duration 70s --request --capture (about 90 s)"
    "$BIN" bench --lab nginx --rtt 2ms --rate 1300 --duration 70s --mix full=2,resumed=1 \
        --request --capture "$CONNS.pcapng" --no-progress -k >"$DATA/conns-bench.txt" \
        || die "rttlens bench failed: see $DATA/conns-bench.txt"
    editcap -F pcap "$CONNS.pcapng" "$CONNS" && rm -f -- "$CONNS.pcapng"
}

if [[ $ONLY != conns && ! -f $BULK ]]; then
    need_root "$BULK"
    note "making $BULK with make-capture.sh"
    "$SCRIPT_DIR/make-capture.sh" "$BULK" --no-tshark || die "make-capture.sh failed"
fi
if [[ $ONLY != bulk && ! -f $CONNS ]]; then
    make_conns
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rttlens-speed.XXXXXX")
trap 'rm -rf -- "$WORK"' EXIT

# measure CMD... : stdout to /dev/null; sets M_WALL (s) and M_RSS (KiB).
measure() {
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -o "$WORK/time" -f '%M' "$@" >/dev/null 2>"$WORK/err" \
        || { note "failed: $*"; tail -n 5 "$WORK/err" >&2; return 1; }
    t1=$(date +%s%N)
    M_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    M_RSS=$(tail -n 1 "$WORK/time")
}

# best N CMD... : best wall of N runs (M_WALL), largest RSS (M_RSS).
best() {
    local n=$1 i w="" r=0
    shift
    for ((i = 0; i < n; i++)); do
        measure "$@" || return 1
        if [[ -z $w ]] || awk -v a="$M_WALL" -v b="$w" 'BEGIN { exit !(a < b) }'; then w=$M_WALL; fi
        ((M_RSS > r)) && r=$M_RSS
    done
    M_WALL=$w M_RSS=$r
}

row() { # LABEL WALL RSS_KIB
    awk -v l="$1" -v w="$2" -v r="$3" -v p="$PACKETS" -v mb="$MB" -v c="$CAT" 'BEGIN {
        if (w <= 0) w = 0.001
        printf "| %-30s | %7.3f | %7.2f | %7.0f | %6s | %6.1f |\n", l, w, p / w / 1e6, mb / w,
            (r > 0 ? sprintf("%.0f", r / 1024) : "-"), w / c
    }'
}

time_capture() { # NAME FILE
    local name=$1 f=$2 fmt
    [[ -r $f ]] || die "cannot read $f"
    MB=$(awk -v s="$(stat -c %s -- "$f")" 'BEGIN { printf "%.1f", s / 1048576 }')
    # the same page cache every run: the file is dropped from it and read
    # once, so it is cached as read-ahead caches it (in large folios where the
    # file system has them: on ext4/Linux 6.18, reading 522 MB then costs
    # 0.015 s instead of 0.061 s as the small pages tcpdump's writes left)
    dd if="$f" iflag=nocache count=0 status=none 2>/dev/null || note "could not drop $f from the page cache"
    cat -- "$f" >/dev/null
    # the packet count, from rttlens' own summary
    "$BIN" analyze "$f" --format jsonl --no-progress >"$WORK/out.jsonl"
    PACKETS=$(tail -n 1 "$WORK/out.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["capture"]["frames"])')
    local conns
    conns=$(tail -n 1 "$WORK/out.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["capture"]["connections"])')
    best "$RUNS" cat -- "$f"
    CAT=$M_WALL
    echo
    echo "### $name: ${f#"$ROOT"/}, $MB MB, $PACKETS packets, $conns connections ($CORES cores)"
    echo
    echo "| tool                           |  wall s | M pkt/s |    MB/s | RSS MB |  × cat |"
    echo "|--------------------------------|--------:|--------:|--------:|-------:|-------:|"
    row "cat (the read limit)" "$CAT" "$M_RSS"
    for threads in 1 "$CORES"; do
        for fmt in text json jsonl; do
            best "$RUNS" "$BIN" analyze "$f" --no-progress --threads "$threads" --format "$fmt" || continue
            row "rttlens $fmt, $threads thread$([[ $threads == 1 ]] || echo s)" "$M_WALL" "$M_RSS"
        done
    done
    if ((PEERS)); then
        if command -v tcptrace >/dev/null; then
            measure tcptrace -ln "$f" && row "tcptrace -ln" "$M_WALL" "$M_RSS"
        else
            note "tcptrace is missing (apt-get install -y tcptrace): row skipped"
        fi
        if command -v tshark >/dev/null; then
            measure tshark -r "$f" -o tcp.desegment_tcp_streams:FALSE -q -z conv,tcp \
                && row "tshark -z conv,tcp (no reasm.)" "$M_WALL" "$M_RSS"
        else
            note "tshark is missing (apt-get install -y tshark): row skipped"
        fi
    fi
}

[[ $ONLY == bulk ]] || time_capture "connection-heavy" "$CONNS"
[[ $ONLY == conns ]] || time_capture "bulk" "$BULK"
echo
echo "wall: best of $RUNS for cat and rttlens, one run for tcptrace and tshark; MB = MiB; page cache warm (dropped, then read once with cat)"

# ---- 10 GB: memory stays flat ---------------------------------------------------
((BIG_GB > 0)) || exit 0
command -v editcap >/dev/null && command -v mergecap >/dev/null \
    || die "editcap/mergecap are missing: apt-get install -y wireshark-common"
[[ -f $BULK ]] || die "$BULK is missing (run without --only conns first)"
want=$((BIG_GB * 1000 * 1000 * 1000))
if [[ ! -f $BIG ]] || (($(stat -c %s -- "$BIG") < want)); then
    size=$(stat -c %s -- "$BULK")
    copies=$(((want + size - 1) / size))
    # each copy shifted past the previous one's end, so the result is one
    # capture in time order, of the same connections again and again
    span=$("$BIN" analyze "$BULK" --format jsonl --no-progress | tail -n 1 \
        | python3 -c 'import json, sys; print(int(json.load(sys.stdin)["capture"]["duration_s"]) + 10)')
    note "making $BIG: $copies time-shifted copies of ${BULK#"$ROOT"/} (every ${span} s)"
    parts=()
    for ((i = 0; i < copies; i++)); do
        editcap -t $((i * span)) "$BULK" "$WORK/part-$i.pcap"
        parts+=("$WORK/part-$i.pcap")
    done
    mergecap -a -F pcap -w "$BIG" "${parts[@]}"
    rm -f -- "${parts[@]}"
fi
BIGSIZE=$(stat -c %s -- "$BIG")
echo
echo "### ${BIG#"$ROOT"/}: $(awk -v s="$BIGSIZE" 'BEGIN { printf "%.1f", s / 1e9 }') GB, rttlens analyze --format jsonl (all threads)"
echo
t0=$(date +%s%N)
"$BIN" analyze "$BIG" --format jsonl --no-progress >/dev/null &
pid=$!
next=1
marks=(1 5 10 20 50 100 200)
peak=0
echo "| read GB | RSS MB |"
echo "|--------:|-------:|"
while kill -0 "$pid" 2>/dev/null; do
    rchar=$(awk '/^rchar/ { print $2 }' "/proc/$pid/io" 2>/dev/null || echo 0)
    rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    ((rss > peak)) && peak=$rss
    while ((next <= ${#marks[@]})) && ((rchar >= marks[next - 1] * 1000000000)); do
        printf '| %7d | %6.1f |\n' "${marks[next - 1]}" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')"
        next=$((next + 1))
    done
    sleep 0.2
done
wait "$pid" || die "rttlens analyze $BIG failed"
t1=$(date +%s%N)
printf '| %7.1f | %6.1f | (end; peak)\n' "$(awk -v s="$BIGSIZE" 'BEGIN { print s / 1e9 }')" "$(awk -v r="$peak" 'BEGIN { print r / 1024 }')"
echo
awk -v a="$t0" -v b="$t1" -v s="$BIGSIZE" 'BEGIN { w = (b - a) / 1e9; printf "%.1f s, %.0f MB/s (sampled every 0.2 s; page cache cold for most of the file)\n", w, s / 1048576 / w }'
