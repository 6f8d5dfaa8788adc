//! The population view in text: phase percentiles, per server and SNI, the
//! tail, the capture over time and the population findings. Printed for
//! captures of at least [`MIN_CONNECTIONS`] connections (below that the
//! connections themselves say it all), and for smaller ones with a
//! population finding.

use std::io::{self, Write};

use rttlens_core::model::population::{Group, PhaseId, PhaseStats, PopulationReport, Stats};
use rttlens_core::pipeline::CaptureSummary;

/// Connections a capture needs for the population view in text.
pub const MIN_CONNECTIONS: u64 = rttlens_core::model::population::MIN_CONNECTIONS;
/// Groups (servers, SNIs) printed.
const GROUPS_SHOWN: usize = 5;

fn f(x: f64) -> String {
    if x >= 1000.0 {
        format!("{x:.0}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn stats_row(name: &str, s: &Stats) -> String {
    format!(
        "{name:<17} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        s.count,
        f(s.p50),
        f(s.p90),
        f(s.p99),
        f(s.p99_9),
        f(s.max)
    )
}

fn phase_row(p: &PhaseStats) -> String {
    let mut row = stats_row(p.phase.as_str(), &p.ms);
    if let Some(r) = &p.rtts {
        row.push_str(&format!("   {:.2} / {:.2}", r.p50, r.p99));
    }
    row
}

/// Whether the report shows the population view: a capture of at least
/// [`MIN_CONNECTIONS`] connections, or a smaller one where the crowd
/// proves a cause (a burst of a dozen handshakes served one at a time).
pub fn shown(s: &CaptureSummary) -> bool {
    s.population.connections >= MIN_CONNECTIONS || !s.population.population_findings.is_empty()
}

/// The population view (text): nothing for a small capture.
pub fn write_text(w: &mut dyn Write, s: &CaptureSummary) -> io::Result<()> {
    if !shown(s) {
        return Ok(());
    }
    let p = &s.population;
    write!(w, "population: {} connections", p.connections)?;
    if let Some(fb) = &p.first_byte {
        write!(
            w,
            "; first SYN → first response byte p50 {} ms, p99 {} ms, max {} ms",
            f(fb.p50),
            f(fb.p99),
            f(fb.max)
        )?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "{:<17} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}   RTTs p50 / p99",
        "phase (ms)", "count", "p50", "p90", "p99", "p99.9", "max"
    )?;
    for ph in &p.phases {
        writeln!(w, "{}", phase_row(ph))?;
    }
    // the servers' own accounts, per Server-Timing metric
    for m in &p.server_timing {
        let name = format!("server-timing {}", m.metric);
        writeln!(w, "{}", stats_row(&name, &m.ms))?;
    }
    write_groups(w, "server", &p.phases_by_server)?;
    write_groups(w, "server name", &p.phases_by_sni)?;
    if let Some(t) = &p.tail {
        let parts: Vec<String> = t
            .parts
            .iter()
            .filter(|x| x.extra_ms > 0.0)
            .map(|x| {
                format!(
                    "+{} ms {} ({:.0} %)",
                    f(x.extra_ms),
                    x.part.as_str(),
                    100.0 * x.share
                )
            })
            .collect();
        writeln!(
            w,
            "tail: the slowest {} connections (first byte ≥ {} ms) waited {} ms on average \
             against {} ms for the faster half: {}",
            t.connections,
            f(t.first_byte_p90_ms),
            f(t.tail_ms),
            f(t.typical_ms),
            if parts.is_empty() {
                "no part grew".to_string()
            } else {
                parts.join(", ")
            }
        )?;
    }
    write_over_time(w, p)?;
    write_findings(w, p)?;
    writeln!(w)
}

fn write_groups(w: &mut dyn Write, what: &str, groups: &[Group]) -> io::Result<()> {
    if groups.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "by {what} ({} of {}; p50 / p99 ms):",
        groups.len().min(GROUPS_SHOWN),
        groups.len()
    )?;
    for g in groups.iter().take(GROUPS_SHOWN) {
        let parts: Vec<String> = [
            PhaseId::Connect,
            PhaseId::Tls,
            PhaseId::ServerHandshake,
            PhaseId::Ttfb,
        ]
        .iter()
        .filter_map(|id| {
            let s = g.phases.iter().find(|p| p.phase == *id)?;
            Some(format!("{} {} / {}", id.as_str(), f(s.ms.p50), f(s.ms.p99)))
        })
        .collect();
        writeln!(
            w,
            "  {:<28} {:>7} conns  {}",
            g.key,
            g.connections,
            parts.join(", ")
        )?;
    }
    Ok(())
}

fn write_over_time(w: &mut dyn Write, p: &PopulationReport) -> io::Result<()> {
    let Some(ot) = &p.over_time else {
        return Ok(());
    };
    if ot.intervals.len() < 3 {
        return Ok(());
    }
    writeln!(
        w,
        "over time ({} ms intervals{}; p50 / p99 ms of the connections begun in each):",
        ot.interval_ms,
        if ot.widened {
            ", widened to hold the capture in 2,000"
        } else {
            ""
        }
    )?;
    writeln!(
        w,
        "{:>9} {:>8} {:>6} {:>17} {:>17} {:>17} {:>17} {:>8} {:>6} {:>5}  findings",
        "t s",
        "new/s",
        "in hs",
        "connect",
        "tls",
        "server-handshake",
        "ttfb",
        "RTT p50",
        "retx%",
        "SYN×"
    )?;
    for iv in &ot.intervals {
        let ph = |id: PhaseId| {
            iv.phases.iter().find(|x| x.phase == id).map_or_else(
                || "-".to_string(),
                |x| format!("{} / {}", f(x.p50_ms), f(x.p99_ms)),
            )
        };
        writeln!(
            w,
            "{:>9.3} {:>8} {:>6} {:>17} {:>17} {:>17} {:>17} {:>8} {:>6.2} {:>5}  {}",
            iv.start_s,
            f(iv.new_per_s),
            f(iv.handshakes_in_progress),
            ph(PhaseId::Connect),
            ph(PhaseId::Tls),
            ph(PhaseId::ServerHandshake),
            ph(PhaseId::Ttfb),
            iv.rtt_p50_ms.map_or_else(|| "-".to_string(), f),
            100.0 * iv.retransmission_rate,
            iv.syn_retransmitted,
            iv.findings.join(", ")
        )?;
    }
    Ok(())
}

fn write_findings(w: &mut dyn Write, p: &PopulationReport) -> io::Result<()> {
    if p.population_findings.is_empty() {
        return Ok(());
    }
    writeln!(w, "population findings (what the crowd shows):")?;
    for x in &p.population_findings {
        writeln!(
            w,
            "  [{}] {} ({} confidence: {})",
            x.id,
            crate::words::pop_title(x),
            x.confidence.level.as_str(),
            crate::words::why(&x.confidence)
        )?;
        let rtts = x
            .cost
            .per_connection_rtts
            .map_or_else(String::new, |r| format!(", {r:.2} RTT"));
        writeln!(
            w,
            "    cost: {} ms over {} connections ({} ms each{rtts})",
            f(x.cost.ms),
            x.cost.connections,
            f(x.cost.per_connection_ms)
        )?;
        for e in &x.evidence {
            writeln!(w, "    - {}", crate::words::fact(&e.fact))?;
        }
        writeln!(w, "    fix: {}", crate::words::pop_fix(x))?;
    }
    Ok(())
}
