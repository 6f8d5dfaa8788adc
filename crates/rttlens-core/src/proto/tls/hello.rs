//! ClientHello and ServerHello contents (RFC 8446 §4.1.2–§4.1.4, RFC 5246
//! §7.4.1), parsed with tls-parser.
//!
//! tls-parser parses the fixed part of both hellos and each extension, but
//! its extension-list parser (`many0`) silently stops at the first extension
//! it cannot parse, hiding the rest. So the extension block is split into
//! `(type, length, data)` here and each extension is handed to tls-parser on
//! its own; an extension it rejects is listed by type and otherwise skipped.
//! tls-parser leaves `key_share` and the ServerHello `pre_shared_key` as raw
//! bytes; those few bytes are read here (RFC 8446 §4.2.8, §4.2.11).

use tls_parser::{
    parse_tls_client_hello_extension, parse_tls_handshake_client_hello,
    parse_tls_handshake_server_hello, parse_tls_server_hello_extension, SNIType, TlsCipherSuite,
    TlsExtension, TlsExtensionType,
};

use smallvec::SmallVec;

use crate::base::side::FrameRef;
use crate::proto::lossy_truncated;

/// A hello's list of 16-bit values (versions, groups), inline up to the
/// few that clients send: a hello costs no allocation for it.
pub type U16List = SmallVec<[u16; 4]>;
/// A `legacy_session_id` (0–32 bytes, RFC 8446 §4.1.2), inline.
pub type SessionId = SmallVec<[u8; 32]>;
/// `psk_key_exchange_modes` (one or two bytes in practice), inline.
pub type ByteList = SmallVec<[u8; 8]>;

/// `ServerHello.random` of a HelloRetryRequest (RFC 8446 §4.1.3: the
/// SHA-256 of `"HelloRetryRequest"`).
pub const HELLO_RETRY_REQUEST_RANDOM: [u8; 32] = [
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
];

/// Most entries kept per list (ALPN names, versions, groups).
const LIST_CAP: usize = 64;
/// Longest SNI / ALPN name kept, in characters (RFC 6066 §3 host names are at
/// most 255 bytes).
const NAME_CAP: usize = 255;

/// What a ClientHello offered (RFC 8446 §4.1.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClientHelloInfo {
    /// `legacy_version` (`0x0303` for TLS 1.2 and 1.3 clients).
    pub(crate) legacy_version: u16,
    /// `random`: the key a key log's lines are filed under.
    #[serde(skip)]
    pub(crate) random: [u8; 32],
    /// `supported_versions` extension, in the client's order (empty if
    /// absent; GREASE values included). Contains `0x0304` for a TLS 1.3
    /// client.
    pub supported_versions: U16List,
    /// Number of cipher suites offered.
    pub cipher_suites: u16,
    /// `legacy_session_id` (0–32 bytes). A TLS 1.2 client resuming by
    /// session id sends the cached id; TLS 1.3 clients in middlebox
    /// compatibility mode send 32 random bytes (RFC 8446 §D.4).
    #[serde(serialize_with = "hex")]
    pub(crate) session_id: SessionId,
    /// `server_name` host name (lossy UTF-8).
    pub(crate) sni: Option<String>,
    /// `application_layer_protocol_negotiation` names offered (lossy UTF-8).
    pub(crate) alpn: Vec<String>,
    /// `session_ticket` extension (RFC 5077): `None` if absent, else the
    /// length in bytes of the ticket sent (0 = "I support tickets", more =
    /// resumption attempt).
    pub session_ticket: Option<u32>,
    /// `pre_shared_key` extension present (TLS 1.3 resumption offered).
    pub pre_shared_key: bool,
    /// `early_data` extension present (TLS 1.3 0-RTT offered).
    pub early_data: bool,
    /// `psk_key_exchange_modes` (0 = psk_ke, 1 = psk_dhe_ke).
    pub psk_key_exchange_modes: ByteList,
    /// Named groups of the `key_share` entries sent.
    pub key_share_groups: U16List,
    /// Body length of the handshake message, in bytes.
    pub(crate) length: u32,
    /// Index of the record that carried the message's first byte.
    pub record: u64,
    /// Stream offset of the handshake message header.
    pub(crate) offset: u64,
    /// Segment that carried the message's first byte.
    pub first: FrameRef,
    /// Segment that delivered the message's last byte.
    pub complete: FrameRef,
}

