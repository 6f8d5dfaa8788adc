#!/usr/bin/env bash
# live-load.sh: `rttlens analyze -i` at the highest packet rate a veth pair
# sustains: kernel drops, frames, RSS and the Ctrl-C summary (issue 46).
set -euo pipefail
export LC_ALL=C

usage() {
    cat <<'EOF'
usage: sudo bench/live-load.sh [--bin PATH] [--seconds N] [--streams "1 4"]
                               [--churn N] [--offload]

For each number of bulk streams: a veth pair between two network
namespaces (ll-srv-PID, ll-cli-PID), `rttlens analyze -i` on the client
end (--format jsonl), N TCP streams sending as fast as they can from the
client to a sink in the other namespace, and --churn short connections a
second beside them, for --seconds. TSO, GSO and GRO are off on the pair
(ethtool), so each packet is at most one MTU (1500 B), as on a real NIC,
not a 64 KB offload super-packet: the packet rate is the load. rttlens's
RSS (VmRSS) is sampled every second. At the end the capture gets SIGINT
(Ctrl-C); its summary line must come, and must add up: frames + kernel
drops = the packets the kernel passed to the socket, and one connection
line per connection counted.

Prints one row per stream count: packets/s on the link, the kernel's
drops (and their share), RSS after 2 s, its maximum and at the end (KiB),
connections, the time from SIGINT to exit, and whether the summary adds
up.

  --bin PATH      rttlens binary (default target/release/rttlens; nothing is built)
  --seconds N     traffic per run (default 20)
  --streams "…"   bulk stream counts, one run each (default "1 2 4")
  --churn N       short connections a second beside the streams (default 20)
  --offload       leave TSO/GSO/GRO on (64 KB packets: few, large)

Needs root (namespaces, AF_PACKET), iproute2, ethtool, python3.
Namespaces and processes are removed on exit and on Ctrl-C.
EOF
}

BIN=target/release/rttlens
SECS=20
STREAMS="1 2 4"
CHURN=20
OFFLOAD=0

die() { echo "live-load.sh: $*" >&2; exit 2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

while (($#)); do
    case $1 in
        --bin) BIN=${2:?--bin needs a path}; shift 2 ;;
        --seconds) SECS=${2:?--seconds needs a number}; shift 2 ;;
        --streams) STREAMS=${2:?--streams needs numbers}; shift 2 ;;
        --churn) CHURN=${2:?--churn needs a number}; shift 2 ;;
        --offload) OFFLOAD=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done
if ! is_uint "$SECS" || ! ((SECS >= 3 && SECS <= 3600)); then die "--seconds: 3..3600, not '$SECS'"; fi
if ! is_uint "$CHURN" || ! ((CHURN <= 500)); then die "--churn: 0..500, not '$CHURN'"; fi
for n in $STREAMS; do
    if ! is_uint "$n" || ! ((n >= 1 && n <= 64)); then die "--streams: numbers 1..64, not '$n'"; fi
done
[[ $(id -u) -eq 0 ]] || die "needs root (it creates network namespaces and captures packets): sudo $0"
for c in ip ethtool python3; do
    command -v "$c" >/dev/null || die "missing command: $c (apt-get install -y iproute2 ethtool python3)"
done
[[ -x $BIN ]] || die "no executable rttlens at '$BIN' (--bin PATH; this script builds nothing)"
BIN=$(readlink -f "$BIN")

NS_SRV=ll-srv-$$
NS_CLI=ll-cli-$$
IF_SRV=lls$$
IF_CLI=llc$$
IF_SRV=${IF_SRV:0:15}
IF_CLI=${IF_CLI:0:15}
SRV_ADDR=10.80.0.1
CLI_ADDR=10.80.0.2
WORK=$(mktemp -d /tmp/live-load.XXXXXX)
PIDS=()

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    # anything else still inside our namespaces was started by us
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
trap 'echo "live-load.sh: interrupted" >&2; exit 130' INT TERM

# --- namespaces and the veth pair -------------------------------------------
ip netns add "$NS_SRV"
ip netns add "$NS_CLI"
ip link add "$IF_SRV" type veth peer name "$IF_CLI"
ip link set "$IF_SRV" netns "$NS_SRV"
ip link set "$IF_CLI" netns "$NS_CLI"
ip -n "$NS_SRV" addr add "$SRV_ADDR/24" dev "$IF_SRV"
ip -n "$NS_CLI" addr add "$CLI_ADDR/24" dev "$IF_CLI"
for ns in "$NS_SRV" "$NS_CLI"; do ip -n "$ns" link set lo up; done
if ((!OFFLOAD)); then
    ip netns exec "$NS_SRV" ethtool -K "$IF_SRV" tso off gso off gro off >/dev/null 2>&1 || true
    ip netns exec "$NS_CLI" ethtool -K "$IF_CLI" tso off gso off gro off >/dev/null 2>&1 || true
