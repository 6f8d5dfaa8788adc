//! JSON output: one document, streamed.
//!
//! ```text
//! {"schema_version": 3, "tool": "rttlens 0.1.0", "source": "capture.pcap",
//!  "connections": [ <connection>, … ],
//!  "capture": <summary>}
//! ```
//!
//! Connections appear in the order the analysis finishes them (use `index`
//! for first-packet order). The full schema, field by field with units, is
//! in `docs/json.md`; any incompatible change bumps [`SCHEMA_VERSION`].

use std::io::{self, Write};

use rttlens_core::model::finding::{Confidence, Evidence, Finding};
use rttlens_core::model::population::PopFinding;
use rttlens_core::model::Phase;
use rttlens_core::model::{ConnIndex, ConnReport, Connection, QuicReport, Rendered, Transport};
use rttlens_core::pipeline::CaptureSummary;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::{words, Renderer, Source};

pub mod ser;

/// Version of the JSON schema documented in `docs/json.md`. 3: a finding
/// carries its typed parameters (`facts`), each evidence frame and each
/// reason its typed facts, beside the sentences (docs/json.md "From 2 to 3").
pub const SCHEMA_VERSION: u32 = 3;

/// A finding as the JSON writes it: the engine's typed record and the
/// sentences [`words`] writes from it.
pub struct FindingJson<'a>(pub &'a Finding);

impl Serialize for FindingJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut m = s.serialize_struct("Finding", 9)?;
        m.serialize_field("id", f.id)?;
        m.serialize_field("connection", &ConnIndex(f.connection()))?;
        m.serialize_field("title", &words::title(f))?;
        m.serialize_field("cost", &f.cost)?;
        m.serialize_field("evidence", &Seq(&f.evidence, EvidenceJson))?;
        m.serialize_field("confidence", &ConfidenceJson(&f.confidence))?;
        m.serialize_field("fix", &words::fix(f))?;
        m.serialize_field("references", &f.references)?;
        m.serialize_field("facts", &f.facts)?;
        m.end()
    }
}

/// One evidence frame: `frame`, `what` (the sentence) and `facts`.
struct EvidenceJson<'a>(&'a Evidence);

impl Serialize for EvidenceJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Evidence", 3)?;
        m.serialize_field("frame", &self.0.frame)?;
        m.serialize_field("what", &words::evidence(self.0))?;
        m.serialize_field("facts", &self.0.facts)?;
        m.end()
    }
}

/// `level`, `why` (the sentence) and `reasons` (its typed facts).
struct ConfidenceJson<'a>(&'a Confidence);

impl Serialize for ConfidenceJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_struct("Confidence", 3)?;
        m.serialize_field("level", &self.0.level)?;
        m.serialize_field("why", &words::why(self.0))?;
        m.serialize_field("reasons", &self.0.why)?;
        m.end()
    }
}

/// A population finding: the engine's typed record (`facts`, each
/// evidence's `fact`, the confidence's `reasons`) and the sentences
/// [`words`] writes from it (`title`, `evidence[].what`, `confidence.why`,
/// `fix`).
struct PopFindingJson<'a>(&'a PopFinding);

impl Serialize for PopFindingJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// One proof: its connection, frames or interval, `what` (the
        /// sentence) and `fact`.
        struct Ev<'a>(&'a rttlens_core::model::population::PopEvidence);
        impl Serialize for Ev<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let e = self.0;
                let mut m = s.serialize_struct("PopEvidence", 5)?;
                if let Some(c) = e.connection {
                    m.serialize_field("connection", &c)?;
                } else {
                    m.skip_field("connection")?;
                }
                if e.frames.is_empty() {
                    m.skip_field("frames")?;
                } else {
                    m.serialize_field("frames", &e.frames)?;
                }
                if let Some(iv) = e.interval {
                    m.serialize_field("interval", &iv)?;
                } else {
                    m.skip_field("interval")?;
                }
                m.serialize_field("what", &words::fact(&e.fact))?;
                m.serialize_field("fact", &e.fact)?;
                m.end()
            }
        }
        let f = self.0;
        let mut m = s.serialize_struct("PopFinding", 8)?;
        m.serialize_field("id", f.id)?;
        m.serialize_field("title", &words::pop_title(f))?;
        m.serialize_field("cost", &f.cost)?;
        m.serialize_field("evidence", &Seq(&f.evidence, Ev))?;
        m.serialize_field("confidence", &ConfidenceJson(&f.confidence))?;
        m.serialize_field("fix", &words::pop_fix(f))?;
        m.serialize_field("references", &f.references)?;
        m.serialize_field("facts", &f.facts)?;
        m.end()
    }
}

/// A slice serialized through the wrapper `W` of each item.
struct Seq<'a, T, W>(&'a [T], fn(&'a T) -> W);

impl<'a, T, W: Serialize> Serialize for Seq<'a, T, W> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(self.1))
    }
}

/// A ladder phase: its fields, `detail` (the sentence) and `facts` (the
/// detail's typed values).
struct PhaseJson<'a>(&'a Phase);

