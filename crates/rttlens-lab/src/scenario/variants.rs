//! The partial copies of a scenario's capture ([`Variant`]), each analysed
//! again and compared with the full capture ([`run_variant`]), and the
//! capture read without its key log ([`run_keyless`]): what a capture from
//! the wild still proves, and that it says nothing the full one does not.

use std::path::Path;

use rttlens_core::model::{ConnReport, QuicReport};
use rttlens_lab_net::{Lab, LabError};

use super::check::{analyze_keyless, analyze_summary, expectations, forbidden, ExpectationResult};
use super::{lookup, Scenario, Variant, SNAPLEN};
use crate::copies;

/// What the analysis of one partial copy showed.
#[derive(Debug, Clone)]
pub struct VariantOutcome {
    /// Which copy.
    pub variant: Variant,
    /// One entry per expectation of the variant.
    pub found: Vec<ExpectationResult>,
    /// Every check that failed, in words (forbidden findings, findings the
    /// full capture does not have, evidence that does not map back, a
    /// header that does not say what is missing).
    pub problems: Vec<String>,
    /// Every finding id per connection.
    pub findings: Vec<Vec<&'static str>>,
    /// The RTT the copy's first connection was given (ms; `None`: unknown).
    pub rtt_ms: Option<f64>,
}

impl VariantOutcome {
    /// Every expectation held and no check failed.
    pub fn passed(&self) -> bool {
        self.found.iter().all(|f| f.found) && self.problems.is_empty()
    }
}

/// Cut `source` as `v` says, analyse the copy and compare it with `full`
/// (the analysis of the capture it was cut from).
pub(super) fn run_variant(
    s: &Scenario,
    v: Variant,
    source: &Path,
    full: &[ConnReport],
    dir: &Path,
) -> Result<VariantOutcome, LabError> {
    let out = dir.join(format!("{}.pcap", v.name()));
    let (copy, expect) = match v {
        Variant::MidStream => (
            copies::copy(source, &out, copies::Cut::AfterHandshake)?,
            s.expect,
        ),
        Variant::MidStreamSaysLess { expect, .. } => (
            copies::copy(source, &out, copies::Cut::AfterHandshake)?,
            expect,
        ),
        Variant::Offload => (copies::coalesce(source, &out)?, s.expect),
        Variant::SenderOnly { expect } => (
            copies::copy(source, &out, copies::Cut::FromHost(Lab::SERVER_V4.into()))?,
            expect,
        ),
        Variant::Snaplen => (
            copies::copy(source, &out, copies::Cut::Snaplen(SNAPLEN))?,
            &[][..],
        ),
        // not a copy: the same capture without its key log
        Variant::Keyless => {
            return Err(LabError::Analysis(
                "the keyless analysis is run for every QUIC capture, not listed".into(),
            ))
        }
    };
    let header_only = s.header_only();
    let expect: &[&'static str] = if v == Variant::Snaplen {
        &header_only
    } else {
        expect
    };
    let (conns, quic, summary) = analyze_summary(&copy.path)?;
    let found = expectations(&conns, &quic, &summary.population, expect);
    let mut problems = forbidden(&conns, &quic, &summary.population, s.forbid)
        .into_iter()
        .map(|f| format!("forbidden {f}"))
        .collect::<Vec<_>>();
    // never more than the full capture says, on the same connection (a
    // window cap whose owner the copy cannot tell is what the full capture's
    // receive-window-limit, sender-window-cap or h2-flow-control-stall says)
    let says = |id: &str, full_id: &str| {
        id == full_id
            || (id == "window-limit"
                && matches!(
                    full_id,
                    "receive-window-limit" | "sender-window-cap" | "h2-flow-control-stall"
                ))
    };
    for (i, c) in conns.iter().enumerate() {
        for f in &c.findings {
            if !full
                .get(i)
                .is_some_and(|fc| fc.findings.iter().any(|g| says(f.id, g.id)))
            {
                problems.push(format!("{i}:{} (the full capture does not say it)", f.id));
            }
        }
    }
    // the evidence is the full capture's, frame numbers shifted
    for &e in expect {
        let (Some((i, f)), Some((j, g))) = (lookup(&conns, &[], e), lookup(full, &[], e)) else {
            continue;
        };
        if i != j {
            problems.push(format!("{e}: on connection {i}, the full capture's on {j}"));
            continue;
        }
        let mapped: Vec<(u64, u64)> = f
            .evidence
            .iter()
            .filter_map(|ev| copy.original(ev.frame))
            .collect();
        if !g
            .evidence
            .iter()
            .any(|ev| mapped.iter().any(|&(a, b)| (a..=b).contains(&ev.frame)))
        {
            problems.push(format!(
                "{e}: evidence frames {mapped:?} (original numbering) share none with the full capture's {:?}",
                g.evidence.iter().map(|ev| ev.frame).collect::<Vec<_>>()
            ));
        }
    }
    let first = conns.first();
    match v {
        Variant::MidStream | Variant::MidStreamSaysLess { .. } => {
            if !first.is_some_and(|c| c.coverage.mid_stream) {
                problems.push("the first connection does not say it started mid-stream".into());
            }
            if first.is_none_or(|c| c.rtt.is_none()) {
                problems.push("no RTT without the handshake".into());
            }
        }
        Variant::Offload => {
            // GRO merges only segments with the same TCP options: a response
            // whose segments all straddle a timestamp tick leaves nothing
            // to merge, and the copy nothing to check
            if copy.merged() > 0 && summary.quality.oversized_segments == 0 {
                problems.push("no oversized segment counted in the capture quality".into());
            }
        }
        Variant::SenderOnly { .. } => {
            for (i, c) in conns.iter().enumerate() {
                if c.coverage.only != Some(rttlens_core::base::side::Side::Server) {
                    problems.push(format!(
                        "connection {i} does not say only the server was seen"
                    ));
                }
            }
        }
        Variant::Snaplen => {
            // every connection with data says its payloads were cut
            if summary.quality.snaplen_cut == 0 {
                problems.push("no segment counted as cut by the snapshot length".into());
            }
        }
        Variant::Keyless => {}
    }
    Ok(VariantOutcome {
        variant: v,
        found,
        problems,
        findings: conns
            .iter()
            .map(|c| c.findings.iter().map(|f| f.id).collect())
            .collect(),
        rtt_ms: first.and_then(|c| c.rtt.as_ref()).map(|r| r.min_ms),
    })
}

