//! JSON output: one document, streamed.
//!
//! ```text
//! {"schema_version": 2, "tool": "rttlens 0.1.0", "source": "capture.pcap",
//!  "connections": [ <connection>, … ],
//!  "capture": <summary>}
//! ```
//!
//! Connections appear in the order the analysis finishes them (use `index`
//! for first-packet order). The full schema, field by field with units, is
//! in `docs/json.md`; any incompatible change bumps [`SCHEMA_VERSION`].

use std::io::{self, Write};

use rttlens_core::model::{ConnReport, QuicReport};
use rttlens_core::pipeline::CaptureSummary;

use crate::{Renderer, Source};

/// Version of the JSON schema documented in `docs/json.md`.
pub const SCHEMA_VERSION: u32 = 2;

/// Streams the JSON document.
#[derive(Debug, Default)]
pub struct JsonRenderer {
    count: u64,
    /// Each connection is serialized here first and written in one call
    /// (serde_json's many small writes through `dyn Write` cost more).
    buf: Vec<u8>,
}

fn to_io(e: serde_json::Error) -> io::Error {
    io::Error::other(e)
}

/// `"schema_version":…,"tool":…,"source":…`: the head of both the JSON
/// document and the JSON Lines header line.
fn head_fields(source: &Source) -> io::Result<String> {
    let name = serde_json::to_string(&source.name).map_err(to_io)?;
    Ok(format!(
        "\"schema_version\":{SCHEMA_VERSION},\"tool\":\"rttlens {}\",\"source\":{name}",
        env!("CARGO_PKG_VERSION")
    ))
}

impl Renderer for JsonRenderer {
    fn begin(&mut self, w: &mut dyn Write, source: &Source) -> io::Result<()> {
        write!(w, "{{{},\"connections\":[", head_fields(source)?)
    }

    fn connection(&mut self, w: &mut dyn Write, conn: ConnReport) -> io::Result<()> {
        self.buf.clear();
        if self.count > 0 {
            self.buf.push(b',');
        }
        self.buf.push(b'\n');
        serde_json::to_writer(&mut self.buf, &conn).map_err(to_io)?;
        w.write_all(&self.buf)?;
        self.count += 1;
        Ok(())
    }

    fn end(&mut self, w: &mut dyn Write, summary: &CaptureSummary) -> io::Result<()> {
        w.write_all(b"\n],\"capture\":")?;
        serde_json::to_writer(&mut *w, summary).map_err(to_io)?;
        w.write_all(b"}\n")
    }
}

/// Streams JSON Lines: a header line, one line per connection as soon as
/// it ends (TCP and QUIC), and a summary line, each an object whose `type`
/// says which:
///
/// ```text
/// {"type":"header","schema_version":2,"tool":"rttlens 0.1.0","source":"capture.pcap"}
/// {"type":"connection", <the fields of a connection>}
/// {"type":"quic_connection", <the fields of a QUIC connection>}
/// …
/// {"type":"summary","capture":<summary without quic>}
/// ```
///
/// A QUIC connection's line is an element of the JSON document's
/// `capture.quic`; the summary line leaves `quic` out (each had its line).
///
/// Memory and the time to the first line do not grow with the capture
/// (the `json` document's array must be closed before any parser reads
/// it); `docs/json.md` shows how to load it into DuckDB.
#[derive(Debug, Default)]
pub struct JsonlRenderer {
    buf: Vec<u8>,
}

impl Renderer for JsonlRenderer {
    fn begin(&mut self, w: &mut dyn Write, source: &Source) -> io::Result<()> {
        writeln!(w, "{{\"type\":\"header\",{}}}", head_fields(source)?)
    }

    fn connection(&mut self, w: &mut dyn Write, conn: ConnReport) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, &conn).map_err(to_io)?;
        // the type goes first, inside the connection's own object
        let fields = self.buf.strip_prefix(b"{").unwrap_or(&self.buf);
        w.write_all(b"{\"type\":\"connection\",")?;
        w.write_all(fields)?;
        w.write_all(b"\n")
    }

    fn quic_connection(&mut self, w: &mut dyn Write, quic: &QuicReport) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, quic).map_err(to_io)?;
        let fields = self.buf.strip_prefix(b"{").unwrap_or(&self.buf);
        w.write_all(b"{\"type\":\"quic_connection\",")?;
        w.write_all(fields)?;
        w.write_all(b"\n")
    }

    fn end(&mut self, w: &mut dyn Write, summary: &CaptureSummary) -> io::Result<()> {
        w.write_all(b"{\"type\":\"summary\",\"capture\":")?;
        if summary.quic.is_empty() {
            serde_json::to_writer(&mut *w, summary).map_err(to_io)?;
        } else {
            // each QUIC connection had its own line
            let mut without = summary.clone();
            without.quic.clear();
            serde_json::to_writer(&mut *w, &without).map_err(to_io)?;
        }
        w.write_all(b"}\n")
    }
}
