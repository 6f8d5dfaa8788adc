//! Everything derived from one finished connection: the input of the
//! detectors and of the report.

use crate::analysis::app::AppTimeline;
use crate::analysis::ladder::{ClientClock, ClientDir, Phase};
use crate::analysis::rounds::classify;
use crate::analysis::rtt::{RttEstimate, Vantage};
use crate::analysis::tls::TlsKind;
use crate::analysis::transfer::Transfer;
use crate::base::cost::round3;
use crate::base::fact::{fact, Value};
use crate::base::side::{FrameRef, Side};
use crate::base::time::Duration;
use crate::flow::half::{WscaleEvidence, MIN_MSS};
use crate::flow::rounds::{Limit, Round};
use crate::flow::{Conn, SynInfo};
use crate::proto::protocols::{Found, Inner, Protocols};

/// TCP facts of the connection (from the SYNs and the data).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TcpFacts {
    /// MSS option of the client's SYN and the server's SYN-ACK.
    pub mss_option: [Option<u16>; 2],
    /// Window-scale option of each SYN (None: absent).
    pub window_scale: [Option<u8>; 2],
    /// SACK-permitted in both SYNs.
    pub sack: bool,
    /// Timestamps in both SYNs.
    pub timestamps: bool,
    /// Effective MSS of each sender (bytes).
    pub(crate) mss: [u64; 2],
    /// Payload bytes each side sent (retransmissions included).
    pub bytes: [u64; 2],
    /// Retransmissions each side sent.
    pub retransmissions: [u64; 2],
    /// SYN transmissions (1 = none lost).
    pub syn_count: u32,
    /// Largest window each side advertised (bytes, scaled).
    pub(crate) max_window: [u64; 2],
    /// Segments each side sent that filled a hole soon after it opened
    /// (reordering in the network, not loss).
    pub(crate) out_of_order: [u64; 2],
    /// Segments each side sent with its flight at or above the peer's window
    /// (Wireshark's "window full").
    pub(crate) window_full: [u64; 2],
    /// Window scale of each side's window when the SYNs are not in the
    /// capture: the smallest shift the peer's flight allows (a lower bound,
    /// with the segment that proves it); `None` with the SYNs (see
    /// `window_scale`) or when nothing exceeded the raw window.
    pub window_scale_inferred: [Option<WscaleEvidence>; 2],
    /// Zero-window episodes each side imposed on its peer.
    pub(crate) zero_windows: [u64; 2],
    /// Bytes each side sent that the peer acknowledged but the capture never saw.
    pub(crate) unseen_bytes: [u64; 2],
}

/// What part of a connection the capture holds (docs/design.md §4 "Without
/// the handshake"; issue: captures from the wild).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Coverage {
    /// The capture began after the connection was set up: neither its SYN
    /// nor its SYN-ACK is there. Phases before the first packet are absent,
    /// there is no initial window, and windows are lower bounds unless the
    /// scale could be told.
    pub mid_stream: bool,
    /// Only this side's packets are in the capture (asymmetric routing, a
    /// `src host` filter, a one-way SPAN port): what needs the other
    /// direction (ACK-clocked rounds, flight, RTT) is not reported.
    pub only: Option<Side>,
}

