//! TLS with keys: the encrypted records of one connection opened with the
//! secrets of a key log ([`KeyStore`]), their plaintext handed on to the
//! protocol inside (HTTP/1.1, HTTP/2).
//!
//! The record walker (`proto/tls/record.rs`) hands every record it could not
//! read (application data, TLS 1.2's records after ChangeCipherSpec) here
//! whole, with the segment that completed it. Once both hellos are known,
//! the connection's secrets are looked up by the ClientHello's random and
//! each direction's records are opened in order:
//!
//! - TLS 1.3 (RFC 8446 §7): a chain of traffic secrets per direction, the
//!   client's early (0-RTT, when offered and logged), handshake and
//!   application secrets, the server's handshake and application secrets.
//!   A direction moves on at a record boundary after the message that ends
//!   a stage: its Finished, EndOfEarlyData, KeyUpdate (§7.2, the next
//!   secret derived from the last). Where the capture cannot say which key
//!   comes next (the client's early data, which the server may have
//!   rejected; a record lost or cut), the next few (key, sequence number)
//!   pairs are tried on a copy; the AEAD tag says which one is right.
//! - TLS 1.2 (RFC 5246 §6.3): one key per direction from the master secret,
//!   from that direction's ChangeCipherSpec on.
//!
//! Nothing is guessed: a record that does not open (wrong or missing keys,
//! bytes cut by the snapshot length or lost to the capture) is counted in
//! [`Decryption`] with the first frame it happened at, and the protocol
//! inside is told its bytes are missing.

pub(crate) mod keys;
pub(crate) mod starts;

use crate::base::side::{FrameRef, Side};
use crate::capture::keylog::{KeyStore, SecretLabel, Secrets};
use keys::{RecordKey, Suite, TAG_LEN};

/// Records held while the keys are not known yet (the client's 0-RTT data
/// before the ServerHello, in capture order); past it they are counted as
/// not decrypted.
const QUEUE_CAP: usize = 64;
/// Bytes of records held while the keys are not known yet.
const QUEUE_BYTES: usize = 256 * 1024;
/// Candidate (key, sequence number) pairs tried for a record whose key the
/// capture cannot tell.
const TRIALS: usize = 4;

/// Why a connection's records were not (all) decrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecryptStatus {
    /// Every record seen under keys was opened.
    Decrypted,
    /// Some records did not open (see [`Decryption::failed`] and
    /// [`Decryption::cut`]).
    Partial,
    /// The key logs hold no secret for this connection's ClientHello
    /// random.
    NoKeys,
    /// The capture has no ClientHello or ServerHello for this connection
    /// (it began after the handshake): its secrets cannot be found.
    NoHandshake,
    /// The negotiated cipher suite is not one we decrypt (CBC suites,
    /// export or NULL suites).
    UnsupportedSuite,
    /// The secrets were found but no record opened with them (wrong keys:
    /// a key log of another run).
    WrongKeys,
}

/// What decryption did on one connection.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Decryption {
    /// The outcome.
    pub status: DecryptStatus,
    /// Records opened, client's and server's.
    pub records: [u64; 2],
    /// Plaintext bytes of application data, client's and server's.
    pub app_bytes: [u64; 2],
    /// Records that did not open with the keys (whole in the capture).
    pub failed: u64,
    /// Records whose bytes the capture lacks (snapshot length, drops):
    /// not tried.
    pub cut: u64,
    /// The first record that did not open or was cut: the segment that
    /// carried its first byte.
    pub first_failure: Option<FrameRef>,
    /// Where the server's application records began on the wire.
    #[serde(skip)]
    pub(crate) starts: starts::RecordStarts,
}

/// A record the walker could not read, handed over whole.
#[derive(Debug)]
pub(crate) struct Sealed {
    /// Its 5-byte header as on the wire (the AEAD's additional data).
    pub(crate) header: [u8; 5],
    /// Its payload; shorter than the header says when `cut`.
    pub(crate) payload: Vec<u8>,
    /// Segment that carried its first byte.
    pub(crate) first: FrameRef,
    /// Segment that completed it (`None` when its last byte was lost).
    pub(crate) complete: Option<FrameRef>,
    /// Bytes of it are missing from the capture.
    pub(crate) cut: bool,
}

impl Sealed {
    fn length(&self) -> usize {
        usize::from(u16::from_be_bytes([self.header[3], self.header[4]]))
    }
}

