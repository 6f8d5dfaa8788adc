//! The whole pipeline over one capture: frames → wire → flow → analysis →
//! detectors → [`ConnReport`]s, streamed to the caller as connections end.

use std::collections::BTreeMap;

mod intake;
pub(crate) mod parallel;

use intake::Intake;

use crate::analysis;
use crate::base::time::Timestamp;
use crate::capture::{CaptureError, FrameSource, Next};
use crate::detect;
use crate::filter::Filter;
use crate::flow::half::FrameMark;
use crate::flow::{Conn, FlowTable};
use crate::model::QuicReport;
use crate::model::{ConnReport, Connection};
use crate::proto::protocols::Protocols;

/// `--shard K/N` ([`Options::shard`]).
pub use crate::flow::shard::Shard;
pub use crate::model::{CaptureSummary, Quality, TlsTally};

/// How far the reading is, for a progress bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes read from the files (compressed bytes for gzip).
    pub bytes: u64,
    /// Frames read.
    pub frames: u64,
}

/// Run the pipeline over `reader`. Each finished connection's record goes
/// to `on_conn`, TCP and QUIC alike, in the order connections end (which
/// for most captures is close to index order; the same order at any thread
/// count); `progress` gets how far the reading is every few thousand
/// frames.
///
/// # Errors
/// Only when not a single frame could be read (the input is not a usable
/// capture). A capture that breaks off later is analysed up to the break and
/// the problem is noted in `Quality::truncated`.
pub fn run(
    reader: &mut dyn FrameSource,
    on_conn: &mut dyn FnMut(Connection),
    progress: &mut dyn FnMut(Progress),
) -> Result<CaptureSummary, CaptureError> {
    run_with(reader, &Options::default(), on_conn, progress)
}

/// What [`run_with`] keeps beyond the reports, and how it works.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Keep every packet of each connection in [`ConnReport::trace`] (for
    /// the pictures): memory grows with the packets of the connections
    /// open at once, and with whatever the caller keeps.
    pub trace: bool,
    /// Keep every packet of each QUIC connection with its frames, the RTT
    /// samples and the losses in [`QuicReport::journal`] (for qlog):
    /// memory grows with the packets of the QUIC connections open at once.
    pub journal: bool,
    /// Threads: 0 or 1 analyse on the calling thread; N > 1 shard the
    /// connections over a reading thread and N − 1 flow threads (the
    /// calling thread merges), with the same reports in the same order
    /// (`parallel`).
    pub threads: usize,
    /// Only TCP segments passing this filter are tracked (the others are
    /// counted in `CaptureSummary::filtered_out`).
    pub filter: Option<Filter>,
    /// The population view's interval (ms); `None`: automatic (at most 60
    /// intervals over the capture).
    pub interval_ms: Option<u64>,
    /// Set after every frame to the connections open at that moment
    /// (opened and not yet handed on), for a live capture's watchers (the
    /// exporter's `rttlens_live_open_connections`). Kept by a one-thread
    /// run only (`threads` ≤ 1); with more it is left alone.
    pub open_connections: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// The seed of every record's Community ID
    /// ([`crate::wire::community_id`]): 0, every tool's default, unless a
    /// site hashes with its own (`--community-id-seed`, Zeek's
    /// `CommunityID::seed`, Suricata's `community-id-seed`).
    pub community_id_seed: u16,
    /// `--shard K/N`: only the connections of this shard are analysed and
    /// handed on ([`crate::flow::shard`]); the others are tracked only as
    /// far as they open and end, so every index and hand-off point is the
    /// unsharded run's. The summary's counts of the capture (frames,
    /// segments, bytes, quality, peak open connections) stay the whole
    /// capture's; its connections, findings, TLS tally, population view
    /// and QUIC list are the shard's.
    pub shard: Option<Shard>,
    /// With more than one thread: each TCP connection's output written
    /// by this function on the flow thread that made its report, kept in
    /// [`ConnReport::rendered`] for the renderer (JSON and JSON Lines: the
    /// merging thread then copies bytes instead of rendering,
    /// [`crate::model::Rendered`]). A one-thread run leaves it alone.
    pub prerender: Option<crate::model::Prerender>,
}

