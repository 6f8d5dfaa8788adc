//! The link's knobs ([`LinkConfig`]): the RTT and how it splits, where
//! the middle vantage sits, rate, loss, reordering, jitter, a delay spike
//! and the capture point; and the seeded draws loss and jitter use.

use std::path::PathBuf;
use std::time::Duration;

/// A direction through the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Client to server.
    ClientToServer,
    /// Server to client.
    ServerToClient,
}

impl Direction {
    /// 0 for client→server, 1 for server→client (array indices).
    pub(crate) fn idx(self) -> usize {
        match self {
            Direction::ClientToServer => 0,
            Direction::ServerToClient => 1,
        }
    }
}

/// Where on the path the link's own capture is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapturePoint {
    /// At the client end of the link (a client vantage): client→server
    /// packets as they enter the link (before any drop), server→client
    /// packets as they leave it towards the client.
    Ingress,
    /// At M (see the module doc): each packet stamped when it has waited
    /// its direction's first leg.
    Middle,
    /// At the server end (a server vantage): client→server packets as they
    /// leave towards the server, server→client packets as they enter.
    Egress,
}

/// Loss knobs for one direction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loss {
    /// Drop these payload-carrying TCP segments (1-based indices, see the
    /// module doc).
    pub indices: Vec<u64>,
    /// Drop the first segment with SYN set in this direction (the SYN
    /// client→server, the SYN-ACK server→client).
    pub first_syn: bool,
    /// Drop the first SYN that carries data (a TCP Fast Open attempt).
    pub first_syn_data: bool,
    /// Probability (0.0–1.0) of dropping each payload-carrying segment,
    /// decided by `hash(seed, direction, index)`. Default 0.
    pub probability: f64,
    /// Seed for `probability`.
    pub seed: u64,
    /// A black hole: from the payload segment with this index (1-based) on,
    /// every packet in this direction is dropped, with or without payload
    /// (a peer or path that died mid-transfer).
    pub black_hole_from: Option<u64>,
    /// Drop these UDP datagrams (1-based indices counting every UDP
    /// datagram in this direction, as `indices` counts payload-carrying TCP
    /// segments; QUIC's Initials are the first ones). TCP segments are
    /// neither counted nor dropped by it.
    pub udp_indices: Vec<u64>,
}

/// The link's knobs. `Default` is a 40 ms RTT split evenly, no rate limit,
/// no loss, no reordering, no jitter, no capture.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Round-trip time the link adds (client→server + server→client one-way
    /// delays). Default 40 ms.
    pub rtt: Duration,
    /// Share of `rtt` spent client→server (0.0–1.0; the rest is
    /// server→client). Default 0.5 (symmetric).
    pub forward_share: f64,
    /// Where M sits: the share of `rtt` between the client and M
    /// (`h_c / rtt`, 0.0–1.0). Default 0.5.
    pub client_share: f64,
    /// Bottleneck rate in bits per second, each direction; 0 = unlimited
    /// (the default). A packet's serialisation time `len × 8 / rate` is
    /// added before its propagation delay.
    pub rate_bps: u64,
    /// Bytes that may wait for the bottleneck per direction before further
    /// packets are tail-dropped (only with `rate_bps` > 0). Default 256 KiB.
    pub queue_limit_bytes: u64,
    /// Loss client→server.
    pub loss_c2s: Loss,
    /// Loss server→client.
    pub loss_s2c: Loss,
    /// Reorder client→server: segment N (payload index, 1-based) is held and
    /// sent just after the next packet in that direction (or after 200 ms
    /// if none comes).
    pub reorder_c2s: Vec<u64>,
    /// Reorder server→client, as `reorder_c2s`.
    pub reorder_s2c: Vec<u64>,
    /// Jitter: each packet's one-way delay gets a uniform offset in
    /// ±`jitter` drawn from `hash(jitter_seed, direction, packet number)`.
    /// Packets are never reordered by jitter (a packet leaves no earlier
    /// than its predecessor). Default 0.
    pub jitter: Duration,
    /// Seed for `jitter`.
    pub jitter_seed: u64,
    /// Write a pcapng of the forwarded packets to this file (raw IP,
    /// nanosecond timestamps). Default none.
    pub capture: Option<(PathBuf, CapturePoint)>,
    /// A delay spike (a route change, a burst of link-layer retries): once
    /// the payload segment it names passes, every packet of its direction
    /// is held until the spike ends, then released in order. Default none.
    pub spike: Option<Spike>,
    /// TCP segments with SYN set (SYN, SYN-ACK) cross this much faster
    /// than the rest, each way. Default 0. A little lead makes the
    /// handshake's RTT sample a little below any later one, so a host's
    /// `min_rtt` is its handshake's: without it a tail loss probe crossing
    /// an idle link can measure a few µs below `min_rtt`, and Linux then
    /// ignores its SACK for loss detection (`tcp_rack_advance()`) and waits
    /// for the RTO instead, one of two kernel paths at random.
    pub syn_lead: Duration,
}

