//! The pipeline on several threads, with the reports of the serial run in
//! the serial run's order.
//!
//! ```text
//!   reader ──batch b, shard 0──▶ worker 0 ─┐
//!   (frames, decode,  ─shard 1──▶ worker 1 ─┼─ events of batch b ─▶ merger (calling thread)
//!    filter, sweeps)  ─ …      ─▶ worker n ─┘                      ─▶ on_conn, in serial order
//! ```
//!
//! - The **reader** reads and decodes every frame (counts, quality notes,
//!   the filter, as the serial run does) and hands each tracked frame to
//!   the worker its connection belongs to (a hash of the 4-tuple, so a
//!   connection's packets always go to the same worker, in capture order),
//!   as a share of its read buffer, not a copy. At the sweep points of the
//!   serial run ([`SWEEP_EVERY`](crate::flow::SWEEP_EVERY),
//!   [`SWEEP_MIN`](crate::flow::SWEEP_MIN), counted over the whole capture)
//!   it tells every worker to sweep, with the capture's latest timestamp:
//!   each table then hands on each connection at the same frame the single
//!   table of the serial run would.
//! - Each **worker** owns a [`FlowTable`] and runs the analysis and the
//!   detectors of the connections that end, tagging each event with the
//!   frame it happened at: a connection opened, ended by a new SYN, ended by
//!   a sweep, or left at the end.
//! - The **merger** takes every worker's events of batch `b` once all have
//!   answered, sorts them by frame (the serial run's order of events),
//!   numbers connections in the order they opened (the serial `index`), and
//!   passes the reports on. It also replays the count of open connections
//!   to find the serial run's peak.
//!
//! Memory: a few batches per worker (bounded channels), the connections
//! open in all tables, and the reports of a few batches at the merger.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

use super::{report_of, CaptureSummary, Intake, Options, Progress};
use crate::capture::{CaptureError, FrameSource, LinkType};
use crate::flow::{Conn, FlowTable};
use crate::report::ConnReport;
use crate::side::Mark;
use crate::time::Timestamp;
use crate::wire::{self, Decoded};

/// A batch is sent once it holds this many frames over all workers…
const BATCH_FRAMES: usize = 4096;
/// …or this many bytes of packet data.
const BATCH_BYTES: usize = 1 << 20;
/// Batches queued per worker.
const QUEUE: usize = 2;

/// What a worker reads: frames of its connections, and sweeps.
enum Item {
    Frame {
        at: Mark,
        link: LinkType,
        orig_len: u32,
        /// Where the frame's bytes are.
        bytes: Loc,
    },
    /// Sweep the table at `now`, after frame `frame`.
    Sweep { now: Timestamp, frame: u64 },
}

/// Where a frame's bytes are in its [`Batch`].
#[derive(Clone, Copy)]
enum Loc {
    /// In the reader's buffer `chunks[chunk]` (no copy).
    Chunk {
        chunk: usize,
        start: usize,
        len: usize,
    },
    /// Copied into `data` (a source that cannot share its buffer).
    Data { start: usize, len: usize },
}

/// A worker's share of one batch of frames.
struct Batch {
    seq: u64,
    /// The capture's first timestamp.
    start: Timestamp,
    items: Vec<Item>,
    /// The reader's buffers the frames are in, held until the batch is done.
    chunks: Vec<Arc<Vec<u8>>>,
    data: Vec<u8>,
    /// The last batch: hand on every connection still open.
    last: bool,
}

/// Where in the serial run's order an event falls (sorted as a tuple).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// Ended by a SYN with a new ISN on its 4-tuple, before that frame's
    /// segment opens the new connection.
    Reused,
    /// Opened by the frame.
    Opened,
    /// Ended by the sweep after the frame.
    Swept,
    /// Still open at the end of the capture.
    Left,
}

struct Event {
    frame: u64,
    phase: Phase,
    /// The connection's index in its worker's table.
    local: u64,
    /// The report of an ended connection (with the local index, replaced
    /// by the merger).
    report: Option<ConnReport>,
}

