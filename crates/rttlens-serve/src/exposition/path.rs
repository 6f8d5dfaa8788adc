//! The probe's path (a module's `path: true`, the probe's `--path`) as
//! per-hop series in the shape mtr exporters give them (mtr-exporter's
//! `mtr_report_*{host, count, hop}`: one series per hop and statistic,
//! labelled by the hop's address, its TTL and its place on the path), in
//! base units: `rttlens_path_hop_rtt_seconds{ttl, host, hop, stat}` (stat
//! `min`, `p50`, `p90`, `max`), `rttlens_path_hop_sent`,
//! `rttlens_path_hop_loss_ratio` (0–1); the hop where the RTT steps up,
//! and the last hop against the connection's RTT. Nothing is registered
//! without a path, so a module without `path` gives the exposition it
//! always did.

use prometheus_client::registry::Unit;
use rttlens_probe::{PathHop, PathReport};

use super::{labels, secs, Metrics};

/// mtr-exporter's `hop` label: `first`, `intermediate`, `last`, or
/// `first_last` for a one-hop path.
fn place(i: usize, last: usize) -> &'static str {
    match (i == 0, i == last) {
        (true, true) => "first_last",
        (true, false) => "first",
        (false, true) => "last",
        (false, false) => "intermediate",
    }
}

/// The `host` label: the address (as `mtr -n` shows it), `???` for a hop
/// that never answered.
fn host(h: &PathHop) -> &str {
    h.addr.as_deref().unwrap_or("???")
}

/// Register the path's series.
pub(super) fn path_metrics(m: &mut Metrics, p: &PathReport) {
    let info = m.family(
        "rttlens_path_info",
        "Whether the path was traced (status: traced, not-permitted without CAP_NET_RAW, failed) and how (protocol: tcp, udp); 1.",
        None,
    );
    info.get_or_create(&labels(&[("status", p.status), ("protocol", p.protocol)]))
        .set(1.0);
    if p.status != "traced" {
        return;
    }
    m.gauge(
        "rttlens_path_hops",
        "Hops on the path to the target (TTL 1 to the target's, or to the last that answered).",
        None,
        p.hops.len() as f64,
    );
    m.gauge(
        "rttlens_path_rounds",
        "Rounds the path was traced for (one probe per hop and round).",
        None,
        f64::from(p.rounds),
    );
    let sent = m.family(
        "rttlens_path_hop_sent",
        "Probes sent to each hop (labels: ttl, host, hop as mtr-exporter's first/intermediate/last).",
        None,
    );
    let loss = m.family(
        "rttlens_path_hop_loss_ratio",
        "Share of each hop's probes that got no answer, 0 to 1.",
        None,
    );
    let rtt = m.family(
        "rttlens_path_hop_rtt",
        "Each hop's RTT over the rounds (stat: min, p50, p90, max).",
        Some(Unit::Seconds),
    );
    let last = p.hops.len().saturating_sub(1);
    for (i, h) in p.hops.iter().enumerate() {
        let ttl = h.ttl.to_string();
        let base = [
            ("ttl", ttl.as_str()),
            ("host", host(h)),
            ("hop", place(i, last)),
        ];
        sent.get_or_create(&labels(&base)).set(f64::from(h.sent));
        loss.get_or_create(&labels(&base)).set(h.loss_pct / 100.0);
        for (stat, v) in [
            ("min", h.min_ms),
            ("p50", h.p50_ms),
            ("p90", h.p90_ms),
            ("max", h.max_ms),
        ] {
            if let Some(ms) = v {
                let mut l = labels(&base);
                l.push(("stat".into(), stat.into()));
                rtt.get_or_create(&l).set(secs(ms));
            }
        }
    }
    if let Some(s) = &p.step {
        let f = m.family(
            "rttlens_path_step",
            "The hop whose median RTT rises the most over the hop before it, and by how much.",
            Some(Unit::Seconds),
        );
        let ttl = s.ttl.to_string();
        f.get_or_create(&labels(&[("ttl", &ttl), ("host", &s.addr)]))
            .set(secs(s.step_ms));
    }
    if let Some(v) = &p.versus_connection {
        m.gauge(
            "rttlens_path_last_hop_minus_connection_rtt",
            "The last answering hop's median RTT less the connection's own RTT.",
            Some(Unit::Seconds),
            secs(v.diff_ms),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::place;

    #[test]
    fn places() {
        assert_eq!(place(0, 0), "first_last");
        assert_eq!(place(0, 2), "first");
        assert_eq!(place(1, 2), "intermediate");
        assert_eq!(place(2, 2), "last");
    }
}
