//! TLS key logs: the secrets a client or server wrote as it went, in the NSS
//! key log format (`SSLKEYLOGFILE` of curl, Firefox, Chrome; Go's
//! `tls.Config.KeyLogWriter`; rustls' `KeyLogFile`), read from a file or
//! from a pcapng Decryption Secrets Block (`TLSK`, pcapng spec §4.7).
//!
//! One line per secret: `LABEL <client_random> <secret>`, both in hex, the
//! client random 32 bytes (draft-ietf-tls-keylogfile §3; the format's
//! reference is NSS's "Key Log Format" page). `#` starts a comment line.
//! Several logs merge into one [`KeyLog`], keyed by the ClientHello's
//! random, so a connection finds its secrets whichever file held them.
//!
//! Bad input never fails the read: a malformed line, an unknown label or a
//! secret given twice with different values is counted in [`KeyLogNotes`]
//! and the first value kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap;

/// The labels of the format (draft-ietf-tls-keylogfile §3.1), TLS 1.2's
/// master secret and TLS 1.3's traffic and exporter secrets. QUIC uses the
/// TLS 1.3 labels for its packet protection (RFC 9001 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretLabel {
    /// `CLIENT_RANDOM`: the TLS ≤ 1.2 master secret (48 bytes, RFC 5246 §8.1).
    MasterSecret,
    /// `CLIENT_EARLY_TRAFFIC_SECRET` (TLS 1.3 0-RTT, RFC 8446 §7.1).
    ClientEarlyTraffic,
    /// `CLIENT_HANDSHAKE_TRAFFIC_SECRET`.
    ClientHandshakeTraffic,
    /// `SERVER_HANDSHAKE_TRAFFIC_SECRET`.
    ServerHandshakeTraffic,
    /// `CLIENT_TRAFFIC_SECRET_0` (later generations follow by KeyUpdate,
    /// RFC 8446 §7.2).
    ClientTraffic0,
    /// `SERVER_TRAFFIC_SECRET_0`.
    ServerTraffic0,
    /// `EARLY_EXPORTER_SECRET`.
    EarlyExporter,
    /// `EXPORTER_SECRET`.
    Exporter,
}

impl SecretLabel {
    /// Every label, in the order of the handshake.
    pub const ALL: [SecretLabel; 8] = [
        SecretLabel::MasterSecret,
        SecretLabel::ClientEarlyTraffic,
        SecretLabel::ClientHandshakeTraffic,
        SecretLabel::ServerHandshakeTraffic,
        SecretLabel::ClientTraffic0,
        SecretLabel::ServerTraffic0,
        SecretLabel::EarlyExporter,
        SecretLabel::Exporter,
    ];

    /// The label as written in a key log.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretLabel::MasterSecret => "CLIENT_RANDOM",
            SecretLabel::ClientEarlyTraffic => "CLIENT_EARLY_TRAFFIC_SECRET",
            SecretLabel::ClientHandshakeTraffic => "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
            SecretLabel::ServerHandshakeTraffic => "SERVER_HANDSHAKE_TRAFFIC_SECRET",
            SecretLabel::ClientTraffic0 => "CLIENT_TRAFFIC_SECRET_0",
            SecretLabel::ServerTraffic0 => "SERVER_TRAFFIC_SECRET_0",
            SecretLabel::EarlyExporter => "EARLY_EXPORTER_SECRET",
            SecretLabel::Exporter => "EXPORTER_SECRET",
        }
    }

    fn parse(s: &[u8]) -> Option<SecretLabel> {
        SecretLabel::ALL
            .into_iter()
            .find(|l| l.as_str().as_bytes() == s)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Longest secret accepted (bytes): SHA-384's output is 48, SHA-512's 64.
pub const MAX_SECRET_LEN: usize = 64;

/// The secrets of one connection (one ClientHello random), by label.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    by_label: [Option<Box<[u8]>>; 8],
}

impl Secrets {
    /// The secret logged under `label`, if any.
    pub fn get(&self, label: SecretLabel) -> Option<&[u8]> {
        self.by_label[label.index()].as_deref()
    }
}