/// A worker's answer to one batch.
struct Answer {
    seq: u64,
    shard: usize,
    events: Vec<Event>,
    /// Counts of the worker's connections ended in this batch.
    oversized: u64,
    findings_by_id: BTreeMap<&'static str, u64>,
    /// With the last batch: the worker table's late segments.
    late_segments: u64,
    /// Segments whose TCP options did not parse.
    malformed_options: u64,
}

/// The worker a segment's connection belongs to.
fn shard_of(seg: &wire::TcpSegment<'_>, n: usize) -> usize {
    let end = |addr: std::net::IpAddr, port: u16| {
        let mut h = FxHasher::default();
        addr.hash(&mut h);
        port.hash(&mut h);
        h.finish()
    };
    // direction-independent: the same for both halves of a connection
    let h = end(seg.src, seg.src_port) ^ end(seg.dst, seg.dst_port);
    // the high bits of Fx's multiply are the mixed ones
    ((h >> 32) as usize) % n
}

/// [`super::run_with`] on `options.threads` workers, a reading thread and
/// the calling thread (which calls `on_conn` and `progress`).
pub(super) fn run(
    reader: &mut dyn FrameSource,
    options: &Options,
    on_conn: &mut dyn FnMut(ConnReport),
    progress: &mut dyn FnMut(Progress),
) -> Result<CaptureSummary, CaptureError> {
    let n = options.threads.max(2);
    let bytes_read = AtomicU64::new(0);
    let frames_read = AtomicU64::new(0);
    let (answer_tx, answer_rx) = mpsc::sync_channel::<Answer>(QUEUE * n);
    // emptied batches go back to the reader to be filled again: fresh
    // buffers of a MiB each cost page faults, and freeing them on another
    // thread costs the allocator more
    let (recycle_tx, recycle_rx) = mpsc::channel::<Batch>();
    std::thread::scope(|s| {
        let mut inputs = Vec::with_capacity(n);
        for shard in 0..n {
            let (tx, rx) = mpsc::sync_channel::<Batch>(QUEUE);
            inputs.push(tx);
            let answers = answer_tx.clone();
            let recycle = recycle_tx.clone();
            let trace = options.trace;
            std::thread::Builder::new()
                .name(format!("rttlens-flow-{shard}"))
                .spawn_scoped(s, move || worker(shard, trace, &rx, (&answers, &recycle)))
                .expect("spawn a flow worker thread");
        }
        drop(answer_tx);
        drop(recycle_tx);
        let read = (&bytes_read, &frames_read);
        let read = std::thread::Builder::new()
            .name("rttlens-read".into())
            .spawn_scoped(s, move || {
                read_frames(reader, options, (inputs, recycle_rx), read)
            })
            .expect("spawn the reading thread");
        let mut tell = || {
            progress(Progress {
                bytes: bytes_read.load(Ordering::Relaxed),
                frames: frames_read.load(Ordering::Relaxed),
            });
        };
        let merged = merge(n, &answer_rx, on_conn, &mut tell);
        let read = read.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        let mut sum = read?;
        sum.connections = merged.connections;
        sum.peak_open_connections = merged.peak_open;
        sum.findings_by_id = merged.findings_by_id;
        sum.quality.late_segments = merged.late_segments;
        sum.quality.oversized_segments = merged.oversized;
        sum.quality.malformed_tcp_options = merged.malformed_options;
        Ok(sum)
    })
}

