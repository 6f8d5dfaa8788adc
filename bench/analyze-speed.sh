#!/usr/bin/env bash
# analyze-speed.sh - time `rttlens analyze` on three shapes of capture beside
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
STORM="$DATA/storm.pcap"
WRK="$DATA/wrk.pcap"
BIG="$DATA/big.pcap"
RUNS=${RUNS:-3}
BUILD=1
MEMBUILD=1
BIG_GB=0
SCALE=0
PEERS=1
ONLY=""
BIN=${RTTLENS_BIN:-}
# the filter of the filtered rows (the servers' port: most segments kept)
FILTER=${RTTLENS_FILTER:-port 443}
COMPARE=""

# the connection-heavy capture: TLS 1.3 full and resumed handshakes with a
# request each, the server keeping up with most of them
CONNS_ARGS=(--lab nginx --rtt 2ms --rate 1300 --duration 70s --mix "full=2,resumed=1" --request)
# the storm: nginx with a listen backlog of 8 and no SYN cookies, offered
# five to ten times what it accepts; the full accept queue drops SYNs (resent
# 1, 2, 3, 4, 5 and 7 s after the first: linear timeouts, then backing off)
# and handshakes' last ACKs (the ClientHello is resent on the RTO, backing
# off); connections give up after 11 s, those that get in make 10 requests
STORM_ARGS=(--lab nginx --rtt 10ms --lab-backlog 8 --lab-syncookies 0 --rate 1400 --duration 60s
    --mix "full=2,resumed=1" --requests 10 --timeout 11s --max-in-flight 20000)