/// All that is known of one finished connection.
#[derive(Debug)]
pub struct Analysis {
    /// The flow state, private to `analysis`: the other layers read it
    /// through the accessors of `analysis/flow_facts.rs`.
    pub(in crate::analysis) conn: Box<Conn<Protocols>>,
    /// RTT and vantage, when both halves had samples.
    pub rtt: Option<RttEstimate>,
    /// Baseline RTT (zero when unknown).
    pub(crate) rtt_min: Duration,
    /// TCP facts.
    pub(crate) tcp: TcpFacts,
    /// Classified rounds of each sender, indexed by [`Side::index`].
    pub(crate) rounds: [Vec<Round>; 2],
    /// The application exchange.
    pub(crate) app: AppTimeline,
    /// The TLS handshake, for TLS connections.
    pub(crate) tls: Option<crate::analysis::tls::TlsFacts>,
    /// The response transfer.
    pub(crate) transfer: Option<Transfer>,
    /// The ladder of phases.
    pub(crate) ladder: Vec<Phase>,
    /// What part of the connection the capture holds.
    pub(crate) coverage: Coverage,
    /// Quality notes on this connection.
    pub(crate) notes: Vec<String>,
    /// Every HTTP/1.x request (cleartext, or decrypted from TLS).
    pub(crate) requests: Vec<crate::analysis::requests::RequestRow>,
    /// What decryption did, when the capture came with keys.
    pub(crate) decryption: Option<crate::proto::tls::decrypt::Decryption>,
    /// HTTP/2 flow-control stalls (the first
    /// [`STALL_DETAIL_CAP`](crate::analysis::h2::STALL_DETAIL_CAP)) and
    /// their count.
    pub(crate) h2_stalls: (Vec<crate::proto::h2::Stall>, u64),
    /// The connection carried HTTP/2 whose frames the analysis could not
    /// follow (encrypted without keys, cut, lost): a flat flight may be
    /// HTTP/2 flow control as well as a TCP buffer.
    pub(crate) h2_blind: bool,
    /// Requests held back by the server's HTTP/2 stream limit.
    pub(crate) h2_queue: Option<crate::analysis::h2::Queue>,
    /// HTTP/2 frames held by TCP behind a hole in another stream's bytes.
    pub(crate) h2_head_of_line: Vec<crate::proto::h2::HolWait>,
    /// The RTT's rise, once judged ([`Analysis::rtt_rise`]).
    pub(in crate::analysis) rtt_rise: std::cell::OnceCell<Option<crate::analysis::rtt::RttRise>>,
}

impl Analysis {
    /// M→client→M (zero when unknown).
    pub fn h_c(&self) -> Duration {
        self.rtt.map(|r| r.h_c).unwrap_or(Duration::ZERO)
    }

    /// M→server→M (zero when unknown).
    pub(crate) fn h_s(&self) -> Duration {
        self.rtt.map(|r| r.h_s).unwrap_or(Duration::ZERO)
    }

    /// The client clock used by the ladder.
    pub(crate) fn clock(&self) -> ClientClock {
        ClientClock {
            h_c: self.h_c(),
            rtt: self.rtt_min,
        }
    }

    /// Vantage point.
    pub(crate) fn vantage(&self) -> Vantage {
        self.rtt.map(|r| r.vantage).unwrap_or(Vantage::Unknown)
    }

    /// The SYN of `side` (client SYN or server SYN-ACK).
    pub(crate) fn syn_of(&self, side: Side) -> Option<&SynInfo> {
        match side {
            Side::Client => self.conn.syn.as_ref(),
            Side::Server => self.conn.syn_ack.as_ref(),
        }
    }

    /// The phase named `name`, if the ladder has it.
    pub(crate) fn phase(&self, name: &str) -> Option<&Phase> {
        self.ladder.iter().find(|p| p.name == name)
    }

    /// `d` as a cost of this connection.
    pub(crate) fn cost(&self, d: Duration) -> crate::base::cost::Cost {
        crate::base::cost::Cost::of(d, self.rtt_min)
    }

    /// The moment after which nobody waited on this connection: its reset,
    /// or the later of the two FINs once each side's data had been
    /// acknowledged by the other up to at most [`CLOSE_TAIL`] bytes before
    /// its FIN, with no data short of that tail sent again after it (a side
    /// that closed its sending half early may still wait for the other's
    /// data); else the last frame. Time after it costs nothing (issue 21:
    /// a server resending close_notify + FIN ten times after the client
    /// had its whole response and had closed its own side was charged 57 s).
    pub(crate) fn waited_until(&self) -> crate::base::time::Timestamp {
        let c = &self.conn;
        let mut end = c.last.ts;
        if let (Some(fc), Some(fs)) = (c.half[0].send.fin.get(), c.half[1].send.fin.get()) {
            let closed = fc.ts.max(fs.ts);
            let delivered = c.half.iter().all(|h| {
                h.send.snd_nxt.saturating_sub(h.peer.acked) <= CLOSE_TAIL
                    && !h.retx().iter().any(|r| {
                        r.at.ts > closed
                            && r.offset + u64::from(r.len) + CLOSE_TAIL < h.send.snd_nxt
                    })
            });
            if delivered {
                end = end.min(closed);
            }
        }
        if let Some((_, rst)) = c.rst {
            end = end.min(rst.ts);
        }
        end.max(c.first.ts)
    }

