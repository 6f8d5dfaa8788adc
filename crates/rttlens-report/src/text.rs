//! Text output for people: a summary of the capture, then per connection
//! the ladder of phases (ms and RTTs), the rounds of the transfer and the
//! findings sorted by cost. With many connections, only the `top` costliest
//! are shown in full, followed by a count per finding id.

use std::io::{self, Write};

use rttlens_core::model::Finding;
use rttlens_core::model::Phase;
use rttlens_core::model::{ConnReport, Connection, QuicReport};
use rttlens_core::model::{DecryptStatus, Decryption};
use rttlens_core::model::{RequestRow, ServerTimingRow};
use rttlens_core::pipeline::{CaptureSummary, TlsTally};

use crate::{Renderer, Source};

/// Text renderer settings and state.
#[derive(Debug)]
pub struct TextRenderer {
    /// Connections shown in full when there are more (the costliest).
    pub top: usize,
    /// Print the rounds table of each shown connection.
    pub rounds: bool,
    kept: Vec<ConnReport>,
    /// The rank of the last kept connection after the last pruning.
    floor: Option<(f64, f64, u64)>,
    seen: u64,
    source: String,
    /// The QUIC connections, each shown in full after the TCP ones.
    quic: Vec<QuicReport>,
}

/// What [`crate::slowest_first`] orders by.
fn rank(c: &ConnReport) -> (f64, f64, u64) {
    (c.findings_ms(), c.duration_ms, c.index)
}

impl TextRenderer {
    /// A renderer showing at most `top` connections in full.
    pub fn new(top: usize, rounds: bool) -> TextRenderer {
        TextRenderer {
            top: top.max(1),
            rounds,
            kept: Vec::new(),
            floor: None,
            seen: 0,
            source: String::new(),
            quic: Vec::new(),
        }
    }

