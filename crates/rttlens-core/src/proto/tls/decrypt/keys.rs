//! Record keys from logged secrets: the cipher suites we decrypt, TLS 1.3's
//! `HKDF-Expand-Label` (RFC 8446 §7.1, §7.3), TLS 1.2's PRF and key block
//! (RFC 5246 §5, §6.3; RFC 5288 §3 for GCM, RFC 7905 §2 for
//! ChaCha20-Poly1305), and opening one record.
//!
//! TLS 1.1/1.2 CBC suites (RFC 5246 §6.2.3.2: explicit IV, MAC-then-encrypt)
//! are opened too, their MAC checked.
//!
//! The primitives (AES-GCM, ChaCha20-Poly1305, HMAC, HKDF) are ring's, AES-CBC
//! is RustCrypto's `aes` and `cbc` (ring has no CBC); the key schedule glue is
//! ours, as no crate we checked exposes a TLS key schedule from logged
//! secrets (rustls keeps its schedule private).

use aes::cipher::{BlockDecryptMut, KeyIvInit};
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::{hkdf, hmac};

/// AEAD tag length of every suite we decrypt (bytes).
pub(crate) const TAG_LEN: usize = 16;
/// Explicit nonce carried by a TLS 1.2 AES-GCM record (RFC 5288 §3), bytes.
const GCM_EXPLICIT_NONCE: usize = 8;

/// The hash of a suite's key schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hash {
    Sha256,
    Sha384,
}

impl Hash {
    pub(crate) fn len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }

    pub(crate) fn hkdf(self) -> hkdf::Algorithm {
        match self {
            Hash::Sha256 => hkdf::HKDF_SHA256,
            Hash::Sha384 => hkdf::HKDF_SHA384,
        }
    }

    pub(crate) fn hmac(self) -> hmac::Algorithm {
        match self {
            Hash::Sha256 => hmac::HMAC_SHA256,
            Hash::Sha384 => hmac::HMAC_SHA384,
        }
    }
}

/// The AEAD of a suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cipher {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
    /// AES-CBC with an HMAC of the given hash (TLS ≤ 1.2).
    Aes128Cbc(Mac),
    Aes256Cbc(Mac),
}

/// The HMAC of a CBC suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mac {
    Sha1,
    Sha256,
    Sha384,
}

impl Mac {
    fn len(self) -> usize {
        match self {
            Mac::Sha1 => 20,
            Mac::Sha256 => 32,
            Mac::Sha384 => 48,
        }
    }

    fn algorithm(self) -> hmac::Algorithm {
        match self {
            Mac::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            Mac::Sha256 => hmac::HMAC_SHA256,
            Mac::Sha384 => hmac::HMAC_SHA384,
        }
    }
}

impl Cipher {
    pub(crate) fn key_len(self) -> usize {
        match self {
            Cipher::Aes128Gcm | Cipher::Aes128Cbc(_) => 16,
            Cipher::Aes256Gcm | Cipher::Chacha20Poly1305 | Cipher::Aes256Cbc(_) => 32,
        }
    }

    fn mac(self) -> Option<Mac> {
        match self {
            Cipher::Aes128Cbc(m) | Cipher::Aes256Cbc(m) => Some(m),
            _ => None,
        }
    }

    /// Bytes of `*_write_IV` in TLS 1.2's key block: the 4-byte salt of
    /// GCM (RFC 5288 §3), the whole 12-byte nonce mask of ChaCha20 (RFC
    /// 7905 §2); CBC records carry their IV (TLS 1.1+, RFC 5246 §6.2.3.2).
    fn tls12_iv_len(self) -> usize {
        match self {
            Cipher::Aes128Gcm | Cipher::Aes256Gcm => 4,
            Cipher::Chacha20Poly1305 => 12,
            Cipher::Aes128Cbc(_) | Cipher::Aes256Cbc(_) => 0,
        }
    }
}

/// A cipher suite we can decrypt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Suite {
    pub(crate) cipher: Cipher,
    pub(crate) hash: Hash,
}