impl ClientHelloInfo {
    /// `true` if the client offers TLS 1.3 (`0x0304`, or a draft's
    /// `0x7fxx`, in `supported_versions`).
    pub fn offers_tls13(&self) -> bool {
        self.supported_versions.iter().any(|&v| is_tls13(v))
    }
}

/// What a ServerHello (or HelloRetryRequest) chose (RFC 8446 §4.1.3,
/// RFC 5246 §7.4.1.3).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ServerHelloInfo {
    /// `legacy_version` (`0x0303` for TLS 1.2 and 1.3).
    pub(crate) legacy_version: u16,
    /// `random` (TLS 1.2's key block is derived from it).
    #[serde(skip)]
    pub(crate) random: [u8; 32],
    /// Version selected in the `supported_versions` extension (`0x0304` for
    /// TLS 1.3, RFC 8446 §4.2.1), if present.
    pub(crate) selected_version: Option<u16>,
    /// `random` equals [`HELLO_RETRY_REQUEST_RANDOM`]: this is a
    /// HelloRetryRequest, not a ServerHello.
    pub hello_retry_request: bool,
    /// Selected cipher suite.
    pub(crate) cipher_suite: u16,
    /// IANA name of the cipher suite, when tls-parser knows it.
    pub(crate) cipher_suite_name: Option<&'static str>,
    /// `legacy_session_id` (TLS 1.2: equal to the ClientHello's non-empty id
    /// when resuming, RFC 5246 §7.4.1.3; TLS 1.3: the echo of the client's).
    #[serde(serialize_with = "hex")]
    pub(crate) session_id: SessionId,
    /// `session_ticket` extension present (TLS 1.2: a NewSessionTicket will
    /// follow, RFC 5077 §3.2).
    pub session_ticket: bool,
    /// ALPN protocol selected (lossy UTF-8).
    pub(crate) alpn: Option<String>,
    /// `pre_shared_key` selected identity (TLS 1.3 PSK accepted, RFC 8446
    /// §4.2.11).
    pub pre_shared_key: Option<u16>,
    /// Group of the `key_share` (for a HelloRetryRequest: the group the
    /// server asks for).
    pub key_share_group: Option<u16>,
    /// Body length of the handshake message, in bytes.
    pub(crate) length: u32,
    /// Index of the record that carried the message's first byte.
    pub(crate) record: u64,
    /// Stream offset of the handshake message header.
    pub(crate) offset: u64,
    /// Segment that carried the message's first byte.
    pub first: FrameRef,
    /// Segment that delivered the message's last byte.
    pub complete: FrameRef,
}

impl ServerHelloInfo {
    /// The negotiated version: `selected_version` if present, else
    /// `legacy_version`.
    pub(crate) fn version(&self) -> u16 {
        self.selected_version.unwrap_or(self.legacy_version)
    }
}

/// `true` for TLS 1.3 and its drafts (`0x7fxx`).
pub(super) fn is_tls13(version: u16) -> bool {
    version == 0x0304 || version >> 8 == 0x7f
}

/// A protocol version's name (`"TLS 1.2"`), or `None` if unknown.
pub fn version_name(version: u16) -> Option<&'static str> {
    Some(match version {
        0x0300 => "SSL 3.0",
        0x0301 => "TLS 1.0",
        0x0302 => "TLS 1.1",
        0x0303 => "TLS 1.2",
        0x0304 => "TLS 1.3",
        _ => return None,
    })
}

/// A cipher suite's IANA name, when tls-parser knows it.
pub fn cipher_suite_name(id: u16) -> Option<&'static str> {
    TlsCipherSuite::from_id(id).map(|c| c.name)
}

fn hex<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    s.serialize_str(&text)
}

fn be16(b: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*b.first()?, *b.get(1)?]))
}