/// Application data decrypted (or lost), for the protocol inside, in each
/// direction's order.
#[derive(Debug)]
pub(crate) enum Plain {
    /// `data` (the plaintext) at `offset` of `side`'s plaintext stream,
    /// readable once the segment `at` had arrived.
    Data {
        side: Side,
        offset: u64,
        data: Vec<u8>,
        at: FrameRef,
    },
    /// About `len` bytes at `offset` that could not be decrypted.
    Lost { side: Side, offset: u64, len: u64 },
}

/// What a TLS 1.3 traffic secret is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Early,
    Handshake,
    App,
}

/// One key of a direction's chain.
#[derive(Debug)]
struct Link {
    stage: Stage,
    key: Option<RecordKey>,
    /// The secret (kept for an application secret: a KeyUpdate derives the
    /// next one from it).
    secret: Option<Vec<u8>>,
}

/// Handshake message framing over the decrypted handshake content of one
/// direction (a message may span records); the body of an
/// EncryptedExtensions is kept (TLS 1.3 sends ALPN's choice there).
#[derive(Debug, Default)]
struct Messages {
    header: [u8; 4],
    have: usize,
    /// Body bytes of the current message still to come.
    left: u32,
    /// The EncryptedExtensions body being gathered.
    ee: Option<Vec<u8>>,
    /// The ALPN protocol EncryptedExtensions named.
    alpn: Option<String>,
}

/// Largest EncryptedExtensions body read for its ALPN, bytes.
const EE_CAP: u32 = 4096;

impl Messages {
    /// Walks `data`; returns the types of the messages that ended in it.
    fn walk(&mut self, mut data: &[u8], ended: &mut Vec<u8>) {
        while !data.is_empty() {
            if self.left > 0 {
                let k = data.len().min(self.left as usize);
                if let Some(ee) = self.ee.as_mut() {
                    ee.extend_from_slice(&data[..k]);
                }
                self.left -= k as u32;
                data = &data[k..];
                if self.left == 0 {
                    self.end(ended);
                }
                continue;
            }
            let k = (4 - self.have).min(data.len());
            self.header[self.have..self.have + k].copy_from_slice(&data[..k]);
            self.have += k;
            data = &data[k..];
            if self.have == 4 {
                let h = self.header;
                self.left = u32::from_be_bytes([0, h[1], h[2], h[3]]);
                // EncryptedExtensions (RFC 8446 §4.3.1)
                self.ee = (h[0] == 8 && self.left <= EE_CAP).then(Vec::new);
                if self.left == 0 {
                    self.end(ended);
                }
            }
        }
    }

    fn end(&mut self, ended: &mut Vec<u8>) {
        ended.push(self.header[0]);
        self.have = 0;
        if let Some(ee) = self.ee.take() {
            self.alpn = self.alpn.take().or_else(|| ee_alpn(&ee));
        }
    }
}

/// The protocol of the ALPN extension (16, RFC 7301 §3.1) in an
/// EncryptedExtensions body: `extensions<0..2^16-1>`.
fn ee_alpn(body: &[u8]) -> Option<String> {
    let be16 = |b: &[u8], i: usize| -> Option<usize> {
        Some(usize::from(u16::from_be_bytes([
            *b.get(i)?,
            *b.get(i + 1)?,
        ])))
    };
    let total = be16(body, 0)?;
    let mut exts = body.get(2..2 + total)?;
    while exts.len() >= 4 {
        let (ty, len) = (be16(exts, 0)?, be16(exts, 2)?);
        let data = exts.get(4..4 + len)?;
        if ty == 16 {
            // ProtocolNameList: u16 length, then one u8-length name
            let name_len = usize::from(*data.get(2)?);
            let name = data.get(3..3 + name_len)?;
            return Some(crate::proto::lossy_truncated(name, 255));
        }
        exts = &exts[4 + len..];
    }
    None
}

/// One direction's keys and where it stands.
#[derive(Debug)]
struct DirKeys {
    tls13: bool,
    suite: Suite,
    chain: Vec<Link>,
    at: usize,
    /// The next record's key is not certain: try the next few.
    uncertain: bool,
    messages: Messages,
    /// Plaintext application bytes handed on so far.
    plain_offset: u64,
}

