//! rttlens' columnar records (issue 42): the typed record of each analysed
//! connection ([`rttlens_core::model::Connection`]) as rows of three
//! tables, Arrow record batches, written as Parquet files or as an Arrow
//! IPC stream. `docs/schema.md` documents every column and its unit.
//!
//! - `connections`: one row per connection, TCP or QUIC. Zeek `conn.log`'s
//!   columns first where they exist (`ts`, `uid`, `id.orig_h`, …,
//!   `history`), then the Community ID, the ladder, the RTT, TLS or QUIC
//!   facts and the findings' cost totals.
//! - `findings`: one row per finding, its typed facts as a map
//!   ([`facts`](crate#facts)), its cost, confidence and evidence frames.
//! - `requests`: one row per HTTP/1.x request and HTTP/2 or HTTP/3 stream.
//!
//! Only the engine's data goes in: no sentence (a finding's title and fix
//! are templates keyed by its `id`, `rttlens_report::words`), so the
//! crate needs nothing but `rttlens-core` and arrow-rs.
//!
//! [`Batcher`] turns a stream of connections into batches of the three
//! tables as they fill ([`record_batches`] all at once); [`ParquetTables`]
//! and [`IpcTables`] write them; [`RotatingParquet`] writes a series of
//! closed files, one per period or size (`--rotate`). Each schema carries its table's name and
//! the schema version in its metadata ([`TABLE_KEY`], [`VERSION_KEY`]),
//! each column its unit ([`UNIT_KEY`]).
//!
//! # Facts
//! See the `facts` module: a `map<string, struct>` per set of values.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod connections;
mod facts;
mod findings;
mod key;
mod requests;
mod rotate;
mod write;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};
use rttlens_core::model::Connection;

pub use rotate::{Rotate, RotatingParquet};
pub use write::{IpcTables, ParquetTables};

/// The version of the three tables' schemas: a column renamed, removed or
/// changed in type or unit makes it 2; a column added does not.
pub const SCHEMA_VERSION: u32 = 1;
/// Schema metadata key: [`SCHEMA_VERSION`].
pub const VERSION_KEY: &str = "rttlens.schema_version";
/// Schema metadata key: the table's name ([`Table::name`]).
pub const TABLE_KEY: &str = "rttlens.table";
/// Field metadata key: the column's unit (`ms`, `bytes`, `frame`, `text`…,
/// as docs/schema.md lists them).
pub const UNIT_KEY: &str = "rttlens.unit";
/// Rows per record batch (and so per Parquet row group at most).
pub const BATCH_ROWS: usize = 8192;

/// One of the three tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// One row per connection.
    Connections,
    /// One row per finding.
    Findings,
    /// One row per HTTP request or stream.
    Requests,
}

impl Table {
    /// The three, in the order they are written.
    pub const ALL: [Table; 3] = [Table::Connections, Table::Findings, Table::Requests];

    /// Its name: `connections`, `findings`, `requests` (the Parquet file is
    /// `NAME.parquet`).
    pub fn name(self) -> &'static str {
        match self {
            Table::Connections => "connections",
            Table::Findings => "findings",
            Table::Requests => "requests",
        }
    }

    /// Its schema, with the table's name and the schema version in the
    /// metadata.
    pub fn schema(self) -> SchemaRef {
        let batch = match self {
            Table::Connections => connections::Cols::default().finish(),
            Table::Findings => findings::Cols::default().finish(),
            Table::Requests => requests::Cols::default().finish(),
        };
        schema_of(self, &batch)
    }
}

/// A table's columns: each with its name, unit and array.
#[derive(Default)]
struct Columns(Vec<(Field, ArrayRef)>);

impl Columns {
    /// Adds the column `name` in `unit`; `nullable`: it may be null.
    fn add(&mut self, name: &str, unit: &str, nullable: bool, a: ArrayRef) {
        let field = Field::new(name, a.data_type().clone(), nullable)
            .with_metadata(HashMap::from([(UNIT_KEY.to_string(), unit.to_string())]));
        self.0.push((field, a));
    }
}

/// The schema of `columns` as `table`'s.
fn schema_of(table: Table, columns: &Columns) -> SchemaRef {
    let fields: Vec<Field> = columns.0.iter().map(|(f, _)| f.clone()).collect();
    Arc::new(Schema::new(fields).with_metadata(HashMap::from([
        (TABLE_KEY.to_string(), table.name().to_string()),
        (VERSION_KEY.to_string(), SCHEMA_VERSION.to_string()),
    ])))
}

