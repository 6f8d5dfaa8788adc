//! Connection-level tests of the flow layer: segments pushed through a
//! [`FlowTable`] as a capture would, and what the halves made of them
//! (sequence wraparound, new ISNs, SYN retransmissions, retransmission
//! classes, reordering, capture drops, delayed-ACK and Nagle stalls).

use std::net::Ipv4Addr;

use crate::base::seq::SeqNumber;
use crate::base::side::{FrameRef, Side};
use crate::base::time::{Duration, Timestamp};
use crate::flow::half::RetxKind;
use crate::flow::reassembly::Trackers;
use crate::flow::FlowTable;
use crate::wire::{TcpFlags, TcpOptions, TcpSegment};

/// No protocol layer: these tests look at TCP only.
#[derive(Debug, Default)]
struct NoTrackers;

impl Trackers for NoTrackers {
    type Ctx = ();
    fn new(_: &()) -> Self {
        NoTrackers
    }
    fn wants_bytes(&self) -> bool {
        false
    }
    fn data(&mut self, _: Side, _: u64, _: &[u8], _: FrameRef) {}
    fn gap(&mut self, _: Side, _: u64, _: u64) {}
}

type Conn = super::Conn<NoTrackers>;

const C: ([u8; 4], u16) = ([10, 0, 0, 1], 40000);
const S: ([u8; 4], u16) = ([10, 0, 0, 2], 443);

struct Net {
    table: FlowTable<NoTrackers>,
    done: Vec<Conn>,
    frame: u64,
}