/// The ClientHello extensions [`parse_client_hello`] reads.
const CLIENT_EXTENSIONS_READ: [TlsExtensionType; 9] = [
    TlsExtensionType::ServerName,
    TlsExtensionType::ApplicationLayerProtocolNegotiation,
    TlsExtensionType::SessionTicketTLS,
    TlsExtensionType::PreSharedKey,
    TlsExtensionType::EarlyData,
    TlsExtensionType::SupportedVersions,
    TlsExtensionType::PskExchangeModes,
    TlsExtensionType::KeyShare,
    TlsExtensionType::KeyShareOld,
];

fn push_capped<T, L: Extend<T> + AsRef<[T]>>(list: &mut L, item: T) {
    if list.as_ref().len() < LIST_CAP {
        list.extend(std::iter::once(item));
    }
}

/// Splits an extension block into whole extensions (`type | len | data`,
/// RFC 8446 §4.2), calling `f(type, whole_extension_bytes)` for each. Returns
/// `false` if the block ends inside an extension.
fn for_each_extension(mut block: &[u8], mut f: impl FnMut(u16, &[u8])) -> bool {
    while !block.is_empty() {
        let (Some(ty), Some(len)) = (be16(block), block.get(2..).and_then(be16)) else {
            return false;
        };
        let Some(whole) = block.get(..4 + len as usize) else {
            return false;
        };
        f(ty, whole);
        block = &block[whole.len()..];
    }
    true
}

/// The IANA name of a TLS named group (RFC 8446 §4.2.7, RFC 7919, the
/// hybrid post-quantum groups), or its number in hex.
pub(crate) fn group_name(group: u16) -> String {
    let name = match group {
        0x0017 => "secp256r1",
        0x0018 => "secp384r1",
        0x0019 => "secp521r1",
        0x001d => "x25519",
        0x001e => "x448",
        0x0100 => "ffdhe2048",
        0x0101 => "ffdhe3072",
        0x11ec => "X25519MLKEM768",
        0x6399 => "X25519Kyber768Draft00",
        _ => return format!("group {group:#06x}"),
    };
    name.to_string()
}

/// The data of the first extension of type `ty` in an extension block
/// (RFC 8446 §4.2), without its 4-byte type and length.
pub(crate) fn extension_in_block(block: &[u8], ty: u16) -> Option<&[u8]> {
    let mut at = 0usize;
    let mut found = None;
    for_each_extension(block, |t, whole| {
        if t == ty && found.is_none() {
            found = Some((at + 4, whole.len() - 4));
        }
        at += whole.len();
    });
    found.and_then(|(from, len)| block.get(from..from + len))
}

/// The data of extension `ty` in a ClientHello body (the handshake message
/// without its 4-byte header), for extensions the hello's summary does not
/// keep (QUIC's transport parameters, RFC 9001 §8.2).
pub(crate) fn client_hello_extension(body: &[u8], ty: u16) -> Option<&[u8]> {
    let (_, ch) = parse_tls_handshake_client_hello(body).ok()?;
    extension_in_block(ch.ext?, ty)
}

/// `KeyShareClientHello` (RFC 8446 §4.2.8): `u16` list length, then entries
/// of `group u16 | key_exchange<1..2^16-1>`.
fn client_key_share_groups(data: &[u8]) -> U16List {
    let mut groups = U16List::new();
    let mut list = data.get(2..).unwrap_or_default();
    while let (Some(group), Some(len)) = (be16(list), list.get(2..).and_then(be16)) {
        push_capped(&mut groups, group);
        list = list.get(4 + len as usize..).unwrap_or_default();
    }
    groups
}

/// A parsed hello, with what part of it did not parse (its extensions, or
/// bytes after them) if any; `Err` when its fixed part did not parse.
pub(crate) type Parsed<T> = Result<(T, Option<&'static str>), &'static str>;

/// What follows a hello's fixed part is not a whole extension block.
fn extension_problem(
    walked: bool,
    ext: Option<&[u8]>,
    rest: &[u8],
    what: &'static str,
) -> Option<&'static str> {
    (!walked || (ext.is_none() && !rest.is_empty())).then_some(what)
}

