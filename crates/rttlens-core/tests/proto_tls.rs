//! TLS tracker: hand-built byte streams, real handshakes captured on loopback
//! with openssl (fixtures in `src/proto/testdata/`, made by `regen.sh`
//! there), and properties over random chunkings and mutations.

use proptest::prelude::*;
use rttlens_core::base::side::{FrameRef, Side};
use rttlens_core::base::time::Timestamp;
use rttlens_core::proto::tls::{
    ContentType, HandshakeKind, HandshakeType, Step, TlsSummary, TlsTracker,
    HELLO_RETRY_REQUEST_RANDOM, RECORD_DETAIL_CAP,
};
use rttlens_core::proto::NoteKind;

// ---------------------------------------------------------------------------
// Byte builders (RFC 8446 §4, §5.1; RFC 5246 §7.4)

fn mark(frame: u64) -> FrameRef {
    FrameRef {
        frame,
        ts: Timestamp::from_nanos(1_000_000_000 + frame as i64 * 1_000_000),
    }
}

fn record(ct: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![ct, 3, 3];
    v.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

fn hs(t: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![t];
    v.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    v.extend_from_slice(body);
    v
}

fn u16v(items: &[u8]) -> Vec<u8> {
    let mut v = (items.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(items);
    v
}

fn ext(t: u16, data: &[u8]) -> Vec<u8> {
    let mut v = t.to_be_bytes().to_vec();
    v.extend(u16v(data));
    v
}

fn sni(name: &str) -> Vec<u8> {
    let mut entry = vec![0];
    entry.extend(u16v(name.as_bytes()));
    ext(0, &u16v(&entry))
}

fn alpn(names: &[&str]) -> Vec<u8> {
    let mut list = vec![];
    for n in names {
        list.push(n.len() as u8);
        list.extend_from_slice(n.as_bytes());
    }
    ext(16, &u16v(&list))
}

fn versions_client(vs: &[u16]) -> Vec<u8> {
    let mut d = vec![(vs.len() * 2) as u8];
    for v in vs {
        d.extend_from_slice(&v.to_be_bytes());
    }
    ext(43, &d)
}

fn key_share_client(groups: &[u16]) -> Vec<u8> {
    let mut list = vec![];
    for g in groups {
        list.extend_from_slice(&g.to_be_bytes());
        list.extend(u16v(&[7; 32]));
    }
    ext(51, &u16v(&list))
}

struct Ch<'a> {
    session_id: &'a [u8],
    tls13: bool,
    ticket: Option<&'a [u8]>,
    psk: bool,
    early: bool,
    groups: &'a [u16],
}

impl Default for Ch<'_> {
    fn default() -> Self {
        Ch {
            session_id: &[],
            tls13: false,
            ticket: None,
            psk: false,
            early: false,
            groups: &[0x1d],
        }
    }
}

fn client_hello(c: &Ch) -> Vec<u8> {
    let mut b = vec![3, 3];
    b.extend_from_slice(&[0x11; 32]);
    b.push(c.session_id.len() as u8);
    b.extend_from_slice(c.session_id);
    b.extend(u16v(&[0x13, 0x01, 0x13, 0x02, 0xc0, 0x2f]));
    b.extend_from_slice(&[1, 0]);
    let mut e = sni("example.com");
    e.extend(alpn(&["h2", "http/1.1"]));
    if let Some(t) = c.ticket {
        e.extend(ext(35, t));
    }
    if c.tls13 {
        e.extend(versions_client(&[0x0304, 0x0303]));
        e.extend(ext(45, &[1, 1]));
        e.extend(key_share_client(c.groups));
    }
    if c.early {
        e.extend(ext(42, &[]));
    }
    if c.psk {
        // identities + binders (opaque to the tracker); must be last.
        e.extend(ext(41, &[0, 6, 0, 1, 9, 0, 0, 0, 0, 0, 3, 2, 0xaa, 0xbb]));
    }
    b.extend(u16v(&e));
    hs(1, &b)
}

fn server_hello(random: [u8; 32], session_id: &[u8], suite: u16, exts: &[u8]) -> Vec<u8> {
    let mut b = vec![3, 3];
    b.extend_from_slice(&random);
    b.push(session_id.len() as u8);
    b.extend_from_slice(session_id);
    b.extend_from_slice(&suite.to_be_bytes());
    b.push(0);
    b.extend(u16v(exts));
    hs(2, &b)
}

fn sh13_exts(psk: bool) -> Vec<u8> {
    let mut e = ext(43, &[3, 4]);
    let mut ks = 0x1du16.to_be_bytes().to_vec();
    ks.extend(u16v(&[9; 32]));
    e.extend(ext(51, &ks));
    if psk {
        e.extend(ext(41, &[0, 0]));
    }
    e
}

fn opaque(ct: u8, len: usize, fill: u8) -> Vec<u8> {
    record(ct, &vec![fill; len])
}

/// A conversation: segments in capture order, each with its side and frame.
#[derive(Default, Clone)]
struct Conv {
    segs: Vec<(Side, u64, u64, Vec<u8>)>,
    next: [u64; 2],
    frame: u64,
}

impl Conv {
    fn send(&mut self, side: Side, bytes: &[u8]) -> u64 {
        self.frame += 1;
        let off = self.next[side.index()];
        self.next[side.index()] += bytes.len() as u64;
        self.segs.push((side, self.frame, off, bytes.to_vec()));
        self.frame
    }

    fn run(&self) -> TlsTracker {
        let mut t = TlsTracker::new();
        for (side, frame, off, data) in &self.segs {
            t.push(*side, *off, data, mark(*frame));
        }
        t
    }

