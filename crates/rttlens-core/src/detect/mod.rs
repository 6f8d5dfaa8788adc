//! Detectors: one named cause each, one file each, named after the finding id.
//!
//! Every detector is a function from the analysis of one transport's
//! connection to the findings it supports: a TCP connection's [`Analysis`]
//! or a QUIC connection's [`QuicAnalysis`]. `DETECTORS` is the one
//! registry, each entry a [`Detector`] keyed by its transport with the
//! id(s) it reports. Each transport has one run over its detectors, in the
//! registry's order:
//!
//! - [`run_all`] (TCP) clips each finding's span to the time someone waited
//!   and its cost to that span, drops findings whose cost is not material
//!   (except those always reported), puts evidence in capture order, lowers
//!   the confidence of findings that depend on data the capture dropped;
//! - [`run_quic`] clips each cost to the connection's duration;
//!
//! and both sort by cost, highest first (`by_cost`).
//!
//! Detectors read the analysis through its accessors and never import one
//! another: what two of them share is a fact of the connection (in
//! `analysis`: the RTT's rise, the RTO backoff chain, a TFO fallback) or a
//! shared module of this one ([`finding`], `window`), which
//! `tests/layers.rs` lists.

pub(crate) mod capture_drops;
pub(crate) mod delayed_ack;
pub mod finding;
pub(crate) mod h2_concurrency_limit;
pub(crate) mod h2_flow_control_stall;
pub(crate) mod h2_head_of_line;
pub(crate) mod hello_retry_request;
pub(crate) mod http1_head_of_line;
pub(crate) mod large_tls_record;
pub(crate) mod loss;
pub(crate) mod nagle;
pub(crate) mod queueing_delay;
pub(crate) mod quic_amplification_limit;
pub(crate) mod quic_flow_control_stall;
pub(crate) mod quic_hello_retry;
pub(crate) mod quic_initial_loss;
pub(crate) mod quic_retry;
pub(crate) mod quic_version_negotiation;
pub(crate) mod quic_zero_rtt;
pub(crate) mod receive_window_limit;
pub(crate) mod rto_backoff;
pub mod self_check;
pub(crate) mod sender_window_cap;
pub mod server_handshake_time;
pub(crate) mod server_unaccounted_time;
pub(crate) mod slow_start;
pub(crate) mod syn_retransmission;
pub(crate) mod tfo;
pub mod think_time;
pub(crate) mod tls12_full_handshake;
pub(crate) mod tls_resumption;
pub(crate) mod transfer_stall;
pub(crate) mod window;
pub(crate) mod window_limit;
pub(crate) mod zero_rtt;
pub(crate) mod zero_window;

use crate::analysis::quic::QuicAnalysis;
use crate::analysis::Analysis;
pub use crate::base::cost::Cost;
use crate::base::fact::fact;
use crate::base::time::union_len;
use crate::base::time::Timestamp;
pub use finding::{Confidence, Evidence, Finding, Level};
use Detector::{Quic, Tcp};

/// A detector: the findings one cause produces on one connection, keyed by
/// the transport whose analysis it reads.
#[derive(Clone, Copy)]
pub enum Detector {
    /// Reads a TCP connection; run by [`run_all`].
    Tcp(fn(&Analysis) -> Vec<Finding>),
    /// Reads a QUIC connection; run by [`run_quic`].
    Quic(fn(&QuicAnalysis) -> Vec<Finding>),
}

