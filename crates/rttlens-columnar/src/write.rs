//! The writers: three Parquet files in a directory, or the three tables as
//! Arrow IPC streams one after another on one output.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::ArrowError;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use rttlens_core::model::Connection;

use crate::{Batcher, Table, BATCH_ROWS};

fn io_err(e: impl std::error::Error + Send + Sync + 'static) -> io::Error {
    io::Error::other(e)
}

/// The three tables as Parquet files in a directory, `connections.parquet`,
/// `findings.parquet` and `requests.parquet` (Snappy-compressed, a row
/// group per [`BATCH_ROWS`] rows at most). Each is written as
/// `.NAME.parquet.partial` and renamed when complete, so a reader of the
/// directory never sees half a file. The files' key-value metadata names
/// the source (`rttlens.source`) and the tool (`rttlens.tool`) beside the
/// Arrow schema's own ([`crate::TABLE_KEY`], [`crate::VERSION_KEY`]).
pub struct ParquetTables {
    /// Each table's file and the name it is written under until complete.
    files: Vec<(PathBuf, PathBuf)>,
    writers: Vec<(Table, ArrowWriter<File>)>,
    batcher: Batcher,
    rows: [u64; 3],
}

impl ParquetTables {
    /// Creates `dir` if missing and the three files in it, for the
    /// connections of `source` (the capture's name).
    ///
    /// # Errors
    /// The directory or a file could not be created.
    pub fn create(dir: &Path, source: &str) -> io::Result<ParquetTables> {
        std::fs::create_dir_all(dir)?;
        let files = Table::ALL.map(|t| (path(dir, t), partial(dir, t)));
        ParquetTables::create_files(files, source, BATCH_ROWS)
    }

    /// The three tables in the files `files` (each table's, in
    /// [`Table::ALL`]'s order: its name and the name it is written under
    /// until complete, in the same directory), for the connections of
    /// `source`, handed to the Parquet writers in batches of `batch_rows`
    /// rows (at most [`BATCH_ROWS`]: a row group's). The directories must
    /// exist.
    ///
    /// # Errors
    /// A file could not be created.
    pub fn create_files(
        files: [(PathBuf, PathBuf); 3],
        source: &str,
        batch_rows: usize,
    ) -> io::Result<ParquetTables> {
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            // the writer holds a row group in memory until it is full: a
            // batch's worth keeps memory flat however long the capture
            .set_max_row_group_row_count(Some(BATCH_ROWS))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("rttlens.source".to_string(), source.to_string()),
                KeyValue::new(
                    "rttlens.tool".to_string(),
                    format!("rttlens {}", env!("CARGO_PKG_VERSION")),
                ),
            ]))
            .build();
        let mut writers = Vec::new();
        for (t, (_, partial)) in Table::ALL.into_iter().zip(&files) {
            let f = File::create(partial)?;
            let w = ArrowWriter::try_new(f, t.schema(), Some(props.clone())).map_err(io_err)?;
            writers.push((t, w));
        }
        Ok(ParquetTables {
            files: files.into(),
            writers,
            batcher: Batcher::new(batch_rows.min(BATCH_ROWS)),
            rows: [0; 3],
        })
    }

    /// Adds `c`'s rows.
    ///
    /// # Errors
    /// Writing failed.
    pub fn push(&mut self, c: &Connection) -> io::Result<()> {
        let (writers, rows) = (&mut self.writers, &mut self.rows);
        let mut out = |t: Table, b: RecordBatch| write(writers, rows, t, &b);
        self.batcher.push(c, &mut out).map_err(io_err)
    }

    /// The bytes written so far to the three files, and those the Parquet
    /// writers buffer for their next row groups (an estimate of their size
    /// if closed now); rows still in the last unfinished batch (fewer than
    /// `batch_rows`) are not counted.
    pub fn bytes(&self) -> u64 {
        let n: usize = self
            .writers
            .iter()
            .map(|(_, w)| w.bytes_written() + w.in_progress_size())
            .sum();
        n as u64
    }

    /// Writes the rows left, closes the files and gives them their names;
    /// the rows of each table, in [`Table::ALL`]'s order.
    ///
    /// # Errors
    /// Writing failed.
    pub fn finish(self) -> io::Result<[u64; 3]> {
        let ParquetTables {
            files,
            mut writers,
            batcher,
            mut rows,
        } = self;
        let mut out = |t: Table, b: RecordBatch| write(&mut writers, &mut rows, t, &b);
        batcher.finish(&mut out).map_err(io_err)?;
        for ((_, w), (name, partial)) in writers.into_iter().zip(files) {
            w.close().map_err(io_err)?;
            std::fs::rename(partial, name)?;
        }
        Ok(rows)
    }
}

