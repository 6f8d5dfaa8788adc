//! Handshake classification over both directions (docs/design.md §2
//! "Handshake kinds", §4 "TLS without keys"). TLS 1.2 is read from its
//! plaintext messages; TLS 1.3 hides everything after the ServerHello in
//! type-23 records, so its steps come from record order across the two
//! directions (by frame number: frames are global and increasing) and record
//! sizes. The rules, each with its source, are on [`Handshake`].

use smallvec::SmallVec;

use super::hello::is_tls13;
use super::{
    ClientHelloInfo, ContentType, HandshakeMessage, HandshakeType, ServerHelloInfo, TlsDirection,
    TlsRecord, TlsSummary,
};
use crate::base::side::{FrameRef, Side};

/// Handshake kinds, named as in docs/design.md §2 "Handshake kinds".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum HandshakeKind {
    /// TLS 1.2 full handshake: 2 RTT before the client's first application
    /// byte (RFC 5246 §7.3 fig. 1).
    #[serde(rename = "tls12-full")]
    Tls12Full,
    /// TLS 1.2 abbreviated handshake (session id or ticket resumption): 1 RTT
    /// (RFC 5246 §7.3 fig. 2, RFC 5077 §3.1).
    #[serde(rename = "tls12-abbreviated")]
    Tls12Abbreviated,
    /// TLS 1.3 full handshake: 1 RTT (RFC 8446 §2).
    #[serde(rename = "tls13-full")]
    Tls13Full,
    /// TLS 1.3 PSK resumption: 1 RTT (RFC 8446 §2.2).
    #[serde(rename = "tls13-psk")]
    Tls13Psk,
    /// TLS 1.3 0-RTT: the request rides with the ClientHello (RFC 8446 §2.3).
    #[serde(rename = "tls13-0rtt")]
    Tls13ZeroRtt,
}

impl HandshakeKind {
    /// The docs/design.md §2 name (`"tls12-full"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            HandshakeKind::Tls12Full => "tls12-full",
            HandshakeKind::Tls12Abbreviated => "tls12-abbreviated",
            HandshakeKind::Tls13Full => "tls13-full",
            HandshakeKind::Tls13Psk => "tls13-psk",
            HandshakeKind::Tls13ZeroRtt => "tls13-0rtt",
        }
    }

    /// Nominal round trips the handshake puts before the client's first
    /// application byte (0 for 0-RTT), without a HelloRetryRequest.
    pub fn round_trips(self) -> u8 {
        match self {
            HandshakeKind::Tls12Full => 2,
            HandshakeKind::Tls12Abbreviated
            | HandshakeKind::Tls13Full
            | HandshakeKind::Tls13Psk => 1,
            HandshakeKind::Tls13ZeroRtt => 0,
        }
    }
}

/// One step of the handshake: a record (or a plaintext handshake message) of
/// one direction and the segments that carried it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Step {
    /// The sender.
    pub(crate) side: Side,
    /// Index of the record (for a message: of the record carrying its first
    /// byte) in [`TlsDirection::records`].
    pub record: u64,
    /// Stream offset of the record header (for a message: of its header).
    pub(crate) offset: u64,
    /// Record payload length (for a message: its body length), in bytes.
    pub length: u32,
    /// Segment that carried its first byte.
    pub first: FrameRef,
    /// Segment that delivered its last byte (`None` if not seen).
    pub complete: Option<FrameRef>,
}

impl Step {
    fn record(side: Side, r: &TlsRecord) -> Step {
        Step {
            side,
            record: r.index(),
            offset: r.offset,
            length: u32::from(r.length),
            first: r.first,
            complete: r.complete,
        }
    }

    fn message(side: Side, m: &HandshakeMessage) -> Step {
        Step {
            side,
            record: m.record,
            offset: m.offset,
            length: m.length,
            first: m.first,
            complete: m.complete,
        }
    }

    fn client_hello(ch: &ClientHelloInfo) -> Step {
        Step {
            side: Side::Client,
            record: ch.record,
            offset: ch.offset,
            length: ch.length,
            first: ch.first,
            complete: Some(ch.complete),
        }
    }

    fn server_hello(sh: &ServerHelloInfo) -> Step {
        Step {
            side: Side::Server,
            record: sh.record,
            offset: sh.offset,
            length: sh.length,
            first: sh.first,
            complete: Some(sh.complete),
        }
    }
}

