//! The connection table: segments find their [`Conn`] by 4-tuple (a SYN
//! with a new ISN starts a new one), and sweeps hand on the connections that
//! are over, in index order, so memory grows with the connections open at
//! once, not with the file.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::IpAddr;

use rustc_hash::FxHashMap;

use crate::base::seq::SeqNumber;
use crate::base::side::FrameRef;
use crate::base::time::{Duration, Timestamp};
use crate::flow::reassembly::Trackers;
use crate::wire::{TcpFlags, TcpSegment};

use super::shard::{Ghost, Shard};
use super::Conn;
use syns::{bare_syn, Syns};

mod syns;

/// A connection closed (FIN both ways or RST) and quiet this long is handed on.
pub const CLOSED_LINGER: Duration = Duration::from_millis(1_000);
/// After a closed connection is handed on, segments on its 4-tuple without a
/// SYN (a late retransmitted FIN, the last ACK) are ignored this long, like
/// TIME_WAIT (RFC 9293 §3.6.1), instead of opening a phantom connection.
pub const TOMBSTONE: Duration = Duration::from_millis(60_000);
/// How often (capture time) the sweeps remove the tombstones older than
/// [`TOMBSTONE`]: a tombstone is a 4-tuple and a time (24 B in the map for
/// IPv4, see `Tombstones`), one per connection closed in the last minute.
const PURGE_EVERY: Duration = Duration::from_millis(1_000);
/// A connection without a packet for this long is handed on.
pub const IDLE_TIMEOUT: Duration = Duration::from_millis(300_000);
/// Every this many tracked segments (over the whole capture, not per table)
/// the pipeline asks the table for connections to hand on
/// (`FlowTable::sweep`)…
pub const SWEEP_EVERY: u64 = 16_384;
/// …and sooner, once [`SWEEP_INTERVAL`] of capture time has passed, after
/// at least this many: a closed connection is then handed on about
/// [`CLOSED_LINGER`] after it closed whatever the packet rate (streamed
/// output comes sooner, fewer connections wait in memory), while a sweep
/// of many open connections stays rare against the segments between.
pub const SWEEP_MIN: u64 = 1_024;
/// See [`SWEEP_MIN`].
pub const SWEEP_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct FlowKey {
    a: IpAddr,
    b: IpAddr,
    pa: u16,
    pb: u16,
}

impl FlowKey {
    /// The key of `seg`'s connection: its two ends in `(IpAddr, port)`
    /// order, the lower first, whichever sent it.
    fn of(seg: &TcpSegment<'_>) -> FlowKey {
        let (src, dst) = ((seg.src, seg.src_port), (seg.dst, seg.dst_port));
        let (l, h) = if Self::rank(src) <= Self::rank(dst) {
            (src, dst)
        } else {
            (dst, src)
        };
        FlowKey {
            a: l.0,
            b: h.0,
            pa: l.1,
            pb: h.1,
        }
    }

    /// `(IpAddr, port)`'s order as integers: IPv4 before IPv6, then the
    /// address as a big-endian number (its octets in order), then the
    /// port. `IpAddr`'s own `Ord` compares the octets as a slice, a call
    /// to `memcmp` for every segment (2 % of a run over a storm).
    fn rank((ip, port): (IpAddr, u16)) -> (bool, u128, u16) {
        match ip {
            IpAddr::V4(a) => (false, u128::from(a.to_bits()), port),
            IpAddr::V6(a) => (true, a.to_bits(), port),
        }
    }
}

/// The tombstones of [`FlowTable::closed`]: when each 4-tuple's
/// connection was handed on closed. An IPv4 4-tuple (most captures') is
/// packed exactly into 12 bytes, so an entry takes 24 bytes, not the 48 of
/// a [`FlowKey`] and its time (a connection-heavy capture holds a minute
/// of them: 78 k at 1,300 connections/s); any other is kept whole.
#[derive(Debug, Default)]
struct Tombstones {
    v4: FxHashMap<[u32; 3], Timestamp>,
    other: FxHashMap<FlowKey, Timestamp>,
}