/// [`run`], keeping what `options` asks for.
///
/// A QUIC connection is handed on as it ends: the QUIC table sweeps it
/// 3 s after a CONNECTION_CLOSE or 120 s after its last packet, before the
/// TCP connections the same frame ends; the rest at the end of the
/// capture, after the TCP connections. Both kinds go into the population
/// view; the TLS tally counts TCP connections.
///
/// # Errors
/// As [`run`].
pub fn run_with(
    reader: &mut dyn FrameSource,
    options: &Options,
    on_conn: &mut dyn FnMut(Connection),
    progress: &mut dyn FnMut(Progress),
) -> Result<CaptureSummary, CaptureError> {
    let mut tls = TlsTally::default();
    let mut population = crate::population::Population::new(options.interval_ms);
    let mut quic_findings: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut on_conn = |c: Connection| {
        match &c {
            Connection::Tcp(r) => {
                tls.add(r);
                population.add(&r.population_conn(), &r.sample);
            }
            Connection::Quic(q) => {
                population.add(&q.population_conn(), &q.sample);
                for f in &q.findings {
                    *quic_findings.entry(f.id).or_default() += 1;
                }
            }
        }
        on_conn(c);
    };
    let mut sum = run_counted(reader, options, &mut on_conn, progress)?;
    for (id, n) in quic_findings {
        *sum.findings_by_id.entry(id).or_default() += n;
    }
    tls.key_log = !reader.key_store().is_empty();
    sum.tls = tls;
    sum.population = population.finish();
    Ok(sum)
}

/// [`run_with`] without the TLS tally and the population view.
fn run_counted(
    reader: &mut dyn FrameSource,
    options: &Options,
    on_conn: &mut dyn FnMut(Connection),
    progress: &mut dyn FnMut(Progress),
) -> Result<CaptureSummary, CaptureError> {
    if options.threads > 1 {
        return parallel::run(reader, options, on_conn, progress);
    }
    let mut findings_by_id: BTreeMap<&'static str, u64> = BTreeMap::new();
    // the TCP table's and the QUIC table's hand-offs share the one callback
    let on_conn = std::cell::RefCell::new(on_conn);
    let mut finish = |conn: Box<Conn<Protocols>>, start: Timestamp| {
        let report = report_of(conn, start, options.community_id_seed, &mut findings_by_id);
        (on_conn.borrow_mut())(report.into());
    };
    let table = if options.trace {
        FlowTable::with_trace()
    } else {
        FlowTable::new()
    }
    .with_ctx(reader.key_store())
    .with_shard(options.shard, options.community_id_seed, false);
    let mut on_quic = |q: QuicReport| (on_conn.borrow_mut())(q.into());
    let mut sum = scan(
        reader,
        options,
        table,
        &mut finish,
        &mut on_quic,
        progress,
        None,
    )?;
    sum.findings_by_id = findings_by_id;
    Ok(sum)
}

/// The analysis of one finished connection: analysis, detectors, report
/// (its Community ID with `seed`); its findings counted by id. Once: the
/// engine makes no sentence, so a connection no output shows costs no
/// more than its typed record.
fn report_of(
    conn: Box<Conn<Protocols>>,
    start: Timestamp,
    seed: u16,
    findings_by_id: &mut BTreeMap<&'static str, u64>,
) -> ConnReport {
    let mut a = analysis::analyze(conn);
    let findings = detect::run_all(&a);
    let trace = a.take_trace().map(|mut t| {
        t.labels = crate::analysis::connection::frame_labels(&a);
        t
    });
    if cfg!(debug_assertions) {
        let bad = detect::self_check::check(&a, &findings);
        assert!(
            bad.is_empty(),
            "engine self-check failed on connection {} (frames {}–{}):\n  {}",
            a.index(),
            a.first().frame,
            a.last().frame,
            bad.join("\n  ")
        );
    }
    for f in &findings {
        *findings_by_id.entry(f.id).or_default() += 1;
    }
    let mut report = ConnReport::new(a, findings, start, seed);
    report.trace = trace;
    report
}