/// Every detector, with the id(s) it reports, in the order each
/// transport's run calls them.
pub(crate) const DETECTORS: &[(&[&str], Detector)] = &[
    // TCP
    (
        &[tls12_full_handshake::ID],
        Tcp(tls12_full_handshake::detect),
    ),
    (&[hello_retry_request::ID], Tcp(hello_retry_request::detect)),
    (&[large_tls_record::ID], Tcp(large_tls_record::detect)),
    (&[sender_window_cap::ID], Tcp(sender_window_cap::detect)),
    (
        &[receive_window_limit::ID],
        Tcp(receive_window_limit::detect),
    ),
    (&[window_limit::ID], Tcp(window_limit::detect)),
    (
        &[slow_start::ID_INITIAL_WINDOW, slow_start::ID_SLOW_START],
        Tcp(slow_start::detect),
    ),
    (
        &[think_time::ID_SERVER, think_time::ID_CLIENT],
        Tcp(think_time::detect),
    ),
    (
        &[server_handshake_time::ID],
        Tcp(server_handshake_time::detect),
    ),
    (
        &[server_unaccounted_time::ID],
        Tcp(server_unaccounted_time::detect),
    ),
    (
        &[loss::ID_FAST, loss::ID_TLP, loss::ID_RTO, loss::ID_SPURIOUS],
        Tcp(loss::detect),
    ),
    (&[rto_backoff::ID], Tcp(rto_backoff::detect)),
    (&[transfer_stall::ID], Tcp(transfer_stall::detect)),
    (&[queueing_delay::ID], Tcp(queueing_delay::detect)),
    (&[zero_window::ID], Tcp(zero_window::detect)),
    (&[syn_retransmission::ID], Tcp(syn_retransmission::detect)),
    (&[capture_drops::ID], Tcp(capture_drops::detect)),
    (
        &[
            tfo::ID_COOKIE,
            tfo::ID_ACCEPTED,
            tfo::ID_REFUSED,
            tfo::ID_FALLBACK,
        ],
        Tcp(tfo::detect),
    ),
    (&[tls_resumption::ID], Tcp(tls_resumption::detect)),
    (
        &[nagle::ID_STALL, nagle::ID_DELAYED_ACK],
        Tcp(nagle::detect),
    ),
    (&[delayed_ack::ID], Tcp(delayed_ack::detect)),
    (&[zero_rtt::ID], Tcp(zero_rtt::detect)),
    (
        &[h2_flow_control_stall::ID],
        Tcp(h2_flow_control_stall::detect),
    ),
    (&[http1_head_of_line::ID], Tcp(http1_head_of_line::detect)),
    (
        &[h2_concurrency_limit::ID],
        Tcp(h2_concurrency_limit::detect),
    ),
    (&[h2_head_of_line::ID], Tcp(h2_head_of_line::detect)),
    // QUIC
    (
        &[quic_version_negotiation::ID],
        Quic(quic_version_negotiation::detect),
    ),
    (&[quic_retry::ID], Quic(quic_retry::detect)),
    (&[quic_hello_retry::ID], Quic(quic_hello_retry::detect)),
    (
        &[quic_amplification_limit::ID],
        Quic(quic_amplification_limit::detect),
    ),
    (&[quic_initial_loss::ID], Quic(quic_initial_loss::detect)),
    (
        &[quic_flow_control_stall::ID],
        Quic(quic_flow_control_stall::detect),
    ),
    (
        &[quic_zero_rtt::ID_REJECTED, quic_zero_rtt::ID_UNUSED],
        Quic(quic_zero_rtt::detect),
    ),
    (
        &[server_unaccounted_time::ID],
        Quic(server_unaccounted_time::detect_quic),
    ),
];

/// Finding ids that are reported whatever their cost: they speak of the
/// capture or of wasted work rather than of time lost, and their detectors
/// decide themselves when they are worth reporting.
pub(crate) const ALWAYS_REPORTED: &[&str] = &[
    capture_drops::ID,
    loss::ID_SPURIOUS,
    // verified outcomes: what TFO, resumption and 0-RTT did (or saved)
    tfo::ID_COOKIE,
    tfo::ID_ACCEPTED,
    tls_resumption::ID,
    zero_rtt::ID,
];

