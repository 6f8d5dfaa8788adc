//! A connection of SYNs only ([`super::State::Syns`]): the SYNs a storm's
//! client sends again and again, kept as they came and replayed into a
//! [`Conn`] when the connection goes on or is handed on.

use smallvec::SmallVec;

use crate::base::side::FrameRef;
use crate::flow::reassembly::Trackers;
use crate::flow::Conn;
use crate::wire::{TcpFlags, TcpSegment};

/// See [`State::Syns`]: one allocation for a connection of SYNs, however
/// often they are sent again (a storm's client gives up after about seven).
#[derive(Debug)]
pub(super) struct Syns<P> {
    pub(super) index: u64,
    /// The trackers, made as the first SYN came (the key store then).
    pub(super) protocols: P,
    /// The first SYN, without payload; kind 0.
    pub(super) first: TcpSegment<'static>,
    /// The other distinct SYNs, first seen first (kinds 1, 2, …): most
    /// often none, as a SYN sent again differs in its IP ID and TSval only.
    pub(super) more: Vec<TcpSegment<'static>>,
    /// Every SYN in capture order: which kind, and what differs.
    pub(super) sent: SmallVec<[Sent; 8]>,
}

/// One SYN of a [`Syns`]: a kind with its own IP ID and timestamps.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sent {
    at: FrameRef,
    timestamps: Option<(u32, u32)>,
    ip_id: u16,
    kind: u8,
}

impl<P> Syns<P> {
    /// At most this many distinct SYNs are kept; the next makes the
    /// connection whole.
    const MAX_KINDS: usize = 16;
    /// At most this many SYNs are kept (2 KiB of [`Sent`], about what the
    /// whole connection costs); the next makes the connection whole, whose
    /// state does not grow with its SYNs. Without it a 4-tuple whose client
    /// sends the same SYN again within [`super::IDLE_TIMEOUT`], for ever
    /// (the same storm replayed, a client that never gives up), grew by one
    /// [`Sent`] a SYN.
    const MAX_SENT: usize = 64;

    /// A connection's first SYN (a [`bare_syn`]).
    pub(super) fn new(index: u64, protocols: P, syn: TcpSegment<'static>, at: FrameRef) -> Syns<P> {
        let mut s = Syns {
            index,
            protocols,
            first: syn,
            more: Vec::new(),
            sent: SmallVec::new(),
        };
        s.sent.push(Sent::of(&syn, at, 0));
        s
    }

    /// Keeps `syn` (a [`bare_syn`]); `false` when it would be one kind or
    /// one SYN too many.
    pub(super) fn keep(&mut self, syn: TcpSegment<'static>, at: FrameRef) -> bool {
        // the same SYN sent again: equal but for the IPv4 Identification
        // and the timestamps option. A bare SYN has no payload: comparing
        // the empty slices (`TcpSegment`'s `==`) was a call to `memcmp`
        // for every SYN of a storm
        let plain = |s: &TcpSegment<'static>| {
            let mut o = s.options;
            o.timestamps = None;
            let (ports, numbers) = ((s.src_port, s.dst_port), (s.seq, s.ack));
            (s.src, s.dst, ports, numbers, s.flags, s.window, o)
        };
        debug_assert!(syn.payload.is_empty() && syn.payload_len == 0);
        if self.sent.len() >= Self::MAX_SENT {
            return false;
        }
        let p = plain(&syn);
        let kind = if plain(&self.first) == p {
            0
        } else {
            match self.more.iter().position(|k| plain(k) == p) {
                Some(k) => k + 1,
                None if self.more.len() + 1 < Self::MAX_KINDS => {
                    self.more.push(syn);
                    self.more.len()
                }
                None => return false,
            }
        };
        self.sent
            .push(Sent::of(&syn, at, u8::try_from(kind).unwrap_or(u8::MAX)));
        true
    }

    /// The SYN `s` as it was captured.
    pub(super) fn segment(&self, s: &Sent) -> Option<TcpSegment<'static>> {
        let mut seg = match s.kind {
            0 => self.first,
            k => *self.more.get(usize::from(k) - 1)?,
        };
        seg.ip_id = s.ip_id;
        seg.options.timestamps = s.timestamps;
        Some(seg)
    }

    /// The whole connection: the SYNs replayed into a [`Conn`] (the
    /// trackers moved into it).
    pub(super) fn replay(&mut self) -> Box<Conn<P>>
    where
        P: Trackers,
    {
        let protocols = std::mem::take(&mut self.protocols);
        let mut segs = self
            .sent
            .iter()
            .filter_map(|x| Some((self.segment(x)?, x.at)));
        // `sent` starts with the first SYN, whose kind always exists
        let (first, at) = segs.next().unwrap_or((self.first, FrameRef::default()));
        let mut c = Box::new(Conn::with_protocols(self.index, &first, at, protocols));
        c.push(&first, at);
        for (seg, at) in segs {
            c.push(&seg, at);
        }
        c
    }
}

impl Sent {
    pub(super) fn of(syn: &TcpSegment<'static>, at: FrameRef, kind: u8) -> Sent {
        Sent {
            at,
            timestamps: syn.options.timestamps,
            ip_id: syn.ip_id,
            kind,
        }
    }
}

/// `seg` as a SYN a [`State::Syns`] keeps: a client's SYN (no ACK) without
/// payload, from the same end as the first.
pub(super) fn bare_syn(
    seg: &TcpSegment<'_>,
    first: Option<&TcpSegment<'_>>,
) -> Option<TcpSegment<'static>> {
    let f = seg.flags;
    let syn_only = f.contains(TcpFlags::SYN)
        && !f.contains(TcpFlags::ACK)
        && !f.contains(TcpFlags::RST)
        && !f.contains(TcpFlags::FIN);
    let same_end =
        first.is_none_or(|f| (f.src, f.src_port, f.seq) == (seg.src, seg.src_port, seg.seq));
    (syn_only && seg.payload_len == 0 && seg.payload.is_empty() && same_end).then_some(TcpSegment {
        src: seg.src,
        dst: seg.dst,
        src_port: seg.src_port,
        dst_port: seg.dst_port,
        seq: seg.seq,
        ack: seg.ack,
        flags: seg.flags,
        window: seg.window,
        options: seg.options,
        payload: &[],
        payload_len: 0,
        ip_id: seg.ip_id,
    })
}