impl DirKeys {
    fn tls13(side: Side, suite: Suite, secrets: &Secrets, early: bool) -> DirKeys {
        let labels: &[(Stage, SecretLabel)] = match side {
            Side::Client => &[
                (Stage::Early, SecretLabel::ClientEarlyTraffic),
                (Stage::Handshake, SecretLabel::ClientHandshakeTraffic),
                (Stage::App, SecretLabel::ClientTraffic0),
            ],
            Side::Server => &[
                (Stage::Handshake, SecretLabel::ServerHandshakeTraffic),
                (Stage::App, SecretLabel::ServerTraffic0),
            ],
        };
        let chain = labels
            .iter()
            .filter(|(stage, _)| early || *stage != Stage::Early)
            .map(|&(stage, label)| {
                let secret = secrets.get(label);
                Link {
                    stage,
                    key: secret.and_then(|s| RecordKey::tls13(suite, s)),
                    secret: secret.filter(|_| stage == Stage::App).map(<[u8]>::to_vec),
                }
            })
            .collect();
        DirKeys {
            tls13: true,
            suite,
            chain,
            at: 0,
            uncertain: true,
            messages: Messages::default(),
            plain_offset: 0,
        }
    }

    fn tls12(suite: Suite, key: RecordKey) -> DirKeys {
        DirKeys {
            tls13: false,
            suite,
            chain: vec![Link {
                stage: Stage::App,
                key: Some(key),
                secret: None,
            }],
            at: 0,
            uncertain: false,
            messages: Messages::default(),
            plain_offset: 0,
        }
    }

    fn stage(&self) -> Stage {
        self.chain.get(self.at).map_or(Stage::App, |l| l.stage)
    }

    /// The link after `i`, deriving the next application secret (a
    /// KeyUpdate) when `i` is the last.
    fn ensure_next(&mut self, i: usize) -> bool {
        if i + 1 < self.chain.len() {
            return true;
        }
        let Some(link) = self.chain.get(i) else {
            return false;
        };
        if !self.tls13 || link.stage != Stage::App {
            return false;
        }
        let Some(next) = link
            .secret
            .as_deref()
            .and_then(|s| keys::next_traffic_secret(self.suite.hash, s))
        else {
            return false;
        };
        let key = RecordKey::tls13(self.suite, &next);
        self.chain.push(Link {
            stage: Stage::App,
            key,
            secret: Some(next),
        });
        true
    }

    /// Moves to the next key (after a Finished, EndOfEarlyData, KeyUpdate).
    fn advance(&mut self) {
        if self.ensure_next(self.at) {
            self.at += 1;
            // the old secret is not needed any more
            if let Some(old) = self.chain.get_mut(self.at - 1) {
                old.key = None;
                old.secret = None;
            }
        }
    }

    /// Opens `rec`: in place with the current key when it is certain, else
    /// on copies with the next few candidates.
    fn open(&mut self, rec: &mut Sealed, scratch: &mut Vec<u8>) -> Option<keys::Opened> {
        if !self.uncertain && self.stage() != Stage::Early {
            let link = self.chain.get_mut(self.at)?;
            let key = link.key.as_mut()?;
            let opened = key.open(rec.header, &mut rec.payload);
            if opened.is_none() {
                key.seq += 1;
                self.uncertain = true;
            }
            return opened;
        }
        let mut candidates = [(usize::MAX, 0u64); TRIALS];
        let seq = self
            .chain
            .get(self.at)
            .and_then(|l| l.key.as_ref())
            .map_or(0, |k| k.seq);
        candidates[0] = (self.at, seq);
        candidates[1] = (self.at, seq + 1);
        if self.ensure_next(self.at) {
            candidates[2] = (self.at + 1, 0);
            candidates[3] = (self.at + 1, 1);
        }
        for (i, s) in candidates {
            let Some(key) = self.chain.get_mut(i).and_then(|l| l.key.as_mut()) else {
                continue;
            };
            scratch.clear();
            scratch.extend_from_slice(&rec.payload);
            let saved = key.seq;
            key.seq = s;
            match key.open(rec.header, scratch) {
                Some(o) => {
                    std::mem::swap(&mut rec.payload, scratch);
                    if i != self.at {
                        self.at = i;
                    }
                    self.uncertain = false;
                    return Some(o);
                }
                None => key.seq = saved,
            }
        }
        // not opened: the record took a sequence number of the current key
        if let Some(k) = self.chain.get_mut(self.at).and_then(|l| l.key.as_mut()) {
            k.seq += 1;
        }
        None
    }
}

/// About `len` bytes of `side`'s plaintext that could not be decrypted:
/// the protocol inside is told, when the record held application data (in
/// TLS 1.3, any record once the handshake is over).
fn lost(dir: &mut DirKeys, side: Side, len: u64, out: &mut Vec<Plain>) {
    if dir.stage() == Stage::App || !dir.tls13 {
        out.push(Plain::Lost {
            side,
            offset: dir.plain_offset,
            len,
        });
        dir.plain_offset += len;
    }
}

