//! QUIC packet protection (RFC 9001 §5): the Initial keys every observer
//! can derive from the client's first Destination Connection ID (§5.2), the
//! keys of the other spaces from a key log's TLS 1.3 secrets (§5.1), header
//! protection (§5.4), the AEAD (§5.3) and key updates (§6).
//!
//! The primitives are ring's (AES-GCM, ChaCha20-Poly1305, `aead::quic`
//! header protection, HKDF); the labels and salts of versions 1 and 2 are
//! here (RFC 9001 §5.2, RFC 9369 §3.3), with the TLS key schedule's
//! `HKDF-Expand-Label` of the TLS decryptor.

use ring::aead::{self, quic as hp, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hmac;

use super::packet::{decode_packet_number, Header, VERSION_2};
use crate::base::side::Side;
use crate::proto::tls::decrypt::keys::{expand_label, suite, Cipher, Hash, Suite};

/// Version 1's `initial_salt` (RFC 9001 §5.2).
const SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];
/// Version 2's `initial_salt` (RFC 9369 §3.3.1).
const SALT_V2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb,
    0xf9, 0xbd, 0x2e, 0xd9,
];

/// AEAD tag length of QUIC's ciphers, bytes.
const TAG_LEN: usize = 16;
/// Header protection sample length (RFC 9001 §5.4.2), bytes.
const SAMPLE_LEN: usize = 16;

/// The labels of a version's key derivation (RFC 9001 §5.1; RFC 9369 §3.3.2).
struct Labels {
    key: &'static [u8],
    iv: &'static [u8],
    hp: &'static [u8],
    ku: &'static [u8],
}

fn labels(version: u32) -> Labels {
    if version == VERSION_2 {
        Labels {
            key: b"quicv2 key",
            iv: b"quicv2 iv",
            hp: b"quicv2 hp",
            ku: b"quicv2 ku",
        }
    } else {
        Labels {
            key: b"quic key",
            iv: b"quic iv",
            hp: b"quic hp",
            ku: b"quic ku",
        }
    }
}

/// The packet protection keys of one direction and one key phase.
pub(crate) struct PacketKeys {
    aead: LessSafeKey,
    iv: [u8; 12],
    hp: hp::HeaderProtectionKey,
    /// The header protection key's bytes: a key update keeps them (RFC
    /// 9001 §6.1: "The header protection key is not updated").
    hp_bytes: Vec<u8>,
    /// For key updates: the secret these keys came from.
    secret: Vec<u8>,
    suite: Suite,
    version: u32,
}

impl std::fmt::Debug for PacketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketKeys").finish_non_exhaustive()
    }
}

impl PacketKeys {
    /// Keys from a TLS 1.3 traffic secret of `suite` (a key log line, or an
    /// Initial secret).
    pub(crate) fn from_secret(suite: Suite, secret: &[u8], version: u32) -> Option<PacketKeys> {
        PacketKeys::with_hp(suite, secret, version, None)
    }

    /// [`from_secret`](Self::from_secret), with the header protection key
    /// `hp_key` when given (a key update) instead of the secret's own.
    fn with_hp(
        suite: Suite,
        secret: &[u8],
        version: u32,
        hp_key: Option<&[u8]>,
    ) -> Option<PacketKeys> {
        let l = labels(version);
        let (aead_alg, hp_alg) = match suite.cipher {
            Cipher::Aes128Gcm => (&aead::AES_128_GCM, &hp::AES_128),
            Cipher::Aes256Gcm => (&aead::AES_256_GCM, &hp::AES_256),
            Cipher::Chacha20Poly1305 => (&aead::CHACHA20_POLY1305, &hp::CHACHA20),
            _ => return None,
        };
        let n = suite.cipher.key_len();
        let mut key = [0u8; 32];
        let mut hpk = [0u8; 32];
        let mut iv = [0u8; 12];
        expand_label(suite.hash, secret, l.key, &mut key[..n])?;
        expand_label(suite.hash, secret, l.iv, &mut iv)?;
        let hpk = match hp_key {
            Some(k) => k,
            None => {
                expand_label(suite.hash, secret, l.hp, &mut hpk[..n])?;
                &hpk[..n]
            }
        };
        Some(PacketKeys {
            aead: LessSafeKey::new(UnboundKey::new(aead_alg, &key[..n]).ok()?),
            iv,
            hp: hp::HeaderProtectionKey::new(hp_alg, hpk).ok()?,
            hp_bytes: hpk.to_vec(),
            secret: secret.to_vec(),
            suite,
            version,
        })
    }