/// What reading key logs counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct KeyLogNotes {
    /// Secrets read (lines with a known label, well formed).
    pub secrets: u64,
    /// Lines that are not `LABEL hex hex` with a 32-byte client random and
    /// a secret of 1 to [`MAX_SECRET_LEN`] bytes.
    pub malformed_lines: u64,
    /// Lines of three fields with a label this reader does not use (`RSA`,
    /// `ECH_SECRET`, …).
    pub unknown_labels: u64,
    /// A secret logged again with a different value (the first is kept).
    pub conflicts: u64,
}

/// Secrets of any number of connections, merged from any number of logs.
#[derive(Debug, Clone, Default)]
pub struct KeyLog {
    by_random: FxHashMap<[u8; 32], Secrets>,
    notes: KeyLogNotes,
}

impl KeyLog {
    /// An empty key log.
    pub fn new() -> KeyLog {
        KeyLog::default()
    }

    /// Reads the key log text `text` (a file's bytes, or a Decryption
    /// Secrets Block's) into this one.
    pub fn add(&mut self, text: &[u8]) {
        for line in text.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = line.trim_ascii();
            if line.is_empty() || line.starts_with(b"#") {
                continue;
            }
            self.add_line(line);
        }
    }

    fn add_line(&mut self, line: &[u8]) {
        let mut fields = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let (Some(label), Some(random), Some(secret), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            self.notes.malformed_lines += 1;
            return;
        };
        let Some(label) = SecretLabel::parse(label) else {
            self.notes.unknown_labels += 1;
            return;
        };
        let mut cr = [0u8; 32];
        let mut buf = [0u8; MAX_SECRET_LEN];
        let secret_len = secret.len() / 2;
        if !decode_hex(random, &mut cr)
            || secret.is_empty()
            || secret_len > MAX_SECRET_LEN
            || !decode_hex(secret, &mut buf[..secret_len])
        {
            self.notes.malformed_lines += 1;
            return;
        }
        self.insert(cr, label, &buf[..secret_len]);
    }

    /// Adds every secret of `other`; its notes add to this log's.
    pub fn merge(&mut self, other: &KeyLog) {
        for (random, secrets) in &other.by_random {
            for label in SecretLabel::ALL {
                if let Some(secret) = secrets.get(label) {
                    self.insert(*random, label, secret);
                }
            }
        }
        let (mine, theirs) = (&mut self.notes, other.notes);
        mine.malformed_lines += theirs.malformed_lines;
        mine.unknown_labels += theirs.unknown_labels;
        mine.conflicts += theirs.conflicts;
    }

    fn insert(&mut self, random: [u8; 32], label: SecretLabel, secret: &[u8]) {
        let slot = &mut self.by_random.entry(random).or_default().by_label[label.index()];
        match slot {
            Some(old) if **old != *secret => self.notes.conflicts += 1,
            Some(_) => {}
            None => {
                *slot = Some(secret.into());
                self.notes.secrets += 1;
            }
        }
    }

    /// The secrets logged for the connection whose ClientHello carried
    /// `client_random`.
    pub fn get(&self, client_random: &[u8; 32]) -> Option<&Secrets> {
        self.by_random.get(client_random)
    }

    /// Connections (client randoms) with at least one secret.
    pub fn len(&self) -> usize {
        self.by_random.len()
    }

    /// Whether no secret was read.
    pub fn is_empty(&self) -> bool {
        self.by_random.is_empty()
    }

    /// What reading counted.
    pub fn notes(&self) -> KeyLogNotes {
        self.notes
    }
}

/// A [`KeyLog`] shared by the readers that add to it (`--keylog` files
/// before the analysis, pcapng Decryption Secrets Blocks as they are read)
/// and the connections that look their secrets up, on any thread. Cloning
/// shares it.
///
/// A DSB comes before the packets it decrypts (pcapng spec §4.7), and the
/// reader adds it before handing on the packets after it, so a connection
/// that looks its secrets up when its ServerHello completes finds them.
#[derive(Debug, Clone, Default)]
pub struct KeyStore {
    log: Arc<RwLock<KeyLog>>,
    /// Whether any secret was read: connections of a capture without keys
    /// never take the lock.
    any: Arc<AtomicBool>,
}

impl KeyStore {
    /// An empty store.
    pub fn new() -> KeyStore {
        KeyStore::default()
    }