impl Net {
    fn new() -> Net {
        Net {
            table: FlowTable::new(),
            done: Vec::new(),
            frame: 0,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn seg(
        &mut self,
        from_client: bool,
        ms: f64,
        flags: TcpFlags,
        seq: u32,
        ack: u32,
        len: u32,
        opts: TcpOptions,
    ) {
        let (src, dst) = if from_client { (C, S) } else { (S, C) };
        let payload = vec![0u8; len as usize];
        let seg = TcpSegment {
            src: Ipv4Addr::from(src.0).into(),
            dst: Ipv4Addr::from(dst.0).into(),
            src_port: src.1,
            dst_port: dst.1,
            seq: SeqNumber(seq),
            ack: SeqNumber(ack),
            flags,
            window: 1000,
            options: opts,
            payload: &payload,
            payload_len: len,
            ip_id: 0,
        };
        self.frame += 1;
        let at = FrameRef {
            frame: self.frame,
            ts: Timestamp::from_nanos((ms * 1e6) as i64),
        };
        let done = &mut self.done;
        self.table.push(&seg, at, &mut |c| done.push(*c));
    }

    fn finish(mut self) -> Vec<Conn> {
        let done = &mut self.done;
        self.table.finish(&mut |c| done.push(*c));
        self.done
    }
}

const SYN: TcpFlags = TcpFlags::SYN;
const ACK: TcpFlags = TcpFlags::ACK;
const SYNACK: TcpFlags = TcpFlags(TcpFlags::SYN.0 | TcpFlags::ACK.0);
const FINACK: TcpFlags = TcpFlags(TcpFlags::FIN.0 | TcpFlags::ACK.0);

fn wscale(shift: u8) -> TcpOptions {
    TcpOptions {
        window_scale: Some(shift),
        mss: Some(1460),
        ..TcpOptions::default()
    }
}

/// Handshake at 0 / 10 / 10.1 ms (server 10 ms away, client-side capture).
fn handshake(n: &mut Net, c_isn: u32, s_isn: u32) {
    n.seg(true, 0.0, SYN, c_isn, 0, 0, wscale(7));
    n.seg(
        false,
        10.0,
        SYNACK,
        s_isn,
        c_isn.wrapping_add(1),
        0,
        wscale(7),
    );
    n.seg(
        true,
        10.1,
        ACK,
        c_isn.wrapping_add(1),
        s_isn.wrapping_add(1),
        0,
        TcpOptions::default(),
    );
}

#[test]
fn sequence_wraparound_keeps_offsets_and_rounds() {
    let mut n = Net::new();
    let s_isn = u32::MAX - 5_000;
    handshake(&mut n, 1, s_isn);
    let base = s_isn.wrapping_add(1);
    // 20 segments of 1000 B crossing 2^32, each ACKed 10 ms later in flights of 4
    let mut t = 20.0;
    for i in 0..20u32 {
        n.seg(
            false,
            t,
            ACK,
            base.wrapping_add(i * 1000),
            2,
            1000,
            TcpOptions::default(),
        );
        if i % 4 == 3 {
            n.seg(
                true,
                t + 0.05,
                ACK,
                2,
                base.wrapping_add((i + 1) * 1000),
                0,
                TcpOptions::default(),
            );
            t += 10.0;
        }
    }
    let c = n.finish().remove(0);
    let h = &c.half[Side::Server.index()];
    assert_eq!(h.send.snd_nxt, 20_000);
    assert_eq!(h.peer.acked, 20_000);
    assert_eq!(h.loss.retx_count, 0);
    assert_eq!(h.loss.dropped_bytes, 0);
    assert_eq!(
        c.half[1].peer_flags.peer_wscale, 7,
        "window scale from both SYNs"
    );
}

#[test]
fn new_isn_on_the_same_tuple_is_a_new_connection() {
    let mut n = Net::new();
    handshake(&mut n, 100, 900);
    n.seg(true, 20.0, FINACK, 101, 901, 0, TcpOptions::default());
    n.seg(false, 30.0, FINACK, 901, 102, 0, TcpOptions::default());
    handshake(&mut n, 5_000_000, 7_000_000);
    let done = n.finish();
    assert_eq!(done.len(), 2);
    assert_eq!(done[0].index, 0);
    assert_eq!(done[1].index, 1);
    assert_eq!(done[1].syn.map(|s| s.isn), Some(SeqNumber(5_000_000)));
}

#[test]
fn syn_retransmission_counts_transmissions() {
    let mut n = Net::new();
    n.seg(true, 0.0, SYN, 7, 0, 0, wscale(7));
    n.seg(true, 1000.0, SYN, 7, 0, 0, wscale(7));
    n.seg(false, 1010.0, SYNACK, 70, 8, 0, wscale(7));
    let c = n.finish().remove(0);
    assert_eq!(c.syn.map(|s| s.count), Some(2));
    assert_eq!(
        c.rtt.h(Side::Server),
        Some(Duration::from_millis(10)),
        "h_s from the last SYN"
    );
}

/// Server sends `k` segments of 1000 B from offset 0 at time `t`.
fn burst(n: &mut Net, t: f64, from: u32, k: u32) {
    for i in 0..k {
        n.seg(
            false,
            t,
            ACK,
            1001 + (from + i) * 1000,
            2,
            1000,
            TcpOptions::default(),
        );
    }
}

#[test]
fn dupacks_make_a_fast_retransmit() {
    let mut n = Net::new();
    handshake(&mut n, 1, 1000);
    burst(&mut n, 20.0, 0, 6);
    // segment 1 lost after the capture point: the client ACKs 1 segment, then dupACKs
    for _ in 0..4 {
        n.seg(true, 20.1, ACK, 2, 2001, 0, TcpOptions::default());
    }
    n.seg(false, 30.2, ACK, 2001, 2, 1000, TcpOptions::default()); // retransmission
    n.seg(true, 30.3, ACK, 2, 7001, 0, TcpOptions::default());
    let c = n.finish().remove(0);
    let r = c.half[Side::Server.index()].retx();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].kind, RetxKind::FastRetransmit);
    assert!(r[0].dupacks >= 3 && !r[0].spurious);
    assert_eq!(r[0].original.map(|m| m.frame), Some(5));
}

