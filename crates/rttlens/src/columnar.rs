//! `--format parquet -o DIR` and `--format arrow`: the columnar tables of
//! `rttlens-columnar` (docs/schema.md) behind the renderers' trait, so
//! `analyze` streams connections into them as into any other format.

use std::io::{self, Write};
use std::path::PathBuf;

use rttlens_columnar::{IpcTables, ParquetTables};
use rttlens_core::model::Connection;
use rttlens_core::pipeline::CaptureSummary;
use rttlens_report::{Renderer, Source};

/// The three tables as Parquet files in a directory.
pub struct ParquetRenderer {
    dir: PathBuf,
    tables: Option<ParquetTables>,
}

impl ParquetRenderer {
    /// Files in `dir` (created when missing).
    pub fn new(dir: PathBuf) -> ParquetRenderer {
        ParquetRenderer { dir, tables: None }
    }
}

impl Renderer for ParquetRenderer {
    fn begin(&mut self, _w: &mut dyn Write, source: &Source) -> io::Result<()> {
        self.tables = Some(ParquetTables::create(&self.dir, &source.name)?);
        Ok(())
    }

    fn connection(&mut self, _w: &mut dyn Write, conn: Connection) -> io::Result<()> {
        match &mut self.tables {
            Some(t) => t.push(&conn),
            None => Ok(()),
        }
    }

    fn end(&mut self, _w: &mut dyn Write, _summary: &CaptureSummary) -> io::Result<()> {
        match self.tables.take() {
            Some(t) => t.finish().map(|_| ()),
            None => Ok(()),
        }
    }
}

/// The three tables as Arrow IPC streams, one after the other, on the
/// output (standard output or `-o FILE`).
#[derive(Default)]
pub struct ArrowRenderer {
    tables: Option<IpcTables<Vec<u8>>>,
}

impl Renderer for ArrowRenderer {
    fn begin(&mut self, w: &mut dyn Write, _source: &Source) -> io::Result<()> {
        let mut t = IpcTables::new(Vec::new())?;
        w.write_all(&std::mem::take(t.get_mut()))?;
        self.tables = Some(t);
        Ok(())
    }

    fn connection(&mut self, w: &mut dyn Write, conn: Connection) -> io::Result<()> {
        let Some(t) = &mut self.tables else {
            return Ok(());
        };
        t.push(&conn)?;
        // the connections' batches as they fill
        let out = t.get_mut();
        if !out.is_empty() {
            w.write_all(out)?;
            out.clear();
        }
        Ok(())
    }

    fn end(&mut self, w: &mut dyn Write, _summary: &CaptureSummary) -> io::Result<()> {
        match self.tables.take() {
            Some(t) => w.write_all(&t.finish()?),
            None => Ok(()),
        }
    }
}
