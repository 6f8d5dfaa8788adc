//! Arbitrary bytes as the STREAM frames of one QUIC connection, fed to the
//! HTTP/3 tracker (request, control and QPACK encoder streams, out of
//! order, repeated, overlapping). Nothing may panic, and what it keeps
//! stays within its caps.
//!
//! Input: operations `[ctl, id, off, len, data…]`. `ctl` bit 0 picks the
//! sender, bit 1 sets FIN, bit 2 sends a RESET_STREAM instead; `id` is the
//! stream ID; `off × 8` the stream offset. Half of the inputs (first byte
//! odd) open with valid control and encoder streams so that the fuzzer
//! reaches QPACK's dynamic table quickly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rttlens_core::base::side::{FrameRef, Side};
use rttlens_core::base::time::Timestamp;
use rttlens_core::proto::h3::{H3Tracker, STREAM_DETAIL_CAP};
use rttlens_core::proto::Notes;

fuzz_target!(|data: &[u8]| {
    let mut h3 = H3Tracker::new();
    let at = |frame: u64| FrameRef {
        frame,
        ts: Timestamp::from_nanos(frame as i64 * 1000),
    };
    let mut next = [[0u64; 64]; 2];
    if data.first().is_some_and(|c| c & 1 == 1) {
        // control streams: SETTINGS with a 4096-byte table, 100 blocked
        let control = [0x00, 0x04, 0x06, 0x01, 0x50, 0x00, 0x07, 0x40, 0x64];
        h3.stream(Side::Client, 2, 0, &control, false, at(0));
        h3.stream(Side::Server, 3, 0, &control, false, at(0));
        // the client's encoder stream: its type, then capacity 4096
        h3.stream(Side::Client, 6, 0, &[0x02, 0x3f, 0xe1, 0x1f], false, at(0));
        h3.stream(Side::Server, 7, 0, &[0x02, 0x3f, 0xe1, 0x1f], false, at(0));
        next[0][2] = 9;
        next[1][3] = 9;
        next[0][6] = 4;
        next[1][7] = 4;
    }
    let mut frame = 0u64;
    let mut rest = data.get(1..).unwrap_or_default();
    while let [ctl, id, off, len, tail @ ..] = rest {
        let side = if ctl & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        };
        let id = u64::from(*id);
        frame += 1;
        if ctl & 4 != 0 {
            h3.reset(side, id, at(frame));
            rest = tail;
            continue;
        }
        let n = usize::from(*len).min(tail.len());
        let (chunk, after) = tail.split_at(n);
        rest = after;
        // offset 0xff: right after what was sent so far on the stream
        let slot = &mut next[side.index()][(id % 64) as usize];
        let offset = if *off == 0xff {
            *slot
        } else {
            u64::from(*off) * 8
        };
        *slot = (*slot).max(offset + n as u64);
        h3.stream(side, id, offset, chunk, ctl & 2 != 0, at(frame));
    }
    let sum = h3.finish();
    assert!(sum.streams.len() <= STREAM_DETAIL_CAP);
    assert!(sum.streams.windows(2).all(|w| w[0].id < w[1].id));
    for n in &sum.notes {
        assert!(n.items().len() <= Notes::CAP);
    }
    let _ = (serde_json::to_string(&sum).unwrap(), format!("{sum:?}"));
});