/// A delay spike on one direction of the link ([`LinkConfig::spike`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spike {
    /// The direction and 1-based payload index of the segment whose
    /// arrival starts the spike.
    pub after: (Direction, u64),
    /// The direction held.
    pub held: Direction,
    /// How long it is held.
    pub hold: Duration,
}

impl Default for LinkConfig {
    fn default() -> LinkConfig {
        LinkConfig {
            rtt: Duration::from_millis(40),
            forward_share: 0.5,
            client_share: 0.5,
            rate_bps: 0,
            queue_limit_bytes: 256 * 1024,
            loss_c2s: Loss::default(),
            loss_s2c: Loss::default(),
            reorder_c2s: Vec::new(),
            reorder_s2c: Vec::new(),
            jitter: Duration::ZERO,
            jitter_seed: 0,
            capture: None,
            spike: None,
            syn_lead: Duration::ZERO,
        }
    }
}

impl LinkConfig {
    /// The default link with this RTT.
    pub fn with_rtt(rtt: Duration) -> LinkConfig {
        LinkConfig {
            rtt,
            ..LinkConfig::default()
        }
    }

    pub(crate) fn one_way(&self, dir: Direction) -> Duration {
        let f = self.forward_share.clamp(0.0, 1.0);
        match dir {
            Direction::ClientToServer => self.rtt.mul_f64(f),
            Direction::ServerToClient => self.rtt - self.rtt.mul_f64(f),
        }
    }

    /// Fraction of a direction's one-way delay before M.
    pub(crate) fn first_leg(&self, dir: Direction) -> f64 {
        let c = self.client_share.clamp(0.0, 1.0);
        match dir {
            Direction::ClientToServer => c,
            Direction::ServerToClient => 1.0 - c,
        }
    }

    pub(crate) fn loss(&self, dir: Direction) -> &Loss {
        match dir {
            Direction::ClientToServer => &self.loss_c2s,
            Direction::ServerToClient => &self.loss_s2c,
        }
    }

    pub(crate) fn reorder(&self, dir: Direction) -> &[u64] {
        match dir {
            Direction::ClientToServer => &self.reorder_c2s,
            Direction::ServerToClient => &self.reorder_s2c,
        }
    }
}

/// Whether seeded random loss drops payload segment `index` (1-based) in
/// `dir`: a pure function of its arguments.
pub fn random_drop(seed: u64, dir: Direction, index: u64, probability: f64) -> bool {
    probability > 0.0 && unit(splitmix(seed ^ ((dir.idx() as u64) << 62) ^ index)) < probability
}

pub(crate) fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Map to [0, 1).
pub(crate) fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_drop_is_deterministic() {
        let a: Vec<u64> = (1..1000)
            .filter(|&i| random_drop(7, Direction::ServerToClient, i, 0.1))
            .collect();
        let b: Vec<u64> = (1..1000)
            .filter(|&i| random_drop(7, Direction::ServerToClient, i, 0.1))
            .collect();
        assert_eq!(a, b);
        assert!((60..140).contains(&a.len()), "{}", a.len());
        let c: Vec<u64> = (1..1000)
            .filter(|&i| random_drop(8, Direction::ServerToClient, i, 0.1))
            .collect();
        assert_ne!(a, c);
    }

    #[test]
    fn middle_split() {
        let cfg = LinkConfig {
            rtt: Duration::from_millis(40),
            client_share: 0.25,
            ..LinkConfig::default()
        };
        let c2s = cfg
            .one_way(Direction::ClientToServer)
            .mul_f64(cfg.first_leg(Direction::ClientToServer));
        let s2c = cfg.one_way(Direction::ServerToClient);
        let s2c_after_m = s2c - s2c.mul_f64(cfg.first_leg(Direction::ServerToClient));
        assert_eq!(c2s + s2c_after_m, Duration::from_millis(10));
    }
}