/// Every frame's TCP analysis marks ([`FrameMark`]) over the whole capture,
/// sorted by frame number (Wireshark's numbering): what the engine's flow
/// layer said of each frame, to compare with Wireshark's `tcp.analysis.*`
/// flags. Memory grows with the marks; detectors do not run.
///
/// # Errors
/// As [`run`]: only when not a single frame could be read.
pub fn frame_marks(reader: &mut dyn FrameSource) -> Result<Vec<(u64, FrameMark)>, CaptureError> {
    let mut marks = Vec::new();
    let mut take = |c: Box<Conn<Protocols>>, _: Timestamp| {
        for mut h in c.half {
            marks.extend(h.take_marks().into_iter().map(|(m, k)| (m.frame, k)));
        }
    };
    let options = Options::default();
    let mut copies = Vec::new();
    scan(
        reader,
        &options,
        FlowTable::with_marks(),
        &mut take,
        &mut |_| {},
        &mut |_| {},
        Some(&mut copies),
    )?;
    marks.extend(copies.into_iter().map(|f| (f, FrameMark::CapturedTwice)));
    marks.sort_by_key(|&(f, _)| f);
    Ok(marks)
}

/// Read every frame of `reader` into `table`; each finished connection goes
/// to `finish` with the capture's first timestamp, each QUIC connection to
/// `on_quic` as it ends (before the TCP connections the same frame ends)
/// or, still open at the end, after every TCP connection, in index order.
/// Returns the capture's summary without `findings_by_id` (the caller's to
/// fill).
fn scan(
    reader: &mut dyn FrameSource,
    options: &Options,
    mut table: FlowTable<Protocols>,
    finish: &mut dyn FnMut(Box<Conn<Protocols>>, Timestamp),
    on_quic: &mut dyn FnMut(QuicReport),
    progress: &mut dyn FnMut(Progress),
    copies: Option<&mut Vec<u64>>,
) -> Result<CaptureSummary, CaptureError> {
    let mut intake = Intake::new(options.filter.as_ref())
        .with_keys(reader.key_store(), options.trace, options.journal)
        .with_seed(options.community_id_seed, options.shard);
    // once: the source does not change (it was asked on every frame)
    intake.live = reader.is_live();
    intake.copy_frames = copies.as_ref().map(|_| Vec::new());
    let connections = std::cell::Cell::new(0u64);
    let mut oversized = 0u64;
    let mut finish = |conn: Box<Conn<Protocols>>, start: Timestamp| {
        connections.set(connections.get() + 1);
        oversized += conn.half[0].send.oversized + conn.half[1].send.oversized;
        finish(conn, start);
    };
    while let Some(next) = intake.next_or_idle(reader)? {
        let frame = match next {
            Next::Frame(f) => f,
            // a live source's quiet: the connections over by now are
            // handed on, QUIC's first, as after a frame
            Next::Idle(now) => {
                if !intake.idle(now) {
                    continue;
                }
                for q in intake.quic_ended.drain(..) {
                    on_quic(q);
                }
                let start = intake.start();
                table.sweep(intake.now, &mut |c| finish(c, start));
                if let Some(open) = &options.open_connections {
                    open.store(table.open_now(), std::sync::atomic::Ordering::Relaxed);
                }
                continue;
            }
        };
        let taken = intake.take(&frame);
        for q in intake.quic_ended.drain(..) {
            on_quic(q);
        }
        let start = intake.start();
        if let Some((seg, at)) = taken {
            table.push(&seg, at, &mut |c| finish(c, start));
        }
        if intake.sweep_due() {
            table.sweep(intake.now, &mut |c| finish(c, start));
        }
        if let Some(open) = &options.open_connections {
            open.store(table.open_now(), std::sync::atomic::Ordering::Relaxed);
        }
        if intake.sum.frames % 8192 == 0 {
            progress(Progress {
                bytes: reader.bytes_read(),
                frames: intake.sum.frames,
            });
        }
    }
    if let (Some(out), Some(found)) = (copies, intake.copy_frames.take()) {
        *out = found;
    }
    let start = intake.start();
    let peak_open = table.peak_open;
    let late_segments = table.late_segments;
    table.finish(&mut |c| finish(c, start));
    progress(Progress {
        bytes: reader.bytes_read(),
        frames: intake.sum.frames,
    });
    let (mut sum, quic_left) = intake.finish(reader);
    for q in quic_left {
        on_quic(q);
    }
    sum.peak_open_connections = peak_open;
    sum.quality.late_segments = late_segments;
    sum.connections = connections.get();
    sum.quality.oversized_segments = oversized;
    if let Some(open) = &options.open_connections {
        open.store(0, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(sum)
}