    /// Time within `[from, to]` that `sender`'s data was held by Nagle
    /// (union of its stalls, clipped): not the application's think time.
    pub(crate) fn held_by_nagle(
        &self,
        sender: Side,
        from: crate::base::time::Timestamp,
        to: crate::base::time::Timestamp,
    ) -> Duration {
        let iv: smallvec::SmallVec<[_; 8]> = self.conn.half[sender.index()]
            .nagle()
            .iter()
            .filter_map(|st| {
                let (s, e) = (st.y.ts.max(from), st.x.ts.min(to));
                (s < e).then_some((s, e))
            })
            .collect();
        crate::base::time::union_len(&iv)
    }
}

/// Bytes before a FIN that nobody waits for once the peer has closed its
/// own side: room for a TLS close_notify alert, whose largest form is 85 B
/// (TLS 1.2 AES-CBC with HMAC-SHA384: 5 B header, 16 B explicit IV, 2 B
/// alert, 48 B MAC, padding to the 16 B block; RFC 5246 §6.2.3.2), rounded
/// up.
pub(crate) const CLOSE_TAIL: u64 = 96;

/// The most a full-sized segment can fall short of the MSS its peer
/// announced: the TCP options of each segment come out of it, and they are
/// at most 40 B (RFC 9293 §3.1, data offset ≤ 15 words; timestamps alone
/// take 12 B, RFC 7323 §3.2).
pub const OPTIONS_MAX: u64 = 40;

/// A sender's MSS (bytes): its full segment size from the SYNs and the path
/// ([`Sender::full_size`](crate::flow::half::Sender::full_size)), else the
/// largest segment it sent but never below [`MIN_MSS`], else 1460
/// (Ethernet).
fn effective_mss(conn: &Conn<Protocols>, sender: Side) -> u64 {
    let h = &conn.half[sender.index()];
    match (h.send.mss, h.send.max_payload as u64) {
        (0, 0) => 1460,
        (0, observed) => observed.max(MIN_MSS),
        _ => h.send.full_size(),
    }
}

