// Over 700 lines: the reader, the flow threads, their scheduler and the
// merger share private types (batches, events, answers); apart they would
// import each other.
//! The pipeline on several threads, with the reports of the serial run in
//! the serial run's order.
//!
//! ```text
//!   reader ──batch b of shard 0──▶ flow thread 0 ─┐
//!   (frames, decode,  ─shard 1 ──▶ flow thread 1 ─┼─ events of batch b ─▶ merger (calling thread)
//!    filter, sweeps)  ─ …                         │                     ─▶ on_conn, in serial order
//!      └─ last shard: the reader's own, taken by ─┘
//!         whichever of it and the flow threads is free
//! ```
//!
//! - The connections are split into **shards**, one per thread (a hash of
//!   the 4-tuple, so a connection's packets always go to the same shard,
//!   in capture order). Each shard has its own [`FlowTable`]; one thread
//!   at a time processes its batches, in order.
//! - The **reader** reads and decodes every frame (counts, quality notes,
//!   the filter, as the serial run does) and queues each tracked frame in
//!   its shard's batch, as a share of its read buffer, not a copy. At the
//!   sweep points of the serial run ([`SWEEP_EVERY`](crate::flow::SWEEP_EVERY),
//!   [`SWEEP_MIN`](crate::flow::SWEEP_MIN), counted over the whole capture)
//!   it tells every shard to sweep, with the capture's latest timestamp:
//!   each table then hands on each connection at the same frame the single
//!   table of the serial run would. When too many batches wait, it
//!   processes batches of its own shard rather than block (`Pool`).
//! - Each **flow thread** processes the batches of its shard, and of the
//!   reader's when its own has none: flow tracking, then the analysis and
//!   detectors of the connections that end, each event tagged with the
//!   frame it happened at: a connection opened, ended by a new SYN, ended
//!   by a sweep, or left at the end.
//! - The **merger** takes every shard's events of batch `b` once all have
//!   answered, sorts them by frame (the serial run's order of events),
//!   numbers connections in the order they opened (the serial `index`), and
//!   passes the reports on. It also replays the count of open connections
//!   to find the serial run's peak.
//!
//! Memory: at most `QUEUE` (2) batches per shard waiting, the connections
//! open in all tables, and the reports of a few batches at the merger. A
//! sweep that ends more than `SWEEP_DEFER` connections of a shard at once
//! (after a silence longer than the idle timeout) sends their state, and
//! the merger makes their reports a chunk at a time (`DEFER_CHUNK`, on all
//! the threads), instead of holding every one of them at once.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use rustc_hash::FxHashMap;

use super::{report_of, CaptureSummary, Intake, Options, Progress};
use crate::base::side::FrameRef;
use crate::base::time::Timestamp;
use crate::capture::keylog::KeyStore;
use crate::capture::{CaptureError, Chunk, FrameSource, Next};
use crate::flow::{Conn, FlowTable, Leaving};
use crate::model::{Connection, QuicReport};
use crate::proto::protocols::Protocols;
use crate::wire::{self, TcpSegment};

/// A batch is sent once it holds this many frames over all shards…
const BATCH_FRAMES: usize = 1024;
/// …or once this many bytes of packets were read (taken or not).
const BATCH_BYTES: usize = 1 << 20;
/// Batches waiting per shard before the reader processes some itself.
const QUEUE: usize = 2;
/// At the end of the capture, a shard sends the reports of the connections
/// still open in answers of this many, which the merger interleaves as
/// they come: a storm's tens of thousands of half-open connections are not
/// all reports in memory at once.
const LEFT_CHUNK: usize = 512;
/// A sweep of one shard that ends more connections than this (the first
/// packet after a silence longer than the idle timeout: every connection
/// still open, tens of thousands in a storm) sends their state, not their
/// reports: the merger makes the reports as it hands them on ([`Ended`],
/// [`DEFER_CHUNK`] at a time), so the burst holds the connections' state
/// (a connection of SYNs only still as its SYNs), as the serial run does,
/// not also a report of a few KB for each (12 copies of the bench storm
/// 310 s apart, 2 threads: 135 MB peak RSS before, 70 MB after; the storm
/// itself 61 MB). Sweeps of a steady capture end a few hundred at most and
/// keep their reports made on the flow threads.
const SWEEP_DEFER: usize = 4096;

/// What a shard's batch holds: frames of its connections, and sweeps.
enum Item {
    /// A tracked segment, decoded by the reader: a flow thread reads the
    /// item, not the frame's header bytes again (cold in its core's cache),
    /// and the frame's bytes only for a payload.
    Frame {
        at: FrameRef,
        /// The segment without its payload (empty).
        seg: TcpSegment<'static>,
        /// Where its captured payload is.
        payload: Loc,
    },
    /// Sweep the table at `now`, after frame `frame`.
    Sweep { now: Timestamp, frame: u64 },
}