#[test]
fn long_silence_makes_an_rto() {
    let mut n = Net::new();
    handshake(&mut n, 1, 1000);
    burst(&mut n, 20.0, 0, 2);
    n.seg(false, 320.0, ACK, 1001, 2, 1000, TcpOptions::default());
    let c = n.finish().remove(0);
    let r = c.half[Side::Server.index()].retx();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].kind, RetxKind::Rto);
}

#[test]
fn a_hole_filled_at_once_is_reordering_not_loss() {
    let mut n = Net::new();
    handshake(&mut n, 1, 1000);
    n.seg(false, 20.0, ACK, 2001, 2, 1000, TcpOptions::default());
    n.seg(false, 20.2, ACK, 1001, 2, 1000, TcpOptions::default());
    let c = n.finish().remove(0);
    let h = &c.half[Side::Server.index()];
    assert_eq!(h.loss.out_of_order, 1);
    assert_eq!(h.loss.retx_count, 0);
}

#[test]
fn acked_unseen_data_is_a_capture_drop() {
    let mut n = Net::new();
    handshake(&mut n, 1, 1000);
    burst(&mut n, 20.0, 0, 1);
    // the capture missed the server's second segment; the client ACKs both
    n.seg(true, 20.5, ACK, 2, 3001, 0, TcpOptions::default());
    let c = n.finish().remove(0);
    let h = &c.half[Side::Server.index()];
    assert_eq!(h.loss.dropped_bytes, 1000);
    assert_eq!(h.drops()[0].at.frame, 5);
    assert_eq!(h.loss.retx_count, 0);
}

/// Client-side capture, server 10 ms away: the server sends one
/// segment, the client's pure ACK of it leaves `ack_after` ms later (or
/// the client answers with data), and the server's next segment
/// arrives 10 ms after that ACK, as if the ACK released it.
fn lone_segment_then_ack(ack_after: f64, ack_len: u32) -> Conn {
    let mut n = Net::new();
    handshake(&mut n, 100, 900);
    let o = TcpOptions::default;
    n.seg(true, 10.2, ACK, 101, 901, 100, o()); // request
    n.seg(false, 20.3, ACK, 901, 201, 1000, o()); // y
    let t = 20.3 + ack_after;
    n.seg(true, t, ACK, 201, 1901, ack_len, o()); // ACK of y
    n.seg(false, t + 10.0, ACK, 1901, 201 + ack_len, 1000, o()); // x
    n.seg(true, t + 10.1, ACK, 201 + ack_len, 2901, 0, o());
    n.finish().remove(0)
}

#[test]
fn a_held_pure_ack_that_releases_the_sender_is_an_ack_stall() {
    let c = lone_segment_then_ack(45.0, 0);
    let st = c.half[Side::Server.index()].ack_stalls();
    assert_eq!(st.len(), 1, "{st:?}");
    assert_eq!((st[0].y.frame, st[0].ack.frame, st[0].x.frame), (5, 6, 7));
    assert_eq!(st[0].flight, 1000);
    let held = st[0].held.as_millis_f64();
    assert!((44.5..45.5).contains(&held), "held {held} ms");
}

/// An ACK held 45 ms that covers three segments at once was not held
/// by the delayed-ACK rule (which ACKs every second full segment).
#[test]
fn a_late_ack_of_many_segments_is_no_ack_stall() {
    let mut n = Net::new();
    handshake(&mut n, 100, 900);
    let o = TcpOptions::default;
    n.seg(true, 10.2, ACK, 101, 901, 100, o());
    for i in 0..3u32 {
        n.seg(false, 20.3, ACK, 901 + i * 1400, 201, 1400, o());
    }
    n.seg(true, 65.3, ACK, 201, 901 + 4200, 0, o());
    n.seg(false, 75.3, ACK, 901 + 4200, 201, 1400, o());
    let c = n.finish().remove(0);
    assert!(c.half[Side::Server.index()].ack_stalls().is_empty());
}

