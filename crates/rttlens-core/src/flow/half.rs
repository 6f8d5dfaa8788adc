//! One direction of a TCP connection: the data one side sends and the ACKs
//! it gets back, tracked online with state bounded by the window.

use std::collections::VecDeque;

use crate::base::seq::SeqNumber;
use crate::base::side::{FrameRef, Side};
use crate::base::time::{Duration, Timestamp};
use crate::flow::reassembly::{Reassembler, StreamSink};
use crate::flow::rounds::{RoundSegment, RoundTracker};
use crate::flow::rtt::{RttMethod, RttSamples};

/// TSvals kept waiting for their echo per side: about 4 s of a TSval
/// clock ticking every ms, enough for any queue; a bound on memory per
/// connection whatever the peer does.
const TS_PENDING_MAX: usize = 4096;

/// `a` is a later TSval than `b` (32-bit wrap-around, RFC 7323 §5.2).
fn ts_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// Retransmissions kept in detail per direction (the rest are counted).
pub const MAX_RETX_KEPT: usize = 256;
/// Unacknowledged segments tracked per direction (for original send times
/// and Karn RTT samples); past it the oldest are forgotten.
pub const MAX_UNACKED: usize = 1 << 16;
/// Minimum retransmission timeout on Linux (`TCP_RTO_MIN`, include/net/tcp.h): 200 ms.
pub const RTO_MIN: Duration = Duration::from_millis(200);
/// The smallest MSS a host may assume without an MSS option: 536 B
/// (RFC 9293 §3.7.1; RFC 1122 §4.2.2.6). Without the SYNs, a connection that
/// only sent small segments (keep-alives, a chat, a cut snapshot) proves no
/// smaller segment size than this.
pub const MIN_MSS: u64 = 536;
/// ACKs still on their way to a sender that [`Half::advance_to_cover`]
/// looks through for one whose window covers its new data.
const COVER_SCAN: usize = 64;
/// Events of a kind kept with their frame (zero windows, capture drops).
pub const MAX_EVENTS_KEPT: usize = 64;

/// The most a path's MTU can take off the MSS a SYN announced and still
/// leave the sender's segments full-sized (bytes): IPsec ESP in tunnel mode
/// with AES-GCM adds about 73 B, a GRE/IPIP tunnel 24 B, PPPoE 8 B, a VPN
/// over UDP up to ~100 B; 160 leaves room for two of them. A segment further
/// below the MSS than that is small, however often it was sent.
pub const TUNNEL_OVERHEAD_MAX: u64 = 160;

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
    /// An exact copy of a frame just before it (captured twice), dropped
    /// before the flow layer (`wire/duplicates.rs`): Wireshark calls it a
    /// retransmission or a duplicate ACK.
    CapturedTwice,
}

/// How a retransmission was triggered (docs/design.md §4 "Loss", order of
/// checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetxKind {
    /// ≥ 3 duplicate ACKs or SACK above the hole (RFC 5681 §3.2, RFC 6675),
    /// or time-based RACK loss detection (RFC 8985 §6.2) without them.
    FastRetransmit,
    /// Tail loss probe: the highest segment resent after ~2·SRTT of silence
    /// (RFC 8985 §7; Linux `tcp_schedule_loss_probe`).
    TailLossProbe,
    /// Retransmission timeout (RFC 6298 §5; ≥ 200 ms silence on Linux).
    Rto,
}

impl RetxKind {
    /// Stable name used in the outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            RetxKind::FastRetransmit => "fast-retransmit",
            RetxKind::TailLossProbe => "tail-loss-probe",
            RetxKind::Rto => "rto",
        }
    }
}

/// One retransmission.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Retransmission {
    /// The retransmitted segment.
    pub at: FrameRef,
    /// The original transmission, when the capture saw it (not when the
    /// original was lost before the capture point).
    pub original: Option<FrameRef>,
    /// Stream offset and length (bytes).
    pub offset: u64,
    /// Payload length (bytes).
    pub len: u32,
    /// Trigger.
    pub kind: RetxKind,
    /// What the sender's timer saw: time since its previous segment and
    /// since the last ACK reached it, whichever is shorter.
    pub silence: Duration,
    /// Duplicate ACKs the sender had seen.
    pub dupacks: u32,
    /// The sender had SACK blocks above this segment (RFC 6675 loss evidence).
    pub sack_above: bool,
    /// Earlier retransmissions of the same offset (RTO backoff count).
    pub backoff: u8,
    /// The receiver already had the data: an ACK covering it was seen
    /// before the retransmission, or a D-SACK reported it (RFC 2883).
    pub spurious: bool,
    /// Classified without dupACK/SACK evidence (RACK or unknown trigger).
    pub inferred: bool,
    /// The frame of an ACK covering the data that was seen long enough
    /// before for the sender to have it, yet it resent: that ACK (and any
    /// after it) was lost on the way to the sender, and its timer, not the
    /// ACKs, clocked it.
    pub lost_ack: Option<u64>,
    /// Time the data was held up: retransmission − original send (or hole
    /// opening when the original was not seen).
    pub delay: Duration,
}

/// The peer advertised a zero window for a while.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct ZeroWindow {
    /// The ACK advertising window 0.
    pub start: FrameRef,
    /// The ACK that opened the window again (None: never, within the capture).
    pub end: Option<FrameRef>,
}

/// A small segment held back until the ACK of the previous small segment
/// reached the sender: the signature of Nagle's algorithm (RFC 896; Linux's
/// Minshall variant, `tcp_nagle_check()`: a sub-MSS segment waits while the
/// last small segment sent is unacknowledged).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct NagleStall {
    /// The earlier small segment (y).
    pub y: FrameRef,
    /// Its payload (bytes).
    pub y_len: u32,
    /// The peer's pure ACK covering y.
    pub ack: FrameRef,
    /// The held segment (x), sent as soon as that ACK arrived.
    pub x: FrameRef,
    /// Its payload (bytes).
    pub x_len: u32,
}

/// The sender went quiet until the peer's pure ACK of its last segment
/// arrived, that ACK covered at most one segment of new data, and the peer
/// had held it for at least [`DELAYED_ACK_MIN`] beyond the path: the
/// signature of a delayed ACK
/// (RFC 1122 §4.2.3.2; Linux `tcp_send_delayed_ack()`) stalling a sender
/// that could not send more until it was acknowledged (congestion window,
/// peer window or send buffer), whatever the segment sizes.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct AckStall {
    /// The sender's last segment before the stall (y).
    pub y: FrameRef,
    /// Its payload (bytes).
    pub y_len: u32,
    /// Bytes in flight once y was sent, as the sender saw it (the ACKs that
    /// could have reached it).
    pub flight: u64,
    /// The same by the ACKs seen at the capture point (Wireshark's
    /// `tcp.analysis.bytes_in_flight`): less at a receiver's vantage, where
    /// the latest ACKs had not yet reached the sender.
    pub flight_here: u64,
    /// The peer's pure ACK covering y.
    pub ack: FrameRef,
    /// How long the peer held that ACK: ACK − y − the peer's side of the
    /// path.
    pub held: Duration,
    /// The next new data, sent as soon as that ACK arrived (x).
    pub x: FrameRef,
}