impl Serialize for PhaseJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut m = s.serialize_struct("Phase", 8)?;
        m.serialize_field("name", p.name)?;
        m.serialize_field("start_frame", &p.start_frame)?;
        m.serialize_field("end_frame", &p.end_frame)?;
        m.serialize_field("ms", &p.ms)?;
        m.serialize_field("rtts", &p.rtts)?;
        m.serialize_field("detail", &words::phase_detail(p))?;
        m.serialize_field("facts", &p.detail.args)?;
        m.serialize_field("parts", &p.parts)?;
        m.end()
    }
}

/// A TCP connection: its transport, the engine's report, then its ladder
/// and findings.
#[derive(Serialize)]
pub struct ConnJson<'a> {
    transport: Transport,
    #[serde(flatten)]
    conn: &'a ConnReport,
    ladder: Seq<'a, Phase, PhaseJson<'a>>,
    findings: Seq<'a, Finding, FindingJson<'a>>,
}

impl<'a> ConnJson<'a> {
    /// The JSON of `conn`.
    pub fn new(conn: &'a ConnReport) -> Self {
        ConnJson {
            transport: Transport::Tcp,
            conn,
            ladder: Seq(&conn.ladder, PhaseJson),
            findings: Seq(&conn.findings, FindingJson),
        }
    }
}

/// A QUIC connection: its transport, the engine's report, then its ladder
/// and findings.
#[derive(Serialize)]
pub struct QuicJson<'a> {
    transport: Transport,
    #[serde(flatten)]
    quic: &'a QuicReport,
    ladder: Seq<'a, Phase, PhaseJson<'a>>,
    findings: Seq<'a, Finding, FindingJson<'a>>,
}

impl<'a> QuicJson<'a> {
    /// The JSON of `quic`.
    pub fn new(quic: &'a QuicReport) -> Self {
        QuicJson {
            transport: Transport::Quic,
            quic,
            ladder: Seq(&quic.ladder, PhaseJson),
            findings: Seq(&quic.findings, FindingJson),
        }
    }
}

/// The capture summary, with its population findings and their
/// sentences (the QUIC connections are in `connections`, as the TCP ones).
#[derive(Serialize)]
pub struct SummaryJson<'a> {
    #[serde(flatten)]
    summary: &'a CaptureSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    population_findings: Option<Seq<'a, PopFinding, PopFindingJson<'a>>>,
}

