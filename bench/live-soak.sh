#!/usr/bin/env bash
# live-soak.sh: `rttlens serve --interface` under continuous traffic for N
# minutes; its RSS and live counters sampled every 30 s (issue 26).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: sudo bench/live-soak.sh [--bin PATH] [--minutes N] [--out FILE.csv]
                               [--rate N] [--port N] [--interval S]

Runs `rttlens serve --interface` on one end of a veth pair between two
network namespaces (soak-srv-PID, soak-cli-PID) while the client namespace
makes short HTTP connections to a small server in the other one, for
--minutes. Every --interval seconds it records the serve process's RSS
(VmRSS) and, from /metrics, rttlens_live_connections_total,
rttlens_live_open_connections, rttlens_live_kernel_drops_total and
rttlens_live_kernel_packets_total. At the end: a table, the CSV (--out),
and the RSS at the first sample after one minute, at the end, and its max
after the first minute.

  --bin PATH      rttlens binary (default target/release/rttlens; nothing is built)
  --minutes N     duration of the traffic (default 30)
  --out FILE      CSV of the samples (default /tmp/live-soak.csv)
  --rate N        new connections per second (default 30; one of them per
                  second makes 3 keep-alive requests)
  --port N        serve's --listen port inside the client namespace (default 9115)
  --interval S    seconds between samples (default 30)

Needs root (namespaces, AF_PACKET), iproute2, curl, python3.
Namespaces and processes are removed on exit and on Ctrl-C.
EOF
}

BIN=target/release/rttlens
MINUTES=30
OUT=/tmp/live-soak.csv
RATE=30
PORT=9115
INTERVAL=30

die() { echo "live-soak.sh: $*" >&2; exit 2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

while (($#)); do
    case $1 in
        --bin) BIN=${2:?--bin needs a path}; shift 2 ;;
        --minutes) MINUTES=${2:?--minutes needs a number}; shift 2 ;;
        --out) OUT=${2:?--out needs a file}; shift 2 ;;
        --rate) RATE=${2:?--rate needs a number}; shift 2 ;;
        --port) PORT=${2:?--port needs a number}; shift 2 ;;
        --interval) INTERVAL=${2:?--interval needs a number}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

if ! is_uint "$MINUTES" || ! ((MINUTES > 0 && MINUTES <= 1440)); then die "--minutes: 1..1440, not '$MINUTES'"; fi
if ! is_uint "$RATE" || ! ((RATE > 0 && RATE <= 200)); then die "--rate: 1..200, not '$RATE'"; fi
if ! is_uint "$PORT" || ! ((PORT > 0 && PORT < 65536)); then die "--port: 1..65535, not '$PORT'"; fi
if ! is_uint "$INTERVAL" || ! ((INTERVAL > 0)); then die "--interval: a positive number of seconds, not '$INTERVAL'"; fi

if [[ $(id -u) -ne 0 ]]; then
    die "needs root (it creates network namespaces and captures packets): sudo $0 $*"
fi
for c in ip curl python3 awk; do
    command -v "$c" >/dev/null || die "missing command: $c (apt-get install -y iproute2 curl python3 mawk)"
done
[[ -x $BIN ]] || die "no executable rttlens at '$BIN' (--bin PATH; this script builds nothing)"
BIN=$(readlink -f "$BIN")

NS_SRV=soak-srv-$$
NS_CLI=soak-cli-$$
IF_SRV=soaks$$
IF_CLI=soakc$$
IF_SRV=${IF_SRV:0:15}
IF_CLI=${IF_CLI:0:15}
SRV_ADDR=10.79.0.1
CLI_ADDR=10.79.0.2
HTTP_PORT=8080
DURATION=$((MINUTES * 60))

