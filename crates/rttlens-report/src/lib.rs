//! # rttlens-report: renderers for rttlens analyses
//!
//! One renderer per format behind [`Renderer`] (hyperfine's `Exporter`
//! pattern): [`text::TextRenderer`] for people, [`json::JsonRenderer`] for
//! machines (schema: `docs/json.md`, versioned by [`json::SCHEMA_VERSION`]),
//! [`html::HtmlRenderer`] for the pictures (one self-contained page).
//! Renderers stream: connections are handed over as the analysis finishes
//! them, and the capture summary comes last. [`probe`] renders the report
//! of `rttlens probe` as text and JSON (its plain types are
//! `rttlens-probe-model`'s, filled by `rttlens-probe`, which this crate
//! does not depend on).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod html;
pub mod json;
pub mod population;
pub mod probe;
pub mod qlog;
pub mod text;
pub mod words;

use std::cmp::Ordering;
use std::io::{self, Write};

use rttlens_core::model::{ConnReport, Connection};
use rttlens_core::pipeline::CaptureSummary;

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
    /// One analysed connection, TCP or QUIC, as the pipeline hands it on
    /// ([`rttlens_core::pipeline::run_with`]: in the order connections
    /// end, the same at any thread count).
    fn connection(&mut self, w: &mut dyn Write, conn: Connection) -> io::Result<()>;
    /// End of the report, with the capture summary.
    fn end(&mut self, w: &mut dyn Write, summary: &CaptureSummary) -> io::Result<()>;
}

/// The order connections are shown in: highest findings cost first, then
/// the longest, then by index.
pub fn slowest_first(a: &ConnReport, b: &ConnReport) -> Ordering {
    costliest_first(
        (a.findings_ms(), a.duration_ms, a.index),
        (b.findings_ms(), b.duration_ms, b.index),
    )
}

/// [`slowest_first`] on `(findings ms, duration ms, index)`.
pub(crate) fn costliest_first(a: (f64, f64, u64), b: (f64, f64, u64)) -> Ordering {
    b.0.total_cmp(&a.0)
        .then(b.1.total_cmp(&a.1))
        .then(a.2.cmp(&b.2))
}