/// TLS 1.3 early data (0-RTT, RFC 8446 §2.3, §4.2.10).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct EarlyData {
    /// The (first) ClientHello carried the `early_data` extension.
    pub offered: bool,
    /// Client type-23 records taken for early data (see [`Handshake`]).
    pub records: u32,
    /// Their payload bytes.
    pub bytes: u64,
    /// The first of them.
    pub first: Option<Step>,
    /// `Some(true)` if the client's Finished was preceded by an
    /// EndOfEarlyData, which a client sends only when the server accepted
    /// early data (RFC 8446 §4.5), recognised by record size (a record of
    /// `4 + 1 + tag` bytes, or EndOfEarlyData and Finished coalesced in one);
    /// `Some(false)` when the Finished came alone, the PSK was not accepted,
    /// or after a HelloRetryRequest (§4.2.10); `None` when unknown.
    pub accepted: Option<bool>,
}

/// The handshake of one connection, classified, with the marks the ladder
/// of phases needs.
///
/// Rules (docs/design.md §4 "TLS without keys", RFC sections inline):
///
/// - **Version**: the ServerHello's `supported_versions` (`0x0304` = TLS 1.3,
///   RFC 8446 §4.2.1), else its `legacy_version`. TLS 1.0/1.1 follow the 1.2
///   message flow and get the `tls12-*` kinds with their own `version`.
/// - **TLS 1.2** (and older), from the plaintext messages: a Certificate,
///   ServerKeyExchange, CertificateRequest or ServerHelloDone after the
///   ServerHello means a full handshake (RFC 5246 §7.3 fig. 1); else a
///   session id echo (§7.4.1.3) or a server ChangeCipherSpec means an
///   abbreviated one (fig. 2); with neither yet, no classification. Client
///   and server Finished are each side's first opaque handshake record after
///   its ChangeCipherSpec;
///   NewSessionTicket is the plaintext message (RFC 5077 §3.3); the first
///   application data is each side's first type-23 record.
/// - **TLS 1.3 client Finished**: the client's first type-23 record after
///   the (answered) ClientHello; a compatibility ChangeCipherSpec before it
///   is type 20 and does not count. With early data offered, records first
///   seen before the ServerHello are early data (docs/design.md §4 "TLS
///   without keys"), and the Finished is the first later record of the
///   Finished size —
///   `4 + hash + 1 + tag` bytes (53 with SHA-256 suites, 69 with SHA-384,
///   AEAD tag 16, no padding; RFC 8446 §4.4.4, §5.2) — alone or coalesced
///   with an EndOfEarlyData; records between are early data too.
/// - **TLS 1.3 server flight**: the server's type-23 records after the
///   ServerHello whose first byte was seen before the client Finished's
///   ("the records before the client speaks again"); its last record is
///   [`Handshake::server_flight_end`]. The server Finished is the last of them
///   of the Finished size, else the last of them. Records after it but still
///   before the client Finished are 0.5-RTT data (RFC 8446 §2.3), e.g. the
///   answer to an accepted 0-RTT request.
/// - **TLS 1.3 NewSessionTicket** (heuristic): a run of server type-23
///   records first seen after the client Finished completed, each of
///   [`NST_LEN_MIN`]..=[`NST_LEN_MAX`] bytes, at most [`NST_MAX_COUNT`].
///   Tickets usually run ~100–300 B; OpenSSL 3.0's stateful tickets (used
///   with 0-RTT) are 82 B, hence the wider range. The tickets of one run
///   come from one code path with nonces of one size, so a record more than
///   `NST_RUN_SPREAD` (16) bytes longer or shorter than the run's first ends
///   the run (a small response after OpenSSL's two 290 B tickets). A small
///   first response record right after the client Finished, before any
///   ticket, would still be taken for a ticket.
/// - **TLS 1.3 application data**: the first type-23 record after the
///   client Finished (client) and the first after the server flight that is
///   not a ticket (server). A record of `2 + 1 + tag` bytes is taken to be an
///   encrypted alert (close_notify), not data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Handshake {
    /// Negotiated version (`0x0303` = TLS 1.2, `0x0304` = TLS 1.3).
    pub version: u16,
    /// Kind (docs/design.md §2 "Handshake kinds").
    pub kind: HandshakeKind,
    /// The server sent a HelloRetryRequest (+1 RTT, RFC 8446 §4.1.4).
    pub hello_retry: bool,
    /// Nominal round trips before the client's first application byte:
    /// [`HandshakeKind::round_trips`] + 1 with a HelloRetryRequest.
    pub round_trips: u8,
    /// The client offered resumption ([`TlsSummary::resumption_offered`]).
    pub resumption_offered: bool,
    /// The server accepted it: TLS 1.2 abbreviated, TLS 1.3 `pre_shared_key`
    /// in the ServerHello.
    pub resumption_accepted: bool,
    /// Early data (TLS 1.3).
    pub early_data: EarlyData,
    /// The first ClientHello (message).
    pub client_hello: Step,
    /// The HelloRetryRequest (message).
    pub hello_retry_request: Option<Step>,
    /// The ClientHello that answered the HelloRetryRequest (message).
    pub second_client_hello: Option<Step>,
    /// The ServerHello (message).
    pub server_hello: Step,
    /// End of the server's first flight: TLS 1.2 full: ServerHelloDone
    /// (message); TLS 1.2 abbreviated: the server Finished record; TLS 1.3:
    /// the last record of the server flight.
    pub server_flight_end: Option<Step>,
    /// The client's Finished record.
    pub client_finished: Option<Step>,
    /// The server's Finished record.
    pub server_finished: Option<Step>,
    /// NewSessionTickets: TLS 1.2 plaintext messages, TLS 1.3 records (by the
    /// heuristic above).
    pub new_session_tickets: Vec<Step>,
    /// The client's first application-data record after the handshake.
    pub client_first_app_data: Option<Step>,
    /// The server's first application-data record after the handshake. Its
    /// `complete` mark is the first-decrypted-byte time (docs/design.md §4
    /// "Large records").
    pub server_first_app_data: Option<Step>,
}