    fn sort(&mut self) {
        self.kept.sort_by(crate::slowest_first);
    }
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn human_bytes(b: f64) -> String {
    if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// Render one connection in full.
pub fn write_connection(w: &mut dyn Write, c: &ConnReport, rounds: bool) -> io::Result<()> {
    writeln!(
        w,
        "connection {}  {} → {}  community_id {}",
        c.index, c.client, c.server, c.community_id
    )?;
    let mut line = format!(
        "  {} · {} frames ({}–{}) · {} ms",
        c.protocol,
        c.frames,
        c.first_frame,
        c.last_frame,
        ms(c.duration_ms)
    );
    line.push_str(&format!(" · vantage {}", c.vantage.as_str()));
    if c.coverage.mid_stream {
        line.push_str(" · started mid-connection");
    }
    if let Some(side) = c.coverage.only {
        line.push_str(&format!(
            " · {} → {} only",
            side.as_str(),
            side.peer().as_str()
        ));
    }
    match &c.rtt {
        Some(r) => line.push_str(&format!(
            " · RTT {} ms min, {} ms median ({}; h_c {} ms, h_s {} ms)",
            ms(r.min_ms),
            ms(r.median_ms),
            r.method.as_str(),
            ms(r.h_c_ms),
            ms(r.h_s_ms)
        )),
        None => line.push_str(" · RTT unknown"),
    }
    writeln!(w, "{line}")?;
    if let Some(t) = &c.tls {
        let mut l = format!(
            "  TLS {} · {} handshake: {:.2} RTT (nominal {})",
            t.info.version, t.kind, t.measured_rtts, t.nominal_rtts
        );
        if let Some(s) = &t.info.cipher {
            l.push_str(&format!(" · {s}"));
        }
        if let Some(s) = &t.info.sni {
            l.push_str(&format!(" · SNI {s}"));
        }
        if let Some(s) = &t.info.alpn {
            l.push_str(&format!(" · ALPN {s}"));
        }
        writeln!(w, "{l}")?;
        if let Some(d) = &t.decryption {
            writeln!(w, "  {}", decryption_line(d))?;
        }
    }
    write_ladder(w, &c.ladder)?;
    if c.requests.len() > 1
        || (c.tls.is_some() && !c.requests.is_empty())
        || c.requests.iter().any(|r| r.server_timing.is_some())
    {
        write_requests(w, &c.requests)?;
    }
    if let Some(t) = &c.transfer {
        let flights: Vec<String> = t
            .rounds
            .iter()
            .take(12)
            .map(|r| r.flight.to_string())
            .collect();
        writeln!(w)?;
        let iw = t
            .initial_window
            .map(|iw| {
                format!(
                    "initial window {} B ({:.1} × {} B)",
                    iw.bytes, iw.segments, t.mss
                )
            })
            .unwrap_or_default();
        writeln!(
            w,
            "  transfer ({} → {}): {} in {} rounds, {}/s; {}",
            t.sender.as_str(),
            t.sender.peer().as_str(),
            human_bytes(t.bytes as f64),
            t.rounds.len(),
            human_bytes(t.bytes_per_sec),
            iw
        )?;
        writeln!(
            w,
            "  bytes in flight per round: {}{}",
            flights.join(" → "),
            if t.rounds.len() > 12 { " …" } else { "" }
        )?;
        let limits: Vec<String> = t
            .limits
            .iter()
            .map(|l| format!("{} × {}", l.rounds, l.limit.as_str()))
            .collect();
        writeln!(w, "  round limits: {}", limits.join(", "))?;
        if let Some(b) = &t.bound {
            writeln!(
                w,
                "  bound: {} B in flight per RTT ({}) = {}/s",
                b.flight,
                b.limit.as_str(),
                human_bytes(b.bytes_per_sec)
            )?;
        }
        if rounds {
            writeln!(
                w,
                "  {:>5} {:>10} {:>13} {:>9} {:>9} {:>9}  limit",
                "round", "start ms", "frames", "new B", "flight B", "rwnd B"
            )?;
            for r in &t.rounds {
                writeln!(
                    w,
                    "  {:>5} {:>10.3} {:>13} {:>9} {:>9} {:>9}  {}",
                    r.index,
                    r.start_ms,
                    format!("{}-{}", r.first_frame, r.last_frame),
                    r.new_bytes,
                    r.flight,
                    r.rwnd,
                    r.limit.as_str()
                )?;
            }
        }
    }
    write_findings(w, &c.findings)?;
    for n in &c.notes {
        writeln!(w, "  note: {n}")?;
    }
    writeln!(w)
}

/// The ladder of phases, one row each.
fn write_ladder(w: &mut dyn Write, ladder: &[Phase]) -> io::Result<()> {
    if !ladder.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "  {:<22} {:>9} {:>7}  {:<14} what",
            "phase", "ms", "RTTs", "frames"
        )?;
        for p in ladder {
            let mut detail = crate::words::phase_detail(p);
            if !p.parts.is_empty() {
                let parts: Vec<String> = p
                    .parts
                    .iter()
                    .map(|x| format!("{} {} ms ({:.2} RTT)", x.name, ms(x.ms), x.rtts))
                    .collect();
                detail.to_mut().push_str(&format!("; {}", parts.join(", ")));
            }
            writeln!(
                w,
                "  {:<22} {:>9} {:>7.2}  {:<14} {}",
                p.name,
                ms(p.ms),
                p.rtts,
                format!("{}→{}", p.start_frame, p.end_frame),
                detail
            )?;
        }
    }
    Ok(())
}