/// The suite `id` if we decrypt it: TLS 1.3's three (RFC 8446 §B.4) and TLS
/// 1.2's AEAD and AES-CBC suites with (EC)DHE or RSA key exchange (the key
/// exchange does not matter once the master secret is logged). Not: 3DES,
/// RC4, NULL, export, CCM, ARIA, Camellia.
pub(crate) fn suite(id: u16) -> Option<Suite> {
    use Cipher::*;
    use Hash::*;
    let (cipher, hash) = match id {
        0x1301 => (Aes128Gcm, Sha256),
        0x1302 => (Aes256Gcm, Sha384),
        0x1303 => (Chacha20Poly1305, Sha256),
        // TLS_{RSA,DHE_RSA,ECDHE_ECDSA,ECDHE_RSA}_WITH_AES_128_GCM_SHA256
        0x009C | 0x009E | 0xC02B | 0xC02F => (Aes128Gcm, Sha256),
        // … _WITH_AES_256_GCM_SHA384
        0x009D | 0x009F | 0xC02C | 0xC030 => (Aes256Gcm, Sha384),
        // TLS_{ECDHE_RSA,ECDHE_ECDSA,DHE_RSA}_WITH_CHACHA20_POLY1305_SHA256
        0xCCA8..=0xCCAA => (Chacha20Poly1305, Sha256),
        // TLS_{RSA,DHE_RSA,ECDHE_ECDSA,ECDHE_RSA}_WITH_AES_128_CBC_SHA
        0x002F | 0x0033 | 0xC009 | 0xC013 => (Aes128Cbc(Mac::Sha1), Sha256),
        // … _WITH_AES_256_CBC_SHA
        0x0035 | 0x0039 | 0xC00A | 0xC014 => (Aes256Cbc(Mac::Sha1), Sha256),
        // … _WITH_AES_128_CBC_SHA256
        0x003C | 0x0067 | 0xC023 | 0xC027 => (Aes128Cbc(Mac::Sha256), Sha256),
        // _WITH_AES_256_CBC_SHA256 (RSA, DHE_RSA)
        0x003D | 0x006B => (Aes256Cbc(Mac::Sha256), Sha256),
        // ECDHE_{ECDSA,RSA}_WITH_AES_256_CBC_SHA384
        0xC024 | 0xC028 => (Aes256Cbc(Mac::Sha384), Sha384),
        _ => return None,
    };
    Some(Suite { cipher, hash })
}

/// An output length for ring's HKDF.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

/// `HKDF-Expand-Label(secret, label, "", out.len())` (RFC 8446 §7.1): the
/// `HkdfLabel` is the length (u16), `"tls13 " + label` (u8 length) and an
/// empty context.
pub(crate) fn expand_label(hash: Hash, secret: &[u8], label: &[u8], out: &mut [u8]) -> Option<()> {
    let prk = hkdf::Prk::new_less_safe(hash.hkdf(), secret);
    let len = u16::try_from(out.len()).ok()?.to_be_bytes();
    let label_len = [u8::try_from(6 + label.len()).ok()?];
    let info: [&[u8]; 5] = [&len, &label_len, b"tls13 ", label, &[0]];
    prk.expand(&info, Len(out.len())).ok()?.fill(out).ok()
}

/// The next generation of a TLS 1.3 application traffic secret after a
/// KeyUpdate: `HKDF-Expand-Label(secret, "traffic upd", "", Hash.length)`
/// (RFC 8446 §7.2).
pub(crate) fn next_traffic_secret(hash: Hash, secret: &[u8]) -> Option<Vec<u8>> {
    let mut out = vec![0; hash.len()];
    expand_label(hash, secret, b"traffic upd", &mut out)?;
    Some(out)
}

/// How a record's nonce and additional data are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// TLS 1.3 (RFC 8446 §5.2, §5.3): nonce = iv ⊕ seq, AAD = the record
    /// header, the plaintext ends with its content type and zero padding.
    Tls13,
    /// TLS 1.2 AES-GCM (RFC 5288 §3): nonce = salt ‖ the record's 8-byte
    /// explicit nonce, AAD = seq ‖ type ‖ version ‖ plaintext length.
    Tls12Gcm,
    /// TLS 1.2 ChaCha20-Poly1305 (RFC 7905 §2): nonce = iv ⊕ seq, AAD as
    /// for GCM.
    Tls12Chacha,
    /// TLS 1.1/1.2 CBC (RFC 5246 §6.2.3.2): IV ‖ AES-CBC(content ‖ MAC ‖
    /// padding ‖ padding length), MAC = HMAC(seq ‖ type ‖ version ‖ length ‖
    /// content).
    Cbc,
}

/// The key that protects records.
enum Protection {
    // boxed: ring's key is 544 bytes, two per keyed connection
    Aead(Box<LessSafeKey>),
    Cbc(Box<CbcKey>),
}