/// `columns` as a batch of `table`.
fn batch(table: Table, columns: Columns) -> Result<RecordBatch, ArrowError> {
    let schema = schema_of(table, &columns);
    RecordBatch::try_new(schema, columns.0.into_iter().map(|(_, a)| a).collect())
}

/// What every row of a connection's findings and requests repeats of it:
/// the keys to join on.
struct Key<'a> {
    /// First packet, µs since the Unix epoch.
    ts_us: i64,
    uid: String,
    community_id: &'a str,
    transport: &'static str,
    index: i64,
}

impl<'a> Key<'a> {
    fn of(c: &'a Connection) -> Key<'a> {
        Key {
            ts_us: c.first_ts().nanos.div_euclid(1000),
            uid: uid(c),
            community_id: c.community_id(),
            transport: c.transport().as_str(),
            index: facts::int(c.index()),
        }
    }
}

/// A connection's `uid`: its transport and index, `tcp-12`, `quic-0`.
/// Zeek's uid is random per connection; this one is the index the engine
/// gives (per transport, in order of first packet), so it is the same in
/// every output of one run, in the text and JSON reports, and in every
/// shard of a `--shard` run. Unique within one run over one capture (or
/// rotated set), not across a fleet: join across captures on
/// `community_id` and `ts`.
pub fn uid(c: &Connection) -> String {
    format!("{}-{}", c.transport().as_str(), c.index())
}

/// Turns connections into record batches of the three tables, a batch of
/// a table as soon as it holds `batch_rows` rows: memory holds at most a
/// batch of each, whatever the number of connections.
pub struct Batcher {
    rows: usize,
    connections: connections::Cols,
    findings: findings::Cols,
    requests: requests::Cols,
}

impl Batcher {
    /// Batches of at most `batch_rows` rows (at least 1).
    pub fn new(batch_rows: usize) -> Batcher {
        Batcher {
            rows: batch_rows.max(1),
            connections: connections::Cols::default(),
            findings: findings::Cols::default(),
            requests: requests::Cols::default(),
        }
    }

    /// Adds `c`'s rows; each batch that fills goes to `out`.
    ///
    /// # Errors
    /// Arrow refused a batch (a bug: the columns did not match).
    pub fn push(
        &mut self,
        c: &Connection,
        out: &mut dyn FnMut(Table, RecordBatch) -> Result<(), ArrowError>,
    ) -> Result<(), ArrowError> {
        let key = Key::of(c);
        self.connections.push(c, &key);
        self.findings.push(c, &key);
        self.requests.push(c, &key);
        if self.connections.len() >= self.rows {
            out(
                Table::Connections,
                batch(Table::Connections, self.connections.finish())?,
            )?;
        }
        if self.findings.len() >= self.rows {
            out(
                Table::Findings,
                batch(Table::Findings, self.findings.finish())?,
            )?;
        }
        if self.requests.len() >= self.rows {
            out(
                Table::Requests,
                batch(Table::Requests, self.requests.finish())?,
            )?;
        }
        Ok(())
    }

    /// The rows left, as a last batch of each table that has any.
    ///
    /// # Errors
    /// As [`push`](Self::push).
    pub fn finish(
        mut self,
        out: &mut dyn FnMut(Table, RecordBatch) -> Result<(), ArrowError>,
    ) -> Result<(), ArrowError> {
        if self.connections.len() > 0 {
            out(
                Table::Connections,
                batch(Table::Connections, self.connections.finish())?,
            )?;
        }
        if self.findings.len() > 0 {
            out(
                Table::Findings,
                batch(Table::Findings, self.findings.finish())?,
            )?;
        }
        if self.requests.len() > 0 {
            out(
                Table::Requests,
                batch(Table::Requests, self.requests.finish())?,
            )?;
        }
        Ok(())
    }
}

/// Every connection of `conns` as record batches of the three tables
/// (batches of [`BATCH_ROWS`]), each with its table, in the order they
/// filled: what a caller that has the connections in hand (a Spark task)
/// turns into its tables.
///
/// # Errors
/// As [`Batcher::push`].
pub fn record_batches(
    conns: impl IntoIterator<Item = Connection>,
) -> Result<Vec<(Table, RecordBatch)>, ArrowError> {
    let mut b = Batcher::new(BATCH_ROWS);
    let mut out = Vec::new();
    let mut keep = |t: Table, r: RecordBatch| {
        out.push((t, r));
        Ok(())
    };
    for c in conns {
        b.push(&c, &mut keep)?;
    }
    b.finish(&mut keep)?;
    Ok(out)
}
