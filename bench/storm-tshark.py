#!/usr/bin/env python3
"""Summarise a `rttlens bench --lab … --capture` storm capture with tshark.

    bench/storm-tshark.py CAPTURE.pcapng [--port 443] [--bin-ms 250]

What it prints (all times from tshark's frame.time_relative, at the client
end of the lab link):

- connections: TCP streams with a client SYN; with a ServerHello; reset;
- SYN retransmissions: count, streams, delay after the first SYN (rounded
  to 0.1 s), and how they cluster per 100 ms interval; SYN→SYN-ACK of the
  first SYNs answered (the link RTT as the kernel sees it);
- SYN-ACKs by class (answering the first SYN, answering a retransmitted
  SYN, arriving after the client's final ACK): option sets (kinds in order,
  MSS, window scale), TS present, and the low 6 bits of TSval relative to
  the connection's clock offset (Linux's SYN cookie encodes the client's
  wscale in bits 0-3, SACK in bit 4, ECN in bit 5);
- per interval of --bin-ms (by ClientHello time): ServerHello − ClientHello
  p50/p99 per TCP stream and the handshakes in progress (ClientHello sent,
  no ServerHello yet: time-weighted mean and maximum).

Needs tshark (Wireshark ≥ 3.6).
"""

import argparse
import bisect
import collections
import statistics
import subprocess
import sys

FIELDS = [
    "frame.time_relative",
    "ip.src",
    "tcp.srcport",
    "tcp.dstport",
    "tcp.stream",
    "tcp.flags.syn",
    "tcp.flags.ack",
    "tcp.flags.reset",
    "tcp.len",
    "tcp.option_kind",
    "tcp.options.mss_val",
    "tcp.options.wscale.shift",
    "tcp.options.timestamp.tsval",
    "tls.handshake.type",
    "tcp.analysis.retransmission",
]

KIND = {2: "MSS", 4: "SACK_PERM", 8: "TS", 3: "WS", 5: "SACK", 34: "TFO"}


def pct(v, q):
    if not v:
        return None
    s = sorted(v)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


class Stream:
    def __init__(self):
        self.syns = []  # client SYN times
        self.synacks = []  # (time, opts, mss, ws, tsval)
        self.ack = None  # client's first ACK without SYN
        self.ch = None  # first ClientHello
        self.chs = 0  # client data retransmissions before the ServerHello
        self.ch_rtx = []  # their times
        self.sh = None  # first ServerHello
        self.rst = False
        self.srv_next = None  # (time, tsval) of the server's first non-SYN segment


