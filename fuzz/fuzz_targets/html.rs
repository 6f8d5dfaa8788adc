//! The HTML report over arbitrary bytes: the pipeline keeps every packet
//! (`Options::trace`) and every connection is drawn (all five graphs and
//! the page); nothing may panic, whatever times, sequence numbers and
//! windows the packets carry. Inputs get a pcap header prepended half of
//! the time, as in `pipeline`.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline::{self, Options};
use rttlens_report::html::{HtmlOptions, HtmlRenderer};
use rttlens_report::{Renderer, Source};

mod input;

fuzz_target!(|data: &[u8]| {
    let input = input::capture(data);
    let Ok(mut reader) = CaptureReader::new(Box::new(Cursor::new(input))) else {
        return;
    };
    let opts = HtmlOptions {
        top: usize::MAX,
        // the IO interval from the input too: 1 µs to ~65 ms
        io_interval_ms: f64::from(data.get(1).copied().unwrap_or(1).max(1)) * 0.256,
        ..HtmlOptions::default()
    };
    let mut r = HtmlRenderer::new(opts);
    let mut sink = std::io::sink();
    let _ = r.begin(
        &mut sink,
        &Source {
            name: "fuzz".into(),
        },
    );
    let Ok(sum) = pipeline::run_with(
        &mut reader,
        &Options {
            trace: true,
            ..Options::default()
        },
        &mut |c| {
            let _ = r.connection(&mut std::io::sink(), c);
        },
        &mut |_| {},
    ) else {
        return;
    };
    let _ = r.end(&mut sink, &sum);
});
