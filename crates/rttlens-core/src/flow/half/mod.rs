//! One direction of a TCP connection: the data one side sends and the ACKs
//! it gets back, tracked online with state bounded by the window.
//!
//! [`Half`] holds the direction's state, grouped by concern: what the
//! sender sent (`Sender`), what it learnt from the peer's ACKs and windows
//! (`PeerAcks`, and `PeerFlags` for its one-byte fields), loss and
//! retransmission (`Loss`), the stall watchers, the timestamp echoes, the
//! rounds, the reassembly and the rare events. `Half::on_data` and
//! `Half::on_peer_ack` take each segment through the concerns in turn;
//! each concern reads in its own file:
//!
//! - `eligible.rs`: which of the peer's ACKs the sender can have received
//!   by now (docs/design.md §4 "Causality"), and what it had seen of them.
//! - `retx.rs`: retransmission classes (fast retransmit, tail loss probe,
//!   timeout), reordering, SACK and D-SACK, the unacknowledged segments.
//! - `below_base.rs`: a capture begun mid-connection whose peer ACKs bytes
//!   below the first one it saw, and their retransmission.
//! - `gaps.rs`: what the capture missed: holes in the sequence and data
//!   acknowledged but never seen (capture drops).
//! - `window.rs`: the peer's window: zero windows, window full, the
//!   window scale inferred without the SYNs.
//! - `stalls.rs`: the Nagle and delayed-ACK stall watchers.
//! - `samples.rs`: RTT samples, Karn's data/ACK pairs and timestamp echoes.

use std::collections::VecDeque;

use crate::base::seq::SeqNumber;
use crate::base::side::{FrameRef, MaybeFrame, Side};
use crate::base::time::Duration;
use crate::flow::reassembly::{Reassembler, StreamSink};
use crate::flow::rounds::{RoundSegment, RoundTracker};
use crate::flow::rtt::RttSamples;

mod below_base;
mod eligible;
mod gaps;
mod retx;
mod samples;
mod stalls;
mod window;

pub use below_base::BELOW_BASE_MAX;
pub use gaps::CaptureDrop;
pub use retx::{Retransmission, RetxKind, MAX_RETX_KEPT, MAX_UNACKED, RTO_MIN};
pub use stalls::{AckStall, NagleStall, DELAYED_ACK_MIN};
pub use window::{WscaleEvidence, ZeroWindow};

use below_base::BelowBase;
use eligible::{AckEv, Eligible};
use gaps::Hole;
use retx::{RetxState, RetxTiming};
use samples::TsEcho;
use stalls::StallWatch;

/// The smallest MSS a host may assume without an MSS option: 536 B
/// (RFC 9293 §3.7.1; RFC 1122 §4.2.2.6). Without the SYNs, a connection that
/// only sent small segments (keep-alives, a chat, a cut snapshot) proves no
/// smaller segment size than this.
pub const MIN_MSS: u64 = 536;
/// Events of a kind kept with their frame (zero windows, capture drops).
pub const MAX_EVENTS_KEPT: usize = 64;

/// The most a path's MTU can take off the MSS a SYN announced and still
/// leave the sender's segments full-sized (bytes): IPsec ESP in tunnel mode
/// with AES-GCM adds about 73 B, a GRE/IPIP tunnel 24 B, PPPoE 8 B, a VPN
/// over UDP up to ~100 B; 160 leaves room for two of them. A segment further
/// below the MSS than that is small, however often it was sent.
pub(crate) const TUNNEL_OVERHEAD_MAX: u64 = 160;

