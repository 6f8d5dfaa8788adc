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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rttlens_core::capture::CaptureReader;
use rttlens_core::flow::half::{FrameMark, RetxKind};
use rttlens_core::pipeline;
use rttlens_net::lab::scenario;

/// The classes compared, as tshark names them (`out_of_order`: only to
/// tell why a retransmission is the engine's alone).
const CLASSES: [&str; 7] = [
    "retransmission",
    "fast_retransmission",
    "duplicate_ack",
    "zero_window",
    "window_full",
    "lost_segment",
    "out_of_order",
];

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

type Frames = BTreeSet<u64>;

/// tshark's frames per class. `retransmission` is every retransmission of
/// data Wireshark flags (plain, fast or spurious), as the engine's is every
/// kind (retransmitted SYNs and FINs are left out: docs/wireshark.md).
fn tshark(path: &Path) -> BTreeMap<&'static str, Frames> {
    let mut out = BTreeMap::new();
    for class in CLASSES {
        let filter = match class {
            "retransmission" => "(tcp.analysis.retransmission || tcp.analysis.fast_retransmission || tcp.analysis.spurious_retransmission) && tcp.len > 0".to_string(),
            "out_of_order" => "tcp.analysis.out_of_order && tcp.len > 0".to_string(),
            c => format!("tcp.analysis.{c}"),
        };
        let o = Command::new("tshark")
            .args(["-n", "-r"])
            .arg(path)
            .args(["-Y", &filter, "-T", "fields", "-e", "frame.number"])
            .output()
            .expect("tshark runs");
        assert!(
            o.status.success(),
            "tshark on {}: {}",
            path.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let frames = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        out.insert(class, frames);
    }
    out
}

/// The engine's frames per class.
fn ours(path: &Path) -> BTreeMap<&'static str, Frames> {
    let mut reader = CaptureReader::open(path).expect("open capture");
    let marks = pipeline::frame_marks(&mut reader).expect("read capture");
    let mut out: BTreeMap<&'static str, Frames> =
        CLASSES.iter().map(|c| (*c, Frames::new())).collect();
    for (frame, m) in marks {
        let classes: &[&'static str] = match m {
            FrameMark::Retransmission(RetxKind::FastRetransmit) => {
                &["retransmission", "fast_retransmission"]
            }
            FrameMark::Retransmission(_) => &["retransmission"],
            FrameMark::DuplicateAck => &["duplicate_ack"],
            FrameMark::ZeroWindow => &["zero_window"],
            FrameMark::WindowFull => &["window_full"],
            FrameMark::PreviousSegmentLost => &["lost_segment"],
        };
        for c in classes {
            out.get_mut(c).expect("class").insert(frame);
        }
    }
    out
}

/// Frames both flag, only tshark flags, only the engine flags.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    both: usize,
    only_tshark: usize,
    only_ours: usize,
}

impl Tally {
    fn add(&mut self, w: &Frames, r: &Frames) {
        self.both += w.intersection(r).count();
        self.only_tshark += w.difference(r).count();
        self.only_ours += r.difference(w).count();
    }

    /// Frames both flag over frames either flags (1.0 when neither flags any).
    fn agreement(&self) -> f64 {
        let any = self.both + self.only_tshark + self.only_ours;
        if any == 0 {
            1.0
        } else {
            self.both as f64 / any as f64
        }
    }
}

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
    if let Err(e) = rttlens_net::lab::check_prerequisites() {
        panic!("the Wireshark cross-check needs root, /dev/net/tun and iproute2: {e}");
    }
    for (c, p) in scenario::PROGRAMS
        .iter()
        .copied()
        .chain([("tshark", "tshark")])
    {
        if let Err(e) = rttlens_net::lab::require_command(c, p) {
            panic!("{e}");
        }
    }
    let dir = std::env::temp_dir().join(format!("rttlens-wireshark-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let mut captures = Vec::new();
    for name in SCENARIOS {
        let s = scenario::find(name).expect("scenario in the catalogue");
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
    eprintln!(
        "{:<44} {:<20} {:>5} {:>7} {:>7}",
        "capture", "class", "both", "tshark", "rttlens"
    );
    for cap in &captures {
        let name = cap.strip_prefix(&dir).unwrap_or(cap).display().to_string();
        let (w, mut r) = (tshark(cap), ours(cap));
        // resent data Wireshark calls out-of-order (it came within its
        // out-of-order threshold of the previous segment: SACK recovery
        // sends holes back to back): counted apart, docs/wireshark.md
        let ooo: Frames = r["retransmission"]
            .difference(&w["retransmission"])
            .filter(|f| w["out_of_order"].contains(f))
            .copied()
            .collect();
        r.get_mut("retransmission")
            .expect("class")
            .retain(|f| !ooo.contains(f));
        r.insert("out_of_order", ooo);
        for class in CLASSES {
            let mut t = Tally::default();
            t.add(&w[class], &r[class]);
            total.entry(class).or_default().add(&w[class], &r[class]);
            if t.both + t.only_tshark + t.only_ours > 0 {
                eprintln!(
                    "{name:<44} {class:<20} {:>5} {:>7} {:>7}",
                    t.both, t.only_tshark, t.only_ours
                );
            }
            // where the two must agree frame for frame
            let must = match class {
                // a window field of 0 is a fact of the packet
                "zero_window" => true,
                // a sequence number beyond the highest seen is one too
                "lost_segment" => true,
                _ => false,
            };
            if must && (t.only_tshark > 0 || t.only_ours > 0) {
                problems.push(format!(
                    "{name} {class}: tshark only {:?}, rttlens only {:?}",
                    w[class].difference(&r[class]).take(8).collect::<Vec<_>>(),
                    r[class].difference(&w[class]).take(8).collect::<Vec<_>>()
                ));
            }
        }
    }
    eprintln!(
        "agreement over {} captures (both / either):",
        captures.len()
    );
    for (class, t) in &total {
        if *class == "out_of_order" {
            eprintln!(
                "  retransmissions Wireshark calls out-of-order: {} of its {} out-of-order segments",
                t.both,
                t.both + t.only_tshark
            );
            continue;
        }
        eprintln!(
            "  {class:<20} {:>6.1} %  ({} both, {} tshark only, {} rttlens only)",
            100.0 * t.agreement(),
            t.both,
            t.only_tshark,
            t.only_ours
        );
    }
    // every retransmission Wireshark sees is one for the engine and the
    // other way round, whatever each calls its cause
    let retx = total["retransmission"];
    if retx.agreement() < 0.95 {
        problems.push(format!(
            "retransmissions agree on only {:.1} %: {retx:?}",
            100.0 * retx.agreement()
        ));
    }
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
