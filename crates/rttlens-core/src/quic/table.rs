//! QUIC connections of a capture: datagrams matched to their connection by
//! UDP 4-tuple, and by connection ID when a connection moves to another
//! (RFC 9000 §9, connection migration); new connections start at a
//! long-header packet of a version rttlens reads.

use std::net::SocketAddr;

use rustc_hash::FxHashMap;

use super::conn::QuicConn;
use super::packet::{is_long_header, packets, PacketType, MAX_CID_LEN};
use crate::base::side::{FrameRef, Side};
use crate::base::time::{Duration, Timestamp};
use crate::capture::keylog::KeyStore;
use crate::wire::UdpDatagram;

/// A connection with no packet for this long is handed on (RFC 9000 §10.1:
/// idle timeouts are commonly 30 s; a browser's are longer, and a
/// connection handed on early is then split in two).
const IDLE: Duration = Duration::from_millis(120_000);
/// A connection that sent CONNECTION_CLOSE is handed on this long after its
/// last packet (RFC 9000 §10.2: the closing period, three PTOs).
const CLOSED_LINGER: Duration = Duration::from_millis(3_000);

/// The QUIC connections open in a capture.
#[derive(Debug, Default)]
pub struct QuicTable {
    conns: FxHashMap<u64, QuicConn>,
    /// Both orders of each connection's 4-tuple.
    by_tuple: FxHashMap<(SocketAddr, SocketAddr), u64>,
    by_cid: FxHashMap<Vec<u8>, u64>,
    /// Lengths of the connection IDs in `by_cid`, bit per length.
    cid_lens: u32,
    next: u64,
    store: KeyStore,
    /// UDP datagrams that were QUIC.
    pub datagrams: u64,
    /// Connections moved to another 4-tuple.
    pub migrations: u64,
    /// Keep every connection's datagrams ([`QuicConn::trace`]).
    trace: bool,
    /// Keep every connection's packets and frames ([`QuicConn::journal`]).
    journal: bool,
}

impl QuicTable {
    /// An empty table looking up secrets in `store`.
    pub fn new(store: KeyStore) -> QuicTable {
        QuicTable {
            store,
            ..QuicTable::default()
        }
    }

    /// The same table, its connections keeping every datagram
    /// ([`QuicConn::trace`]) when `trace` is set.
    pub fn with_trace(mut self, trace: bool) -> QuicTable {
        self.trace = trace;
        self
    }

    /// The same table, its connections keeping every packet with its
    /// frames ([`QuicConn::journal`]) when `journal` is set.
    pub fn with_journal(mut self, journal: bool) -> QuicTable {
        self.journal = journal;
        self
    }

    /// Reads `d`; `false` when it is not QUIC (or of no connection known).
    /// Connections that ended go to `done`.
    pub fn push(
        &mut self,
        d: &UdpDatagram<'_>,
        at: FrameRef,
        done: &mut dyn FnMut(QuicConn),
    ) -> bool {
        let src = SocketAddr::new(d.src, d.src_port);
        let dst = SocketAddr::new(d.dst, d.dst_port);
        let id = match self.by_tuple.get(&(src, dst)) {
            Some(&id) if self.is_new_attempt(id, src, d) => {
                if let Some(old) = self.remove(id) {
                    done(old);
                }
                self.open(d, at)
            }
            Some(&id) => id,
            None => match self.by_cid_of(d) {
                Some(id) => {
                    self.migrations += 1;
                    self.by_tuple.insert((src, dst), id);
                    self.by_tuple.insert((dst, src), id);
                    id
                }
                None if is_long_header(d.payload)
                    || super::conn::greased_first_initial(d.payload) =>
                {
                    self.open(d, at)
                }
                None => return false,
            },
        };
        self.datagrams += 1;
        let Some(c) = self.conns.get_mut(&id) else {
            return false;
        };
        let side = c.side_of(src);
        c.push(side, d, at);
        let mut cids: Vec<Vec<u8>> = std::mem::take(&mut c.signals.new_cids);
        for s in &c.scid {
            if !s.is_empty() && !self.by_cid.contains_key(s) {
                cids.push(s.clone());
            }
        }
        for cid in cids {
            if (1..=MAX_CID_LEN).contains(&cid.len()) {
                self.cid_lens |= 1 << cid.len();
                self.by_cid.insert(cid, id);
            }
        }
        true
    }