impl<'a> SummaryJson<'a> {
    /// The JSON of `summary`.
    pub fn new(summary: &'a CaptureSummary) -> Self {
        let pop = &summary.population.population_findings;
        SummaryJson {
            summary,
            population_findings: (!pop.is_empty()).then_some(Seq(
                pop.as_slice(),
                PopFindingJson as fn(&'a PopFinding) -> PopFindingJson<'a>,
            )),
        }
    }
}

/// `conn` as one JSON object, appended to `buf` (by [`ser`], which writes
/// serde_json's bytes faster): the bytes `serde_json` writes for
/// [`ConnJson`] or [`QuicJson`] (`tests/json_bytes.rs`).
/// A TCP connection written ahead ([`prerender`]) is copied, with its
/// index.
pub fn write_connection(buf: &mut Vec<u8>, conn: &Connection) -> io::Result<()> {
    match conn {
        Connection::Tcp(c) => match &c.rendered {
            Some(r) => {
                r.write_into(buf, c.index);
                Ok(())
            }
            None => spliced(buf, Transport::Tcp, c, &c.ladder, &c.findings),
        },
        Connection::Quic(q) => spliced(buf, Transport::Quic, q, &q.ladder, &q.findings),
    }
    .map_err(io::Error::other)
}

/// A TCP connection's JSON object written ahead, on the thread that made
/// its report (`Options::prerender`): [`write_connection`] then copies it.
/// `None` when it cannot be written: the merging thread writes it then,
/// and says why.
pub fn prerender(c: &ConnReport) -> Option<Rendered> {
    let mut r = Rendered {
        bytes: Vec::with_capacity(4096),
        marks: Vec::new(),
        index: c.index,
    };
    let marks = Some(&mut r.marks);
    spliced_marked(
        &mut r.bytes,
        marks,
        Transport::Tcp,
        c,
        &c.ladder,
        &c.findings,
    )
    .ok()?;
    Some(r)
}

/// `{"transport":…,<the report's fields>,"ladder":[…],"findings":[…]}`:
/// what `#[serde(flatten)]` writes for [`ConnJson`] and [`QuicJson`], with
/// the report written as the struct it is and its object's braces taken
/// off. serde writes a flattened struct as a map, each field name through
/// the map-key path (about a tenth of a connection's JSON instructions,
/// callgrind, bench/README.md "issue 41, fourth session").
fn spliced<R: Serialize>(
    buf: &mut Vec<u8>,
    transport: Transport,
    report: &R,
    ladder: &[Phase],
    findings: &[Finding],
) -> Result<(), ser::Error> {
    spliced_marked(buf, None, transport, report, ladder, findings)
}

/// [`spliced`], noting in `marks` (when given) where each connection
/// index starts.
fn spliced_marked<R: Serialize>(
    buf: &mut Vec<u8>,
    mut marks: Option<&mut Vec<usize>>,
    transport: Transport,
    report: &R,
    ladder: &[Phase],
    findings: &[Finding],
) -> Result<(), ser::Error> {
    fn put<T: Serialize>(
        buf: &mut Vec<u8>,
        marks: &mut Option<&mut Vec<usize>>,
        v: &T,
    ) -> Result<(), ser::Error> {
        match marks.as_deref_mut() {
            Some(m) => ser::to_vec_marked(buf, m, v),
            None => ser::to_vec_into(buf, v),
        }
    }
    buf.extend_from_slice(b"{\"transport\":");
    put(buf, &mut marks, &transport)?;
    let at = buf.len();
    put(buf, &mut marks, report)?;
    // `{…}`: its `{` becomes the comma after `transport`, its `}` goes (an
    // empty `{}` leaves nothing)
    if buf.len() - at <= 2 {
        buf.truncate(at);
    } else {
        buf[at] = b',';
        buf.pop();
    }
    buf.extend_from_slice(b",\"ladder\":");
    put(buf, &mut marks, &Seq(ladder, PhaseJson))?;
    buf.extend_from_slice(b",\"findings\":");
    put(buf, &mut marks, &Seq(findings, FindingJson))?;
    buf.push(b'}');
    Ok(())
}

/// The capture summary's JSON object, appended to `buf`.
pub fn write_summary(buf: &mut Vec<u8>, summary: &CaptureSummary) -> io::Result<()> {
    ser::to_vec_into(buf, &SummaryJson::new(summary)).map_err(io::Error::other)
}

/// Streams the JSON document.
#[derive(Debug, Default)]
pub struct JsonRenderer {
    count: u64,
    /// Each connection is serialized here first and written in one call
    /// (serde_json's many small writes through `dyn Write` cost more).
    buf: Vec<u8>,
}

/// `"schema_version":…,"tool":…,"source":…`: the head of both the JSON
/// document and the JSON Lines header line.
fn head_fields(source: &Source) -> io::Result<String> {
    let mut name = Vec::new();
    ser::to_vec_into(&mut name, &source.name).map_err(io::Error::other)?;
    Ok(format!(
        "\"schema_version\":{SCHEMA_VERSION},\"tool\":\"rttlens {}\",\"source\":{}",
        env!("CARGO_PKG_VERSION"),
        String::from_utf8_lossy(&name)
    ))
}

impl Renderer for JsonRenderer {
    fn begin(&mut self, w: &mut dyn Write, source: &Source) -> io::Result<()> {
        write!(w, "{{{},\"connections\":[", head_fields(source)?)
    }

    fn connection(&mut self, w: &mut dyn Write, conn: Connection) -> io::Result<()> {
        self.buf.clear();
        if self.count > 0 {
            self.buf.push(b',');
        }
        self.buf.push(b'\n');
        write_connection(&mut self.buf, &conn)?;
        w.write_all(&self.buf)?;
        self.count += 1;
        Ok(())
    }

    fn end(&mut self, w: &mut dyn Write, summary: &CaptureSummary) -> io::Result<()> {
        self.buf.clear();
        self.buf.extend_from_slice(b"\n],\"capture\":");
        write_summary(&mut self.buf, summary)?;
        self.buf.extend_from_slice(b"}\n");
        w.write_all(&self.buf)
    }
}

/// Streams JSON Lines: a header line, one line per connection as soon as
/// it ends (TCP and QUIC), and a summary line, each an object whose `type`
/// says which:
///
/// ```text
/// {"type":"header","schema_version":3,"tool":"rttlens 0.1.0","source":"capture.pcap"}
/// {"type":"connection","transport":"tcp", <the fields of a TCP connection>}
/// {"type":"connection","transport":"quic", <the fields of a QUIC connection>}
/// …
/// {"type":"summary","capture":<summary>}
/// ```
///
/// A connection's line is an element of the JSON document's
/// `connections`, with `type` added, in the same order.
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

    fn connection(&mut self, w: &mut dyn Write, conn: Connection) -> io::Result<()> {
        // the type goes first, inside the connection's own object: the
        // object's opening brace becomes the comma after it
        self.buf.clear();
        self.buf.extend_from_slice(b"{\"type\":\"connection\"");
        let at = self.buf.len();
        write_connection(&mut self.buf, &conn)?;
        debug_assert_eq!(self.buf[at], b'{');
        self.buf[at] = b',';
        self.buf.push(b'\n');
        w.write_all(&self.buf)
    }

    fn end(&mut self, w: &mut dyn Write, summary: &CaptureSummary) -> io::Result<()> {
        self.buf.clear();
        self.buf
            .extend_from_slice(b"{\"type\":\"summary\",\"capture\":");
        write_summary(&mut self.buf, summary)?;
        self.buf.extend_from_slice(b"}\n");
        w.write_all(&self.buf)
    }
}
