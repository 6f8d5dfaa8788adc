//! # rttlens-report: renderers for rttlens analyses
//!
//! One renderer per format behind [`Renderer`] (hyperfine's `Exporter`
//! pattern): [`text::TextRenderer`] for people, [`json::JsonRenderer`] for
//! machines (schema: `docs/json.md`, versioned by [`json::SCHEMA_VERSION`]).
//! Renderers stream: connections are handed over as the analysis finishes
//! them, and the capture summary comes last.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod json;
pub mod text;

use std::io::{self, Write};

use rttlens_core::pipeline::CaptureSummary;
use rttlens_core::report::ConnReport;

/// What is being analysed, for the report's header.
#[derive(Debug, Clone)]
pub struct Source {
    /// File name as the user gave it (`-` for stdin).
    pub name: String,
}

/// A report format.
pub trait Renderer {
    /// Start of the report.
    fn begin(&mut self, w: &mut dyn Write, source: &Source) -> io::Result<()>;
    /// One analysed connection.
    fn connection(&mut self, w: &mut dyn Write, conn: ConnReport) -> io::Result<()>;
    /// End of the report, with the capture summary.
    fn end(&mut self, w: &mut dyn Write, summary: &CaptureSummary) -> io::Result<()>;
}