/// Smallest TLS 1.3 record taken for a NewSessionTicket, bytes.
pub const NST_LEN_MIN: u16 = 40;
/// Largest TLS 1.3 record taken for a NewSessionTicket, bytes.
pub const NST_LEN_MAX: u16 = 640;
/// Most TLS 1.3 NewSessionTicket records looked for after the client Finished.
pub const NST_MAX_COUNT: usize = 8;
/// Bytes the tickets of one run may differ by (a ticket's nonce and
/// lifetime fields are of fixed size; its opaque ticket rarely varies).
pub const NST_RUN_SPREAD: u32 = 16;

/// Sizes of encrypted TLS 1.3 records with a known content: `content || type
/// (1 byte)` plus the AEAD tag, without padding (RFC 8446 §5.2).
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Finished alone: 4 + hash + 1 + tag (RFC 8446 §4.4.4).
    finished: u16,
    /// EndOfEarlyData alone: 4 + 1 + tag (RFC 8446 §4.5).
    eoed: u16,
    /// EndOfEarlyData and Finished in one record.
    eoed_finished: u16,
    /// An alert: 2 + 1 + tag.
    alert: u16,
}

impl Sizes {
    fn for_suite(suite: u16) -> Sizes {
        // RFC 8446 §B.4: only TLS_AES_256_GCM_SHA384 (0x1302) uses SHA-384;
        // only TLS_AES_128_CCM_8_SHA256 (0x1305) has an 8-byte tag.
        let hash = if suite == 0x1302 { 48 } else { 32 };
        let tag = if suite == 0x1305 { 8 } else { 16 };
        Sizes {
            finished: 4 + hash + 1 + tag,
            eoed: 4 + 1 + tag,
            eoed_finished: 4 + 4 + hash + 1 + tag,
            alert: 2 + 1 + tag,
        }
    }
}

impl TlsSummary {
    /// Classification of the handshake and its key marks; `None` until both
    /// hellos were seen (or when the server's answer cannot be classified).
    /// See [`Handshake`] for the rules.
    pub fn handshake(&self) -> Option<Handshake> {
        classify(self)
    }

    /// Did the server accept resumption? `None` until classified; see
    /// [`Handshake::resumption_accepted`].
    pub fn resumption_accepted(&self) -> Option<bool> {
        self.handshake().map(|h| h.resumption_accepted)
    }
}