/// An ACK held at least this long beyond the path was delayed by the
/// receiver's delayed-ACK timer (Linux `TCP_DELACK_MIN` is 40 ms; allow for
/// jitter).
pub const DELAYED_ACK_MIN: Duration = Duration::from_millis(30);

/// Why the peer's window-scale shift is at least what it is, when the SYNs
/// that negotiated it are not in the capture: a sender never sends past the
/// right edge of the offered window (RFC 9293 §3.8.6, snd_una + snd_wnd),
/// so data reaching `flight` bytes beyond the eligible ACK under a raw
/// window field `raw` proves `raw << shift ≥ flight`. Nothing bounds the
/// shift from above: scaled windows are lower bounds.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct WscaleEvidence {
    /// The data segment that reached past `raw << (shift − 1)`.
    pub at: FrameRef,
    /// Its end − the eligible cumulative ACK (bytes).
    pub flight: u64,
    /// The window field the sender had last heard (unscaled).
    pub raw: u64,
    /// The smallest shift with `raw << shift ≥ flight` (≤ 14).
    pub shift: u8,
}

/// Data the capture never saw although the receiver acknowledged it.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct CaptureDrop {
    /// The ACK that revealed it.
    pub at: FrameRef,
    /// Bytes acknowledged but never seen.
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy)]
struct SentSeg {
    offset: u64,
    end: u64,
    at: FrameRef,
    retx: u8,
    /// Retransmissions of it by timeout (for the backoff count).
    rtos: u8,
}

/// How far below the first sequence number a mid-stream capture saw from a
/// sender the peer's ACKs may point and still be taken as a hole there
/// (bytes): a few windows' worth.
pub const BELOW_BASE_MAX: u64 = 1 << 24;

/// A capture that began mid-connection (no SYN) whose peer ACKs bytes below
/// the first sequence number it saw from this sender: the hole's bytes were
/// sent before the capture began, and their retransmission is coming.
#[derive(Debug, Clone, Copy)]
struct BelowBase {
    /// The peer's cumulative ACK (below the first byte seen).
    ack: SeqNumber,
    /// The window field that came with it.
    window: u64,
    /// The first ACK at this number.
    first: FrameRef,
    /// Duplicate ACKs at this number since.
    dupacks: u32,
    /// A SACK block reported bytes above the hole.
    sack_above: bool,
}

/// Timing inputs of a retransmission's classification.
#[derive(Debug, Clone, Copy)]
struct RetxTiming {
    /// Time since the sender's previous segment, at the capture point.
    since_send: Duration,
    /// M→sender→M.
    h_x: Duration,
    /// Baseline RTT.
    rtt_min: Duration,
}

#[derive(Debug, Clone, Copy)]
struct Hole {
    start: u64,
    end: u64,
    opened: FrameRef,
}

/// One ACK from the peer, or a run of ACKs that differ only in time.
#[derive(Debug, Clone, Copy)]
struct AckEv {
    ts: Timestamp,
    /// Frame of the run's first ACK.
    frame: u64,
    /// The latest ACK of the run: a repeat of the one before (same ACK,
    /// window and SACK, not a duplicate ACK) only moves the time the sender
    /// last heard from the peer ([`Eligible::any_ts`]), so it joins the run
    /// rather than the queue. Without that, the peer's data segments of a
    /// download, each repeating the same ACK of the request, would queue
    /// one event each until this side sends again: memory growing with the
    /// connection's length.
    last_ts: Timestamp,
    ack: u64,
    window: u64,
    sacked: u64,
    sack_high: u64,
    dup: bool,
}

/// What the sender had seen of the peer's ACKs (the causally eligible ones).
#[derive(Debug, Clone, Copy, Default)]
struct Eligible {
    ack: u64,
    window: u64,
    sacked: u64,
    sack_high: u64,
    dupacks: u32,
    seen: bool,
    /// When the latest advancing ACK was seen at the capture point.
    ack_ts: Timestamp,
    /// Its frame.
    ack_frame: u64,
    /// When the latest ACK of any kind (dupACKs too) was seen.
    any_ts: Timestamp,
}