/// The findings, highest cost first, each with its evidence, why and fix.
fn write_findings(w: &mut dyn Write, findings: &[Finding]) -> io::Result<()> {
    writeln!(w)?;
    if findings.is_empty() {
        writeln!(w, "  findings: none")?;
    } else {
        writeln!(w, "  findings (highest cost first)")?;
        for f in findings {
            writeln!(
                w,
                "  * {}  {} ms ({})  confidence {}",
                f.id,
                ms(f.cost.ms),
                match f.cost.rtts {
                    Some(r) => format!("{r:.2} RTT"),
                    None => "RTT unknown".to_string(),
                },
                f.confidence.level.as_str()
            )?;
            writeln!(w, "    {}", crate::words::title(f))?;
            for (i, e) in f.evidence.iter().enumerate() {
                let label = if i == 0 { "evidence" } else { "" };
                writeln!(
                    w,
                    "    {:<9} frame {:<7} {}",
                    label,
                    e.frame,
                    crate::words::evidence(e)
                )?;
            }
            writeln!(
                w,
                "    {:<9} {} ({})",
                "why",
                crate::words::why(&f.confidence),
                f.confidence.level.as_str()
            )?;
            writeln!(w, "    {:<9} {}", "fix", crate::words::fix(f))?;
            writeln!(w, "    {:<9} {}", "see", f.references.join("; "))?;
        }
    }
    Ok(())
}

/// One QUIC connection in full: handshake, ladder, HTTP/3 streams,
/// findings.
pub fn write_quic_connection(w: &mut dyn Write, q: &QuicReport) -> io::Result<()> {
    writeln!(
        w,
        "QUIC connection {}  {} → {}  community_id {}",
        q.index, q.client, q.server, q.community_id
    )?;
    let mut line = format!(
        "  QUIC v{} · {} datagrams ({}–{}) · {} ms",
        q.version,
        q.datagrams[0] + q.datagrams[1],
        q.first_frame,
        q.last_frame,
        ms(q.duration_ms)
    );
    match &q.rtt {
        Some(r) => line.push_str(&format!(
            " · RTT {} ms min from {} ACK frames (client half {}, server half {})",
            ms(r.min_ms),
            r.samples,
            r.client_half_ms
                .map_or("?".to_string(), |x| format!("{} ms", ms(x))),
            r.server_half_ms
                .map_or("?".to_string(), |x| format!("{} ms", ms(x))),
        )),
        None => line.push_str(" · RTT unknown"),
    }
    if !q.roles_known {
        line.push_str(" · client told by ports (no client Initial)");
    }
    writeln!(w, "{line}")?;
    let h = &q.handshake;
    let mut l = match (h.ms, h.rtts) {
        (Some(m), Some(r)) => format!("  handshake {} ms, {r:.2} RTT (nominal 1)", ms(m)),
        (Some(m), None) => format!("  handshake {} ms", ms(m)),
        _ => "  handshake not complete in the capture".to_string(),
    };
    for (on, what) in [
        (h.version_negotiation, "Version Negotiation"),
        (h.retry, "Retry"),
        (h.hello_retry_request, "HelloRetryRequest"),
    ] {
        if on {
            l.push_str(&format!(" · {what}"));
        }
    }
    if let Some(c) = &h.cipher {
        l.push_str(&format!(" · {c}"));
    }
    if let Some(g) = &h.key_share_group {
        l.push_str(&format!(" · {g}"));
    }
    if let Some(s) = &h.sni {
        l.push_str(&format!(" · SNI {s}"));
    }
    if !h.alpn_offered.is_empty() {
        l.push_str(&format!(" · ALPN offered {}", h.alpn_offered.join(",")));
    }
    if h.resumed == Some(true) {
        l.push_str(" · resumed");
    }
    l.push_str(&format!(" · 0-RTT {}", h.zero_rtt));
    if let Some(b) = h.certificate_bytes {
        l.push_str(&format!(" · certificate {b} B"));
    }
    writeln!(w, "{l}")?;
    let undecrypted: u64 = q.not_decrypted.values().sum();
    let keys = if q.key_log {
        format!("key log used; {undecrypted} packet(s) not decrypted")
    } else if undecrypted > 0 {
        format!("no key log for it: Initial packets only ({undecrypted} packets not decrypted; `--keylog FILE` opens them)")
    } else {
        "all packets decrypted".to_string()
    };
    writeln!(
        w,
        "  packets {} client, {} server · lost {} client, {} server · {keys}",
        q.packets[0], q.packets[1], q.lost[0], q.lost[1]
    )?;
    if let Some(sp) = &q.spin {
        let flips = sp.flips[0] + sp.flips[1];
        let short = sp.packets[0] + sp.packets[1];
        match (sp.signal, sp.min_ms, sp.median_ms) {
            ("spins", Some(min), Some(med)) => writeln!(
                w,
                "  spin bit: RTT {} ms min, {} ms median from {} flip periods (no key needed; endpoints' delays and idle time included)",
                ms(min),
                ms(med),
                sp.samples
            )?,
            ("off", ..) => writeln!(
                w,
                "  spin bit: not used (never flips in {short} short-header packets)"
            )?,
            ("random", ..) => writeln!(
                w,
                "  spin bit: flips {flips} times, faster than the RTT: set at random, not a spin signal (no RTT from it)"
            )?,
            ("unchecked", ..) => writeln!(
                w,
                "  spin bit: flips {flips} times; no ACK-frame RTT to check it against, so no RTT from it"
            )?,
            _ => writeln!(w, "  spin bit: {flips} flip(s), no full period to time")?,
        }
    }
    write_ladder(w, &q.ladder)?;
    if !q.streams.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "  {:>6}  {:<7} {:<30} {:>6} {:>9} {:>10}  frames",
            "stream", "method", "path", "status", "TTFB ms", "bytes"
        )?;
        for s in q.streams.iter().take(REQUEST_ROWS) {
            writeln!(
                w,
                "  {:>6}  {:<7} {:<30} {:>6} {:>9} {:>10}  {}→{}",
                s.id,
                s.method.as_deref().unwrap_or("?"),
                s.path.as_deref().unwrap_or("?"),
                s.status.map_or("-".to_string(), |x| x.to_string()),
                s.ttfb_ms.map_or("-".to_string(), ms),
                s.response_bytes,
                s.request_frame.map_or("?".to_string(), |f| f.to_string()),
                s.end_frame
                    .or(s.response_frame)
                    .map_or("?".to_string(), |f| f.to_string()),
            )?;
            if let Some(st) = &s.server_timing {
                writeln!(w, "  {:>6}  {}", "", server_timing_line(st))?;
            }
        }
        if q.streams.len() > REQUEST_ROWS {
            writeln!(w, "  … {} more streams", q.streams.len() - REQUEST_ROWS)?;
        }
    }
    write_findings(w, &q.findings)?;
    for c in &q.closes {
        writeln!(w, "  CONNECTION_CLOSE from {c}")?;
    }
    writeln!(w)
}