/// Analyse a finished connection: RTT, rounds, app timeline, transfer and ladder.
pub fn analyze(mut conn: Box<Conn<Protocols>>) -> Analysis {
    let found = std::mem::take(&mut conn.protocols).finish();
    for h in &mut conn.half {
        h.finish_nagle();
    }
    let (app, tls) = crate::analysis::app::from_found(&found, &conn);
    let rtt = RttEstimate::from_samples(&conn.rtt);
    let rtt_min = rtt.map(|r| r.min).unwrap_or(Duration::ZERO);
    let (syn, sa) = (conn.syn, conn.syn_ack);
    let ts = syn.is_some_and(|s| s.options.timestamps.is_some())
        && sa.is_some_and(|s| s.options.timestamps.is_some());
    let mss = [
        effective_mss(&conn, Side::Client),
        effective_mss(&conn, Side::Server),
    ];
    let [h0, h1] = &conn.half;
    let tcp = TcpFacts {
        mss_option: [
            syn.and_then(|s| s.options.mss),
            sa.and_then(|s| s.options.mss),
        ],
        window_scale: [
            syn.and_then(|s| s.options.window_scale),
            sa.and_then(|s| s.options.window_scale),
        ],
        sack: syn.is_some_and(|s| s.options.sack_permitted)
            && sa.is_some_and(|s| s.options.sack_permitted),
        timestamps: ts,
        mss,
        bytes: [h0.send.bytes_sent, h1.send.bytes_sent],
        retransmissions: [h0.loss.retx_count, h1.loss.retx_count],
        syn_count: syn.map(|s| s.count).unwrap_or(0),
        // half[x].max_window is the window the *peer* of x advertised
        max_window: [h1.scaled(h1.peer.max_window), h0.scaled(h0.peer.max_window)],
        out_of_order: [h0.loss.out_of_order, h1.loss.out_of_order],
        window_full: [h0.peer.window_full, h1.peer.window_full],
        // half[x] scales the window its peer advertised
        window_scale_inferred: [
            h1.peer.wscale_evidence.as_deref().copied(),
            h0.peer.wscale_evidence.as_deref().copied(),
        ],
        zero_windows: [
            h1.zero_windows().len() as u64,
            h0.zero_windows().len() as u64,
        ],
        unseen_bytes: [h0.loss.dropped_bytes, h1.loss.dropped_bytes],
    };
    let mut rounds: [Vec<Round>; 2] = [Vec::new(), Vec::new()];
    let mut dropped = [0u64; 2];
    for side in [Side::Client, Side::Server] {
        let h = &mut conn.half[side.index()];
        let tracker = std::mem::take(&mut h.rounds);
        let (mut r, d) = tracker.finish(h.peer_flags.peer_wscale);
        let known = h.peer_flags.wscale_known;
        classify(&mut r, mss[side.index()], rtt_min, known);
        rounds[side.index()] = r;
        dropped[side.index()] = d;
    }
    let coverage = Coverage {
        mid_stream: syn.is_none() && sa.is_none(),
        only: match conn.segments {
            [_, 0] => Some(Side::Client),
            [0, _] => Some(Side::Server),
            _ => None,
        },
    };
    for r in &mut rounds {
        if coverage.only.is_some() {
            // no ACKs: a round is whatever was sent, nothing limited it
            // that the capture can tell
            r.iter_mut().for_each(|r| r.limit = Limit::Unknown);
        } else if coverage.mid_stream {
            // data sent before the first ACK the capture saw: its flight
            // counts from the capture's start, not the sender's snd_una
            if let Some(first) = r.first_mut().filter(|r| r.release_delay.is_none()) {
                first.limit = Limit::Unknown;
            }
        }
    }
    let app = app.unwrap_or_else(|| tcp_timeline(&conn));
    let sender = if conn.half[0].send.snd_nxt > conn.half[1].send.snd_nxt * 4 {
        Side::Client
    } else {
        Side::Server
    };
    let from = if sender == Side::Server {
        app.response_offset
    } else {
        0
    };
    let mut transfer = Transfer::new(
        sender,
        &rounds[sender.index()],
        dropped[sender.index()],
        from,
        mss[sender.index()],
        rtt_min,
    );
    // the server sent data before the client sent any: no TLS server
    // flight (it answers a ClientHello) and no response to a request
    let server_spoke_first = sender == Side::Server
        && conn.half[1].send.first_data.get().is_some_and(|r| {
            conn.half[0]
                .send
                .first_data
                .get()
                .is_none_or(|q| q.frame > r.frame)
        });
    let cut = conn.payload_cut > 0 && !http_cut(&conn) && !server_spoke_first;
    if coverage.mid_stream || coverage.only.is_some() || cut {
        // the first round seen is not the sender's first (or, with the
        // payloads cut, may be a TLS handshake flight rather than data)
        if let Some(t) = &mut transfer {
            t.initial_window = None;
        }
    }
    let notes = coverage_notes(&conn, coverage, rtt.is_some());
    let h2_alpn = matches!(&found, Found::Tls(t, ..)
        if t.summary().alpn_selected().is_some_and(|a| a == "h2" || a.starts_with("h2-")));
    let (decryption, inner) = match found {
        Found::Tls(_, d, inner) => (d, inner),
        Found::Http(h) => (None, Some(Inner::Http1(h))),
        Found::H2(h) => (None, Some(Inner::H2(h))),
        Found::Neither => (None, None),
    };
    let path = crate::analysis::requests::Path {
        start: conn.first.ts,
        rtt: rtt_min,
        h_s: rtt.map_or(Duration::ZERO, |r| r.h_s),
    };
    use crate::analysis::requests::{rows, Exchanges};
    let starts = decryption.as_ref().map(|d| &d.starts);
    let (requests, mut h2) = match inner {
        Some(Inner::Http1(h)) => (rows(Exchanges::Http1(&h), path, starts), None),
        Some(Inner::H2(h)) => (rows(Exchanges::H2(&h), path, starts), Some(h)),
        None => (Vec::new(), None),
    };
    let h2_blind = match &h2 {
        Some(h) => h.lost_frames(),
        None => h2_alpn,
    };
    let h2_stalls = h2.as_ref().map_or_else(
        || (Vec::new(), 0),
        |h| {
            let h_of = |f: fn(&RttEstimate) -> Duration| rtt.as_ref().map_or(Duration::ZERO, f);
            crate::analysis::h2::stalls(&h.flow, [h_of(|r| r.h_c), h_of(|r| r.h_s)])
        },
    );
    let h2_queue = h2.as_ref().and_then(|h| {
        let h_c = rtt.as_ref().map_or(Duration::ZERO, |r| r.h_c);
        let quick = Duration::from_millis(1).max(rtt_min / 4);
        crate::analysis::h2::queue(h, h_c, quick)
    });
    let h2_head_of_line = h2
        .as_mut()
        .map(|h| std::mem::take(&mut h.head_of_line))
        .unwrap_or_default();
    let mut a = Analysis {
        conn,
        rtt,
        rtt_min,
        tcp,
        rounds,
        app,
        tls,
        transfer,
        ladder: Vec::new(),
        coverage,
        notes,
        requests,
        decryption,
        h2_stalls,
        h2_blind,
        h2_queue,
        h2_head_of_line,
        rtt_rise: std::cell::OnceCell::new(),
    };
    a.ladder = build_ladder(&a);
    a
}

