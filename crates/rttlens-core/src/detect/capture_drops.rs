//! `capture-drops`: the receiver acknowledged bytes the capture never saw —
//! the capture dropped packets ("ACKed unseen"), not the network. Findings
//! that depend on those holes get a lower confidence (docs/design.md §4
//! "Capture quality").

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::side::Side;
use crate::base::text::{self, text};

/// Finding id.
pub(crate) const ID: &str = "capture-drops";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for side in [Side::Client, Side::Server] {
        let h = &a.conn.half[side.index()];
        if h.dropped_bytes == 0 {
            continue;
        }
        let evidence = h
            .drops()
            .iter()
            .take(4)
            .map(|d| {
                ev(
                    d.at.frame,
                    text!(
                        "ACK covers {} B of {} data the capture never saw",
                        d.bytes,
                        side.as_str()
                    ),
                )
            })
            .collect();
        out.push(Finding {
            facts: Default::default(),
            id: ID,
            connection: a.conn.index,
            title: text!("capture missed {} B of {} data that the {} acknowledged", h.dropped_bytes, side.as_str(), side.peer().as_str()),
            cost: Cost::ZERO,
            evidence,
            confidence: conf(Level::High, "acknowledged sequence numbers never seen in the capture"),
            fix: text::owned("Capture again with fewer drops: a larger buffer (`tcpdump -B 65536`), headers only (`-s 128`), a capture filter for the hosts involved, and on the end host rather than a SPAN port."),
            references: vec!["docs/design.md §4 (capture quality)"],
            span: Vec::new(),
        });
    }
    out
}
