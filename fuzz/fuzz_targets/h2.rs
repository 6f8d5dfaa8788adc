//! Arbitrary bytes as the two directions of one HTTP/2 connection, cut into
//! chunks and gaps, fed to the HTTP/2 tracker (frames, HPACK by
//! loona-hpack, flow-control events). Nothing may panic, and what it keeps
//! stays within its caps.
//!
//! Input: operations `[ctl, len, data…]`. `ctl` bit 0 picks the sender,
//! bit 1 makes it a gap of `len × 16` bytes instead of `len` data bytes,
//! bit 2 starts the client's stream with the connection preface (so the
//! fuzzer need not find its 24 bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rttlens_core::base::side::{FrameRef, Side};
use rttlens_core::base::time::Timestamp;
use rttlens_core::proto::h2::{H2Tracker, FLOW_EVENT_CAP, PREFACE, STREAM_DETAIL_CAP};

fuzz_target!(|data: &[u8]| {
    let mut h2 = H2Tracker::new();
    let mut next = [0u64; 2];
    if data.first().is_some_and(|c| c & 4 != 0) {
        let at = FrameRef {
            frame: 0,
            ts: Timestamp::from_nanos(0),
        };
        h2.push(Side::Client, 0, PREFACE, at);
        next[0] = PREFACE.len() as u64;
    }
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
            let gap = u64::from(*len) * 16;
            h2.gap(side, next[i], gap);
            next[i] += gap;
            rest = tail;
            continue;
        }
        let n = usize::from(*len).min(tail.len());
        let (chunk, after) = tail.split_at(n);
        rest = after;
        let at = FrameRef {
            frame,
            ts: Timestamp::from_nanos(frame as i64 * 1000),
        };
        h2.push(side, next[i], chunk, at);
        next[i] += n as u64;
    }
    let sum = h2.finish();
    assert!(sum.streams.len() <= STREAM_DETAIL_CAP);
    assert!(sum.streams.len() as u64 <= sum.stream_count.max(sum.streams.len() as u64));
    assert!(sum.flow.len() <= FLOW_EVENT_CAP);
    let _ = (sum.lost_frames(), format!("{sum:?}"));
});
