//! TLS without keys: records and the plaintext handshake of one connection,
//! placed by stream offset and by the segments ([`FrameRef`]s) that carried them.
//!
//! [`TlsTracker`] walks each direction's in-order byte stream record by record
//! (5-byte headers, RFC 8446 §5.1; RFC 5246 §6.2), reassembles plaintext
//! handshake messages across records and segments, parses the hellos with
//! tls-parser, and keeps:
//!
//! - per direction ([`TlsDirection`]): the first [`RECORD_DETAIL_CAP`] records
//!   in detail, running [`RecordTotals`] for all, the plaintext handshake
//!   messages, alerts, the first ChangeCipherSpec and the first encrypted
//!   handshake record after it (TLS 1.2 Finished), and where parsing stopped;
//! - for the connection ([`TlsSummary`]): what the ClientHello offered and the
//!   ServerHello chose (also a HelloRetryRequest and the second ClientHello).
//!
//! [`TlsSummary::handshake`] then classifies the handshake (docs/design.md §2
//! "Handshake kinds", §4 "TLS without keys") and finds the marks the ladder
//! needs.
//!
//! # Framing rules
//!
//! - A partial record header means "wait for more"; a record split across
//!   segments is normal.
//! - A gap inside a record's payload keeps sync (the next header's offset is
//!   known); the record's [`TlsRecord::missing`] counts the lost bytes. A gap
//!   that covers any header byte loses sync: the direction stops and
//!   [`TlsDirection::lost_sync_at`] says where.
//! - A content type outside 20–24, a record version not `3.x` or a length
//!   above 2^14 + 2048 (RFC 5246 §6.2.3, the largest `TLSCiphertext`) on a
//!   synchronised stream is [`TlsDirection::malformed_at`]: that direction
//!   stops, without error or panic.
//!
//! # Memory
//!
//! Record payloads are never buffered. Handshake messages are walked by their
//! 4-byte headers; only ClientHello and ServerHello bodies are buffered (up to
//! [`PARSE_BUFFER_CAP`](crate::proto::PARSE_BUFFER_CAP)), everything else is
//! counted by length.

pub mod decrypt;
mod handshake;
pub(crate) mod hello;
mod messages;
mod record;
mod summary;

use crate::base::side::{FrameRef, Side};
use crate::capture::keylog::KeyStore;
use crate::proto::Notes;
use decrypt::{Decryption, Decryptor, Hellos, Plain};
use summary::ServerSide;

pub use summary::TlsSummary;

pub use handshake::{
    EarlyData, Handshake, HandshakeKind, Step, NST_LEN_MAX, NST_LEN_MIN, NST_MAX_COUNT,
};
pub use hello::{
    cipher_suite_name, version_name, ClientHelloInfo, ServerHelloInfo, HELLO_RETRY_REQUEST_RANDOM,
};

/// Records kept in detail per direction ([`TlsDirection::records`]); later
/// records only count in [`TlsDirection::totals`]. 64 covers every handshake
/// seen in practice (the TLS 1.3 0-RTT case aside, when a client sends more
/// than ~60 early-data records before its Finished).
pub const RECORD_DETAIL_CAP: usize = 64;
/// Plaintext handshake messages kept per direction.
pub const MESSAGE_DETAIL_CAP: usize = 32;
/// Alerts kept per direction.
pub const ALERT_DETAIL_CAP: usize = 8;
/// Largest record payload accepted: `TLSCiphertext.length` ≤ 2^14 + 2048
/// (RFC 5246 §6.2.3). TLS 1.3 allows only 2^14 + 256 (RFC 8446 §5.2), so this
/// accepts both.
pub(crate) const MAX_RECORD_LEN: u16 = (1 << 14) + 2048;

/// A TLS record content type (RFC 8446 §5.1, RFC 6520 for heartbeat), kept
/// open: the number is the data, the constants name the known values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct ContentType(pub u8);