/// Parses a ClientHello body (the handshake message without its 4-byte
/// header).
pub(crate) fn parse_client_hello(body: &[u8]) -> Parsed<ClientHelloInfo> {
    let (rest, ch) = parse_tls_handshake_client_hello(body).map_err(|_| "ClientHello")?;
    let mut info = ClientHelloInfo {
        legacy_version: ch.version.0,
        random: ch.random.try_into().unwrap_or_default(),
        cipher_suites: u16::try_from(ch.ciphers.len()).unwrap_or(u16::MAX),
        session_id: SessionId::from_slice(ch.session_id.unwrap_or_default()),
        ..ClientHelloInfo::default()
    };
    let walked = for_each_extension(ch.ext.unwrap_or_default(), |ty, whole| {
        // only the extensions read below: tls-parser allocates for the
        // others too (signature algorithms, groups, …), a few times a hello
        if !CLIENT_EXTENSIONS_READ.contains(&TlsExtensionType(ty)) {
            return;
        }
        let Ok((_, ext)) = parse_tls_client_hello_extension(whole) else {
            return;
        };
        match ext {
            TlsExtension::SNI(names) => {
                info.sni = names
                    .iter()
                    .find(|(t, _)| *t == SNIType::HostName)
                    .map(|(_, name)| lossy_truncated(name, NAME_CAP));
            }
            TlsExtension::ALPN(names) => {
                for name in names {
                    push_capped(&mut info.alpn, lossy_truncated(name, NAME_CAP));
                }
            }
            TlsExtension::SessionTicket(ticket) => {
                info.session_ticket = Some(u32::try_from(ticket.len()).unwrap_or(u32::MAX));
            }
            TlsExtension::PreSharedKey(_) => info.pre_shared_key = true,
            TlsExtension::EarlyData(_) => info.early_data = true,
            TlsExtension::SupportedVersions(versions) => {
                for v in versions {
                    push_capped(&mut info.supported_versions, v.0);
                }
            }
            TlsExtension::PskExchangeModes(modes) => {
                for m in modes {
                    push_capped(&mut info.psk_key_exchange_modes, m);
                }
            }
            // TLS 1.3 drafts before 23 numbered key_share 40 (`KeyShareOld`)
            TlsExtension::KeyShare(data) | TlsExtension::KeyShareOld(data) => {
                info.key_share_groups = client_key_share_groups(data)
            }
            _ => {}
        }
    });
    let problem = extension_problem(walked, ch.ext, rest, "ClientHello extensions");
    Ok((info, problem))
}

/// Parses the body of an SSL 2.0-format ClientHello after its version
/// (RFC 5246 Appendix E.2: `cipher_spec_length`, `session_id_length`,
/// `challenge_length`, then the 3-byte cipher specs, the session id and
/// the challenge). Clients sent it to reach SSL 2.0 servers while
/// offering SSL 3.0 or TLS; tls-parser reads TLS records alone, so these
/// few fields are read here. The challenge, right-aligned in 32 zero
/// bytes, is the hello's random (RFC 5246 E.2); the cipher specs whose
/// first byte is 0 are TLS cipher suites.
pub(crate) fn parse_sslv2_client_hello(
    version: u16,
    body: &[u8],
) -> Result<ClientHelloInfo, &'static str> {
    let len = |at: usize| be16(body.get(at..).unwrap_or_default()).map(usize::from);
    let (Some(specs), Some(sid), Some(challenge)) = (len(0), len(2), len(4)) else {
        return Err("SSLv2 ClientHello");
    };
    if specs % 3 != 0 || !(16..=32).contains(&challenge) || sid > 32 {
        return Err("SSLv2 ClientHello");
    }
    let fields = body
        .get(6..6 + specs + sid + challenge)
        .ok_or("SSLv2 ClientHello")?;
    let (spec_bytes, rest) = fields.split_at(specs);
    let (session_id, challenge_bytes) = rest.split_at(sid);
    let mut random = [0u8; 32];
    random[32 - challenge..].copy_from_slice(challenge_bytes);
    let suites = spec_bytes.chunks_exact(3).filter(|c| c[0] == 0).count();
    Ok(ClientHelloInfo {
        legacy_version: version,
        random,
        cipher_suites: u16::try_from(suites).unwrap_or(u16::MAX),
        session_id: SessionId::from_slice(session_id),
        ..ClientHelloInfo::default()
    })
}