    /// Reads the key log text `text` into the store (see [`KeyLog::add`]).
    pub fn add(&self, text: &[u8]) {
        let mut log = self.log.write().unwrap_or_else(|e| e.into_inner());
        log.add(text);
        if !log.is_empty() {
            self.any.store(true, Ordering::Release);
        }
    }

    /// Whether the store holds any secret.
    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    /// The secrets of the connection whose ClientHello carried
    /// `client_random`, copied out.
    pub fn get(&self, client_random: &[u8; 32]) -> Option<Secrets> {
        if self.is_empty() {
            return None;
        }
        let log = self.log.read().unwrap_or_else(|e| e.into_inner());
        log.get(client_random).cloned()
    }

    /// Adds every secret of `other` (merged as [`KeyLog::add`] merges lines).
    pub fn merge(&self, other: &KeyLog) {
        if other.is_empty() && other.notes == KeyLogNotes::default() {
            return;
        }
        let mut log = self.log.write().unwrap_or_else(|e| e.into_inner());
        log.merge(other);
        if !log.is_empty() {
            self.any.store(true, Ordering::Release);
        }
    }

    /// A copy of the whole log as it stands.
    pub fn snapshot(&self) -> KeyLog {
        self.log.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether `other` is this very store (not a copy).
    pub fn same(&self, other: &KeyStore) -> bool {
        Arc::ptr_eq(&self.log, &other.log)
    }
}

/// Decodes `hex` (either case) into exactly `out.len()` bytes.
///
/// Our own: two dozen lines against a new dependency for the one place
/// that reads hex.
fn decode_hex(hex: &[u8], out: &mut [u8]) -> bool {
    if hex.len() != out.len() * 2 {
        return false;
    }
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        match (nibble(pair[0]), nibble(pair[1])) {
            (Some(h), Some(l)) => *o = h << 4 | l,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const CR: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn random() -> [u8; 32] {
        std::array::from_fn(|i| i as u8)
    }

    #[test]
    fn labels_secrets_and_notes() {
        let text = format!(
            "# a comment\r\n\
             CLIENT_RANDOM {CR} {ms}\r\n\
             \n\
             SERVER_TRAFFIC_SECRET_0 {CR} {ts}\n\
             SERVER_TRAFFIC_SECRET_0 {CR} {ts}\n\
             SERVER_TRAFFIC_SECRET_0 {CR} {other}\n\
             RSA 0011223344556677 {ms}\n\
             CLIENT_RANDOM {CR}\n\
             CLIENT_RANDOM 00ff {ms}\n\
             CLIENT_RANDOM {CR} 0g\n\
             CLIENT_RANDOM {CR} {long}\n",
            ms = "ab".repeat(48),
            ts = "CD".repeat(32),
            other = "ce".repeat(32),
            long = "00".repeat(MAX_SECRET_LEN + 1),
        );
        let mut log = KeyLog::new();
        log.add(text.as_bytes());
        let s = log.get(&random()).expect("secrets of the random");
        assert_eq!(s.get(SecretLabel::MasterSecret), Some(&[0xab; 48][..]));
        assert_eq!(s.get(SecretLabel::ServerTraffic0), Some(&[0xcd; 32][..]));
        assert_eq!(s.get(SecretLabel::ClientTraffic0), None);
        assert_eq!(
            log.notes(),
            KeyLogNotes {
                secrets: 2,
                malformed_lines: 4,
                // `RSA <8 bytes of the encrypted premaster> <premaster>`
                unknown_labels: 1,
                conflicts: 1,
            }
        );
        assert_eq!(log.len(), 1);
    }

    #[test]
    fn unknown_labels_are_counted_apart() {
        let mut log = KeyLog::new();
        log.add(format!("ECH_SECRET {CR} {}\n", "11".repeat(32)).as_bytes());
        assert!(log.is_empty());
        assert_eq!(log.notes().unknown_labels, 1);
    }

    #[test]
    fn labels_round_trip() {
        for l in SecretLabel::ALL {
            assert_eq!(SecretLabel::parse(l.as_str().as_bytes()), Some(l));
            assert_eq!(SecretLabel::ALL[l.index()], l);
        }
    }
}