impl ContentType {
    /// `change_cipher_spec` (20).
    pub const CHANGE_CIPHER_SPEC: ContentType = ContentType(20);
    /// `alert` (21).
    pub const ALERT: ContentType = ContentType(21);
    /// `handshake` (22).
    pub const HANDSHAKE: ContentType = ContentType(22);
    /// `application_data` (23); in TLS 1.3 also every encrypted handshake
    /// message and alert.
    pub const APPLICATION_DATA: ContentType = ContentType(23);
    /// `heartbeat` (24, RFC 6520).
    pub const HEARTBEAT: ContentType = ContentType(24);

    /// Wireshark-style name, or `None` for an unknown value.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            20 => "change_cipher_spec",
            21 => "alert",
            22 => "handshake",
            23 => "application_data",
            24 => "heartbeat",
            _ => return None,
        })
    }
}

/// A TLS handshake message type (RFC 8446 §4, RFC 5246 §7.4), kept open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct HandshakeType(pub u8);

impl HandshakeType {
    /// `client_hello` (1).
    pub const CLIENT_HELLO: HandshakeType = HandshakeType(1);
    /// `server_hello` (2); also a TLS 1.3 HelloRetryRequest.
    pub const SERVER_HELLO: HandshakeType = HandshakeType(2);
    /// `new_session_ticket` (4).
    pub const NEW_SESSION_TICKET: HandshakeType = HandshakeType(4);
    /// `end_of_early_data` (5).
    pub const END_OF_EARLY_DATA: HandshakeType = HandshakeType(5);
    /// `encrypted_extensions` (8).
    pub const ENCRYPTED_EXTENSIONS: HandshakeType = HandshakeType(8);
    /// `certificate` (11).
    pub const CERTIFICATE: HandshakeType = HandshakeType(11);
    /// `server_key_exchange` (12, TLS ≤ 1.2).
    pub const SERVER_KEY_EXCHANGE: HandshakeType = HandshakeType(12);
    /// `certificate_request` (13).
    pub const CERTIFICATE_REQUEST: HandshakeType = HandshakeType(13);
    /// `server_hello_done` (14, TLS ≤ 1.2).
    pub const SERVER_HELLO_DONE: HandshakeType = HandshakeType(14);
    /// `certificate_verify` (15).
    pub const CERTIFICATE_VERIFY: HandshakeType = HandshakeType(15);
    /// `client_key_exchange` (16, TLS ≤ 1.2).
    pub const CLIENT_KEY_EXCHANGE: HandshakeType = HandshakeType(16);
    /// `finished` (20).
    pub const FINISHED: HandshakeType = HandshakeType(20);
    /// `certificate_status` (22, RFC 6066 OCSP stapling in TLS ≤ 1.2).
    pub const CERTIFICATE_STATUS: HandshakeType = HandshakeType(22);

    /// RFC name, or `None` for an unknown value.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "hello_request",
            1 => "client_hello",
            2 => "server_hello",
            4 => "new_session_ticket",
            5 => "end_of_early_data",
            8 => "encrypted_extensions",
            11 => "certificate",
            12 => "server_key_exchange",
            13 => "certificate_request",
            14 => "server_hello_done",
            15 => "certificate_verify",
            16 => "client_key_exchange",
            20 => "finished",
            22 => "certificate_status",
            24 => "key_update",
            _ => return None,
        })
    }
}

/// One TLS record of one direction.
///
/// 56 bytes: a TLS connection keeps up to [`RECORD_DETAIL_CAP`] of them
/// per direction, so their fields are as narrow as their ranges allow.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TlsRecord {
    /// Stream offset of the record header's first byte.
    pub offset: u64,
    /// Segment that carried the header's first byte.
    pub first: FrameRef,
    /// Segment that delivered the record's last byte; `None` while the record
    /// is incomplete, or when its last byte fell in a capture gap.
    pub complete: Option<FrameRef>,
    /// Position among this direction's records (0 = first; the detailed
    /// ones are the first [`RECORD_DETAIL_CAP`], the only ones kept), see
    /// [`TlsRecord::index`].
    pub(crate) position: u8,
    /// Payload length in bytes (without the header).
    pub length: u16,
    /// Header length in bytes: 5, or 2 for an SSL 2.0 record holding a
    /// ClientHello (RFC 5246 Appendix E.2).
    #[serde(skip)]
    pub header_len: u8,
    /// Payload bytes the capture never saw (gaps), 0 normally; at most
    /// [`length`](Self::length).
    pub missing: u16,
    /// Content type.
    pub content_type: ContentType,
    /// The payload is encrypted (or otherwise unreadable): always for type
    /// 23 and 24; for a handshake record after this direction's
    /// ChangeCipherSpec unless it reads as a plaintext hello (TLS 1.3
    /// compatibility CCS around a HelloRetryRequest, RFC 8446 §D.4); for an
    /// alert record whose length is not 2.
    pub opaque: bool,
}