/// Where the decryptor stands.
#[derive(Debug)]
enum State {
    /// The hellos are not both known yet: records wait.
    Waiting(Vec<(Side, Sealed)>),
    /// Keys derived, one set per direction (client's, server's).
    Ready(Box<[DirKeys; 2]>),
    /// Nothing to decrypt with ([`Decryption::status`] says why).
    Off,
}

/// Decryption of one TLS connection (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Decryptor {
    keys: KeyStore,
    state: State,
    report: Decryption,
    /// Plaintext for the protocol inside, drained by the caller.
    pub(crate) out: Vec<Plain>,
    scratch: Vec<u8>,
    ended: Vec<u8>,
}

/// The hello fields the key lookup and schedule need.
pub(crate) struct Hellos<'a> {
    pub(crate) client_random: Option<&'a [u8; 32]>,
    pub(crate) server_random: Option<&'a [u8; 32]>,
    pub(crate) version: u16,
    pub(crate) cipher_suite: u16,
    pub(crate) early_data_offered: bool,
}

impl Decryptor {
    pub(crate) fn new(keys: KeyStore) -> Decryptor {
        Decryptor {
            keys,
            state: State::Waiting(Vec::new()),
            report: Decryption {
                status: DecryptStatus::NoHandshake,
                records: [0; 2],
                app_bytes: [0; 2],
                failed: 0,
                cut: 0,
                first_failure: None,
                starts: starts::RecordStarts::default(),
            },
            out: Vec::new(),
            scratch: Vec::new(),
            ended: Vec::new(),
        }
    }

    /// Whether the hellos are still awaited.
    pub(crate) fn waiting(&self) -> bool {
        matches!(self.state, State::Waiting(_))
    }

    /// Whether records are still wanted (waiting, or keys in hand).
    pub(crate) fn wants_records(&self) -> bool {
        !matches!(self.state, State::Off)
    }

    /// Both hellos are known: look the secrets up, derive the keys, and open
    /// the records that waited.
    pub(crate) fn start(&mut self, h: &Hellos<'_>) {
        let State::Waiting(queue) = std::mem::replace(&mut self.state, State::Off) else {
            return;
        };
        self.state = match self.derive(h) {
            Ok(dirs) => {
                self.report.status = DecryptStatus::Decrypted;
                State::Ready(dirs)
            }
            Err(status) => {
                self.report.status = status;
                State::Off
            }
        };
        for (side, rec) in queue {
            self.record(side, rec);
        }
    }

    fn derive(&self, h: &Hellos<'_>) -> Result<Box<[DirKeys; 2]>, DecryptStatus> {
        let client_random = h.client_random.ok_or(DecryptStatus::NoHandshake)?;
        let secrets = self.keys.get(client_random).ok_or(DecryptStatus::NoKeys)?;
        let suite = keys::suite(h.cipher_suite).ok_or(DecryptStatus::UnsupportedSuite)?;
        if h.version == 0x0304 {
            return Ok(Box::new([
                DirKeys::tls13(Side::Client, suite, &secrets, h.early_data_offered),
                DirKeys::tls13(Side::Server, suite, &secrets, false),
            ]));
        }
        let master = secrets
            .get(SecretLabel::MasterSecret)
            .ok_or(DecryptStatus::NoKeys)?;
        let server_random = h.server_random.ok_or(DecryptStatus::NoHandshake)?;
        let (c, s) = RecordKey::tls12_pair(suite, master, client_random, server_random)
            .ok_or(DecryptStatus::NoKeys)?;
        Ok(Box::new([
            DirKeys::tls12(suite, c),
            DirKeys::tls12(suite, s),
        ]))
    }