/// What a person must know about what the capture holds of `conn`: one
/// direction only, no handshake (and what that leaves unknown), no RTT.
fn coverage_notes(conn: &Conn<Protocols>, coverage: Coverage, rtt_known: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(side) = coverage.only {
        notes.push(format!(
            "one direction only: the capture holds the {}'s packets and none of the {}'s; \
             flight, rounds and RTT need both and are not judged",
            side.as_str(),
            side.peer().as_str()
        ));
    }
    if !rtt_known {
        notes.push(
            "RTT unknown (no handshake, and no data/ACK pair or timestamp echo in both \
             directions): costs are in ms only"
                .to_string(),
        );
    }
    let oversized = conn.half[0].send.oversized + conn.half[1].send.oversized;
    if oversized > 0 {
        notes.push(format!(
            "{oversized} segments larger than the MSS: captured on an end host with \
             segmentation/receive offload (TSO/GSO/GRO); they are counted by bytes, as the \
             segments they stand for"
        ));
    }
    if conn.payload_cut > 0 {
        notes.push(if http_cut(conn) {
            format!(
                "{} data segments cut by the snapshot length: the first request line was \
                 captured (HTTP), the rest of HTTP unknown; the TCP analysis is complete",
                conn.payload_cut
            )
        } else {
            format!(
                "{} data segments cut by the snapshot length: TLS and HTTP unknown (not \
                 guessed), the TCP analysis is complete",
                conn.payload_cut
            )
        });
    }
    if coverage.mid_stream {
        notes.push(
            "capture started mid-connection (no SYN): connect, TLS and the first request \
             are not timed; the first round seen is not the initial window"
                .to_string(),
        );
    }
    if conn.syn.is_none() || conn.syn_ack.is_none() {
        for side in [Side::Client, Side::Server] {
            // the half of the peer scales this side's window
            let h = &conn.half[side.peer().index()];
            if h.peer.window.max(h.peer.max_window) == 0 {
                continue;
            }
            notes.push(match h.peer.wscale_evidence.as_deref() {
                Some(e) => format!(
                    "{}'s window scale not in the capture: at least {} (×{}), since frame {} \
                     had {} B in flight under a window field of {}; its windows are lower bounds",
                    side.as_str(),
                    e.shift,
                    1u64 << e.shift,
                    e.at.frame,
                    e.flight,
                    e.raw
                ),
                None => format!(
                    "{}'s window scale not in the capture and not inferable (the flight never \
                     exceeded the window field): its windows are shown unscaled, as lower bounds",
                    side.as_str()
                ),
            });
        }
    }
    notes
}