const _: () = assert!(RECORD_DETAIL_CAP <= u8::MAX as usize);

impl TlsRecord {
    /// Position among this direction's records (0 = first).
    pub(crate) fn index(&self) -> u64 {
        u64::from(self.position)
    }

    /// Stream offset just past the record (header + payload).
    pub fn end_offset(&self) -> u64 {
        self.offset + u64::from(self.header_len) + u64::from(self.length)
    }
}

/// Count and payload sizes of one content type's records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordStats {
    /// Records.
    pub count: u64,
    /// Sum of payload lengths, in bytes.
    pub bytes: u64,
    /// Smallest payload length, bytes (`None` without records).
    pub min_len: Option<u16>,
    /// Largest payload length, bytes (`None` without records).
    pub max_len: Option<u16>,
}

impl RecordStats {
    fn add(&mut self, len: u16) {
        self.count += 1;
        self.bytes += u64::from(len);
        self.min_len = Some(self.min_len.map_or(len, |m| m.min(len)));
        self.max_len = Some(self.max_len.map_or(len, |m| m.max(len)));
    }
}

/// Aggregates over all records of one direction whose header was read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordTotals {
    /// All records.
    pub all: RecordStats,
    /// `change_cipher_spec` records.
    pub change_cipher_spec: RecordStats,
    /// `alert` records.
    pub alert: RecordStats,
    /// `handshake` records.
    pub(crate) handshake: RecordStats,
    /// `application_data` records (in TLS 1.3 including the encrypted
    /// handshake).
    pub application_data: RecordStats,
    /// `heartbeat` records.
    pub(crate) heartbeat: RecordStats,
    /// Records with payload bytes missing from the capture.
    pub with_gaps: u64,
}

/// A plaintext handshake message (reassembled across records and segments).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HandshakeMessage {
    /// Message type.
    pub msg_type: HandshakeType,
    /// Body length from its 4-byte header, in bytes (e.g. the size of a
    /// Certificate chain message).
    pub length: u32,
    /// Index of the record that carried its first byte.
    pub(crate) record: u64,
    /// Stream offset of its header's first byte.
    pub(crate) offset: u64,
    /// Segment that carried its first byte.
    pub first: FrameRef,
    /// Segment that delivered its last byte (`None` if incomplete or its last
    /// byte fell in a gap).
    pub complete: Option<FrameRef>,
    /// Body bytes missing from the capture.
    pub missing: u32,
}

/// A TLS alert record (RFC 8446 §6).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TlsAlert {
    /// Index of the record.
    pub(crate) record: u64,
    /// Segment that carried the record's first byte.
    pub(crate) first: FrameRef,
    /// `AlertLevel` (1 = warning, 2 = fatal) when plaintext.
    pub level: Option<u8>,
    /// `AlertDescription` (0 = close_notify, 40 = handshake_failure, …) when
    /// plaintext.
    pub description: Option<u8>,
}

