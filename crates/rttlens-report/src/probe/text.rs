//! The probe's text report: per connection a waterfall (ms and RTTs per
//! phase), TLS facts, `TCP_INFO` and checks, then the connection as the
//! probe's own capture shows it; the savings and statistics at the end.

use std::io::{self, Write};

use rttlens_probe_model::{ProbeReport, QuicInfo, TcpInfo};

/// The text report: per connection a waterfall (ms and RTTs per phase),
/// TLS facts and checks, then the capture's findings; the statistics
/// and savings at the end.
///
/// # Errors
/// Writing failed.
pub fn write_text(report: &ProbeReport, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "probe {}", report.url)?;
    for a in &report.attempts {
        writeln!(w)?;
        let rtt = match (a.rtt_ms, a.rtt_source) {
            (Some(r), Some(s)) => format!("RTT {r:.2} ms ({s})"),
            _ => "RTT unknown".into(),
        };
        writeln!(
            w,
            "connection {} · {} · {} → {} · {} {} · {} B · {rtt}",
            a.index,
            a.step,
            a.local,
            a.remote,
            a.response.version,
            a.response.status,
            a.response.body_bytes
        )?;
        let total = a.timings.total_ms.max(0.001);
        const WIDTH: f64 = 30.0;
        writeln!(
            w,
            "  {:<12} {:>9} {:>9} {:>6}  ",
            "phase", "start ms", "ms", "RTTs"
        )?;
        for p in &a.phases {
            let from = ((p.start_ms / total) * WIDTH).round() as usize;
            let len = (((p.ms / total) * WIDTH).round() as usize).max(usize::from(p.ms > 0.0));
            let bar = format!("{}{}", " ".repeat(from), "█".repeat(len));
            let rtts = p.rtts.map_or("-".into(), |r| format!("{r:.2}"));
            writeln!(
                w,
                "  {:<12} {:>9.2} {:>9.2} {:>6}  |{bar}",
                p.name, p.start_ms, p.ms, rtts
            )?;
        }
        let total_rtts = a
            .rtt_ms
            .filter(|r| *r > 0.0)
            .map_or("-".into(), |r| format!("{:.2}", a.timings.total_ms / r));
        writeln!(
            w,
            "  {:<12} {:>9} {:>9.2} {:>6}",
            "total", "", a.timings.total_ms, total_rtts
        )?;
        if let Some(t) = &a.tls {
            writeln!(
                w,
                "  {} {} · ALPN {} · {} handshake · early data {}",
                t.version,
                t.cipher,
                t.alpn.as_deref().unwrap_or("none"),
                t.handshake,
                t.early_data
            )?;
        }
        if let Some(t) = &a.tcp_info.at_end {
            writeln!(w, "  {}", tcp_info_line(t))?;
        }
        if let Some(q) = &a.quic {
            writeln!(w, "  {}", quic_line(q))?;
        }
        for c in &a.checks {
            let ok = match c.ok {
                Some(true) => "verified",
                Some(false) => "NOT verified",
                None => "unknown",
            };
            writeln!(w, "  check {}: {ok} ({})", c.what, c.how)?;
        }
        if !a.wire_vs_app.is_empty() {
            let parts: Vec<String> = a
                .wire_vs_app
                .iter()
                .map(|g| format!("{} {:+.2} ms", g.phase, g.diff_ms))
                .collect();
            writeln!(w, "  app − wire: {}", parts.join(", "))?;
        }
        if let Some(c) = a.connection.and_then(|i| report.connections.get(i)) {
            writeln!(w, "  --- from the probe's own capture ---")?;
            let mut buf = Vec::new();
            crate::text::write_connection(&mut buf, c, false)?;
            for line in String::from_utf8_lossy(&buf).lines() {
                writeln!(w, "  {line}")?;
            }
        }
        let quic = a
            .quic_connection
            .and_then(|i| report.quic_connections.get(i));
        if let Some(q) = quic {
            writeln!(w, "  --- from the probe's own capture ---")?;
            let mut buf = Vec::new();
            crate::text::write_quic_connection(&mut buf, q)?;
            for line in String::from_utf8_lossy(&buf).lines() {
                writeln!(w, "  {line}")?;
            }
        }
    }
    if !report.saved.is_empty() {
        writeln!(w)?;
        writeln!(w, "saved against connection 0 (starttransfer):")?;
        for s in &report.saved {
            let r = s.rtts.map_or(String::new(), |r| format!(" ({r:.2} RTT)"));
            writeln!(w, "  {:<20} {:>9.2} ms{r}", s.step, s.starttransfer_ms)?;
        }
    }
    if let Some(st) = &report.stats {
        writeln!(w)?;
        writeln!(w, "{} attempts (ms):", st.count)?;
        writeln!(
            w,
            "  {:<14} {:>9} {:>9} {:>9} {:>9}",
            "time", "min", "median", "p90", "max"
        )?;
        for (n, s) in st.rows() {
            writeln!(
                w,
                "  {n:<14} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                s.min_ms, s.median_ms, s.p90_ms, s.max_ms
            )?;
        }
    }
    if let Some(p) = &report.path {
        super::path::write_path(p, w)?;
    }
    writeln!(w)?;
    let mut line = format!("capture: {}", report.capture.status);
    if report.capture.status == "captured" {
        line.push_str(&format!(
            " ({} packets on {})",
            report.capture.packets,
            report.capture.interface.as_deref().unwrap_or("?")
        ));
    }
    if let Some(n) = &report.capture.note {
        line.push_str(&format!(" · {n}"));
    }
    if let Some(p) = &report.capture.pcap {
        line.push_str(&format!(" · written to {p}"));
    }
    writeln!(w, "{line}")
}