/// What the engine said of one frame, in the terms of Wireshark's
/// `tcp.analysis.*` flags (for cross-checks; `docs/wireshark.md` says where
/// and why the two differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameMark {
    /// A retransmission, and how it was sent.
    Retransmission(RetxKind),
    /// A pure ACK repeating the last ACK and window with data outstanding.
    DuplicateAck,
    /// A window field of 0.
    ZeroWindow,
    /// New data ending at the right edge of the receiver's window as the
    /// sender had it (cumulative ACK + window).
    WindowFull,
    /// A data segment beyond the highest one seen: the bytes between were
    /// not captured.
    PreviousSegmentLost,
    /// An ACK of bytes the capture never saw (Wireshark's
    /// `tcp.analysis.ack_lost_segment`): the gap is counted here, once, and
    /// the data segment after it is contiguous for the engine.
    AckedUnseen,
    /// A SYN or SYN-ACK sent again with the same ISN (RFC 6298 §5.7: the
    /// initial RTO, doubled each time): Wireshark's
    /// `tcp.analysis.retransmission` on a SYN. The cost is
    /// `syn-retransmission`'s.
    SynRetransmission,
    /// An exact copy of a frame just before it (captured twice), dropped
    /// before the flow layer (`wire/duplicates.rs`): Wireshark calls it a
    /// retransmission or a duplicate ACK.
    CapturedTwice,
}

/// The sender's view of one direction, its state grouped by concern: what
/// the sender sent (`Sender`), what it learnt from the peer's ACKs and
/// windows (`PeerAcks`, `PeerFlags`), loss and retransmission
/// (`Loss`), the stall watchers, the timestamp echoes behind RTT samples,
/// the rounds, the reassembly, and the rare events in a box of their own.
#[derive(Debug)]
pub struct Half {
    /// Which side sends this direction's data.
    pub side: Side,
    /// Initial sequence number, when the SYN was seen.
    pub isn: Option<SeqNumber>,
    /// Sequence number of stream offset 0: ISN + 1, or the first segment
    /// seen without the SYN.
    base: Option<SeqNumber>,
    /// What the sender sent.
    pub(crate) send: Sender,
    /// What the sender learnt from the peer's ACKs and windows.
    pub(crate) peer: PeerAcks,
    /// How to read the peer's next segments (one byte each, packed here
    /// beside `side`, `isn` and `base`).
    pub(crate) peer_flags: PeerFlags,
    /// Loss, retransmission and what the capture missed.
    pub(crate) loss: Loss,
    /// What the stall watchers remember of the last segments and their ACKs.
    stalls: StallWatch,
    /// This side's TSvals waiting for the peer's echo.
    ts_echo: TsEcho,
    /// Rounds of this sender.
    pub(crate) rounds: RoundTracker,
    /// In-order delivery to the protocol trackers.
    pub(crate) reasm: Reassembler,
    /// The events few connections have (retransmissions, stalls, zero
    /// windows, capture drops, marks): boxed at the first one.
    events: Option<Box<Events>>,
}

/// The send side of a direction as seen at the capture point, in the terms
/// of RFC 9293 §3.3.1's send sequence variables and Linux's `tcp_sock` and
/// `tcp_info` (`snd_nxt`, `mss_cache`, `tcpi_bytes_sent`,
/// `tcpi_data_segs_out`). Offsets count from the stream's first byte.
#[derive(Debug, Default)]
pub(crate) struct Sender {
    /// Highest stream offset sent (SND.NXT; end of data, FIN not counted).
    pub(crate) snd_nxt: u64,
    /// The sender's last segment (at the capture point).
    pub(crate) last_send: MaybeFrame,
    /// First data segment.
    pub(crate) first_data: MaybeFrame,
    /// Last segment that carried new data.
    pub(crate) last_new_data: MaybeFrame,
    /// FIN from this side.
    pub(crate) fin: MaybeFrame,
    /// Payload bytes on the wire, retransmissions included.
    pub(crate) bytes_sent: u64,
    /// Data segments (payload > 0).
    pub(crate) data_segments: u64,
    /// Largest payload seen (bytes).
    pub(crate) max_payload: u32,
    /// Data segments of exactly [`max_payload`](Self::max_payload) bytes.
    max_payload_count: u32,
    /// Data segments larger than the MSS: the capture was taken on an end
    /// host with TSO/GSO (sent) or GRO (received) offload, which hands the
    /// capture one large segment for several on the wire. Counted only when
    /// the MSS is known from the SYNs.
    pub(crate) oversized: u64,
    /// The sender's MSS (bytes; 0 while unknown; RFC 9293 §3.7.1), for
    /// "small segment" tests.
    pub(crate) mss: u64,
}

