//! Packet protection of one connection (RFC 9001 §5): the keys of each
//! space and direction, taken from the Initial salt or the key log, and
//! what they opened.

use std::collections::BTreeMap;

use super::QuicConn;
use crate::base::side::Side;
use crate::capture::keylog::{KeyStore, SecretLabel, Secrets};
use crate::quic::packet::{Header, PacketType};
use crate::quic::protect::{open, quic_suite, tls13_suites, PacketKeys};

/// Keys of the 1-RTT space for one direction: the current phase and the
/// next (RFC 9001 §6).
struct OneRtt {
    keys: PacketKeys,
    phase: bool,
    next: Option<PacketKeys>,
}

/// The keys a connection has, by space and sender.
#[derive(Default)]
struct Keys {
    initial: [Option<PacketKeys>; 2],
    /// The client's Destination Connection ID the Initial keys came from.
    initial_dcid: Vec<u8>,
    handshake: [Option<PacketKeys>; 2],
    zero_rtt: Option<PacketKeys>,
    one_rtt: [Option<OneRtt>; 2],
    secrets: Option<Secrets>,
}

/// Packet protection (RFC 9001 §5): the Initial keys (§5.2), the
/// Handshake, 0-RTT and 1-RTT keys from the key log's secrets, the 1-RTT
/// key phase (§6), and counts of the packets opened and not.
pub struct Protection {
    /// Packets decrypted, per sender.
    pub opened: [u64; 2],
    /// Packets whose decryption was not possible, per type name.
    pub not_opened: BTreeMap<&'static str, u64>,
    keys: Keys,
    store: KeyStore,
    /// The buffer packets are decrypted into.
    scratch: Vec<u8>,
}

impl Protection {
    /// No keys yet; secrets looked up in `store`.
    pub(super) fn new(store: KeyStore) -> Protection {
        Protection {
            opened: [0; 2],
            not_opened: BTreeMap::new(),
            keys: Keys::default(),
            store,
            scratch: Vec::new(),
        }
    }

    /// A key log held this connection's secrets.
    pub fn keys_logged(&self) -> bool {
        self.keys.secrets.is_some()
    }

    /// The decryption buffer, taken while a packet's frames are read.
    pub(super) fn take_scratch(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.scratch)
    }

    /// The decryption buffer given back.
    pub(super) fn put_scratch(&mut self, scratch: Vec<u8>) {
        self.scratch = scratch;
    }

    /// The Initial keys of both directions from the client's Destination
    /// Connection ID `dcid` (RFC 9001 §5.2): set the first time, again on
    /// `renew` (a new version) or when `dcid` is the SCID of the Retry
    /// (`retry_scid`) and not yet the keys' DCID.
    pub(super) fn initial(
        &mut self,
        version: u32,
        dcid: &[u8],
        renew: bool,
        retry_scid: Option<&[u8]>,
    ) {
        let after_retry = retry_scid == Some(dcid) && self.keys.initial_dcid != dcid;
        if self.keys.initial[0].is_none() || renew || after_retry {
            self.keys.initial_dcid = dcid.to_vec();
            self.keys.initial = [
                PacketKeys::initial(version, dcid, Side::Client),
                PacketKeys::initial(version, dcid, Side::Server),
            ];
        }
    }
}

impl QuicConn {
    /// Opens `h` sent by `side` in `space` with the keys at hand, fetching
    /// them from the key log when the hellos make them known.
    pub(super) fn open(
        &mut self,
        side: Side,
        h: &Header<'_>,
        space: usize,
    ) -> Option<crate::quic::protect::Opened> {
        let s = side.index();
        let largest = self.recovery.largest[s][space];
        match h.ty {
            PacketType::Initial => {
                let k = self.protection.keys.initial[s].as_ref()?;
                open(k, h, largest, &mut self.protection.scratch)
            }
            PacketType::Handshake => {
                if self.protection.keys.handshake[s].is_none() {
                    self.derive(
                        side,
                        SecretLabel::ClientHandshakeTraffic,
                        SecretLabel::ServerHandshakeTraffic,
                        1,
                    );
                }
                let k = self.protection.keys.handshake[s].as_ref()?;
                open(k, h, largest, &mut self.protection.scratch)
            }
            PacketType::ZeroRtt => {
                if self.protection.keys.zero_rtt.is_none() {
                    self.zero_rtt_keys(h, largest);
                }
                let k = self.protection.keys.zero_rtt.as_ref()?;
                open(k, h, largest, &mut self.protection.scratch)
            }
            PacketType::OneRtt => {
                if self.protection.keys.one_rtt[s].is_none() {
                    self.derive(
                        side,
                        SecretLabel::ClientTraffic0,
                        SecretLabel::ServerTraffic0,
                        2,
                    );
                }
                let k = self.protection.keys.one_rtt[s].as_mut()?;
                let (first, _, _) = crate::quic::protect::unmask(&k.keys, h)?;
                let phase = first & 0x04 != 0;
                if phase == k.phase {
                    return open(&k.keys, h, largest, &mut self.protection.scratch);
                }
                // a key update (RFC 9001 §6): try the next phase's keys
                if k.next.is_none() {
                    k.next = k.keys.next();
                }
                let o = open(k.next.as_ref()?, h, largest, &mut self.protection.scratch)?;
                let next = k.next.take()?;
                k.keys = next;
                k.phase = phase;
                Some(o)
            }
            _ => None,
        }
    }

    /// The connection's secrets from the key log, by its ClientHello's
    /// random.
    pub(super) fn secrets(&mut self) -> Option<&Secrets> {
        if self.protection.keys.secrets.is_none() {
            let (ch, _) = self.client_hello()?;
            self.protection.keys.secrets = self.protection.store.get(&ch.random);
        }
        self.protection.keys.secrets.as_ref()
    }

    /// Handshake (`space` 1) or 1-RTT (2) keys of both directions from the
    /// logged secrets and the ServerHello's suite.
    pub(super) fn derive(
        &mut self,
        side: Side,
        client: SecretLabel,
        server: SecretLabel,
        space: usize,
    ) {
        let Some(suite) = self
            .server_hellos()
            .iter()
            .rev()
            .find(|(sh, _)| !sh.hello_retry_request)
            .and_then(|(sh, _)| quic_suite(sh.cipher_suite))
        else {
            return;
        };
        let version = self.version;
        let Some(secrets) = self.secrets().cloned() else {
            return;
        };
        let label = if side == Side::Client { client } else { server };
        let Some(secret) = secrets.get(label) else {
            return;
        };
        let Some(keys) = PacketKeys::from_secret(suite, secret, version) else {
            return;
        };
        if space == 1 {
            self.protection.keys.handshake[side.index()] = Some(keys);
        } else {
            self.protection.keys.one_rtt[side.index()] = Some(OneRtt {
                keys,
                phase: false,
                next: None,
            });
        }
    }

    /// 0-RTT keys: the early secret with whichever TLS 1.3 suite opens the
    /// packet (the resumed session's suite is not in the capture).
    pub(super) fn zero_rtt_keys(&mut self, h: &Header<'_>, largest: Option<u64>) {
        let version = self.version;
        let Some(secret) = self
            .secrets()
            .and_then(|s| s.get(SecretLabel::ClientEarlyTraffic))
            .map(<[u8]>::to_vec)
        else {
            return;
        };
        for suite in tls13_suites() {
            if let Some(k) = PacketKeys::from_secret(suite, &secret, version) {
                if open(&k, h, largest, &mut self.protection.scratch).is_some() {
                    self.protection.keys.zero_rtt = Some(k);
                    return;
                }
            }
        }
    }
}
