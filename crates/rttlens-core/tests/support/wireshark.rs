//! Frame-by-frame comparison of the engine's per-frame marks
//! ([`rttlens_core::pipeline::frame_marks`]) with tshark's TCP analysis
//! flags (`tcp.analysis.*`, packet-tcp.c), shared by the lab cross-check
//! (`crates/rttlens-lab/tests/wireshark.rs`) and the public corpus's
//! (`crates/rttlens-core/tests/wireshark_corpus.rs`).
//!
//! The differences the engine means to have are counted apart, each with
//! its reason in `docs/wireshark.md` ("Intended disagreements"):
//! - resent data Wireshark calls out-of-order ([`Compared::out_of_order`]);
//! - frames captured twice, which Wireshark flags as retransmissions and
//!   duplicate ACKs and the engine drops ([`Compared::copies`]);
//! - a gap Wireshark flags twice, at the ACK that proves it and at the next
//!   data segment, which the engine counts once, at the ACK
//!   ([`Compared::gap_twice`]);
//! - fast retransmissions: the engine calls every segment of a SACK or RACK
//!   recovery fast, Wireshark only the first after duplicate ACKs, so only
//!   Wireshark's are required of the engine ([`Tally::agreement`] of that
//!   class counts the engine's extra ones apart).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use rttlens_core::capture::CaptureReader;
use rttlens_core::flow::half::{FrameMark, RetxKind};
use rttlens_core::pipeline;

/// The classes compared, as tshark names them. Not compared:
/// `ack_lost_segment`, where Wireshark flags again every ACK after a gap
/// until its own state catches up, while the engine marks the ACK that
/// first proves bytes were not captured ([`FrameMark::AckedUnseen`]).
pub const CLASSES: [&str; 7] = [
    "retransmission",
    "syn_retransmission",
    "fast_retransmission",
    "duplicate_ack",
    "zero_window",
    "window_full",
    "lost_segment",
];

/// Frame numbers.
pub type Frames = BTreeSet<u64>;

/// tshark's flags of one capture.
pub struct Tshark {
    /// Frames per class. `retransmission` is every retransmission of data
    /// (plain, fast or spurious; FINs without data are left out:
    /// docs/wireshark.md); `syn_retransmission` every SYN or SYN-ACK
    /// Wireshark calls a retransmission.
    pub class: BTreeMap<&'static str, Frames>,
    /// Data segments Wireshark calls out-of-order.
    pub out_of_order: Frames,
    /// `tcp.stream` of every TCP frame.
    pub stream: BTreeMap<u64, u64>,
}

/// Runs tshark over `path` once, reading every flag.
pub fn tshark(path: &Path) -> Tshark {
    const FLAGS: [&str; 8] = [
        "retransmission",
        "fast_retransmission",
        "spurious_retransmission",
        "duplicate_ack",
        "zero_window",
        "window_full",
        "lost_segment",
        "out_of_order",
    ];
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"])
        .arg(path)
        .args(["-Y", "tcp", "-T", "fields", "-E", "occurrence=f"]);
    for f in ["frame.number", "tcp.stream", "tcp.len", "tcp.flags.syn"] {
        cmd.args(["-e", f]);
    }
    for f in FLAGS {
        cmd.args(["-e", &format!("tcp.analysis.{f}")]);
    }
    let o = cmd.output().expect("tshark runs");
    assert!(
        o.status.success(),
        "tshark on {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut t = Tshark {
        class: CLASSES.iter().map(|c| (*c, Frames::new())).collect(),
        out_of_order: Frames::new(),
        stream: BTreeMap::new(),
    };
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let p: Vec<&str> = line.split('\t').collect();
        let (Some(frame), Some(stream)) = (
            p.first().and_then(|v| v.parse::<u64>().ok()),
            p.get(1).and_then(|v| v.parse::<u64>().ok()),
        ) else {
            continue;
        };
        t.stream.insert(frame, stream);
        let data = p.get(2).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) > 0;
        let has = |f: &str| {
            let i = FLAGS.iter().position(|x| *x == f).expect("flag") + 4;
            p.get(i).is_some_and(|v| !v.is_empty())
        };
        let mut add = |c: &'static str| {
            t.class.get_mut(c).expect("class").insert(frame);
        };
        // a SYN or SYN-ACK sent again (no data: a TFO SYN's data is the
        // handshake's too)
        let syn = p.get(3).is_some_and(|v| *v == "1" || *v == "True");
        if syn && has("retransmission") {
            add("syn_retransmission");
        }
        if data
            && !syn
            && (has("retransmission")
                || has("fast_retransmission")
                || has("spurious_retransmission"))
        {
            add("retransmission");
        }
        for c in [
            "fast_retransmission",
            "duplicate_ack",
            "zero_window",
            "window_full",
            "lost_segment",
        ] {
            if has(c) {
                add(c);
            }
        }
        if data && has("out_of_order") {
            t.out_of_order.insert(frame);
        }
    }
    t
}

