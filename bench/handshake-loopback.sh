#!/usr/bin/env bash
# handshake-loopback.sh - rttlens bench against nginx on loopback, beside
# openssl s_time and h2load on the same nginx: connections per second,
# each client's CPU per connection, nginx's CPU, and what each tool says
# about latency. Prints one markdown table (docs/bench.md).
#
# nginx: one worker (master_process off), ECDSA P-256 certificate, TLS 1.3,
# ssl_early_data on, access_log off. Every client runs on one thread.
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
SECONDS_PER_RUN=10
RATE=2000
PORT=18443

usage() {
    cat <<EOF
Usage: ${0##*/} [--seconds N] [--rate R] [--port P]

Run against one nginx on 127.0.0.1:P (default $PORT), each for N seconds
(default $SECONDS_PER_RUN):
  rttlens bench -c 64              closed loop, handshakes only (capacity)
  rttlens bench --rate R           open loop, handshakes only
  rttlens bench --rate R --request open loop, one GET per connection
  openssl s_time -new              one connection at a time, GET /
  h2load --h1 --rate               R/100 connections every 10 ms, one GET each
Needs nginx (nginx-light), openssl, h2load (nghttp2-client), python3.
EOF
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --seconds) SECONDS_PER_RUN=${2:?}; shift 2 ;;
        --rate) RATE=${2:?}; shift 2 ;;
        --port) PORT=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
for c in nginx:nginx-light openssl:openssl h2load:nghttp2-client python3:python3; do
    command -v "${c%%:*}" >/dev/null || [[ -x /usr/sbin/${c%%:*} ]] || {
        echo "${c%%:*} is missing: apt-get install -y ${c#*:}" >&2; exit 2; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p rttlens
BIN="$ROOT/target/release/rttlens"
WORK=$(mktemp -d)
NGINX_PID=
cleanup() {
    [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/docroot"
echo "rttlens loopback bench" > "$WORK/docroot/index.html"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 2 -subj /CN=localhost 2>/dev/null
cat > "$WORK/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 40000;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
events { worker_connections 16384; }
http {
    access_log off;
    client_body_temp_path $WORK/t1; proxy_temp_path $WORK/t2;
    fastcgi_temp_path $WORK/t3; uwsgi_temp_path $WORK/t4; scgi_temp_path $WORK/t5;
    server {
        listen 127.0.0.1:$PORT ssl backlog=4096;
        ssl_certificate $WORK/cert.pem;
        ssl_certificate_key $WORK/key.pem;
        ssl_protocols TLSv1.3;
        ssl_early_data on;
        root $WORK/docroot;
    }
}
EOF
"$NGINX" -p "$WORK/" -c "$WORK/nginx.conf" &
NGINX_PID=$!
for _ in $(seq 100); do
    [[ -s $WORK/nginx.pid ]] && break
    sleep 0.05
done
[[ -s $WORK/nginx.pid ]] || { echo "nginx did not start: $(cat "$WORK/error.log")" >&2; exit 1; }
URL="https://127.0.0.1:$PORT/"

# CPU seconds (user + system) of a process, from /proc/PID/stat
cpu_of() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}

# run LABEL CMD...: the command's wall, user+sys CPU and nginx's CPU
# into $WORK/LABEL.{out,time,nginx}
run() {
    local label=$1; shift
    local n0 n1
    sleep 1  # let TIME_WAIT sockets of the previous run age out
    n0=$(cpu_of "$NGINX_PID")
    /usr/bin/time -f '%e %U %S' -o "$WORK/$label.time" "$@" > "$WORK/$label.out" 2> "$WORK/$label.err" || true
    n1=$(cpu_of "$NGINX_PID")
    awk -v a="$n0" -v b="$n1" 'BEGIN { print b - a }' > "$WORK/$label.nginx"
}

S=$SECONDS_PER_RUN
N=$((RATE * S))
run closed "$BIN" bench "$URL" -k --no-progress --threads 1 -c 64 --duration "${S}s" --format json
run open "$BIN" bench "$URL" -k --no-progress --threads 1 --rate "$RATE" --duration "${S}s" --format json
run request "$BIN" bench "$URL" -k --no-progress --threads 1 --rate "$RATE" --duration "${S}s" --request --format json
run s_time openssl s_time -connect "127.0.0.1:$PORT" -new -www / -time "$S"
run h2load h2load --h1 -t 1 -n "$N" -c "$N" --rate "$((RATE / 100))" --rate-period 10ms "$URL"

python3 - "$WORK" "$RATE" "$S" <<'EOF'
import json, re, sys
work, rate, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def read(label, ext):
    return open(f"{work}/{label}.{ext}").read()
def timing(label):
    wall, user, sys_ = map(float, read(label, "time").split())
    return wall, user + sys_, float(read(label, "nginx"))
rows = []
for label, what in [("closed", "`rttlens bench -c 64` (closed loop, handshakes)"),
                    ("open", f"`rttlens bench --rate {rate:.0f}` (open loop, handshakes)"),
                    ("request", f"`rttlens bench --rate {rate:.0f} --request` (open loop, GET /)")]:
    r = json.loads(read(label, "out"))
    wall, cpu, ngx = timing(label)
    t = r["phases"]["total"]
    n = r["connections"]["succeeded"]
    el = r["elapsed_ms"] / 1000
    lat = (f"total p50 {t['p50_ms']:.2f} / p99 {t['p99_ms']:.2f} / p99.9 {t['p99_9_ms']:.2f} / "
           f"max {t['max_ms']:.1f} ms; TCP, TLS, TTFB apart")
    rows.append((what, n / el, cpu * 1e6 / n, r["client_cpu"]["per_handshake_us"], ngx / el, lat))
out = read("s_time", "out")
m = re.search(r"(\d+) connections in (\d+) real seconds", out)
n, real = int(m.group(1)), float(m.group(2))
wall, cpu, ngx = timing("s_time")
rows.append(("`openssl s_time -new -www /` (one at a time, GET /)", n / real, cpu * 1e6 / n, None,
             ngx / wall, "none (connections per user-CPU second)"))
out = read("h2load", "out")
n = int(re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out).group(1))
fin = float(re.search(r"finished in ([\d.]+)s", out).group(1))
c = re.search(r"time for connect:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", out)
wall, cpu, ngx = timing("h2load")
rows.append((f"`h2load --h1 --rate {rate/100:.0f} --rate-period 10ms` (GET /)", n / fin, cpu * 1e6 / n, None,
             ngx / fin, f"TCP+TLS together: min {c.group(1)} max {c.group(2)} mean {c.group(3)} sd {c.group(4)}"))
print(f"nginx 1 worker on loopback, TLS 1.3, ECDSA P-256; {secs:.0f} s per run; every client on one thread\n")
print("| client | connections/s | client CPU per connection (process) | (its own threads) | nginx cores busy | latency it reports |")
print("|---|---:|---:|---:|---:|---|")
for what, rate_, cpu_us, own, ngx, lat in rows:
    own_s = f"{own:.0f} µs" if own else "-"
    print(f"| {what} | {rate_:,.0f} | {cpu_us:.0f} µs | {own_s} | {ngx:.2f} | {lat} |")
EOF