    /// Whether a client Initial on a known 4-tuple starts a new connection:
    /// to a Destination Connection ID the connection never used, protected
    /// with the keys of that very ID (a first Initial, RFC 9001 §5.2), with
    /// no Retry or Version Negotiation before it.
    fn is_new_attempt(&self, id: u64, src: SocketAddr, d: &UdpDatagram<'_>) -> bool {
        let Some(c) = self.conns.get(&id) else {
            return false;
        };
        if c.side_of(src) != Side::Client || c.original_dcid.is_empty() {
            return false;
        }
        let Some(Ok(h)) = packets(d.payload, None).fixed_bit_optional().next() else {
            return false;
        };
        h.ty == PacketType::Initial
            && h.dcid != c.original_dcid.as_slice()
            && h.dcid != c.scid[Side::Server.index()].as_slice()
            && c.redirects.retry.is_empty()
            && c.redirects.version_negotiation.is_empty()
            && super::conn::opens_as_first_initial(&h)
    }

    /// The connection whose connection ID a short header from an unknown
    /// 4-tuple carries.
    fn by_cid_of(&self, d: &UdpDatagram<'_>) -> Option<u64> {
        let p = d.payload;
        if p.first().is_none_or(|b| b & 0xc0 != 0x40) || self.by_cid.is_empty() {
            return None;
        }
        (1..=MAX_CID_LEN)
            .filter(|n| self.cid_lens & (1 << n) != 0)
            .find_map(|n| self.by_cid.get(p.get(1..1 + n)?).copied())
    }

    fn open(&mut self, d: &UdpDatagram<'_>, at: FrameRef) -> u64 {
        let id = self.next;
        self.next += 1;
        let mut c = QuicConn::new(id, d, at, self.store.clone());
        if self.trace {
            c.trace = Some(Box::default());
        }
        if self.journal {
            c.journal = Some(Box::default());
            c.signals.h3.keep_frames();
        }
        self.by_tuple.insert((c.client, c.server), id);
        self.by_tuple.insert((c.server, c.client), id);
        self.conns.insert(id, c);
        id
    }

    fn remove(&mut self, id: u64) -> Option<QuicConn> {
        let c = self.conns.remove(&id)?;
        self.by_tuple.retain(|_, v| *v != id);
        self.by_cid.retain(|_, v| *v != id);
        Some(c)
    }

    /// Hands on the connections idle for 120 s before `now` (or closed
    /// and quiet for 3 s, the closing period), in index order.
    pub fn sweep(&mut self, now: Timestamp, done: &mut dyn FnMut(QuicConn)) {
        if self.conns.is_empty() {
            return;
        }
        let mut ended: Vec<u64> = self
            .conns
            .values()
            .filter(|c| {
                let quiet = now - c.last_ts();
                quiet > IDLE || !c.signals.closes.is_empty() && quiet > CLOSED_LINGER
            })
            .map(|c| c.index)
            .collect();
        ended.sort_unstable();
        for id in ended {
            if let Some(c) = self.remove(id) {
                done(c);
            }
        }
    }

    /// Hands on every connection still open, in index order.
    pub fn finish(mut self, done: &mut dyn FnMut(QuicConn)) {
        let mut ids: Vec<u64> = self.conns.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if let Some(c) = self.conns.remove(&id) {
                done(c);
            }
        }
    }

    /// Connections open now.
    pub fn open_now(&self) -> usize {
        self.conns.len()
    }
}