/// An AES-CBC key with its HMAC key.
struct CbcKey {
    key: [u8; 32],
    key_len: usize,
    mac: Mac,
    mac_key: hmac::Key,
}

/// One direction's record protection under one secret, with its sequence
/// number.
pub(crate) struct RecordKey {
    key: Protection,
    iv: [u8; 12],
    framing: Framing,
    /// Sequence number of the next record (RFC 8446 §5.3, RFC 5246 §6.1).
    pub(crate) seq: u64,
}

impl std::fmt::Debug for RecordKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordKey")
            .field("framing", &self.framing)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// A record opened: the content type and where the plaintext sits in the
/// buffer that was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opened {
    /// The real content type (TLS 1.3: the inner one).
    pub(crate) content_type: u8,
    /// Plaintext range within the buffer given to [`RecordKey::open`].
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl RecordKey {
    /// TLS 1.3 keys from a traffic secret: `key = HKDF-Expand-Label(secret,
    /// "key", "", key_length)`, `iv = HKDF-Expand-Label(secret, "iv", "",
    /// 12)` (RFC 8446 §7.3).
    pub(crate) fn tls13(suite: Suite, secret: &[u8]) -> Option<RecordKey> {
        let mut key = [0u8; 32];
        let key = &mut key[..suite.cipher.key_len()];
        expand_label(suite.hash, secret, b"key", key)?;
        let mut iv = [0u8; 12];
        expand_label(suite.hash, secret, b"iv", &mut iv)?;
        RecordKey::new(suite.cipher, key, iv, Framing::Tls13)
    }

    /// TLS 1.2 keys of both directions (client's, server's) from the
    /// master secret: `key_block = PRF(master_secret, "key expansion",
    /// server_random + client_random)` cut into the write keys and IVs
    /// (RFC 5246 §6.3; AEAD suites have no MAC keys).
    pub(crate) fn tls12_pair(
        suite: Suite,
        master: &[u8],
        client_random: &[u8; 32],
        server_random: &[u8; 32],
    ) -> Option<(RecordKey, RecordKey)> {
        let (key_len, iv_len) = (suite.cipher.key_len(), suite.cipher.tls12_iv_len());
        let mac_len = suite.cipher.mac().map_or(0, Mac::len);
        let mut block = [0u8; 2 * (48 + 32 + 12)];
        let block = &mut block[..2 * (mac_len + key_len + iv_len)];
        let mut seed = [0u8; 64];
        seed[..32].copy_from_slice(server_random);
        seed[32..].copy_from_slice(client_random);
        prf(suite.hash, master, b"key expansion", &seed, block);
        let (client_mac, rest) = block.split_at(mac_len);
        let (server_mac, rest) = rest.split_at(mac_len);
        if let Some(mac) = suite.cipher.mac() {
            let (client_key, rest) = rest.split_at(key_len);
            let server_key = &rest[..key_len];
            return Some((
                RecordKey::cbc(mac, client_mac, client_key),
                RecordKey::cbc(mac, server_mac, server_key),
            ));
        }
        let block = rest;
        let (client_key, rest) = block.split_at(key_len);
        let (server_key, rest) = rest.split_at(key_len);
        let (client_iv, server_iv) = rest.split_at(iv_len);
        let framing = match suite.cipher {
            Cipher::Chacha20Poly1305 => Framing::Tls12Chacha,
            _ => Framing::Tls12Gcm,
        };
        let iv = |b: &[u8]| {
            let mut iv = [0u8; 12];
            iv[..b.len()].copy_from_slice(b);
            iv
        };
        Some((
            RecordKey::new(suite.cipher, client_key, iv(client_iv), framing)?,
            RecordKey::new(suite.cipher, server_key, iv(server_iv), framing)?,
        ))
    }

    fn new(cipher: Cipher, key: &[u8], iv: [u8; 12], framing: Framing) -> Option<RecordKey> {
        let algorithm = match cipher {
            Cipher::Aes128Gcm => &aead::AES_128_GCM,
            Cipher::Aes256Gcm => &aead::AES_256_GCM,
            Cipher::Chacha20Poly1305 => &aead::CHACHA20_POLY1305,
            Cipher::Aes128Cbc(_) | Cipher::Aes256Cbc(_) => return None,
        };
        let key = UnboundKey::new(algorithm, key).ok()?;
        Some(RecordKey {
            key: Protection::Aead(Box::new(LessSafeKey::new(key))),
            iv,
            framing,
            seq: 0,
        })
    }

    fn cbc(mac: Mac, mac_key: &[u8], key: &[u8]) -> RecordKey {
        let mut k = [0u8; 32];
        k[..key.len()].copy_from_slice(key);
        RecordKey {
            key: Protection::Cbc(Box::new(CbcKey {
                key: k,
                key_len: key.len(),
                mac,
                mac_key: hmac::Key::new(mac.algorithm(), mac_key),
            })),
            iv: [0; 12],
            framing: Framing::Cbc,
            seq: 0,
        }
    }

    /// The per-record nonce `iv ⊕ seq` (seq as 64-bit big-endian, left-padded
    /// to the IV's 12 bytes).
    fn xor_nonce(&self) -> [u8; 12] {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    /// Opens one record in place: `header` is its 5-byte header as on the
    /// wire, `payload` its whole payload (ciphertext and tag). On success
    /// the sequence number advances; on failure nothing changes (the
    /// payload may be overwritten).
    pub(crate) fn open(&mut self, header: [u8; 5], payload: &mut [u8]) -> Option<Opened> {
        let opened = match (&self.key, self.framing) {
            (Protection::Cbc(k), _) => open_cbc(
                &k.key[..k.key_len],
                k.mac,
                &k.mac_key,
                self.seq,
                header,
                payload,
            )?,
            (Protection::Aead(key), Framing::Tls13) => {
                let nonce = Nonce::assume_unique_for_key(self.xor_nonce());
                let plain = key.open_in_place(nonce, Aad::from(header), payload).ok()?;
                // TLSInnerPlaintext: content ‖ type ‖ zeros (RFC 8446 §5.2)
                let end = plain.iter().rposition(|&b| b != 0)?;
                Opened {
                    content_type: plain[end],
                    start: 0,
                    end,
                }
            }
            (Protection::Aead(key), _) => {
                let explicit = if self.framing == Framing::Tls12Gcm {
                    GCM_EXPLICIT_NONCE
                } else {
                    0
                };
                let plain_len = payload.len().checked_sub(explicit + TAG_LEN)?;
                let nonce = if explicit > 0 {
                    let mut n = [0u8; 12];
                    n[..4].copy_from_slice(&self.iv[..4]);
                    n[4..].copy_from_slice(&payload[..GCM_EXPLICIT_NONCE]);
                    n
                } else {
                    self.xor_nonce()
                };
                let mut aad = [0u8; 13];
                aad[..8].copy_from_slice(&self.seq.to_be_bytes());
                aad[8..11].copy_from_slice(&header[..3]);
                aad[11..].copy_from_slice(&u16::try_from(plain_len).ok()?.to_be_bytes());
                let nonce = Nonce::assume_unique_for_key(nonce);
                key.open_in_place(nonce, Aad::from(aad), &mut payload[explicit..])
                    .ok()?;
                Opened {
                    content_type: header[0],
                    start: explicit,
                    end: explicit + plain_len,
                }
            }
        };
        self.seq += 1;
        Some(opened)
    }
}

/// Opens a CBC record (RFC 5246 §6.2.3.2): the first block is the IV; the
/// padding's bytes must all equal its length byte and the MAC must match.
fn open_cbc(
    key: &[u8],
    mac: Mac,
    mac_key: &hmac::Key,
    seq: u64,
    header: [u8; 5],
    payload: &mut [u8],
) -> Option<Opened> {
    const BLOCK: usize = 16;
    if payload.len() < 2 * BLOCK || payload.len() % BLOCK != 0 {
        return None;
    }
    let (iv, body) = payload.split_at_mut(BLOCK);
    match key.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_mut::<cbc::cipher::block_padding::NoPadding>(body)
            .ok()?,
        _ => cbc::Decryptor::<aes::Aes256>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_mut::<cbc::cipher::block_padding::NoPadding>(body)
            .ok()?,
    };
    let pad = usize::from(*body.last()?);
    let unpadded = body.len().checked_sub(pad + 1)?;
    if body[unpadded..body.len() - 1]
        .iter()
        .any(|&b| usize::from(b) != pad)
    {
        return None;
    }
    let content_len = unpadded.checked_sub(mac.len())?;
    let mut ctx = hmac::Context::with_key(mac_key);
    ctx.update(&seq.to_be_bytes());
    ctx.update(&header[..3]);
    ctx.update(&u16::try_from(content_len).ok()?.to_be_bytes());
    ctx.update(&body[..content_len]);
    let tag = ctx.sign();
    if tag.as_ref() != &body[content_len..unpadded] {
        return None;
    }
    Some(Opened {
        content_type: header[0],
        start: BLOCK,
        end: BLOCK + content_len,
    })
}