/// Requests shown per connection; the rest are counted.
const REQUEST_ROWS: usize = 20;

/// The table of HTTP requests: one row each, wait and think time in ms;
/// `#` is the position on the connection (HTTP/2: the stream id), the
/// status a failed gRPC call's `grpc-status`.
fn write_requests(w: &mut dyn Write, rows: &[RequestRow]) -> io::Result<()> {
    writeln!(w)?;
    writeln!(
        w,
        "  {:>3} {:<32} {:>6} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9}  frames",
        "#", "request", "status", "sent ms", "ttfb ms", "RTTs", "think ms", "behind", "xfer ms"
    )?;
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), ms);
    for r in rows.iter().take(REQUEST_ROWS) {
        let request = match (&r.method, &r.target) {
            (Some(m), Some(t)) => format!("{m} {t}"),
            _ => "(request not seen)".to_string(),
        };
        let request: String = if request.chars().count() > 32 {
            request.chars().take(31).chain(['…']).collect()
        } else {
            request
        };
        writeln!(
            w,
            "  {:>3} {:<32} {:>6} {:>9} {:>9} {:>6} {:>9} {:>9} {:>9}  {}→{}",
            // HTTP/2: the stream id
            r.stream.map_or(r.index, u64::from),
            request,
            // a failed gRPC call: its grpc-status (the HTTP status is 200)
            match (r.grpc_status, r.status) {
                (Some(g), _) if g != 0 => format!("grpc {g}"),
                (_, Some(s)) => s.to_string(),
                _ => "-".to_string(),
            },
            opt(r.sent_ms),
            opt(r.ttfb_ms),
            r.ttfb_rtts
                .map_or_else(|| "-".to_string(), |x| format!("{x:.2}")),
            opt(r.server_think_ms),
            if r.behind_ms > 0.0 {
                ms(r.behind_ms)
            } else {
                "-".to_string()
            },
            opt(r.transfer_ms),
            r.request_frame
                .map_or_else(|| "?".to_string(), |f| f.to_string()),
            r.response_end_frame
                .or(r.response_frame)
                .map_or_else(|| "?".to_string(), |f| f.to_string()),
        )?;
        if let Some(st) = &r.server_timing {
            writeln!(w, "      {}", server_timing_line(st))?;
        }
    }
    if rows.len() > REQUEST_ROWS {
        writeln!(
            w,
            "  … {} more requests (all in JSON)",
            rows.len() - REQUEST_ROWS
        )?;
    }
    Ok(())
}

