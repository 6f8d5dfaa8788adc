//! Cross-check with Wireshark (issue 9): tshark's TCP analysis flags
//! (`tcp.analysis.*`) against the engine's per-frame marks
//! ([`rttlens_core::pipeline::frame_marks`]), frame by frame, on captures
//! of real traffic: lab scenarios with loss, black holes, windows and a
//! deep queue (both vantages), and a small capture made by the benchmark's
//! `bench/make-capture.sh`. Prints the agreement per class; asserts it
//! where the two must agree. `docs/wireshark.md` says why the others differ.
//!
//! Needs root, /dev/net/tun and `nginx-light curl openssl tcpdump tshark`;
//! FAILS (never skips) naming what is missing.

#[path = "../../rttlens-core/tests/support/wireshark.rs"]
mod wireshark;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rttlens_lab::scenario;
use wireshark::{check_totals, compare, print_header, tally, Tally};

/// Scenarios whose captures are compared (at 20 ms).
const SCENARIOS: [&str; 9] = [
    "fast-retransmit",
    "tail-loss",
    "rto",
    "black-hole",
    "black-hole-receiver",
    "no-wscale-server",
    "sndbuf-cap",
    "deep-queue",
    "clean",
];

fn bench_capture(dir: &Path) -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/make-capture.sh");
    let out = dir.join("bench-small.pcap");
    let o = Command::new("bash")
        .arg(&script)
        .arg(&out)
        .args([
            "--size-mb",
            "8",
            "--https",
            "200",
            "--no-tshark",
            "--timeout",
            "60",
        ])
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "bench/make-capture.sh: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn agreement_with_wireshark_tcp_analysis() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the Wireshark cross-check needs root, /dev/net/tun and iproute2: {e}");
    }
    for (c, p) in scenario::PROGRAMS
        .iter()
        .copied()
        .chain([("tshark", "tshark")])
    {
        if let Err(e) = rttlens_lab_net::require_command(c, p) {
            panic!("{e}");
        }
    }
    let dir = std::env::temp_dir().join(format!("rttlens-wireshark-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let mut captures = Vec::new();
    for name in SCENARIOS {
        let s = rttlens_lab::find(name).expect("scenario in the catalogue");
        let o = scenario::run_scenario(s, Duration::from_millis(20), Some(&dir))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        captures.push(o.client_capture.clone());
        let server = dir.join(name).join("server.pcap");
        if server.exists() && server != o.client_capture {
            captures.push(server);
        }
    }
    captures.push(bench_capture(&dir));

    let mut total: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut ooo = 0;
    print_header();
    for cap in &captures {
        let name = cap.strip_prefix(&dir).unwrap_or(cap).display().to_string();
        let c = compare(cap);
        ooo += c.out_of_order;
        tally(&name, &c, &mut total, &mut problems);
    }
    eprintln!(
        "{} captures; resent data Wireshark calls out-of-order: {ooo}, counted apart",
        captures.len()
    );
    // every retransmission, duplicate ACK or full window Wireshark sees is
    // one for the engine and the other way round (whatever each calls a
    // retransmission's cause), intended differences apart
    check_totals(&total, 0.95, &mut problems);
    // a fast retransmission for Wireshark (after duplicate ACKs) is one for
    // the engine too; the engine may also call one fast that Wireshark calls
    // plain (SACK or RACK detected, docs/wireshark.md)
    let fast = total["fast_retransmission"];
    if fast.only_tshark > 0 {
        problems.push(format!(
            "fast retransmissions Wireshark sees and the engine does not: {fast:?}"
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
