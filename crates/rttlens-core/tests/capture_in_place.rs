//! A capture read in place (`CaptureReader::from_bytes`, what `rttlens
//! analyze` does with a mapped file) gives what the stream path gives for
//! the same bytes: every frame, note, error and byte count, and the same
//! records through the pipeline on one thread and on two. On every shared
//! capture, on a set of them merged, on captures cut mid-record, and on
//! large made-up ones whose reading grows, compacts and breaks the buffer.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rttlens_core::capture::{
    CaptureBytes, CaptureError, CaptureReader, CaptureSet, FrameSource, Opener,
};
use rttlens_core::pipeline;

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures")
}

/// Every capture under `../shared/captures`, sorted.
fn shared_captures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![shared()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("../shared/captures beside the repository") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p
                .extension()
                .is_some_and(|x| ["pcap", "cap", "pcapng"].iter().any(|c| x == *c))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 30, "only {} shared captures", out.len());
    out
}

/// A frame as read: number, timestamp, link type, bytes, length on the
/// wire, and the snapshot length then.
type FrameFacts = (u64, String, u32, Vec<u8>, u32, Option<u32>);

/// Everything a reader says, frame by frame and at the end.
#[derive(Debug, PartialEq)]
struct Outcome {
    frames: Vec<FrameFacts>,
    error: Option<String>,
    notes: String,
    bytes_read: u64,
    format: String,
    frames_seen: u64,
}

