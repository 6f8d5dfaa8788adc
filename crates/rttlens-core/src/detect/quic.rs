//! The QUIC detectors' shared parts: costs counted in the connection's
//! RTT, and [`run`], which runs every QUIC detector on a connection
//! (docs/design.md §4 "QUIC").

use super::finding::Finding;
use crate::analysis::quic::QuicAnalysis;

/// A QUIC detector.
pub(crate) type QuicDetector = fn(&QuicAnalysis) -> Vec<Finding>;

/// Every QUIC detector, with the id(s) it reports.
pub(crate) const QUIC_DETECTORS: &[(&[&str], QuicDetector)] = &[
    (
        &[super::quic_version_negotiation::ID],
        super::quic_version_negotiation::detect,
    ),
    (&[super::quic_retry::ID], super::quic_retry::detect),
    (
        &[super::quic_hello_retry::ID],
        super::quic_hello_retry::detect,
    ),
    (
        &[super::quic_amplification_limit::ID],
        super::quic_amplification_limit::detect,
    ),
    (
        &[super::quic_initial_loss::ID],
        super::quic_initial_loss::detect,
    ),
    (
        &[super::quic_flow_control_stall::ID],
        super::quic_flow_control_stall::detect,
    ),
    (
        &[
            super::quic_zero_rtt::ID_REJECTED,
            super::quic_zero_rtt::ID_UNUSED,
        ],
        super::quic_zero_rtt::detect,
    ),
];

/// Every QUIC detector's findings on `a`, highest cost first; costs are
/// clipped to the connection's duration.
pub fn run(a: &QuicAnalysis) -> Vec<Finding> {
    let mut out: Vec<Finding> = QUIC_DETECTORS.iter().flat_map(|(_, d)| d(a)).collect();
    let whole = a.conn.last.ts - a.conn.first.ts;
    for f in &mut out {
        if f.cost.ms > whole.as_millis_f64() {
            f.cost = super::util::quic_cost(a, whole);
        }
    }
    out.sort_by(|x, y| y.cost.ms.total_cmp(&x.cost.ms).then(x.id.cmp(y.id)));
    out
}