/// Payloads cut by the snapshot length, and the client's first captured
/// bytes open with an HTTP request line: its first data is the request, the
/// server's first data the response (RFC 9112 §3).
fn http_cut(conn: &Conn<Protocols>) -> bool {
    conn.payload_cut > 0 && conn.client_opening == Some(crate::flow::Opening::HttpRequest)
}

/// Timeline for TCP that is neither TLS nor HTTP: the first data of each side.
fn tcp_timeline(conn: &Conn<Protocols>) -> AppTimeline {
    let c = &conn.half[0];
    let s = &conn.half[1];
    // payloads cut by the snapshot length: the first data may be a TLS
    // handshake or anything else, so no request is named unless its
    // captured bytes open with a request line
    let request_first = c
        .send
        .first_data
        .get()
        .filter(|_| conn.payload_cut == 0 || http_cut(conn));
    let response_first = match (request_first, s.send.first_data.get()) {
        (Some(q), Some(r)) if r.frame > q.frame => Some(r),
        (None, r) => r,
        _ => None,
    };
    // the request's last byte: the client's last data before the answer
    // that acknowledged it (a request written in several segments)
    let request_last = match conn.turns.first {
        Some(t) if request_first.is_some() && Some(t.response_first) == response_first => {
            Some(t.request_last)
        }
        _ => request_first,
    };
    AppTimeline {
        protocol: "tcp",
        request_first,
        request_last,
        response_first,
        response_offset: 0,
        response_last: s.send.last_new_data.get(),
        first_record: None,
        exchanges: u64::from(request_first.is_some()),
        client_ready: None,
    }
}

