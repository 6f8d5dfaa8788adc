//! The probe's JSON document (`docs/probe.md`): `schema_version`, `tool`,
//! `source` (the URL), `probe` (the run), `connections` (the probe's own
//! capture analysed) and `capture` (its summary).

use std::io::{self, Write};

use rttlens_core::model::ConnReport;
use rttlens_core::pipeline::CaptureSummary;

use super::ProbeReport;

impl ProbeReport {
    /// The JSON document (docs/probe.md).
    ///
    /// # Errors
    /// Writing failed.
    pub fn write_json(&self, w: &mut dyn Write) -> io::Result<()> {
        #[derive(serde::Serialize)]
        struct Doc<'a> {
            schema_version: u32,
            tool: String,
            source: &'a str,
            probe: &'a ProbeReport,
            connections: &'a [ConnReport],
            capture: Option<&'a CaptureSummary>,
        }
        let doc = Doc {
            schema_version: crate::json::SCHEMA_VERSION,
            tool: format!("rttlens {}", env!("CARGO_PKG_VERSION")),
            source: &self.url,
            probe: self,
            connections: &self.connections,
            capture: self.capture_summary.as_ref(),
        };
        serde_json::to_writer(&mut *w, &doc).map_err(io::Error::other)?;
        writeln!(w)
    }
}