/// The reading thread: frames into per-worker batches.
fn read_frames(
    reader: &mut dyn FrameSource,
    options: &Options,
    (inputs, recycled): (Vec<SyncSender<Batch>>, Receiver<Batch>),
    (bytes_read, frames_read): (&AtomicU64, &AtomicU64),
) -> Result<CaptureSummary, CaptureError> {
    let n = inputs.len();
    let mut intake = Intake::new(options.filter.as_ref());
    // the workers decode their frames in full, and count the option notes
    intake.light = true;
    let new_batch = |seq, start| match recycled.try_recv() {
        Ok(b) => Batch {
            seq,
            start,
            last: false,
            ..b
        },
        Err(_) => Batch {
            seq,
            start,
            items: Vec::with_capacity(BATCH_FRAMES / n + 16),
            chunks: Vec::new(),
            data: Vec::new(),
            last: false,
        },
    };
    let mut seq = 0u64;
    let mut batches: Vec<Batch> = (0..n).map(|_| new_batch(0, Timestamp::default())).collect();
    let (mut frames, mut bytes) = (0usize, 0usize);
    // a worker that stopped (it panicked): stop reading, the merger reports
    let send = |batches: &mut Vec<Batch>, seq: &mut u64, start, last| -> bool {
        let mut ok = true;
        for (b, tx) in batches.iter_mut().zip(&inputs) {
            let mut full = std::mem::replace(b, new_batch(*seq + 1, start));
            full.seq = *seq;
            full.start = start;
            full.last = last;
            ok &= tx.send(full).is_ok();
        }
        *seq += 1;
        ok
    };
    let result = loop {
        let (frame, shared) = match intake.next_shared(reader) {
            Ok(Some(f)) => f,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        if let Some((seg, at)) = intake.take(&frame) {
            let shard = shard_of(&seg, n);
            let (link, orig_len, len) = (frame.link_type, frame.orig_len, frame.data.len());
            let b = &mut batches[shard];
            let loc = match shared {
                // the reader's buffer, shared: no copy
                Some(f) => {
                    if !b.chunks.last().is_some_and(|c| Arc::ptr_eq(c, f.chunk)) {
                        b.chunks.push(Arc::clone(f.chunk));
                    }
                    Loc::Chunk {
                        chunk: b.chunks.len() - 1,
                        start: f.start,
                        len: f.len,
                    }
                }
                None => {
                    let start = b.data.len();
                    b.data.extend_from_slice(frame.data);
                    Loc::Data { start, len }
                }
            };
            b.items.push(Item::Frame {
                at,
                link,
                orig_len,
                bytes: loc,
            });
            frames += 1;
            bytes += len;
            if intake.sweep_due() {
                for b in &mut batches {
                    b.items.push(Item::Sweep {
                        now: intake.now,
                        frame: at.frame,
                    });
                }
            }
        }
        if frames >= BATCH_FRAMES || bytes >= BATCH_BYTES {
            bytes_read.store(reader.bytes_read(), Ordering::Relaxed);
            frames_read.store(intake.sum.frames, Ordering::Relaxed);
            if !send(&mut batches, &mut seq, intake.start(), false) {
                break Ok(());
            }
            (frames, bytes) = (0, 0);
        }
    };
    // the last batch, also after an error: the workers and the merger end
    send(&mut batches, &mut seq, intake.start(), true);
    bytes_read.store(reader.bytes_read(), Ordering::Relaxed);
    frames_read.store(intake.sum.frames, Ordering::Relaxed);
    result?;
    Ok(intake.finish(reader))
}

/// A worker: its share of the connections, through flow tracking,
/// analysis and detectors.
fn worker(
    shard: usize,
    trace: bool,
    input: &Receiver<Batch>,
    (answers, recycle): (&SyncSender<Answer>, &mpsc::Sender<Batch>),
) {
    let mut table = if trace {
        FlowTable::with_trace()
    } else {
        FlowTable::new()
    };
    while let Ok(batch) = input.recv() {
        let mut a = Answer {
            seq: batch.seq,
            shard,
            events: Vec::new(),
            oversized: 0,
            findings_by_id: BTreeMap::new(),
            late_segments: 0,
            malformed_options: 0,
        };
        let start = batch.start;
        let end = |c: Box<Conn>, frame: u64, phase: Phase, a: &mut Answer| {
            a.oversized += c.half[0].oversized + c.half[1].oversized;
            let local = c.index;
            let report = report_of(c, start, &mut a.findings_by_id);
            a.events.push(Event {
                frame,
                phase,
                local,
                report: Some(report),
            });
        };
        for item in &batch.items {
            match *item {
                Item::Frame {
                    at,
                    link,
                    orig_len,
                    bytes,
                } => {
                    let data = match bytes {
                        Loc::Chunk { chunk, start, len } => batch
                            .chunks
                            .get(chunk)
                            .and_then(|c| c.get(start..start + len)),
                        Loc::Data { start, len } => batch.data.get(start..start + len),
                    }
                    .unwrap_or(&[]);
                    // decoded as the reader decoded it: always TCP
                    let Ok(Decoded::Tcp(seg)) = wire::decode(link, data, orig_len) else {
                        continue;
                    };
                    a.malformed_options += u64::from(seg.options.malformed);
                    let mut ended = None;
                    let opened = table.push(&seg, at, &mut |c| ended = Some(c));
                    if let Some(c) = ended {
                        end(c, at.frame, Phase::Reused, &mut a);
                    }
                    if opened {
                        a.events.push(Event {
                            frame: at.frame,
                            phase: Phase::Opened,
                            local: table.opened() - 1,
                            report: None,
                        });
                    }
                }
                Item::Sweep { now, frame } => {
                    let mut swept = Vec::new();
                    table.sweep(now, &mut |c| swept.push(c));
                    for c in swept {
                        end(c, frame, Phase::Swept, &mut a);
                    }
                }
            }
        }
        if batch.last {
            a.late_segments = table.late_segments;
            let table = std::mem::take(&mut table);
            let mut left = Vec::new();
            table.finish(&mut |c| left.push(c));
            for c in left {
                end(c, u64::MAX, Phase::Left, &mut a);
            }
        }
        let last = batch.last;
        let mut batch = batch;
        batch.items.clear();
        batch.chunks.clear();
        batch.data.clear();
        // the reader may be gone (the end): the batch is then dropped
        let _ = recycle.send(batch);
        if answers.send(a).is_err() || last {
            return;
        }
    }
}

/// What the merger counted.
#[derive(Default)]
struct Merged {
    connections: u64,
    peak_open: usize,
    findings_by_id: BTreeMap<&'static str, u64>,
    late_segments: u64,
    oversized: u64,
    malformed_options: u64,
}

/// The calling thread: answers put back in the serial order.
fn merge(
    n: usize,
    answers: &Receiver<Answer>,
    on_conn: &mut dyn FnMut(ConnReport),
    progress: &mut dyn FnMut(),
) -> Merged {
    let mut m = Merged::default();
    // batch seq -> the answers so far
    let mut pending: BTreeMap<u64, Vec<Answer>> = BTreeMap::new();
    let mut next = 0u64;
    // per worker: local index -> serial index, for open connections
    let mut index: Vec<FxHashMap<u64, u64>> = vec![FxHashMap::default(); n];
    let mut opened = 0u64;
    let mut open = 0usize;
    let mut events: Vec<(usize, Event)> = Vec::new();
    let mut ended: Vec<(u64, Phase, u64, ConnReport)> = Vec::new();
    while let Ok(a) = answers.recv() {
        pending.entry(a.seq).or_default().push(a);
        while pending.get(&next).is_some_and(|v| v.len() == n) {
            let Some(batch) = pending.remove(&next) else {
                break;
            };
            next += 1;
            for a in batch {
                m.oversized += a.oversized;
                m.late_segments += a.late_segments;
                m.malformed_options += a.malformed_options;
                for (k, v) in a.findings_by_id {
                    *m.findings_by_id.entry(k).or_default() += v;
                }
                events.extend(a.events.into_iter().map(|e| (a.shard, e)));
            }
            // the serial order of events: by frame, then phase; serial
            // indexes are given in that order
            events.sort_unstable_by_key(|(shard, e)| (e.frame, e.phase, *shard, e.local));
            for (shard, e) in events.drain(..) {
                let map = &mut index[shard];
                if e.phase == Phase::Opened {
                    map.insert(e.local, opened);
                    opened += 1;
                    open += 1;
                    m.peak_open = m.peak_open.max(open);
                    continue;
                }
                open = open.saturating_sub(1);
                let serial = map.remove(&e.local).unwrap_or(u64::MAX);
                if let Some(r) = e.report {
                    ended.push((e.frame, e.phase, serial, r));
                }
            }
            // connections ended at the same frame and phase (a sweep, the
            // end) go in serial index order, as one table hands them on
            ended.sort_unstable_by_key(|(frame, phase, serial, _)| (*frame, *phase, *serial));
            for (_, _, serial, mut r) in ended.drain(..) {
                r.renumber(serial);
                m.connections += 1;
                on_conn(r);
            }
            progress();
        }
    }
    m
}