/// What the sender learnt from the peer's ACKs and windows, in the terms of
/// RFC 9293 §3.3.1 (SND.UNA, SND.WND) and RFC 7323 §2 (the window scale),
/// Linux's `snd_una` and `snd_wnd`: at the capture point, and as the sender
/// could have had them by now (docs/design.md §4 "Causality").
#[derive(Debug, Default)]
pub(crate) struct PeerAcks {
    /// Highest cumulative ACK from the peer (stream offset; SND.UNA at the
    /// capture point).
    pub(crate) acked: u64,
    /// Latest window field the peer advertised (raw, unscaled; see
    /// [`Half::scaled`]).
    pub(crate) window: u64,
    /// Largest window field the peer advertised (raw, unscaled).
    pub(crate) max_window: u64,
    /// Without the SYNs: the segment that raised the inferred window-scale
    /// shift last.
    pub(crate) wscale_evidence: Option<Box<WscaleEvidence>>,
    /// Segments sent while the flight filled the peer's window
    /// (Wireshark's `tcp.analysis.window_full`).
    pub(crate) window_full: u64,
    /// The peer's ACKs not yet eligible for the sender, oldest first.
    hist: VecDeque<AckEv>,
    /// What the sender had seen of the peer's ACKs.
    elig: Eligible,
    /// Pure ACKs from the peer that acknowledged everything this side had
    /// sent, one per burst of new data (first [`MAX_EVENTS_KEPT`]): a quick
    /// one followed by a late answer means the peer's application was slow,
    /// not its TCP (docs/design.md §4 "Think time").
    pub(crate) full_acks: Vec<FrameRef>,
    /// The latest of them (kept when the list is full).
    pub(crate) last_full_ack: MaybeFrame,
}

/// How to read the peer's next segments: its window scale and what this
/// side's last segments left open. Apart from [`PeerAcks`] because one-byte
/// fields there would pad it by a word; here they share one with
/// [`Half::side`] and the sequence bases.
#[derive(Debug, Default)]
pub(crate) struct PeerFlags {
    /// The peer's window-scale shift applied to its window field (RFC 7323
    /// §2.2 Snd.Wind.Shift; Linux `rx_opt.snd_wscale`): from the SYNs when
    /// [`PeerFlags::wscale_known`], else the smallest shift the sender's
    /// flight allows (a lower bound, see [`WscaleEvidence`]).
    pub(crate) peer_wscale: u8,
    /// Both SYNs were seen, so [`PeerFlags::peer_wscale`] is the negotiated
    /// shift, not an inferred lower bound.
    pub(crate) wscale_known: bool,
    /// An ACK from the peer was seen: [`PeerAcks::acked`] means something.
    ack_seen: bool,
    /// This side's last segment was a keep-alive (seq = SND.UNA − 1, RFC
    /// 9293 §3.8.4): the peer's next ACK answers it and is no duplicate ACK.
    keepalive_out: bool,
    /// New data went out since the peer's last full ACK
    /// ([`PeerAcks::full_acks`]).
    awaiting_full_ack: bool,
    /// The peer sent data since the last small segment: what follows may
    /// answer it.
    pub(crate) peer_spoke: bool,
    /// The peer sent data since the last new-data segment.
    pub(crate) peer_spoke_since_data: bool,
}

