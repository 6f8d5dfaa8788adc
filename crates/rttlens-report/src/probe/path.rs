//! The probe's path (`--path`) as text: one row per hop (TTL, address and
//! name, loss in %, RTT min/p50/p90/max in ms), the hop where the RTT
//! steps up, and the last hop against the connection's RTT; or the one
//! line saying why there is no path.

use std::io::{self, Write};

use rttlens_probe_model::PathReport;

/// Write `p` (after the connections, before the capture line).
///
/// # Errors
/// Writing failed.
pub fn write_path(p: &PathReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w)?;
    if p.status != "traced" {
        return writeln!(w, "path: {}", p.note.as_deref().unwrap_or(p.status));
    }
    let how = match p.port {
        Some(port) => format!("{} SYN to port {port}", p.protocol.to_uppercase()),
        None => p.protocol.to_uppercase(),
    };
    writeln!(
        w,
        "path to {} ({how}, {} rounds; RTT in ms):",
        p.target, p.rounds
    )?;
    writeln!(
        w,
        "  {:>3}  {:<40} {:>6} {:>8} {:>8} {:>8} {:>8}",
        "ttl", "hop", "loss%", "min", "p50", "p90", "max"
    )?;
    let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    for h in &p.hops {
        let mut who = match (&h.addr, &h.name) {
            (Some(a), Some(n)) => format!("{n} ({a})"),
            (Some(a), None) => a.clone(),
            (None, _) => "???".into(),
        };
        if h.target {
            who.push_str(" [target]");
        }
        if !h.other_addrs.is_empty() {
            who.push_str(&format!(" +{}", h.other_addrs.len()));
        }
        writeln!(
            w,
            "  {:>3}  {who:<40} {:>6.1} {:>8} {:>8} {:>8} {:>8}",
            h.ttl,
            h.loss_pct,
            ms(h.min_ms),
            ms(h.p50_ms),
            ms(h.p90_ms),
            ms(h.max_ms)
        )?;
    }
    if let Some(s) = &p.step {
        let who = match &s.name {
            Some(n) => format!("{n} ({})", s.addr),
            None => s.addr.clone(),
        };
        writeln!(
            w,
            "  largest step: hop {} {who}, p50 {:.2} → {:.2} ms (+{:.2} ms)",
            s.ttl, s.from_ms, s.to_ms, s.step_ms
        )?;
    }
    if let Some(v) = &p.versus_connection {
        let which = if v.last_hop_is_target {
            "target"
        } else {
            "last answering hop"
        };
        writeln!(
            w,
            "  {which} p50 {:.2} ms vs the connection's RTT {:.2} ms ({}): {:+.2} ms",
            v.last_hop_ms, v.connection_rtt_ms, v.connection_rtt_source, v.diff_ms
        )?;
    }
    if p.hops.is_empty() {
        writeln!(w, "  no hop answered")?;
    }
    Ok(())
}