/// A row's `Server-Timing` beside the wire's think time: `server-timing
/// 100.2 ms (db 53.0, app 47.2) · think 120.3 ms · 20.1 ms unaccounted ·
/// frame 12`.
pub(crate) fn server_timing_line(st: &ServerTimingRow) -> String {
    let mut l = format!(
        "server-timing {}",
        st.total_ms
            .map_or_else(|| "-".to_string(), |t| format!("{t:.1} ms"))
    );
    let metrics: Vec<String> = st
        .metrics
        .iter()
        .map(|m| match m.dur_ms {
            Some(d) => format!("{} {d:.1}", m.name),
            None => m.name.clone(),
        })
        .collect();
    if !metrics.is_empty() {
        l.push_str(&format!(" ({})", metrics.join(", ")));
    }
    if let Some(t) = st.think_ms {
        l.push_str(&format!(" · think {t:.1} ms"));
    }
    if let Some(u) = st.unaccounted_ms {
        l.push_str(&format!(" · {u:.1} ms unaccounted"));
    }
    l.push_str(&format!(" · frame {}", st.frame));
    if st.trailer {
        l.push_str(" (trailers)");
    }
    l
}

/// The capture's TLS connections in one line, and how to see inside them
/// when there was no key log.
fn tls_line(t: &TlsTally) -> Option<String> {
    if t.is_empty() {
        return None;
    }
    let alpn: Vec<String> = t.alpn.iter().map(|(k, v)| format!("{k} × {v}")).collect();
    let head = format!(
        "TLS: {} connection{} (ALPN {})",
        t.connections,
        if t.connections == 1 { "" } else { "s" },
        alpn.join(", ")
    );
    Some(if t.key_log {
        let mut parts = vec![format!("{} decrypted with the key log", t.decrypted)];
        if t.partial > 0 {
            parts.push(format!("{} in part", t.partial));
        }
        if t.not_decrypted > 0 {
            parts.push(format!("{} not (see each connection)", t.not_decrypted));
        }
        format!("{head}: {}", parts.join(", "))
    } else {
        format!(
            "{head}: encrypted; to see each request inside, run the client with \
             SSLKEYLOGFILE=keys.txt (curl, Firefox, Chrome, Go's KeyLogWriter, rustls' \
             KeyLogFile) or capture with `rttlens probe --pcap`, then `rttlens analyze \
             --keylog keys.txt`"
        )
    })
}