/// The sender's view of one direction.
#[derive(Debug)]
pub struct Half {
    /// Which side sends this direction's data.
    pub side: Side,
    /// Initial sequence number, when the SYN was seen.
    pub isn: Option<SeqNumber>,
    base: Option<SeqNumber>,
    /// Highest stream offset sent (end of data; FIN not counted).
    pub snd_nxt: u64,
    /// Highest cumulative ACK from the peer (stream offset).
    pub acked: u64,
    ack_seen: bool,
    /// Latest window field the peer advertised (raw, unscaled; see
    /// [`Half::scaled`]).
    pub window: u64,
    /// Largest window field the peer advertised (raw, unscaled).
    pub max_window: u64,
    /// The peer's window-scale shift applied to its window field: from the
    /// SYNs when [`Half::wscale_known`], else the smallest shift the
    /// sender's flight allows (a lower bound, see [`WscaleEvidence`]).
    pub peer_wscale: u8,
    /// Both SYNs were seen, so [`Half::peer_wscale`] is the negotiated shift
    /// (RFC 7323 §2.2), not an inferred lower bound.
    pub wscale_known: bool,
    /// Without the SYNs: the segment that raised the inferred shift last.
    pub wscale_evidence: Option<WscaleEvidence>,
    hist: VecDeque<AckEv>,
    elig: Eligible,
    /// This side's last segment was a keep-alive (seq = snd_una − 1): the
    /// peer's next ACK answers it and is no duplicate ACK.
    keepalive_out: bool,
    /// Mid-stream: the peer's ACKs below the first byte the capture saw.
    below: Option<BelowBase>,
    unacked: VecDeque<SentSeg>,
    holes: Vec<Hole>,
    /// The sender's last segment (at the capture point).
    pub last_send: Option<FrameRef>,
    /// First data segment.
    pub first_data: Option<FrameRef>,
    /// Last segment that carried new data.
    pub last_new_data: Option<FrameRef>,
    /// Payload bytes on the wire, retransmissions included.
    pub bytes_sent: u64,
    /// Data segments (payload > 0).
    pub data_segments: u64,
    /// Largest payload seen (bytes).
    pub max_payload: u32,
    /// Data segments of exactly [`max_payload`](Self::max_payload) bytes.
    max_payload_count: u32,
    /// Data segments larger than the MSS: the capture was taken on an end
    /// host with TSO/GSO (sent) or GRO (received) offload, which hands the
    /// capture one large segment for several on the wire. Counted only when
    /// the MSS is known from the SYNs.
    pub oversized: u64,
    /// Retransmissions (first [`MAX_RETX_KEPT`]).
    pub retx: Vec<Retransmission>,
    /// Every frame's TCP analysis marks, in capture order; `None` unless
    /// asked for ([`crate::flow::FlowTable::with_marks`]).
    pub marks: Option<Vec<(FrameRef, FrameMark)>>,
    /// Retransmissions in total.
    pub retx_count: u64,
    /// Segments that filled a hole soon after it opened: reordering.
    pub out_of_order: u64,
    /// Zero-window episodes the peer imposed (first [`MAX_EVENTS_KEPT`]).
    pub zero_windows: Vec<ZeroWindow>,
    /// Segments sent while the flight filled the peer's window.
    pub window_full: u64,
    /// ACKs for data the capture never saw (first [`MAX_EVENTS_KEPT`]).
    pub drops: Vec<CaptureDrop>,
    /// Bytes acknowledged but never seen, in total.
    pub dropped_bytes: u64,
    /// Rounds of this sender.
    pub rounds: RoundTracker,
    /// In-order delivery to the protocol trackers.
    pub reasm: Reassembler,
    /// FIN from this side.
    pub fin: Option<FrameRef>,
    /// Pure ACKs from the peer that acknowledged everything this side had
    /// sent, one per burst of new data (first [`MAX_EVENTS_KEPT`]): a quick
    /// one followed by a late answer means the peer's application was slow,
    /// not its TCP (docs/design.md §4 "Think time").
    pub full_acks: Vec<FrameRef>,
    /// The latest of them (kept when the list is full).
    pub last_full_ack: Option<FrameRef>,
    awaiting_full_ack: bool,
    /// Retransmissions since the sender's cumulative ACK last advanced.
    retx_since_advance: u32,
    /// After a timeout, the highest offset sent then: retransmissions until
    /// the ACK passes it are the timeout's recovery (RFC 6298 §5, Linux
    /// `TCP_CA_Loss`), not new loss events.
    rto_recovery: Option<u64>,
    /// This side's TSvals not yet echoed by the peer, oldest first, with
    /// when each was first seen: as long as the path holds them (a deep
    /// queue holds hundreds of ms of them), at most [`TS_PENDING_MAX`].
    ts_pending: VecDeque<(u32, Timestamp)>,
    /// The TSecr last looked up (consecutive segments echo the same value).
    last_tsecr: Option<u32>,
    /// The sender's MSS (bytes; 0 while unknown), for "small segment" tests.
    pub mss: u64,
    /// The last new-data segment if it was small: (end offset, mark, length).
    last_small: Option<(u64, FrameRef, u32)>,
    /// The first ACK from the peer covering `last_small`, and whether it was pure.
    last_small_ack: Option<(FrameRef, bool)>,
    /// Nagle stalls (first [`MAX_EVENTS_KEPT`]).
    pub nagle: Vec<NagleStall>,
    /// A candidate stall, confirmed once the sender stays quiet after it.
    pending_nagle: Option<NagleStall>,
    /// The peer sent data since `last_small`: what follows may answer it.
    pub peer_spoke: bool,
    /// The last new-data segment, any size: (end offset, mark, length,
    /// bytes in flight after it).
    last_data: Option<(u64, FrameRef, u32, u64, u64)>,
    /// The first ACK from the peer covering `last_data`, whether it was
    /// pure, and how many bytes it newly acknowledged.
    last_data_ack: Option<(FrameRef, bool, u64)>,
    /// The peer sent data since `last_data`.
    pub peer_spoke_since_data: bool,
    /// Stalls on a delayed ACK (first [`MAX_EVENTS_KEPT`]).
    pub ack_stalls: Vec<AckStall>,
}

/// The shortest pause before a segment that counts as a stall: max(1 ms,
/// RTT/2).
fn min_stall(rtt_min: Duration) -> Duration {
    Duration::from_millis(1).max(rtt_min / 2)
}

/// Whether segment x (seen at `x`) was held back until the peer's ACK `a`
/// of the sender's earlier segment y reached the sender: x left when the
/// ACK arrived there (seen `h_x` after `a` at the capture point; queueing
/// only makes it later, so the window is from max(0.3 ms, RTT/20) before to
/// max(1 ms, RTT/4) after), at least [`min_stall`] after y. Shared by the
/// Nagle and delayed-ACK stalls.
fn released_by_ack(
    x: FrameRef,
    y: FrameRef,
    a: FrameRef,
    h_x: Duration,
    rtt_min: Duration,
) -> bool {
    let released = x.ts - (a.ts + h_x);
    let early = Duration::from_micros(300).max(rtt_min / 20);
    let late = Duration::from_millis(1).max(rtt_min / 4);
    released.nanos >= -early.nanos && released <= late && x.ts - y.ts >= min_stall(rtt_min)
}

impl Half {
    /// A direction with nothing seen yet.
    pub fn new(side: Side) -> Half {
        Half {
            side,
            isn: None,
            base: None,
            snd_nxt: 0,
            acked: 0,
            ack_seen: false,
            window: 0,
            max_window: 0,
            peer_wscale: 0,
            wscale_known: false,
            wscale_evidence: None,
            hist: VecDeque::new(),
            elig: Eligible::default(),
            keepalive_out: false,
            below: None,
            unacked: VecDeque::new(),
            holes: Vec::new(),
            last_send: None,
            first_data: None,
            last_new_data: None,
            bytes_sent: 0,
            data_segments: 0,
            max_payload: 0,
            max_payload_count: 0,
            oversized: 0,
            retx: Vec::new(),
            marks: None,
            retx_count: 0,
            out_of_order: 0,
            zero_windows: Vec::new(),
            window_full: 0,
            drops: Vec::new(),
            dropped_bytes: 0,
            rounds: RoundTracker::default(),
            reasm: Reassembler::default(),
            fin: None,
            full_acks: Vec::new(),
            last_full_ack: None,
            awaiting_full_ack: false,
            retx_since_advance: 0,
            rto_recovery: None,
            ts_pending: VecDeque::new(),
            last_tsecr: None,
            mss: 0,
            last_small: None,
            last_small_ack: None,
            nagle: Vec::new(),
            pending_nagle: None,
            peer_spoke: false,
            last_data: None,
            last_data_ack: None,
            peer_spoke_since_data: false,
            ack_stalls: Vec::new(),
        }
    }

    /// A window field of the peer in bytes: `raw << peer_wscale` (a lower
    /// bound unless [`Half::wscale_known`]).
    pub fn scaled(&self, raw: u64) -> u64 {
        raw << self.peer_wscale.min(14)
    }