/// Loss and retransmission, in the terms of RFC 6298 (timeout), RFC 8985
/// (tail loss probe), RFC 6675 and RFC 2883 (SACK, D-SACK) and Linux's
/// `total_retrans` and `reord_seen`, and what the capture missed (holes,
/// bytes acknowledged but never seen).
#[derive(Debug, Default)]
pub(crate) struct Loss {
    /// The unacknowledged segments and the retransmission state.
    retx_state: RetxState,
    /// Bytes the capture missed between segments, until filled or ACKed.
    holes: Vec<Hole>,
    /// Mid-stream: the peer's ACKs below the first byte the capture saw.
    below: Option<Box<BelowBase>>,
    /// Retransmissions in total.
    pub(crate) retx_count: u64,
    /// Segments that filled a hole soon after it opened: reordering.
    pub(crate) out_of_order: u64,
    /// Bytes acknowledged but never seen, in total.
    pub(crate) dropped_bytes: u64,
}

/// What a direction keeps of its rare events, in a box of its own: a
/// clean connection's halves hold none (a crowd of open connections costs
/// less).
#[derive(Debug, Default)]
struct Events {
    /// Retransmissions (first [`MAX_RETX_KEPT`]).
    retx: Vec<Retransmission>,
    /// Zero-window episodes the peer imposed (first [`MAX_EVENTS_KEPT`]).
    zero_windows: Vec<ZeroWindow>,
    /// ACKs for data the capture never saw (first [`MAX_EVENTS_KEPT`]).
    drops: Vec<CaptureDrop>,
    /// Nagle stalls (first [`MAX_EVENTS_KEPT`]).
    nagle: Vec<NagleStall>,
    /// Stalls on a delayed ACK (first [`MAX_EVENTS_KEPT`]).
    ack_stalls: Vec<AckStall>,
    /// Every frame's TCP analysis marks, in capture order; `None` unless
    /// asked for ([`crate::flow::FlowTable::with_marks`]).
    marks: Option<Vec<(FrameRef, FrameMark)>>,
}

impl Sender {
    /// The size of this sender's full segments (bytes; 0 while the MSS is
    /// unknown): its MSS, or the largest payload it sent at least twice when
    /// that sits within [`TUNNEL_OVERHEAD_MAX`] below the MSS: a path whose
    /// MTU is smaller than the MSS announced (a tunnel, PPPoE, an MSS clamp
    /// in one direction only; 1380 B segments under a 1460 B MSS) makes the
    /// sender's segments that size, and they are full, not small.
    pub(crate) fn full_size(&self) -> u64 {
        let cap = u64::from(self.max_payload);
        if self.max_payload_count >= 2 && cap < self.mss && self.mss - cap <= TUNNEL_OVERHEAD_MAX {
            cap
        } else {
            self.mss
        }
    }

    /// A full segment of this sender as far as the capture tells (bytes):
    /// [`Sender::full_size`] with the MSS known, else the largest payload it
    /// sent, never below [`MIN_MSS`] (no SYNs in the capture).
    pub(crate) fn segment_size(&self) -> u64 {
        if self.mss > 0 {
            self.full_size()
        } else {
            u64::from(self.max_payload).max(MIN_MSS)
        }
    }
}

impl Half {
    /// A direction with nothing seen yet.
    pub fn new(side: Side) -> Half {
        Half {
            side,
            isn: None,
            base: None,
            send: Sender::default(),
            peer: PeerAcks::default(),
            peer_flags: PeerFlags::default(),
            loss: Loss::default(),
            stalls: StallWatch::default(),
            ts_echo: TsEcho::default(),
            rounds: RoundTracker::default(),
            reasm: Reassembler::default(),
            events: None,
        }
    }

    /// Retransmissions (first [`MAX_RETX_KEPT`]).
    pub fn retx(&self) -> &[Retransmission] {
        self.events.as_ref().map_or(&[], |e| &e.retx)
    }

    /// Zero-window episodes the peer imposed (first [`MAX_EVENTS_KEPT`]).
    pub(crate) fn zero_windows(&self) -> &[ZeroWindow] {
        self.events.as_ref().map_or(&[], |e| &e.zero_windows)
    }