/// Parses a ServerHello body (without its 4-byte header); recognises a
/// HelloRetryRequest by its random (RFC 8446 §4.1.3).
pub(crate) fn parse_server_hello(body: &[u8]) -> Parsed<ServerHelloInfo> {
    let (rest, sh) = match be16(body) {
        Some(version) if is_early_tls13_draft(version) => parse_draft_server_hello(body)?,
        _ => parse_tls_handshake_server_hello(body).map_err(|_| "ServerHello")?,
    };
    let mut info = ServerHelloInfo {
        legacy_version: sh.version.0,
        random: sh.random.try_into().unwrap_or_default(),
        hello_retry_request: sh.random == HELLO_RETRY_REQUEST_RANDOM,
        cipher_suite: sh.cipher.0,
        cipher_suite_name: cipher_suite_name(sh.cipher.0),
        session_id: SessionId::from_slice(sh.session_id.unwrap_or_default()),
        ..ServerHelloInfo::default()
    };
    let walked = for_each_extension(sh.ext.unwrap_or_default(), |ty, whole| {
        // a draft's key_share (40, before draft 23), which tls-parser's
        // ServerHello extension parser does not read: one KeyShareEntry
        if TlsExtensionType(ty) == TlsExtensionType::KeyShareOld {
            info.key_share_group = be16(&whole[4..]);
            return;
        }
        let Ok((_, ext)) = parse_tls_server_hello_extension(whole) else {
            return;
        };
        match ext {
            TlsExtension::SupportedVersions(v) => {
                if let [selected] = v.as_slice() {
                    info.selected_version = Some(selected.0);
                }
            }
            TlsExtension::ALPN(names) => {
                info.alpn = names.first().map(|n| lossy_truncated(n, NAME_CAP));
            }
            TlsExtension::SessionTicket(_) => info.session_ticket = true,
            // ServerHello: `uint16 selected_identity` (RFC 8446 §4.2.11).
            TlsExtension::PreSharedKey(data) => info.pre_shared_key = be16(data),
            // ServerHello: one KeyShareEntry; HelloRetryRequest: the group alone.
            TlsExtension::KeyShare(data) => info.key_share_group = be16(data),
            _ => {}
        }
    });
    // a draft's ServerHello names its version in the fixed part (no
    // supported_versions extension yet)
    if is_early_tls13_draft(info.legacy_version) {
        info.selected_version.get_or_insert(info.legacy_version);
    }
    let problem = extension_problem(walked, sh.ext, rest, "ServerHello extensions");
    Ok((info, problem))
}

/// TLS 1.3 drafts 1–21 (`0x7f01`–`0x7f15`): their ServerHello is
/// `version | random | cipher_suite | extensions`, with no session id
/// and no compression method (draft-ietf-tls-tls13-21 §4.1.3; draft 22
/// brought back the TLS 1.2 layout with `supported_versions`).
fn is_early_tls13_draft(version: u16) -> bool {
    (0x7f01..=0x7f15).contains(&version)
}