usage() {
    cat <<EOF
Usage: $PROG [--runs N] [--no-build] [--bin PATH] [--compare PATH] [--no-peers]
       [--only bulk|conns|storm|wrk] [--big GB] [--scale COPIES]

Builds rttlens (release), makes the three captures when missing (root: network
namespaces), then prints, per capture, in one run: cat (the read limit),
tcptrace -ln, rttlens on 1 thread and on all threads in text, json and jsonl,
and tshark without TCP reassembly: wall time (best of N for cat and rttlens,
one run for the peers), packets/s, MB/s, peak RSS, the ratio to cat and how
many times faster than tcptrace each row is (tcptrace is timed first). Then
the heap per open connection on each capture (examples/conn_memory, built
beside rttlens: the engine of this checkout, whatever --bin times).

Captures (bench/data/, git-ignored):
  bulk   $BULK
         make-capture.sh: bulk downloads and short HTTPS, ~450 k packets
  conns  $CONNS
         rttlens bench ${CONNS_ARGS[*]} --capture
         ~90 k short HTTPS connections with a request each, ~1.8 M packets
  storm  $STORM
         rttlens bench ${STORM_ARGS[*]} --capture
         ~88 k connections, most of them SYNs resent until they give up,
         ~1.1 M packets; about 80-90 s to make
  wrk    $WRK
         the connection-heavy and the bulk captures merged on one clock
         (editcap -t, mergecap): the bulk downloads start 20 s into the
         short HTTPS connections, as a wrk run beside a large download
         (the raw IP packets given Ethernet headers: one link type);
         ~1.76 M packets

Options:
  --runs N        timed runs of cat and rttlens, the best is shown (default $RUNS)
  --no-build      do not run cargo build
  --bin PATH      time this rttlens binary, not this checkout's (env RTTLENS_BIN);
                  it also makes missing lab captures. Only the conn_memory
                  example is built (the heap table is this checkout's engine)
  --compare PATH  also time this second rttlens binary, its runs alternating
                  with the first's (A, B, A, B, ...), in rows labelled with
                  its file name
  --no-peers      skip tcptrace and tshark (no "× tcptrace" column figures)
  --only C        time only capture C (bulk, conns, storm or wrk)
  --big GB        also make $BIG of at least GB GB (time-shifted copies of the
                  bulk capture, editcap + mergecap) and print rttlens' RSS after
                  10 %, 25 %, 50 %, 75 % and 90 % of the run (disk: GB plus the
                  bulk capture)
  --scale COPIES  also make $DATA/storm-xCOPIES.pcap, COPIES time-shifted copies
                  of the storm 310 s apart (past the idle timeout: each copy's
                  connections new; 12: 17 M packets, 1.06 M connections, 3.4 GB),
                  and time it beside the storm itself: packets/s of each and
                  the RSS through each run (it must stay flat)

Needs GNU time and python3; tcptrace (apt-get install -y tcptrace) unless
--no-peers; tshark optional (apt-get install -y tshark).
EOF
}

die()  { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }
note() { printf '%s\n' "$*" >&2; }

while (($#)); do
    case $1 in
        --runs)     [[ $# -ge 2 ]] || die "$1 needs a value"; RUNS=$2; shift 2 ;;
        --no-build) BUILD=0; MEMBUILD=0; shift ;;
        --bin)      [[ $# -ge 2 ]] || die "$1 needs a value"; BIN=$2; shift 2 ;;
        --compare)  [[ $# -ge 2 ]] || die "$1 needs a value"; COMPARE=$2; shift 2 ;;
        --no-peers) PEERS=0; shift ;;
        --only)     [[ $# -ge 2 ]] || die "$1 needs a value"; ONLY=$2; shift 2 ;;
        --big)      [[ $# -ge 2 ]] || die "$1 needs a value"; BIG_GB=$2; shift 2 ;;
        --scale)    [[ $# -ge 2 ]] || die "$1 needs a value"; SCALE=$2; shift 2 ;;
        -h|--help)  usage; exit 0 ;;
        *)          usage >&2; die "unknown argument: $1" ;;
    esac
done
if ! [[ $RUNS =~ ^[0-9]+$ ]] || ((RUNS < 1 || RUNS > 50)); then die "--runs must be in 1..50"; fi
if ! [[ $BIG_GB =~ ^[0-9]+$ ]] || ((BIG_GB > 200)); then die "--big must be a number of GB up to 200"; fi
if ! [[ $SCALE =~ ^[0-9]+$ ]] || ((SCALE > 100)); then die "--scale must be a number of copies up to 100"; fi
case $ONLY in ""|bulk|conns|storm|wrk) ;; *) die "--only takes bulk, conns, storm or wrk" ;; esac

[[ -x /usr/bin/time ]] || die "GNU time is missing: apt-get install -y time"
command -v python3 >/dev/null || die "python3 is missing: apt-get install -y python3"
if ((PEERS)) && ! command -v tcptrace >/dev/null; then
    die "tcptrace is missing (every run times it: the \"× tcptrace\" column): apt-get install -y tcptrace (or --no-peers)"
fi

if [[ -n $BIN ]]; then
    [[ $BIN == */* ]] || BIN=./$BIN
    BUILD=0
else
    BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/rttlens"
fi
# the heap per open connection (issue 27): the engine of this checkout, a
# counting allocator around the system's (crates/rttlens-core/examples)
MEMBIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/conn_memory"
if ((BUILD)); then
    note "building: cargo build --release -p rttlens; the conn_memory example"
    (cd -- "$ROOT" && cargo build --release -q -p rttlens \
        && cargo build --release -q -p rttlens-core --example conn_memory) || die "cargo build failed"
elif ((MEMBUILD)); then
    # --bin times another binary: the heap table is still this checkout's
    note "building: the conn_memory example"
    (cd -- "$ROOT" && cargo build --release -q -p rttlens-core --example conn_memory) \
        || die "cargo build failed"
fi
[[ -x $BIN && -f $BIN ]] || die "$BIN not found or not executable (build it, drop --no-build, or give --bin)"
LABEL="rttlens"
LABEL_B=""
if [[ -n $COMPARE ]]; then
    [[ $COMPARE == */* ]] || COMPARE=./$COMPARE
    [[ -x $COMPARE && -f $COMPARE ]] || die "--compare: $COMPARE not found or not executable"
    LABEL_B=${COMPARE##*/}
    if [[ $LABEL_B == "$LABEL" ]]; then # both "rttlens": name its directory too
        dir=${COMPARE%/*}
        LABEL_B="${dir##*/}/$LABEL_B"
    fi
fi
CORES=$(nproc)
mkdir -p "$DATA"

# ---- captures -----------------------------------------------------------------
need_root() { [[ $EUID -eq 0 ]] || die "making $1 needs root (network namespaces): sudo $0"; }
wanted() { [[ -z $ONLY || $ONLY == "$1" ]]; }

# lab_capture FILE ABOUT BENCH-ARGS... : rttlens bench --lab ... --capture, its
# pcapng converted to FILE (pcap); the bench report beside it as NAME-bench.txt
lab_capture() {
    local out=$1 about=$2 log
    shift 2
    log="${out%.pcap}-bench.txt"
    need_root "$out"
    command -v editcap >/dev/null || die "editcap is missing: apt-get install -y wireshark-common"
    "$ROOT/scripts/deps" lab || die "the lab's packages are missing (scripts/deps lab)"
    note "making ${out#"$ROOT"/}: rttlens bench $* --capture ($about)"
    "$BIN" bench "$@" --capture "$out.pcapng" --no-progress -k >"$log" \
        || die "rttlens bench failed: see $log"
    grep -E '^(result|listen) ' "$log" >&2 || true
    editcap -F pcap "$out.pcapng" "$out.partial.pcap" || die "editcap failed on $out.pcapng"
    mv -- "$out.partial.pcap" "$out"
    rm -f -- "$out.pcapng"
}

if wanted bulk && [[ ! -f $BULK ]]; then
    need_root "$BULK"
    note "making $BULK with make-capture.sh"
    "$SCRIPT_DIR/make-capture.sh" "$BULK" --no-tshark || die "make-capture.sh failed"
fi
if wanted conns && [[ ! -f $CONNS ]]; then
    lab_capture "$CONNS" "about 90 s" "${CONNS_ARGS[@]}"
fi
if wanted storm && [[ ! -f $STORM ]]; then
    lab_capture "$STORM" "about 80-90 s" "${STORM_ARGS[@]}"
fi
if wanted wrk && [[ ! -f $WRK ]]; then
    [[ -f $BULK && -f $CONNS ]] || die "the wrk capture is made of $BULK and $CONNS: run once without --only, or with --only bulk and --only conns"
    command -v capinfos >/dev/null && command -v mergecap >/dev/null \
        || die "capinfos/mergecap are missing: apt-get install -y wireshark-common"
    first() { capinfos -a -S -- "$1" | awk -F': *' '/First packet time/ { print $2 }'; }
    shift_s=$(python3 -c "import sys; print(f'{float(sys.argv[1]) + 20 - float(sys.argv[2]):.6f}')" "$(first "$CONNS")" "$(first "$BULK")")
    note "making ${WRK#"$ROOT"/}: the bulk capture shifted by $shift_s s, merged with the connection-heavy one"
    editcap -F pcap -t "$shift_s" "$BULK" "$WRK.bulk.pcap" || die "editcap failed"
    # the connection-heavy capture is raw IP and the bulk one Ethernet: a
    # pcap holds one link type (and tcptrace reads no pcapng), so each raw
    # IP packet gets an Ethernet header (type from its IP version)
    python3 - "$CONNS" "$WRK.conns.pcap" <<'PY' || die "cannot give $CONNS Ethernet headers"
import struct, sys
src, dst = open(sys.argv[1], "rb"), open(sys.argv[2], "wb")
head = src.read(24)
endian = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
if struct.unpack(endian + "I", head[20:24])[0] not in (101, 228, 229, 12):
    sys.exit("not a raw IP pcap")
dst.write(head[:20] + struct.pack(endian + "I", 1))
eth = {4: b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00",
       6: b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x86\xdd"}
while len(rec := src.read(16)) == 16:
    sec, frac, incl, orig = struct.unpack(endian + "IIII", rec)
    data = src.read(incl)
    hdr = eth.get(data[0] >> 4 if data else 4, eth[4])
    dst.write(struct.pack(endian + "IIII", sec, frac, incl + 14, orig + 14) + hdr + data)
PY
    mergecap -F pcap -w "$WRK.partial" "$WRK.conns.pcap" "$WRK.bulk.pcap" || die "mergecap failed"
    mv -- "$WRK.partial" "$WRK"
    rm -f -- "$WRK.bulk.pcap" "$WRK.conns.pcap"
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

# less A B : A < B (B empty: true)
less() { [[ -z $2 ]] || awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# best N CMD... : best wall of N runs (M_WALL), largest RSS (M_RSS).
best() {
    local n=$1 i w="" r=0
    shift
    for ((i = 0; i < n; i++)); do
        measure "$@" || return 1
        if less "$M_WALL" "$w"; then w=$M_WALL; fi
        if ((M_RSS > r)); then r=$M_RSS; fi
    done
    M_WALL=$w M_RSS=$r
}

# best_pair N BIN_A BIN_B ARGS... : BIN_A ARGS and BIN_B ARGS, alternately, N
# runs each; A_WALL/A_RSS and B_WALL/B_RSS as best() (empty wall: it failed)
best_pair() {
    local n=$1 a=$2 b=$3 i wa="" ra=0 wb="" rb=0 fa=0 fb=0
    shift 3
    for ((i = 0; i < n; i++)); do
        if ((!fa)); then
            if measure "$a" "$@"; then
                if less "$M_WALL" "$wa"; then wa=$M_WALL; fi
                if ((M_RSS > ra)); then ra=$M_RSS; fi
            else
                fa=1
            fi
        fi
        if ((!fb)); then
            if measure "$b" "$@"; then
                if less "$M_WALL" "$wb"; then wb=$M_WALL; fi
                if ((M_RSS > rb)); then rb=$M_RSS; fi
            else
                fb=1
            fi
        fi
    done
    if ((fa)); then wa=""; fi
    if ((fb)); then wb=""; fi
    A_WALL=$wa A_RSS=$ra B_WALL=$wb B_RSS=$rb
}

W=30 # the tool column's width: the longest label, the filtered rows'
name=${LABEL_B:-$LABEL}
if ((${#name} + ${#FILTER} + 32 > W)); then W=$((${#name} + ${#FILTER} + 32)); fi

row() { # LABEL WALL RSS_KIB
    awk -v l="$1" -v w="$2" -v r="$3" -v p="$PACKETS" -v mb="$MB" -v c="$CAT" -v t="$TCPTRACE" -v W="$W" 'BEGIN {
        if (w <= 0) w = 0.001
        printf "| %-*s | %7.3f | %7.2f | %7.0f | %6s | %6.1f | %10s |\n", W, l, w, p / w / 1e6, mb / w,
            (r > 0 ? sprintf("%.0f", r / 1024) : "-"), w / c, (t != "" ? sprintf("%.1f", t / w) : "-")
    }'
}

# time_rows LABEL ARGS... : rttlens ARGS timed (best of RUNS), one row; with
# --compare, both binaries alternating, a row each.
time_rows() {
    local label=$1
    shift
    if [[ -z $COMPARE ]]; then
        best "$RUNS" "$BIN" "$@" || return 0
        row "$LABEL $label" "$M_WALL" "$M_RSS"
    else
        best_pair "$RUNS" "$BIN" "$COMPARE" "$@"
        if [[ -n $A_WALL ]]; then row "$LABEL $label" "$A_WALL" "$A_RSS"; fi
        if [[ -n $B_WALL ]]; then row "$LABEL_B $label" "$B_WALL" "$B_RSS"; fi
    fi
}

time_capture() { # NAME FILE
    local name=$1 f=$2 fmt threads dashes tt_rss=0
    [[ -r $f ]] || die "cannot read $f"
    MB=$(awk -v s="$(stat -c %s -- "$f")" 'BEGIN { printf "%.1f", s / 1048576 }')
    # the same page cache every run: the file is dropped from it and read
    # once, so it is cached as read-ahead caches it (in large folios where the
    # file system has them: on ext4/Linux 6.18, reading 522 MB then costs
    # 0.015 s instead of 0.061 s as the small pages tcpdump's writes left)
    dd if="$f" iflag=nocache count=0 status=none 2>/dev/null || note "could not drop $f from the page cache"
    cat -- "$f" >/dev/null
    # the packet and connection counts, from rttlens' own summary
    "$BIN" analyze "$f" --format jsonl --no-progress >"$WORK/out.jsonl"
    local summary
    summary=$(tail -n 1 "$WORK/out.jsonl" | python3 -c '
import json, sys
c = json.load(sys.stdin)["capture"]
f = c.get("findings_by_id", {})
print(c["frames"], c["connections"], c.get("peak_open_connections", "?"),
      f.get("syn-retransmission", 0), f.get("rto", 0))')
    local conns peak synretx rto
    read -r PACKETS conns peak synretx rto <<<"$summary"
    best "$RUNS" cat -- "$f"
    CAT=$M_WALL
    local cat_rss=$M_RSS
    # tcptrace first, one run: every rttlens row says how many times faster it was
    TCPTRACE=""
    if ((PEERS)); then
        if measure tcptrace -ln "$f"; then
            TCPTRACE=$M_WALL tt_rss=$M_RSS
        else
            note "tcptrace failed on $f: no \"× tcptrace\" figures"
        fi
    fi
    printf -v dashes '%*s' "$W" ''
    echo
    echo "### $name: ${f#"$ROOT"/}, $MB MB, $PACKETS packets, $conns connections (peak $peak open; $synretx with SYN retransmissions, $rto with RTOs) ($CORES cores)"
    echo
    printf '| %-*s |  wall s | M pkt/s |    MB/s | RSS MB |  × cat | × tcptrace |\n' "$W" "tool"
    printf '|-%s-|--------:|--------:|--------:|-------:|-------:|-----------:|\n' "${dashes// /-}"
    row "cat (the read limit)" "$CAT" "$cat_rss"
    for threads in 1 "$CORES"; do
        for fmt in text json jsonl; do
            time_rows "$fmt, $threads thread$([[ $threads == 1 ]] || echo s)" \
                analyze "$f" --no-progress --threads "$threads" --format "$fmt"
        done
    done
    # a filter never costs more time or memory than the whole capture
    # (issue 27): the rows to hold against the unfiltered ones above
    for threads in 1 "$CORES"; do
        time_rows "text, $threads thread$([[ $threads == 1 ]] || echo s), --filter '$FILTER'" \
            analyze "$f" --no-progress --threads "$threads" --filter "$FILTER"
    done
    if [[ -n $TCPTRACE ]]; then
        row "tcptrace -ln" "$TCPTRACE" "$tt_rss"
    fi
    if ((PEERS)); then
        if command -v tshark >/dev/null; then
            measure tshark -r "$f" -o tcp.desegment_tcp_streams:FALSE -q -z conv,tcp \
                && row "tshark -z conv,tcp (no reasm.)" "$M_WALL" "$M_RSS"
        else
            note "tshark is missing (apt-get install -y tshark): row skipped"
        fi
    fi
}

if [[ -n $COMPARE ]]; then
    note "rttlens: $BIN; compared with $COMPARE (rows $LABEL_B …), runs alternating"
    ALT=" (the two binaries' runs alternating)"
else
    note "rttlens: $BIN"
    ALT=""
fi
echo "machine: $CORES cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo "unknown CPU"), load average $(cut -d ' ' -f 1-3 /proc/loadavg) at the start, $(date -u '+%Y-%m-%d %H:%M UTC')"
wanted conns && time_capture "connection-heavy" "$CONNS"
wanted storm && time_capture "storm" "$STORM"
wanted wrk && time_capture "wrk-style" "$WRK"
wanted bulk && time_capture "bulk" "$BULK"
echo
if ((PEERS)); then PEERS_NOTE="one run for tcptrace and tshark"; else PEERS_NOTE="tcptrace and tshark skipped (--no-peers)"; fi
echo "wall: best of $RUNS for cat and rttlens$ALT, $PEERS_NOTE; MB = MiB; page cache warm (dropped, then read once with cat)"
echo "× cat = wall / cat's wall (times slower than reading the file); × tcptrace = tcptrace's wall / wall (times faster than tcptrace -ln)"

# ---- memory per open connection ----------------------------------------------
mem_caps=()
wanted conns && mem_caps+=("$CONNS")
wanted storm && mem_caps+=("$STORM")
wanted wrk && mem_caps+=("$WRK")
wanted bulk && mem_caps+=("$BULK")
if [[ -x $MEMBIN ]]; then
    echo
    echo "### heap per open connection (conn_memory: this checkout's engine, 1 thread, requested bytes)"
    echo
    "$MEMBIN" "${mem_caps[@]}" | sed "s#$ROOT/##" || note "conn_memory failed"
else
    note "no $MEMBIN (cargo build --release -p rttlens-core --example conn_memory): heap per open connection skipped"
fi

# ---- copies of a capture: memory stays flat -----------------------------------

# shifted_copies SRC OUT COPIES GAP : OUT made of COPIES copies of SRC, each
# shifted GAP seconds past the previous one's end, so the result is one
# capture in time order, of the same connections again and again. A copy
# repeats its 4-tuples and ISNs: within the engine's idle timeout
# (flow::IDLE_TIMEOUT, 300 s) of the previous copy's, a connection of SYNs
# that were never answered is still open, and the copy's SYNs are taken,
# rightly, for that connection's SYNs sent again (it then grows, and the
# capture has fewer connections than COPIES times the source's). A GAP past
# the idle timeout makes every copy's connections new, as a long capture's
# connections are (fresh ISNs).
shifted_copies() {
    local src=$1 out=$2 copies=$3 gap=$4 span i parts=()
    if ! command -v editcap >/dev/null || ! command -v mergecap >/dev/null; then
        die "editcap/mergecap are missing: apt-get install -y wireshark-common"
    fi
    span=$("$BIN" analyze "$src" --format jsonl --no-progress | tail -n 1 \
        | python3 -c 'import json, sys; print(int(json.load(sys.stdin)["capture"]["duration_s"]) + int(sys.argv[1]))' "$gap")
    note "making ${out#"$ROOT"/}: $copies time-shifted copies of ${src#"$ROOT"/} (every ${span} s)"
    for ((i = 0; i < copies; i++)); do
        editcap -t $((i * span)) "$src" "$WORK/part-$i.pcap"
        parts+=("$WORK/part-$i.pcap")
    done
    mergecap -a -F pcap -w "$out.partial" "${parts[@]}"
    rm -f -- "${parts[@]}"
    mv -- "$out.partial" "$out"
}

# flat_run FILE ARGS... : rttlens analyze FILE ARGS, its RSS sampled every
# 0.2 s; prints the RSS at 10 %, 25 %, 50 %, 75 % and 90 % of the run's wall
# time, the peak, and the wall time. (By time, not by bytes read: a mapped
# file is read without read(2), so /proc/PID/io's rchar does not move.)
# Sets F_WALL (s) and F_OUT (the output file).
flat_run() {
    local f=$1 t0 t1 pid rss peak=0 now
    shift
    F_OUT="$WORK/flat.out"
    local samples="$WORK/flat.rss"
    : >"$samples"
    t0=$(date +%s%N)
    "$BIN" analyze "$f" "$@" --no-progress >"$F_OUT" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
        [[ -n $rss ]] || rss=0
        now=$(date +%s%N)
        echo "$(((now - t0) / 1000000)) $rss" >>"$samples"
        ((rss > peak)) && peak=$rss
        sleep 0.2
    done
    wait "$pid" || die "rttlens analyze $f failed"
    t1=$(date +%s%N)
    F_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    echo "| share of the run | RSS MB |"
    echo "|-----------------:|-------:|"
    awk -v wall_ms="$(((t1 - t0) / 1000000))" '
        { t[NR] = $1; r[NR] = $2 }
        END {
            split("10 25 50 75 90", q, " ")
            for (k = 1; k <= 5; k++) {
                want = wall_ms * q[k] / 100; best = 1
                for (i = 1; i <= NR; i++) if (t[i] <= want) best = i
                printf "| %15d %% | %6.1f |\n", q[k], r[best] / 1024
            }
        }' "$samples"
    printf '| %16s | %6.1f |\n' "peak" "$(awk -v r="$peak" 'BEGIN { print r / 1024 }')"
}

# ---- 10 GB of the bulk capture ---------------------------------------------------
if ((BIG_GB > 0)); then
    [[ -f $BULK ]] || die "$BULK is missing (run without --only, or with --only bulk, first)"
    want=$((BIG_GB * 1000 * 1000 * 1000))
    if [[ ! -f $BIG ]] || (($(stat -c %s -- "$BIG") < want)); then
        size=$(stat -c %s -- "$BULK")
        shifted_copies "$BULK" "$BIG" $(((want + size - 1) / size)) 10
    fi
    BIGSIZE=$(stat -c %s -- "$BIG")
    echo
    echo "### ${BIG#"$ROOT"/}: $(awk -v s="$BIGSIZE" 'BEGIN { printf "%.1f", s / 1e9 }') GB, rttlens analyze --format jsonl (all threads)"
    echo
    flat_run "$BIG" --format jsonl
    echo
    awk -v w="$F_WALL" -v s="$BIGSIZE" 'BEGIN { printf "%.1f s, %.0f MB/s\n", w, s / 1048576 / w }'
fi

# ---- the storm, SCALE times: 10 M packets, 1 M connections ---------------------
if ((SCALE > 0)); then
    [[ -f $STORM ]] || die "$STORM is missing (run without --only, or with --only storm, first)"
    SCALED="$DATA/storm-x$SCALE.pcap"
    # 310 s apart: past the idle timeout, so the copies are 1 M connections
    # (SCALE times the storm's), not the storm's SYNs sent again
    [[ -f $SCALED ]] || shifted_copies "$STORM" "$SCALED" "$SCALE" 310
    # the storm itself, the same way, for its packets/s
    echo
    echo "### the storm and ${SCALED#"$ROOT"/} ($SCALE time-shifted copies), rttlens analyze --threads 2 (text)"
    echo
    rates=()
    counts=()
    for f in "$STORM" "$SCALED"; do
        echo "${f#"$ROOT"/}:"
        echo
        flat_run "$f" --threads 2
        head -n 1 "$F_OUT" >"$WORK/head"
        pkts=$(sed -E 's/.* ([0-9]+) frames.*/\1/' "$WORK/head")
        conns=$(sed -E 's/.* ([0-9]+) connections.*/\1/' "$WORK/head")
        rate=$(awk -v p="$pkts" -v w="$F_WALL" 'BEGIN { printf "%.0f", p / w }')
        rates+=("$rate")
        counts+=("$conns")
        echo
        echo "$pkts packets, $conns connections, $F_WALL s: $rate packets/s"
        echo
    done
    awk -v a="${rates[0]}" -v b="${rates[1]}" 'BEGIN { printf "packets/s of the copies against the storm: %+.1f %%\n", (b / a - 1) * 100 }'
    # fewer would mean copies taken for the storm's own SYNs sent again
    echo "connections of the copies: ${counts[1]} ($SCALE × the storm's: $((SCALE * counts[0])))"
fi