/// The capture at `source` analysed without its key log
/// ([`Variant::Keyless`]) and compared with `full`, its QUIC connections
/// analysed with the keys.
pub(super) fn run_keyless(
    s: &Scenario,
    source: &Path,
    full: &[QuicReport],
) -> Result<VariantOutcome, LabError> {
    let expect = s.keyless();
    let (conns, quic, summary) = analyze_keyless(source)?;
    let found = expectations(&conns, &quic, &summary.population, &expect);
    let mut problems = forbidden(&conns, &quic, &summary.population, s.forbid)
        .into_iter()
        .map(|f| format!("forbidden {f}"))
        .collect::<Vec<_>>();
    if quic.len() != full.len() {
        problems.push(format!(
            "{} QUIC connections without the keys, {} with them",
            quic.len(),
            full.len()
        ));
    }
    let handshake = |q: &QuicReport| q.ladder.iter().any(|p| p.name == "quic-handshake");
    for (i, (q, k)) in quic.iter().zip(full).enumerate() {
        if q.key_log {
            problems.push(format!("quic {i} says it was read with a key log"));
        }
        // said less, never otherwise: each finding is one the keys confirm,
        // at a cost that does not contradict theirs
        for f in &q.findings {
            match k.findings.iter().find(|g| g.id == f.id) {
                None => problems.push(format!(
                    "quic {i}:{} (the keyed analysis does not say it)",
                    f.id
                )),
                Some(g) if (f.cost.ms - g.cost.ms).abs() > (g.cost.ms * 0.25).max(2.0) => {
                    problems.push(format!(
                        "quic {i}:{} costs {:.1} ms without the keys, {:.1} ms with them",
                        f.id, f.cost.ms, g.cost.ms
                    ));
                }
                Some(_) => {}
            }
        }
        if handshake(k) && !handshake(q) {
            problems.push(format!(
                "quic {i}: no quic-handshake phase without the keys"
            ));
        }
        match (&k.rtt, &q.rtt) {
            (Some(_), None) => problems.push(format!("quic {i}: no RTT without the keys")),
            // the keyless samples (the Initials' ACKs) are among the keyed ones
            (Some(kr), Some(qr)) if qr.min_ms + 0.001 < kr.min_ms => problems.push(format!(
                "quic {i}: RTT {:.2} ms without the keys, below the keyed {:.2} ms",
                qr.min_ms, kr.min_ms
            )),
            _ => {}
        }
    }
    // the evidence is the keyed analysis's: the same frames
    for &e in &expect {
        let (Some((i, f)), Some((j, g))) = (lookup(&[], &quic, e), lookup(&[], full, e)) else {
            continue;
        };
        if i != j {
            problems.push(format!("{e}: on QUIC connection {i}, the keyed one on {j}"));
        } else if !f
            .evidence
            .iter()
            .any(|x| g.evidence.iter().any(|y| y.frame == x.frame))
        {
            problems.push(format!(
                "{e}: evidence frames {:?} share none with the keyed analysis's {:?}",
                f.evidence.iter().map(|x| x.frame).collect::<Vec<_>>(),
                g.evidence.iter().map(|y| y.frame).collect::<Vec<_>>()
            ));
        }
    }
    Ok(VariantOutcome {
        variant: Variant::Keyless,
        found,
        problems,
        findings: quic
            .iter()
            .map(|q| q.findings.iter().map(|f| f.id).collect())
            .collect(),
        rtt_ms: quic.first().and_then(|q| q.rtt.as_ref()).map(|r| r.min_ms),
    })
}