def read(path, port):
    cmd = ["tshark", "-r", path, "-Y", f"tcp.port == {port}", "-T", "fields"]
    for f in FIELDS:
        cmd += ["-e", f]
    cmd += ["-E", "occurrence=a", "-E", "aggregator=,", "-E", "separator=\t"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    streams = collections.defaultdict(Stream)
    for line in out.splitlines():
        c = line.split("\t")
        if len(c) < len(FIELDS) or not c[4]:
            continue
        t = float(c[0])
        st = streams[int(c[4])]
        from_client = int(c[3]) == port
        syn, ack, rst = c[5] == "1", c[6] == "1", c[7] == "1"
        hs = [int(x) for x in c[13].split(",") if x]
        if rst:
            st.rst = True
        if syn and not ack and from_client:
            st.syns.append(t)
        elif syn and ack and not from_client:
            kinds = tuple(int(k) for k in c[9].split(",") if k and int(k) != 1)
            mss = int(c[10]) if c[10] else None
            ws = int(c[11]) if c[11] else None
            tsval = int(c[12].split(",")[0]) if c[12] else None
            st.synacks.append((t, kinds, mss, ws, tsval))
        elif from_client and ack and st.ack is None and st.syns:
            st.ack = t
        elif not from_client and not syn and st.srv_next is None and c[12]:
            st.srv_next = (t, int(c[12].split(",")[0]))
        if from_client and 1 in hs and st.ch is None:
            st.ch = t
        # the client's data resent before the ServerHello: its ClientHello
        # (tshark does not dissect TLS in a retransmission)
        if from_client and c[14] and int(c[8] or 0) > 0 and st.sh is None:
            st.chs += 1
            st.ch_rtx.append(t)
        if not from_client and 2 in hs and st.sh is None:
            st.sh = t
    return {k: v for k, v in streams.items() if v.syns}


def optset(kinds, mss, ws):
    parts = []
    for k in kinds:
        n = KIND.get(k, str(k))
        if k == 2:
            n += f"={mss}"
        if k == 3:
            n += f"={ws}"
        parts.append(n)
    return ",".join(parts) or "none"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capture")
    ap.add_argument("--port", type=int, default=443)
    ap.add_argument("--bin-ms", type=float, default=250.0)
    a = ap.parse_args()
    streams = read(a.capture, a.port)
    ss = list(streams.values())
    n = len(ss)
    print(f"capture {a.capture}")
    print(
        f"connections {n}: {sum(1 for s in ss if s.sh)} with a ServerHello, "
        f"{sum(1 for s in ss if s.synacks)} with a SYN-ACK, {sum(1 for s in ss if s.rst)} reset"
    )

    # SYN retransmissions
    rtx = [(s.syns[0], t) for s in ss for t in s.syns[1:]]
    print(
        f"SYN retransmissions {len(rtx)} in {sum(1 for s in ss if len(s.syns) > 1)} streams"
    )
    if rtx:
        delays = collections.Counter(round(t - t0, 1) for t0, t in rtx)
        print("  delay after the first SYN (s): " + ", ".join(
            f"{d:g}: {c}" for d, c in sorted(delays.items())))
        bins = collections.Counter(int(t * 10) for _, t in rtx)
        busy = sorted(bins.items())
        top = sorted(bins.values(), reverse=True)
        print(
            f"  per 100 ms: {len(bins)} intervals hold them; the busiest 5 hold "
            f"{sum(top[:5])} ({100 * sum(top[:5]) / len(rtx):.0f} %), max {top[0]} in one"
        )
        # each 100 ms with a resent or an unanswered SYN: the resent SYNs,
        # the first SYNs sent, those answered within 50 ms (promptly) and
        # those the server never answered (dropped: the client resent them)
        first_syn = collections.Counter(int(s.syns[0] * 10) for s in ss)
        prompt = collections.Counter(
            int(s.syns[0] * 10)
            for s in ss
            if s.synacks and s.synacks[0][0] - s.syns[0] < 0.05
        )
        dropped = collections.Counter(int(s.syns[0] * 10) for s in ss if len(s.syns) > 1)
        keys = sorted(set(bins) | set(dropped))
        print("  per 100 ms (t: resent SYNs | first SYNs sent, answered within 50 ms, resent):")
        line = []
        for k in keys:
            line.append(f"{k / 10:.1f}: {bins.get(k, 0)} | {first_syn.get(k, 0)}, "
                        f"{prompt.get(k, 0)}, {dropped.get(k, 0)}")
        for i in range(0, len(line), 4):
            print("    " + ";  ".join(line[i:i + 4]))
    chr = [s for s in ss if s.chs > 0]
    d = [1000 * (t - s.ch) for s in chr if s.ch is not None for t in s.ch_rtx[:1]]
    print(f"ClientHello retransmissions {sum(s.chs for s in chr)} in {len(chr)} streams"
          + (f"; the first {fmt(pct(d, 0.5), 0)} ms after the ClientHello (p50; "
             f"min {min(d):.0f}, max {max(d):.0f})" if d else ""))
    first = [s.synacks[0][0] - s.syns[0] for s in ss if s.synacks and len(s.syns) == 1]
    late_first = [s for s in ss if s.synacks and len(s.syns) > 1]
    print(
        f"SYN→SYN-ACK of streams answered at their first SYN ({len(first)}): "
        f"p50 {fmt(1000 * pct(first, 0.5) if first else None, 2)} ms, "
        f"p99 {fmt(1000 * pct(first, 0.99) if first else None, 2)} ms, "
        f"max {fmt(1000 * max(first) if first else None, 2)} ms; "
        f"answered only after a retransmitted SYN: {len(late_first)}"
    )
    # SYN-ACKs after the client's final ACK
    # (2 ms: the capture may order a SYN-ACK a few µs after the ACK it drew)
    after = [
        (s, sa)
        for s in ss
        for sa in s.synacks
        if s.ack is not None and sa[0] > s.ack + 0.002
    ]
    if after:
        d = [sa[0] - s.ack for s, sa in after]
        print(
            f"SYN-ACKs after the client's final ACK {len(after)} in "
            f"{len({id(s) for s, _ in after})} streams; delay after the ACK "
            f"p50 {pct(d, 0.5):.2f} s, max {max(d):.2f} s"
        )
    else:
        print("SYN-ACKs after the client's final ACK 0")

    # A Linux SYN cookie's TSval is the server's clock rounded down to a
    # multiple of 64 ms plus the client's options (wscale in bits 0-3,
    # SACK bit 4, ECN bit 5), then the connection's random offset: it lags
    # the connection's next TSval by up to 63 ms more than the time between
    # them; a normal SYN-ACK's does not (±2 ms).
    def cls(s, i, sa):
        if s.ack is not None and sa[0] > s.ack + 0.002:
            return "after final ACK"
        if i > 0:
            return "retransmitted SYN-ACK"
        if len([t for t in s.syns if t < sa[0]]) > 1:
            return "to a retransmitted SYN"
        return "to the first SYN"

    classes = collections.defaultdict(collections.Counter)
    lag = collections.defaultdict(collections.Counter)
    low = collections.defaultdict(collections.Counter)
    for s in ss:
        for i, sa in enumerate(s.synacks):
            c = cls(s, i, sa)
            o = optset(sa[1], sa[2], sa[3])
            classes[c][o] += 1
            nxt = s.srv_next
            if sa[4] is None or nxt is None or nxt[0] < sa[0]:
                continue
            if any(sb[0] > sa[0] and sb[0] <= nxt[0] for sb in s.synacks):
                continue  # a later SYN-ACK is the one the next segment follows
            x = ((nxt[1] - sa[4]) & 0xFFFFFFFF) - 1000 * (nxt[0] - sa[0])
            k = "in step (±2 ms)" if abs(x) <= 2 else (
                "behind 3-64 ms" if 2 < x <= 65 else "other")
            lag[(c, o)][k] += 1
            if k == "behind 3-64 ms":
                low[(c, o)][sa[4] & 63] += 1
    print("SYN-ACK option sets:")
    for c, cnt in classes.items():
        print(f"  {c}: " + "; ".join(f"{o} ×{k}" for o, k in cnt.most_common()))
    if lag:
        print("SYN-ACK TSval against the server's next segment on the connection "
              "(its TSval step minus the time between them):")
        for (c, o), cnt in lag.items():
            extra = ""
            if low.get((c, o)):
                extra = "; TSval & 63 of those behind: " + ", ".join(
                    f"0x{v:02x} ×{n}" for v, n in low[(c, o)].most_common(4))
            print(f"  {c} [{o}]: " + "; ".join(
                f"{k} ×{v}" for k, v in cnt.most_common()) + extra)

    # handshake processing per interval
    b = a.bin_ms / 1000.0
    hs = sorted((s.ch, s.sh) for s in ss if s.ch is not None and s.sh is not None)
    if not hs:
        return
    end = max(sh for _, sh in hs)
    nb = int(end / b) + 1
    per = collections.defaultdict(list)
    for ch, sh in hs:
        per[int(ch / b)].append(1000 * (sh - ch))
    # in progress: +1 at ClientHello, −1 at ServerHello (or at the end)
    ev = []
    for s in ss:
        if s.ch is not None:
            ev.append((s.ch, 1))
            ev.append((s.sh if s.sh is not None else end, -1))
    ev.sort()
    area = [0.0] * nb
    mx = [0] * nb
    level, last = 0, 0.0
    for t, d in ev:
        # spread level over [last, t)
        x = last
        while x < t:
            i = int(x / b)
            if i >= nb:
                break
            y = min(t, (i + 1) * b)
            area[i] += level * (y - x)
            mx[i] = max(mx[i], level)
            x = y
        level += d
        last = t
        i = min(int(t / b), nb - 1)
        mx[i] = max(mx[i], level)
    # the same against the handshakes in progress when the ClientHello left
    chs = sorted(s.ch for s in ss if s.ch is not None)
    shs = sorted(s.sh for s in ss if s.sh is not None)
    by_level = collections.defaultdict(list)
    edges = [0, 5, 10, 25, 50, 100, 250, 500, 1000]
    for ch, sh in hs:
        n_in = bisect.bisect_left(chs, ch) - bisect.bisect_left(shs, ch)
        k = max(e for e in edges if e <= n_in)
        by_level[k].append(1000 * (sh - ch))
    print("ServerHello − ClientHello by the handshakes in progress when the ClientHello left:")
    for k in sorted(by_level):
        v = by_level[k]
        print(f"  {k:>4}+: n {len(v):5d}  p50 {fmt(pct(v, 0.5)):>7} ms  p99 {fmt(pct(v, 0.99)):>7} ms")
    rtt = collections.defaultdict(list)
    for s in ss:
        if s.synacks and len(s.syns) == 1:
            rtt[int(s.syns[0] / b)].append(1000 * (s.synacks[0][0] - s.syns[0]))
    print(
        f"ServerHello − ClientHello per stream by ClientHello time ({a.bin_ms:g} ms intervals); "
        "in progress = ClientHello sent, no ServerHello yet; SYN RTT = SYN→SYN-ACK p50"
    )
    print(f"{'t (s)':>6} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
          f"{'inprog mean':>11} {'max':>5} {'SYN RTT':>8}")
    for i in range(nb):
        v = per.get(i, [])
        if not v and area[i] == 0:
            continue
        print(
            f"{i * b:6.2f} {len(v):5d} {fmt(pct(v, 0.5)):>8} {fmt(pct(v, 0.99)):>8} "
            f"{fmt(max(v) if v else None):>8} {area[i] / b:11.1f} {mx[i]:5d} "
            f"{fmt(statistics.median(rtt[i]) if rtt.get(i) else None, 2):>8}"
        )


if __name__ == "__main__":
    sys.exit(main())