/// What was seen of one direction (one sender) of a TLS connection.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TlsDirection {
    /// The sender.
    pub(crate) side: Side,
    /// Stream bytes seen, in bytes (gaps excluded).
    pub(crate) bytes_seen: u64,
    /// Stream bytes reported missing by gaps, in bytes.
    pub bytes_missing: u64,
    /// The first [`RECORD_DETAIL_CAP`] records, in stream order (the last one
    /// may be incomplete).
    pub records: Vec<TlsRecord>,
    /// Aggregates over all records.
    pub totals: RecordTotals,
    /// The first [`MESSAGE_DETAIL_CAP`] plaintext handshake messages.
    pub messages: Vec<HandshakeMessage>,
    /// The first [`ALERT_DETAIL_CAP`] alerts.
    pub alerts: Vec<TlsAlert>,
    /// All alert records.
    pub alert_count: u64,
    /// Index of the first ChangeCipherSpec record.
    pub(crate) change_cipher_spec: Option<u64>,
    /// Index of the first opaque handshake record after the first
    /// ChangeCipherSpec: the encrypted Finished in TLS 1.2 (RFC 5246
    /// §7.4.9).
    pub encrypted_handshake: Option<u64>,
    /// Stream offset of the record header that a capture gap made
    /// unreadable; parsing of this direction stopped there.
    pub lost_sync_at: Option<u64>,
    /// Stream offset of the record header that was malformed (see
    /// [`NoteKind::Malformed`](crate::proto::NoteKind::Malformed));
    /// parsing of this direction stopped there.
    pub malformed_at: Option<u64>,
    /// Notes on this direction.
    pub notes: Notes,
}

impl TlsDirection {
    fn new(side: Side) -> Self {
        TlsDirection {
            side,
            bytes_seen: 0,
            bytes_missing: 0,
            records: Vec::new(),
            totals: RecordTotals::default(),
            messages: Vec::new(),
            alerts: Vec::new(),
            alert_count: 0,
            change_cipher_spec: None,
            encrypted_handshake: None,
            lost_sync_at: None,
            malformed_at: None,
            notes: Notes::default(),
        }
    }

    /// The record with this index, if it is among the detailed ones.
    pub(crate) fn record(&self, index: u64) -> Option<&TlsRecord> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.records.get(i))
    }

    /// The first plaintext handshake message of type `t`.
    pub fn message(&self, t: HandshakeType) -> Option<&HandshakeMessage> {
        self.messages.iter().find(|m| m.msg_type == t)
    }
}

/// Tracks the TLS layer of one TCP connection, both directions (see the
/// [module docs](self) and [`crate::proto`] for the input model).
#[derive(Debug)]
pub struct TlsTracker {
    summary: TlsSummary,
    client: record::DirParser,
    /// The server's walker, made with the summary's server side (boxed for
    /// the same reason).
    server: Option<Box<record::DirParser>>,
    /// With a key log: the records' decryption.
    decrypt: Option<Box<Decryptor>>,
}

impl Default for TlsTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl TlsTracker {
    /// A tracker that has seen nothing yet.
    pub fn new() -> Self {
        TlsTracker {
            summary: TlsSummary::new(),
            client: record::DirParser::default(),
            server: None,
            decrypt: None,
        }
    }

    /// A tracker that decrypts the records with the secrets of `keys` (see
    /// [`decrypt`]); the protocol layer takes the plaintext as it comes.
    pub fn with_keys(keys: KeyStore) -> Self {
        let mut t = Self::new();
        t.client.collect = true;
        t.decrypt = Some(Box::new(Decryptor::new(keys)));
        t
    }

    /// Bytes `data` sent by `side` at stream `offset`, delivered by the
    /// segment `at`. Cheap no-op once [`TlsTracker::is_tls`] is `Some(false)`.
    pub fn push(&mut self, side: Side, offset: u64, data: &[u8], at: FrameRef) {
        if self.is_tls() == Some(false) {
            return;
        }
        let (parser, mut out) = self.split(side);
        parser.push(offset, data, at, &mut out);
        self.decrypt_sealed(side);
    }