fn outcome(r: Result<CaptureReader, CaptureError>) -> Result<Outcome, String> {
    let mut r = r.map_err(|e| e.to_string())?;
    let mut frames = Vec::new();
    let error = loop {
        match r.next_shared() {
            Ok(Some((f, s))) => {
                assert_eq!(s.bytes(), f.data, "frame {}: shared bytes", f.number);
                frames.push((
                    f.number,
                    format!("{:?}", f.ts),
                    f.link_type.0,
                    f.data.to_vec(),
                    f.orig_len,
                    None,
                ));
                if let Some(last) = frames.last_mut() {
                    last.5 = r.snaplen();
                }
            }
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    Ok(Outcome {
        frames,
        error,
        notes: format!("{:?}", r.notes()),
        bytes_read: r.bytes_read(),
        format: r.format_name(),
        frames_seen: r.frames_seen(),
    })
}

fn streamed(bytes: &[u8]) -> Result<CaptureReader, CaptureError> {
    CaptureReader::new(Box::new(Cursor::new(bytes.to_vec())))
}

fn in_place(bytes: &[u8]) -> Result<CaptureReader, CaptureError> {
    CaptureReader::from_bytes(Arc::new(bytes.to_vec()))
}

fn same_reading(bytes: &[u8], what: &str) -> Result<Outcome, String> {
    let a = outcome(streamed(bytes));
    let b = outcome(in_place(bytes));
    assert!(a == b, "{what}: in place differs from the stream");
    a
}

/// Every record and the summary the pipeline gives, every field printed.
fn records(reader: &mut dyn FrameSource, threads: usize) -> Vec<String> {
    let mut out = Vec::new();
    let summary = pipeline::run_with(
        reader,
        &pipeline::Options {
            threads,
            ..Default::default()
        },
        &mut |c| out.push(format!("{c:?}")),
        &mut |_| {},
    );
    match summary {
        Ok(s) => out.push(format!("{s:?}")),
        Err(e) => out.push(e.to_string()),
    }
    out
}

#[test]
fn every_shared_capture_reads_the_same_in_place() {
    for path in shared_captures() {
        let bytes = std::fs::read(&path).expect("read");
        let what = path.display().to_string();
        let got = same_reading(&bytes, &what).expect(&what);
        assert!(!got.frames.is_empty(), "{what}");
        assert!(in_place(&bytes).expect("open").in_place(), "{what}");
        for threads in [1, 2] {
            let a = records(&mut streamed(&bytes).expect("open"), threads);
            let b = records(&mut in_place(&bytes).expect("open"), threads);
            assert!(a == b, "{what}, {threads} threads: the records differ");
        }
    }
}

/// The opener `rttlens` gives a set, with the file read into memory
/// rather than mapped.
fn open_in_place(path: &Path) -> Result<CaptureReader, CaptureError> {
    CaptureReader::from_bytes(Arc::new(std::fs::read(path)?))
}

#[test]
fn a_set_reads_the_same_in_place() {
    let all = shared_captures();
    let pick = |name: &str| all.iter().find(|p| p.ends_with(name)).cloned().expect(name);
    // two hosts of one capture campaign, and a pcapng beside them
    let files: Vec<PathBuf> = ["itts/pku.cap", "itts/thu.cap", "itts/pku-2.cap"]
        .into_iter()
        .map(pick)
        .chain(
            all.iter()
                .filter(|p| p.extension().is_some_and(|x| x == "pcapng"))
                .take(1)
                .cloned(),
        )
        .collect();
    let set = |opener: Option<Opener>| {
        let mut s = opener.map_or_else(CaptureSet::default, CaptureSet::with_opener);
        for f in &files {
            s.add(f).expect("add");
        }
        s
    };
    for threads in [1, 2] {
        let a = records(&mut set(None), threads);
        let b = records(&mut set(Some(open_in_place)), threads);
        assert!(a.len() > 2, "{a:?}");
        assert!(a == b, "{threads} threads: the merged records differ");
    }
    let frames = |mut s: CaptureSet| {
        let mut v = Vec::new();
        while let Some(f) = s.next_frame().expect("read") {
            v.push((f.number, f.ts, f.data.to_vec()));
        }
        (
            v,
            s.bytes_read(),
            format!("{:?}", s.notes()),
            s.format_name(),
        )
    };
    assert!(frames(set(None)) == frames(set(Some(open_in_place))));
}

/// Where each pcap record starts (little-endian, 16-byte record headers).
fn pcap_records(bytes: &[u8]) -> Vec<usize> {
    let mut at = 24;
    let mut out = Vec::new();
    while let Some(h) = bytes.get(at..at + 16) {
        out.push(at);
        at += 16 + u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
    }
    out
}

#[test]
fn a_capture_cut_mid_record_gives_the_same_note_in_place() {
    for path in shared_captures() {
        let bytes = std::fs::read(&path).expect("read");
        let what = path.display().to_string();
        // mid-record: a third of the way in, and one byte short of the end
        for cut in [bytes.len() / 3 + 5, bytes.len() - 1] {
            let cut_bytes = &bytes[..cut];
            let got = same_reading(cut_bytes, &what).expect(&what);
            assert!(
                got.error
                    .as_deref()
                    .is_some_and(|e| e.contains("truncated")),
                "{what} cut at {cut}: {:?}",
                got.error
            );
            let a = records(&mut streamed(cut_bytes).expect("open"), 2);
            let b = records(&mut in_place(cut_bytes).expect("open"), 2);
            assert!(a == b, "{what} cut at {cut}: the records differ");
            let summary = b.last().expect("summary");
            assert!(summary.contains("truncated"), "{what} cut at {cut}");
        }
    }
}

/// A large pcap made of a shared capture's records over and over (about
/// `mib` MiB).
fn large_pcap(mib: usize) -> Vec<u8> {
    let bytes = std::fs::read(shared().join("itts/pku.cap")).expect("read");
    let records = pcap_records(&bytes);
    let body = &bytes[24..];
    assert!(records.len() > 100 && bytes[..4] == [0xd4, 0xc3, 0xb2, 0xa1]);
    let mut out = bytes[..24].to_vec();
    while out.len() < mib << 20 {
        out.extend_from_slice(body);
    }
    out
}

#[test]
fn the_window_takes_a_stream_s_steps_on_large_broken_captures() {
    let big = large_pcap(6);
    let records = pcap_records(&big);
    same_reading(&big, "large").expect("large");
    let set_caplen = |bytes: &mut Vec<u8>, at: usize, caplen: u32| {
        bytes[at + 8..at + 12].copy_from_slice(&caplen.to_le_bytes());
    };
    // a record past the compaction point claiming more than 64 MiB
    // (malformed: the stream stops where its buffer had got to)
    for (i, caplen) in [
        (records.len() / 2, 70u32 << 20),
        (records.len() / 3, 3 << 20),
    ] {
        let mut b = big.clone();
        set_caplen(&mut b, records[i], caplen);
        let got = same_reading(&b, &format!("caplen {caplen} at record {i}")).expect("open");
        assert!(got.error.is_some());
        // a 3 MiB record: the buffer grew past 1 MiB to hold it
        if caplen == 3 << 20 {
            assert!(got.frames.len() > i, "{}", got.frames.len());
        }
    }
    // cut anywhere near a 1 MiB step
    for cut in [(1 << 20) - 3, (1 << 20) + 5, (2 << 20) + 17, big.len() - 9] {
        let got = same_reading(&big[..cut], &format!("cut at {cut}")).expect("open");
        assert!(got.error.is_some_and(|e| e.contains("truncated")));
    }
    // not a capture, empty, a header alone
    for bytes in [&b"GET / HTTP/1.1\r\n"[..], &[][..], &big[..24], &big[..20]] {
        let a = outcome(streamed(bytes));
        assert_eq!(a, outcome(in_place(bytes)));
    }
}

/// Whole bytes that log what the reader gives back.
struct Logged {
    bytes: Vec<u8>,
    released: Mutex<Vec<usize>>,
    calls: AtomicUsize,
}

impl CaptureBytes for Logged {
    fn bytes(&self) -> &[u8] {
        self.calls.fetch_add(1, Ordering::Relaxed);
        &self.bytes
    }
    fn release_before(&self, offset: usize) {
        self.released.lock().expect("lock").push(offset);
    }
}

#[test]
fn pages_behind_the_reader_are_given_back() {
    let bytes = Arc::new(Logged {
        bytes: large_pcap(40),
        released: Mutex::new(Vec::new()),
        calls: AtomicUsize::new(0),
    });
    let len = bytes.bytes.len();
    let mut r = CaptureReader::from_bytes(bytes.clone()).expect("open");
    let mut last_end = 0usize;
    while let Some((f, s)) = r.next_shared().expect("read") {
        // nothing given back reaches a frame being read (4 MiB behind)
        let released = bytes.released.lock().expect("lock").last().copied();
        assert!(
            released.is_none_or(|at| at + (4 << 20) <= s.start),
            "frame {}",
            f.number
        );
        last_end = s.start + s.len;
    }
    assert!(last_end <= len);
    let released = bytes.released.lock().expect("lock").clone();
    assert!(released.len() >= 5, "{released:?}");
    assert!(released.windows(2).all(|w| w[0] < w[1]), "{released:?}");
    assert!(*released.last().expect("some") >= len - (8 << 20));
}
