//! The record of a capture as a whole (JSON: `capture`, docs/json.md):
//! what it held, its quality, its TLS, the findings by id and the
//! population view.

use std::collections::BTreeMap;

use super::ConnReport;

/// Counted problems with the capture (docs/design.md §9): the analysis went
/// on.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Quality {
    /// Frames that could not be decoded, per reason.
    pub(crate) decode_errors: BTreeMap<String, u64>,
    /// TCP segments cut short by the snapshot length.
    pub snaplen_cut: u64,
    /// TCP segments whose option list did not parse.
    pub(crate) malformed_tcp_options: u64,
    /// The file ended inside a record: what went wrong there.
    pub(crate) truncated: Option<String>,
    /// Notes from the capture reader (e.g. SPB without timestamp).
    pub reader_notes: BTreeMap<String, u64>,
    /// Segments of connections already closed and handed on (ignored).
    pub(crate) late_segments: u64,
    /// Data segments larger than their sender's MSS: the capture was taken
    /// on an end host with TSO/GSO/GRO offload (not an error: the analysis
    /// counts bytes, so rounds and flight stay right).
    pub oversized_segments: u64,
    /// Exact copies of a segment just seen (captured on two interfaces or
    /// from a SPAN port), dropped before the flow layer
    /// (`wire::duplicates`). Absent from the JSON when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicate_frames: u64,
    /// A live capture's packets the kernel dropped because its receive
    /// buffer was full (`FrameSource::kernel_drops`): the analysis missed
    /// them. Absent from the JSON for a file; present, 0 included, for a
    /// live capture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_drops: Option<u64>,
}

impl Quality {
    /// Whether anything at all was noted.
    pub fn is_clean(&self) -> bool {
        self.decode_errors.is_empty()
            && self.snaplen_cut == 0
            && self.malformed_tcp_options == 0
            && self.truncated.is_none()
            && self.reader_notes.values().all(|n| *n == 0)
            && self.late_segments == 0
            && self.oversized_segments == 0
            && self.duplicate_frames == 0
            && self.kernel_drops.unwrap_or(0) == 0
    }

    /// Each note in a person's words (empty when clean), as the text and
    /// HTML reports print them.
    pub fn notes(&self) -> Vec<String> {
        let mut parts = Vec::new();
        for (k, v) in &self.decode_errors {
            parts.push(format!("{v} undecodable ({k})"));
        }
        if self.snaplen_cut > 0 {
            parts.push(format!("{} segments cut by snaplen", self.snaplen_cut));
        }
        if self.malformed_tcp_options > 0 {
            parts.push(format!(
                "{} segments with malformed TCP options",
                self.malformed_tcp_options
            ));
        }
        for (k, v) in &self.reader_notes {
            parts.push(format!("{v} × {k}"));
        }
        if self.late_segments > 0 {
            parts.push(format!(
                "{} segments after their connection closed (ignored)",
                self.late_segments
            ));
        }
        if self.oversized_segments > 0 {
            parts.push(format!(
                "{} segments larger than the MSS (TSO/GSO/GRO offload at the capture point)",
                self.oversized_segments
            ));
        }
        if self.duplicate_frames > 0 {
            parts.push(format!(
                "{} exact duplicate frames (the same packet captured twice: two interfaces \
                 or a SPAN port) dropped before the analysis",
                self.duplicate_frames
            ));
        }
        if let Some(n) = self.kernel_drops.filter(|n| *n > 0) {
            parts.push(format!(
                "{n} packets dropped by the kernel (the capture's receive buffer ran full): \
                 connections may be missing segments"
            ));
        }
        if let Some(t) = &self.truncated {
            parts.push(format!("file breaks off: {t}"));
        }
        parts
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the capture as a whole held.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CaptureSummary {
    /// File format (`pcap`, `pcapng`, with gzip when compressed).
    pub format: String,
    /// Packet records read.
    pub frames: u64,
    /// TCP segments among them.
    pub tcp_segments: u64,
    /// The capture filter (`--filter`), when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) filter: Option<String>,
    /// TCP segments the filter left out (not tracked).
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) filtered_out: u64,
    /// Packets that were not TCP (ARP, UDP, …).
    pub other_packets: u64,
    /// Capture bytes read.
    pub(crate) bytes: u64,
    /// First packet's time (Unix seconds).
    pub(crate) first_ts: f64,
    /// Duration from first to last packet (s).
    pub duration_s: f64,
    /// TCP connections.
    pub connections: u64,
    /// Most connections open at once.
    pub peak_open_connections: usize,
    /// UDP datagrams that carried QUIC (absent without QUIC).
    #[serde(skip_serializing_if = "is_zero")]
    pub quic_datagrams: u64,
    /// Findings per id over all connections.
    pub findings_by_id: BTreeMap<&'static str, u64>,
    /// TLS connections, and what decryption did (absent without TLS).
    #[serde(skip_serializing_if = "TlsTally::is_empty")]
    pub tls: TlsTally,
    /// Capture quality notes.
    pub quality: Quality,
    /// What the crowd of connections shows: phase distributions, over
    /// time, the tail, population findings (`crate::population`).
    #[serde(flatten)]
    pub population: crate::population::PopulationReport,
}

/// The TLS connections of a capture, said once (docs/design.md §4 "TLS
/// without keys"): how many, their ALPN, and what decryption did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TlsTally {
    /// TLS connections (handshake seen).
    pub connections: u64,
    /// Connections per ALPN protocol selected (`h2`, `http/1.1`; `none`).
    pub alpn: BTreeMap<String, u64>,
    /// The analysis had TLS secrets (`--keylog`, pcapng Decryption Secrets
    /// Blocks).
    pub key_log: bool,
    /// Connections whose records were all opened.
    pub decrypted: u64,
    /// Connections with some records opened and some not.
    pub partial: u64,
    /// Connections not decrypted although a key log was given (no secret
    /// for them, no hellos in the capture, a suite not decrypted, wrong
    /// keys).
    pub not_decrypted: u64,
}

impl TlsTally {
    /// No TLS connection.
    pub fn is_empty(&self) -> bool {
        self.connections == 0
    }

    pub(crate) fn add(&mut self, c: &ConnReport) {
        use crate::proto::tls::decrypt::DecryptStatus;
        let Some(t) = &c.tls else { return };
        self.connections += 1;
        let alpn = t.info.alpn.as_deref().unwrap_or("none");
        // the key is allocated only the first time it is seen
        match self.alpn.get_mut(alpn) {
            Some(n) => *n += 1,
            None => {
                self.alpn.insert(alpn.to_string(), 1);
            }
        }
        match t.decryption.as_ref().map(|d| d.status) {
            None => {}
            Some(DecryptStatus::Decrypted) => self.decrypted += 1,
            Some(DecryptStatus::Partial) => self.partial += 1,
            Some(_) => self.not_decrypted += 1,
        }
    }
}