/// What decryption did, in one line.
fn decryption_line(d: &Decryption) -> String {
    let opened = format!(
        "{} client + {} server records, {} + {} of application data",
        d.records[0],
        d.records[1],
        human_bytes(d.app_bytes[0] as f64),
        human_bytes(d.app_bytes[1] as f64)
    );
    let missed = match (d.failed, d.cut, d.first_failure) {
        (0, 0, _) => String::new(),
        (f, c, at) => format!(
            "; {f} records did not open, {c} were cut by the capture{}",
            at.map(|a| format!(" (first at frame {})", a.frame))
                .unwrap_or_default()
        ),
    };
    match d.status {
        DecryptStatus::Decrypted | DecryptStatus::Partial => {
            format!("decrypted with the key log: {opened}{missed}")
        }
        DecryptStatus::NoKeys => {
            "not decrypted: the key logs hold no secret for this connection's ClientHello".to_string()
        }
        DecryptStatus::NoHandshake => {
            "not decrypted: the capture lacks this connection's hellos (it began after them)".to_string()
        }
        DecryptStatus::UnsupportedSuite => {
            "not decrypted: its cipher suite is not one rttlens decrypts (AES-GCM, ChaCha20-Poly1305, AES-CBC)".to_string()
        }
        DecryptStatus::WrongKeys => format!(
            "not decrypted: no record opened with the logged secrets (a key log of another run?){missed}"
        ),
    }
}

impl Renderer for TextRenderer {
    fn begin(&mut self, _w: &mut dyn Write, source: &Source) -> io::Result<()> {
        self.source = source.name.clone();
        Ok(())
    }

    fn connection(&mut self, _w: &mut dyn Write, conn: Connection) -> io::Result<()> {
        let conn = match conn {
            Connection::Tcp(c) => *c,
            Connection::Quic(q) => {
                self.quic.push(*q);
                return Ok(());
            }
        };
        self.seen += 1;
        // `top` connections already rank before the floor: one that does
        // not cannot be shown (most connections of a big capture)
        if let Some(floor) = self.floor {
            if crate::costliest_first(rank(&conn), floor) != std::cmp::Ordering::Less {
                return Ok(());
            }
        }
        self.kept.push(conn);
        if self.kept.len() > 4 * self.top {
            self.sort();
            self.kept.truncate(self.top);
            self.floor = self.kept.last().map(rank);
        }
        Ok(())
    }

    fn end(&mut self, w: &mut dyn Write, s: &CaptureSummary) -> io::Result<()> {
        self.sort();
        self.kept.truncate(self.top);
        writeln!(
            w,
            "capture {}: {}, {} frames ({} TCP), {} connection{}, {:.3} s",
            self.source,
            s.format,
            s.frames,
            s.tcp_segments,
            s.connections,
            if s.connections == 1 { "" } else { "s" },
            s.duration_s
        )?;
        self.quic.sort_by_key(|q| q.index);
        if !self.quic.is_empty() {
            writeln!(
                w,
                "QUIC: {} connection{} in {} datagrams",
                self.quic.len(),
                if self.quic.len() == 1 { "" } else { "s" },
                s.quic_datagrams
            )?;
        }
        if s.quality.is_clean() {
            writeln!(w, "quality: clean")?;
        } else {
            writeln!(w, "quality: {}", s.quality.notes().join("; "))?;
        }
        if let Some(line) = tls_line(&s.tls) {
            writeln!(w, "{line}")?;
        }
        if !s.findings_by_id.is_empty() {
            let counts: Vec<String> = s
                .findings_by_id
                .iter()
                .map(|(k, v)| format!("{k} × {v}"))
                .collect();
            writeln!(w, "findings: {}", counts.join(", "))?;
        }
        writeln!(w)?;
        crate::population::write_text(w, s)?;
        if self.seen as usize > self.kept.len() {
            writeln!(
                w,
                "the {} connections that lost the most time (of {}; `--conn` picks others):",
                self.kept.len(),
                self.seen
            )?;
            writeln!(w)?;
        } else {
            self.kept.sort_by_key(|c| c.index);
        }
        let single = self.kept.len() == 1;
        for c in &self.kept {
            write_connection(w, c, self.rounds || single)?;
        }
        for q in &self.quic {
            write_quic_connection(w, q)?;
        }
        Ok(())
    }
}