    /// ACKs for data the capture never saw (first [`MAX_EVENTS_KEPT`]).
    pub(crate) fn drops(&self) -> &[CaptureDrop] {
        self.events.as_ref().map_or(&[], |e| &e.drops)
    }

    /// Nagle stalls (first [`MAX_EVENTS_KEPT`]).
    pub(crate) fn nagle(&self) -> &[NagleStall] {
        self.events.as_ref().map_or(&[], |e| &e.nagle)
    }

    /// Stalls on a delayed ACK (first [`MAX_EVENTS_KEPT`]).
    pub(crate) fn ack_stalls(&self) -> &[AckStall] {
        self.events.as_ref().map_or(&[], |e| &e.ack_stalls)
    }

    /// Keep every frame's TCP analysis marks from now on.
    pub(crate) fn keep_marks(&mut self) {
        self.events_mut().marks = Some(Vec::new());
    }

    /// The marks kept ([`Half::keep_marks`]), in capture order; the box
    /// goes too when it held nothing else.
    pub(crate) fn take_marks(&mut self) -> Vec<(FrameRef, FrameMark)> {
        let Some(e) = self.events.as_mut() else {
            return Vec::new();
        };
        let marks = e.marks.take().unwrap_or_default();
        let Events {
            retx,
            zero_windows,
            drops,
            nagle,
            ack_stalls,
            marks: _,
        } = &**e;
        if retx.is_empty()
            && zero_windows.is_empty()
            && drops.is_empty()
            && nagle.is_empty()
            && ack_stalls.is_empty()
        {
            self.events = None;
        }
        marks
    }

    /// The events' box, made at the first one.
    fn events_mut(&mut self) -> &mut Events {
        self.events.get_or_insert_with(Box::default)
    }

    /// Trims the working queues (unacknowledged segments, ACKs not yet
    /// eligible, TSvals awaiting their echo, holes, out-of-order data) to
    /// what they hold: an empty one gives back all its room. Called once
    /// the connection closed, which then waits in the table for late
    /// segments ([`CLOSED_LINGER`]); a late segment makes room again.
    ///
    /// [`CLOSED_LINGER`]: crate::flow::CLOSED_LINGER
    pub(crate) fn trim_queues(&mut self) {
        self.loss.retx_state.unacked.shrink_to_fit();
        self.peer.hist.shrink_to_fit();
        self.ts_echo.trim();
        self.loss.holes.shrink_to_fit();
        self.reasm.trim();
    }

    /// Everything this side sent so far has been acknowledged (true before
    /// any data).
    pub(crate) fn ack_seen_all(&self) -> bool {
        self.peer.acked >= self.send.snd_nxt
    }

    /// Set the sequence number of stream offset 0 (ISN + 1) from a SYN.
    pub(crate) fn set_isn(&mut self, isn: SeqNumber) {
        self.isn = Some(isn);
        if self.base.is_none() {
            self.base = Some(isn.add(1));
        }
    }

    /// Stream offset of `seq`, relative to the highest offset sent; `None`
    /// before this direction's first segment.
    pub(crate) fn offset(&self, seq: SeqNumber) -> Option<u64> {
        let base = self.base?;
        // unwrap the 32-bit number around snd_nxt, so streams over 4 GiB work
        let nxt_seq = base.add(self.send.snd_nxt as u32);
        let off = self.send.snd_nxt as i64 + seq.diff(nxt_seq);
        (off >= 0).then_some(off as u64)
    }

