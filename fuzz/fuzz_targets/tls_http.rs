//! Arbitrary bytes as the two directions of one TCP connection, cut into
//! random chunks and gaps, fed to the TLS and HTTP trackers. Nothing may
//! panic, and the trackers' own invariants must hold.
//!
//! Input: a sequence of operations `[ctl, len, data…]`. `ctl` bit 0 picks
//! the sender (client/server), bit 1 makes it a gap of `len × 64` bytes
//! instead of `len` data bytes, bit 2 restarts the chunk at an overlapping
//! offset (a retransmission), bit 3 closes the direction (HTTP `end`), bit 4
//! jumps to an absurd offset (near 2^62 or 2^64).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rttlens_core::base::side::{FrameRef, Side};
use rttlens_core::base::time::Timestamp;
use rttlens_core::proto::http::HttpTracker;
use rttlens_core::proto::tls::{TlsTracker, RECORD_DETAIL_CAP};

fuzz_target!(|data: &[u8]| {
    let mut tls = TlsTracker::new();
    let mut http = HttpTracker::new();
    let mut next = [0u64; 2];
    let mut frame = 0u64;
    let mut rest = data;
    while let [ctl, len, tail @ ..] = rest {
        let side = if ctl & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        };
        let i = side.index();
        frame += 1;
        if ctl & 2 != 0 {
            let gap = u64::from(*len) * 64;
            tls.gap(side, next[i], gap);
            http.gap(side, next[i], gap);
            next[i] = next[i].saturating_add(gap);
            rest = tail;
            continue;
        }
        let n = usize::from(*len).min(tail.len());
        let (chunk, after) = tail.split_at(n);
        rest = after;
        let offset = if ctl & 16 != 0 {
            if ctl & 32 != 0 {
                u64::MAX - u64::from(*len)
            } else {
                (1 << 62) - u64::from(*len)
            }
        } else if ctl & 4 != 0 {
            next[i].saturating_sub(u64::from(*len / 2))
        } else {
            next[i]
        };
        let at = FrameRef {
            frame,
            ts: Timestamp::from_nanos(frame as i64 * 1000),
        };
        tls.push(side, offset, chunk, at);
        http.push(side, offset, chunk, at);
        next[i] = next[i].max(offset.saturating_add(n as u64));
        if ctl & 8 != 0 {
            http.end(side);
        }
    }

    let s = tls.summary();
    for d in [&s.client, s.server()] {
        assert!(d.records.len() <= RECORD_DETAIL_CAP);
        assert!(d.totals.all.count >= d.records.len() as u64);
        for w in d.records.windows(2) {
            assert_eq!(w[0].end_offset(), w[1].offset);
        }
    }
    if let Some(h) = s.handshake() {
        assert_eq!(
            h.round_trips,
            h.kind.round_trips() + u8::from(h.hello_retry)
        );
    }
    let _ = (
        tls.is_tls(),
        s.resumption_offered(),
        s.resumption_accepted(),
        s.sni(),
        s.alpn_selected(),
        format!("{s:?}"),
    );

    let _ = (
        http.is_http(),
        http.upgraded(),
        format!("{:?}", http.exchanges()),
    );
    assert!(http.exchanges().len() as u64 <= http.exchange_count());
    for (i, ex) in http.exchanges().iter().enumerate() {
        assert_eq!(ex.index, i as u64);
    }
});