/// The engine's marks of one capture.
pub struct Ours {
    /// Frames per class.
    pub class: BTreeMap<&'static str, Frames>,
    /// Frames dropped as exact copies of the frame before.
    pub copies: Frames,
    /// ACKs of bytes the capture never saw.
    pub acked_unseen: Frames,
}

/// Runs the engine's flow layer over `path`.
pub fn ours(path: &Path) -> Ours {
    let mut reader = CaptureReader::open(path).expect("open capture");
    let marks = pipeline::frame_marks(&mut reader).expect("read capture");
    let mut o = Ours {
        class: CLASSES.iter().map(|c| (*c, Frames::new())).collect(),
        copies: Frames::new(),
        acked_unseen: Frames::new(),
    };
    for (frame, m) in marks {
        let classes: &[&'static str] = match m {
            FrameMark::Retransmission(RetxKind::FastRetransmit) => {
                &["retransmission", "fast_retransmission"]
            }
            FrameMark::Retransmission(_) => &["retransmission"],
            FrameMark::SynRetransmission => &["syn_retransmission"],
            FrameMark::DuplicateAck => &["duplicate_ack"],
            FrameMark::ZeroWindow => &["zero_window"],
            FrameMark::WindowFull => &["window_full"],
            FrameMark::PreviousSegmentLost => &["lost_segment"],
            FrameMark::AckedUnseen => {
                o.acked_unseen.insert(frame);
                &[]
            }
            FrameMark::CapturedTwice => {
                o.copies.insert(frame);
                &[]
            }
        };
        for c in classes {
            o.class.get_mut(c).expect("class").insert(frame);
        }
    }
    o
}

/// Frames both flag, only tshark flags, only the engine flags, and those
/// counted apart as intended differences.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub both: usize,
    pub only_tshark: usize,
    pub only_ours: usize,
    /// Differences the engine means to have (see the module docs).
    pub intended: usize,
}

impl Tally {
    pub fn add(&mut self, o: &Tally) {
        self.both += o.both;
        self.only_tshark += o.only_tshark;
        self.only_ours += o.only_ours;
        self.intended += o.intended;
    }

    /// Frames both flag over frames either flags, intended differences
    /// left out (1.0 when neither flags any).
    pub fn agreement(&self) -> f64 {
        let any = self.both + self.only_tshark + self.only_ours;
        if any == 0 {
            1.0
        } else {
            self.both as f64 / any as f64
        }
    }
}

/// One capture compared: per class, the tally and the frames that differ
/// (not counting the intended differences).
pub struct Compared {
    pub tally: BTreeMap<&'static str, Tally>,
    pub only_tshark: BTreeMap<&'static str, Frames>,
    pub only_ours: BTreeMap<&'static str, Frames>,
    /// Resent data Wireshark calls out-of-order.
    pub out_of_order: usize,
    /// Wireshark's retransmissions and duplicate ACKs on frames captured twice.
    pub copies: usize,
    /// Wireshark's "previous segment not captured" on a gap the engine
    /// counted at an earlier ACK of bytes the capture never saw.
    pub gap_twice: usize,
}