#[test]
fn a_prompt_ack_or_an_answer_is_no_ack_stall() {
    // acknowledged at once: the pause is the path's, not a timer's
    let quick = lone_segment_then_ack(0.1, 0);
    assert!(quick.half[Side::Server.index()].ack_stalls().is_empty());
    // the client spoke: what the server sends next may answer it
    let answered = lone_segment_then_ack(45.0, 50);
    assert!(answered.half[Side::Server.index()].ack_stalls().is_empty());
}

/// The server's small last segment is ACKed at once, the client closes,
/// and the server's TLS close_notify (small) follows the FIN: an
/// answer to the FIN, not a segment Nagle held for the ACK.
#[test]
fn a_segment_answering_the_peers_fin_is_not_nagle() {
    let mut n = Net::new();
    handshake(&mut n, 100, 900);
    let o = TcpOptions::default;
    n.seg(true, 10.2, ACK, 101, 901, 100, o()); // request
    n.seg(false, 20.3, ACK, 901, 201, 1448, o());
    n.seg(false, 20.3, ACK, 2349, 201, 244, o()); // small y
    n.seg(true, 20.4, ACK, 201, 2593, 0, o()); // pure ACK of y
    n.seg(true, 20.5, FINACK, 201, 2593, 0, o());
    n.seg(false, 30.5, ACK, 2593, 202, 24, o()); // close_notify
    let mut c = n.finish().remove(0);
    let h = &mut c.half[Side::Server.index()];
    h.finish_nagle(); // as the analysis does: a pending stall is confirmed
    assert!(h.nagle().is_empty(), "{:?}", h.nagle());
    assert!(h.ack_stalls().is_empty(), "{:?}", h.ack_stalls());
}

/// A connection of SYNs only is kept as its SYNs and replayed into a whole
/// connection when another segment comes or it is handed on: the result is
/// the connection a table of whole connections (one keeping marks) makes.
#[test]
fn syns_only_replay_into_the_same_connection() {
    let play = |n: &mut Net| {
        // SYNs sent again (the last without options, as some stacks do),
        // then answered, data and close
        n.seg(true, 0.0, SYN, 100, 0, 0, wscale(7));
        n.seg(true, 1000.0, SYN, 100, 0, 0, wscale(7));
        n.seg(true, 3000.0, SYN, 100, 0, 0, TcpOptions::default());
        n.seg(false, 3010.0, SYNACK, 500, 101, 0, wscale(7));
        n.seg(true, 3020.0, ACK, 101, 501, 0, TcpOptions::default());
        n.seg(true, 3020.1, ACK, 101, 501, 300, TcpOptions::default());
        n.seg(false, 3030.0, ACK, 501, 401, 1000, TcpOptions::default());
        n.seg(true, 3040.0, FINACK, 401, 1501, 0, TcpOptions::default());
        n.seg(false, 3050.0, FINACK, 1501, 402, 0, TcpOptions::default());
        // a new ISN on the same 4-tuple: SYNs never answered, then another
        n.seg(true, 9000.0, SYN, 7000, 0, 0, wscale(7));
        n.seg(true, 10000.0, SYN, 7000, 0, 0, wscale(7));
        n.seg(true, 20000.0, SYN, 9000, 0, 0, wscale(7));
    };
    let shown = |conns: Vec<Conn>| -> Vec<String> {
        conns
            .into_iter()
            .map(|mut c| {
                for h in &mut c.half {
                    h.take_marks();
                }
                format!("{c:?}")
            })
            .collect()
    };
    let mut syns = Net::new();
    play(&mut syns);
    let mut whole = Net {
        table: FlowTable::with_marks(),
        ..Net::new()
    };
    play(&mut whole);
    let (syns, whole) = (syns.finish(), whole.finish());
    assert_eq!(syns.len(), 3);
    assert_eq!(syns[0].syn.map(|s| s.count), Some(3));
    assert!(syns[0].is_closed());
    assert_eq!(syns[1].syn.map(|s| s.count), Some(2));
    assert_eq!(syns[1].frames, 2);
    assert_eq!(shown(syns), shown(whole));
}
