#!/usr/bin/env bash
# storm-captures.sh - the lab storms behind `rttlens analyze`'s population
# findings, each captured at the client end of the lab link (pcapng) with
# the run's bench JSON beside it:
#
#   go-contention        Go crypto/tls, RSA-2048, 500 full handshakes/s for
#                        4 s, beyond the one-core server's capacity (~300/s
#                        here): ServerHello − ClientHello grows with the
#                        handshakes in progress while the SYN RTT stays flat
#   go-tail              the same at 250/s, below capacity: the tail rises
#                        (p99 ≫ p50), the queue does not run away
#   nginx-backlog        nginx, RSA-2048, 500/s for 3 s, listen backlog 16,
#                        tcp_syncookies 0: the accept queue overflows, SYNs
#                        are dropped and resent (1 s, 2 s, 3 s, 4 s: Linux's
#                        tcp_syn_linear_timeouts) in bursts while others get
#                        prompt SYN-ACKs; handshakes' last ACKs are dropped
#                        (the ClientHello is resent)
#   nginx-syncookies     the same with tcp_syncookies 1 and the client's TCP
#                        timestamps off: a cookie SYN-ACK carries the MSS
#                        alone, a normal one MSS, SACK_PERM and WS
#   nginx-syncookies-ts  the same with the client's timestamps on: cookie
#                        SYN-ACKs carry the same options as the others; their
#                        TSval lags the connection's next TSval by 3-63 ms
#   control              nginx, RSA-2048, 200/s for 5 s, default backlog: no
#                        SYN retransmission, flat handshake processing
#
# All across a 10 ms lab link, open loop, one GET per connection,
# --timeout 5s (so resent SYNs can still succeed). With tshark and python3,
# each capture's summary (bench/storm-tshark.py) is written beside it as
# NAME.txt. Needs root, nginx-light, openssl and Go. The lab shares this
# machine's cores: before each run the script waits (up to 10 minutes) for
# the CPUs to be idle, since another busy process moves every figure.
set -euo pipefail
export LC_ALL=C

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
BIN="$ROOT/target/release/rttlens"
ONLY=""

usage() {
    cat <<EOF
Usage: ${0##*/} OUTDIR [--only "NAME …"]

Writes OUTDIR/NAME.pcapng, OUTDIR/NAME.json (and OUTDIR/NAME.txt with
tshark) for NAME in: go-contention go-tail nginx-backlog nginx-syncookies
nginx-syncookies-ts control. Uses $BIN (built if missing).
EOF
}

OUT=""
while [[ $# -gt 0 ]]; do
    case $1 in
        --only) ONLY=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
        *) [[ -z $OUT ]] || { usage >&2; exit 2; }; OUT=$1; shift ;;
    esac
done
[[ -n $OUT ]] || { usage >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "the lab needs root" >&2; exit 2; }
mkdir -p "$OUT"
if [[ ! -x $BIN ]]; then
    cargo build --release --quiet --manifest-path "$ROOT/Cargo.toml" --bin rttlens
fi

# the share of CPU time idle over 2 s, in percent
idle_pct() {
    local a b
    read -r -a a < <(head -1 /proc/stat)
    sleep 2
    read -r -a b < <(head -1 /proc/stat)
    local total=0 i
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    echo $(( (100 * (b[4] - a[4] + b[5] - a[5])) / (total > 0 ? total : 1) ))
}

wait_idle() {
    local deadline=$((SECONDS + 600)) p
    while p=$(idle_pct); [[ $p -lt 85 ]]; do
        if [[ $SECONDS -ge $deadline ]]; then
            echo "  the CPUs are still busy (${p} % idle): running anyway" >&2
            return
        fi
        echo "  waiting for idle CPUs (${p} % idle)" >&2
    done
}

COMMON=(--rtt 10ms --lab-cert rsa2048 --request --timeout 5s --no-progress)
NGINX_STORM=(--lab nginx --rate 500 --duration 3s --lab-backlog 16)

declare -A ARGS=(
    [go-contention]="--lab go --mix full=1 --rate 500 --duration 4s"
    [go-tail]="--lab go --mix full=1 --rate 250 --duration 4s"
    [nginx-backlog]="${NGINX_STORM[*]} --lab-syncookies 0"
    [nginx-syncookies]="${NGINX_STORM[*]} --lab-syncookies 1 --lab-client-timestamps off"
    [nginx-syncookies-ts]="${NGINX_STORM[*]} --lab-syncookies 1"
    [control]="--lab nginx --rate 200 --duration 5s"
)
NAMES=${ONLY:-"go-contention go-tail nginx-backlog nginx-syncookies nginx-syncookies-ts control"}

for name in $NAMES; do
    [[ -n ${ARGS[$name]:-} ]] || { echo "unknown capture $name" >&2; exit 2; }
    # shellcheck disable=SC2206 # the table's words are the options
    args=(${ARGS[$name]})
    echo "$name: rttlens bench ${args[*]} ${COMMON[*]}" >&2
    wait_idle
    "$BIN" bench "${args[@]}" "${COMMON[@]}" \
        --capture "$OUT/$name.pcapng" --format json -o "$OUT/$name.json"
    if command -v tshark >/dev/null && command -v python3 >/dev/null; then
        python3 "$SCRIPT_DIR/storm-tshark.py" "$OUT/$name.pcapng" >"$OUT/$name.txt"
    fi
done
echo "done: $OUT" >&2
