//! Who is to blame for the tail: each connection's time to its first
//! response byte split into the network, the wait for its SYN to be
//! answered, the server's handshake processing, the server's think time and
//! the client's own delay, kept per band of that time (8 bands per doubling,
//! ±4.5 %), so that at the end the slowest tenth can be set against the
//! faster half without keeping a list of connections.

use super::sample::{PhaseId, Sample};

/// The shares of a connection's time to first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// Round trips and transmission: what is left of the time once the
    /// other parts are taken out.
    Network,
    /// The SYN's wait beyond one RTT (SYN retransmissions).
    ConnectWait,
    /// The server's handshake processing.
    ServerHandshake,
    /// The server's think time before its first response byte.
    ServerThink,
    /// The client's own delay.
    ClientDelay,
}

const PARTS: [Part; 5] = [
    Part::Network,
    Part::ConnectWait,
    Part::ServerHandshake,
    Part::ServerThink,
    Part::ClientDelay,
];

impl Part {
    /// Stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Network => "network",
            Part::ConnectWait => "connect-wait",
            Part::ServerHandshake => "server-handshake",
            Part::ServerThink => "server-think",
            Part::ClientDelay => "client-delay",
        }
    }
}

/// Bands per doubling of the time to first byte.
const PER_DOUBLING: f64 = 8.0;
/// The lowest band's lower bound (ms).
const FLOOR_MS: f64 = 0.01;
/// Bands (0.01 ms × 2^40 ≈ 3 hours).
const BANDS: usize = 8 * 40;

/// One band: its connections and the sum of each part (ms).
#[derive(Debug, Clone, Copy, Default)]
struct Band {
    n: u64,
    total: f64,
    parts: [f64; PARTS.len()],
}

/// The bands while reading.
#[derive(Debug, Clone)]
pub(crate) struct Bands {
    bands: Vec<Band>,
}

fn band_of(ms: f64) -> usize {
    let b = ((ms.max(FLOOR_MS) / FLOOR_MS).log2() * PER_DOUBLING).floor();
    (b.max(0.0) as usize).min(BANDS - 1)
}

impl Bands {
    pub(crate) fn new() -> Bands {
        Bands {
            bands: vec![Band::default(); BANDS],
        }
    }

    /// Fold in one connection with a time to first byte.
    pub(crate) fn add(&mut self, s: &Sample) {
        let Some(fb) = s.first_byte_ms else { return };
        let wait = match (s.ms(PhaseId::Connect), s.rtt_ms) {
            (Some(c), Some(r)) => (c - r).max(0.0),
            _ => 0.0,
        };
        let mut parts = [0.0; PARTS.len()];
        parts[1] = wait;
        parts[2] = s.ms(PhaseId::ServerHandshake).unwrap_or(0.0);
        parts[3] = s.ms(PhaseId::ServerThink).unwrap_or(0.0);
        parts[4] = s.ms(PhaseId::ClientDelay).unwrap_or(0.0);
        // the parts come from the ladder's rounded figures: never more
        // than the whole
        let named: f64 = parts[1..].iter().sum();
        if named > fb && named > 0.0 {
            for p in &mut parts[1..] {
                *p *= fb / named;
            }
        }
        parts[0] = (fb - parts[1..].iter().sum::<f64>()).max(0.0);
        let b = &mut self.bands[band_of(fb)];
        b.n += 1;
        b.total += fb;
        for (a, p) in b.parts.iter_mut().zip(parts) {
            *a += p;
        }
    }

