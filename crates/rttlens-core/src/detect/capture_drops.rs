//! `capture-drops`: the receiver acknowledged bytes the capture never saw —
//! the capture dropped packets ("ACKed unseen"), not the network. Findings
//! that depend on those holes get a lower confidence (docs/design.md §4
//! "Capture quality").

use super::finding::{conf, ev, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::cost::Cost;
use crate::base::fact::{args, fact};
use crate::base::side::Side;

/// Finding id.
pub(crate) const ID: &str = "capture-drops";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let mut out = Vec::new();
    for side in [Side::Client, Side::Server] {
        let dropped = a.tcp.unseen_bytes[side.index()];
        if dropped == 0 {
            continue;
        }
        let evidence = a
            .capture_drops(side)
            .iter()
            .take(4)
            .map(|d| {
                ev(
                    d.at.frame,
                    fact!(
                        "capture-drops.acked-unseen",
                        bytes = Value::Bytes(d.bytes),
                        sender = side,
                    ),
                )
            })
            .collect();
        out.push(Finding {
            facts: args!(
                sender = side,
                receiver = side.peer(),
                dropped_bytes = Value::Bytes(dropped),
            ),
            id: ID,
            connection: a.index(),
            cost: Cost::ZERO,
            evidence,
            confidence: conf(Level::High, fact!("capture-drops.acked-never-seen")),
            references: vec!["docs/design.md §4 (capture quality)"],
            span: Vec::new(),
        });
    }
    out
}
