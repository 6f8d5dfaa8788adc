//! The whole pipeline over one capture: frames → wire → flow → analysis →
//! detectors → [`ConnReport`]s, streamed to the caller as connections end.

use std::collections::BTreeMap;

use crate::analysis;
use crate::capture::{CaptureError, CaptureReader};
use crate::detect;
use crate::flow::half::FrameMark;
use crate::flow::{Conn, FlowTable};
use crate::report::ConnReport;
use crate::side::Mark;
use crate::time::Timestamp;
use crate::wire::{self, Decoded};

/// Counted problems with the capture (DESIGN.md §9): the analysis went on.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Quality {
    /// Frames that could not be decoded, per reason.
    pub decode_errors: BTreeMap<String, u64>,
    /// TCP segments cut short by the snapshot length.
    pub snaplen_cut: u64,
    /// TCP segments whose option list did not parse.
    pub malformed_tcp_options: u64,
    /// The file ended inside a record: what went wrong there.
    pub truncated: Option<String>,
    /// Notes from the capture reader (e.g. SPB without timestamp).
    pub reader_notes: BTreeMap<String, u64>,
    /// Segments of connections already closed and handed on (ignored).
    pub late_segments: u64,
    /// Data segments larger than their sender's MSS: the capture was taken
    /// on an end host with TSO/GSO/GRO offload (not an error: the analysis
    /// counts bytes, so rounds and flight stay right).
    pub oversized_segments: u64,
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
        if let Some(t) = &self.truncated {
            parts.push(format!("file breaks off: {t}"));
        }
        parts
    }
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
    /// Packets that were not TCP (ARP, UDP, …).
    pub other_packets: u64,
    /// Capture bytes read.
    pub bytes: u64,
    /// First packet's time (Unix seconds).
    pub first_ts: f64,
    /// Duration from first to last packet (s).
    pub duration_s: f64,
    /// TCP connections.
    pub connections: u64,
    /// Most connections open at once.
    pub peak_open_connections: usize,
    /// Findings per id over all connections.
    pub findings_by_id: BTreeMap<&'static str, u64>,
    /// Capture quality notes.
    pub quality: Quality,
}

/// Run the pipeline over `reader`. Each finished connection's report goes
/// to `on_conn` (in the order connections end, which for most captures is
/// close to index order); `progress` gets the capture bytes read so far
/// every few thousand frames.
///
/// # Errors
/// Only when not a single frame could be read (the input is not a usable
/// capture). A capture that breaks off later is analysed up to the break and
/// the problem is noted in [`Quality::truncated`].
pub fn run(
    reader: &mut CaptureReader,
    on_conn: &mut dyn FnMut(ConnReport),
    progress: &mut dyn FnMut(u64),
) -> Result<CaptureSummary, CaptureError> {
    run_with(reader, Options::default(), on_conn, progress)
}

/// What [`run_with`] keeps beyond the reports.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Keep every packet of each connection in [`ConnReport::trace`] (for
    /// the pictures): memory grows with the packets of the connections
    /// open at once, and with whatever the caller keeps.
    pub trace: bool,
}

/// [`run`], keeping what `options` asks for.
///
/// # Errors
/// As [`run`].
pub fn run_with(
    reader: &mut CaptureReader,
    options: Options,
    on_conn: &mut dyn FnMut(ConnReport),
    progress: &mut dyn FnMut(u64),
) -> Result<CaptureSummary, CaptureError> {
    let mut findings_by_id: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut finish = |conn: Box<Conn>, start: Timestamp| {
        let mut a = analysis::analyze(conn);
        let trace = a.conn.take_trace().map(|mut t| {
            t.labels = crate::flow::trace::labels(&a);
            t
        });
        let findings = detect::run_all(&a);
        for f in &findings {
            *findings_by_id.entry(f.id).or_default() += 1;
        }
        let mut report = ConnReport::new(&a, findings, start);
        report.trace = trace;
        on_conn(report);
    };
    let table = if options.trace {
        FlowTable::with_trace()
    } else {
        FlowTable::new()
    };
    let mut sum = scan(reader, table, &mut finish, progress)?;
    sum.findings_by_id = findings_by_id;
    Ok(sum)
}