fn classify(s: &TlsSummary) -> Option<Handshake> {
    let ch = s.client_hello.as_ref()?;
    let sh = s.server_hello()?;
    let hello_retry = s.hello_retry_request().is_some();
    let version = sh.version();
    let mut h = Handshake {
        version,
        kind: HandshakeKind::Tls13Full,
        hello_retry,
        round_trips: 0,
        resumption_offered: s.resumption_offered(),
        resumption_accepted: false,
        early_data: EarlyData {
            offered: ch.early_data,
            ..EarlyData::default()
        },
        client_hello: Step::client_hello(ch),
        hello_retry_request: s.hello_retry_request().map(Step::server_hello),
        second_client_hello: s.second_client_hello.as_deref().map(Step::client_hello),
        server_hello: Step::server_hello(sh),
        server_flight_end: None,
        client_finished: None,
        server_finished: None,
        new_session_tickets: Vec::new(),
        client_first_app_data: None,
        server_first_app_data: None,
    };
    if is_tls13(version) {
        tls13(s, ch, sh, &mut h);
    } else {
        tls12(s, ch, sh, &mut h)?;
    }
    h.round_trips = h.kind.round_trips() + u8::from(hello_retry);
    Some(h)
}

fn tls12(
    s: &TlsSummary,
    ch: &ClientHelloInfo,
    sh: &ServerHelloInfo,
    h: &mut Handshake,
) -> Option<()> {
    let (client, server) = (&s.client, s.server());
    let full = server.messages.iter().any(|m| {
        m.offset > sh.offset
            && matches!(
                m.msg_type,
                HandshakeType::CERTIFICATE
                    | HandshakeType::SERVER_KEY_EXCHANGE
                    | HandshakeType::CERTIFICATE_REQUEST
                    | HandshakeType::SERVER_HELLO_DONE
            )
    });
    let echo = !ch.session_id.is_empty() && ch.session_id == sh.session_id;
    h.kind = if full {
        HandshakeKind::Tls12Full
    } else if echo || server.change_cipher_spec.is_some() {
        HandshakeKind::Tls12Abbreviated
    } else {
        // Nothing after the ServerHello yet: cannot tell.
        return None;
    };
    h.resumption_accepted = h.kind == HandshakeKind::Tls12Abbreviated;
    let finished = |d: &TlsDirection| {
        d.encrypted_handshake
            .and_then(|i| d.record(i))
            .map(|r| Step::record(d.side, r))
    };
    h.client_finished = finished(client);
    h.server_finished = finished(server);
    h.server_flight_end = if full {
        server
            .message(HandshakeType::SERVER_HELLO_DONE)
            .map(|m| Step::message(Side::Server, m))
    } else {
        h.server_finished.clone()
    };
    h.new_session_tickets = server
        .messages
        .iter()
        .filter(|m| m.msg_type == HandshakeType::NEW_SESSION_TICKET)
        .map(|m| Step::message(Side::Server, m))
        .collect();
    let first_app = |d: &TlsDirection| {
        d.records
            .iter()
            .find(|r| r.content_type == ContentType::APPLICATION_DATA)
            .map(|r| Step::record(d.side, r))
    };
    h.client_first_app_data = first_app(client);
    h.server_first_app_data = first_app(server);
    Some(())
}

/// A direction's detailed type-23 records after record index `after`: on
/// the stack for a handshake's few (a classification costs no allocation).
fn app_records(d: &TlsDirection, after: u64) -> SmallVec<[&TlsRecord; 16]> {
    d.records
        .iter()
        .filter(|r| r.index() > after && r.content_type == ContentType::APPLICATION_DATA)
        .collect()
}