    /// Process an ACK (and its raw window field, and SACK blocks)
    /// that the peer sent at `at`. `pure` is true for a segment without
    /// payload, SYN, FIN or RST. `window` is `None` for a RST, whose window
    /// field means nothing (RFC 9293 §3.10.7): the last one stays.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_peer_ack(
        &mut self,
        ack: SeqNumber,
        window: Option<u64>,
        sack: &[(SeqNumber, SeqNumber)],
        pure: bool,
        at: FrameRef,
        rtt: &mut RttSamples,
        sink: Option<&mut dyn StreamSink>,
    ) {
        let Some(off) = self.offset(ack) else {
            if let Some(w) = window {
                if self.base.is_none() {
                    // before this sender's first segment: no offset to
                    // read the ACK against, but a zero window is one
                    self.note_zero_window(w, at);
                }
                self.ack_below_base(ack, w, sack, pure, at);
            }
            return;
        };
        if self.loss.below.is_some() {
            // the ACK reached the first byte the capture saw: the hole below
            // it is closed
            self.loss.below = None;
        }
        let window_known = window.is_some();
        let window = window.unwrap_or(self.peer.window);
        self.ack_beyond_sent(off, at);
        let advanced = !self.peer_flags.ack_seen || off > self.peer.acked;
        let acked_before = self.peer.acked;
        // a duplicate ACK as Wireshark's `tcp.analysis.duplicate_ack`
        // (packet-tcp.c): a pure ACK repeating the last ACK number and a
        // non-zero window (a zero window repeated is the receiver still
        // full), not the answer to a keep-alive; counted towards fast
        // retransmit only with data outstanding
        let dup_mark = pure
            && self.peer_flags.ack_seen
            && off == self.peer.acked
            && window != 0
            && window == self.peer.window
            && !self.peer_flags.keepalive_out;
        let dup = dup_mark && self.send.snd_nxt > self.peer.acked;
        self.peer_flags.keepalive_out = false;
        // holes below the ACK were delivered past the capture point
        if advanced && !self.loss.holes.is_empty() {
            self.holes_acked(off, at);
        }
        if let Some(sink) = sink {
            let covered = off.min(self.send.snd_nxt);
            if covered > self.reasm.next_offset() {
                self.reasm.skip_to(covered, sink);
            }
        }
        if dup_mark {
            self.mark(at, FrameMark::DuplicateAck);
        }
        self.on_peer_window(window, window_known, at);
        let (sacked, sack_high) = self.read_sack(sack, off, at);
        if advanced {
            self.karn_sample(off, at, rtt);
            self.peer.acked = off;
        }
        self.stall_acks(off, at, pure, acked_before);
        if pure && self.peer_flags.awaiting_full_ack && off >= self.send.snd_nxt {
            self.peer_flags.awaiting_full_ack = false;
            self.peer.last_full_ack.set(at);
            if self.peer.full_acks.len() < MAX_EVENTS_KEPT {
                self.peer.full_acks.push(at);
            }
        }
        self.peer_flags.ack_seen = true;
        self.queue_ack(at, off, window, (sacked, sack_high), dup);
    }

    /// This side's SYN (or SYN-ACK) at `at` was sent again
    /// ([`FrameMark::SynRetransmission`]).
    pub(crate) fn mark_syn_retransmission(&mut self, at: FrameRef) {
        self.mark(at, FrameMark::SynRetransmission);
    }

    fn mark(&mut self, at: FrameRef, m: FrameMark) {
        if let Some(v) = self.events.as_mut().and_then(|e| e.marks.as_mut()) {
            v.push((at, m));
        }
    }

    /// Process a data segment this side sent: `len` payload bytes on the wire
    /// at `seq`, of which `payload` were captured.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_data(
        &mut self,
        seq: SeqNumber,
        len: u32,
        payload: &[u8],
        at: FrameRef,
        h_x: Duration,
        h_peer: Duration,
        rtt_min: Duration,
        srtt_max: Option<Duration>,
        sink: Option<&mut dyn StreamSink>,
    ) {
        if self.base.is_none() {
            self.base = Some(seq);
        }
        let Some(off) = self.offset(seq) else {
            self.data_below_base(seq, len, at, rtt_min);
            return;
        };
        let end = off + len as u64;
        self.advance_eligible(at.ts, h_x);
        if len > 1 && end > self.send.snd_nxt {
            self.advance_to_cover(end);
        }
        self.send.bytes_sent += len as u64;
        self.send.data_segments += 1;
        match len.cmp(&self.send.max_payload) {
            std::cmp::Ordering::Greater => {
                (self.send.max_payload, self.send.max_payload_count) = (len, 1)
            }
            std::cmp::Ordering::Equal => self.send.max_payload_count += 1,
            std::cmp::Ordering::Less => {}
        }
        if self.send.mss > 0 && u64::from(len) > self.send.mss {
            self.send.oversized += 1;
        }
        self.send.first_data.set_once(at);
        let silence = self
            .send
            .last_send
            .get()
            .map(|l| at.ts - l.ts)
            .unwrap_or(Duration::ZERO);
        let snd_nxt_before = self.send.snd_nxt;

        // Keep-alive (seq = snd_una − 1, RFC 9293 §3.8.4) or zero-window probe.
        let probe = len <= 1
            && ((self.peer_flags.ack_seen && end <= self.peer.acked)
                || (self.peer.elig.seen && self.peer.elig.window == 0));
        let mut retx = false;
        let mut new_bytes = 0;
        self.peer_flags.keepalive_out = probe && self.peer_flags.ack_seen && end <= self.peer.acked;
        if probe {
            // keep-alive or zero-window probe: not a retransmission
        } else if off < self.send.snd_nxt {
            // overlaps what was sent before: a hole fill or a retransmission
            let timing = RetxTiming {
                since_send: silence,
                h_x,
                rtt_min,
                srtt_max,
            };
            retx = self.on_resent(off, len, at, timing);
            if end > self.send.snd_nxt {
                new_bytes = end - self.send.snd_nxt;
            }
        } else {
            if off > self.send.snd_nxt {
                self.open_hole(off, at);
            }
            new_bytes = len as u64;
        }
        if new_bytes > 0 {
            self.settle_nagle(at, rtt_min);
        }
        if new_bytes > 0 && !retx && off == snd_nxt_before {
            self.check_nagle(off, len, at, h_x, rtt_min);
            self.check_ack_stall(off, at, h_x, h_peer, rtt_min);
        }
        if new_bytes > 0 {
            self.send.last_new_data.set(at);
            self.peer_flags.awaiting_full_ack = true;
            self.note_sent(off, end, at);
            self.send.snd_nxt = end;
        }
        let flight = self
            .send
            .snd_nxt
            .saturating_sub(self.peer.elig.ack)
            .saturating_sub(self.peer.elig.sacked);
        if !probe && !retx {
            self.infer_wscale(end, at);
        }
        // new data reaching the right edge of the window the sender had
        // seen, as Wireshark's `tcp.analysis.window_full` (the edge itself:
        // data past it is an overrun, and a retransmission fills nothing)
        if new_bytes > 0 && !retx && !probe {
            self.check_window_full(end, at);
        }
        let answers_peer = self.peer_flags.peer_spoke_since_data;
        if new_bytes > 0 && !retx {
            self.note_last_data(len, at, flight);
        }
        if !probe {
            self.rounds.on_segment(RoundSegment {
                at,
                offset: off,
                len,
                new_bytes,
                retx,
                flight,
                eligible_ack: self.peer.elig.ack,
                rwnd: self.peer.elig.window,
                snd_nxt_before,
                since_ack: self
                    .peer
                    .elig
                    .seen
                    .then(|| (at.ts - h_x) - self.peer.elig.ack_ts),
                answers_peer,
            });
        }
        if let Some(sink) = sink {
            self.reasm.push(off, payload, len as u64, at, sink);
        }
        self.send.last_send.set(at);
    }
}

#[cfg(test)]
mod tests {
    /// A crowd of open connections holds two halves each: the grouping by
    /// concern costs no padding (`PeerFlags` shares a word with `side`).
    #[test]
    fn half_stays_small() {
        assert!(std::mem::size_of::<super::Half>() <= 936);
    }
}
