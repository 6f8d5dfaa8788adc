//! The probe's JSON document (`docs/probe.md`): `schema_version`, `tool`,
//! `source` (the URL), `probe` (the run), `connections` (the probe's own
//! capture analysed) and `capture` (its summary).

use std::io::{self, Write};

use rttlens_probe_model::ProbeReport;

use crate::json::{ConnJson, QuicJson, SummaryJson};

/// The JSON document of `report` (docs/probe.md).
///
/// # Errors
/// Writing failed.
pub fn write_json(report: &ProbeReport, w: &mut dyn Write) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        schema_version: u32,
        tool: String,
        source: &'a str,
        probe: &'a ProbeReport,
        connections: Vec<Conn<'a>>,
        capture: Option<SummaryJson<'a>>,
    }
    /// A connection of either transport (each writes its `transport`).
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum Conn<'a> {
        Tcp(ConnJson<'a>),
        Quic(QuicJson<'a>),
    }
    let doc = Doc {
        schema_version: crate::json::SCHEMA_VERSION,
        tool: format!("rttlens {}", env!("CARGO_PKG_VERSION")),
        source: &report.url,
        probe: report,
        // the TCP connections, then the QUIC ones (`--http3`), as `analyze`
        // lists them
        connections: report
            .connections
            .iter()
            .map(|c| Conn::Tcp(ConnJson::new(c)))
            .chain(
                report
                    .quic_connections
                    .iter()
                    .map(|q| Conn::Quic(QuicJson::new(q))),
            )
            .collect(),
        capture: report.capture_summary.as_ref().map(SummaryJson::new),
    };
    serde_json::to_writer(&mut *w, &doc).map_err(io::Error::other)?;
    writeln!(w)
}
