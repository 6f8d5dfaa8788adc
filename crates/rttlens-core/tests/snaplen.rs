//! Captures taken with a small snapshot length (issue 21): every capture of
//! `../shared/captures` cut to 96 bytes a frame (`editcap -s 96`, as
//! `tcpdump -s 96` would have taken it) must keep every finding the TCP
//! layer proves, with the same cost, and the server's think time, which a
//! request/response turn proves at the TCP level without reading a byte of
//! the protocol. What needs the payload (TLS handshake kinds, large
//! records) may go, and the cut copy says why in a note.
//!
//! Needs `editcap` (Debian wireshark-common, installed with tshark by
//! `scripts/deps test`); FAILS (never skips) naming what is missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rttlens_core::capture::CaptureReader;
use rttlens_core::detect::{think_time, HEADER_ONLY};
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline;

/// Snapshot length of the cut copies (bytes a frame): Ethernet, IPv4 and a
/// TCP header with timestamps leave 30 bytes of payload, IPv6 10.
const SNAPLEN: &str = "96";

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures")
}

fn captures() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in ["itts", "public"] {
        let d = shared().join(dir);
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: the tests need ../shared/captures beside the repository",
                d.display()
            )
        });
        v.extend(
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().is_some_and(|x| {
                        ["pcap", "pcapng", "cap"].contains(&x.to_string_lossy().as_ref())
                    })
                }),
        );
    }
    v.sort();
    assert!(
        v.len() >= 30,
        "only {} captures under {}",
        v.len(),
        shared().display()
    );
    v
}

fn reports(path: &Path) -> Vec<ConnReport> {
    let mut reader = CaptureReader::open(path).expect("readable capture");
    let mut out = Vec::new();
    pipeline::run(&mut reader, &mut |r| out.extend(r.into_tcp()), &mut |_| {}).expect("analysed");
    out.sort_by_key(|r| r.index);
    out
}

/// (connection, finding id) → cost in ms.
fn findings(reports: &[ConnReport]) -> BTreeMap<(u64, &'static str), f64> {
    reports
        .iter()
        .flat_map(|r| r.findings.iter().map(move |f| ((r.index, f.id), f.cost.ms)))
        .collect()
}

/// Whether connection `conn`'s `server-think-time` was timed at a turn of
/// the TCP level (no application layer read).
fn timed_at_tcp(reports: &[ConnReport], conn: u64) -> bool {
    reports
        .iter()
        .filter(|r| r.index == conn)
        .flat_map(|r| &r.findings)
        .filter(|f| f.id == think_time::ID_SERVER)
        .any(|f| f.facts.str("timed_from") == "tcp-turn")
}

fn cut(path: &Path, dir: &Path) -> PathBuf {
    let out = dir.join(path.file_name().expect("file name"));
    let o = Command::new("editcap")
        .args(["-s", SNAPLEN])
        .arg(path)
        .arg(&out)
        .output()
        .unwrap_or_else(|e| {
            panic!("editcap does not run ({e}): run scripts/deps test (Debian package wireshark-common)")
        });
    assert!(
        o.status.success(),
        "editcap -s {SNAPLEN} {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn a_small_snapshot_length_keeps_what_the_tcp_layer_proves() {
    let dir = std::env::temp_dir().join(format!("rttlens-snaplen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let mut problems = Vec::new();
    let (mut kept, mut think_kept, mut cut_conns, mut app_only) = (0, 0, 0, 0);
    for path in captures() {
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        let full = reports(&path);
        let copy = reports(&cut(&path, &dir));
        let (f, c) = (findings(&full), findings(&copy));
        for ((conn, id), cost) in &f {
            if !HEADER_ONLY.contains(id) {
                continue;
            }
            // a think time may be timed on another turn once the
            // application layer is unreadable: its presence is checked
            let tcp = *id != think_time::ID_SERVER;
            match c.get(&(*conn, *id)) {
                // a think time the full capture timed at the application
                // layer (the request's last byte to the response's first,
                // past a NewSessionTicket) may be said less, never wrong:
                // the TCP level cannot tell that ticket from the answer
                None if !tcp && !timed_at_tcp(&full, *conn) => app_only += 1,
                None => problems.push(format!(
                    "{name} connection {conn}: {id} ({cost:.1} ms) lost in the cut copy"
                )),
                // the same packets, the same cost (within timing rounding)
                Some(k) if tcp && (k - cost).abs() > 0.5_f64.max(cost * 0.01) => {
                    problems.push(format!(
                        "{name} connection {conn}: {id} costs {k:.1} ms cut, {cost:.1} ms whole"
                    ))
                }
                Some(_) if tcp => kept += 1,
                Some(_) => think_kept += 1,
            }
        }
        // what the cut took away is said, per connection
        for r in &copy {
            if r.findings.is_empty() && r.notes.is_empty() {
                continue;
            }
            if r.notes.iter().any(|n| n.contains("snapshot length")) {
                cut_conns += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "cut to {SNAPLEN} B: {kept} TCP-level findings and {think_kept} server think times kept \
         ({app_only} timed at the application layer not said); \
         {cut_conns} connections say their payloads were cut"
    );
    assert!(
        kept >= 20,
        "only {kept} TCP-level findings compared: the check says little"
    );
    assert!(
        think_kept >= 10,
        "only {think_kept} server think times compared"
    );
    assert!(cut_conns >= 20, "only {cut_conns} connections note the cut");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_long_wait_after_the_servers_ack_is_think_time_without_the_payload() {
    // zeek's http-100-continue: the request ends at frame 10, the server's
    // ACK follows, and its answer comes 108 ms after the request, 60 ms
    // beyond the 48 ms path (docs/corpus.md). Cut to 96 bytes, no HTTP is
    // readable but the request line; the turn still proves the wait.
    let dir = std::env::temp_dir().join(format!("rttlens-snaplen-turn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let path = shared().join("public/zeek_http-100-continue.pcap");
    let whole = reports(&path);
    let copy = reports(&cut(&path, &dir));
    let _ = std::fs::remove_dir_all(&dir);
    let think = |rs: &[ConnReport]| {
        rs[0]
            .findings
            .iter()
            .find(|f| f.id == "server-think-time")
            .map(|f| {
                (
                    f.cost.ms,
                    f.evidence.iter().map(|e| e.frame).collect::<Vec<_>>(),
                )
            })
    };
    let (w, c) = (think(&whole), think(&copy));
    let (wc, _) = w
        .clone()
        .expect("the whole capture names the server's think time");
    let (cc, frames) = c.unwrap_or_else(|| {
        panic!(
            "the cut copy names no server think time: {:?} / notes {:?}",
            copy[0].findings.iter().map(|f| f.id).collect::<Vec<_>>(),
            copy[0].notes
        )
    });
    assert!(
        (45.0..=75.0).contains(&cc),
        "60 ms ± 25 % expected, got {cc:.1} ms"
    );
    assert!((cc - wc).abs() <= 1.0, "cut {cc:.1} ms, whole {wc:.1} ms");
    assert!(
        frames.len() >= 2 && frames.windows(2).all(|w| w[0] < w[1]),
        "{frames:?}"
    );
    assert!(
        copy[0].notes.iter().any(|n| n.contains("snapshot length")),
        "{:?}",
        copy[0].notes
    );
}
