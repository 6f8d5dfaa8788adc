//! The JSON renderer's own serializer (`json::ser`) against serde_json, on
//! every connection of every shared capture: the same bytes, record by
//! record (with the key logs beside the captures, so decrypted requests
//! and HTTP/2 streams are in), and the capture summaries.

use std::path::{Path, PathBuf};

use rttlens_core::capture::CaptureReader;
use rttlens_core::model::Connection;
use rttlens_core::pipeline::{self, Options};
use rttlens_report::json::{self, ConnJson, QuicJson, SummaryJson};

fn captures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures");
    assert!(
        root.exists(),
        "{} is missing: the tests need ../shared/captures",
        root.display()
    );
    let mut out = Vec::new();
    for dir in ["itts", "public"] {
        for e in std::fs::read_dir(root.join(dir)).expect("read_dir") {
            let p = e.expect("entry").path();
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            if matches!(ext, "pcap" | "pcapng" | "cap") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 20, "only {} captures found", out.len());
    out
}

fn keylog(p: &Path) -> Option<PathBuf> {
    let k = p.with_extension("keylog");
    k.exists().then_some(k)
}

/// `ours` is byte for byte serde_json's `theirs`; `what` names the record
/// when it is not.
fn same(ours: &[u8], theirs: &[u8], what: impl FnOnce() -> String) {
    assert!(
        ours == theirs,
        "{} differs:\n ours: {}\n serde_json: {}",
        what(),
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(theirs)
    );
}

/// `p` opened, with the key log beside it when there is one.
fn open(p: &Path) -> CaptureReader {
    let reader = CaptureReader::open(p).expect("open");
    if let Some(k) = keylog(p) {
        reader.key_store().add(&std::fs::read(k).expect("key log"));
    }
    reader
}

#[test]
fn every_record_of_the_shared_captures_is_written_as_serde_json_writes_it() {
    let (mut conns, mut bytes) = (0usize, 0usize);
    for path in captures() {
        let mut reader = open(&path);
        let options = Options::default();
        let mut check = |c: Connection| {
            let mut ours = Vec::new();
            json::write_connection(&mut ours, &c).expect("ours");
            let theirs = match &c {
                Connection::Tcp(t) => serde_json::to_vec(&ConnJson::new(t)),
                Connection::Quic(q) => serde_json::to_vec(&QuicJson::new(q)),
            }
            .expect("serde_json");
            same(&ours, &theirs, || {
                format!("{}: a connection's JSON", path.display())
            });
            conns += 1;
            bytes += ours.len();
        };
        let summary =
            pipeline::run_with(&mut reader, &options, &mut check, &mut |_| {}).expect("analyse");
        let mut ours = Vec::new();
        json::write_summary(&mut ours, &summary).expect("ours");
        let theirs = serde_json::to_vec(&SummaryJson::new(&summary)).expect("serde_json");
        assert!(
            ours == theirs,
            "{}: the summary's JSON differs",
            path.display()
        );
    }
    assert!(conns > 50, "only {conns} connections");
    assert!(bytes > 100_000, "only {bytes} bytes of JSON");
}

/// Written ahead on the flow threads (`Options::prerender`, as `analyze
/// --format json|jsonl` does with more than one thread) and copied with the
/// serial index put in: serde_json's bytes of the renumbered report.
#[test]
fn records_written_ahead_on_the_flow_threads_are_serde_json_s_bytes_with_the_serial_index() {
    let (mut ahead, mut renumbered) = (0usize, 0usize);
    for path in captures() {
        for threads in [2, 3] {
            let mut reader = open(&path);
            let options = Options {
                threads,
                prerender: Some(json::prerender),
                ..Options::default()
            };
            let mut check = |c: Connection| {
                let Connection::Tcp(t) = &c else { return };
                let r = t.rendered.as_ref().expect("a TCP record written ahead");
                ahead += 1;
                renumbered += usize::from(r.index != t.index);
                let mut ours = Vec::new();
                json::write_connection(&mut ours, &c).expect("ours");
                let theirs = serde_json::to_vec(&ConnJson::new(t)).expect("serde_json");
                same(&ours, &theirs, || {
                    format!(
                        "{} on {threads} threads: a record written ahead",
                        path.display()
                    )
                });
            };
            pipeline::run_with(&mut reader, &options, &mut check, &mut |_| {}).expect("analyse");
        }
    }
    assert!(ahead > 100, "only {ahead} records written ahead");
    // the flow threads' own indexes differ from the serial ones: the
    // copies put the serial one in
    assert!(renumbered > 10, "only {renumbered} records renumbered");
}
