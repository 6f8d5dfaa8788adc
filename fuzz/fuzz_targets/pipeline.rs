//! The whole analysis pipeline (capture → wire → flow → proto → analysis →
//! detectors → report) over arbitrary bytes: it must never panic. Inputs
//! without a capture header get a pcap header prepended half of the time so
//! the fuzzer reaches the flow and analysis layers quickly.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline;

/// pcap, µs, little-endian, snaplen 262144, Ethernet.
const PCAP_HEADER: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0,
];

fuzz_target!(|data: &[u8]| {
    let mut input = Vec::with_capacity(data.len() + 24);
    if data.first().is_some_and(|b| b & 1 == 1) {
        input.extend_from_slice(&PCAP_HEADER);
        input.extend_from_slice(&data[1..]);
    } else {
        input.extend_from_slice(data);
    }
    let Ok(mut reader) = CaptureReader::new(Box::new(Cursor::new(input))) else {
        return;
    };
    let _ = pipeline::run(&mut reader, &mut |c| drop(c), &mut |_| {});
});
