//! Text output shows the costliest connections only; the pipeline judges
//! the others plain, without their sentences (`ShownFloor`). On real
//! captures (`../shared/captures`), with `top` 1 so that most connections
//! fall below the floor: the text is byte for byte the text of a run that
//! judges every connection whole, on one thread and on two; and a plain
//! report differs from the whole one in its sentences only.

use std::path::PathBuf;
use std::sync::Arc;

use rttlens_core::capture::{CaptureReader, CaptureSet, FrameSource};
use rttlens_core::model::{ConnReport, ShownFloor};
use rttlens_core::pipeline::{self, Options};
use rttlens_report::text::TextRenderer;
use rttlens_report::{Renderer, Source};

/// The shared captures with the most connections (13 and 7): small enough
/// for one batch of the threaded pipeline, so plain judging is asked of
/// the one-thread run there.
const CAPTURES: [&str; 2] = ["zeek_http-bro-org.pcap", "sv_ssl-version-negated.pcap"];

fn shared() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures");
    assert!(
        p.exists(),
        "{} is missing: the tests need ../shared/captures",
        p.display()
    );
    p
}

fn capture(name: &str) -> PathBuf {
    shared().join("public").join(name)
}

/// The name [`run`] reads as every shared capture merged on one clock (81
/// connections in 9840 frames: batches enough for the threaded pipeline's
/// merger to raise the floor while its flow threads judge).
const ALL: &str = "every shared capture";

fn every_shared_capture() -> CaptureSet {
    let mut set = CaptureSet::default();
    let mut n = 0;
    for dir in ["public", "itts"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(shared().join(dir))
            .expect("list the shared captures")
            .map(|e| e.expect("entry").path())
            .filter(|p| {
                p.extension()
                    .is_some_and(|e| ["pcap", "pcapng", "cap"].iter().any(|x| e == *x))
            })
            .collect();
        paths.sort();
        for p in paths {
            set.add(&p).expect("open");
            n += 1;
        }
    }
    assert!(n > 30, "only {n} shared captures");
    set
}

/// The text output of `name` with `top` 1, and every report the pipeline
/// handed on; with a floor shared by the renderer and the pipeline when
/// `floor`.
fn run(name: &str, threads: usize, floor: bool) -> (String, Vec<ConnReport>) {
    let mut reader: Box<dyn FrameSource> = if name == ALL {
        Box::new(every_shared_capture())
    } else {
        Box::new(CaptureReader::open(&capture(name)).expect("open"))
    };
    let shown = floor.then(|| Arc::new(ShownFloor::new()));
    let mut r = TextRenderer::new(1, false).with_shown_floor(shown.clone());
    let mut out = Vec::new();
    r.begin(&mut out, &Source { name: name.into() })
        .expect("begin");
    let mut reports = Vec::new();
    let sum = pipeline::run_with(
        reader.as_mut(),
        &Options {
            threads,
            shown_floor: shown,
            ..Default::default()
        },
        &mut |c| {
            reports.push(c.clone());
            r.connection(&mut std::io::sink(), c).expect("connection");
        },
        &mut |_| {},
    )
    .expect("analyse");
    r.end(&mut out, &sum).expect("end");
    (String::from_utf8(out).expect("utf-8"), reports)
}

/// `report` as JSON with its sentences (findings' titles, evidence lines,
/// reasons for a confidence and fixes; the ladder's details) emptied, and
/// how many non-empty sentences were emptied.
fn without_sentences(report: &ConnReport) -> (serde_json::Value, usize) {
    let mut v = serde_json::to_value(report).expect("serialize");
    let mut n = 0;
    let mut empty = |s: &mut serde_json::Value| {
        if s.as_str().is_some_and(|s| !s.is_empty()) {
            n += 1;
        }
        *s = serde_json::Value::String(String::new());
    };
    for f in v["findings"].as_array_mut().into_iter().flatten() {
        empty(&mut f["title"]);
        empty(&mut f["fix"]);
        empty(&mut f["confidence"]["why"]);
        for e in f["evidence"].as_array_mut().into_iter().flatten() {
            empty(&mut e["what"]);
        }
    }
    for p in v["ladder"].as_array_mut().into_iter().flatten() {
        empty(&mut p["detail"]);
    }
    (v, n)
}

/// `name` on `threads` with and without the floor: the same text, reports
/// that differ in their sentences only; how many sentences the floor
/// spared.
fn spared(name: &str, threads: usize) -> usize {
    let (text, whole) = run(name, 1, false);
    let (floored, reports) = run(name, threads, true);
    assert_eq!(
        floored, text,
        "{name}, {threads} thread(s): the text differs with the floor"
    );
    assert_eq!(reports.len(), whole.len(), "{name}: connections");
    let mut spared = 0;
    for (p, w) in reports.iter().zip(&whole) {
        let (pv, pn) = without_sentences(p);
        let (wv, wn) = without_sentences(w);
        assert_eq!(
            pv, wv,
            "{name}, {threads} thread(s), connection {}: the plain report differs beyond its sentences",
            w.index
        );
        assert!(pn <= wn, "{name}, connection {}: more sentences", w.index);
        spared += wn - pn;
    }
    spared
}

#[test]
fn connections_below_the_floor_lose_their_sentences_only() {
    // with `top` 1, the floor rises after 4 connections: later ones below
    // it are judged plain
    for name in CAPTURES {
        assert!(
            spared(name, 1) > 0,
            "{name}: no connection was judged plain"
        );
        spared(name, 2);
    }
    for threads in [1, 2] {
        assert!(
            spared(ALL, threads) > 0,
            "{ALL}, {threads} thread(s): no connection was judged plain"
        );
    }
}