/// A draft ServerHello's fixed part, read here: tls-parser reads this
/// layout for draft 18 alone (`parse_tls_handshake_msg_server_hello`
/// matches `0x7f12` only) and refuses the other drafts' hellos, which
/// clients of 2017 (OpenSSL 1.1.1-pre, NSS, BoringSSL) negotiated.
fn parse_draft_server_hello(
    body: &[u8],
) -> Result<(&[u8], tls_parser::TlsServerHelloContents<'_>), &'static str> {
    let fixed = body.get(..36).ok_or("ServerHello")?;
    let (version, random, cipher) = (
        u16::from_be_bytes([fixed[0], fixed[1]]),
        &fixed[2..34],
        u16::from_be_bytes([fixed[34], fixed[35]]),
    );
    let after = &body[36..];
    let (ext, rest) = match be16(after) {
        Some(len) => match after.get(2..2 + usize::from(len)) {
            Some(block) => (Some(block), &after[2 + usize::from(len)..]),
            None => (None, after),
        },
        None => (None, after),
    };
    let hello = tls_parser::TlsServerHelloContents::new(version, random, None, cipher, 0, ext);
    Ok((rest, hello))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tls13_draft_server_hello_has_no_session_id() {
        // draft 19: version, random, cipher suite, extensions (key_share,
        // numbered 40 before draft 23: x25519 and a 2-byte key)
        let mut body = vec![0x7f, 0x13];
        body.extend([7u8; 32]);
        body.extend([0x13, 0x02]);
        body.extend([0, 10, 0, 40, 0, 6, 0, 0x1d, 0, 2, 0xaa, 0xbb]);
        let (sh, problem) = parse_server_hello(&body).expect("parsed");
        assert_eq!(problem, None);
        assert_eq!(sh.version(), 0x7f13);
        assert_eq!(sh.cipher_suite, 0x1302);
        assert_eq!(sh.key_share_group, Some(0x1d));
        assert!(sh.session_id.is_empty());
        // cut inside the fixed part: refused
        assert!(parse_server_hello(&body[..30]).is_err());
    }

    #[test]
    fn an_sslv2_client_hello_offering_tls() {
        // 2 cipher specs (one TLS suite, one SSL 2.0 kind), no session
        // id, a 16-byte challenge
        let mut body = vec![0, 6, 0, 0, 0, 16, 0, 0, 0x2f, 0x07, 0, 0xc0];
        body.extend([0xab; 16]);
        let ch = parse_sslv2_client_hello(0x0301, &body).expect("parsed");
        assert_eq!(ch.legacy_version, 0x0301);
        assert_eq!(ch.cipher_suites, 1);
        assert_eq!(ch.random[..16], [0; 16]);
        assert_eq!(ch.random[16..], [0xab; 16]);
        // a challenge shorter than 16 bytes, or cut: refused
        body[5] = 8;
        assert!(parse_sslv2_client_hello(0x0301, &body).is_err());
        body[5] = 16;
        assert!(parse_sslv2_client_hello(0x0301, &body[..20]).is_err());
    }

    #[test]
    fn extension_walk_stops_on_truncation() {
        let mut seen = vec![];
        assert!(for_each_extension(&[0, 1, 0, 1, 9, 0, 2, 0, 0], |t, w| {
            seen.push((t, w.len()))
        }));
        assert_eq!(seen, vec![(1, 5), (2, 4)]);
        assert!(!for_each_extension(&[0, 1, 0, 5, 9], |_, _| ()));
        assert!(!for_each_extension(&[0, 1, 0], |_, _| ()));
    }

    #[test]
    fn key_share_groups() {
        // list len 10: x25519 (len 2) + secp256r1 (len 0), then truncated garbage
        let d = [0, 10, 0, 0x1d, 0, 2, 1, 2, 0, 0x17, 0, 0, 0xff];
        assert_eq!(client_key_share_groups(&d).as_slice(), [0x1d, 0x17]);
        assert!(client_key_share_groups(&[0]).is_empty());
    }

    #[test]
    fn truncated_extension_keeps_the_ones_before() {
        let name = b"a.example";
        let mut sni = vec![
            0,
            0,
            0,
            (name.len() + 5) as u8,
            0,
            (name.len() + 3) as u8,
            0,
            0,
        ];
        sni.push(name.len() as u8);
        sni.extend_from_slice(name);
        let mut block = sni;
        block.extend_from_slice(&[0, 16, 0, 9, 0]); // ALPN claiming 9 bytes, 1 present
        let mut body = vec![3, 3];
        body.extend_from_slice(&[0; 32]);
        body.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
        body.extend_from_slice(&(block.len() as u16).to_be_bytes());
        body.extend_from_slice(&block);
        let (info, problem) = parse_client_hello(&body).unwrap();
        assert_eq!(info.sni.as_deref(), Some("a.example"));
        assert_eq!(problem, Some("ClientHello extensions"));
        // An extension block longer than the message: no extensions at all.
        let n = body.len();
        body[n - block.len() - 1] += 1;
        let (info, problem) = parse_client_hello(&body).unwrap();
        assert!(info.sni.is_none());
        assert_eq!(problem, Some("ClientHello extensions"));
    }

    #[test]
    fn garbage_does_not_parse() {
        assert!(parse_client_hello(&[3, 3, 0]).is_err());
        assert!(parse_server_hello(&[]).is_err());
        assert!(parse_server_hello(&[0x7f, 0x12]).is_err());
    }
}
