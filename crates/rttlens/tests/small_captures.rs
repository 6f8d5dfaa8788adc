//! Small and partial captures (issue 43 item 3): a few frames cut out of a
//! real lab capture (`rttlens lab --keep`, real kernels in network
//! namespaces; root) with tshark and editcap, the way a user brings a
//! snippet of a capture. Where each cut starts and ends is found in the
//! packets (tshark's fields), never written down. Each snippet must still
//! name its cause, or at least what its packets prove, at the cost
//! measured, and say nothing the full capture contradicts:
//!
//! - nine frames around a fast retransmission, seen at the sender: SACKed
//!   duplicate ACKs, then the retransmission; the RTT is unknown, so the
//!   cost is in ms only, however small;
//! - seven frames of a receiver closing its window: its ACKs, the zero
//!   window, the window update, and only then the sender's data;
//! - a slice from the middle of a transfer capped by a small receive
//!   buffer, captured at the sender: the window cap is named from the
//!   flight pinned at the advertised window.
//!
//! FAILS (never skips) when root, the lab's programs, tshark or editcap are
//! missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{analyze_ok, bin, require_tshark, scratch};
use serde_json::Value;

/// Fail with a clear message when the lab cannot run here.
fn require_lab() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!(
            "small-capture tests cut lab captures: they need root, /dev/net/tun and iproute2: {e}"
        );
    }
    for (c, p) in rttlens_lab::scenario::PROGRAMS {
        if let Err(e) = rttlens_lab_net::require_command(c, p) {
            panic!("small-capture tests need {c}: {e}");
        }
    }
    require_tshark();
    let editcap = Command::new("editcap").arg("--version").output();
    assert!(
        editcap.is_ok_and(|o| o.status.success()),
        "small-capture tests cut captures with editcap, which is missing: apt-get install -y tshark"
    );
}

/// `rttlens lab --keep DIR SCENARIO` (which must hold): `DIR/SCENARIO`.
fn lab(scenario: &str) -> PathBuf {
    require_lab();
    let dir = scratch(&format!("small-{scenario}"));
    let out = bin()
        .args(["lab", "--keep"])
        .arg(&dir)
        .arg(scenario)
        .output()
        .expect("run rttlens lab");
    assert!(
        out.status.success(),
        "rttlens lab {scenario} failed (under load, re-run once): {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join(scenario)
}

/// One TCP frame as tshark reads it.
#[derive(Debug, Clone)]
struct Frame {
    number: u64,
    src: String,
    seq: u64,
    ack: u64,
    len: u64,
    window: u64,
    /// Left edges of the SACK blocks (relative sequence numbers).
    sack_le: Vec<u64>,
}

/// Every TCP frame of `cap` (tshark's relative sequence numbers).
fn frames(cap: &Path) -> Vec<Frame> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(cap)
        .args(["-Y", "tcp", "-T", "fields", "-E", "separator=;"])
        .args(["-e", "frame.number", "-e", "ip.src", "-e", "tcp.seq"])
        .args(["-e", "tcp.ack", "-e", "tcp.len", "-e", "tcp.window_size"])
        .args(["-e", "tcp.options.sack_le"])
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "tshark -r {}", cap.display());
    let num = |s: &str| s.parse::<u64>().unwrap_or(0);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(';').collect();
            Frame {
                number: num(f[0]),
                src: f[1].to_string(),
                seq: num(f[2]),
                ack: num(f[3]),
                len: num(f[4]),
                window: num(f[5]),
                sack_le: f[6].split(',').filter(|s| !s.is_empty()).map(num).collect(),
            }
        })
        .collect()
}

/// The frames `keep` (1-based numbers) of `cap`, written by editcap to a
/// new file named `name`.
fn cut(cap: &Path, keep: &[u64], name: &str) -> PathBuf {
    let to = scratch(name);
    let out = Command::new("editcap")
        .arg("-r")
        .arg(cap)
        .arg(&to)
        .args(keep.iter().map(u64::to_string))
        .output()
        .expect("run editcap");
    assert!(
        out.status.success(),
        "editcap: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    to
}

/// `rttlens analyze --format json` of `cap`: its only connection.
fn only_connection(cap: &Path) -> Value {
    let doc: Value = serde_json::from_slice(&analyze_ok([
        cap.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]))
    .expect("JSON");
    let conns = doc["connections"].as_array().expect("connections");
    assert_eq!(conns.len(), 1, "{doc:#}");
    conns[0].clone()
}

/// The address that sent the largest segment: the download's sender.
fn sender(all: &[Frame]) -> String {
    all.iter()
        .max_by_key(|f| f.len)
        .expect("frames")
        .src
        .clone()
}

fn finding<'a>(conn: &'a Value, id: &str) -> Option<&'a Value> {
    conn["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["id"] == id)
}