    /// Raise the inferred window-scale shift until the peer's window (as
    /// last heard by the sender) covers data ending at `end` (see
    /// [`WscaleEvidence`]). Only without the SYNs.
    fn infer_wscale(&mut self, end: u64, at: FrameRef) {
        if self.wscale_known || !self.elig.seen || self.elig.window == 0 {
            return;
        }
        let flight = end.saturating_sub(self.elig.ack);
        if self.scaled(self.elig.window) >= flight {
            return;
        }
        while self.peer_wscale < 14 && self.scaled(self.elig.window) < flight {
            self.peer_wscale += 1;
        }
        self.wscale_evidence = Some(WscaleEvidence {
            at,
            flight,
            raw: self.elig.window,
            shift: self.peer_wscale,
        });
    }

    /// Everything this side sent so far has been acknowledged (true before
    /// any data).
    pub fn ack_seen_all(&self) -> bool {
        self.acked >= self.snd_nxt
    }

    /// Payload of the last segment that carried new data (bytes; 0 before any).
    pub fn last_data_len(&self) -> u32 {
        self.last_data.map_or(0, |d| d.2)
    }

    /// Set the sequence number of stream offset 0 (ISN + 1) from a SYN.
    pub fn set_isn(&mut self, isn: SeqNumber) {
        self.isn = Some(isn);
        if self.base.is_none() {
            self.base = Some(isn.add(1));
        }
    }

    /// The size of this sender's full segments (bytes; 0 while the MSS is
    /// unknown): its MSS, or the largest payload it sent at least twice when
    /// that sits within [`TUNNEL_OVERHEAD_MAX`] below the MSS: a path whose
    /// MTU is smaller than the MSS announced (a tunnel, PPPoE, an MSS clamp
    /// in one direction only; 1380 B segments under a 1460 B MSS) makes the
    /// sender's segments that size, and they are full, not small.
    pub fn full_size(&self) -> u64 {
        let cap = u64::from(self.max_payload);
        if self.max_payload_count >= 2 && cap < self.mss && self.mss - cap <= TUNNEL_OVERHEAD_MAX {
            cap
        } else {
            self.mss
        }
    }

    /// A full segment of this sender as far as the capture tells (bytes):
    /// [`Half::full_size`] with the MSS known, else the largest payload it
    /// sent, never below [`MIN_MSS`] (no SYNs in the capture).
    pub fn segment_size(&self) -> u64 {
        if self.mss > 0 {
            self.full_size()
        } else {
            u64::from(self.max_payload).max(MIN_MSS)
        }
    }

    /// Stream offset of `seq`, relative to the highest offset sent; `None`
    /// before this direction's first segment.
    pub fn offset(&self, seq: SeqNumber) -> Option<u64> {
        let base = self.base?;
        // unwrap the 32-bit number around snd_nxt, so streams over 4 GiB work
        let nxt_seq = base.add(self.snd_nxt as u32);
        let off = self.snd_nxt as i64 + seq.diff(nxt_seq);
        (off >= 0).then_some(off as u64)
    }