    /// The tail against the faster half, given the time to first byte's
    /// median and 90th percentile; `None` with fewer than 10 connections in
    /// the tail.
    pub(crate) fn finish(&self, p50: f64, p90: f64) -> Option<Tail> {
        let sum = |keep: &dyn Fn(usize) -> bool| {
            let mut acc = Band::default();
            for (_, b) in self.bands.iter().enumerate().filter(|(i, _)| keep(*i)) {
                acc.n += b.n;
                acc.total += b.total;
                for (a, p) in acc.parts.iter_mut().zip(b.parts) {
                    *a += p;
                }
            }
            acc
        };
        let (b50, b90) = (band_of(p50), band_of(p90));
        let fast = sum(&|i| i <= b50);
        let slow = sum(&|i| i >= b90 && i > b50);
        if slow.n < 10 || fast.n == 0 {
            return None;
        }
        let mean = |b: &Band, x: f64| x / b.n as f64;
        let r = crate::base::cost::round3;
        let mut parts: Vec<TailPart> = PARTS
            .iter()
            .enumerate()
            .map(|(k, &part)| {
                let typical = mean(&fast, fast.parts[k]);
                let tail = mean(&slow, slow.parts[k]);
                TailPart {
                    part,
                    typical_ms: r(typical),
                    tail_ms: r(tail),
                    extra_ms: r((tail - typical).max(0.0)),
                    share: 0.0,
                }
            })
            .collect();
        let extra: f64 = parts.iter().map(|p| p.extra_ms).sum();
        for p in &mut parts {
            p.share = if extra > 0.0 {
                r(p.extra_ms / extra)
            } else {
                0.0
            };
        }
        parts.sort_by(|a, b| b.extra_ms.total_cmp(&a.extra_ms));
        Some(Tail {
            connections: slow.n,
            first_byte_p50_ms: r(p50),
            first_byte_p90_ms: r(p90),
            typical_ms: r(mean(&fast, fast.total)),
            tail_ms: r(mean(&slow, slow.total)),
            parts,
        })
    }
}

/// The slowest tenth of the connections (by time to first response
/// byte) against the faster half: which parts of the time grew.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Tail {
    /// Connections in the tail (time to first byte ≥ its 90th percentile).
    pub connections: u64,
    /// The time to first byte's median (ms).
    pub first_byte_p50_ms: f64,
    /// Its 90th percentile (ms): where the tail begins.
    pub first_byte_p90_ms: f64,
    /// Mean time to first byte of the faster half (ms).
    pub typical_ms: f64,
    /// Mean time to first byte of the tail (ms).
    pub tail_ms: f64,
    /// Each part, largest extra first.
    pub parts: Vec<TailPart>,
}

impl Tail {
    /// The part with the largest extra.
    pub fn main_part(&self) -> Option<&TailPart> {
        self.parts.first().filter(|p| p.extra_ms > 0.0)
    }
}

/// One part of the time to first byte, typical and in the tail.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TailPart {
    /// Which.
    pub part: Part,
    /// Mean in the faster half (ms).
    pub typical_ms: f64,
    /// Mean in the tail (ms).
    pub tail_ms: f64,
    /// Tail minus typical, at least 0 (ms).
    pub extra_ms: f64,
    /// Its share of the tail's extra time (0–1).
    pub share: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(fb: f64, server_hs: f64) -> Sample {
        let mut s = Sample {
            rtt_ms: Some(10.0),
            first_byte_ms: Some(fb),
            ..Sample::default()
        };
        s.phases[PhaseId::Connect.index()] = Some((10.0, Some(1.0)));
        s.phases[PhaseId::ServerHandshake.index()] = Some((server_hs, None));
        s
    }

    #[test]
    fn the_tail_is_blamed_on_the_part_that_grew() {
        let mut b = Bands::new();
        for _ in 0..900 {
            b.add(&sample(30.0, 1.0));
        }
        for _ in 0..100 {
            b.add(&sample(130.0, 101.0));
        }
        let t = b.finish(30.0, 130.0).expect("a tail");
        assert_eq!(t.connections, 100);
        let main = t.main_part().expect("a main part");
        assert_eq!(main.part, Part::ServerHandshake);
        assert!((main.extra_ms - 100.0).abs() < 1e-6, "{t:?}");
        assert!((main.share - 1.0).abs() < 1e-3, "{t:?}");
    }
}