fn build_ladder(a: &Analysis) -> Vec<Phase> {
    let clock = a.clock();
    let mut ladder = Vec::new();
    let c = &a.conn;
    let mut connect_end = None;
    if let (Some(syn), Some(sa)) = (c.syn, c.syn_ack) {
        let detail = fact!(
            "ladder.connect",
            syn_transmissions = Value::Count(u64::from(syn.count)),
            syn_data_bytes = Value::Bytes(u64::from(syn.data_len)),
        );
        ladder.push(clock.phase(
            "connect",
            (syn.first, ClientDir::Sent),
            (sa.first, ClientDir::Received),
            detail,
        ));
        connect_end = Some(sa.first);
    }
    if let (Some(t), Some(start)) = (&a.tls, connect_end) {
        if let Some(done) = t.done {
            let dir = if t.done_sent_by_client {
                ClientDir::Sent
            } else {
                ClientDir::Received
            };
            let mut p = clock.phase(
                "tls",
                (start, ClientDir::Received),
                (done, dir),
                fact!(
                    "ladder.tls",
                    version = t.info.version.clone(),
                    kind = t.kind.as_str(),
                    nominal_rtts = Value::Count(u64::from(t.kind.nominal_rtts())),
                ),
            );
            // server processing: ClientHello in → ServerHello out, from
            // the ClientHello's last transmission before the ServerHello
            // (the wait for a lost one is the network's, not the server's)
            if let Some((_, _, d)) = a.server_hello_wait() {
                p.parts.push(clock.part("server-processing", d));
            }
            // TLS 1.2 full: the client's key exchange after the server's first flight
            if let (TlsKind::Tls12Full, Some(end), Some(fin)) =
                (t.kind, t.server_flight_end, t.client_finished)
            {
                let d = (fin.ts - end.ts) - a.h_c();
                p.parts.push(clock.part("client-processing", d));
            }
            ladder.push(p);
        }
    }
    let app = &a.app;
    // request → first byte
    if let (Some(q), Some(r)) = (app.request_first, app.response_first) {
        let mut p = clock.phase(
            "request",
            (q, ClientDir::Sent),
            (r, ClientDir::Received),
            fact!("ladder.request"),
        );
        let last = app.request_last.unwrap_or(q);
        let total = Duration::from_millis_f64(p.ms);
        // what the server's kernel held back (Nagle) is not think time
        let held = a.held_by_nagle(Side::Server, last.ts, r.ts).min(total);
        let think = ((r.ts - last.ts) - a.h_s() - held)
            .max(Duration::ZERO)
            .min(total - held);
        p.parts.push(clock.part("network", total - think - held));
        if held > Duration::ZERO {
            p.parts.push(clock.part("nagle", held));
        }
        p.parts.push(clock.part("server-think", think));
        ladder.push(p);
        if let Some(fr) = app.first_record {
            ladder.push(clock.phase(
                "first-decrypted-byte",
                (r, ClientDir::Received),
                (fr.complete, ClientDir::Received),
                fact!(
                    "ladder.first-decrypted-byte",
                    record_bytes = Value::Bytes(fr.len)
                ),
            ));
        }
    }
    if let Some(t) = &a.transfer {
        let dir = if t.sender == Side::Server {
            ClientDir::Received
        } else {
            ClientDir::Sent
        };
        let mut detail = fact!(
            "ladder.transfer",
            bytes = Value::Bytes(t.bytes),
            rounds = Value::Count(t.rounds.len() as u64),
            bytes_per_sec = Value::Number(t.bytes_per_sec),
        );
        if let Some(b) = t.bound {
            detail = detail
                .with("bound_by", b.limit.as_str())
                .with("bound_flight_bytes", Value::Bytes(b.flight))
                .with("bound_bytes_per_sec", Value::Number(b.bytes_per_sec));
        }
        ladder.push(clock.phase("transfer", (t.first, dir), (t.last, dir), detail));
    }
    let fins: Vec<FrameRef> = [c.half[0].send.fin.get(), c.half[1].send.fin.get()]
        .into_iter()
        .flatten()
        .collect();
    if let Some(first_fin) = fins.iter().min_by_key(|m| m.frame) {
        let end = c.last;
        let detail = match c.rst {
            Some((side, _)) => fact!("ladder.close", rst_from = side),
            None => fact!("ladder.close", fins = Value::Count(fins.len() as u64)),
        };
        let mut p = clock.phase(
            "close",
            (*first_fin, ClientDir::Received),
            (end, ClientDir::Received),
            detail,
        );
        p.ms = round3((end.ts - first_fin.ts).as_millis_f64());
        p.rtts = round3((end.ts - first_fin.ts).in_rtts(a.rtt_min).unwrap_or(0.0));
        ladder.push(p);
    }
    ladder
}

/// Name the frames the analysis placed: TLS handshake messages and the
/// first HTTP exchange (the ladder diagram writes them beside the arrows).
pub(crate) fn frame_labels(a: &Analysis) -> Vec<(u64, &'static str)> {
    let mut v: Vec<(u64, &'static str)> = Vec::new();
    let mut put = |m: Option<FrameRef>, name: &'static str| {
        if let Some(m) = m {
            v.push((m.frame, name));
        }
    };
    if let Some(t) = &a.tls {
        put(Some(t.client_hello), "ClientHello");
        put(t.hello_retry, "HelloRetryRequest");
        put(t.server_hello, "ServerHello");
        put(t.server_flight_end, "server flight end");
        put(t.server_finished, "server Finished");
        put(t.client_finished, "client Finished");
        put(t.early_data.as_ref().and_then(|e| e.first), "0-RTT data");
    }
    let app = &a.app;
    put(app.request_first, "request");
    put(app.response_first, "first response byte");
    put(app.first_record.map(|r| r.complete), "first decrypted byte");
    put(app.response_last, "response end");
    v.sort_by_key(|l| l.0);
    v.dedup();
    v
}
