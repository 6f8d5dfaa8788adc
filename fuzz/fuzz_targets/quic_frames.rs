//! Arbitrary bytes as a decrypted QUIC packet payload, walked frame by
//! frame (RFC 9000 §19). Nothing may panic, the walk ends after at most
//! one error, every frame's borrowed bytes lie inside the payload, and an
//! ACK frame's ranges descend without underflow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rttlens_core::quic::frame::{frames, is_ack_eliciting_payload, Frame};

fuzz_target!(|data: &[u8]| {
    let mut errors = 0;
    let mut consumed = 0usize;
    for f in frames(data) {
        match f {
            Ok(f) => {
                let _ = (f.name(), f.is_ack_eliciting(), format!("{f:?}"));
                match f {
                    Frame::Ack {
                        largest, ranges, ..
                    } => {
                        let mut prev: Option<u64> = None;
                        for (lo, hi) in ranges {
                            assert!(lo <= hi && hi <= largest);
                            if let Some(p) = prev {
                                assert!(hi + 1 < p, "ranges overlap or touch");
                            }
                            prev = Some(lo);
                        }
                    }
                    Frame::Padding { len } => consumed += len,
                    Frame::Stream { data: d, .. }
                    | Frame::Crypto { data: d, .. }
                    | Frame::Datagram { data: d } => {
                        assert!(d.len() <= data.len());
                        consumed += d.len();
                    }
                    _ => {}
                }
            }
            Err(e) => {
                errors += 1;
                let _ = e.to_string();
            }
        }
    }
    assert!(errors <= 1);
    assert!(consumed <= data.len());
    let _ = is_ack_eliciting_payload(data);
});