    /// Pushes every segment in pieces of `piece` bytes, each with its
    /// segment's mark.
    fn run_split(&self, piece: usize) -> TlsTracker {
        let mut t = TlsTracker::new();
        for (side, frame, off, data) in &self.segs {
            for (i, c) in data.chunks(piece).enumerate() {
                t.push(*side, off + (i * piece) as u64, c, mark(*frame));
            }
        }
        t
    }
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn frames(step: &Option<Step>) -> Option<(u64, Option<u64>)> {
    step.as_ref()
        .map(|s| (s.first.frame, s.complete.map(|m| m.frame)))
}

// ---------------------------------------------------------------------------
// Scenarios

/// TLS 1.2 full handshake: CH / SH Cert SKE SHD (Certificate spanning two
/// records) / CKE CCS Fin / NST CCS Fin / app data.
fn tls12_full() -> Conv {
    let mut c = Conv::default();
    c.send(
        Side::Client,
        &record(
            22,
            &client_hello(&Ch {
                ticket: Some(&[]),
                ..Ch::default()
            }),
        ),
    );
    let sh = server_hello([0x22; 32], &[], 0xc02f, &ext(35, &[]));
    let cert = hs(11, &[0x5a; 20_000]);
    let flight = cat(&[sh, cert, hs(12, &[1; 100]), hs(14, &[])]);
    // Split the handshake bytes into records of at most 16384 bytes.
    let recs: Vec<Vec<u8>> = flight.chunks(16384).map(|p| record(22, p)).collect();
    let flight = recs.concat();
    // Three segments of the server flight.
    c.send(Side::Server, &flight[..1400]);
    c.send(Side::Server, &flight[1400..15000]);
    c.send(Side::Server, &flight[15000..]);
    let client2 = cat(&[
        record(22, &hs(16, &[4; 65])),
        record(20, &[1]),
        opaque(22, 40, 0xe1),
    ]);
    c.send(Side::Client, &client2);
    let server2 = cat(&[
        record(22, &hs(4, &[0x77; 180])),
        record(20, &[1]),
        opaque(22, 40, 0xe2),
    ]);
    c.send(Side::Server, &server2);
    c.send(Side::Client, &opaque(23, 100, 0xa1));
    let big = opaque(23, 16408, 0xa2);
    c.send(Side::Server, &big[..8000]);
    c.send(Side::Server, &big[8000..]);
    c.send(Side::Server, &opaque(23, 500, 0xa3));
    c
}

#[test]
fn tls12_full_handshake() {
    let t = tls12_full().run();
    assert_eq!(t.is_tls(), Some(true));
    let s = t.summary();
    let h = s.handshake().expect("classified");
    assert_eq!(h.kind, HandshakeKind::Tls12Full);
    assert_eq!(h.version, 0x0303);
    assert_eq!((h.round_trips, h.hello_retry), (2, false));
    assert!(!h.resumption_offered && !h.resumption_accepted);
    assert_eq!(frames(&Some(h.client_hello.clone())), Some((1, Some(1))));
    assert_eq!(h.server_hello.first.frame, 2);
    // ServerHelloDone is in the third server segment.
    assert_eq!(frames(&h.server_flight_end), Some((4, Some(4))));
    assert_eq!(frames(&h.client_finished), Some((5, Some(5))));
    assert_eq!(frames(&h.server_finished), Some((6, Some(6))));
    assert_eq!(h.new_session_tickets.len(), 1);
    assert_eq!(h.new_session_tickets[0].length, 180);
    assert_eq!(frames(&h.client_first_app_data), Some((7, Some(7))));
    let sapp = h.server_first_app_data.as_ref().unwrap();
    assert_eq!((sapp.length, sapp.first.frame), (16408, 8));
    assert_eq!(sapp.complete.unwrap().frame, 9, "first decrypted byte");

    // Hellos and messages.
    assert_eq!(s.sni(), Some("example.com"));
    assert_eq!(s.alpn_offered(), ["h2", "http/1.1"]);
    assert_eq!(
        s.cipher_suite(),
        Some((0xc02f, Some("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")))
    );
    let ch = s.client_hello.as_ref().unwrap();
    assert_eq!((ch.cipher_suites, ch.session_ticket), (3, Some(0)));
    assert!(s.server_hello().unwrap().session_ticket);
    let cert = s.server().message(HandshakeType::CERTIFICATE).unwrap();
    assert_eq!(cert.length, 20_000);
    assert_eq!((cert.first.frame, cert.complete.unwrap().frame), (2, 4));
    let types: Vec<u8> = s.server().messages.iter().map(|m| m.msg_type.0).collect();
    assert_eq!(types, [2, 11, 12, 14, 4]);
    assert_eq!(
        s.client
            .message(HandshakeType::CLIENT_KEY_EXCHANGE)
            .unwrap()
            .length,
        65
    );

    // Records and aggregates.
    let srv = s.server();
    assert_eq!(srv.records[0].content_type, ContentType::HANDSHAKE);
    assert_eq!(srv.records[0].length, 16384);
    // 16389 bytes: from the first server segment into the third.
    assert_eq!(
        (
            srv.records[0].first.frame,
            srv.records[0].complete.unwrap().frame
        ),
        (2, 4)
    );
    assert_eq!(srv.totals.application_data.count, 2);
    assert_eq!(srv.totals.application_data.max_len, Some(16408));
    assert_eq!(srv.totals.application_data.min_len, Some(500));
    assert_eq!(srv.totals.change_cipher_spec.count, 1);
    assert!(srv.notes.items().is_empty() && s.client.notes.items().is_empty());
    assert_eq!(srv.encrypted_handshake, Some(4));
}

#[test]
fn chunking_does_not_change_the_result() {
    for conv in [tls12_full(), tls13_full(), tls13_psk_early(), hello_retry()] {
        let whole = conv.run().into_summary();
        for piece in [1, 2, 3, 5, 7, 100] {
            assert_eq!(conv.run_split(piece).into_summary(), whole, "piece {piece}");
        }
    }
}

#[test]
fn tls12_abbreviated_by_session_id_echo() {
    let sid = [0x42; 32];
    let mut c = Conv::default();
    c.send(
        Side::Client,
        &record(
            22,
            &client_hello(&Ch {
                session_id: &sid,
                ..Ch::default()
            }),
        ),
    );
    let sh = server_hello([0x22; 32], &sid, 0xc02f, &[]);
    c.send(
        Side::Server,
        &cat(&[record(22, &sh), record(20, &[1]), opaque(22, 40, 0xe2)]),
    );
    c.send(
        Side::Client,
        &cat(&[record(20, &[1]), opaque(22, 40, 0xe1)]),
    );
    c.send(Side::Client, &opaque(23, 80, 1));
    c.send(Side::Server, &opaque(23, 300, 2));
    let s = c.run().into_summary();
    let h = s.handshake().unwrap();
    assert_eq!(h.kind, HandshakeKind::Tls12Abbreviated);
    assert_eq!(h.round_trips, 1);
    assert!(h.resumption_offered && h.resumption_accepted);
    assert_eq!(frames(&h.server_finished), Some((2, Some(2))));
    assert_eq!(h.server_flight_end, h.server_finished);
    assert_eq!(frames(&h.client_finished), Some((3, Some(3))));
    assert_eq!(frames(&h.client_first_app_data), Some((4, Some(4))));
    assert_eq!(frames(&h.server_first_app_data), Some((5, Some(5))));
    assert_eq!(s.resumption_accepted(), Some(true));
}

#[test]
fn tls12_abbreviated_by_ticket_without_session_id() {
    // RFC 5077 §3.4: the server accepts the ticket and goes straight to CCS.
    let mut c = Conv::default();
    let ticket = [9u8; 150];
    c.send(
        Side::Client,
        &record(
            22,
            &client_hello(&Ch {
                ticket: Some(&ticket),
                ..Ch::default()
            }),
        ),
    );
    let sh = server_hello([0x22; 32], &[], 0xc02f, &ext(35, &[]));
    c.send(
        Side::Server,
        &cat(&[
            record(22, &sh),
            record(22, &hs(4, &[5; 170])),
            record(20, &[1]),
            opaque(22, 40, 3),
        ]),
    );
    let s = c.run().into_summary();
    let h = s.handshake().unwrap();
    assert_eq!(h.kind, HandshakeKind::Tls12Abbreviated);
    assert!(h.resumption_offered);
    assert_eq!(h.new_session_tickets.len(), 1);
    assert_eq!(s.client_hello.as_ref().unwrap().session_ticket, Some(150));
}

/// TLS 1.3 full handshake, TLS_AES_128_GCM_SHA256 (Finished = 53 B).
fn tls13_full() -> Conv {
    let mut c = Conv::default();
    let sid = [0x33; 32]; // middlebox-compatibility session id (RFC 8446 §D.4)
    c.send(
        Side::Client,
        &record(
            22,
            &client_hello(&Ch {
                session_id: &sid,
                tls13: true,
                ..Ch::default()
            }),
        ),
    );
    let sh = server_hello([0x22; 32], &sid, 0x1301, &sh13_exts(false));
    c.send(
        Side::Server,
        &cat(&[
            record(22, &sh),
            record(20, &[1]),
            opaque(23, 27, 1),   // EncryptedExtensions
            opaque(23, 2100, 2), // Certificate
            opaque(23, 96, 3),   // CertificateVerify
            opaque(23, 53, 4),   // Finished
        ]),
    );
    c.send(Side::Client, &cat(&[record(20, &[1]), opaque(23, 53, 5)]));
    c.send(Side::Client, &opaque(23, 120, 6)); // request
    c.send(Side::Server, &opaque(23, 200, 7)); // NST
    c.send(Side::Server, &opaque(23, 200, 8)); // NST
    c.send(Side::Server, &opaque(23, 5000, 9)); // response
    c.send(Side::Server, &opaque(23, 19, 10)); // close_notify
    c
}

#[test]
fn tls13_full_handshake() {
    let s = tls13_full().run().into_summary();
    let h = s.handshake().unwrap();
    assert_eq!(h.kind, HandshakeKind::Tls13Full);
    assert_eq!((h.version, h.round_trips), (0x0304, 1));
    // The 32-byte compatibility session id is not a resumption offer.
    assert!(!h.resumption_offered && !h.resumption_accepted);
    assert_eq!(frames(&h.server_flight_end), Some((2, Some(2))));
    assert_eq!(h.server_finished.as_ref().unwrap().length, 53);
    assert_eq!(h.server_finished.as_ref().unwrap().record, 5);
    assert_eq!(frames(&h.client_finished), Some((3, Some(3))));
    assert_eq!(
        h.new_session_tickets
            .iter()
            .map(|t| t.first.frame)
            .collect::<Vec<_>>(),
        [5, 6]
    );
    assert_eq!(frames(&h.client_first_app_data), Some((4, Some(4))));
    let sapp = h.server_first_app_data.as_ref().unwrap();
    assert_eq!((sapp.length, sapp.first.frame), (5000, 7));
    let ch = s.client_hello.as_ref().unwrap();
    assert!(ch.offers_tls13());
    assert_eq!(ch.supported_versions.as_slice(), [0x0304, 0x0303]);
    assert_eq!(ch.key_share_groups.as_slice(), [0x1d]);
    assert_eq!(ch.psk_key_exchange_modes.as_slice(), [1]);
    assert_eq!(s.server_hello().unwrap().key_share_group, Some(0x1d));
    assert_eq!(s.version(), Some(0x0304));
}

/// TLS 1.3 PSK resumption with accepted 0-RTT data.
fn tls13_psk_early() -> Conv {
    let mut c = Conv::default();
    let ch = record(
        22,
        &client_hello(&Ch {
            tls13: true,
            psk: true,
            early: true,
            ..Ch::default()
        }),
    );
    // ClientHello, compatibility CCS and two early-data records in one segment.
    c.send(
        Side::Client,
        &cat(&[ch, record(20, &[1]), opaque(23, 300, 1), opaque(23, 53, 2)]),
    );
    let sh = server_hello([0x22; 32], &[], 0x1301, &sh13_exts(true));
    c.send(
        Side::Server,
        &cat(&[record(22, &sh), opaque(23, 40, 3), opaque(23, 53, 4)]),
    );
    c.send(Side::Server, &opaque(23, 900, 5)); // 0.5-RTT: the answer to the early request
                                               // EndOfEarlyData (21 B) + Finished (53 B).
    c.send(Side::Client, &cat(&[opaque(23, 21, 6), opaque(23, 53, 7)]));
    c.send(Side::Server, &opaque(23, 120, 8)); // NST
    c.send(Side::Client, &opaque(23, 70, 9)); // second request
    c
}

#[test]
fn tls13_psk_with_early_data() {
    let s = tls13_psk_early().run().into_summary();
    let h = s.handshake().unwrap();
    assert_eq!(h.kind, HandshakeKind::Tls13ZeroRtt);
    assert_eq!(h.round_trips, 0);
    assert!(h.resumption_offered && h.resumption_accepted);
    assert!(h.early_data.offered);
    assert_eq!(h.early_data.accepted, Some(true));
    // The 53-byte early record is seen before the ServerHello: early data.
    assert_eq!((h.early_data.records, h.early_data.bytes), (2, 353));
    assert_eq!(h.early_data.first.as_ref().unwrap().first.frame, 1);
    assert_eq!(frames(&h.client_finished), Some((4, Some(4))));
    assert_eq!(h.client_finished.as_ref().unwrap().record, 5);
    assert_eq!(h.server_finished.as_ref().unwrap().record, 2);
    assert_eq!(frames(&h.server_flight_end), Some((3, Some(3))));
    assert_eq!(frames(&h.server_first_app_data), Some((3, Some(3))));
    assert_eq!(h.new_session_tickets.len(), 1);
    assert_eq!(frames(&h.client_first_app_data), Some((6, Some(6))));
    let ch = s.client_hello.as_ref().unwrap();
    assert!(ch.pre_shared_key && ch.early_data);
    assert_eq!(s.server_hello().unwrap().pre_shared_key, Some(0));
}

#[test]
fn tls13_early_data_rejected() {
    let mut c = Conv::default();
    let ch = record(
        22,
        &client_hello(&Ch {
            tls13: true,
            psk: true,
            early: true,
            ..Ch::default()
        }),
    );
    c.send(Side::Client, &cat(&[ch, opaque(23, 300, 1)]));
    let sh = server_hello([0x22; 32], &[], 0x1301, &sh13_exts(true));
    c.send(
        Side::Server,
        &cat(&[record(22, &sh), opaque(23, 40, 3), opaque(23, 53, 4)]),
    );
    c.send(Side::Client, &opaque(23, 53, 7)); // Finished alone: no EndOfEarlyData
    c.send(Side::Client, &opaque(23, 300, 8)); // the request again
    let h = c.run().into_summary().handshake().unwrap();
    assert_eq!(h.kind, HandshakeKind::Tls13Psk);
    assert_eq!(h.early_data.accepted, Some(false));
    assert_eq!(h.early_data.records, 1);
    assert_eq!(frames(&h.client_first_app_data), Some((4, Some(4))));
}

/// HelloRetryRequest, compatibility CCS from both sides around it
/// (RFC 8446 §D.4), then the real ServerHello.
fn hello_retry() -> Conv {
    let mut c = Conv::default();
    c.send(
        Side::Client,
        &record(
            22,
            &client_hello(&Ch {
                tls13: true,
                groups: &[0x17],
                ..Ch::default()
            }),
        ),
    );
    let mut hrr_ext = ext(43, &[3, 4]);
    hrr_ext.extend(ext(51, &[0, 0x1d]));
    let hrr = server_hello(HELLO_RETRY_REQUEST_RANDOM, &[], 0x1302, &hrr_ext);
    c.send(Side::Server, &cat(&[record(22, &hrr), record(20, &[1])]));
    let ch2 = client_hello(&Ch {
        tls13: true,
        groups: &[0x1d],
        ..Ch::default()
    });
    c.send(Side::Client, &cat(&[record(20, &[1]), record(22, &ch2)]));
    let sh = server_hello([0x22; 32], &[], 0x1302, &sh13_exts(false));
    c.send(
        Side::Server,
        &cat(&[
            record(22, &sh),
            opaque(23, 30, 1),
            opaque(23, 1500, 2),
            opaque(23, 80, 3),
            opaque(23, 69, 4),
        ]),
    );
    c.send(Side::Client, &opaque(23, 69, 5));
    c.send(Side::Client, &opaque(23, 100, 6));
    c.send(Side::Server, &opaque(23, 3000, 7));
    c
}

#[test]
fn hello_retry_request() {
    let s = hello_retry().run().into_summary();
    let h = s.handshake().unwrap();
    assert!(h.hello_retry);
    assert_eq!(h.kind, HandshakeKind::Tls13Full);
    assert_eq!(h.round_trips, 2);
    assert_eq!(h.hello_retry_request.as_ref().unwrap().first.frame, 2);
    assert_eq!(h.second_client_hello.as_ref().unwrap().first.frame, 3);
    assert_eq!(h.server_hello.first.frame, 4);
    assert_eq!(frames(&h.client_finished), Some((5, Some(5))));
    assert_eq!(h.server_finished.as_ref().unwrap().length, 69);
    assert!(h.new_session_tickets.is_empty());
    assert_eq!(h.server_first_app_data.as_ref().unwrap().length, 3000);
    let hrr = s.hello_retry_request().unwrap();
    assert!(hrr.hello_retry_request);
    assert_eq!(hrr.key_share_group, Some(0x1d));
    assert_eq!(
        s.client_hello.as_ref().unwrap().key_share_groups.as_slice(),
        [0x17]
    );
    assert_eq!(
        s.second_client_hello
            .as_ref()
            .unwrap()
            .key_share_groups
            .as_slice(),
        [0x1d]
    );
    // The hellos after the compatibility CCS were read as plaintext.
    assert!(!s.client.records[2].opaque && !s.server().records[2].opaque);
    assert_eq!(s.client.encrypted_handshake, None);
}

#[test]
fn hello_after_compatibility_ccs_split_after_its_header() {
    let mut c = Conv::default();
    c.send(
        Side::Client,
        &record(
            22,
            &client_hello(&Ch {
                tls13: true,
                groups: &[0x17],
                ..Ch::default()
            }),
        ),
    );
    let mut hrr_ext = ext(43, &[3, 4]);
    hrr_ext.extend(ext(51, &[0, 0x1d]));
    let hrr = server_hello(HELLO_RETRY_REQUEST_RANDOM, &[], 0x1301, &hrr_ext);
    let sh = record(
        22,
        &server_hello([0x22; 32], &[], 0x1301, &sh13_exts(false)),
    );
    // HRR, CCS and the ServerHello's record header in one segment, its
    // payload in the next.
    c.send(
        Side::Server,
        &cat(&[record(22, &hrr), record(20, &[1]), sh[..5].to_vec()]),
    );
    c.send(Side::Server, &sh[5..]);
    let s = c.run().into_summary();
    let sh = s
        .server_hello()
        .expect("plaintext ServerHello after the CCS");
    assert_eq!((sh.first.frame, sh.complete.frame), (3, 3));
    assert_eq!(s.server().records[2].first.frame, 2);
}

#[test]
fn client_hello_across_records_and_segments() {
    let ch = client_hello(&Ch::default());
    let (a, b) = ch.split_at(50);
    let bytes = cat(&[record(22, a), record(22, b)]);
    let mut c = Conv::default();
    c.send(Side::Client, &bytes[..3]);
    c.send(Side::Client, &bytes[3..70]);
    c.send(Side::Client, &bytes[70..]);
    let s = c.run().into_summary();
    let info = s.client_hello.as_ref().expect("reassembled");
    // The first segment held only 3 header bytes of the record, so the
    // message's first byte came with the second.
    assert_eq!((info.first.frame, info.complete.frame), (2, 3));
    assert_eq!(s.client.records[0].first.frame, 1);
    assert_eq!(info.record, 0);
    assert_eq!(s.sni(), Some("example.com"));
    assert_eq!(s.client.records.len(), 2);
    assert_eq!(s.client.records[0].complete.unwrap().frame, 2);
}

#[test]
fn gap_inside_payload_keeps_sync() {
    let mut t = TlsTracker::new();
    let ch = record(22, &client_hello(&Ch::default()));
    t.push(Side::Client, 0, &ch, mark(1));
    let app = opaque(23, 1000, 1);
    let base = ch.len() as u64;
    t.push(Side::Client, base, &app[..100], mark(2));
    t.gap(Side::Client, base + 100, 500);
    t.push(Side::Client, base + 600, &app[600..], mark(3));
    t.push(Side::Client, base + 1005, &opaque(23, 10, 2), mark(4));
    let s = t.summary();
    let d = &s.client;
    assert_eq!(d.lost_sync_at, None);
    assert_eq!(d.records.len(), 3);
    assert_eq!(d.records[1].missing, 500);
    assert_eq!(d.records[1].complete.unwrap().frame, 3);
    assert_eq!(d.records[2].complete.unwrap().frame, 4);
    assert_eq!(d.totals.with_gaps, 1);
    assert_eq!(d.bytes_missing, 500);
    assert_eq!(d.notes.items()[0].kind, NoteKind::Gap { len: 500 });
}

#[test]
fn gap_over_a_header_loses_sync() {
    let mut t = TlsTracker::new();
    let ch = record(22, &client_hello(&Ch::default()));
    t.push(Side::Client, 0, &ch, mark(1));
    let base = ch.len() as u64;
    let app = cat(&[opaque(23, 100, 1), opaque(23, 100, 2)]);
    t.push(Side::Client, base, &app[..50], mark(2));
    // Covers the end of the first record and the header of the second.
    t.gap(Side::Client, base + 50, 60);
    t.push(Side::Client, base + 110, &app[110..], mark(3));
    let d = &t.summary().client;
    assert_eq!(d.lost_sync_at, Some(base + 105));
    assert_eq!(d.records.len(), 2);
    assert_eq!(d.records[1].complete, None);
    assert_eq!(d.records[1].missing, 55);
    assert!(matches!(
        d.notes.items()[0].kind,
        NoteKind::LostSync { layer: "record" }
    ));
    // Still TLS: the ClientHello was seen.
    assert_eq!(t.is_tls(), Some(true));
}

/// An SSL 2.0 record holding a ClientHello that offers TLS 1.0 (RFC 5246
/// Appendix E.2): a 2-byte header, then type, version, the three lengths,
/// one TLS cipher suite and one SSL 2.0 kind, a 16-byte challenge.
fn sslv2_client_hello() -> Vec<u8> {
    let mut body = vec![1, 3, 1, 0, 6, 0, 0, 0, 16, 0, 0, 0x2f, 0x07, 0, 0xc0];
    body.extend([0xab; 16]);
    let mut v = (0x8000 | body.len() as u16).to_be_bytes().to_vec();
    v.extend(body);
    v
}

#[test]
fn an_sslv2_hello_record_ends_where_the_next_record_starts() {
    // fuzz/regressions/tls_http: the record after an SSL 2.0 hello was
    // said to start 3 bytes before the hello ended (a 5-byte header
    // assumed)
    let hello = sslv2_client_hello();
    let ccs = opaque(20, 1, 1);
    let mut t = TlsTracker::new();
    t.push(
        Side::Client,
        0,
        &cat(&[hello.clone(), ccs.clone()]),
        mark(1),
    );
    let d = &t.summary().client;
    assert_eq!(t.is_tls(), Some(true));
    assert!(
        t.summary().client_hello.is_some(),
        "the SSL 2.0 hello is read"
    );
    assert_eq!(d.records.len(), 2);
    assert_eq!(d.records[0].length as usize, hello.len() - 2);
    assert_eq!(d.records[0].end_offset(), hello.len() as u64);
    assert_eq!(d.records[1].offset, hello.len() as u64);
    assert_eq!(d.records[1].end_offset(), (hello.len() + ccs.len()) as u64);

    // a gap from inside the hello over the next header: sync is lost
    // where the hello ends
    let mut t = TlsTracker::new();
    t.push(Side::Client, 0, &hello[..20], mark(1));
    t.gap(Side::Client, 20, hello.len() as u64 - 20 + 3);
    let d = &t.summary().client;
    assert_eq!(d.lost_sync_at, Some(hello.len() as u64));
}

#[test]
fn implicit_hole_between_pushes_is_a_gap() {
    let mut t = TlsTracker::new();
    let ch = record(22, &client_hello(&Ch::default()));
    t.push(Side::Client, 0, &ch[..10], mark(1));
    // Bytes 10..20 never delivered: the hole falls in the ClientHello body.
    t.push(Side::Client, 20, &ch[20..], mark(2));
    let s = t.summary();
    assert_eq!(s.client.lost_sync_at, None);
    assert!(s.client_hello.is_none(), "content lost");
    assert_eq!(s.client.messages[0].missing, 10);
    // Overlapping retransmission: ignored.
    t.push(Side::Client, 0, &ch, mark(3));
    assert_eq!(t.summary().client.records.len(), 1);
}

#[test]
fn gap_over_handshake_header_stops_handshake_parsing_only() {
    let mut t = TlsTracker::new();
    let msgs = cat(&[hs(16, &[1; 20]), hs(15, &[2; 20])]);
    let ch = record(22, &client_hello(&Ch::default()));
    t.push(Side::Client, 0, &ch, mark(1));
    let rec = record(22, &msgs);
    let base = ch.len() as u64;
    t.push(Side::Client, base, &rec[..20], mark(2));
    t.gap(Side::Client, base + 20, 12); // end of the first message + the second's header
    t.push(Side::Client, base + 32, &rec[32..], mark(3));
    t.push(
        Side::Client,
        base + rec.len() as u64,
        &opaque(23, 5, 0),
        mark(4),
    );
    let d = &t.summary().client;
    assert_eq!(d.lost_sync_at, None);
    assert_eq!(d.records.len(), 3);
    assert_eq!(d.messages.len(), 1, "only the ClientHello");
    assert!(d
        .notes
        .items()
        .iter()
        .any(|n| n.kind == NoteKind::LostSync { layer: "handshake" }));
}

#[test]
fn malformed_records() {
    // Not TLS at all.
    let mut t = TlsTracker::new();
    t.push(Side::Client, 0, b"GET / HTTP/1.1\r\n", mark(1));
    assert_eq!(t.is_tls(), Some(false));
    // A handshake record that is not a ClientHello.
    let mut t = TlsTracker::new();
    t.push(Side::Client, 0, &record(22, &hs(2, &[0; 10])), mark(1));
    assert_eq!(t.is_tls(), Some(false));
    // Undecided on a partial header.
    let mut t = TlsTracker::new();
    t.push(Side::Client, 0, &[22, 3], mark(1));
    assert_eq!(t.is_tls(), None);

    // Garbage length after a good start.
    let mut t = TlsTracker::new();
    let ch = record(22, &client_hello(&Ch::default()));
    t.push(Side::Client, 0, &ch, mark(1));
    t.push(
        Side::Client,
        ch.len() as u64,
        &[23, 3, 3, 0xff, 0xff, 0, 0],
        mark(2),
    );
    t.push(Side::Client, ch.len() as u64 + 7, &[0; 100], mark(3));
    let d = &t.summary().client;
    assert_eq!(d.malformed_at, Some(ch.len() as u64));
    assert_eq!(d.records.len(), 1);
    assert!(matches!(
        d.notes.items()[0].kind,
        NoteKind::Malformed { .. }
    ));
    assert_eq!(t.is_tls(), Some(true));

    // Bad content type, bad version.
    for hdr in [[99u8, 3, 3, 0, 1], [23, 2, 0, 0, 1]] {
        let mut t = TlsTracker::new();
        t.push(Side::Client, 0, &ch, mark(1));
        t.push(Side::Client, ch.len() as u64, &hdr, mark(2));
        assert_eq!(t.summary().client.malformed_at, Some(ch.len() as u64));
    }

    // A ClientHello whose inner lengths lie: framing is fine, content is not.
    let mut bad = client_hello(&Ch::default());
    bad[4 + 2 + 32] = 31; // session id length
    let mut t = TlsTracker::new();
    t.push(Side::Client, 0, &record(22, &bad), mark(1));
    let s = t.summary();
    assert!(s.client_hello.is_none());
    assert!(matches!(
        s.client.notes.items()[0].kind,
        NoteKind::Unparsed { .. }
    ));
}

#[test]
fn absurd_offsets_do_not_panic() {
    let mut t = TlsTracker::new();
    let ch = record(22, &client_hello(&Ch::default()));
    t.push(Side::Client, 0, &ch, mark(1));
    t.push(Side::Client, u64::MAX - 2, &[23, 3, 3, 0, 1, 0], mark(2));
    t.gap(Side::Client, u64::MAX - 1, u64::MAX);
    t.push(Side::Client, (1 << 62) - 3, &[23, 3, 3, 0, 1, 0], mark(3));
    t.gap(Side::Server, (1 << 62) - 1, u64::MAX);
    t.push(Side::Server, 0, &ch, mark(4));
    let s = t.summary();
    assert_eq!(s.client.lost_sync_at, Some(ch.len() as u64));
    assert!(s.server().bytes_missing > 0);
}

#[test]
fn alerts() {
    let mut t = TlsTracker::new();
    t.push(
        Side::Client,
        0,
        &record(22, &client_hello(&Ch::default())),
        mark(1),
    );
    t.push(
        Side::Server,
        0,
        &cat(&[record(21, &[2, 40]), opaque(21, 26, 0)]),
        mark(2),
    );
    let s = t.summary();
    assert_eq!(s.server().alert_count, 2);
    assert_eq!(s.server().alerts[0].level, Some(2));
    assert_eq!(s.server().alerts[0].description, Some(40));
    assert_eq!(s.server().alerts[1].description, None);
    assert!(s.handshake().is_none());
}

#[test]
fn record_detail_is_capped_but_totals_count_everything() {
    let mut t = TlsTracker::new();
    let ch = record(22, &client_hello(&Ch::default()));
    t.push(Side::Client, 0, &ch, mark(1));
    let rec = opaque(23, 16384, 0);
    let mut off = ch.len() as u64;
    for i in 0..1000 {
        t.push(Side::Client, off, &rec, mark(2 + i));
        off += rec.len() as u64;
    }
    let d = &t.summary().client;
    assert_eq!(d.records.len(), RECORD_DETAIL_CAP);
    assert_eq!(d.totals.all.count, 1001);
    assert_eq!(d.totals.application_data.bytes, 1000 * 16384);
}

// ---------------------------------------------------------------------------
// Real handshakes (openssl 3.0 on loopback, see testdata/regen.sh)

/// One payload segment of a fixture: `frame ts_nanos c|s offset hex`.
fn load(text: &str) -> Conv {
    let mut c = Conv::default();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        let data = (0..f[4].len() / 2)
            .map(|i| u8::from_str_radix(&f[4][2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let side = if f[2] == "c" {
            Side::Client
        } else {
            Side::Server
        };
        c.segs
            .push((side, f[0].parse().unwrap(), f[3].parse().unwrap(), data));
    }
    c
}

macro_rules! fixture {
    ($name:literal) => {
        load(include_str!(concat!(
            "../src/proto/testdata/",
            $name,
            ".txt"
        )))
    };
}

fn fixtures() -> Vec<(&'static str, Conv)> {
    vec![
        ("tls12_full", fixture!("tls12_full")),
        ("tls12_resume_ticket", fixture!("tls12_resume_ticket")),
        (
            "tls12_resume_session_id",
            fixture!("tls12_resume_session_id"),
        ),
        ("tls13_full", fixture!("tls13_full")),
        ("tls13_psk", fixture!("tls13_psk")),
        ("tls13_hrr", fixture!("tls13_hrr")),
        ("tls13_0rtt", fixture!("tls13_0rtt")),
    ]
}

fn real(name: &str) -> TlsSummary {
    let conv = fixtures().into_iter().find(|(n, _)| *n == name).unwrap().1;
    let t = conv.run();
    assert_eq!(t.is_tls(), Some(true));
    let s = t.into_summary();
    for d in [&s.client, s.server()] {
        assert!(d.notes.items().is_empty(), "{name}: {:?}", d.notes);
    }
    s
}

#[test]
fn openssl_tls12_full() {
    let s = real("tls12_full");
    let h = s.handshake().unwrap();
    assert_eq!((h.kind, h.round_trips), (HandshakeKind::Tls12Full, 2));
    assert_eq!(s.sni(), Some("localhost"));
    assert_eq!(s.alpn_offered(), ["http/1.1"]);
    assert_eq!(
        s.cipher_suite().unwrap().1,
        Some("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
    );
    // tshark: server flight CH/SH+Cert+SKE+SHD in one segment, NST+CCS+Fin
    // in the next server segment, then 16408 + 3684 B of application data.
    assert_eq!(
        h.server_flight_end.as_ref().unwrap().first,
        h.server_hello.first
    );
    assert_eq!(h.new_session_tickets.len(), 1);
    assert_eq!(h.client_finished.as_ref().unwrap().length, 40);
    assert_eq!(h.server_finished.as_ref().unwrap().length, 40);
    assert_eq!(h.server_first_app_data.as_ref().unwrap().length, 16408);
    assert_eq!(s.server().totals.application_data.count, 2);
    assert_eq!(s.server().totals.alert.count, 1);
}

#[test]
fn openssl_tls12_resumption() {
    for name in ["tls12_resume_ticket", "tls12_resume_session_id"] {
        let s = real(name);
        let h = s.handshake().unwrap();
        assert_eq!(h.kind, HandshakeKind::Tls12Abbreviated, "{name}");
        assert!(h.resumption_offered && h.resumption_accepted, "{name}");
        assert!(h.new_session_tickets.is_empty());
        assert_eq!(h.server_finished, h.server_flight_end);
        assert!(h.client_finished.is_some() && h.server_first_app_data.is_some());
    }
    let s = real("tls12_resume_ticket");
    assert!(s.client_hello.as_ref().unwrap().session_ticket.unwrap() > 0);
}

#[test]
fn openssl_tls13_full_and_psk() {
    let s = real("tls13_full");
    let h = s.handshake().unwrap();
    assert_eq!((h.kind, h.round_trips), (HandshakeKind::Tls13Full, 1));
    assert_eq!(
        s.cipher_suite(),
        Some((0x1302, Some("TLS_AES_256_GCM_SHA384")))
    );
    // EE, Certificate, CertificateVerify, Finished (69 B with SHA-384).
    assert_eq!(h.server_finished.as_ref().unwrap().length, 69);
    assert_eq!(h.server_finished.as_ref().unwrap().record, 5);
    assert_eq!(h.client_finished.as_ref().unwrap().length, 69);
    assert_eq!(h.new_session_tickets.len(), 2);
    assert_eq!(h.server_first_app_data.as_ref().unwrap().length, 16401);
    assert!(!h.resumption_offered);

    let s = real("tls13_psk");
    let h = s.handshake().unwrap();
    assert_eq!(h.kind, HandshakeKind::Tls13Psk);
    assert!(h.resumption_offered && h.resumption_accepted);
    assert_eq!(h.new_session_tickets.len(), 1);
    assert!(h.server_first_app_data.is_some() && h.client_first_app_data.is_some());
}

#[test]
fn openssl_tls13_hello_retry() {
    let s = real("tls13_hrr");
    let h = s.handshake().unwrap();
    assert!(h.hello_retry);
    assert_eq!((h.kind, h.round_trips), (HandshakeKind::Tls13Full, 2));
    assert_eq!(s.hello_retry_request().unwrap().key_share_group, Some(0x1d));
    assert_eq!(h.client_finished.as_ref().unwrap().length, 53);
    assert_eq!(h.new_session_tickets.len(), 2);
}

#[test]
fn openssl_tls13_0rtt() {
    let s = real("tls13_0rtt");
    let h = s.handshake().unwrap();
    assert_eq!((h.kind, h.round_trips), (HandshakeKind::Tls13ZeroRtt, 0));
    assert_eq!(h.early_data.accepted, Some(true));
    assert_eq!(h.early_data.records, 1);
    // OpenSSL's stateful tickets with 0-RTT are 82 B.
    assert_eq!(h.new_session_tickets.len(), 1);
    assert_eq!(h.new_session_tickets[0].length, 82);
    // The server sent no response, the client nothing after its Finished
    // but close_notify.
    assert_eq!(h.client_first_app_data, None);
    assert_eq!(h.server_first_app_data, None);
}

// ---------------------------------------------------------------------------
// Properties

fn all_convs() -> Vec<Conv> {
    let mut v: Vec<Conv> = fixtures().into_iter().map(|(_, c)| c).collect();
    v.extend([tls12_full(), tls13_full(), tls13_psk_early(), hello_retry()]);
    v
}

/// Pushes `conv` with every segment cut at the given relative points
/// (each piece keeps its segment's mark); segments listed in `drop` become
/// gaps.
fn run_cut(conv: &Conv, cuts: &[usize], drop: &[usize]) -> TlsTracker {
    let mut t = TlsTracker::new();
    for (i, (side, frame, off, data)) in conv.segs.iter().enumerate() {
        if drop.contains(&i) {
            t.gap(*side, *off, data.len() as u64);
            continue;
        }
        let mut points: Vec<usize> = cuts
            .iter()
            .map(|c| c.wrapping_mul(i + 1) % (data.len() + 1))
            .collect();
        points.push(0);
        points.push(data.len());
        points.sort_unstable();
        for w in points.windows(2) {
            t.push(*side, off + w[0] as u64, &data[w[0]..w[1]], mark(*frame));
        }
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn chunking_is_invisible(which in 0usize..11, cuts in proptest::collection::vec(0usize..100_000, 0..12)) {
        let convs = all_convs();
        let conv = &convs[which % convs.len()];
        let whole = conv.run().into_summary();
        prop_assert_eq!(run_cut(conv, &cuts, &[]).into_summary(), whole);
    }

    #[test]
    fn mutated_streams_never_panic(
        which in 0usize..11,
        flips in proptest::collection::vec((0usize..1_000_000, any::<u8>()), 0..8),
        drop in proptest::collection::vec(0usize..40, 0..3),
        cuts in proptest::collection::vec(0usize..100_000, 0..8),
    ) {
        let mut conv = all_convs().swap_remove(which % 11);
        let n = conv.segs.len();
        for (pos, byte) in flips {
            let seg = &mut conv.segs[pos % n].3;
            if !seg.is_empty() {
                let i = pos % seg.len();
                seg[i] ^= byte;
            }
        }
        let t = run_cut(&conv, &cuts, &drop);
        let s = t.summary();
        let _ = (s.handshake(), s.resumption_offered(), s.resumption_accepted(), t.is_tls());
        let _ = serde_json::to_string(s).unwrap();
    }
}

/// Real OpenSSL hellos (every fixture, TLS 1.2 and 1.3, resumed, 0-RTT,
/// HelloRetryRequest) keep their short lists inline: a hello costs no
/// allocation for them (issue 27: per-connection state sized for crowds).
#[test]
fn hello_lists_stay_inline() {
    let mut listed = 0;
    for (name, _) in fixtures() {
        let s = real(name);
        let hellos = [s.client_hello.as_ref(), s.second_client_hello.as_deref()];
        for ch in hellos.into_iter().flatten() {
            listed += usize::from(!ch.supported_versions.is_empty());
            assert!(
                !ch.supported_versions.spilled()
                    && !ch.key_share_groups.spilled()
                    && !ch.psk_key_exchange_modes.spilled(),
                "{name}: {ch:?}"
            );
        }
        let servers = [s.server_hello(), s.hello_retry_request()];
        assert!(servers.iter().any(Option::is_some), "{name}");
    }
    // the five TLS 1.3 ClientHellos (two after a HelloRetryRequest) listed
    // their versions, groups and PSK modes
    assert_eq!(listed, 5);
}