WORK=$(mktemp -d /tmp/live-soak.XXXXXX)
SERVE_PID=
HTTPD_PID=
LOAD_PID=

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for pid in "$LOAD_PID" "$SERVE_PID" "$HTTPD_PID"; do
        if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; fi
    done
    for pid in "$LOAD_PID" "$SERVE_PID" "$HTTPD_PID"; do
        if [[ -n $pid ]]; then wait "$pid" 2>/dev/null || true; fi
    done
    # Anything else still inside our namespaces was started by us (curls).
    for ns in "$NS_CLI" "$NS_SRV"; do
        if ip netns list | grep -qw "$ns"; then
            local -a pids
            mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null || true)
            if ((${#pids[@]})); then kill "${pids[@]}" 2>/dev/null || true; fi
            ip netns del "$ns" 2>/dev/null || true
        fi
    done
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "live-soak.sh: interrupted" >&2; exit 130' INT TERM

# --- namespaces and the veth pair -------------------------------------------
ip netns add "$NS_SRV"
ip netns add "$NS_CLI"
ip link add "$IF_SRV" type veth peer name "$IF_CLI"
ip link set "$IF_SRV" netns "$NS_SRV"
ip link set "$IF_CLI" netns "$NS_CLI"
ip -n "$NS_SRV" addr add "$SRV_ADDR/24" dev "$IF_SRV"
ip -n "$NS_CLI" addr add "$CLI_ADDR/24" dev "$IF_CLI"
for ns in "$NS_SRV" "$NS_CLI"; do ip -n "$ns" link set lo up; done
ip -n "$NS_SRV" link set "$IF_SRV" up
ip -n "$NS_CLI" link set "$IF_CLI" up

# --- the HTTP server (HTTP/1.1, so keep-alive works) -----------------------
head -c 16384 /dev/zero | tr '\0' 'x' >"$WORK/16k"
echo small >"$WORK/small"
cat >"$WORK/httpd.py" <<'EOF'
import functools, http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
h = functools.partial(H, directory=sys.argv[3])
http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), h).serve_forever()
EOF
ip netns exec "$NS_SRV" python3 "$WORK/httpd.py" "$SRV_ADDR" "$HTTP_PORT" "$WORK" \
    >"$WORK/httpd.log" 2>&1 &
HTTPD_PID=$!

# --- rttlens serve --interface, in the client namespace --------------------
ip netns exec "$NS_CLI" "$BIN" serve --interface "$IF_CLI" --listen "127.0.0.1:$PORT" \
    >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVE_PID=$!   # ip netns exec execs the binary: this is rttlens itself

scrape() {
    ip netns exec "$NS_CLI" curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics"
}

ready=0
for _ in $(seq 1 50); do
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.err" >&2; die "rttlens serve exited"; }
    if scrape >/dev/null 2>&1 \
        && ip netns exec "$NS_CLI" curl -s -o /dev/null --max-time 2 "http://$SRV_ADDR:$HTTP_PORT/small"; then
        ready=1; break
    fi
    sleep 0.2
done
((ready)) || { cat "$WORK/serve.err" "$WORK/httpd.log" >&2; die "serve or the HTTP server did not answer within 10 s"; }
[[ $(readlink "/proc/$SERVE_PID/exe") == "$BIN" ]] || die "pid $SERVE_PID is not $BIN"

# --- the load: RATE connections a second, for DURATION seconds -------------
load() {
    local base="http://$SRV_ADDR:$HTTP_PORT" end=$((SECONDS + DURATION)) i s
    for ((s = 0; s < DURATION && SECONDS < end; s++)); do
        local t0=$EPOCHREALTIME
        # one keep-alive connection with three requests
        curl -s -o /dev/null -o /dev/null -o /dev/null --max-time 3 \
            "$base/small" "$base/16k" "$base/small" &
        for ((i = 1; i < RATE; i++)); do
            if ((i % 2)); then
                curl -s -o /dev/null --max-time 3 "$base/small" &
            else
                curl -s -o /dev/null --max-time 3 "$base/16k" &
            fi
        done
        wait
        # sleep the rest of the second
        local left
        left=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { d = 1 - (b - a); if (d > 0) printf "%.3f", d; else print 0 }')
        sleep "$left"
    done
}
ip netns exec "$NS_CLI" bash -c "$(declare -f load); SRV_ADDR=$SRV_ADDR HTTP_PORT=$HTTP_PORT DURATION=$DURATION RATE=$RATE load" \
    >/dev/null 2>&1 &
LOAD_PID=$!

# --- sampling ----------------------------------------------------------------
# metric NAME: the sum of the samples of NAME (any labels) in $WORK/metrics
metric() {
    awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF; f = 1 } END { if (f) printf "%.0f", s; else print "NA" }' \
        "$WORK/metrics"
}

echo "elapsed_s,rss_kib,connections_total,open_connections,kernel_drops_total,kernel_packets_total" >"$OUT"
START=$SECONDS
NSAMPLES=$((DURATION / INTERVAL + 1))
echo "live-soak: $MINUTES min, $RATE connections/s, serve pid $SERVE_PID on $IF_CLI in $NS_CLI; samples every $INTERVAL s -> $OUT" >&2
for ((k = 0; k < NSAMPLES; k++)); do
    target=$((START + k * INTERVAL))
    while ((SECONDS < target)); do sleep 1; done
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$WORK/serve.err" >&2; die "rttlens serve died at ${k}th sample"; }
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$SERVE_PID/status")
    if scrape >"$WORK/metrics" 2>/dev/null; then
        line="$((SECONDS - START)),$rss,$(metric rttlens_live_connections_total),$(metric rttlens_live_open_connections),$(metric rttlens_live_kernel_drops_total),$(metric rttlens_live_kernel_packets_total)"
    else
        line="$((SECONDS - START)),$rss,NA,NA,NA,NA"
    fi
    echo "$line" >>"$OUT"
    echo "  $line" >&2
done

kill "$LOAD_PID" 2>/dev/null || true
wait "$LOAD_PID" 2>/dev/null || true
LOAD_PID=

# --- report ------------------------------------------------------------------
echo
awk -F, 'NR == 1 { printf "%9s %10s %12s %6s %6s %12s\n", "elapsed_s", "rss_MiB", "connections", "open", "drops", "packets"; next }
         { printf "%9s %10.1f %12s %6s %6s %12s\n", $1, $2 / 1024, $3, $4, $5, $6 }' "$OUT"
echo
awk -F, 'NR > 1 && $1 >= 60 {
             if (!n++) { f = $2; ft = $1 }
             l = $2; lt = $1
             if ($2 > m) { m = $2; mt = $1 }
             if ($4 != "NA") { if (omin == "" || $4 < omin) omin = $4; if ($4 > omax) omax = $4 }
         }
         NR > 1 { c = $3; d = $5 }
         END {
             if (!n) { print "no sample after the first minute"; exit }
             printf "RSS after the first minute: first %.1f MiB (t=%ss), last %.1f MiB (t=%ss), max %.1f MiB (t=%ss)\n", f / 1024, ft, l / 1024, lt, m / 1024, mt
             printf "connections analysed: %s; open connections (t>=60s): %s..%s; kernel drops: %s\n", c, omin, omax, d
         }' "$OUT"
