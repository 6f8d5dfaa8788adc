#!/usr/bin/env bash
# handshake-storm.sh - the Go handshake-storm case in the lab: P99 against
# the offered rate, full vs resumed vs 0-RTT handshakes, on nginx and on
# the Go crypto/tls server, each with one core and the same certificate,
# across the lab's delay link. Open loop (`rttlens bench --rate`), one GET
# per connection. Prints one markdown table (docs/bench.md). Needs root.
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
SERVERS="nginx go"
MIXES="full resumed 0rtt"
RATES="200 400 600 800 1000 1200"
SECONDS_PER_RUN=5
RTT=10ms
CERT=rsa2048

usage() {
    cat <<EOF
Usage: ${0##*/} [--servers "nginx go"] [--mixes "full resumed 0rtt"]
                [--rates "200 400 …"] [--seconds N] [--rtt 10ms] [--cert rsa2048|p256]

For each server, mix and rate: rttlens bench --lab SERVER --lab-cert CERT
--rtt RTT --rate R --duration N --mix MIX=1 --request. Needs root, nginx
(nginx-light), openssl, go (golang-go or Go's tarball), python3.
EOF
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --servers) SERVERS=${2:?}; shift 2 ;;
        --mixes) MIXES=${2:?}; shift 2 ;;
        --rates) RATES=${2:?}; shift 2 ;;
        --seconds) SECONDS_PER_RUN=${2:?}; shift 2 ;;
        --rtt) RTT=${2:?}; shift 2 ;;
        --cert) CERT=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
[[ $(id -u) == 0 ]] || { echo "the lab needs root" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is missing" >&2; exit 2; }

cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" -p rttlens
BIN="$ROOT/target/release/rttlens"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

for server in $SERVERS; do
    for mix in $MIXES; do
        for rate in $RATES; do
            out="$WORK/$server-$mix-$rate.json"
            "$BIN" bench --lab "$server" --lab-cert "$CERT" --rtt "$RTT" --rate "$rate" \
                --duration "${SECONDS_PER_RUN}s" --mix "$mix=1" --request --timeout 5s \
                --no-progress --format json -o "$out" 2>/dev/null || true
            echo "$server $mix $rate: $(python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); t = r["phases"]["total"] or {}
print("p99", t.get("p99_ms"), "ms, achieved", round(r["handshakes_per_s"]["achieved"]))' "$out" 2>/dev/null || echo failed)" >&2
        done
    done
done

python3 - "$WORK" "$RTT" "$CERT" "$SECONDS_PER_RUN" <<'EOF'
import glob, json, os, sys
work, rtt, cert, secs = sys.argv[1:5]
rows = []
for f in sorted(glob.glob(f"{work}/*.json")):
    server, mix, rate = os.path.basename(f)[:-5].split("-")
    try:
        r = json.load(open(f))
    except ValueError:
        continue
    rows.append((server, ["full", "resumed", "0rtt"].index(mix), int(rate), mix, r))
rows.sort(key=lambda x: x[:3])
print(f"lab RTT {rtt}, {cert} certificate, one server core, open loop, one GET per connection, {secs} s per row\n")
print("| server | mix | offered/s | achieved/s | total p50 | p99 | p99.9 | max (ms) | failed | verified | server CPU per conn | server cores busy |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
for server, _, rate, mix, r in rows:
    t = r["phases"]["total"]
    k = next((k for k in r["kinds"] if k["kind"] == mix), None)
    verified = "-"
    if k and mix == "resumed":
        verified = f"{100 * k['resumed'] / max(k['succeeded'], 1):.0f} % resumed"
    elif k and mix == "0rtt":
        verified = f"{100 * k['early_data_accepted'] / max(k['succeeded'], 1):.0f} % 0-RTT"
    s = r.get("server_cpu") or {}
    c = r["connections"]
    fmt = lambda v: "-" if v is None else (f"{v:.0f}" if v >= 100 else f"{v:.1f}")
    print(f"| {server} | {mix} | {rate} | {r['handshakes_per_s']['achieved']:.0f} | "
          f"{fmt(t and t['p50_ms'])} | {fmt(t and t['p99_ms'])} | {fmt(t and t['p99_9_ms'])} | "
          f"{fmt(t and t['max_ms'])} | {c['failed']} | {verified} | "
          f"{s.get('per_handshake_us') or 0:.0f} µs | {s.get('cores_busy') or 0:.2f} |")
late = [((r.get("link") or {}).get("late_p99_ms") or 0, f"{s}-{m}-{rt}") for s, _, rt, m, r in rows]
worst = max(late, default=(0, ""))
print(f"\nthe lab link's lateness: p99 at most {worst[0]:.2f} ms ({worst[1]})")
EOF