    /// The Initial keys `side` sends with, from the client's first
    /// Destination Connection ID (RFC 9001 §5.2).
    pub(crate) fn initial(version: u32, dcid: &[u8], side: Side) -> Option<PacketKeys> {
        let salt = if version == VERSION_2 {
            &SALT_V2
        } else {
            &SALT_V1
        };
        // HKDF-Extract is HMAC(salt, IKM) (RFC 5869 §2.2)
        let initial = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, salt), dcid);
        let label: &[u8] = match side {
            Side::Client => b"client in",
            Side::Server => b"server in",
        };
        let mut secret = [0u8; 32];
        expand_label(Hash::Sha256, initial.as_ref(), label, &mut secret)?;
        let aes128 = suite(0x1301)?;
        PacketKeys::from_secret(aes128, &secret, version)
    }

    /// The keys of the next key phase (RFC 9001 §6.1: `"quic ku"`): a new
    /// AEAD key and IV; the header protection key stays.
    pub(crate) fn next(&self) -> Option<PacketKeys> {
        let mut secret = vec![0u8; self.suite.hash.len()];
        expand_label(
            self.suite.hash,
            &self.secret,
            labels(self.version).ku,
            &mut secret,
        )?;
        PacketKeys::with_hp(self.suite, &secret, self.version, Some(&self.hp_bytes))
    }
}

/// A packet whose protection was removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opened {
    /// The full packet number.
    pub(crate) pn: u64,
    /// The first byte without header protection (short header: key phase
    /// in bit 2, spin bit in bit 5).
    pub(crate) first: u8,
    /// The decrypted payload: the frames.
    pub(crate) payload: Vec<u8>,
}

/// Header protection removed from `h` with `keys`: the first byte and the
/// truncated packet number with its length, or `None` when the packet is
/// too short to sample (RFC 9001 §5.4.2).
pub(crate) fn unmask(keys: &PacketKeys, h: &Header<'_>) -> Option<(u8, u64, usize)> {
    let p = h.packet;
    let sample = p.get(h.pn_offset + 4..h.pn_offset + 4 + SAMPLE_LEN)?;
    let mask = keys.hp.new_mask(sample).ok()?;
    let long = p[0] & 0x80 != 0;
    let first = p[0] ^ (mask[0] & if long { 0x0f } else { 0x1f });
    let pn_len = usize::from(first & 3) + 1;
    let pn_bytes = p.get(h.pn_offset..h.pn_offset + pn_len)?;
    let truncated = pn_bytes
        .iter()
        .zip(&mask[1..])
        .fold(0u64, |v, (b, m)| (v << 8) | u64::from(b ^ m));
    Some((first, truncated, pn_len))
}

/// Opens `h` with `keys`, the largest packet number of its space so far
/// being `largest`; `scratch` holds the copy that is decrypted in place.
/// `None` when the packet does not authenticate (wrong keys, a corrupt or
/// cut packet).
pub(crate) fn open(
    keys: &PacketKeys,
    h: &Header<'_>,
    largest: Option<u64>,
    scratch: &mut Vec<u8>,
) -> Option<Opened> {
    let (first, truncated, pn_len) = unmask(keys, h)?;
    let pn = decode_packet_number(largest, truncated, pn_len);
    let body_at = h.pn_offset + pn_len;
    if h.packet.len() < body_at + TAG_LEN {
        return None;
    }
    scratch.clear();
    scratch.extend_from_slice(h.packet);
    scratch[0] = first;
    for (i, b) in scratch[h.pn_offset..body_at].iter_mut().enumerate() {
        *b = (truncated >> (8 * (pn_len - 1 - i))) as u8;
    }
    let mut nonce = keys.iv;
    for (n, b) in nonce[4..].iter_mut().zip(pn.to_be_bytes()) {
        *n ^= b;
    }
    let (aad, body) = scratch.split_at_mut(body_at);
    let plain = keys
        .aead
        .open_in_place(Nonce::assume_unique_for_key(nonce), Aad::from(&*aad), body)
        .ok()?;
    Some(Opened {
        pn,
        first,
        payload: plain.to_vec(),
    })
}

