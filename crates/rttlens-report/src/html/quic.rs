//! A QUIC connection's section of the HTML report: what it was, its ladder
//! of phases, its findings and the graphs that apply to QUIC (the ladder
//! diagram, the IO graph, the RTT samples), drawn from its datagrams
//! ([`rttlens_core::model::trace::QuicTrace`]) through the code that draws
//! a TCP connection's ([`Traced`]).

use std::io::{self, Write};
use std::path::Path;

use rttlens_core::base::side::Side;
use rttlens_core::model::trace::PacketType;
use rttlens_core::model::trace::QuicTrace;
use rttlens_core::model::trace::RttSample;
use rttlens_core::model::Finding;
use rttlens_core::model::QuicReport;

use super::traced::{Row, Traced, View};
use super::{
    charts, esc, figure, finding_articles, ladder, phase_table, write_svgs, Figure, HtmlOptions,
};

impl Traced for View<'_, QuicReport, QuicTrace> {
    const UNIT: &'static str = "datagrams";
    const BYTES: &'static str = "UDP payload bytes";
    const NO_RTT: &'static str =
        "no RTT samples (no ACK frame acknowledged a packet the capture saw)";
    const RTT_CAPTION: &'static str = "Each dot is one RTT sample from an ACK frame (RFC 9002 §5.1: from the packet an ACK newly acknowledges as its largest to that ACK, the ACK's reported delay taken off in the application space) plus the other half's minimum, so every dot is a whole round trip. Without a key log only the Initial packets' ACKs are read; a band rising above the minimum is queueing.";

    fn client(&self) -> &str {
        &self.c.client
    }

    fn server(&self) -> &str {
        &self.c.server
    }

    fn halves(&self) -> (f64, f64) {
        match self
            .c
            .rtt
            .as_ref()
            .map(|r| (r.client_half_ms, r.server_half_ms))
        {
            Some((Some(c), Some(s))) => (c, s),
            _ => (0.0, 0.0),
        }
    }

    fn min_rtt(&self) -> Option<f64> {
        let (c, s) = self.halves();
        (c > 0.0 && s > 0.0).then(|| self.c.rtt.as_ref().map(|r| r.min_ms))?
    }

    fn findings(&self) -> &[Finding] {
        &self.c.findings
    }

    fn len(&self) -> usize {
        self.t.datagrams.len()
    }

    fn row(&self, i: usize) -> Row {
        let d = &self.t.datagrams[i];
        Row {
            at: d.at,
            side: d.side,
            len: d.len,
            thin: d.ack_only(),
            again: d.crypto_again,
        }
    }

    fn words(&self, i: usize) -> String {
        let d = &self.t.datagrams[i];
        let types: Vec<&str> = d.types().map(|t| t.as_str()).collect();
        let mut parts: Vec<String> = Vec::new();
        if !types.is_empty() {
            parts.push(types.join(" + "));
        }
        let named: Vec<&str> = self.t.labels_of(d.at.frame).collect();
        if !named.is_empty() {
            parts.push(named.join(", "));
        } else if d.ack_only() {
            parts.push("ACK".into());
        }
        parts.push(format!("{} B", d.len));
        if d.crypto_again {
            parts.push("CRYPTO again".into());
        }
        parts.join(" · ")
    }

    fn detail(&self, i: usize) -> String {
        let d = &self.t.datagrams[i];
        let clear = d
            .types()
            .all(|t| matches!(t, PacketType::Retry | PacketType::VersionNegotiation));
        format!(
            "{} packet{}{}, {}",
            d.packets,
            if d.packets == 1 { "" } else { "s" },
            d.first_pn
                .map_or(String::new(), |pn| format!(" from packet number {pn}")),
            match (d.opened, clear) {
                (true, _) => "decrypted",
                (false, true) => "not encrypted",
                (false, false) => "not all decrypted",
            }
        )
    }

    fn samples(&self) -> &[(Side, RttSample)] {
        &self.t.rtt
    }
}

/// The graphs of a QUIC connection, in reading order: the ladder diagram,
/// the IO graph and the RTT samples. None without a trace.
pub fn figures(q: &QuicReport, o: &HtmlOptions) -> Vec<Figure> {
    let Some(t) = q.trace.as_deref() else {
        return Vec::new();
    };
    let v = View { c: q, t };
    vec![
        ladder::ladder(&v, o.ladder_packets),
        charts::io(&v, o.io_interval_ms),
        charts::rtt(&v),
    ]
}

/// The capture's QUIC connections (docs/design.md §4 "QUIC"), each as a
/// TCP connection is shown: what it was, its ladder (`quic-handshake`,
/// then `request` and `transfer` with HTTP/3 decrypted) in ms and RTTs,
/// its findings and its graphs ([`figures`]), each also written to
/// `svg_dir` when set. Nothing without QUIC.
///
/// # Errors
/// Writing failed.
pub(super) fn section(
    w: &mut dyn Write,
    p: &str,
    quic: &[QuicReport],
    o: &HtmlOptions,
    svg_dir: Option<&Path>,
) -> io::Result<()> {
    if quic.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "<section class=\"quic\" id=\"{p}quic\">\n<h3>QUIC connections</h3>\n<p class=\"note\">{} QUIC connection{}, in order of first packet.</p>",
        quic.len(),
        if quic.len() == 1 { "" } else { "s" }
    )?;
    for q in quic {
        writeln!(
            w,
            "<section class=\"conn quic-conn\" id=\"{p}quic-{}\">\n<h3>QUIC connection {} <span class=\"ends\">{} → {}</span></h3>",
            q.index,
            q.index,
            esc(&q.client),
            esc(&q.server)
        )?;
        let h = &q.handshake;
        let mut meta = format!(
            "QUIC v{} · {} packets ({}–{}) · {:.1} ms",
            q.version,
            q.packets[0] + q.packets[1],
            q.first_frame,
            q.last_frame,
            q.duration_ms
        );
        match &q.rtt {
            Some(r) => meta.push_str(&format!(" · RTT {:.2} ms min", r.min_ms)),
            None => meta.push_str(" · RTT unknown"),
        }
        if let Some(sni) = &h.sni {
            meta.push_str(&format!(" · SNI {sni}"));
        }
        if !h.alpn_offered.is_empty() {
            meta.push_str(&format!(" · ALPN offered {}", h.alpn_offered.join(", ")));
        }
        if h.resumed == Some(true) {
            meta.push_str(" · resumed");
        }
        meta.push_str(&format!(" · 0-RTT {}", h.zero_rtt));
        let undecrypted: u64 = q.not_decrypted.values().sum();
        meta.push_str(&format!(
            " · {} packets decrypted{}",
            q.decrypted[0] + q.decrypted[1],
            if undecrypted > 0 {
                format!(", {undecrypted} not")
            } else {
                String::new()
            }
        ));
        if !q.roles_known {
            meta.push_str(" · client told by port");
        }
        writeln!(w, "<p class=\"meta\">{}</p>", esc(&meta))?;
        for c in &q.closes {
            writeln!(w, "<p class=\"note\">CONNECTION_CLOSE {}</p>", esc(c))?;
        }
        phase_table(w, &q.ladder)?;
        finding_articles(w, &q.findings)?;
        let figs = figures(q, o);
        if let Some(dir) = svg_dir {
            write_svgs(dir, p, &format!("quic-{}", q.index), &figs)?;
        }
        for f in &figs {
            figure(w, f)?;
        }
        writeln!(w, "</section>")?;
    }
    writeln!(w, "</section>")
}