fn write(
    writers: &mut [(Table, ArrowWriter<File>)],
    rows: &mut [u64; 3],
    t: Table,
    b: &RecordBatch,
) -> Result<(), ArrowError> {
    let i = Table::ALL.iter().position(|x| *x == t).unwrap_or(0);
    rows[i] += b.num_rows() as u64;
    match writers.iter_mut().find(|(x, _)| *x == t) {
        Some((_, w)) => w
            .write(b)
            .map_err(|e| ArrowError::ExternalError(Box::new(e))),
        None => Ok(()),
    }
}

/// The file of table `t` in `dir`.
pub fn path(dir: &Path, t: Table) -> PathBuf {
    dir.join(format!("{}.parquet", t.name()))
}

fn partial(dir: &Path, t: Table) -> PathBuf {
    dir.join(format!(".{}.parquet.partial", t.name()))
}

/// The three tables as Arrow IPC *streams* (the streaming format) written
/// one after the other on one output: `connections`, then `findings`, then
/// `requests`, each a schema message, its record batches and the
/// end-of-stream marker, its schema's metadata naming it
/// ([`crate::TABLE_KEY`]). A reader opens a stream reader three times on
/// the same input (`pyarrow.ipc.open_stream` on a file object,
/// `arrow_ipc::reader::StreamReader`), each one stopping at its end
/// marker. The connections stream out as they end; the findings and
/// requests are held (as encoded IPC, a few hundred bytes a row) until the
/// connections' stream is complete.
pub struct IpcTables<W: Write> {
    connections: StreamWriter<W>,
    findings: StreamWriter<Vec<u8>>,
    requests: StreamWriter<Vec<u8>>,
    batcher: Batcher,
}

impl<W: Write> IpcTables<W> {
    /// Starts the connections' stream on `w`.
    ///
    /// # Errors
    /// Writing the schema failed.
    pub fn new(w: W) -> io::Result<IpcTables<W>> {
        let s = |t: Table| t.schema();
        Ok(IpcTables {
            connections: StreamWriter::try_new(w, &s(Table::Connections)).map_err(io_err)?,
            findings: StreamWriter::try_new(Vec::new(), &s(Table::Findings)).map_err(io_err)?,
            requests: StreamWriter::try_new(Vec::new(), &s(Table::Requests)).map_err(io_err)?,
            batcher: Batcher::new(BATCH_ROWS),
        })
    }

    /// Adds `c`'s rows.
    ///
    /// # Errors
    /// Writing failed.
    pub fn push(&mut self, c: &Connection) -> io::Result<()> {
        let IpcTables {
            connections,
            findings,
            requests,
            batcher,
        } = self;
        let mut out = |t: Table, b: RecordBatch| match t {
            Table::Connections => connections.write(&b),
            Table::Findings => findings.write(&b),
            Table::Requests => requests.write(&b),
        };
        batcher.push(c, &mut out).map_err(io_err)
    }

    /// The output (the connections' stream so far): a caller that writes
    /// into a buffer takes the bytes out as they come.
    pub fn get_mut(&mut self) -> &mut W {
        self.connections.get_mut()
    }

    /// Ends the connections' stream, then writes the findings' and the
    /// requests'; the output back.
    ///
    /// # Errors
    /// Writing failed.
    pub fn finish(self) -> io::Result<W> {
        let IpcTables {
            mut connections,
            mut findings,
            mut requests,
            batcher,
        } = self;
        let mut out = |t: Table, b: RecordBatch| match t {
            Table::Connections => connections.write(&b),
            Table::Findings => findings.write(&b),
            Table::Requests => requests.write(&b),
        };
        batcher.finish(&mut out).map_err(io_err)?;
        connections.finish().map_err(io_err)?;
        findings.finish().map_err(io_err)?;
        requests.finish().map_err(io_err)?;
        let mut w = connections.into_inner().map_err(io_err)?;
        w.write_all(&findings.into_inner().map_err(io_err)?)?;
        w.write_all(&requests.into_inner().map_err(io_err)?)?;
        Ok(w)
    }
}