/// Every frame's TCP analysis marks ([`FrameMark`]) over the whole capture,
/// sorted by frame number (Wireshark's numbering): what the engine's flow
/// layer said of each frame, to compare with Wireshark's `tcp.analysis.*`
/// flags. Memory grows with the marks; detectors do not run.
///
/// # Errors
/// As [`run`]: only when not a single frame could be read.
pub fn frame_marks(reader: &mut CaptureReader) -> Result<Vec<(u64, FrameMark)>, CaptureError> {
    let mut marks = Vec::new();
    let mut take = |c: Box<Conn>, _: Timestamp| {
        for h in c.half {
            marks.extend(h.marks.into_iter().flatten().map(|(m, k)| (m.frame, k)));
        }
    };
    scan(reader, FlowTable::with_marks(), &mut take, &mut |_| {})?;
    marks.sort_by_key(|&(f, _)| f);
    Ok(marks)
}

/// Read every frame of `reader` into `table`; each finished connection goes
/// to `finish` with the capture's first timestamp. Returns the capture's
/// summary without `findings_by_id` (the caller's to fill).
fn scan(
    reader: &mut CaptureReader,
    mut table: FlowTable,
    finish: &mut dyn FnMut(Box<Conn>, Timestamp),
    progress: &mut dyn FnMut(u64),
) -> Result<CaptureSummary, CaptureError> {
    let mut sum = CaptureSummary::default();
    let mut first: Option<Timestamp> = None;
    let mut last = Timestamp::default();
    let mut connections = 0u64;
    let mut oversized = 0u64;
    let mut finish = |conn: Box<Conn>, start: Timestamp| {
        connections += 1;
        oversized += conn.half[0].oversized + conn.half[1].oversized;
        finish(conn, start);
    };
    loop {
        let frame = match reader.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) if sum.frames == 0 => return Err(e),
            Err(e) => {
                sum.quality.truncated = Some(e.to_string());
                break;
            }
        };
        sum.frames += 1;
        let at = Mark {
            frame: frame.number,
            ts: frame.ts,
        };
        let start = *first.get_or_insert(frame.ts);
        last = last.max(frame.ts);
        match wire::decode(frame.link_type, frame.data, frame.orig_len) {
            Ok(Decoded::Tcp(seg)) => {
                sum.tcp_segments += 1;
                if (seg.payload.len() as u32) < seg.payload_len {
                    sum.quality.snaplen_cut += 1;
                }
                if seg.options.malformed {
                    sum.quality.malformed_tcp_options += 1;
                }
                table.push(&seg, at, &mut |c| finish(c, start));
            }
            Ok(_) => sum.other_packets += 1,
            Err(e) => *sum.quality.decode_errors.entry(e.to_string()).or_default() += 1,
        }
        if sum.frames % 8192 == 0 {
            progress(reader.bytes_read());
        }
    }
    let start = first.unwrap_or_default();
    sum.peak_open_connections = table.peak_open;
    sum.quality.late_segments = table.late_segments;
    table.finish(&mut |c| finish(c, start));
    progress(reader.bytes_read());
    sum.format = reader.format().to_string();
    if reader.is_gzip() {
        sum.format.push_str(" (gzip)");
    }
    sum.bytes = reader.bytes_read();
    sum.first_ts = start.as_secs_f64();
    sum.duration_s = (last - start).as_secs_f64();
    sum.connections = connections;
    sum.quality.oversized_segments = oversized;
    let n = reader.notes();
    let notes = [
        // frames cut by snaplen: counted above per TCP segment (`snaplen_cut`)
        (
            "records with caplen above the wire length",
            n.caplen_above_orig_len,
        ),
        ("packets without timestamp (SPB)", n.missing_timestamp),
        ("packets on an undescribed interface", n.unknown_interface),
        ("malformed pcapng blocks", n.malformed_blocks),
        (
            "interfaces with an unusable timestamp resolution",
            n.bad_ts_resolution,
        ),
        ("timestamps going backwards", n.ts_backwards),
    ];
    for (k, v) in notes {
        if v > 0 {
            sum.quality.reader_notes.insert(k.to_string(), v);
        }
    }
    Ok(sum)
}