/// Finding ids reported whatever their cost when the RTT is unknown: what
/// they name (a retransmission and how it was triggered, a window closed to
/// zero) is in the packets themselves, and the threshold without an RTT
/// ([`crate::base::cost::MATERIAL_MS_NO_RTT`]) stands for a quarter of a
/// round trip nobody measured. A capture of a few frames (or one that began
/// mid-connection with a single direction's samples) then still says what
/// the packets prove, at the cost measured, however small (docs/design.md
/// §4 "Materiality").
pub(crate) const PROVEN_WITHOUT_RTT: &[&str] =
    &[loss::ID_FAST, loss::ID_TLP, loss::ID_RTO, zero_window::ID];

/// Whether a finding `id` of `cost` (clipped) is reported: always for
/// [`ALWAYS_REPORTED`], with the RTT unknown for [`PROVEN_WITHOUT_RTT`],
/// else when the cost is material.
fn reported(id: &str, cost: &Cost) -> bool {
    ALWAYS_REPORTED.contains(&id)
        || cost.is_material()
        || (cost.rtts.is_none() && PROVEN_WITHOUT_RTT.contains(&id))
}

/// Clip `f`'s span to `[from, until]` and its cost to the clipped span's
/// length: what accrued outside it (before the first frame, after both
/// sides were done) was waited by no one.
fn bound_cost(a: &Analysis, f: &mut Finding, from: Timestamp, until: Timestamp) {
    if f.span.is_empty() {
        return;
    }
    let (cost, span) = bounded(a, f.cost, &f.span, from, until);
    f.cost = cost;
    f.span = span.into_vec();
}

/// The span's intervals clipped to `[from, until]`.
type Clipped = smallvec::SmallVec<[(Timestamp, Timestamp); 4]>;

/// `cost` accrued over the non-empty `span`, bounded as [`bound_cost`]
/// does: the clipped cost and the clipped span.
fn bounded(
    a: &Analysis,
    cost: Cost,
    span: &[(Timestamp, Timestamp)],
    from: Timestamp,
    until: Timestamp,
) -> (Cost, Clipped) {
    let span: Clipped = span
        .iter()
        .filter_map(|&(s, e)| {
            let (s, e) = (s.max(from), e.min(until));
            (s < e).then_some((s, e))
        })
        .collect();
    let within = union_len(&span);
    let cost = if cost.ms > within.as_millis_f64() {
        a.cost(within)
    } else {
        cost
    };
    (cost, span)
}

/// Whether [`run_all`] keeps a finding `id` of `cost` accrued over `span`:
/// a detector whose finding is often immaterial asks before it formats the
/// finding's lines (most TLS connections' first record, for one).
pub(crate) fn kept(a: &Analysis, id: &str, cost: Cost, span: &[(Timestamp, Timestamp)]) -> bool {
    if ALWAYS_REPORTED.contains(&id) {
        return true;
    }
    let cost = match span {
        [] => cost,
        _ => bounded(a, cost, span, a.first().ts, a.waited_until()).0,
    };
    reported(id, &cost)
}

/// Findings the TCP/IP headers and their timing prove without a byte of
/// payload: a capture cut by a small snapshot length keeps them (the
/// server's think time through the turns at the TCP level,
/// [`crate::flow::turns`]). The others read TLS or HTTP.
pub const HEADER_ONLY: [&str; 21] = [
    syn_retransmission::ID,
    loss::ID_FAST,
    loss::ID_RTO,
    loss::ID_TLP,
    rto_backoff::ID,
    loss::ID_SPURIOUS,
    receive_window_limit::ID,
    sender_window_cap::ID,
    window_limit::ID,
    zero_window::ID,
    capture_drops::ID,
    queueing_delay::ID,
    transfer_stall::ID,
    nagle::ID_STALL,
    nagle::ID_DELAYED_ACK,
    delayed_ack::ID,
    tfo::ID_FALLBACK,
    tfo::ID_COOKIE,
    tfo::ID_ACCEPTED,
    tfo::ID_REFUSED,
    think_time::ID_SERVER,
];