fn ids(conn: &Value) -> Vec<String> {
    conn["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn evidence_frames(f: &Value) -> Vec<u64> {
    f["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .filter_map(|e| e["frame"].as_u64())
        .collect()
}

#[test]
fn nine_frames_of_a_fast_retransmission_name_it_with_the_rtt_unknown() {
    let cap = lab("fast-retransmit").join("server.pcap");
    let all = frames(&cap);
    let sender = sender(&all);
    // the retransmission: the first data segment below the highest sent
    let mut high = 0;
    let retx = all
        .iter()
        .find(|f| {
            let below = f.src == sender && f.len > 0 && f.seq + f.len <= high;
            if f.src == sender {
                high = high.max(f.seq + f.len);
            }
            below
        })
        .expect("a retransmission in the fast-retransmit capture")
        .clone();
    // the receiver's first ACK at the hole with a SACK block above it, and
    // the frame before it: from there to the retransmission
    let first_sack = all
        .iter()
        .find(|f| f.src != sender && f.ack == retx.seq && f.sack_le.iter().any(|&l| l > f.ack))
        .expect("SACKed duplicate ACKs before the retransmission");
    let keep: Vec<u64> = (first_sack.number - 1..=retx.number).collect();
    assert!(
        (6..=16).contains(&keep.len()),
        "a snippet of a few frames: {keep:?} (the lab's timing changed?)"
    );
    let acks = all
        .iter()
        .filter(|f| keep.contains(&f.number) && f.src != sender && f.ack == retx.seq)
        .filter(|f| !f.sack_le.is_empty())
        .count();
    assert!(acks >= 3, "≥ 3 SACKed duplicate ACKs in {keep:?}");
    let snippet = cut(&cap, &keep, "fast-retransmit-snippet.pcap");
    let conn = only_connection(&snippet);
    assert!(
        conn["rtt"].is_null(),
        "RTT unknown in {} frames: {conn:#}",
        keep.len()
    );
    assert_eq!(conn["coverage"]["mid_stream"], true);
    let f = finding(&conn, "fast-retransmit")
        .unwrap_or_else(|| panic!("fast-retransmit named: {conn:#}"));
    let ms = f["cost"]["ms"].as_f64().expect("cost ms");
    assert!(ms > 0.0, "the cost at its measured size: {f:#}");
    assert!(
        f["cost"]["rtts"].is_null(),
        "no RTTs nobody measured: {f:#}"
    );
    assert!(
        evidence_frames(f).contains(&(keep.len() as u64)),
        "the retransmission (the snippet's last frame) is the evidence: {f:#}"
    );
    for id in ["rto", "tail-loss-probe", "spurious-retransmission"] {
        assert!(
            finding(&conn, id).is_none(),
            "{id} contradicts the full capture: {conn:#}"
        );
    }
    // the full capture names the same cause
    assert!(ids(&only_connection(&cap)).contains(&"fast-retransmit".to_string()));
}

#[test]
fn seven_frames_of_a_closing_window_name_the_zero_window() {
    let cap = lab("slow-reader").join("client.pcap");
    let all = frames(&cap);
    let sender = sender(&all);
    let z = all
        .iter()
        .position(|f| f.src != sender && f.window == 0 && f.len == 0)
        .expect("a zero window in the slow-reader capture");
    let zero = &all[z];
    let update = all[z + 1..]
        .iter()
        .find(|f| f.src != sender && f.window > 0)
        .expect("the window update");
    let data: Vec<u64> = all
        .iter()
        .filter(|f| f.number > update.number && f.src == sender && f.len > 0)
        .take(2)
        .map(|f| f.number)
        .collect();
    // the receiver's three ACKs before the zero window: its windows closing
    let before: Vec<u64> = all[..z]
        .iter()
        .rev()
        .filter(|f| f.src != sender)
        .take(3)
        .map(|f| f.number)
        .collect();
    let mut keep: Vec<u64> = before.into_iter().rev().collect();
    keep.extend([zero.number, update.number]);
    keep.extend(data);
    assert_eq!(keep.len(), 7, "{keep:?}");
    let snippet = cut(&cap, &keep, "zero-window-snippet.pcap");
    let conn = only_connection(&snippet);
    let f = finding(&conn, "zero-window")
        .unwrap_or_else(|| panic!("zero-window named in 7 frames: {conn:#}"));
    // the zero window is the snippet's 4th frame, the update its 5th
    assert_eq!(evidence_frames(f), vec![4, 5], "{f:#}");
    let ms = f["cost"]["ms"].as_f64().expect("cost ms");
    let stall = {
        let t = |n: u64| {
            let out = Command::new("tshark")
                .arg("-r")
                .arg(&snippet)
                .args(["-Y", &format!("frame.number=={n}")])
                .args(["-T", "fields", "-e", "frame.time_relative"])
                .output()
                .expect("tshark");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse::<f64>()
                .expect("time")
        };
        (t(5) - t(4)) * 1000.0
    };
    assert!(
        (ms - stall).abs() < 0.01,
        "the stall's cost: {ms} ms, the packets say {stall} ms"
    );
    for id in ["fast-retransmit", "rto", "tail-loss-probe"] {
        assert!(finding(&conn, id).is_none(), "{id}: {conn:#}");
    }
}

#[test]
fn a_mid_stream_slice_at_the_sender_names_the_window_cap() {
    let cap = lab("small-rcvbuf-server").join("server.pcap");
    let n = frames(&cap).len() as u64;
    assert!(n > 1000, "a 2 MB transfer: {n} frames");
    // 250 frames (about 6 rounds) from a quarter, half and three quarters in
    for at in [n / 4, n / 2, 3 * n / 4] {
        let keep: Vec<u64> = (at..at + 250).collect();
        let snippet = cut(&cap, &keep, &format!("small-rcvbuf-server-{at}.pcap"));
        let conn = only_connection(&snippet);
        // captured at the sender's end, whichever role the port numbers
        // give it without the handshake (the lab server's port is random)
        assert_eq!(conn["vantage"], conn["transfer"]["sender"], "{conn:#}");
        let found = ids(&conn);
        assert!(
            found
                .iter()
                .any(|id| id == "receive-window-limit" || id == "window-limit"),
            "frames {at}…: the window cap from the sender's side, found {found:?}"
        );
        for id in ["sender-window-cap", "fast-retransmit", "rto"] {
            assert!(!found.iter().any(|f| f == id), "{id}: {found:?}");
        }
    }
}

#[test]
fn a_lone_spurious_timeout_is_reported_with_its_d_sack() {
    // the lab's scenario itself expects spurious-retransmission and forbids
    // tail-loss-probe and rto: a lone resend long past any probe timer
    let cap = lab("spurious-rto-lone").join("server.pcap");
    let all = frames(&cap);
    let sender = sender(&all);
    let mut high = 0;
    let retx = all
        .iter()
        .find(|f| {
            let below = f.src == sender && f.len > 0 && f.seq + f.len <= high;
            if f.src == sender {
                high = high.max(f.seq + f.len);
            }
            below
        })
        .expect("the server's resend")
        .clone();
    // the client's D-SACK of the resent range: a SACK block below its ACK
    let dsack = all
        .iter()
        .find(|f| {
            f.src != sender
                && f.number > retx.number
                && f.sack_le
                    .first()
                    .is_some_and(|&l| l < f.ack && l <= retx.seq)
        })
        .expect("the client's D-SACK");
    let conn = only_connection(&cap);
    let f = finding(&conn, "spurious-retransmission")
        .unwrap_or_else(|| panic!("the lone spurious timeout reported: {conn:#}"));
    assert_eq!(f["cost"]["ms"].as_f64(), Some(0.0), "{f:#}");
    let ev = evidence_frames(f);
    assert!(
        ev.contains(&retx.number),
        "the resend {}: {f:#}",
        retx.number
    );
    assert!(
        ev.contains(&dsack.number),
        "the D-SACK {}: {f:#}",
        dsack.number
    );
    let kinds: Vec<String> = f["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .flat_map(|e| e["facts"].as_array().cloned().unwrap_or_default())
        .filter_map(|x| x["kind"].as_str().map(str::to_string))
        .collect();
    assert!(kinds.iter().any(|k| k == "loss.spurious-timeout"), "{f:#}");
    for id in ["tail-loss-probe", "rto", "fast-retransmit"] {
        assert!(finding(&conn, id).is_none(), "{id}: {conn:#}");
    }
    // without the handshake the sender's smoothed RTT is unknown: a lone
    // resend may have been a probe, and is not called a timeout
    let from: Vec<u64> = all
        .iter()
        .skip_while(|f| f.len == 0)
        .map(|f| f.number)
        .collect();
    let conn = only_connection(&cut(&cap, &from, "spurious-rto-lone-mid.pcap"));
    for id in ["rto", "fast-retransmit", "rto-backoff"] {
        assert!(finding(&conn, id).is_none(), "{id}: {conn:#}");
    }
}
