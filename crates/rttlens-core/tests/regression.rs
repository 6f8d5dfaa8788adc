//! Inputs that once broke the pipeline (found by `cargo fuzz run pipeline`),
//! kept so they never do again. Each is fed the way the fuzz target feeds it.

use std::io::Cursor;

use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline;

/// pcap, µs, little-endian, snaplen 262144, Ethernet (as in fuzz_targets/pipeline.rs).
const PCAP_HEADER: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 1, 0, 0, 0,
];

/// Run the pipeline over a fuzz input; returns the connections reported.
fn run_fuzz_input(data: &[u8]) -> u64 {
    let mut input = Vec::new();
    if data.first().is_some_and(|b| b & 1 == 1) {
        input.extend_from_slice(&PCAP_HEADER);
        input.extend_from_slice(&data[1..]);
    } else {
        input.extend_from_slice(data);
    }
    let Ok(mut reader) = CaptureReader::new(Box::new(Cursor::new(input))) else {
        return 0;
    };
    let mut n = 0;
    let _ = pipeline::run(&mut reader, &mut |_| n += 1, &mut |_| {});
    n
}

/// Garbage timestamps gave an RTT near i64::MAX ns; the think-time
/// confidence multiplied it by 4 and overflowed.
#[test]
fn absurd_rtt_does_not_overflow_think_time() {
    let n = run_fuzz_input(include_bytes!("testdata/fuzz-think-time-overflow.bin"));
    assert!(n >= 1, "the input holds at least one connection");
}