    /// One record `side` sent that the walker could not read.
    pub(crate) fn record(&mut self, side: Side, mut rec: Sealed) {
        let dirs = match &mut self.state {
            State::Waiting(q) => {
                let held: usize = q.iter().map(|(_, r)| r.payload.len()).sum();
                if q.len() < QUEUE_CAP && held + rec.payload.len() <= QUEUE_BYTES {
                    q.push((side, rec));
                } else {
                    self.report.failed += 1;
                    self.report.first_failure.get_or_insert(rec.first);
                }
                return;
            }
            State::Off => return,
            State::Ready(dirs) => dirs,
        };
        let dir = &mut dirs[side.index()];
        if dir.tls13 && rec.header[0] != 23 {
            // TLS 1.3 protects every record as application_data (RFC 8446
            // §5.2); anything else is a plaintext record the walker saw
            // through (a compatibility ChangeCipherSpec's neighbour)
            return;
        }
        let overhead = if dir.tls13 { TAG_LEN + 1 } else { TAG_LEN };
        let lost_len = rec.length().saturating_sub(overhead) as u64;
        if rec.cut || rec.complete.is_none() {
            self.report.cut += 1;
            self.report.first_failure.get_or_insert(rec.first);
            if let Some(k) = dir.chain.get_mut(dir.at).and_then(|l| l.key.as_mut()) {
                k.seq += 1;
            }
            dir.uncertain = dir.tls13;
            lost(dir, side, lost_len, &mut self.out);
            return;
        }
        let Some(opened) = dir.open(&mut rec, &mut self.scratch) else {
            self.report.failed += 1;
            self.report.first_failure.get_or_insert(rec.first);
            lost(dir, side, lost_len, &mut self.out);
            return;
        };
        self.report.records[side.index()] += 1;
        let at = rec.complete.unwrap_or(rec.first);
        match opened.content_type {
            23 => {
                let len = opened.end - opened.start;
                self.report.app_bytes[side.index()] += len as u64;
                if side == Side::Server {
                    self.report.starts.push(at, rec.first);
                }
                let mut data = rec.payload;
                data.truncate(opened.end);
                data.drain(..opened.start);
                self.out.push(Plain::Data {
                    side,
                    offset: dir.plain_offset,
                    data,
                    at,
                });
                dir.plain_offset += len as u64;
            }
            22 if dir.tls13 => {
                self.ended.clear();
                dir.messages
                    .walk(&rec.payload[opened.start..opened.end], &mut self.ended);
                let stage = dir.stage();
                // RFC 8446 §4.4.4 Finished, §4.5 EndOfEarlyData, §4.6.3
                // KeyUpdate: the next record uses the next secret
                let moves = self.ended.iter().any(|&t| {
                    matches!(
                        (t, stage),
                        (20, Stage::Handshake) | (5, Stage::Early) | (24, Stage::App)
                    )
                });
                if moves {
                    dir.advance();
                }
            }
            _ => {}
        }
    }

    /// The ALPN protocol the server's decrypted EncryptedExtensions named
    /// (TLS 1.3).
    pub(crate) fn alpn(&self) -> Option<&str> {
        match &self.state {
            State::Ready(dirs) => dirs[Side::Server.index()].messages.alpn.as_deref(),
            _ => None,
        }
    }

    /// The connection is over: the outcome.
    pub(crate) fn finish(mut self) -> Decryption {
        if let State::Waiting(q) = &self.state {
            self.report.status = DecryptStatus::NoHandshake;
            self.report.failed += q.len() as u64;
            if let Some((_, r)) = q.first() {
                self.report.first_failure.get_or_insert(r.first);
            }
        }
        let opened = self.report.records.iter().sum::<u64>();
        let missed = self.report.failed + self.report.cut;
        if matches!(self.report.status, DecryptStatus::Decrypted) && missed > 0 {
            self.report.status = if opened == 0 && self.report.failed > 0 {
                DecryptStatus::WrongKeys
            } else {
                DecryptStatus::Partial
            };
        }
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_framing_spans_records() {
        let mut m = Messages::default();
        let mut ended = vec![];
        // EncryptedExtensions (2-byte body) then half a Finished header
        m.walk(&[8, 0, 0, 2, 0, 0, 20, 0], &mut ended);
        assert_eq!(ended, [8]);
        m.walk(&[0, 3, 1, 2], &mut ended);
        assert_eq!(ended, [8]);
        m.walk(&[3, 24, 0, 0, 0], &mut ended);
        assert_eq!(ended, [8, 20, 24]);
        // EncryptedExtensions with ALPN "h2" (ext 16: list of one name)
        let ee = [0, 9, 0, 16, 0, 5, 0, 3, 2, b'h', b'2'];
        let mut m = Messages::default();
        let mut msg = vec![8, 0, 0, ee.len() as u8];
        msg.extend_from_slice(&ee);
        m.walk(&msg[..6], &mut ended);
        m.walk(&msg[6..], &mut ended);
        assert_eq!(m.alpn.as_deref(), Some("h2"));
        assert_eq!(ee_alpn(&[0, 9, 0, 16, 0, 5]), None, "cut");
    }
}