/// `TCP_INFO` in one line: RTTs in ms, cwnd in segments, delivery rate in
/// Mbit/s, the chrono times in ms.
fn tcp_info_line(t: &TcpInfo) -> String {
    let ms = |us: u64| us as f64 / 1e3;
    let mut s = format!(
        "TCP_INFO: rtt {:.2} ms (min {}) · cwnd {} · retrans {}",
        ms(u64::from(t.rtt_us)),
        t.min_rtt_us
            .map_or("-".into(), |m| format!("{:.2}", ms(u64::from(m)))),
        t.snd_cwnd,
        t.total_retrans
    );
    if let Some(r) = t.delivery_rate {
        s.push_str(&format!(" · delivery {:.1} Mbit/s", r as f64 * 8.0 / 1e6));
    }
    if let (Some(b), Some(r), Some(sb)) = (t.busy_time_us, t.rwnd_limited_us, t.sndbuf_limited_us) {
        s.push_str(&format!(
            " · busy {:.1} ms, rwnd-limited {:.1} ms, sndbuf-limited {:.1} ms",
            ms(b),
            ms(r),
            ms(sb)
        ));
    }
    if t.syn_data_acked() {
        s.push_str(" · SYN data acked");
    }
    s
}

/// QUIC's own account in one line: RTTs in ms, the handshake in round
/// trips, cwnd and MTU in bytes.
fn quic_line(q: &QuicInfo) -> String {
    let hs = q.handshake_rtts.map_or("-".into(), |n| format!("{n} RTT"));
    let mut s = format!(
        "QUIC: rtt {:.2} ms (min {:.2}) · handshake {hs} · cwnd {} B · sent {} packets, lost {} · MTU {} B · UDP {} datagrams out, {} in",
        q.srtt_ms,
        q.min_rtt_ms,
        q.cwnd_bytes,
        q.sent_packets,
        q.lost_packets,
        q.mtu_bytes,
        q.datagrams_out,
        q.datagrams_in
    );
    if q.key_shares > 1 {
        s.push_str(" · HelloRetryRequest");
    }
    s
}
