//! The whole analysis pipeline (capture → wire → flow → proto → analysis →
//! detectors → report) over arbitrary bytes: it must never panic, and the
//! parallel pipeline (`--threads`) must give the reports and summary of the
//! serial one. Inputs without a capture header get a pcap header prepended
//! half of the time so the fuzzer reaches the flow and analysis layers
//! quickly. cargo-fuzz builds with debug assertions, so the engine's
//! self-check (`detect::self_check`: costs within the connection, evidence
//! in it and in order, MSS plausible, flight within what was sent) runs on
//! every connection and a violation is a crash the fuzzer reports. The key
//! logs of the Illustrated TLS 1.2 and 1.3 connections are in the key store
//! (a byte of the input picks none, one or both), so their captures among
//! the seeds drive the decryptor and the HTTP trackers behind it. Run with `-detect_leaks=0`: LeakSanitizer reports the
//! channel context std keeps per thread (the parallel pipeline's threads
//! block on channels), not a leak of ours.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use rttlens_core::capture::CaptureReader;
use rttlens_core::model::Connection;
use rttlens_core::pipeline::{self, Options};

mod input;

/// The Illustrated TLS connections' key logs (`../shared/captures/public`).
const KEYLOGS: [&[u8]; 2] = [
    include_bytes!("../../../shared/captures/public/illustrated_tls12.keylog"),
    include_bytes!("../../../shared/captures/public/illustrated_tls13.keylog"),
];

fn run(input: &[u8], threads: usize, keys: u8) -> Option<String> {
    let mut reader = CaptureReader::new(Box::new(Cursor::new(input.to_vec()))).ok()?;
    for (i, log) in KEYLOGS.iter().enumerate() {
        if keys & (1 << i) != 0 {
            reader.key_store().add(log);
        }
    }
    let mut conns = Vec::new();
    let options = Options {
        threads,
        ..Options::default()
    };
    // each record as the JSON of its transport's report
    let mut on_conn = |c| {
        conns.push(match c {
            Connection::Tcp(c) => serde_json::to_string(&c),
            Connection::Quic(q) => serde_json::to_string(&q),
        })
    };
    let sum = pipeline::run_with(&mut reader, &options, &mut on_conn, &mut |_| {});
    let sum = sum.ok()?;
    let conns: Vec<String> = conns
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("reports serialize");
    Some(serde_json::to_string(&(conns, sum)).expect("reports serialize"))
}

fuzz_target!(|data: &[u8]| {
    let keys = data.last().map_or(0, |b| b & 3);
    let input = input::capture(data);
    let serial = run(&input, 1, keys);
    let parallel = run(&input, 3, keys);
    assert_eq!(serial, parallel, "--threads 3 differs from --threads 1");
});
