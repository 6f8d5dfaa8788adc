//! The handshake mix (`--mix full=70,resumed=20,0rtt=10`) and the order
//! in which connections take it.

use std::fmt;
use std::str::FromStr;

/// What kind of TLS handshake a connection attempts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Kind {
    /// A full handshake: no ticket offered (RFC 8446 §2).
    #[serde(rename = "full")]
    Full,
    /// A resumed handshake with a session ticket from an earlier
    /// connection (PSK, RFC 8446 §2.2; RFC 5077 for TLS 1.2).
    #[serde(rename = "resumed")]
    Resumed,
    /// Resumed, with the request sent as early data (0-RTT, RFC 8446
    /// §2.3, §4.2.10).
    #[serde(rename = "0rtt")]
    ZeroRtt,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 3] = [Kind::Full, Kind::Resumed, Kind::ZeroRtt];

    /// The name used in `--mix`, the report and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Full => "full",
            Kind::Resumed => "resumed",
            Kind::ZeroRtt => "0rtt",
        }
    }

    /// Index into per-kind arrays (the order of [`Kind::ALL`]).
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The largest sum of weights `--mix` takes (the mix cycle is that long).
pub const MAX_WEIGHT_SUM: u32 = 10_000;

/// Relative weights of the three kinds. `Default` is all full handshakes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    weights: [u32; 3],
}

impl Default for Mix {
    fn default() -> Mix {
        Mix { weights: [1, 0, 0] }
    }
}

impl Mix {
    /// The weight of `kind`.
    pub fn weight(&self, kind: Kind) -> u32 {
        self.weights[kind.index()]
    }

    /// Share of connections of `kind`, 0.0–1.0.
    pub fn share(&self, kind: Kind) -> f64 {
        f64::from(self.weight(kind)) / f64::from(self.weights.iter().sum::<u32>().max(1))
    }

    /// Some connections are of `kind`.
    pub fn has(&self, kind: Kind) -> bool {
        self.weight(kind) > 0
    }

    /// One cycle of the mix: `sum(weights)` kinds in the order connections
    /// take them, by smooth weighted round-robin (nginx's upstream
    /// algorithm, `ngx_http_upstream_get_peer`): every window of one cycle
    /// holds each kind exactly its weight's times, and kinds interleave
    /// instead of coming in blocks (`full=2,resumed=1` → full, resumed,
    /// full, …).
    pub fn cycle(&self) -> Vec<Kind> {
        let total: i64 = self.weights.iter().map(|&w| i64::from(w)).sum();
        let mut current = [0i64; 3];
        let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        for _ in 0..total {
            let mut best = 0;
            for (i, w) in self.weights.iter().enumerate() {
                current[i] += i64::from(*w);
                if current[i] > current[best] {
                    best = i;
                }
            }
            current[best] -= total;
            out.push(Kind::ALL[best]);
        }
        out
    }
}

impl FromStr for Mix {
    type Err = String;

    /// `full=70,resumed=20,0rtt=10`; a kind left out has weight 0. Names:
    /// `full`, `resumed` (`resume`), `0rtt` (`0-rtt`, `early`).
    fn from_str(s: &str) -> Result<Mix, String> {
        let mut weights = [0u32; 3];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, w) = part
                .split_once('=')
                .ok_or_else(|| format!("--mix '{part}': expected KIND=WEIGHT (e.g. full=70)"))?;
            let kind = match name.trim().to_ascii_lowercase().as_str() {
                "full" => Kind::Full,
                "resumed" | "resume" => Kind::Resumed,
                "0rtt" | "0-rtt" | "early" => Kind::ZeroRtt,
                other => {
                    return Err(format!(
                        "--mix: unknown kind '{other}' (full, resumed or 0rtt)"
                    ))
                }
            };
            let w: u32 = w
                .trim()
                .parse()
                .map_err(|_| format!("--mix '{part}': the weight must be a whole number"))?;
            weights[kind.index()] = w;
        }
        let sum: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        if sum == 0 {
            return Err("--mix: at least one weight must be above 0".into());
        }
        if sum > u64::from(MAX_WEIGHT_SUM) {
            return Err(format!(
                "--mix: the weights add up to {sum}; at most {MAX_WEIGHT_SUM} (use percentages)"
            ));
        }
        Ok(Mix { weights })
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = Kind::ALL
            .iter()
            .filter(|k| self.has(**k))
            .map(|k| format!("{}={}", k.name(), self.weight(*k)))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let m: Mix = "full=70, resumed=20,0rtt=10".parse().unwrap();
        assert_eq!(m.to_string(), "full=70,resumed=20,0rtt=10");
        assert!((m.share(Kind::Resumed) - 0.2).abs() < 1e-9);
        let m: Mix = "early=1".parse().unwrap();
        assert_eq!(m.to_string(), "0rtt=1");
        assert!(!m.has(Kind::Full));
        assert!("full=0".parse::<Mix>().is_err());
        assert!("full=x".parse::<Mix>().is_err());
        assert!("slow=1".parse::<Mix>().is_err());
        assert!("full".parse::<Mix>().is_err());
        assert!("full=10001".parse::<Mix>().is_err());
    }

    #[test]
    fn cycle_is_exact_and_interleaved() {
        let m: Mix = "full=70,resumed=20,0rtt=10".parse().unwrap();
        let c = m.cycle();
        assert_eq!(c.len(), 100);
        for k in Kind::ALL {
            assert_eq!(c.iter().filter(|x| **x == k).count() as u32, m.weight(k));
        }
        // no block of 0-RTT: at most one in any 5 consecutive connections
        assert!(c
            .windows(5)
            .all(|w| w.iter().filter(|k| **k == Kind::ZeroRtt).count() <= 1));
        let m: Mix = "full=2,resumed=1".parse().unwrap();
        assert_eq!(m.cycle(), vec![Kind::Full, Kind::Resumed, Kind::Full]);
    }
}