/// Where a segment's payload is in its [`Batch`].
#[derive(Clone, Copy)]
enum Loc {
    /// In the reader's buffer `chunks[chunk]` (no copy).
    Chunk {
        chunk: usize,
        start: usize,
        len: usize,
    },
    /// Copied into `data` (a source that cannot share its buffer; no
    /// payload: `len` 0).
    Data { start: usize, len: usize },
}

/// A shard's share of one batch of frames.
struct Batch {
    seq: u64,
    /// The capture's first timestamp.
    start: Timestamp,
    items: Vec<Item>,
    /// The reader's buffers (or whole capture) the frames are in, held
    /// until the batch is done.
    chunks: Vec<Chunk>,
    data: Vec<u8>,
    /// The last batch: hand on every connection still open.
    last: bool,
    /// QUIC connections that ended on the reading thread, each with the
    /// frame it ended at (shard 0's batch only): the merger puts them
    /// before the TCP events of that frame, as the serial run does.
    quic: Vec<(u64, QuicReport)>,
}

/// Where in the serial run's order an event falls (sorted as a tuple).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    /// A QUIC connection ended by the frame (on the reading thread, before
    /// the frame's TCP segment).
    Quic,
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
    phase: EventKind,
    /// The connection's index in its shard's table.
    local: u64,
    /// The report of an ended connection (a TCP one with the local index,
    /// replaced by the merger); boxed inside, so that sorting events moves
    /// pointers, not reports of most of a KB.
    report: Option<Ended>,
}

/// An ended connection as the merger receives it.
enum Ended {
    /// Its report, made on the flow thread.
    Report(Connection),
    /// Its state, from a sweep that ended more than [`SWEEP_DEFER`]: the
    /// merger makes the report when it hands it on.
    State {
        conn: Leaving<Protocols>,
        /// The capture's first timestamp.
        start: Timestamp,
        /// The shard's Community ID seed.
        seed: u16,
    },
}

impl Ended {
    /// The report, made now when only the state came (its findings and
    /// oversized segments counted in `m`).
    fn into_report(self, m: &mut Merged) -> Connection {
        match self {
            Ended::Report(r) => r,
            Ended::State { conn, start, seed } => {
                let c = conn.into_conn();
                m.oversized += c.half[0].send.oversized + c.half[1].send.oversized;
                report_of(c, start, seed, &mut m.findings_by_id).into()
            }
        }
    }
}

/// A shard's answer to one batch.
struct Answer {
    seq: u64,
    shard: usize,
    /// 0, then 1, 2, … for the answers that carry more of the last batch's
    /// connections left open ([`LEFT_CHUNK`]).
    part: u32,
    /// More parts of this answer follow.
    more: bool,
    events: Vec<Event>,
    /// Counts of the shard's connections ended in this batch.
    oversized: u64,
    findings_by_id: BTreeMap<&'static str, u64>,
    /// With the last batch: the shard table's late segments.
    late_segments: u64,
}

impl Answer {
    /// Part `part` of `shard`'s answer to batch `seq`, empty.
    fn new(seq: u64, shard: usize, part: u32) -> Answer {
        Answer {
            seq,
            shard,
            part,
            more: false,
            events: Vec::new(),
            oversized: 0,
            findings_by_id: BTreeMap::new(),
            late_segments: 0,
        }
    }
}

/// The shard a segment's connection belongs to.
fn shard_of(seg: &wire::TcpSegment<'_>, n: usize) -> usize {
    // the high bits of Fx's multiply are the mixed ones
    ((crate::flow::conn_hash(seg) >> 32) as usize) % n
}