/// Compares tshark's flags and the engine's marks on `path`.
pub fn compare(path: &Path) -> Compared {
    let (w, r) = (tshark(path), ours(path));
    let mut c = Compared {
        tally: BTreeMap::new(),
        only_tshark: BTreeMap::new(),
        only_ours: BTreeMap::new(),
        out_of_order: 0,
        copies: 0,
        gap_twice: 0,
    };
    // the streams where the engine counted a gap at an ACK, and from which frame
    let mut gap_at: BTreeMap<u64, u64> = BTreeMap::new();
    for f in &r.acked_unseen {
        if let Some(s) = w.stream.get(f) {
            gap_at.entry(*s).or_insert(*f);
        }
    }
    for class in CLASSES {
        let mut wf = w.class[class].clone();
        let mut rf = r.class[class].clone();
        let mut intended = 0;
        // copies: the engine dropped them before the flow layer
        let before = wf.len();
        wf.retain(|f| !r.copies.contains(f));
        let copies = before - wf.len();
        intended += copies;
        if class == "retransmission" || class == "duplicate_ack" {
            c.copies += copies;
        }
        match class {
            "retransmission" => {
                let ooo: Frames = rf
                    .difference(&wf)
                    .filter(|f| w.out_of_order.contains(f))
                    .copied()
                    .collect();
                c.out_of_order += ooo.len();
                intended += ooo.len();
                rf.retain(|f| !ooo.contains(f));
            }
            "fast_retransmission" => {
                // the engine's extra fast ones are Wireshark's plain or
                // out-of-order retransmissions (SACK/RACK recovery)
                let extra: Frames = rf
                    .difference(&wf)
                    .filter(|f| w.class["retransmission"].contains(f) || w.out_of_order.contains(f))
                    .copied()
                    .collect();
                intended += extra.len();
                rf.retain(|f| !extra.contains(f));
            }
            "lost_segment" => {
                let twice: Frames = wf
                    .difference(&rf)
                    .filter(|f| {
                        w.stream
                            .get(f)
                            .and_then(|s| gap_at.get(s))
                            .is_some_and(|g| g < f)
                    })
                    .copied()
                    .collect();
                c.gap_twice += twice.len();
                intended += twice.len();
                wf.retain(|f| !twice.contains(f));
            }
            _ => {}
        }
        let t = Tally {
            both: wf.intersection(&rf).count(),
            only_tshark: wf.difference(&rf).count(),
            only_ours: rf.difference(&wf).count(),
            intended,
        };
        c.tally.insert(class, t);
        c.only_tshark
            .insert(class, wf.difference(&rf).copied().collect());
        c.only_ours
            .insert(class, rf.difference(&wf).copied().collect());
    }
    c
}

/// Adds one capture's comparison to `total`, prints its rows, and notes in
/// `problems` where the facts of the packet differ (a window of 0, a
/// sequence number beyond the highest seen: frame for frame).
pub fn tally(
    name: &str,
    c: &Compared,
    total: &mut BTreeMap<&'static str, Tally>,
    problems: &mut Vec<String>,
) {
    for class in CLASSES {
        let t = c.tally[class];
        total.entry(class).or_default().add(&t);
        if t.both + t.only_tshark + t.only_ours + t.intended > 0 {
            eprintln!(
                "{name:<44} {class:<20} {:>5} {:>7} {:>7} {:>8}",
                t.both, t.only_tshark, t.only_ours, t.intended
            );
        }
        if matches!(class, "zero_window" | "lost_segment") && (t.only_tshark > 0 || t.only_ours > 0)
        {
            problems.push(format!(
                "{name} {class}: tshark only {:?}, rttlens only {:?}",
                c.only_tshark[class].iter().take(8).collect::<Vec<_>>(),
                c.only_ours[class].iter().take(8).collect::<Vec<_>>()
            ));
        }
    }
}

/// Prints the agreement per class and notes in `problems` every class
/// below `min` (intended differences apart).
pub fn check_totals(total: &BTreeMap<&'static str, Tally>, min: f64, problems: &mut Vec<String>) {
    eprintln!("agreement (both / either, intended differences apart):");
    for (class, t) in total {
        eprintln!(
            "  {class:<20} {:>6.1} %  ({} both, {} tshark only, {} rttlens only, {} intended)",
            100.0 * t.agreement(),
            t.both,
            t.only_tshark,
            t.only_ours,
            t.intended
        );
        if t.agreement() < min {
            problems.push(format!(
                "{class}: {:.1} % agreement, below {:.0} %: {t:?}",
                100.0 * t.agreement(),
                100.0 * min
            ));
        }
    }
}

/// The header of the rows [`tally`] prints.
pub fn print_header() {
    eprintln!(
        "{:<44} {:<20} {:>5} {:>7} {:>7} {:>8}",
        "capture", "class", "both", "tshark", "rttlens", "intended"
    );
}
