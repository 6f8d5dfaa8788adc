#!/usr/bin/env bash
# make-capture.sh - generate a large packet capture of real TCP/TLS/HTTP traffic
# for benchmarking rttlens.
#
# Two private network namespaces joined by a veth pair (MTU 1500, offloads
# off, so segments are wire-sized), nginx in one, curl clients in the other,
# tcpdump on the client-side veth. Nothing touches the host's network.
# See bench/README.md for details.
set -euo pipefail

PATH="$PATH:/usr/sbin:/sbin"
export LC_ALL=C

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
PROG=${0##*/}

# ---- defaults ---------------------------------------------------------------
OUT="$SCRIPT_DIR/data/bench.pcap"
SIZE_MB=520          # target capture size, MiB (2^20 bytes)
HTTPS_CONNS=5000     # short HTTPS connections
PARALLEL=8           # concurrent curl clients for the HTTPS workload
BIG_MB=""            # size of the bulk file; default derived from SIZE_MB
TRAFFIC_TIMEOUT=300  # hard limit (s) on the whole traffic phase
BULK_RATE_MB=30      # client-side rate limit (MiB/s) of the first bulk download
BUFFER_MB=256        # tcpdump kernel buffer (-B), MiB
MAX_TOPUPS=100       # bound on the number of top-up bulk downloads
SEED=1               # seed for the (bash $RANDOM) traffic mix
INSTALL=0
TSHARK_STATS=1

# Addresses (private ranges; they only exist inside the namespaces).
CLI4=10.77.0.1 SRV4=10.77.0.2
CLI6=fd00:77::1 SRV6=fd00:77::2
NSC="rttlens-bench-c-$$"
NSS="rttlens-bench-s-$$"
VETH_C=veth-c VETH_S=veth-s   # names are per-namespace, so no clash possible

usage() {
    cat <<EOF
Usage: $PROG [OUT.pcap] [options]

Create a capture (default $OUT) of real HTTP bulk + short HTTPS
traffic, generated inside private network namespaces. Must run as root.

Options:
  --size-mb N     target capture size in MiB (default $SIZE_MB)
  --https N       number of short HTTPS connections (default $HTTPS_CONNS)
  --parallel N    concurrent HTTPS clients (default $PARALLEL)
  --big-mb N      size of the file served for bulk downloads
                  (default: 40% of --size-mb, clamped to 8..256)
  --bulk-rate N   rate limit of the bulk downloads in MiB/s (default $BULK_RATE_MB;
                  the IPv6 one gets half, top-ups double)
  --buffer-mb N   tcpdump's kernel capture buffer in MiB (default $BUFFER_MB)
  --timeout S     hard time limit of the traffic phase in seconds (default $TRAFFIC_TIMEOUT)
  --seed N        seed for the traffic mix (default $SEED)
  --no-tshark     skip the (slow) tshark conversation count in the summary
  --install       apt-get install missing required packages
  -h, --help      show this help
EOF
}

die()  { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }
warn() { printf '%s: warning: %s\n' "$PROG" "$*" >&2; }
log()  { printf '[%6.1fs] %s\n' "$(elapsed)" "$*"; }

T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# ---- arguments --------------------------------------------------------------
OUT_SET=0
while (($#)); do
    case $1 in
        --size-mb)  [[ $# -ge 2 ]] || die "$1 needs a value"; SIZE_MB=$2; shift 2 ;;
        --https)    [[ $# -ge 2 ]] || die "$1 needs a value"; HTTPS_CONNS=$2; shift 2 ;;
        --parallel) [[ $# -ge 2 ]] || die "$1 needs a value"; PARALLEL=$2; shift 2 ;;
        --big-mb)   [[ $# -ge 2 ]] || die "$1 needs a value"; BIG_MB=$2; shift 2 ;;
        --bulk-rate) [[ $# -ge 2 ]] || die "$1 needs a value"; BULK_RATE_MB=$2; shift 2 ;;
        --bulk-rate=*) BULK_RATE_MB=${1#*=}; shift ;;
        --buffer-mb) [[ $# -ge 2 ]] || die "$1 needs a value"; BUFFER_MB=$2; shift 2 ;;
        --buffer-mb=*) BUFFER_MB=${1#*=}; shift ;;
        --timeout)  [[ $# -ge 2 ]] || die "$1 needs a value"; TRAFFIC_TIMEOUT=$2; shift 2 ;;
        --seed)     [[ $# -ge 2 ]] || die "$1 needs a value"; SEED=$2; shift 2 ;;
        --size-mb=*)  SIZE_MB=${1#*=}; shift ;;
        --https=*)    HTTPS_CONNS=${1#*=}; shift ;;
        --parallel=*) PARALLEL=${1#*=}; shift ;;
        --big-mb=*)   BIG_MB=${1#*=}; shift ;;
        --timeout=*)  TRAFFIC_TIMEOUT=${1#*=}; shift ;;
        --seed=*)     SEED=${1#*=}; shift ;;
        --no-tshark) TSHARK_STATS=0; shift ;;
        --install)   INSTALL=1; shift ;;
        -h|--help)   usage; exit 0 ;;
        -*)          usage >&2; die "unknown option: $1" ;;
        *)
            ((OUT_SET == 0)) || die "more than one output file given: $OUT and $1"
            OUT=$1; OUT_SET=1; shift ;;
    esac
done

for v in SIZE_MB:--size-mb HTTPS_CONNS:--https PARALLEL:--parallel TRAFFIC_TIMEOUT:--timeout \
    SEED:--seed BULK_RATE_MB:--bulk-rate BUFFER_MB:--buffer-mb; do
    var=${v%%:*}
    is_uint "${!var}" || die "${v#*:} must be a non-negative integer, got '${!var}'"
done
((SIZE_MB >= 1)) || die "--size-mb must be >= 1"
((PARALLEL >= 1 && PARALLEL <= 64)) || die "--parallel must be in 1..64"
((TRAFFIC_TIMEOUT >= 10)) || die "--timeout must be >= 10 seconds"
((BULK_RATE_MB >= 2)) || die "--bulk-rate must be >= 2"
((BUFFER_MB >= 2)) || die "--buffer-mb must be >= 2"
BULK_RATE="${BULK_RATE_MB}M"
if [[ -z $BIG_MB ]]; then
    BIG_MB=$((SIZE_MB * 2 / 5))
    ((BIG_MB < 8)) && BIG_MB=8
    ((BIG_MB > 256)) && BIG_MB=256
fi
if ! is_uint "$BIG_MB" || ((BIG_MB < 1)); then die "--big-mb must be a positive integer"; fi

# ---- requirements -----------------------------------------------------------
# command -> Debian package
declare -A PKG_OF=(
    [ip]=iproute2 [ethtool]=ethtool [tcpdump]=tcpdump [nginx]=nginx-light
    [openssl]=openssl [curl]=curl
    [timeout]=coreutils [stat]=coreutils [shuf]=coreutils [xargs]=findutils
    [awk]=mawk
)
check_tools() {
    local cmd missing=() pkgs=()
    for cmd in "${!PKG_OF[@]}"; do
        command -v "$cmd" >/dev/null 2>&1 || { missing+=("$cmd"); pkgs+=("${PKG_OF[$cmd]}"); }
    done
    ((${#missing[@]} == 0)) && return 0
    # de-duplicate package names
    mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
    if ((INSTALL)); then
        echo "Installing missing packages: ${pkgs[*]}"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${pkgs[@]}"
        for cmd in "${missing[@]}"; do
            command -v "$cmd" >/dev/null 2>&1 || die "'$cmd' still missing after installing ${PKG_OF[$cmd]}"
        done
    else
        printf '%s: missing required command(s): %s\n' "$PROG" "${missing[*]}" >&2
        printf 'Install them with:\n    apt-get install -y %s\n' "${pkgs[*]}" >&2
        printf 'or re-run with --install.\n' >&2
        exit 1
    fi
}

[[ $EUID -eq 0 ]] || die "must run as root (creates network namespaces and captures packets); try: sudo $0 $*"
check_tools
if ! command -v capinfos >/dev/null 2>&1; then
    echo "note: capinfos not found (apt-get install -y wireshark-common); packets will be counted with tcpdump"
fi
if ((TSHARK_STATS)) && ! command -v tshark >/dev/null 2>&1; then
    echo "note: tshark not found (apt-get install -y tshark); skipping the tshark conversation count"
    TSHARK_STATS=0
fi

# ---- output paths -----------------------------------------------------------
OUT=$(realpath -m -- "$OUT")
OUT_DIR=$(dirname -- "$OUT")
mkdir -p -- "$OUT_DIR"
[[ $OUT == *.pcap ]] || warn "output does not end in .pcap; tcpdump's AppArmor profile (if enforced) may refuse to write it"
# Write to a temporary name ending in .pcap (AppArmor-friendly), rename at the end,
# so a failed or interrupted run never leaves a truncated file under the final name.
PARTIAL="${OUT%.pcap}.partial-$$.pcap"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rttlens-bench.XXXXXX")
chmod 755 "$WORK"   # nginx workers run as 'nobody' and must reach www/

need_mb=$((SIZE_MB + SIZE_MB / 4 + 64))
free_mb=$(df -Pm -- "$OUT_DIR" | awk 'NR == 2 { print $4 }')
((free_mb >= need_mb)) || die "not enough free space in $OUT_DIR: ${free_mb} MiB free, need ~${need_mb} MiB"
free_mb=$(df -Pm -- "$WORK" | awk 'NR == 2 { print $4 }')
((free_mb >= BIG_MB + 16)) || die "not enough free space in $WORK for the ${BIG_MB} MiB bulk file"

# ---- cleanup ----------------------------------------------------------------
TCPDUMP_PID="" NGINX_PID="" SUCCESS=0 NS_CREATED=()

# Wait up to $2 tenths of a second for pid $1 to exit.
wait_gone() {
    local pid=$1 n=$2
    while ((n-- > 0)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}

# Kill every process still living in namespace $1 (all of them were started
# by this script: the namespace is private to this run).
kill_ns_procs() {
    local ns=$1 sig=$2 pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n $pids ]] || return 0
    # shellcheck disable=SC2086  # word splitting of the pid list is intended
    kill "-$sig" $pids 2>/dev/null || true
}

stop_tcpdump() {
    [[ -n $TCPDUMP_PID ]] || return 0
    if kill -0 "$TCPDUMP_PID" 2>/dev/null; then
        kill -INT "$TCPDUMP_PID" 2>/dev/null || true
        if ! wait_gone "$TCPDUMP_PID" 100; then
            warn "tcpdump did not stop on SIGINT; sending SIGTERM"
            kill -TERM "$TCPDUMP_PID" 2>/dev/null || true
            wait_gone "$TCPDUMP_PID" 50 || kill -KILL "$TCPDUMP_PID" 2>/dev/null || true
        fi
    fi
    wait "$TCPDUMP_PID" 2>/dev/null || true
    TCPDUMP_PID=""
}

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    # 1. traffic generators (everything in the client namespace except tcpdump)
    local pid
    if [[ " ${NS_CREATED[*]} " == *" $NSC "* ]]; then
        for pid in $(ip netns pids "$NSC" 2>/dev/null); do
            [[ $pid == "$TCPDUMP_PID" ]] || kill -TERM "$pid" 2>/dev/null
        done
    fi
    # 2. tcpdump, cleanly, so the file is complete
    stop_tcpdump
    # 3. nginx
    if [[ -n $NGINX_PID ]]; then
        kill -TERM "$NGINX_PID" 2>/dev/null
        wait_gone "$NGINX_PID" 50 || kill -KILL "$NGINX_PID" 2>/dev/null
        wait "$NGINX_PID" 2>/dev/null
    fi
    # 4. leftovers, then the namespaces (this also removes the veth pair)
    local ns
    for ns in "${NS_CREATED[@]}"; do
        kill_ns_procs "$ns" KILL
    done
    sleep 0.2
    for ns in "${NS_CREATED[@]}"; do
        ip netns del "$ns" 2>/dev/null || warn "could not delete namespace $ns"
    done
    wait 2>/dev/null
    rm -rf -- "$WORK"
    if ((!SUCCESS)); then
        rm -f -- "$PARTIAL"
        ((rc != 0)) || rc=1
        echo "$PROG: failed or interrupted; cleaned up (no capture written)" >&2
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

in_c() { ip netns exec "$NSC" "$@"; }
in_s() { ip netns exec "$NSS" "$@"; }

# ---- network ----------------------------------------------------------------
log "creating namespaces $NSC / $NSS"
ip netns add "$NSC" || die "cannot create network namespace (root? kernel support?)"
NS_CREATED+=("$NSC")
ip netns add "$NSS" || die "cannot create network namespace $NSS"
NS_CREATED+=("$NSS")

ip -n "$NSC" link add "$VETH_C" type veth peer name "$VETH_S" netns "$NSS" \
    || die "cannot create veth pair (is the veth kernel module available?)"
setup_side() { # setup_side NS DEV IPV4 IPV6
    local ns=$1 dev=$2 a4=$3 a6=$4
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$dev" mtu 1500
    ip -n "$ns" addr add "$a4/24" dev "$dev"
    ip -n "$ns" addr add "$a6/64" dev "$dev" nodad
    # Wire-sized segments: no TSO/GSO/GRO. Checksum offload off too, so the
    # captured checksums are valid (as on a real wire / tap).
    ip netns exec "$ns" ethtool -K "$dev" tso off gso off gro off tx off >/dev/null \
        || die "ethtool -K $dev failed"
    ip -n "$ns" link set "$dev" up
}
setup_side "$NSC" "$VETH_C" "$CLI4" "$CLI6"
setup_side "$NSS" "$VETH_S" "$SRV4" "$SRV6"

# ---- server content, certificate, nginx ------------------------------------
log "generating content (${BIG_MB} MiB bulk file) and a self-signed P-256 certificate"
mkdir -p "$WORK/www" "$WORK/nginx"
head -c "$((BIG_MB * 1048576))" /dev/urandom >"$WORK/www/big.bin"
head -c 49152 /dev/urandom >"$WORK/www/medium.bin"
head -c 2048 /dev/urandom >"$WORK/www/small.bin"
chmod 755 "$WORK/www"
chmod 644 "$WORK/www/"*
BIG_BYTES=$((BIG_MB * 1048576))

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 7 \
    -subj "/CN=rttlens-bench.test" \
    -addext "subjectAltName=DNS:rttlens-bench.test,IP:$SRV4,IP:$SRV6" \
    >"$WORK/openssl.log" 2>&1 || { cat "$WORK/openssl.log" >&2; die "openssl req failed"; }

cat >"$WORK/nginx.conf" <<EOF
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log $WORK/nginx/access.log;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 30s;
    keepalive_requests 1000;

    server {
        listen $SRV4:80;
        listen [$SRV6]:80;
        root $WORK/www;
    }
    server {
        listen $SRV4:443 ssl;
        listen [$SRV6]:443 ssl;
        root $WORK/www;
        ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_tickets on;
        ssl_session_cache shared:SSL:1m;
        ssl_session_timeout 10m;
    }
}
EOF

in_s nginx -t -q -p "$WORK/nginx" -c "$WORK/nginx.conf" 2>"$WORK/nginx-t.log" \
    || { cat "$WORK/nginx-t.log" >&2; die "nginx rejected the generated configuration"; }
log "starting nginx in $NSS"
ip netns exec "$NSS" nginx -p "$WORK/nginx" -c "$WORK/nginx.conf" -g 'daemon off;' \
    >"$WORK/nginx/stdout.log" 2>&1 &
NGINX_PID=$!

# Wait until both listeners answer (before the capture starts).
ready=0
for _ in $(seq 1 50); do
    if in_c curl -s -o /dev/null --max-time 2 "http://$SRV4/small.bin" &&
        in_c curl -s -k -o /dev/null --max-time 2 "https://$SRV4/small.bin"; then
        ready=1; break
    fi
    kill -0 "$NGINX_PID" 2>/dev/null || break
    sleep 0.1
done
((ready)) || { cat "$WORK/nginx/stdout.log" "$WORK/nginx/error.log" >&2 2>/dev/null; die "nginx did not come up"; }

# ---- capture ----------------------------------------------------------------
log "starting tcpdump on $VETH_C -> $PARTIAL"
# -Z root: don't drop privileges, the output directory may not be writable by
# the tcpdump user. -B: kernel buffer, large, and nice -10 so that tcpdump
# keeps up when the machine is busy (a 64 MiB buffer at nice 0 dropped 12 % of
# the packets while other work was running on the 2-core VM). No
# --immediate-mode (fewer wake-ups).
ip netns exec "$NSC" nice -n -10 tcpdump -i "$VETH_C" -s 0 -B "$((BUFFER_MB * 1024))" -Z root \
    -w "$PARTIAL" 2>"$WORK/tcpdump.log" &
TCPDUMP_PID=$!
for _ in $(seq 1 100); do
    grep -q 'listening on' "$WORK/tcpdump.log" 2>/dev/null && break
    kill -0 "$TCPDUMP_PID" 2>/dev/null || { cat "$WORK/tcpdump.log" >&2; die "tcpdump failed to start"; }
    sleep 0.1
done
grep -q 'listening on' "$WORK/tcpdump.log" || die "tcpdump did not start listening"

# ---- traffic ----------------------------------------------------------------
DEADLINE=$((SECONDS + TRAFFIC_TIMEOUT))
remaining() {
    local r=$((DEADLINE - SECONDS))
    ((r > 1)) || r=1
    echo "$r"
}
cap_bytes() { stat -c %s -- "$PARTIAL" 2>/dev/null || echo 0; }

# Job list for the short-connection workload, one curl invocation per line
# (xargs syntax). Each invocation fetches 1-3 URLs, each on a new connection
# (Connection: close); the first one does a full handshake, the following ones
# resume the TLS session (ticket / PSK), as a browser would.
RANDOM=$SEED
CURL_COMMON='-k -s -S -g --connect-timeout 5 --max-time 60 -w "%{http_code}\n"'
gen_jobs() {
    local i=0 batch k host ver path line ka
    while ((i < HTTPS_CONNS)); do
        batch=$((RANDOM % 3 + 1))
        ((batch <= HTTPS_CONNS - i)) || batch=$((HTTPS_CONNS - i))
        if ((RANDOM % 10 < 3)); then ver='--tlsv1.2 --tls-max 1.2'; else ver='--tlsv1.3'; fi
        if ((RANDOM % 5 == 0)); then host="[$SRV6]"; else host=$SRV4; fi
        line="$CURL_COMMON $ver -H \"Connection: close\""
        for ((k = 0; k < batch; k++)); do
            if ((RANDOM % 10 == 0)); then path=medium.bin; else path=small.bin; fi
            line+=" -o /dev/null https://$host/$path?c=$((i + k))"
        done
        printf '%s\n' "$line"
        i=$((i + batch))
    done
    # A few long-lived HTTP/1.1 keep-alive connections, several requests each
    # (some 404s), over plain HTTP and HTTPS.
    ka=$((HTTPS_CONNS / 100))
    ((ka >= 4)) || ka=4
    local scheme opts
    for ((i = 0; i < ka; i++)); do
        scheme=http opts=""
        if ((i % 2)); then
            scheme=https
            if ((RANDOM % 2)); then opts='--tlsv1.2 --tls-max 1.2'; else opts='--tlsv1.3'; fi
        fi
        if ((RANDOM % 4 == 0)); then host="[$SRV6]"; else host=$SRV4; fi
        line="$CURL_COMMON${opts:+ $opts}"
        batch=$((RANDOM % 16 + 5))
        for ((k = 0; k < batch; k++)); do
            case $((RANDOM % 8)) in
                0) path=missing.html ;;
                1 | 2) path=medium.bin ;;
                *) path=small.bin ;;
            esac
            line+=" -o /dev/null $scheme://$host/$path?k=$i.$k"
        done
        printf '%s\n' "$line"
    done
}
gen_jobs >"$WORK/jobs.ordered"   # not in a pipeline: subshells reseed $RANDOM
shuf --random-source=<(yes "$SEED" 2>/dev/null) "$WORK/jobs.ordered" >"$WORK/jobs.txt"
n_jobs=$(wc -l <"$WORK/jobs.txt")

log "traffic: $HTTPS_CONNS short HTTPS connections + keep-alive sessions ($n_jobs curl runs, $PARALLEL parallel), TLS 1.2 ticket resumptions, 2 bulk downloads"
in_c timeout "$(remaining)" xargs -P "$PARALLEL" -L 1 curl \
    <"$WORK/jobs.txt" >"$WORK/https-results.txt" 2>"$WORK/https-errors.txt" &
SHORT_PID=$!

# curl does not offer TLS 1.2 session tickets (it resumes TLS 1.2 by session
# ID), so a few TLS 1.2 ticket resumptions are made with openssl s_client:
# full handshake saving the session, then a resumption with the ticket.
TICKET_PAIRS=$((HTTPS_CONNS / 250))
((TICKET_PAIRS >= 4)) || TICKET_PAIRS=4
tls12_tickets() {
    local i req sess="$WORK/tls12-session.pem"
    for ((i = 0; i < TICKET_PAIRS; i++)); do
        ((SECONDS < DEADLINE)) || return 1
        req="GET /small.bin?t=$i HTTP/1.1\r\nHost: rttlens-bench.test\r\nConnection: close\r\n\r\n"
        # shellcheck disable=SC2059  # the request is the format, on purpose
        printf "$req" | in_c timeout 10 openssl s_client -connect "$SRV4:443" -tls1_2 -quiet \
            -servername rttlens-bench.test -sess_out "$sess" >/dev/null 2>&1 || return 1
        # shellcheck disable=SC2059
        printf "$req" | in_c timeout 10 openssl s_client -connect "$SRV4:443" -tls1_2 -quiet \
            -servername rttlens-bench.test -sess_in "$sess" >/dev/null 2>&1 || return 1
    done
}
tls12_tickets &
TICKETS_PID=$!

bulk() { # bulk NAME URL [curl args...]
    local name=$1 url=$2
    shift 2
    in_c timeout "$(remaining)" curl -s -S -g -o /dev/null \
        -w '%{http_code} %{size_download} %{speed_download}\n' "$@" "$url" \
        >>"$WORK/bulk-results.txt" 2>>"$WORK/bulk-errors.txt" || {
        warn "bulk download $name failed: $(tail -n 1 "$WORK/bulk-errors.txt" 2>/dev/null)"
        return 1
    }
}
# Two concurrent bulk downloads, IPv4 and IPv6, both rate-limited by the
# reading client (flow control then paces the sender). Unlimited, a veth moves
# ~300 MB/s and tcpdump, sharing 2 cores with everything else, drops packets.
bulk v4 "http://$SRV4/big.bin" --limit-rate "$BULK_RATE" &
BULK1_PID=$!
bulk v6 "http://[$SRV6]/big.bin" --limit-rate "$((BULK_RATE_MB / 2))M" &
BULK2_PID=$!

short_rc=0
wait "$SHORT_PID" || short_rc=$?
bulk_fail=0
wait "$BULK1_PID" || bulk_fail=$((bulk_fail + 1))
wait "$BULK2_PID" || bulk_fail=$((bulk_fail + 1))
wait "$TICKETS_PID" || warn "openssl s_client TLS 1.2 ticket workload failed"
((short_rc != 124)) || die "traffic phase hit the ${TRAFFIC_TIMEOUT}s timeout during the HTTPS workload"
((bulk_fail == 0)) || die "$bulk_fail bulk download(s) failed"

n_req=$(grep -c . "$WORK/https-results.txt" || true)
n_ok=$(grep -cE '^(200|404)$' "$WORK/https-results.txt" || true)
n_err=$(grep -c . "$WORK/https-errors.txt" || true)
log "short/keep-alive workload done: $n_ok/$n_req responses OK, $n_err curl errors, capture $(($(cap_bytes) / 1048576)) MiB"
if ((n_err > 0)); then
    warn "curl errors in the HTTPS workload (first 3):"
    head -n 3 "$WORK/https-errors.txt" >&2
fi
((n_ok * 10 >= HTTPS_CONNS * 9)) || die "too many failed HTTPS requests ($n_ok OK of $HTTPS_CONNS+ expected)"

# Top up with bulk (range) downloads until the capture reaches the target.
target=$((SIZE_MB * 1048576))
topups=0
while (($(cap_bytes) < target)); do
    ((topups < MAX_TOPUPS)) || die "target size not reached after $MAX_TOPUPS top-up downloads"
    ((SECONDS < DEADLINE)) || die "target size not reached within ${TRAFFIC_TIMEOUT}s"
    want=$((target - $(cap_bytes) + 1048576))
    ((want <= BIG_BYTES)) || want=$BIG_BYTES
    topups=$((topups + 1))
    log "top-up #$topups: range request for $((want / 1048576)) MiB (capture at $(($(cap_bytes) / 1048576)) MiB)"
    if ((want >= BIG_BYTES)); then
        bulk "top-up $topups" "http://$SRV4/big.bin" --limit-rate "$((BULK_RATE_MB * 2))M" || die "top-up download failed"
    else
        bulk "top-up $topups" "http://$SRV4/big.bin" --limit-rate "$((BULK_RATE_MB * 2))M" \
            -r "0-$((want - 1))" || die "top-up download failed"
    fi
    # let tcpdump flush before re-checking the size
    sleep 1.5
done

# tcpdump (TPACKET_V3, non-immediate mode) hands over a ring block when it is
# full or after its 1 s timeout; a block still pending at SIGINT is lost, so
# wait for the timeout before stopping it.
sleep 2
log "stopping tcpdump"
stop_tcpdump
captured=$(awk '/packets captured/ { print $1 }' "$WORK/tcpdump.log")
received=$(awk '/packets received by filter/ { print $1 }' "$WORK/tcpdump.log")
dropped=$(awk '/packets dropped by kernel/ { print $1 }' "$WORK/tcpdump.log")
[[ -n $captured ]] || { cat "$WORK/tcpdump.log" >&2; die "tcpdump did not report its statistics (killed?)"; }

mv -f -- "$PARTIAL" "$OUT"
SUCCESS=1

# ---- summary ----------------------------------------------------------------
log "computing summary"
size=$(stat -c %s -- "$OUT")
if command -v capinfos >/dev/null 2>&1; then
    packets=$(capinfos -M -c -- "$OUT" 2>/dev/null | awk -F: '/Number of packets/ { gsub(/ /, "", $2); print $2 }')
    pk_src=capinfos
fi
if [[ -z ${packets:-} ]]; then
    packets=$(tcpdump -r "$OUT" -qn 2>/dev/null | wc -l)
    pk_src="tcpdump -r | wc -l"
fi
# Connections = client SYNs (SYN set, ACK clear), IPv4 and IPv6 (no ext. headers).
syns=$(tcpdump -r "$OUT" -n \
    '(tcp[tcpflags] & (tcp-syn|tcp-ack)) == tcp-syn or (ip6 and ip6[6] == 6 and (ip6[53] & 0x12) == 0x02)' \
    2>/dev/null | wc -l)
conv=""
if ((TSHARK_STATS)); then
    conv=$(tshark -r "$OUT" -o tcp.desegment_tcp_streams:FALSE -q -z conv,tcp 2>/dev/null |
        grep -c '<->' || true)
fi
bulk_n=$(grep -c . "$WORK/bulk-results.txt" || true)

echo
echo "capture        $OUT"
awk -v s="$size" 'BEGIN { printf "size           %.1f MiB (%.0f bytes)\n", s / 1048576, s }'
echo "packets        $packets ($pk_src); tcpdump: $captured captured, $received received by filter, $dropped dropped by kernel"
echo "tcp conns      $syns client SYNs${conv:+; $conv TCP conversations (tshark)}"
echo "traffic        $HTTPS_CONNS short HTTPS connections via $n_jobs curl runs ($n_ok/$n_req responses OK),"
echo "               $((TICKET_PAIRS * 2)) TLS 1.2 ticket connections (s_client), $bulk_n bulk downloads ($topups top-ups), big file ${BIG_MB} MiB"
echo "elapsed        $(elapsed) s"
if [[ $dropped != 0 ]]; then
    warn "the kernel dropped $dropped packets (tcpdump too slow); the capture has gaps."
    warn "re-run on a quieter machine, or with a lower --bulk-rate / larger --buffer-mb"
fi
trailing=$((received - captured - dropped))
if ((trailing > 0)); then
    # Packets still sitting in the ring block tcpdump had not been handed yet
    # when it was stopped (non-immediate mode): these are the very last ones,
    # after the traffic ended (late FIN/RST, neighbour discovery), not a gap.
    echo "note           $trailing trailing packet(s) in tcpdump's unfinished ring block were not written"
fi