/// [`super::run_with`] on `options.threads` threads (a reading thread and
/// flow threads) and the calling thread (which calls `on_conn` and
/// `progress`).
pub(super) fn run(
    reader: &mut dyn FrameSource,
    options: &Options,
    on_conn: &mut dyn FnMut(Connection),
    progress: &mut dyn FnMut(Progress),
) -> Result<CaptureSummary, CaptureError> {
    // the reader is one of the threads; the others are flow threads
    let flow = options.threads.max(2) - 1;
    let pool = Pool::new(flow, options, &reader.key_store());
    let n = pool.len();
    let bytes_read = AtomicU64::new(0);
    let frames_read = AtomicU64::new(0);
    let (answer_tx, answer_rx) = mpsc::sync_channel::<Answer>(QUEUE * n);
    // emptied batches go back to the reader to be filled again: fresh
    // buffers of a MiB each cost page faults, and freeing them on another
    // thread costs the allocator more
    let (recycle_tx, recycle_rx) = mpsc::channel::<Batch>();
    let pool = &pool;
    std::thread::scope(|s| {
        for i in 0..flow {
            let out = Outlets {
                answers: answer_tx.clone(),
                recycle: recycle_tx.clone(),
            };
            std::thread::Builder::new()
                .name(format!("rttlens-flow-{i}"))
                .spawn_scoped(s, move || worker(i, pool, &out))
                .expect("spawn a flow thread");
        }
        let out = Outlets {
            answers: answer_tx,
            recycle: recycle_tx,
        };
        let read = (&bytes_read, &frames_read);
        let read = std::thread::Builder::new()
            .name("rttlens-read".into())
            .spawn_scoped(s, move || {
                read_frames(reader, options, (pool, out, recycle_rx), read)
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
        let (mut sum, quic_left) = read?;
        // after every TCP connection, as the serial run hands them
        for q in quic_left {
            on_conn(q.into());
        }
        sum.connections = merged.connections;
        sum.peak_open_connections = merged.peak_open;
        sum.findings_by_id = merged.findings_by_id;
        sum.quality.late_segments = merged.late_segments;
        sum.quality.oversized_segments = merged.oversized;
        Ok(sum)
    })
}

/// The reading thread: frames into per-shard batches. Returns the summary
/// and the QUIC connections still open at the end.
fn read_frames(
    reader: &mut dyn FrameSource,
    options: &Options,
    (pool, out, recycled): (&Pool, Outlets, Receiver<Batch>),
    (bytes_read, frames_read): (&AtomicU64, &AtomicU64),
) -> Result<(CaptureSummary, Vec<QuicReport>), CaptureError> {
    let _guard = StopOnPanic(pool);
    let n = pool.len();
    let mut intake = Intake::new(options.filter.as_ref())
        .with_keys(reader.key_store(), options.trace, options.journal)
        .with_seed(options.community_id_seed, options.shard);
    intake.live = reader.is_live();
    // its sequence number, start and `last` are set when it is sent
    let new_batch = || match recycled.try_recv() {
        Ok(b) => b,
        Err(_) => Batch {
            seq: 0,
            start: Timestamp::default(),
            items: Vec::with_capacity(BATCH_FRAMES / n + 16),
            chunks: Vec::new(),
            data: Vec::new(),
            last: false,
            quic: Vec::new(),
        },
    };
    let mut seq = 0u64;
    let mut batches: Vec<Batch> = (0..n).map(|_| new_batch()).collect();
    let (mut frames, mut bytes) = (0usize, 0usize);
    // a thread that stopped (it panicked, the merger is gone): stop reading
    let send = |batches: &mut Vec<Batch>, seq: &mut u64, start, last| -> bool {
        let mut ok = true;
        for (shard, b) in batches.iter_mut().enumerate() {
            let mut full = std::mem::replace(b, new_batch());
            full.seq = *seq;
            full.start = start;
            full.last = last;
            ok &= pool.push(shard, full);
        }
        *seq += 1;
        ok && pool.make_room(QUEUE * n, &out)
    };
    // the number of the last frame read: a live source's idle sweeps come
    // after it
    let mut last_frame = 0u64;
    let result = loop {
        let read = match intake.live {
            // a live source's frames are its own buffer's (nothing to
            // share), and between them it may be idle
            true => match intake.next_or_idle(reader) {
                Ok(Some(Next::Idle(now))) => {
                    if !intake.idle(now) {
                        continue;
                    }
                    // what is queued goes first, so that the idle sweep is
                    // a batch of its own (the merger orders the
                    // connections of one frame's sweeps by index)
                    if batches
                        .iter()
                        .any(|b| !b.items.is_empty() || !b.quic.is_empty())
                        && !send(&mut batches, &mut seq, intake.start(), false)
                    {
                        break Ok(());
                    }
                    batches[0]
                        .quic
                        .extend(intake.quic_ended.drain(..).map(|q| (last_frame, q)));
                    for b in &mut batches {
                        b.items.push(Item::Sweep {
                            now: intake.now,
                            frame: last_frame,
                        });
                    }
                    if !send(&mut batches, &mut seq, intake.start(), false) {
                        break Ok(());
                    }
                    (frames, bytes) = (0, 0);
                    continue;
                }
                Ok(Some(Next::Frame(f))) => Ok(Some((f, None))),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            },
            false => intake.next_shared(reader),
        };
        let (frame, shared) = match read {
            Ok(Some(f)) => f,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        last_frame = frame.number;
        // every frame's bytes count, taken or not: the batches hold the
        // reader's buffers, which a filter that takes few frames would
        // otherwise keep alive by the hundred
        bytes += frame.data.len();
        let taken = intake.take(&frame);
        batches[0]
            .quic
            .extend(intake.quic_ended.drain(..).map(|q| (frame.number, q)));
        if let Some((seg, at)) = taken {
            let shard = shard_of(&seg, n);
            let b = &mut batches[shard];
            let len = seg.payload.len();
            // where the payload starts in the frame: it is a part of it
            let at_byte =
                (seg.payload.as_ptr() as usize).wrapping_sub(frame.data.as_ptr() as usize);
            let inside = at_byte
                .checked_add(len)
                .is_some_and(|e| e <= frame.data.len());
            let payload = match shared {
                _ if len == 0 => Loc::Data { start: 0, len: 0 },
                // the reader's buffer, shared: no copy
                Some(f) if inside => {
                    if !b.chunks.last().is_some_and(|c| c.same(f.chunk)) {
                        b.chunks.push(f.chunk.clone());
                    }
                    Loc::Chunk {
                        chunk: b.chunks.len() - 1,
                        start: f.start + at_byte,
                        len,
                    }
                }
                _ => {
                    let start = b.data.len();
                    b.data.extend_from_slice(seg.payload);
                    Loc::Data { start, len }
                }
            };
            b.items.push(Item::Frame {
                at,
                seg: seg.with_payload(&[]),
                payload,
            });
            frames += 1;
        }
        // after a segment tracked or filtered out (the sweeps' clock)
        if intake.sweep_due() {
            for b in &mut batches {
                b.items.push(Item::Sweep {
                    now: intake.now,
                    frame: frame.number,
                });
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
    // the last batch, also after an error: the flow threads and the merger end
    send(&mut batches, &mut seq, intake.start(), true);
    pool.close();
    // help with what is left
    while let Some((shard, batch)) = pool.take(Taker::Reader, false) {
        if !pool.run(shard, batch, &out) {
            break;
        }
    }
    bytes_read.store(reader.bytes_read(), Ordering::Relaxed);
    frames_read.store(intake.sum.frames, Ordering::Relaxed);
    result?;
    Ok(intake.finish(reader))
}

/// Other shards' connections that left `table` (`--shard`), as events
/// without a report: the merger forgets their serial indexes and counts
/// them closed.
fn gone(table: &mut FlowTable<Protocols>, frame: u64, phase: EventKind, a: &mut Answer) {
    for local in table.take_ghosts_gone() {
        a.events.push(Event {
            frame,
            phase,
            local,
            report: None,
        });
    }
}

/// A TCP report's serial index, given by the merger.
fn renumber(c: &mut Connection, serial: u64) {
    if let Connection::Tcp(r) = c {
        r.renumber(serial);
    }
}

/// One shard of the connections: its flow table, and its index (the
/// merger's name for it).
struct Shard {
    index: usize,
    table: FlowTable<Protocols>,
    /// The Community ID seed of its records.
    seed: u16,
    /// Writes each TCP report's output ahead ([`Options::prerender`]).
    prerender: Option<crate::model::Prerender>,
}

/// Runs one batch of `shard`'s frames through flow tracking, analysis and
/// detectors: the answer for the merger, and the emptied batch.
fn process(shard: &mut Shard, batch: Batch, send: &mut dyn FnMut(Answer)) -> (Answer, Batch) {
    let table = &mut shard.table;
    let seed = shard.seed;
    let prerender = shard.prerender;
    let mut a = Answer::new(batch.seq, shard.index, 0);
    let start = batch.start;
    let end = |c: Box<Conn<Protocols>>, frame: u64, phase: EventKind, a: &mut Answer| {
        a.oversized += c.half[0].send.oversized + c.half[1].send.oversized;
        let local = c.index;
        let mut report = report_of(c, start, seed, &mut a.findings_by_id);
        if let Some(write) = prerender {
            report.rendered = write(&report).map(Box::new);
        }
        a.events.push(Event {
            frame,
            phase,
            local,
            report: Some(Ended::Report(report.into())),
        });
    };
    let mut batch = batch;
    for (frame, q) in batch.quic.drain(..) {
        a.events.push(Event {
            frame,
            phase: EventKind::Quic,
            local: q.index,
            report: Some(Ended::Report(q.into())),
        });
    }
    let bytes_of = |loc: Loc| {
        match loc {
            Loc::Chunk { chunk, start, len } => batch
                .chunks
                .get(chunk)
                .and_then(|c| c.bytes().get(start..start + len)),
            Loc::Data { start, len } => batch.data.get(start..start + len),
        }
        .unwrap_or(&[])
    };
    for item in &batch.items {
        match *item {
            Item::Frame { at, seg, payload } => {
                let seg = seg.with_payload(bytes_of(payload));
                let opened = table.push(&seg, at, &mut |c| {
                    end(c, at.frame, EventKind::Reused, &mut a);
                });
                gone(table, at.frame, EventKind::Reused, &mut a);
                if opened {
                    a.events.push(Event {
                        frame: at.frame,
                        phase: EventKind::Opened,
                        local: table.opened() - 1,
                        report: None,
                    });
                }
            }
            Item::Sweep { now, frame } => {
                let mut swept = Vec::new();
                table.sweep_leaving(now, &mut |c| swept.push(c));
                if swept.len() > SWEEP_DEFER {
                    for c in swept {
                        a.events.push(Event {
                            frame,
                            phase: EventKind::Swept,
                            local: c.index(),
                            report: Some(Ended::State {
                                conn: c,
                                start,
                                seed,
                            }),
                        });
                    }
                } else {
                    for c in swept {
                        end(c.into_conn(), frame, EventKind::Swept, &mut a);
                    }
                }
                gone(table, frame, EventKind::Swept, &mut a);
            }
        }
    }
    if batch.last {
        a.late_segments = table.late_segments;
        let mut left = 0usize;
        std::mem::take(table).finish(&mut |c| {
            end(c, u64::MAX, EventKind::Left, &mut a);
            left += 1;
            if left % LEFT_CHUNK == 0 {
                let next = Answer::new(a.seq, a.shard, a.part + 1);
                let mut part = std::mem::replace(&mut a, next);
                part.more = true;
                send(part);
            }
        });
    }
    batch.items.clear();
    batch.chunks.clear();
    batch.data.clear();
    (a, batch)
}

/// The batches waiting, per shard, and which shards a thread is on.
#[derive(Default)]
struct Sched {
    /// Each shard's batches, in order.
    queues: Vec<VecDeque<Batch>>,
    /// The shard is in `ready` or a thread is processing it: one thread at
    /// a time per shard, so its batches are processed in order.
    taken: Vec<bool>,
    /// Shards with a batch waiting and no thread on them, in the order
    /// they became ready.
    ready: VecDeque<usize>,
    /// Batches in all queues.
    queued: usize,
    /// The reader queued its last batches.
    closed: bool,
    /// A thread panicked or the merger is gone: everyone stops.
    stopped: bool,
}

/// Who takes a batch: a flow thread, or the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taker {
    Flow(usize),
    Reader,
}

/// The shards, shared by the flow threads and the reader.
///
/// There is a shard per thread, the reader's the last one. The reader
/// reads, decodes and queues every frame, and when more than
/// [`QUEUE`] batches per shard wait it processes batches of its shard
/// rather than block. A flow thread processes its own shards' batches
/// and, when none is ready, the reader's. So on a capture of large frames,
/// where reading is most of the work, the reader reads while the flow
/// threads do the rest, and on one of small frames both cores analyse. A
/// shard's table moves between threads only when the reader's shard is
/// taken by a flow thread; otherwise it stays with its thread, whose heap
/// its allocations come from (frees on another thread cost mimalloc most
/// of the parallel overhead measured on a connection-heavy capture).
struct Pool {
    sched: Mutex<Sched>,
    /// A shard became ready, or the pool closed or stopped.
    work: Condvar,
    /// A batch was taken: the reader may queue more.
    room: Condvar,
    shards: Vec<Mutex<Shard>>,
    /// Flow threads.
    flow: usize,
}

/// Stops the pool when the thread holding it panics (the others would
/// wait for its batches forever).
struct StopOnPanic<'a>(&'a Pool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop();
        }
    }
}

impl Pool {
    /// A pool for `flow` flow threads and the reader.
    fn new(flow: usize, options: &Options, keys: &KeyStore) -> Pool {
        let trace = options.trace;
        let n = flow + 1;
        let table = || {
            if trace {
                FlowTable::with_trace()
            } else {
                FlowTable::new()
            }
            .with_ctx(keys.clone())
            // other `--shard`s' connections: their ends are told to the
            // merger, which numbers every connection
            .with_shard(options.shard, options.community_id_seed, true)
        };
        Pool {
            sched: Mutex::new(Sched {
                queues: (0..n).map(|_| VecDeque::new()).collect(),
                taken: vec![false; n],
                ..Sched::default()
            }),
            work: Condvar::new(),
            room: Condvar::new(),
            flow,
            shards: (0..n)
                .map(|index| {
                    Mutex::new(Shard {
                        index,
                        table: table(),
                        seed: options.community_id_seed,
                        prerender: options.prerender,
                    })
                })
                .collect(),
        }
    }

    /// Number of shards.
    fn len(&self) -> usize {
        self.shards.len()
    }

    /// Whose shard `shard` is: flow thread `i` has shard `i`, the reader
    /// the last.
    fn owner(&self, shard: usize) -> Taker {
        if shard < self.flow {
            Taker::Flow(shard)
        } else {
            Taker::Reader
        }
    }

    fn lock(&self) -> MutexGuard<'_, Sched> {
        // a panic elsewhere is reported by the scope; the counts stay sound
        self.sched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `batch` of `shard`. `false` when the pool stopped.
    fn push(&self, shard: usize, batch: Batch) -> bool {
        let mut s = self.lock();
        if s.stopped {
            return false;
        }
        if let Some(q) = s.queues.get_mut(shard) {
            q.push_back(batch);
            s.queued += 1;
        }
        if s.taken.get(shard) == Some(&false) {
            s.taken[shard] = true;
            s.ready.push_back(shard);
            // the thread it is for may not be the one `notify_one` wakes
            self.work.notify_all();
        }
        true
    }

    /// The next batch `who` may take: of its own shards, else (a flow
    /// thread) of the reader's, else (the reader, after the end) of any.
    /// With `wait`, waits for one until the pool is closed and empty or
    /// stopped; else returns `None` at once when there is none.
    fn take(&self, who: Taker, wait: bool) -> Option<(usize, Batch)> {
        let mut s = self.lock();
        loop {
            if s.stopped {
                return None;
            }
            let mine = s.ready.iter().position(|&r| self.owner(r) == who);
            let other = || match who {
                Taker::Flow(_) => s.ready.iter().position(|&r| self.owner(r) == Taker::Reader),
                Taker::Reader if s.closed => (!s.ready.is_empty()).then_some(0),
                Taker::Reader => None,
            };
            if let Some(shard) = mine.or_else(other).and_then(|at| s.ready.remove(at)) {
                if let Some(batch) = s.queues.get_mut(shard).and_then(VecDeque::pop_front) {
                    s.queued -= 1;
                    if s.closed && s.queued == 0 {
                        self.work.notify_all();
                    }
                    self.room.notify_one();
                    return Some((shard, batch));
                }
                continue;
            }
            if !wait || s.closed && s.queued == 0 {
                return None;
            }
            s = self.work.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Processes `batch` of `shard` on this thread, then hands the shard on.
    /// `false` when the merger is gone.
    fn run(&self, shard: usize, batch: Batch, out: &Outlets) -> bool {
        let _guard = StopOnPanic(self);
        let (answer, batch) = {
            let Some(slot) = self.shards.get(shard) else {
                return false;
            };
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            // a part that cannot be sent: the final answer's send fails too
            process(&mut slot, batch, &mut |part| {
                let _ = out.answers.send(part);
            })
        };
        // the reader may be gone (the end): the batch is then dropped
        let _ = out.recycle.send(batch);
        if out.answers.send(answer).is_err() {
            self.stop();
            return false;
        }
        let mut s = self.lock();
        if s.queues.get(shard).is_some_and(VecDeque::is_empty) {
            if let Some(t) = s.taken.get_mut(shard) {
                *t = false;
            }
        } else {
            s.ready.push_back(shard);
            self.work.notify_all();
        }
        true
    }

    /// The reader, after queueing: while more than `limit` batches wait,
    /// processes those of its shard, or waits for room when none is ready.
    /// `false` when the pool stopped.
    fn make_room(&self, limit: usize, out: &Outlets) -> bool {
        loop {
            {
                let mut s = self.lock();
                loop {
                    if s.stopped {
                        return false;
                    }
                    if s.queued <= limit {
                        return true;
                    }
                    let last = self.len() - 1;
                    if s.ready.contains(&last) {
                        break;
                    }
                    s = self.room.wait(s).unwrap_or_else(PoisonError::into_inner);
                }
            }
            if let Some((shard, batch)) = self.take(Taker::Reader, false) {
                if !self.run(shard, batch, out) {
                    return false;
                }
            }
        }
    }

    /// No more batches will come: the flow threads end when all are done.
    fn close(&self) {
        self.lock().closed = true;
        self.work.notify_all();
    }

    fn stop(&self) {
        self.lock().stopped = true;
        self.work.notify_all();
        self.room.notify_all();
    }
}

/// Where a thread that processes batches sends what comes out.
struct Outlets {
    answers: SyncSender<Answer>,
    recycle: mpsc::Sender<Batch>,
}

/// Flow thread `i`: batches of its shard, or of the reader's when its own
/// has none ready.
fn worker(i: usize, pool: &Pool, out: &Outlets) {
    while let Some((shard, batch)) = pool.take(Taker::Flow(i), true) {
        if !pool.run(shard, batch, out) {
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
}

impl Merged {
    /// Adds counts of connections ended elsewhere (an answer, a thread
    /// that made deferred reports).
    fn count(&mut self, oversized: u64, findings_by_id: BTreeMap<&'static str, u64>) {
        self.oversized += oversized;
        for (k, v) in findings_by_id {
            *self.findings_by_id.entry(k).or_default() += v;
        }
    }
}

/// The calling thread: answers put back in the serial order.
fn merge(
    n: usize,
    answers: &Receiver<Answer>,
    on_conn: &mut dyn FnMut(Connection),
    progress: &mut dyn FnMut(),
) -> Merged {
    let mut m = Merged::default();
    // batch seq -> the answers so far
    let mut pending: BTreeMap<u64, Vec<Answer>> = BTreeMap::new();
    let mut next = 0u64;
    // per shard: local index -> serial index, for open connections
    let mut index: Vec<FxHashMap<u64, u64>> = vec![FxHashMap::default(); n];
    let mut opened = 0u64;
    let mut open = 0usize;
    let mut events: Vec<(usize, Event)> = Vec::new();
    let mut ended: Vec<(u64, EventKind, u64, Ended)> = Vec::new();
    // the connections left open at the end, per shard, in serial order
    // (each shard hands them on in its open order), and whether more of
    // a shard's are to come: they go out merged by serial index
    let mut left = Left {
        queues: (0..n).map(|_| VecDeque::new()).collect(),
        more: vec![false; n],
    };
    // later parts that came before their batch was complete
    let mut early: Vec<Answer> = Vec::new();
    while let Ok(a) = answers.recv() {
        if a.part > 0 {
            if a.seq < next {
                left.take(a, &mut m, &mut index, &mut open);
                left.drain(&mut m, on_conn);
            } else {
                early.push(a);
            }
            continue;
        }
        pending.entry(a.seq).or_default().push(a);
        while pending.get(&next).is_some_and(|v| v.len() == n) {
            let Some(batch) = pending.remove(&next) else {
                break;
            };
            next += 1;
            for a in batch {
                if let Some(more) = left.more.get_mut(a.shard) {
                    *more = a.more;
                }
                m.late_segments += a.late_segments;
                m.count(a.oversized, a.findings_by_id);
                events.extend(a.events.into_iter().map(|e| (a.shard, e)));
            }
            // the serial order of events: by frame, then phase; serial
            // indexes are given in that order
            events.sort_unstable_by_key(|(shard, e)| (e.frame, e.phase, *shard, e.local));
            for (shard, e) in events.drain(..) {
                if e.phase == EventKind::Quic {
                    // numbered by the QUIC table already
                    ended.extend(e.report.map(|r| (e.frame, e.phase, e.local, r)));
                    continue;
                }
                let map = &mut index[shard];
                if e.phase == EventKind::Opened {
                    map.insert(e.local, opened);
                    opened += 1;
                    open += 1;
                    m.peak_open = m.peak_open.max(open);
                    continue;
                }
                open = open.saturating_sub(1);
                let serial = map.remove(&e.local).unwrap_or(u64::MAX);
                match (e.phase, e.report) {
                    (EventKind::Left, Some(r)) => {
                        left.queues[shard].push_back((serial, r.into_report(&mut m)))
                    }
                    (_, Some(r)) => ended.push((e.frame, e.phase, serial, r)),
                    (_, None) => {}
                }
            }
            // connections ended at the same frame and phase (a sweep, the
            // end) go in serial index order, as one table hands them on
            ended.sort_unstable_by_key(|(frame, phase, serial, _)| (*frame, *phase, *serial));
            // a deferred sweep's reports are made here, a chunk at a time
            while !ended.is_empty() {
                let take = ended.len().min(DEFER_CHUNK);
                let chunk: Vec<_> = ended.drain(..take).collect();
                let (keys, states): (Vec<_>, Vec<_>) = chunk
                    .into_iter()
                    .map(|(_, phase, serial, r)| ((phase, serial), r))
                    .unzip();
                for ((phase, serial), mut r) in
                    keys.into_iter().zip(into_reports(states, n, &mut m))
                {
                    if phase != EventKind::Quic {
                        renumber(&mut r, serial);
                        m.connections += 1;
                    }
                    on_conn(r);
                }
            }
            let (now, later): (Vec<Answer>, Vec<Answer>) =
                early.drain(..).partition(|a| a.seq < next);
            early = later;
            for a in now {
                left.take(a, &mut m, &mut index, &mut open);
            }
            left.drain(&mut m, on_conn);
            progress();
        }
    }
    // every shard has answered (or stopped): what is left goes out
    left.more.iter_mut().for_each(|x| *x = false);
    left.drain(&mut m, on_conn);
    m
}

/// Deferred reports ([`SWEEP_DEFER`]) the merger makes at a time: this
/// many reports in memory at once.
const DEFER_CHUNK: usize = 1024;

/// `ended` as reports, in order (counts in `m`). States, when there are
/// many, are made into reports on `n` threads, the merger's and `n - 1`
/// scoped ones: the flow threads wait for the merger meanwhile, and one
/// thread would make a deferred sweep's burst as slowly as the serial run.
fn into_reports(ended: Vec<Ended>, n: usize, m: &mut Merged) -> Vec<Connection> {
    let states = ended
        .iter()
        .filter(|e| matches!(e, Ended::State { .. }))
        .count();
    // a handful: not worth a thread
    if n < 2 || states < 64 {
        return ended.into_iter().map(|e| e.into_report(m)).collect();
    }
    let per = ended.len().div_ceil(n);
    let mut parts: Vec<Vec<Ended>> = Vec::with_capacity(n);
    let mut rest = ended.into_iter();
    for _ in 0..n {
        parts.push(rest.by_ref().take(per).collect());
    }
    let make = |part: Vec<Ended>| {
        let mut counts = Merged::default();
        let reports: Vec<Connection> = part
            .into_iter()
            .map(|e| e.into_report(&mut counts))
            .collect();
        (reports, counts)
    };
    let mut parts = parts.into_iter();
    let first = parts.next().unwrap_or_default();
    let done: Vec<(Vec<Connection>, Merged)> = std::thread::scope(|s| {
        let others: Vec<_> = parts.map(|p| s.spawn(move || make(p))).collect();
        let mut done = vec![make(first)];
        for h in others {
            // a panic in a report is the merger's own, as made inline
            done.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        done
    });
    let mut out = Vec::with_capacity(done.iter().map(|(r, _)| r.len()).sum());
    for (reports, counts) in done {
        out.extend(reports);
        m.count(counts.oversized, counts.findings_by_id);
    }
    out
}

/// The reports of the connections still open at the end, as the shards'
/// parts bring them ([`LEFT_CHUNK`]).
struct Left {
    /// Per shard: (serial index, report), in serial order.
    queues: Vec<VecDeque<(u64, Connection)>>,
    /// Per shard: more parts to come.
    more: Vec<bool>,
}

impl Left {
    /// A later part of a shard's last answer.
    fn take(
        &mut self,
        a: Answer,
        m: &mut Merged,
        index: &mut [FxHashMap<u64, u64>],
        open: &mut usize,
    ) {
        m.count(a.oversized, a.findings_by_id);
        if let Some(more) = self.more.get_mut(a.shard) {
            *more = a.more;
        }
        let (Some(map), Some(queue)) = (index.get_mut(a.shard), self.queues.get_mut(a.shard))
        else {
            return;
        };
        for e in a.events {
            *open = open.saturating_sub(1);
            let serial = map.remove(&e.local).unwrap_or(u64::MAX);
            if let Some(r) = e.report {
                queue.push_back((serial, r.into_report(m)));
            }
        }
    }

    /// Hands on, lowest serial index first, every report no part still to
    /// come can precede.
    fn drain(&mut self, m: &mut Merged, on_conn: &mut dyn FnMut(Connection)) {
        loop {
            let waiting = self
                .queues
                .iter()
                .zip(&self.more)
                .any(|(q, more)| *more && q.is_empty());
            if waiting {
                return;
            }
            let Some(q) = self
                .queues
                .iter_mut()
                .filter(|q| !q.is_empty())
                .min_by_key(|q| q.front().map_or(u64::MAX, |(serial, _)| *serial))
            else {
                return;
            };
            let Some((serial, mut r)) = q.pop_front() else {
                return;
            };
            renumber(&mut r, serial);
            m.connections += 1;
            on_conn(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn batch(seq: u64) -> Batch {
        Batch {
            seq,
            start: Timestamp::default(),
            items: Vec::new(),
            chunks: Vec::new(),
            data: Vec::new(),
            last: false,
            quic: Vec::new(),
        }
    }

    fn shard_of_take(pool: &Pool, who: Taker) -> Option<usize> {
        pool.take(who, false).map(|(shard, _)| shard)
    }

    #[test]
    fn threads_take_their_own_shard_first_then_the_readers() {
        // flow threads 0 and 1 own shards 0 and 1, the reader shard 2
        let pool = Pool::new(2, &Options::default(), &KeyStore::default());
        assert_eq!(pool.len(), 3);
        for shard in [2, 1, 0] {
            assert!(pool.push(shard, batch(0)));
        }
        assert_eq!(shard_of_take(&pool, Taker::Flow(0)), Some(0));
        // its own is taken: the reader's, never flow thread 1's
        assert_eq!(shard_of_take(&pool, Taker::Flow(0)), Some(2));
        assert_eq!(shard_of_take(&pool, Taker::Flow(0)), None);
        // the reader takes only its own shard until the end
        assert_eq!(shard_of_take(&pool, Taker::Reader), None);
        pool.close();
        assert_eq!(shard_of_take(&pool, Taker::Reader), Some(1));
        assert_eq!(pool.lock().queued, 0);
    }

    #[test]
    fn a_shard_is_processed_by_one_thread_at_a_time_in_order() {
        let pool = Pool::new(1, &Options::default(), &KeyStore::default());
        let (answers, got) = mpsc::sync_channel(16);
        let (recycle, _back) = mpsc::channel();
        let out = Outlets { answers, recycle };
        for seq in 0..3 {
            assert!(pool.push(1, batch(seq)));
        }
        // taken: its next batch waits until this one is done
        let (shard, b) = pool
            .take(Taker::Flow(0), false)
            .expect("the reader's shard");
        assert_eq!((shard, b.seq), (1, 0));
        assert!(pool.take(Taker::Reader, false).is_none());
        assert!(pool.run(shard, b, &out));
        // more than one waiting: the reader processes its shard's batches
        assert!(pool.make_room(0, &out));
        let seqs: Vec<(u64, usize)> = got.try_iter().map(|a| (a.seq, a.shard)).collect();
        assert_eq!(seqs, [(0, 1), (1, 1), (2, 1)]);
    }

    #[test]
    fn stop_wakes_a_waiting_thread_and_close_ends_an_empty_pool() {
        let pool = Pool::new(1, &Options::default(), &KeyStore::default());
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let pool = &pool;
            s.spawn(move || tx.send(pool.take(Taker::Flow(0), true).is_none()));
            std::thread::sleep(Duration::from_millis(20));
            pool.stop();
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(true));
        });
        assert!(!pool.push(0, batch(0)), "a stopped pool takes nothing");
        let pool = Pool::new(1, &Options::default(), &KeyStore::default());
        pool.close();
        assert!(pool.take(Taker::Flow(0), true).is_none());
    }
}