impl Tombstones {
    /// `k` packed, when both ends are IPv4.
    fn v4_key(k: &FlowKey) -> Option<[u32; 3]> {
        match (k.a, k.b) {
            (IpAddr::V4(a), IpAddr::V4(b)) => Some([
                a.to_bits(),
                b.to_bits(),
                u32::from(k.pa) << 16 | u32::from(k.pb),
            ]),
            _ => None,
        }
    }

    fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.other.is_empty()
    }

    fn get(&self, k: &FlowKey) -> Option<Timestamp> {
        match Self::v4_key(k) {
            Some(p) => self.v4.get(&p).copied(),
            None => self.other.get(k).copied(),
        }
    }

    fn insert(&mut self, k: FlowKey, t: Timestamp) {
        match Self::v4_key(&k) {
            Some(p) => self.v4.insert(p, t),
            None => self.other.insert(k, t),
        };
    }

    /// Keeps the tombstones laid less than [`TOMBSTONE`] before `now`.
    fn purge(&mut self, now: Timestamp) {
        self.v4.retain(|_, t| now - *t < TOMBSTONE);
        self.other.retain(|_, t| now - *t < TOMBSTONE);
    }
}

/// A hash of the connection `seg` belongs to (its 4-tuple, whichever way
/// the segment goes): the parallel pipeline's choice of shard.
pub fn conn_hash(seg: &TcpSegment<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    FlowKey::of(seg).hash(&mut h);
    h.finish()
}

/// A connection in the table, with what a sweep looks at kept beside it:
/// a sweep then reads the table's own array, not every connection's
/// memory (thousands of cache misses per sweep on a busy capture).
#[derive(Debug)]
struct Slot<P> {
    /// [`Conn::index`].
    index: u64,
    /// The connection's last segment's time.
    last: Timestamp,
    /// [`Conn::is_closed`] after its last segment.
    closed: bool,
    /// The connection is closed: the deadline of its latest entry in
    /// [`FlowTable::closing`], never later than `last` + [`CLOSED_LINGER`]
    /// ([`LEAVING`] once a sweep chose it; [`NOT_QUEUED`] while open).
    due: Timestamp,
    conn: State<P>,
}

/// A connection in the table: whole, or its SYNs only.
#[derive(Debug)]
enum State<P> {
    /// Client SYNs only so far (no payload, one direction, one ISN: a
    /// storm's SYNs sent again and again, a scan): the SYNs are kept as
    /// they came and replayed into a [`Conn`] by the first other segment or
    /// when the connection is handed on, so such a connection costs its
    /// SYNs (32 bytes for each sent again), not a connection's state (over
    /// 3 KB). The replay is the same sequence of pushes, so the result is
    /// the same. The first SYN's sequence number is kept beside the box: a
    /// SYN sent again is told from a new connection's without reading it.
    Syns(SeqNumber, Box<Syns<P>>),
    /// Everything else.
    Conn(Box<Conn<P>>),
    /// A connection of another `--shard`: only what decides when it ends.
    Ghost(Ghost),
}

impl<P: Trackers> State<P> {
    /// Whether a SYN with `isn` belongs to this connection (not a new one
    /// on the same 4-tuple): the client's SYN had it.
    fn same_syn(&self, isn: SeqNumber) -> bool {
        match self {
            State::Syns(first, _) => *first == isn,
            State::Conn(c) => c.syn.is_some_and(|s| s.isn == isn),
            State::Ghost(g) => g.isn() == Some(isn),
        }
    }
}

/// A connection a sweep hands on, as the table held it
/// ([`FlowTable::sweep_leaving`]): never another shard's.
pub(crate) struct Leaving<P>(Held<P>);

/// See [`Leaving`].
enum Held<P> {
    Syns(Box<Syns<P>>),
    Conn(Box<Conn<P>>),
}

