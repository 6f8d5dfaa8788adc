//! The whole analysis pipeline (capture → wire → flow → proto → analysis →
//! detectors → report) over arbitrary bytes: it must never panic. Inputs
//! without a capture header get a pcap header prepended half of the time so
//! the fuzzer reaches the flow and analysis layers quickly.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline;

mod input;

fuzz_target!(|data: &[u8]| {
    let input = input::capture(data);
    let Ok(mut reader) = CaptureReader::new(Box::new(Cursor::new(input))) else {
        return;
    };
    let _ = pipeline::run(&mut reader, &mut |c| drop(c), &mut |_| {});
});
