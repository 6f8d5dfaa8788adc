//! `--shard K/N`: one of N workers analyses the connections of its share
//! only, each reading the whole capture (reading is a few percent of the
//! time), so N workers scale nearly linearly and their records together
//! are the unsharded run's.
//!
//! A connection's shard comes from its Community ID's SHA-1 digest
//! ([`crate::wire::community_id::digest`], with the run's seed): the
//! digest's first 8 bytes as a big-endian integer, modulo N, is shard
//! K − 1. It is symmetric (both directions hash alike), the same for every
//! packet of a connection and on every machine and build, and anyone holding
//! a record's `community_id` can recompute it (base64-decode what follows
//! `1:`). A TCP connection goes by its 4-tuple, a QUIC one by the 4-tuple of
//! its first datagram (a migrated connection stays in its shard).

use std::net::SocketAddr;
use std::str::FromStr;

use crate::wire::community_id::digest;

/// Shard `K` of `N` (1 ≤ K ≤ N), as `--shard K/N` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// K − 1 (0-based).
    index: u32,
    /// N.
    count: u32,
}

impl Shard {
    /// Shard `k` (1-based) of `n`; `None` unless 1 ≤ k ≤ n.
    pub fn new(k: u32, n: u32) -> Option<Shard> {
        (k >= 1 && k <= n).then(|| Shard {
            index: k - 1,
            count: n,
        })
    }

    /// K (1-based).
    pub fn k(self) -> u32 {
        self.index + 1
    }

    /// N.
    pub fn n(self) -> u32 {
        self.count
    }

    /// Whether the flow between `a` and `b` over `proto` (TCP or UDP,
    /// the IANA number) is in this shard, its Community ID hashed with
    /// `seed`.
    pub fn contains(self, seed: u16, proto: u8, a: SocketAddr, b: SocketAddr) -> bool {
        if self.count <= 1 {
            return true;
        }
        let d = digest(seed, proto, a, b);
        let mut first = [0u8; 8];
        first.copy_from_slice(&d[..8]);
        u64::from_be_bytes(first) % u64::from(self.count) == u64::from(self.index)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `K/N`, with 1 ≤ K ≤ N (`2/3`: the second of three).
    fn from_str(s: &str) -> Result<Shard, String> {
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| format!("'{s}': expected K/N, e.g. 1/4"))?;
        let num = |x: &str| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{s}': expected K/N with whole numbers, e.g. 1/4"))
        };
        let (k, n) = (num(k)?, num(n)?);
        Shard::new(k, n).ok_or_else(|| format!("'{s}': K must be from 1 to N (N at least 1)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::community_id::TCP;

    #[test]
    fn parse() {
        assert_eq!("2/3".parse::<Shard>().map(|s| (s.k(), s.n())), Ok((2, 3)));
        assert_eq!("1/1".parse::<Shard>().map(|s| (s.k(), s.n())), Ok((1, 1)));
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", "-1/2", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    /// Each flow is in exactly one shard, whichever way it is named, and
    /// the shards share flows out about evenly.
    #[test]
    fn every_flow_in_one_shard() {
        let n = 3;
        let mut per = [0u32; 3];
        for port in 1000..1600u16 {
            let a: SocketAddr = format!("10.0.0.1:{port}").parse().unwrap();
            let b: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
            let b4: SocketAddr = "10.0.0.2:443".parse().unwrap();
            for (x, y) in [(a, b4), (a, b)] {
                let hits: Vec<u32> = (1..=n)
                    .filter(|&k| Shard::new(k, n).unwrap().contains(0, TCP, x, y))
                    .collect();
                assert_eq!(hits.len(), 1, "{x} {y}");
                assert!(Shard::new(hits[0], n).unwrap().contains(0, TCP, y, x));
                per[(hits[0] - 1) as usize] += 1;
            }
        }
        assert!(per.iter().all(|&c| c > 300), "{per:?}");
    }
}

/// A connection of another shard, kept in the flow table by what decides
/// when connections open and end (so that the table numbers connections
/// and hands them on as the unsharded run does, and a shard's indexes are
/// the unsharded ones): its client, the client's ISN, its FINs and reset.
/// About 40 bytes, and a hash lookup per packet: no analysis, no
/// reassembly, no report.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ghost {
    /// The client, as [`super::Conn`] would tell it from the first packet.
    client: SocketAddr,
    /// The ISN of the client's first SYN ([`super::Conn::syn`]).
    isn: Option<crate::base::seq::SeqNumber>,
    /// A FIN from the client, from the server.
    fin: [bool; 2],
    rst: bool,
}

impl Ghost {
    /// The connection `seg` opens (`seg` is pushed next).
    pub(crate) fn new(seg: &crate::wire::TcpSegment<'_>) -> Ghost {
        Ghost {
            client: super::roles::roles(seg).0,
            isn: None,
            fin: [false; 2],
            rst: false,
        }
    }

    /// One more packet, as [`super::Conn`]'s `push` keeps these facts.
    pub(crate) fn push(&mut self, seg: &crate::wire::TcpSegment<'_>) {
        use crate::wire::TcpFlags;
        let from_client = SocketAddr::new(seg.src, seg.src_port) == self.client;
        let f = seg.flags;
        if f.contains(TcpFlags::SYN) && from_client && self.isn.is_none() {
            self.isn = Some(seg.seq);
        }
        if f.contains(TcpFlags::RST) {
            self.rst = true;
        }
        if f.contains(TcpFlags::FIN) {
            self.fin[usize::from(!from_client)] = true;
        }
    }

    /// [`super::Conn::is_closed`].
    pub(crate) fn is_closed(&self) -> bool {
        self.rst || self.fin == [true; 2]
    }

    /// The client's ISN.
    pub(crate) fn isn(&self) -> Option<crate::base::seq::SeqNumber> {
        self.isn
    }
}