fi
ip -n "$NS_SRV" link set "$IF_SRV" up
ip -n "$NS_CLI" link set "$IF_CLI" up

# --- the sink (port 5001: bulk, port 5002: short connections) --------------
cat >"$WORK/sink.py" <<'EOF'
import socket, sys, threading
def drain(c):
    with c:
        while c.recv(1 << 20):
            pass
def answer(c):
    with c:
        c.recv(4096)
        c.sendall(b"x" * 2000)
def serve(port, handler):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((sys.argv[1], port))
    l.listen(1024)
    while True:
        c, _ = l.accept()
        threading.Thread(target=handler, args=(c,), daemon=True).start()
threading.Thread(target=serve, args=(5002, answer), daemon=True).start()
serve(5001, drain)
EOF
# --- the senders --------------------------------------------------------------
cat >"$WORK/send.py" <<'EOF'
import socket, sys, time, threading
addr, streams, churn, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
end = time.monotonic() + secs
def bulk():
    s = socket.create_connection((addr, 5001))
    buf = b"x" * (1 << 16)
    while time.monotonic() < end:
        s.sendall(buf)
    s.close()
def short():
    n = 0
    t0 = time.monotonic()
    while churn and time.monotonic() < end:
        try:
            with socket.create_connection((addr, 5002), timeout=3) as s:
                s.sendall(b"GET / HTTP/1.1\r\n\r\n")
                while s.recv(4096):
                    pass
        except OSError:
            pass
        n += 1
        time.sleep(max(0.0, t0 + n / churn - time.monotonic()))
ts = [threading.Thread(target=bulk) for _ in range(streams)] + [threading.Thread(target=short)]
for t in ts: t.start()
for t in ts: t.join()
EOF
ip netns exec "$NS_SRV" python3 "$WORK/sink.py" "$SRV_ADDR" >"$WORK/sink.log" 2>&1 &
PIDS+=($!)
sleep 0.5

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

printf '| streams | packets/s | kernel drops | drops %% | RSS 2 s / max / end (KiB) | connections | SIGINT → exit | summary adds up |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for n in $STREAMS; do
    out="$WORK/live-$n.jsonl"
    ip netns exec "$NS_CLI" "$BIN" analyze -i "$IF_CLI" --format jsonl -o "$out" \
        2>"$WORK/live-$n.err" &
    LIVE=$!   # ip netns exec execs the binary: this is rttlens itself
    PIDS+=("$LIVE")
    for _ in $(seq 1 50); do
        grep -q "capturing on" "$WORK/live-$n.err" 2>/dev/null && break
        sleep 0.1
    done
    grep -q "capturing on" "$WORK/live-$n.err" || { cat "$WORK/live-$n.err" >&2; die "rttlens did not start"; }
    ip netns exec "$NS_CLI" python3 "$WORK/send.py" "$SRV_ADDR" "$n" "$CHURN" "$SECS" &
    SEND=$!
    PIDS+=("$SEND")
    t0=$EPOCHREALTIME
    max=0 at2=0 k=0
    while kill -0 "$SEND" 2>/dev/null; do
        r=$(rss "$LIVE")
        ((r > max)) && max=$r
        ((k == 2)) && at2=$r
        k=$((k + 1))
        sleep 1
    done
    wait "$SEND" || true
    t1=$EPOCHREALTIME
    sleep 1.5   # the last connections' close and linger
    end_rss=$(rss "$LIVE")
    s0=$EPOCHREALTIME
    kill -INT "$LIVE"
    rc=0; wait "$LIVE" || rc=$?
    s1=$EPOCHREALTIME
    python3 - "$out" "$n" "$t0" "$t1" "$s0" "$s1" "$rc" "$at2" "$max" "$end_rss" <<'EOF'
import json, re, sys
path, n, t0, t1, s0, s1, rc, at2, mx, end = sys.argv[1:]
lines = [json.loads(l) for l in open(path)]
conns = sum(1 for l in lines if l["type"] == "connection")
sums = [l for l in lines if l["type"] == "summary"]
if not sums or lines[-1]["type"] != "summary":
    print(f"| {n} | | | | | | | NO SUMMARY (exit {rc}) |")
    sys.exit(0)
c = sums[0]["capture"]
m = re.search(r"kernel: (\d+) packets, (\d+) dropped", c["format"])
kp, kd = (int(m[1]), int(m[2])) if m else (None, None)
drops = c["quality"].get("kernel_drops")
secs = float(t1) - float(t0)
ok = rc == "0" and kp is not None and c["frames"] + drops == kp and c["connections"] == conns
print(f"| {n} | {kp / secs:,.0f} | {drops:,} | {100 * drops / max(kp, 1):.2f} | {at2} / {mx} / {end} "
      f"| {conns} | {float(s1) - float(s0):.2f} s | {'yes' if ok else 'NO'}: frames {c['frames']:,} + drops {drops:,} "
      f"= {c['frames'] + drops:,} of {kp:,}; exit {rc} |")
EOF
done
