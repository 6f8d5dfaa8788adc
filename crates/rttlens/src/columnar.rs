//! `--format parquet -o DIR` (with `--rotate`: a series of files) and
//! `--format arrow`: the columnar tables of `rttlens-columnar`
//! (docs/schema.md) behind the renderers' trait, so `analyze` streams
//! connections into them as into any other format.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use rttlens_columnar::{IpcTables, ParquetTables, Rotate, RotatingParquet};
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

/// `--format parquet -o DIR --rotate PERIOD|SIZE`: the tables as a series
/// of closed files ([`RotatingParquet`]). With a period, a thread closes
/// the files at each period's end, so they close on time on a quiet link
/// too (the pipeline only calls the renderer when a connection ends).
pub struct RotatingRenderer {
    dir: PathBuf,
    rotate: Rotate,
    /// The files, shared with the period's thread; the first error of
    /// either.
    shared: Arc<Mutex<(Option<RotatingParquet>, Option<io::Error>)>>,
    timer: Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl RotatingRenderer {
    /// Files in `dir`'s table directories (created when missing), rotated
    /// by `rotate`.
    pub fn new(dir: PathBuf, rotate: Rotate) -> RotatingRenderer {
        RotatingRenderer {
            dir,
            rotate,
            shared: Arc::new(Mutex::new((None, None))),
            timer: None,
        }
    }

    fn lock(&self) -> MutexGuard<'_, (Option<RotatingParquet>, Option<io::Error>)> {
        // a panic elsewhere leaves the files as they were: keep writing
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Renderer for RotatingRenderer {
    fn begin(&mut self, _w: &mut dyn Write, source: &Source) -> io::Result<()> {
        let now = SystemTime::now();
        let files = RotatingParquet::create(&self.dir, &source.name, self.rotate, now)?;
        self.lock().0 = Some(files);
        let Some(mut end) = self.rotate.period_end(now) else {
            return Ok(());
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let shared = Arc::clone(&self.shared);
        let rotate = self.rotate;
        let timer = std::thread::spawn(move || loop {
            let wait = end
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO);
            match stopped.recv_timeout(wait) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
            let (files, err) = &mut *s;
            if let Some(f) = files.as_mut() {
                if let Err(e) = f.rotate(end) {
                    err.get_or_insert(e);
                }
            }
            end = rotate.period_end(end).unwrap_or(end);
        });
        self.timer = Some((stop, timer));
        Ok(())
    }

    fn connection(&mut self, _w: &mut dyn Write, conn: Connection) -> io::Result<()> {
        let mut s = self.lock();
        let (files, err) = &mut *s;
        if let Some(e) = err.take() {
            return Err(e);
        }
        match files.as_mut() {
            Some(f) => f.push(&conn),
            None => Ok(()),
        }
    }

    fn end(&mut self, _w: &mut dyn Write, _summary: &CaptureSummary) -> io::Result<()> {
        if let Some((stop, timer)) = self.timer.take() {
            drop(stop);
            let _ = timer.join();
        }
        let (files, err) = {
            let mut s = self.lock();
            (s.0.take(), s.1.take())
        };
        if let Some(e) = err {
            return Err(e);
        }
        match files {
            Some(f) => f.finish().map(|_| ()),
            None => Ok(()),
        }
    }
}