fn tls13(s: &TlsSummary, ch: &ClientHelloInfo, sh: &ServerHelloInfo, h: &mut Handshake) {
    let sizes = Sizes::for_suite(sh.cipher_suite);
    let psk = sh.pre_shared_key.is_some();
    h.resumption_accepted = psk;
    // The ClientHello the ServerHello answers.
    let answered = match (s.hello_retry_request(), &s.second_client_hello) {
        (Some(_), Some(second)) => second.record,
        _ => ch.record,
    };
    let server = app_records(s.server(), sh.record);
    let client = app_records(&s.client, answered);

    let mut early: Vec<&TlsRecord> = Vec::new();
    let finished_at: Option<usize>;
    if h.hello_retry {
        // Early data sent with the first ClientHello is rejected after a
        // HelloRetryRequest (RFC 8446 §4.2.10).
        early = s
            .client
            .records
            .iter()
            .filter(|r| {
                r.index() > ch.record
                    && r.index() < answered
                    && r.content_type == ContentType::APPLICATION_DATA
            })
            .collect();
        h.early_data.accepted = ch.early_data.then_some(false);
        finished_at = (!client.is_empty()).then_some(0);
    } else if ch.early_data {
        // Seen before the ServerHello: sent before the server answered.
        let split = client
            .iter()
            .position(|r| r.first.frame > sh.first.frame)
            .unwrap_or(client.len());
        let (before, after) = client.split_at(split);
        early.extend_from_slice(before);
        let pick = after
            .iter()
            .position(|r| r.length == sizes.finished || r.length == sizes.eoed_finished)
            .or_else(|| {
                // Fallback: the first record after the server's first
                // encrypted record completed (the client cannot finish before).
                let first = server.first()?;
                let seen = first.complete.unwrap_or(first.first).frame;
                after.iter().position(|r| r.first.frame > seen)
            });
        match pick {
            Some(p) => {
                let eoed_before = p > 0 && after[p - 1].length == sizes.eoed;
                early.extend_from_slice(&after[..p - usize::from(eoed_before)]);
                h.early_data.accepted = if !psk {
                    Some(false)
                } else if eoed_before || after[p].length == sizes.eoed_finished {
                    Some(true)
                } else if after[p].length == sizes.finished {
                    Some(false)
                } else {
                    None
                };
                finished_at = Some(split + p);
            }
            None => {
                h.early_data.accepted = (!psk).then_some(false);
                finished_at = None;
            }
        }
    } else {
        finished_at = (!client.is_empty()).then_some(0);
    }
    h.early_data.records = u32::try_from(early.len()).unwrap_or(u32::MAX);
    h.early_data.bytes = early.iter().map(|r| u64::from(r.length)).sum();
    h.early_data.first = early.first().map(|r| Step::record(Side::Client, r));

    h.kind = if psk && !early.is_empty() && h.early_data.accepted != Some(false) {
        HandshakeKind::Tls13ZeroRtt
    } else if psk {
        HandshakeKind::Tls13Psk
    } else {
        HandshakeKind::Tls13Full
    };

    let Some(fin_i) = finished_at else {
        // No client Finished: only the server Finished can be told, by size.
        h.server_finished = server
            .iter()
            .find(|r| r.length == sizes.finished)
            .map(|r| Step::record(Side::Server, r));
        return;
    };
    let cf = client[fin_i];
    h.client_finished = Some(Step::record(Side::Client, cf));
    h.client_first_app_data = client[fin_i + 1..]
        .iter()
        .find(|r| r.length != sizes.alert)
        .map(|r| Step::record(Side::Client, r));

    let flight_len = server
        .iter()
        .take_while(|r| r.first.frame < cf.first.frame)
        .count();
    let (flight, rest) = server.split_at(flight_len);
    h.server_flight_end = flight.last().map(|r| Step::record(Side::Server, r));
    h.server_finished = flight
        .iter()
        .rev()
        .find(|r| r.length == sizes.finished)
        .or(flight.last())
        .map(|r| Step::record(Side::Server, r));
    // Flight records after the server Finished: 0.5-RTT data (RFC 8446 §2.3)
    // when the server accepted early data, else tickets sent before the client
    // Finished (allowed by RFC 8446 §4.6.1) when of ticket size.
    let finished_index = h.server_finished.as_ref().map_or(u64::MAX, |f| f.record);
    let half_rtt = flight.iter().filter(|r| r.index() > finished_index);
    let early_answer = h.early_data.accepted == Some(true);
    let is_ticket = |r: &TlsRecord, tickets: &[Step]| {
        tickets.len() < NST_MAX_COUNT
            && (NST_LEN_MIN..=NST_LEN_MAX).contains(&r.length)
            && tickets
                .first()
                .is_none_or(|t| t.length.abs_diff(u32::from(r.length)) <= NST_RUN_SPREAD)
    };
    let mut first_app: Option<&TlsRecord> = None;
    for &r in half_rtt {
        if r.length == sizes.alert {
            continue;
        }
        if first_app.is_none() && !early_answer && is_ticket(r, &h.new_session_tickets) {
            h.new_session_tickets.push(Step::record(Side::Server, r));
        } else {
            first_app.get_or_insert(r);
        }
    }
    // After the client Finished: a run of tickets, then data.
    let cf_seen = cf.complete.unwrap_or(cf.first).frame;
    for &r in rest {
        if r.length == sizes.alert {
            continue;
        }
        if r.first.frame > cf_seen && is_ticket(r, &h.new_session_tickets) {
            h.new_session_tickets.push(Step::record(Side::Server, r));
            continue;
        }
        first_app.get_or_insert(r);
        break;
    }
    h.server_first_app_data = first_app.map(|r| Step::record(Side::Server, r));
}