/// The TLS 1.2 PRF: `P_hash(secret, label + seed)` (RFC 5246 §5), filling
/// `out`.
fn prf(hash: Hash, secret: &[u8], label: &[u8], seed: &[u8], out: &mut [u8]) {
    let key = hmac::Key::new(hash.hmac(), secret);
    // A(1) = HMAC(secret, label + seed); A(i) = HMAC(secret, A(i-1))
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(label);
    ctx.update(seed);
    let mut a = ctx.sign();
    let mut filled = 0;
    while filled < out.len() {
        let mut ctx = hmac::Context::with_key(&key);
        ctx.update(a.as_ref());
        ctx.update(label);
        ctx.update(seed);
        let chunk = ctx.sign();
        let n = chunk.as_ref().len().min(out.len() - filled);
        out[filled..filled + n].copy_from_slice(&chunk.as_ref()[..n]);
        filled += n;
        a = hmac::sign(&key, a.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 8448 §3 (simple 1-RTT handshake): the server's handshake
    /// traffic secret gives the key and IV the RFC lists.
    #[test]
    fn tls13_keys_match_rfc8448() {
        let secret = hex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38");
        let suite = suite(0x1301).unwrap();
        let mut key = [0u8; 16];
        expand_label(suite.hash, &secret, b"key", &mut key).unwrap();
        assert_eq!(key.to_vec(), hex("3fce516009c21727d0f2e4e86ee403bc"));
        let mut iv = [0u8; 12];
        expand_label(suite.hash, &secret, b"iv", &mut iv).unwrap();
        assert_eq!(iv.to_vec(), hex("5d313eb2671276ee13000b30"));
    }

    /// The TLS 1.2 PRF test vector (SHA-256) published with the IETF TLS
    /// working group's PRF tests (www.ietf.org/mail-archive/web/tls/current/msg03416.html).
    #[test]
    fn tls12_prf_sha256_vector() {
        let secret = hex("9bbe436ba940f017b17652849a71db35");
        let seed = hex("a0ba9f936cda311827a6f796ffd5198c");
        let mut out = [0u8; 100];
        prf(Hash::Sha256, &secret, b"test label", &seed, &mut out);
        assert_eq!(
            out.to_vec(),
            hex(concat!(
                "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a",
                "6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab",
                "4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701",
                "87347b66"
            ))
        );
    }

    #[test]
    fn old_and_unknown_suites_are_not_decrypted() {
        assert!(suite(0x000A).is_none()); // TLS_RSA_WITH_3DES_EDE_CBC_SHA
        assert!(suite(0x0005).is_none()); // TLS_RSA_WITH_RC4_128_SHA
        assert_eq!(suite(0xC013).unwrap().cipher, Cipher::Aes128Cbc(Mac::Sha1));
        assert_eq!(suite(0x1302).unwrap().hash, Hash::Sha384);
        assert_eq!(suite(0xCCA8).unwrap().cipher, Cipher::Chacha20Poly1305);
    }

    #[test]
    fn a_record_sealed_with_the_key_opens_and_a_tampered_one_does_not() {
        let suite = suite(0x1303).unwrap();
        let secret = [7u8; 32];
        let mut k = RecordKey::tls13(suite, &secret).unwrap();
        // seal "hello" + inner type 23 + 2 bytes of padding with the same key
        let sealer = RecordKey::tls13(suite, &secret).unwrap();
        let mut data = b"hello\x17\0\0".to_vec();
        let header = [23, 3, 3, 0, (data.len() + TAG_LEN) as u8];
        let nonce = Nonce::assume_unique_for_key(sealer.xor_nonce());
        let Protection::Aead(key) = &sealer.key else {
            unreachable!("ChaCha20-Poly1305 is an AEAD")
        };
        key.seal_in_place_append_tag(nonce, Aad::from(header), &mut data)
            .unwrap();
        let mut bad = data.clone();
        bad[0] ^= 1;
        assert!(k.open(header, &mut bad).is_none());
        assert_eq!(k.seq, 0);
        let o = k.open(header, &mut data).unwrap();
        assert_eq!((o.content_type, &data[o.start..o.end]), (23, &b"hello"[..]));
        assert_eq!(k.seq, 1);
    }
}
