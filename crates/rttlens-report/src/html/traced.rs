//! What the graphs both transports share read of a connection: the ladder
//! diagram, the IO graph and the RTT samples draw a TCP connection's
//! packets and a QUIC connection's datagrams through [`Traced`], one row
//! per packet or datagram, and the RTT samples in the one shape both traces
//! keep them in (the half measured, the frame that closed the sample).

use rttlens_core::base::side::{FrameRef, Side};
use rttlens_core::model::trace::{RttSample, Trace, TracePacket};
use rttlens_core::model::ConnReport;
use rttlens_core::model::Finding;
use rttlens_core::wire::TcpFlags;

/// One packet (TCP) or datagram (QUIC) as the graphs draw it.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// Frame number and capture time.
    pub at: FrameRef,
    /// Sender.
    pub side: Side,
    /// Bytes the IO graph counts: TCP payload, UDP payload.
    pub len: u32,
    /// Drawn thin: it only acknowledges (a pure ACK; a datagram whose
    /// packets were all decrypted and elicit no ACK).
    pub thin: bool,
    /// Drawn red and dashed: it sends again what was sent before.
    pub again: bool,
}

/// A connection with its trace, as the shared graphs read it.
pub trait Traced {
    /// What a row is, in the plural (`packets`, `datagrams`).
    const UNIT: &'static str;
    /// What the IO graph's lower panel counts.
    const BYTES: &'static str;
    /// Why there is no RTT sample, when there is none.
    const NO_RTT: &'static str;
    /// How the RTT graph's samples were taken.
    const RTT_CAPTION: &'static str;

    /// Client address:port.
    fn client(&self) -> &str;
    /// Server address:port.
    fn server(&self) -> &str;
    /// The RTT's two halves seen from the capture point, `(h_c, h_s)` in ms
    /// (0 when not known).
    fn halves(&self) -> (f64, f64);
    /// The minimum RTT (ms): both halves' minima added; `None` when a half
    /// was never sampled.
    fn min_rtt(&self) -> Option<f64>;
    /// The connection's findings.
    fn findings(&self) -> &[Finding];
    /// Rows in the trace.
    fn len(&self) -> usize;
    /// Row `i` (`i < len()`).
    fn row(&self, i: usize) -> Row;
    /// The words beside row `i`'s arrow in the ladder.
    fn words(&self, i: usize) -> String;
    /// What row `i`'s tooltip tells beyond its words.
    fn detail(&self, i: usize) -> String;
    /// Every RTT sample: the half it measured and what closed it.
    fn samples(&self) -> &[(Side, RttSample)];

    /// Whether the trace holds no row.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every row, in capture order.
    fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        (0..self.len()).map(|i| self.row(i))
    }
}

/// A connection's report and its trace: `View<ConnReport, Trace>` (TCP's
/// packets), `View<QuicReport, QuicTrace>` (QUIC's datagrams).
#[derive(Debug)]
pub struct View<'a, R, T> {
    /// The connection.
    pub c: &'a R,
    /// Its trace.
    pub t: &'a T,
}

impl Traced for View<'_, ConnReport, Trace> {
    const UNIT: &'static str = "packets";
    const BYTES: &'static str = "payload bytes";
    const NO_RTT: &'static str = "no RTT samples (one direction only, or no data acknowledged)";
    const RTT_CAPTION: &'static str = "Each dot is one RTT sample (a data segment and the ACK that covers it, or a timestamp echo; Karn's rule: none from retransmissions) plus the other half's minimum, so every dot is a whole round trip. Samples include the receiver's delayed-ACK wait; a band rising above the minimum is queueing.";

    fn client(&self) -> &str {
        &self.c.client
    }

    fn server(&self) -> &str {
        &self.c.server
    }

    fn halves(&self) -> (f64, f64) {
        self.c
            .rtt
            .as_ref()
            .map_or((0.0, 0.0), |r| (r.h_c_ms, r.h_s_ms))
    }

    fn min_rtt(&self) -> Option<f64> {
        self.c.rtt.as_ref().map(|r| r.min_ms)
    }

    fn findings(&self) -> &[Finding] {
        &self.c.findings
    }

    fn len(&self) -> usize {
        self.t.packets.len()
    }

    fn row(&self, i: usize) -> Row {
        let p = &self.t.packets[i];
        let f = p.flags;
        Row {
            at: p.at,
            side: p.side,
            len: p.len,
            thin: p.len == 0
                && !f.contains(TcpFlags::SYN)
                && !f.contains(TcpFlags::FIN)
                && !f.contains(TcpFlags::RST),
            again: p.retransmission,
        }
    }

    fn words(&self, i: usize) -> String {
        tcp_words(&self.t.packets[i], self.t)
    }

    fn detail(&self, i: usize) -> String {
        let p = &self.t.packets[i];
        format!(
            "seq {}, ack {}, window {} B",
            p.seq.map_or("-".into(), |v| v.to_string()),
            p.ack.map_or("-".into(), |v| v.to_string()),
            p.window
        )
    }

    fn samples(&self) -> &[(Side, RttSample)] {
        &self.t.rtt
    }
}

/// The words beside a TCP packet: flags, size, and what the analysis named.
fn tcp_words(p: &TracePacket, t: &Trace) -> String {
    let f = p.flags;
    let mut parts: Vec<String> = Vec::new();
    let syn = f.contains(TcpFlags::SYN);
    if syn && f.contains(TcpFlags::ACK) {
        parts.push("SYN-ACK".into());
    } else if syn {
        parts.push("SYN".into());
    }
    if f.contains(TcpFlags::FIN) {
        parts.push("FIN".into());
    }
    if f.contains(TcpFlags::RST) {
        parts.push("RST".into());
    }
    let named: Vec<&str> = t.labels_of(p.at.frame).collect();
    if !named.is_empty() {
        parts.push(named.join(", "));
    }
    if p.len > 0 {
        parts.push(format!("{} B", p.len));
    } else if parts.is_empty() {
        parts.push("ACK".into());
    }
    if p.retransmission {
        parts.push("retransmission".into());
    }
    parts.join(" · ")
}