    /// Process an ACK (and its raw window field, and SACK blocks)
    /// that the peer sent at `at`. `pure` is true for a segment without
    /// payload, SYN, FIN or RST. `window` is `None` for a RST, whose window
    /// field means nothing (RFC 9293 §3.10.7): the last one stays.
    #[allow(clippy::too_many_arguments)]
    pub fn on_peer_ack(
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
                self.ack_below_base(ack, w, sack, pure, at);
            }
            return;
        };
        if self.below.is_some() {
            // the ACK reached the first byte the capture saw: the hole below
            // it is closed
            self.below = None;
        }
        let window_known = window.is_some();
        let window = window.unwrap_or(self.window);
        let fin_extra = self.fin.is_some() as u64;
        if off > self.snd_nxt + fin_extra {
            // ACKed unseen: the receiver has bytes the capture never saw
            let bytes = off - self.snd_nxt - fin_extra;
            self.note_drop(at, bytes);
            self.mark(at, FrameMark::AckedUnseen);
            self.snd_nxt = off - fin_extra.min(off);
        }
        let advanced = !self.ack_seen || off > self.acked;
        let acked_before = self.acked;
        // a duplicate ACK as Wireshark's `tcp.analysis.duplicate_ack`
        // (packet-tcp.c): a pure ACK repeating the last ACK number and a
        // non-zero window (a zero window repeated is the receiver still
        // full), not the answer to a keep-alive; counted towards fast
        // retransmit only with data outstanding
        let dup_mark = pure
            && self.ack_seen
            && off == self.acked
            && window != 0
            && window == self.window
            && !self.keepalive_out;
        let dup = dup_mark && self.snd_nxt > self.acked;
        self.keepalive_out = false;
        // holes below the ACK were delivered past the capture point
        if advanced && !self.holes.is_empty() {
            let mut lost = 0;
            self.holes.retain(|h| {
                if h.start < off {
                    lost += h.end.min(off) - h.start;
                    h.end > off
                } else {
                    true
                }
            });
            for h in &mut self.holes {
                h.start = h.start.max(off);
            }
            if lost > 0 {
                self.note_drop(at, lost);
            }
        }
        if let Some(sink) = sink {
            let covered = off.min(self.snd_nxt);
            if covered > self.reasm.next_offset() {
                self.reasm.skip_to(covered, sink);
            }
        }
        if dup_mark {
            self.mark(at, FrameMark::DuplicateAck);
        }
        if window_known && window == 0 {
            self.mark(at, FrameMark::ZeroWindow);
        }
        // zero-window episodes: a zero window is zero at any scale, so the
        // first ACK a mid-stream capture holds counts too
        if !window_known {
            // a RST: no window news
        } else if window == 0 {
            if self.zero_windows.last().is_none_or(|z| z.end.is_some())
                && self.zero_windows.len() < MAX_EVENTS_KEPT
            {
                self.zero_windows.push(ZeroWindow {
                    start: at,
                    end: None,
                });
            }
        } else if let Some(z) = self.zero_windows.last_mut() {
            if z.end.is_none() && window > 0 {
                z.end = Some(at);
            }
        }
        // SACK blocks (RFC 2018), D-SACK (RFC 2883 §4: a first block the
        // cumulative ACK already covers, or one inside the second block;
        // a block straddling the ACK is a stale SACK, not a duplicate)
        let (mut sacked, mut sack_high) = (0u64, 0u64);
        let second = sack
            .get(1)
            .and_then(|(l, r)| Some((self.offset(*l)?, self.offset(*r)?)));
        for (i, (l, r)) in sack.iter().enumerate() {
            let (Some(lo), Some(hi)) = (self.offset(*l), self.offset(*r)) else {
                continue;
            };
            if hi <= lo || hi > self.snd_nxt + 1 {
                continue;
            }
            let dsack = i == 0
                && (hi <= off
                    || second.is_some_and(|(l2, r2)| l2 <= lo && hi <= r2 && (l2, r2) != (lo, hi)));
            if dsack {
                for r in self.retx.iter_mut().rev().take(32) {
                    if r.offset < hi && r.offset + r.len as u64 > lo {
                        r.spurious = true;
                    }
                }
                continue;
            }
            if lo >= off {
                sacked += hi - lo;
                sack_high = sack_high.max(hi);
            }
        }
        // Karn RTT sample: the newest never-retransmitted segment this ACK covers
        if advanced {
            let mut sample = None;
            while let Some(s) = self.unacked.front() {
                if s.end > off {
                    break;
                }
                if s.retx == 0 {
                    sample = Some(s.at.ts);
                } else {
                    sample = None;
                }
                self.unacked.pop_front();
            }
            if let Some(t) = sample {
                rtt.add(self.side.peer(), at, at.ts - t, RttMethod::DataAck);
            }
        }
        if advanced {
            self.acked = off;
        }
        if let Some((y_end, _, _)) = self.last_small {
            if self.last_small_ack.is_none() && off >= y_end {
                self.last_small_ack = Some((at, pure));
            }
        }
        if let Some((y_end, ..)) = self.last_data {
            if self.last_data_ack.is_none() && off >= y_end {
                self.last_data_ack = Some((at, pure, off.saturating_sub(acked_before)));
            }
        }
        if pure && self.awaiting_full_ack && off >= self.snd_nxt {
            self.awaiting_full_ack = false;
            self.last_full_ack = Some(at);
            if self.full_acks.len() < MAX_EVENTS_KEPT {
                self.full_acks.push(at);
            }
        }
        self.ack_seen = true;
        self.window = window;
        self.max_window = self.max_window.max(window);
        let ev = AckEv {
            ts: at.ts,
            frame: at.frame,
            last_ts: at.ts,
            ack: off,
            window,
            sacked,
            sack_high,
            dup,
        };
        match self.hist.back_mut() {
            Some(b)
                if !dup
                    && !b.dup
                    && (b.ack, b.window, b.sacked, b.sack_high)
                        == (ev.ack, ev.window, ev.sacked, ev.sack_high) =>
            {
                b.last_ts = ev.ts;
            }
            _ => self.hist.push_back(ev),
        }
    }

    fn mark(&mut self, at: FrameRef, m: FrameMark) {
        if let Some(v) = &mut self.marks {
            v.push((at, m));
        }
    }

    fn note_drop(&mut self, at: FrameRef, bytes: u64) {
        self.dropped_bytes += bytes;
        if self.drops.len() < MAX_EVENTS_KEPT {
            self.drops.push(CaptureDrop { at, bytes });
        }
    }

    /// Make the ACKs the sender can have received by `now` eligible.
    /// `h_x` is M→sender→M; an ACK seen at `t_a` is eligible for data seen at
    /// `t_p` when `t_a ≤ t_p − h_x + ε`, ε = h_x/10 + 20 µs (timing noise).
    fn advance_eligible(&mut self, now: Timestamp, h_x: Duration) {
        let eps = Duration::from_nanos(h_x.nanos / 10) + Duration::from_micros(20);
        self.eligible_until(now - h_x + eps);
    }

    /// New data ending at `end` beyond the right edge of the window the
    /// sender is taken to have seen: a sender never sends past the window it
    /// was offered (RFC 9293 §3.8.6), so it had already received a later ACK
    /// (the path's delay estimate was long by a little). Make ACKs eligible
    /// up to the first one whose window covers `end`; when none does (a
    /// sender that overran the window, or a scale not known), nothing moves.
    fn advance_to_cover(&mut self, end: u64) {
        if !self.wscale_known || !self.elig.seen {
            return;
        }
        if end <= self.elig.ack + self.scaled(self.elig.window) {
            return;
        }
        // the next few ACKs on their way (bounded: a sender that overran
        // every window would otherwise rescan them all per segment)
        let covering = self
            .hist
            .iter()
            .take(COVER_SCAN)
            .find(|a| a.ack >= self.elig.ack && end <= a.ack + self.scaled(a.window))
            .map(|a| a.ts);
        if let Some(ts) = covering {
            self.eligible_until(ts);
        }
    }

    /// The peer ACKs `ack`, below the first byte the capture saw from this
    /// sender (a capture that began mid-connection, no SYN): a hole whose
    /// bytes were sent before the capture began. Repeats are duplicate ACKs
    /// (Wireshark flags them so), SACK blocks above it say the data after
    /// the hole arrived; the retransmission that fills it is counted by
    /// [`Half::data_below_base`].
    fn ack_below_base(
        &mut self,
        ack: SeqNumber,
        window: u64,
        sack: &[(SeqNumber, SeqNumber)],
        pure: bool,
        at: FrameRef,
    ) {
        let Some(base) = self.base.filter(|_| self.isn.is_none()) else {
            return;
        };
        let gap = base.diff(ack);
        if gap <= 0 || gap as u64 > BELOW_BASE_MAX {
            return;
        }
        let sack_above = sack.iter().any(|(l, _)| l.diff(ack) > 0);
        match &mut self.below {
            Some(b) if b.ack == ack => {
                let dup = pure && window != 0 && window == b.window;
                b.dupacks += u32::from(dup);
                b.window = window;
                b.sack_above |= sack_above;
                if dup {
                    self.mark(at, FrameMark::DuplicateAck);
                }
            }
            _ => {
                self.below = Some(BelowBase {
                    ack,
                    window,
                    first: at,
                    dupacks: 0,
                    sack_above,
                })
            }
        }
    }

    /// Data at `seq`, below the first byte the capture saw from this sender:
    /// a retransmission of bytes first sent before the capture began, when
    /// the peer's ACKs showed the hole there (else an old duplicate, left
    /// alone). Classified as [`Half::note_retx`] would with the hole's ACKs:
    /// fast after ≥ 3 duplicate ACKs or a SACK above it, a timeout after a
    /// silence of [`RTO_MIN`] and 2.5 RTT, else time-based (RACK).
    fn data_below_base(&mut self, seq: SeqNumber, len: u32, at: FrameRef, rtt_min: Duration) {
        let Some(b) = self.below else { return };
        let Some(base) = self.base else { return };
        if seq.diff(b.ack) < 0 || base.diff(seq) <= 0 {
            return;
        }
        self.below = None;
        self.retx_count += 1;
        self.bytes_sent += len as u64;
        self.data_segments += 1;
        let silence = at.ts - b.first.ts;
        let timer = silence >= RTO_MIN && silence.nanos as f64 >= 2.5 * rtt_min.nanos as f64;
        let (kind, inferred) = if b.dupacks >= 3 || b.sack_above {
            (RetxKind::FastRetransmit, false)
        } else if timer {
            (RetxKind::Rto, false)
        } else {
            (RetxKind::FastRetransmit, true)
        };
        self.mark(at, FrameMark::Retransmission(kind));
        if self.retx.len() < MAX_RETX_KEPT {
            self.retx.push(Retransmission {
                at,
                original: None,
                // the first byte the capture saw: the hole's bytes are
                // before it, in no offset the capture numbers
                offset: 0,
                len: len.min(base.diff(seq).unsigned_abs() as u32),
                kind,
                silence,
                dupacks: b.dupacks,
                sack_above: b.sack_above,
                backoff: 0,
                spurious: false,
                inferred,
                lost_ack: None,
                // held up at least from the first ACK that showed the hole
                delay: silence,
            });
        }
    }

    /// Make the ACKs seen at the capture point up to `horizon` eligible.
    fn eligible_until(&mut self, horizon: Timestamp) {
        while let Some(a) = self.hist.front_mut() {
            if a.ts > horizon {
                break;
            }
            let a = if a.last_ts > horizon {
                // a run only partly eligible: its repeats before the horizon
                // are not kept, so the sender is taken to have heard from the
                // peer at the horizon (the latest it can have; a silence
                // computed from it is never longer than the true one)
                let part = AckEv {
                    last_ts: horizon,
                    ..*a
                };
                a.ts = horizon + Duration::from_nanos(1);
                part
            } else {
                let a = *a;
                self.hist.pop_front();
                a
            };
            if !self.elig.seen || a.ack > self.elig.ack {
                self.elig.dupacks = 0;
                self.elig.ack = a.ack;
                self.elig.ack_ts = a.ts;
                self.elig.ack_frame = a.frame;
                self.retx_since_advance = 0;
                if self.rto_recovery.is_some_and(|p| a.ack >= p) {
                    self.rto_recovery = None;
                }
                self.elig.sack_high = 0;
            } else if a.dup {
                self.elig.dupacks += 1;
            }
            self.elig.seen = true;
            self.elig.any_ts = a.last_ts;
            self.elig.window = a.window;
            self.elig.sacked = a.sacked;
            self.elig.sack_high = self.elig.sack_high.max(a.sack_high);
        }
    }

    /// Record this side's TSval (for echo samples).
    pub fn note_tsval(&mut self, tsval: u32, ts: Timestamp) {
        // TSval ticks once per ms or so: most segments repeat the last one,
        // and a value not newer than the last (reordering) is no new sample
        if self
            .ts_pending
            .back()
            .is_some_and(|&(v, _)| !ts_after(tsval, v))
        {
            return;
        }
        if self.ts_pending.len() >= TS_PENDING_MAX {
            self.ts_pending.pop_front();
        }
        self.ts_pending.push_back((tsval, ts));
    }

    /// The peer echoed `tsecr` in the segment `at`: a sample of h_peer.
    /// The peer's TS.Recent only moves forward (RFC 7323 §4.3), so values
    /// older than the echo will not be echoed any more and are dropped.
    pub fn on_tsecr(&mut self, tsecr: u32, at: FrameRef, rtt: &mut RttSamples) {
        if self.last_tsecr == Some(tsecr) {
            return; // looked up already: only the first echo is a sample
        }
        self.last_tsecr = Some(tsecr);
        while let Some(&(v, t)) = self.ts_pending.front() {
            if ts_after(v, tsecr) {
                break;
            }
            self.ts_pending.pop_front();
            if v == tsecr {
                rtt.add(self.side.peer(), at, at.ts - t, RttMethod::Timestamps);
                break;
            }
        }
    }

    /// Process a data segment this side sent: `len` payload bytes on the wire
    /// at `seq`, of which `payload` were captured.
    #[allow(clippy::too_many_arguments)]
    pub fn on_data(
        &mut self,
        seq: SeqNumber,
        len: u32,
        payload: &[u8],
        at: FrameRef,
        h_x: Duration,
        h_peer: Duration,
        rtt_min: Duration,
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
        if len > 1 && end > self.snd_nxt {
            self.advance_to_cover(end);
        }
        self.bytes_sent += len as u64;
        self.data_segments += 1;
        match len.cmp(&self.max_payload) {
            std::cmp::Ordering::Greater => (self.max_payload, self.max_payload_count) = (len, 1),
            std::cmp::Ordering::Equal => self.max_payload_count += 1,
            std::cmp::Ordering::Less => {}
        }
        if self.mss > 0 && u64::from(len) > self.mss {
            self.oversized += 1;
        }
        self.first_data.get_or_insert(at);
        let silence = self
            .last_send
            .map(|l| at.ts - l.ts)
            .unwrap_or(Duration::ZERO);
        let snd_nxt_before = self.snd_nxt;

        // Keep-alive (seq = snd_una − 1, RFC 9293 §3.8.4) or zero-window probe.
        let probe = len <= 1
            && ((self.ack_seen && end <= self.acked) || (self.elig.seen && self.elig.window == 0));
        let mut retx = false;
        let mut new_bytes = 0;
        self.keepalive_out = probe && self.ack_seen && end <= self.acked;
        if probe {
            // keep-alive or zero-window probe: not a retransmission
        } else if off < self.snd_nxt {
            // overlaps what was sent before: a hole fill or a retransmission
            let hole = self.holes.iter().position(|h| off < h.end && end > h.start);
            match hole {
                Some(i) if at.ts - self.holes[i].opened.ts < rtt_min / 2 => {
                    // filled soon after the hole opened: reordered in the network
                    self.out_of_order += 1;
                    self.fill_hole(i, off, end);
                }
                Some(i) => {
                    // original lost before the capture point, then resent
                    let opened = self.holes[i].opened;
                    self.fill_hole(i, off, end);
                    retx = true;
                    let timing = RetxTiming {
                        since_send: silence,
                        h_x,
                        rtt_min,
                    };
                    self.note_retx(off, len, at, None, at.ts - opened.ts, timing, 0);
                }
                None => {
                    retx = true;
                    let idx = self
                        .unacked
                        .iter()
                        .position(|s| s.offset <= off && s.end > off);
                    let (original, rtos) = match idx.and_then(|i| self.unacked.get_mut(i)) {
                        Some(s) => {
                            s.retx = s.retx.saturating_add(1);
                            (Some(s.at), s.rtos)
                        }
                        None => (None, 0),
                    };
                    let delay = original.map(|o| at.ts - o.ts).unwrap_or(silence);
                    let timing = RetxTiming {
                        since_send: silence,
                        h_x,
                        rtt_min,
                    };
                    let kind = self.note_retx(off, len, at, original, delay, timing, rtos);
                    if kind == RetxKind::Rto {
                        if let Some(s) = idx.and_then(|i| self.unacked.get_mut(i)) {
                            s.rtos = s.rtos.saturating_add(1);
                        }
                    }
                }
            }
            if end > self.snd_nxt {
                new_bytes = end - self.snd_nxt;
            }
        } else {
            if off > self.snd_nxt {
                self.mark(at, FrameMark::PreviousSegmentLost);
                self.holes.push(Hole {
                    start: self.snd_nxt,
                    end: off,
                    opened: at,
                });
                if self.holes.len() > 256 {
                    self.holes.remove(0);
                }
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
            self.last_new_data = Some(at);
            self.awaiting_full_ack = true;
            if self.unacked.len() >= MAX_UNACKED {
                self.unacked.pop_front();
            }
            self.unacked.push_back(SentSeg {
                offset: off.max(self.snd_nxt),
                end,
                at,
                retx: 0,
                rtos: 0,
            });
            self.snd_nxt = end;
        }
        let flight = self
            .snd_nxt
            .saturating_sub(self.elig.ack)
            .saturating_sub(self.elig.sacked);
        if !probe && !retx {
            self.infer_wscale(end, at);
        }
        // new data reaching the right edge of the window the sender had
        // seen, as Wireshark's `tcp.analysis.window_full` (the edge itself:
        // data past it is an overrun, and a retransmission fills nothing)
        if new_bytes > 0
            && !retx
            && !probe
            && self.elig.seen
            && self.elig.window > 0
            && end == self.elig.ack + self.scaled(self.elig.window)
        {
            self.window_full += 1;
            self.mark(at, FrameMark::WindowFull);
        }
        let answers_peer = self.peer_spoke_since_data;
        if new_bytes > 0 && !retx {
            // in flight by the ACKs seen here (Wireshark's bytes in flight)
            let here = self.snd_nxt.saturating_sub(self.acked);
            self.last_data = Some((self.snd_nxt, at, len, flight, here));
            self.last_data_ack = None;
            self.peer_spoke_since_data = false;
        }
        if !probe {
            self.rounds.on_segment(RoundSegment {
                at,
                offset: off,
                len,
                new_bytes,
                retx,
                flight,
                eligible_ack: self.elig.ack,
                rwnd: self.elig.window,
                snd_nxt_before,
                since_ack: self.elig.seen.then(|| (at.ts - h_x) - self.elig.ack_ts),
                answers_peer,
            });
        }
        if let Some(sink) = sink {
            self.reasm.push(off, payload, len as u64, at, sink);
        }
        self.last_send = Some(at);
    }

    /// A candidate Nagle stall holds only if the sender then went quiet: a
    /// held segment is the end of the send queue (else the kernel would
    /// have filled it), while a window-limited sender that cut a segment
    /// short goes on sending at once. `at` is the sender's next new data.
    fn settle_nagle(&mut self, at: FrameRef, rtt_min: Duration) {
        if let Some(p) = self.pending_nagle.take() {
            if at.ts - p.x.ts >= Duration::from_millis(1).max(rtt_min / 4) {
                self.confirm_nagle(p);
            }
        }
    }

    fn confirm_nagle(&mut self, st: NagleStall) {
        if self.nagle.len() < MAX_EVENTS_KEPT {
            self.nagle.push(st);
        }
    }

    /// The connection is over: a pending stall followed by nothing holds.
    pub fn finish_nagle(&mut self) {
        if let Some(p) = self.pending_nagle.take() {
            self.confirm_nagle(p);
        }
    }

    /// Nagle (docs/design.md §4 "Nagle"): the small segment x at `off`
    /// follows the small segment y (only full-size segments in between, and no data from the
    /// peer that x could be answering, and no new data at all during the
    /// stall), and left when the peer's *pure* ACK of y reached the sender
    /// (from max(0.3 ms, RTT/20) before to max(1 ms, RTT/4) after), after a
    /// pause of at least max(1 ms, RTT/2). A pure ACK carries nothing an
    /// application could react to, so x was ready and held by the kernel.
    fn check_nagle(&mut self, off: u64, len: u32, at: FrameRef, h_x: Duration, rtt_min: Duration) {
        // full-size segments are never held, and leave Minshall's state
        // (the last small segment sent, `tp->snd_sml`) as it is
        if self.mss == 0 || len as u64 >= self.full_size() {
            return;
        }
        let last = self.last_small.take();
        let ack = self.last_small_ack.take();
        if let (Some((y_end, y, y_len)), Some((a, true)), false) = (last, ack, self.peer_spoke) {
            // silent right up to x: nothing new left during the stall
            let silent = self
                .last_new_data
                .is_none_or(|l| at.ts - l.ts >= min_stall(rtt_min));
            if y_end <= off && released_by_ack(at, y, a, h_x, rtt_min) && silent {
                self.pending_nagle = Some(NagleStall {
                    y,
                    y_len,
                    ack: a,
                    x: at,
                    x_len: len,
                });
            }
        }
        self.last_small = Some((off + len as u64, at, len));
        self.peer_spoke = false;
    }

    /// Delayed ACK (see [`AckStall`]): the new segment x at `off` left when
    /// the peer's *pure* ACK of the sender's previous segment y reached the
    /// sender (the same window as [`Half::check_nagle`]), after a pause of
    /// at least max(1 ms, RTT/2) with no data from the peer in between (so
    /// x answers nothing), and the peer held that ACK at least
    /// [`DELAYED_ACK_MIN`] beyond its side of the path (`h_peer`).
    fn check_ack_stall(
        &mut self,
        off: u64,
        at: FrameRef,
        h_x: Duration,
        h_peer: Duration,
        rtt_min: Duration,
    ) {
        let (Some((y_end, y, y_len, flight, flight_here)), Some((a, true, newly_acked)), false) = (
            self.last_data,
            self.last_data_ack,
            self.peer_spoke_since_data,
        ) else {
            return;
        };
        // a receiver ACKs a second full-sized segment at once (RFC 1122
        // §4.2.3.2; Linux `__tcp_ack_snd_check()`): a delayed ACK covers at
        // most one segment's worth of new data. An ACK of many segments at
        // once was held for another reason (a receiver that stopped
        // reading, ACK coalescing), which the window findings cover.
        // (without the SYNs, the largest segment seen stands for the MSS)
        if newly_acked > self.segment_size() {
            return;
        }
        let held = (a.ts - y.ts) - h_peer;
        if y_end <= off
            && released_by_ack(at, y, a, h_x, rtt_min)
            && held >= DELAYED_ACK_MIN
            && self.ack_stalls.len() < MAX_EVENTS_KEPT
        {
            self.ack_stalls.push(AckStall {
                y,
                y_len,
                flight,
                flight_here,
                ack: a,
                held,
                x: at,
            });
        }
    }

    fn fill_hole(&mut self, i: usize, off: u64, end: u64) {
        let h = self.holes[i];
        self.holes.swap_remove(i);
        if off > h.start {
            self.holes.push(Hole {
                start: h.start,
                end: off,
                opened: h.opened,
            });
        }
        if end < h.end {
            self.holes.push(Hole {
                start: end,
                end: h.end,
                opened: h.opened,
            });
        }
    }

    /// Classify and record one retransmission (docs/design.md §4 "Loss",
    /// with the timer checks first: stale dupACK/SACK state must not make a timeout
    /// look like a fast retransmit). Returns the kind.
    ///
    /// - **RTO recovery**: while the ACK has not passed the point a timeout
    ///   started from, retransmissions are that timeout's slow-start repair.
    /// - **Timer-driven** (the sender heard nothing for ≥ 200 ms and ≥ 2.5
    ///   RTT, since both its last segment and the last ACK): the first
    ///   retransmission since the ACK last advanced, of the highest segment,
    ///   is a tail loss probe (with one segment in flight Linux waits 2·SRTT
    ///   plus 200 ms, `tcp_schedule_loss_probe()`, RFC 8985 §7.2); otherwise a
    ///   timeout, backed off once per earlier timeout of the same data.
    /// - ≥ 3 dupACKs or SACK above the hole: fast retransmit.
    /// - The highest segment, first since the ACK advanced, after ≥ 1.5 RTT
    ///   of silence: tail loss probe (PTO = 2·SRTT).
    /// - Otherwise a fast retransmit inferred without dupACK/SACK evidence
    ///   (RACK's time-based detection, RFC 8985 §6.2).
    #[allow(clippy::too_many_arguments)]
    fn note_retx(
        &mut self,
        off: u64,
        len: u32,
        at: FrameRef,
        original: Option<FrameRef>,
        delay: Duration,
        t: RetxTiming,
        rtos_before: u8,
    ) -> RetxKind {
        self.retx_count += 1;
        let end = off + len as u64;
        let e = self.elig;
        // any ACK seen (eligible or still on its way) already covering it
        let spurious = self.ack_seen && self.acked >= end;
        // what the sender's timer saw: silence since its last segment and
        // since the last ACK reached it (an ACK seen at M at t_a reaches the
        // sender h_x/2 later; a segment seen at t_p left it h_x/2 earlier).
        // A sender never resends bytes it has seen acknowledged (it resends
        // from snd_una, RFC 9293 §3.10.7.4; Linux tcp_retransmit_skb()): when
        // the ACKs it can have had by now already cover these bytes, they
        // were lost on the way to it, and only its own sends timed its timer
        let lost_acks = e.seen && e.ack >= end;
        let silence = if e.seen && !lost_acks {
            t.since_send.min((at.ts - t.h_x) - e.any_ts)
        } else {
            t.since_send
        };
        let timer = silence >= RTO_MIN && silence.nanos as f64 >= 2.5 * t.rtt_min.nanos as f64;
        let highest = end >= self.snd_nxt;
        let first = self.retx_since_advance == 0;
        let sack_above = e.sack_high > off;
        let in_rto_recovery = self.rto_recovery.is_some_and(|p| e.ack < p);
        let (kind, inferred) = if in_rto_recovery && !timer {
            (RetxKind::Rto, false)
        } else if timer {
            if first && highest && rtos_before == 0 {
                (RetxKind::TailLossProbe, false)
            } else {
                (RetxKind::Rto, false)
            }
        } else if e.dupacks >= 3 || sack_above {
            (RetxKind::FastRetransmit, false)
        } else if highest && first && silence.nanos as f64 >= 1.5 * t.rtt_min.nanos as f64 {
            (RetxKind::TailLossProbe, false)
        } else {
            (RetxKind::FastRetransmit, true)
        };
        self.retx_since_advance += 1;
        if kind == RetxKind::Rto && !in_rto_recovery {
            self.rto_recovery = Some(self.snd_nxt);
        }
        self.mark(at, FrameMark::Retransmission(kind));
        if self.retx.len() < MAX_RETX_KEPT {
            self.retx.push(Retransmission {
                at,
                original,
                offset: off,
                len,
                kind,
                silence,
                dupacks: e.dupacks,
                sack_above,
                backoff: if kind == RetxKind::Rto {
                    rtos_before
                } else {
                    0
                },
                spurious,
                inferred,
                lost_ack: lost_acks.then_some(e.ack_frame),
                delay,
            });
        }
        kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(frame: u64, ms: i64) -> FrameRef {
        FrameRef {
            frame,
            ts: Timestamp::from_nanos(ms * 1_000_000),
        }
    }

    /// A client that sent its request and then only receives: every one of
    /// the server's data segments repeats the ACK of the request.
    fn downloading_client(acks: u64) -> Half {
        let mut h = Half::new(Side::Client);
        let mut rtt = RttSamples::default();
        let zero = Duration::from_nanos(0);
        let rtt_min = Duration::from_millis(10);
        h.on_data(
            SeqNumber(1000),
            100,
            &[0; 100],
            mark(1, 0),
            zero,
            zero,
            rtt_min,
            None,
        );
        for i in 0..acks {
            let at = mark(2 + i, 10 + i as i64);
            h.on_peer_ack(SeqNumber(1100), Some(512), &[], false, at, &mut rtt, None);
        }
        h
    }

    #[test]
    fn repeated_acks_queue_as_one_run() {
        let h = downloading_client(100_000);
        // the first ACK of the request, then one run of its repeats
        assert_eq!(h.hist.len(), 1, "{:?}", h.hist.front());
        let run = h.hist.front().copied();
        assert_eq!(
            run.map(|a| (a.ts, a.last_ts)),
            Some((mark(0, 10).ts, mark(0, 100_009).ts))
        );
    }

    /// The client's second request at `ms`, with h_x = 10 ms.
    fn second_request(h: &mut Half, ms: i64) -> (FrameRef, Duration) {
        let (at, h_x) = (mark(5_000, ms), Duration::from_millis(10));
        h.on_data(
            SeqNumber(1100),
            100,
            &[0; 100],
            at,
            h_x,
            Duration::from_nanos(0),
            h_x,
            None,
        );
        (at, h_x)
    }

    #[test]
    fn a_run_makes_the_last_repeat_eligible() {
        let mut h = downloading_client(1_000);
        // long after the last ACK: all eligible, the sender last heard from
        // the peer at the last repeat (1,009 ms)
        second_request(&mut h, 2_000);
        assert!(h.hist.is_empty());
        assert_eq!(h.elig.any_ts, mark(0, 1_009).ts);
        assert_eq!(h.elig.ack, 100);
    }

    #[test]
    fn a_run_straddling_the_horizon_stays_for_the_rest() {
        let mut h = downloading_client(1_000);
        // horizon = 520 ms − 10 ms + ε (1 ms + 20 µs): halfway through the run
        let (at, h_x) = second_request(&mut h, 520);
        let horizon = at.ts - h_x + Duration::from_micros(1_020);
        // never later than the horizon: a silence measured from it is not
        // longer than the true one
        assert_eq!(h.elig.any_ts, horizon);
        assert_eq!(h.elig.ack, 100);
        let rest = h.hist.front().copied();
        assert_eq!(h.hist.len(), 1);
        assert!(rest.is_some_and(|a| a.ts > horizon && a.last_ts == mark(0, 1_009).ts));
    }
}
