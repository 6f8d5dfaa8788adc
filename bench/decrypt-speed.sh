#!/usr/bin/env bash
# decrypt-speed.sh - what decryption costs `rttlens analyze`.
#
# Makes a keyed capture of real TLS: two private network namespaces joined
# by a veth pair (MTU 1500, offloads off), nginx (TLS 1.3, AES-128-GCM or
# the --cipher given) in one, curl with SSLKEYLOGFILE downloading one file
# over HTTP/1.1 in the other, tcpdump -s 0 on the client's veth. Nothing
# touches the host's network. Then times `rttlens analyze --threads 1` on it
# with and without `--keylog` (median of --runs) and prints the decryption
# rate: application bytes decrypted per second of the extra time, per core.
# Needs root, nginx, curl, openssl, tcpdump, iproute2, ethtool optional.
set -euo pipefail
trap 'echo "decrypt-speed.sh: line $LINENO: $BASH_COMMAND failed" >&2' ERR
PATH="$PATH:/usr/sbin:/sbin"
export LC_ALL=C

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
BIN="$ROOT/target/release/rttlens"
MB=200
RUNS=5
TLS13_SUITE=TLS_AES_128_GCM_SHA256
usage() {
    cat <<EOF
Usage: ${0##*/} [--mb N] [--runs N] [--suite TLS_AES_256_GCM_SHA384|TLS_CHACHA20_POLY1305_SHA256] [--bin PATH]
EOF
}
while [ $# -gt 0 ]; do
    case "$1" in
        --mb) MB=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --suite) TLS13_SUITE=$2; shift 2 ;;
        --bin) BIN=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)" >&2; exit 2; }
for p in nginx curl openssl tcpdump ip; do
    command -v "$p" >/dev/null || { echo "missing $p (scripts/deps lab)" >&2; exit 2; }
done
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release -p rttlens >&2)

WORK=$(mktemp -d /tmp/rttlens-decrypt-speed.XXXXXX)
chmod 755 "$WORK"   # nginx's worker reads the docroot as its own user
NSC="rttlens-dec-c-$$" NSS="rttlens-dec-s-$$"
cleanup() {
    [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
    ip netns del "$NSC" 2>/dev/null || true
    ip netns del "$NSS" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$NSC"; ip netns add "$NSS"
ip link add veth-c netns "$NSC" type veth peer name veth-s netns "$NSS"
ip -n "$NSC" addr add 10.78.0.1/24 dev veth-c
ip -n "$NSS" addr add 10.78.0.2/24 dev veth-s
for ns in "$NSC" "$NSS"; do ip -n "$ns" link set lo up; done
ip -n "$NSC" link set veth-c up; ip -n "$NSS" link set veth-s up
if command -v ethtool >/dev/null; then
    ip netns exec "$NSC" ethtool -K veth-c tso off gso off gro off >/dev/null 2>&1 || true
    ip netns exec "$NSS" ethtool -K veth-s tso off gso off gro off >/dev/null 2>&1 || true
fi

mkdir -p "$WORK/docroot" "$WORK/logs"
head -c $((MB * 1048576)) /dev/zero > "$WORK/docroot/big"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=bench -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
cat > "$WORK/nginx.conf" <<EOF
daemon on;
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    sendfile on;
    server {
        listen 10.78.0.2:443 ssl;
        ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem;
        ssl_protocols TLSv1.3;
        ssl_conf_command Ciphersuites $TLS13_SUITE;
        root $WORK/docroot;
    }
}
EOF
ip netns exec "$NSS" nginx -c "$WORK/nginx.conf" -p "$WORK"
sleep 0.3

PCAP="$WORK/keyed.pcap" KEYS="$WORK/keys.txt"
ip netns exec "$NSC" tcpdump -i veth-c -s 0 -B 262144 -Z root -w "$PCAP" 'tcp port 443' 2>/dev/null &
TCPDUMP=$!
sleep 1
ip netns exec "$NSC" env SSLKEYLOGFILE="$KEYS" curl -sk --http1.1 -o /dev/null \
    --max-time 120 https://10.78.0.2/big
sleep 0.3
kill "$TCPDUMP"; wait "$TCPDUMP" 2>/dev/null || true

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timeit() {
    for _ in $(seq "$RUNS"); do
        local t0 t1
        t0=$(date +%s.%N)
        "$BIN" analyze --no-progress --threads 1 --format json "$@" >/dev/null
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc -l
    done | median
}
packets=$("$BIN" analyze --no-progress --format json "$PCAP" | grep -o '"frames":[0-9]*' | head -1 | cut -d: -f2)
app=$("$BIN" analyze --no-progress --format json --keylog "$KEYS" "$PCAP" \
    | grep -o '"app_bytes":\[[0-9]*,[0-9]*\]' | head -1 | tr -dc '0-9,' | cut -d, -f2)
status=$("$BIN" analyze --no-progress --format json --keylog "$KEYS" "$PCAP" \
    | grep -o '"status":"[a-z-]*"' | head -1)
plain=$(timeit "$PCAP")
keyed=$(timeit --keylog "$KEYS" "$PCAP")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
aes=$(grep -qw aes /proc/cpuinfo && echo yes || echo no)
echo "machine: $cpu (AES-NI: $aes), $(nproc) cores"
echo "capture: $(stat -c %s "$PCAP") bytes, $packets frames, one $MB MiB download, TLS 1.3 $TLS13_SUITE"
echo "decryption: $status, $app B of application data opened"
printf 'analyze --threads 1, median of %s: without keys %.3f s, with --keylog %.3f s\n' "$RUNS" "$plain" "$keyed"
extra=$(echo "$keyed - $plain" | bc -l)
if [ "$(echo "$extra > 0.001" | bc -l)" = 1 ]; then
    printf 'decryption rate: %.0f MB/s per core (application bytes / extra time)\n' \
        "$(echo "$app / $extra / 1000000" | bc -l)"
else
    echo "decryption rate: the extra time is within noise"
fi