/// The suites a key log secret may be of, for 0-RTT packets sent before the
/// ServerHello names one (the resumed session's suite is not in the
/// capture): TLS 1.3's three.
pub(crate) fn tls13_suites() -> impl Iterator<Item = Suite> {
    [0x1301u16, 0x1302, 0x1303].into_iter().filter_map(suite)
}

/// The suite of a TLS 1.3 cipher suite id that QUIC can use.
pub(crate) fn quic_suite(id: u16) -> Option<Suite> {
    matches!(id, 0x1301..=0x1303).then(|| suite(id)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quic::packet::{packets, PacketType, VERSION_1};

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 9001 §A.3: the server's Initial, sealed with the server Initial
    /// keys of DCID 8394c8f03e515708 (version 1).
    #[test]
    fn rfc9001_a3_server_initial_opens() {
        let pkt = hex(
            "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a
             5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3
             dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84
             022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4
             2158407dd074ee",
        );
        let h = packets(&pkt, None).next().unwrap().unwrap();
        assert_eq!(h.ty, PacketType::Initial);
        let keys = PacketKeys::initial(VERSION_1, &hex("8394c8f03e515708"), Side::Server).unwrap();
        let o = open(&keys, &h, None, &mut Vec::new()).unwrap();
        assert_eq!(o.pn, 1);
        // ACK of 0, then the CRYPTO frame with the ServerHello
        assert_eq!(&o.payload[..6], &hex("02000000000600")[..6]);
        // the client's keys do not open it
        let wrong = PacketKeys::initial(VERSION_1, &hex("8394c8f03e515708"), Side::Client).unwrap();
        assert!(open(&wrong, &h, None, &mut Vec::new()).is_none());
    }

    /// RFC 9001 §A.5: a ChaCha20-Poly1305 short-header packet, packet
    /// number 654360564, from the given secret.
    #[test]
    fn rfc9001_a5_chacha20_short_header_opens() {
        let secret = hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b");
        let keys = PacketKeys::from_secret(suite(0x1303).unwrap(), &secret, VERSION_1).unwrap();
        let pkt = hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
        let h = packets(&pkt, Some(0)).next().unwrap().unwrap();
        let o = open(&keys, &h, Some(654_360_563), &mut Vec::new()).unwrap();
        assert_eq!(o.pn, 654_360_564);
        assert_eq!(o.payload, vec![0x01]); // a PING frame
    }

    /// RFC 9001 §A.5 and §6.1: the next key phase's secret is `"quic ku"`
    /// of the current one; the header protection key is not updated, so
    /// the packet's header opens alike under both phases.
    #[test]
    fn key_update_keeps_the_header_protection_key() {
        let secret = hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b");
        let keys = PacketKeys::from_secret(suite(0x1303).unwrap(), &secret, VERSION_1).unwrap();
        assert_eq!(
            keys.hp_bytes,
            hex("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4")
        );
        let next = keys.next().unwrap();
        assert_eq!(
            next.secret,
            hex("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9")
        );
        assert_eq!(next.hp_bytes, keys.hp_bytes);
        let pkt = hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb");
        let h = packets(&pkt, Some(0)).next().unwrap().unwrap();
        assert_eq!(unmask(&next, &h), unmask(&keys, &h));
        // the payload was sealed in the first phase: the next one's AEAD
        // key does not open it
        assert!(open(&next, &h, Some(654_360_563), &mut Vec::new()).is_none());
    }
}