impl<P: Trackers> Leaving<P> {
    /// Its index in the table (order of first packet).
    pub(crate) fn index(&self) -> u64 {
        match &self.0 {
            Held::Conn(c) => c.index,
            Held::Syns(s) => s.index,
        }
    }

    /// The whole connection (its SYNs replayed when that is all it had).
    pub(crate) fn into_conn(self) -> Box<Conn<P>> {
        match self.0 {
            Held::Conn(c) => c,
            Held::Syns(mut s) => s.replay(),
        }
    }
}

/// [`Slot::due`] of an open connection: not in [`FlowTable::closing`].
const NOT_QUEUED: Timestamp = Timestamp::from_nanos(i64::MAX);
/// [`Slot::due`] of a connection a sweep is handing on.
const LEAVING: Timestamp = Timestamp::from_nanos(i64::MIN);

/// The connection table.
#[derive(Debug)]
pub struct FlowTable<P: Trackers> {
    conns: FxHashMap<FlowKey, Slot<P>>,
    /// Closed connections handed on, and when.
    closed: Tombstones,
    /// Segments ignored because their connection had closed.
    pub(crate) late_segments: u64,
    next_index: u64,
    /// The keys a sweep hands on (kept for the next sweep).
    over: Vec<(u64, FlowKey)>,
    /// Closed connections by the time a sweep may hand them on (`last` +
    /// [`CLOSED_LINGER`]), earliest first: a sweep pops what is due instead
    /// of visiting every open connection. An entry whose connection has
    /// gone or moved on is dropped or queued again when it comes up.
    closing: BinaryHeap<Reverse<(Timestamp, u64, FlowKey)>>,
    /// No open connection is idle for [`IDLE_TIMEOUT`] before this: a sweep
    /// visits every connection only once it has passed (a lower bound,
    /// lowered by every segment, raised by the visit).
    idle_from: Timestamp,
    /// The latest sweep's `now`. A tombstone of [`closed`](Self::closed)
    /// laid [`TOMBSTONE`] or more before it no longer counts (as if that
    /// sweep had removed it); the sweeps remove such ones every
    /// [`PURGE_EVERY`] of capture time.
    swept_at: Timestamp,
    /// When the forgotten tombstones were last removed.
    purged_at: Timestamp,
    /// Most connections open at once.
    pub(crate) peak_open: usize,
    /// Keep per-frame marks in every connection's halves.
    marks: bool,
    /// Keep every connection's packets ([`Conn::trace`]).
    trace: bool,
    /// What every connection's trackers share.
    ctx: P::Ctx,
    /// `--shard`: the share of connections analysed, and the Community ID
    /// seed they are hashed with; the others are [`State::Ghost`]s.
    shard: Option<(Shard, u16)>,
    /// Other shards' connections in the table now.
    ghosts: usize,
    /// The indexes of other shards' connections that left the table since
    /// the caller last took them ([`FlowTable::take_ghosts_gone`]), when
    /// it asked to be told ([`FlowTable::with_shard`]).
    ghosts_gone: Option<Vec<u64>>,
}

impl<P: Trackers> Default for FlowTable<P> {
    fn default() -> Self {
        FlowTable {
            conns: FxHashMap::default(),
            closed: Tombstones::default(),
            late_segments: 0,
            next_index: 0,
            over: Vec::new(),
            closing: BinaryHeap::new(),
            idle_from: NOT_QUEUED,
            swept_at: Timestamp::from_nanos(i64::MIN),
            purged_at: Timestamp::from_nanos(i64::MIN),
            peak_open: 0,
            marks: false,
            trace: false,
            ctx: P::Ctx::default(),
            shard: None,
            ghosts: 0,
            ghosts_gone: None,
        }
    }
}

impl<P: Trackers> FlowTable<P> {
    /// An empty table.
    pub fn new() -> FlowTable<P> {
        Self::default()
    }