/// QUIC findings a capture proves without the key log: they read the
/// Initial packets (whose keys come from the client's first Destination
/// Connection ID, RFC 9001 §5.2: the ClientHello, the ServerHello or
/// HelloRetryRequest, CRYPTO data sent again), Version Negotiation and
/// Retry (never protected), long-header packet types (outside header
/// protection, RFC 9001 §5.4.1) and datagram sizes and times. The others
/// read Handshake or 1-RTT packets: `quic-initial-loss` of a Handshake
/// packet, flow control, 0-RTT's outcome.
pub const QUIC_KEYLESS: [&str; 5] = [
    quic_version_negotiation::ID,
    quic_retry::ID,
    quic_hello_retry::ID,
    quic_amplification_limit::ID,
    quic_initial_loss::ID,
];

/// Run every TCP detector on `a`; material findings sorted by cost, highest
/// first.
pub fn run_all(a: &Analysis) -> Vec<Finding> {
    // a plain loop, not `flatten().collect()`: most detectors find nothing,
    // and the adapter's per-detector state cost a SYN-only connection more
    // than its detectors did (issue 41)
    let mut out: Vec<Finding> = Vec::new();
    for (_, d) in DETECTORS {
        if let Tcp(detect) = d {
            let found = detect(a);
            if !found.is_empty() {
                out.extend(found);
            }
        }
    }
    // a cost is time someone waited: within the connection, and not after
    // both sides were done (docs/design.md §4 "Materiality")
    let (from, until) = (a.first().ts, a.waited_until());
    for f in out.iter_mut() {
        bound_cost(a, f, from, until);
    }
    out.retain(|f| reported(f.id, &f.cost));
    for f in out.iter_mut() {
        // evidence reads in the order of the capture
        f.evidence.sort_by_key(|e| e.frame);
    }
    if a.tcp.unseen_bytes.iter().any(|&b| b > 0) {
        for f in out.iter_mut().filter(|f| !ALWAYS_REPORTED.contains(&f.id)) {
            f.lower_confidence(fact!("common.capture-dropped"));
        }
    }
    by_cost(&mut out);
    out
}

/// Run every QUIC detector on `a`; its findings sorted by cost, highest
/// first, each cost clipped to the connection's duration (docs/design.md
/// §4 "QUIC").
pub fn run_quic(a: &QuicAnalysis) -> Vec<Finding> {
    let mut out: Vec<Finding> = DETECTORS
        .iter()
        .filter_map(|(_, d)| match d {
            Quic(detect) => Some(detect(a)),
            Tcp(_) => None,
        })
        .flatten()
        .collect();
    let whole = a.last().ts - a.first().ts;
    for f in &mut out {
        if f.cost.ms > whole.as_millis_f64() {
            f.cost = a.cost(whole);
        }
    }
    by_cost(&mut out);
    out
}

/// Sort findings by cost, highest first, then by id (stable: one
/// detector's findings of the same id and cost keep their order).
fn by_cost(out: &mut [Finding]) {
    out.sort_by(|a, b| b.cost.ms.total_cmp(&a.cost.ms).then(a.id.cmp(b.id)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_is_registered_once_per_transport() {
        // a cause both transports show (`server-unaccounted-time`) has one
        // entry per transport, never two for one
        let mut keyed: Vec<(bool, &str)> = DETECTORS
            .iter()
            .flat_map(|(ids, d)| ids.iter().map(move |id| (matches!(d, Tcp(_)), *id)))
            .collect();
        let n = keyed.len();
        keyed.sort_unstable();
        keyed.dedup();
        assert_eq!(
            keyed.len(),
            n,
            "an id in two registry entries of one transport"
        );
        let ids: Vec<&str> = keyed.iter().map(|(_, id)| *id).collect();
        for id in ALWAYS_REPORTED
            .iter()
            .chain(HEADER_ONLY.iter())
            .chain(QUIC_KEYLESS.iter())
        {
            assert!(ids.contains(id), "{id} is in no registry entry");
        }
    }
}