    /// Hands the records `side`'s walker kept to the decryptor, starting it
    /// once both hellos are known.
    fn decrypt_sealed(&mut self, side: Side) {
        let Some(d) = self.decrypt.as_mut() else {
            return;
        };
        let parser = match (side, self.server.as_deref_mut()) {
            (Side::Client, _) => &mut self.client,
            (Side::Server, Some(p)) => p,
            (Side::Server, None) => return,
        };
        if d.waiting() {
            let ch = self.summary.client_hello.as_ref();
            match self.summary.server_hello() {
                Some(sh) => d.start(&Hellos {
                    client_random: ch.map(|c| &c.random),
                    server_random: Some(&sh.random),
                    version: sh.version(),
                    cipher_suite: sh.cipher_suite,
                    early_data_offered: ch.is_some_and(|c| c.early_data),
                }),
                // encrypted records before any ClientHello: the capture began
                // after the handshake, no secret can be found (and none of
                // its records is kept waiting)
                None if ch.is_none() && !parser.sealed.is_empty() => d.start(&Hellos {
                    client_random: None,
                    server_random: None,
                    version: 0,
                    cipher_suite: 0,
                    early_data_offered: false,
                }),
                None => {}
            }
        }
        for rec in parser.sealed.drain(..) {
            d.record(side, rec);
        }
        // TLS 1.3 names ALPN's choice in the encrypted EncryptedExtensions
        let server_hello = self.summary.server_side.as_mut();
        if let (Some(sh), Some(alpn)) =
            (server_hello.and_then(|s| s.server_hello.as_mut()), d.alpn())
        {
            if sh.alpn.is_none() {
                sh.alpn = Some(alpn.to_string());
            }
        }
        if !d.wants_records() {
            self.client.collect = false;
            if let Some(p) = self.server.as_deref_mut() {
                p.collect = false;
            }
        }
    }

    /// Decrypted application data (and what could not be decrypted) since
    /// the last call, in each direction's order.
    pub(crate) fn take_plaintext(&mut self, f: impl FnMut(Plain)) {
        if let Some(d) = self.decrypt.as_mut() {
            d.out.drain(..).for_each(f);
        }
    }

    /// The outcome of decryption, when the tracker had keys; ends it.
    pub(crate) fn take_decryption(&mut self) -> Option<Decryption> {
        self.decrypt.take().map(|d| d.finish())
    }

    /// `len` bytes sent by `side` at stream `offset` that the capture never
    /// saw.
    pub fn gap(&mut self, side: Side, offset: u64, len: u64) {
        if self.is_tls() == Some(false) {
            return;
        }
        let (parser, mut out) = self.split(side);
        parser.gap(offset, len, &mut out);
        self.decrypt_sealed(side);
    }

    /// Does this connection carry TLS? Decided by the client's first record:
    /// `Some(true)` once it reads as a handshake record (type 22, version
    /// 3.x, valid length) whose first message byte is ClientHello (1);
    /// `Some(false)` as soon as it cannot be; `None` while undecided. If the
    /// client's stream cannot decide (it began with a gap), the server's first
    /// record decides (handshake or alert). The flow layer can stop feeding a
    /// connection once this is `Some(false)`.
    pub fn is_tls(&self) -> Option<bool> {
        let server = self.server.as_deref();
        match (self.client.looks_tls(), server.and_then(|p| p.looks_tls())) {
            (Some(c), _) => Some(c),
            (None, Some(false)) => Some(false),
            (None, s) if self.client.stopped() => s.or(if server.is_some_and(|p| p.stopped()) {
                Some(false)
            } else {
                None
            }),
            _ => None,
        }
    }

    /// What has been learnt so far.
    pub fn summary(&self) -> &TlsSummary {
        &self.summary
    }

    /// The summary, consuming the tracker (parsing buffers are dropped).
    pub fn into_summary(self) -> TlsSummary {
        self.summary
    }

    /// `side`'s walker and where its messages go; the server's are made at
    /// its first byte (or gap).
    fn split(&mut self, side: Side) -> (&mut record::DirParser, messages::Out<'_>) {
        let TlsSummary {
            client,
            client_hello,
            second_client_hello,
            server_side,
        } = &mut self.summary;
        match side {
            Side::Client => (
                &mut self.client,
                messages::Out::Client {
                    dir: client,
                    client_hello,
                    second_client_hello,
                },
            ),
            Side::Server => {
                let ServerSide {
                    dir,
                    hello_retry_request,
                    server_hello,
                } = &mut **server_side.get_or_insert_with(|| Box::new(ServerSide::new()));
                let collect = self.decrypt.as_ref().is_some_and(|d| d.wants_records());
                let parser = self.server.get_or_insert_with(|| {
                    let mut p = Box::<record::DirParser>::default();
                    p.collect = collect;
                    p
                });
                (
                    parser,
                    messages::Out::Server {
                        dir,
                        hello_retry_request,
                        server_hello,
                    },
                )
            }
        }
    }
}