    /// The table, its connections' trackers sharing `ctx`.
    pub fn with_ctx(self, ctx: P::Ctx) -> FlowTable<P> {
        FlowTable { ctx, ..self }
    }

    /// The table analysing only the connections of `shard` (Community IDs
    /// hashed with `seed`): the others are tracked as far as opening and
    /// ending go, so indexes and hand-off points stay the unsharded run's.
    /// `tell`: keep the indexes of the others as they leave, for
    /// [`take_ghosts_gone`](Self::take_ghosts_gone).
    pub(crate) fn with_shard(self, shard: Option<Shard>, seed: u16, tell: bool) -> FlowTable<P> {
        FlowTable {
            shard: shard.map(|s| (s, seed)),
            ghosts_gone: (shard.is_some() && tell).then(Vec::new),
            ..self
        }
    }

    /// The indexes of other shards' connections that left the table since
    /// the last call (in the order they left).
    pub(crate) fn take_ghosts_gone(&mut self) -> Vec<u64> {
        self.ghosts_gone
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// A connection leaving the table: to `done`, or counted gone when it
    /// is another shard's.
    fn leave(&mut self, slot: Slot<P>, done: &mut dyn FnMut(Box<Conn<P>>)) {
        self.leave_as_held(slot, &mut |l| done(l.into_conn()));
    }

    /// [`FlowTable::leave`], the connection as it is held: a connection of
    /// SYNs only is replayed into a [`Conn`] when its taker asks.
    fn leave_as_held(&mut self, slot: Slot<P>, done: &mut dyn FnMut(Leaving<P>)) {
        match slot.conn {
            State::Conn(c) => done(Leaving(Held::Conn(c))),
            State::Syns(_, s) => done(Leaving(Held::Syns(s))),
            State::Ghost(_) => {
                self.ghosts -= 1;
                if let Some(v) = &mut self.ghosts_gone {
                    v.push(slot.index);
                }
            }
        }
    }

    /// An empty table whose connections keep every frame's TCP analysis
    /// marks ([`crate::flow::half::Half::take_marks`]): memory grows with
    /// the capture, so only for cross-checks.
    pub(crate) fn with_marks() -> FlowTable<P> {
        Self {
            marks: true,
            ..Self::default()
        }
    }

    /// An empty table whose connections keep every packet ([`Conn::trace`])
    /// for the pictures: memory grows with the packets of the connections
    /// open at once.
    pub(crate) fn with_trace() -> FlowTable<P> {
        Self {
            trace: true,
            ..Self::default()
        }
    }

    /// Account one segment seen at `at`. A SYN with a new ISN on a 4-tuple
    /// in use ends the old connection, which is passed to `done`; returns
    /// whether the segment opened a new connection. Connections that are
    /// closed or idle are handed on by `sweep`, which the
    /// caller runs at points chosen over the whole capture ([`SWEEP_EVERY`],
    /// [`SWEEP_MIN`]), so that a table holding
    /// a share of the capture's connections (one per thread) hands each
    /// connection on at the same point as a table holding them all.
    pub fn push(
        &mut self,
        seg: &TcpSegment<'_>,
        at: FrameRef,
        done: &mut dyn FnMut(Box<Conn<P>>),
    ) -> bool {
        let key = FlowKey::of(seg);
        let syn_only = seg.flags.contains(TcpFlags::SYN) && !seg.flags.contains(TcpFlags::ACK);
        if syn_only {
            if let Some(slot) = self.conns.get_mut(&key) {
                if !slot.conn.same_syn(seg.seq) {
                    if let Some(old) = self.conns.remove(&key) {
                        self.leave(old, done);
                    }
                } else if let State::Syns(_, s) = &mut slot.conn {
                    // a SYN sent again: kept with the others, one lookup
                    if bare_syn(seg, Some(&s.first)).is_some_and(|syn| s.keep(syn, at)) {
                        slot.last = at.ts;
                        self.idle_from = self.idle_from.min(slot.last + IDLE_TIMEOUT);
                        return false;
                    }
                }
            }
        }
        let mut opened = false;
        let slot = match self.conns.get_mut(&key) {
            Some(slot) => slot,
            // a segment after its connection was handed on closed, within
            // TOMBSTONE of the sweep that did (as of the latest sweep)
            None if !syn_only
                && !self.closed.is_empty()
                && self
                    .closed
                    .get(&key)
                    .is_some_and(|t| self.swept_at - t < TOMBSTONE) =>
            {
                self.late_segments += 1;
                return false;
            }
            None => {
                let index = self.next_index;
                self.next_index += 1;
                let theirs = self.shard.is_some_and(|(s, seed)| {
                    let (a, b) = (
                        std::net::SocketAddr::new(seg.src, seg.src_port),
                        std::net::SocketAddr::new(seg.dst, seg.dst_port),
                    );
                    !s.contains(seed, crate::wire::community_id::TCP, a, b)
                });
                if theirs {
                    // opened as far as numbering goes (the parallel
                    // pipeline's merger counts it)
                    opened = true;
                    self.ghosts += 1;
                    self.conns.entry(key).or_insert(Slot {
                        index,
                        last: at.ts,
                        closed: false,
                        due: NOT_QUEUED,
                        conn: State::Ghost(Ghost::new(seg)),
                    })
                } else {
                    // tables that keep marks or traces keep whole connections
                    let syn = if self.marks || self.trace {
                        None
                    } else {
                        bare_syn(seg, None)
                    };
                    if let Some(syn) = syn {
                        let syns = Syns::new(index, P::new(&self.ctx), syn, at);
                        self.conns.insert(
                            key,
                            Slot {
                                index,
                                last: at.ts,
                                closed: false,
                                due: NOT_QUEUED,
                                conn: State::Syns(syn.seq, Box::new(syns)),
                            },
                        );
                        self.idle_from = self.idle_from.min(at.ts + IDLE_TIMEOUT);
                        self.peak_open = self.peak_open.max(self.conns.len());
                        return true;
                    }
                    opened = true;
                    let mut c = Box::new(Conn::new(index, seg, at, &self.ctx));
                    if self.marks {
                        for h in &mut c.half {
                            h.keep_marks();
                        }
                    }
                    if self.trace {
                        c.trace = Some(Box::default());
                        c.rtt.all = Some(Box::default());
                    }
                    self.conns.entry(key).or_insert(Slot {
                        index,
                        last: at.ts,
                        closed: false,
                        due: NOT_QUEUED,
                        conn: State::Conn(c),
                    })
                }
            }
        };
        if let State::Syns(_, s) = &mut slot.conn {
            // the first segment that is not one of its SYNs: made whole
            slot.conn = State::Conn(s.replay());
        }
        let was_closed = slot.closed;
        match &mut slot.conn {
            State::Conn(conn) => {
                conn.push(seg, at);
                slot.last = conn.last.ts;
                slot.closed = conn.is_closed();
                if slot.closed && !was_closed {
                    for h in &mut conn.half {
                        h.trim_queues();
                    }
                }
            }
            State::Ghost(g) => {
                g.push(seg);
                slot.last = at.ts;
                slot.closed = g.is_closed();
            }
            State::Syns(..) => unreachable!("made whole above"),
        }
        if slot.closed {
            // `last` may go back (timestamps out of order): queue again
            // whenever the deadline moved earlier than the queued one
            let due = slot.last + CLOSED_LINGER;
            if due < slot.due {
                slot.due = due;
                self.closing.push(Reverse((due, slot.index, key)));
            }
        } else {
            self.idle_from = self.idle_from.min(slot.last + IDLE_TIMEOUT);
        }
        self.peak_open = self.peak_open.max(self.conns.len());
        opened
    }

    /// Connections opened so far (the next connection's index).
    pub(crate) fn opened(&self) -> u64 {
        self.next_index
    }

    /// Hand on, in index order, every connection closed and quiet for
    /// [`CLOSED_LINGER`] or silent for [`IDLE_TIMEOUT`] at `now` (the
    /// latest timestamp of the capture so far), and forget tombstones older
    /// than [`TOMBSTONE`].
    pub(crate) fn sweep(&mut self, now: Timestamp, done: &mut dyn FnMut(Box<Conn<P>>)) {
        self.sweep_leaving(now, &mut |l| done(l.into_conn()));
    }

    /// [`FlowTable::sweep`], each connection handed on as it is held
    /// ([`Leaving`]): a connection of SYNs only is made whole when its
    /// taker asks, so a sweep that hands on tens of thousands at once (the
    /// first packet after a silence longer than [`IDLE_TIMEOUT`]) need not
    /// hold them all whole.
    pub(crate) fn sweep_leaving(&mut self, now: Timestamp, done: &mut dyn FnMut(Leaving<P>)) {
        // reused from sweep to sweep: a fresh vector of thousands of keys
        // each time cost page faults
        let mut over = std::mem::take(&mut self.over);
        over.clear();
        if now - self.idle_from > Duration::ZERO {
            // an open connection may be idle: visit them all, and learn
            // when the next one may be
            let mut idle_from = NOT_QUEUED;
            for (k, c) in &mut self.conns {
                let quiet = now - c.last;
                if (c.closed && quiet > CLOSED_LINGER) || quiet > IDLE_TIMEOUT {
                    c.due = LEAVING;
                    over.push((c.index, *k));
                } else if !c.closed {
                    idle_from = idle_from.min(c.last + IDLE_TIMEOUT);
                }
            }
            self.idle_from = idle_from;
        }
        while let Some(&Reverse((due, index, key))) = self.closing.peek() {
            if now - due <= Duration::ZERO {
                break;
            }
            self.closing.pop();
            let Some(c) = self.conns.get_mut(&key) else {
                continue;
            };
            if c.index != index || c.due == LEAVING {
                continue;
            }
            if !c.closed {
                // not closed after all (never, as `Conn::is_closed` stands):
                // an open connection again
                c.due = NOT_QUEUED;
                self.idle_from = self.idle_from.min(c.last + IDLE_TIMEOUT);
                continue;
            }
            let quiet = now - c.last;
            if quiet > CLOSED_LINGER {
                c.due = LEAVING;
                over.push((index, key));
            } else if c.due == due {
                // its latest entry, and it has had segments since: queue
                // it for its deadline now
                c.due = c.last + CLOSED_LINGER;
                self.closing.push(Reverse((c.due, index, key)));
            }
        }
        // index order, not the hash map's: the same whether one table holds
        // every connection or each thread's table a share of them
        over.sort_unstable_by_key(|&(i, _)| i);
        for &(_, k) in &over {
            if let Some(c) = self.conns.remove(&k) {
                if c.closed {
                    self.closed.insert(k, now);
                }
                self.leave_as_held(c, done);
            }
        }
        self.over = over;
        self.swept_at = now;
        // one visit of the tombstones a second of capture time, not one per
        // sweep (ten a second): a second's tombstones at most outlive their
        // time in memory, already ignored by `push`
        if now - self.purged_at >= PURGE_EVERY {
            self.closed.purge(now);
            self.purged_at = now;
        }
    }

    /// End of capture: hand on every connection still open, in index order
    /// (other shards' are dropped, and not told).
    pub fn finish(mut self, done: &mut dyn FnMut(Box<Conn<P>>)) {
        let mut rest: Vec<Slot<P>> = std::mem::take(&mut self.conns).into_values().collect();
        rest.sort_by_key(|s| s.index);
        // made whole one at a time: a storm's thousands of SYN-only
        // connections left at the end are not all whole at once
        for s in rest {
            self.leave(s, done);
        }
    }

    /// Connections of this shard open now (opened and not handed on).
    pub(crate) fn open_now(&self) -> u64 {
        (self.conns.len() - self.ghosts) as u64
    }
}

#[cfg(test)]
mod tests;
