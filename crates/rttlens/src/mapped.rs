//! Capture files opened for `analyze`: a regular, uncompressed file is
//! mapped (`rttlens_sys::MappedFile`) and read in place, without copying
//! it from the kernel into a buffer; stdin, FIFOs, devices, gzip'd files
//! and `RTTLENS_NO_MMAP=1` keep the stream (`read(2)`) path. Both give the
//! same frames, notes and errors (`CaptureReader::from_bytes`).
//!
//! A mapped file that another process truncates while it is read ends
//! rttlens with `SIGBUS` (see `MappedFile`, docs/design.md §3 "Reading
//! captures").

use std::fs::File;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use rttlens_core::capture::{CaptureBytes, CaptureError, CaptureReader};
use rttlens_sys::MappedFile;

/// The environment variable that turns mapping off (any value but `0`).
pub const NO_MMAP: &str = "RTTLENS_NO_MMAP";

/// A mapped capture, as the engine's byte source.
struct Mapped(MappedFile);

impl CaptureBytes for Mapped {
    fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }
    fn release_before(&self, offset: usize) {
        self.0.release_before(offset);
    }
    fn prefetch(&self, offset: usize) {
        self.0.prefetch(offset);
    }
}

/// Whether `RTTLENS_NO_MMAP` asks for the stream path.
fn mapping_off() -> bool {
    std::env::var_os(NO_MMAP).is_some_and(|v| v != "0")
}

/// Opens the capture at `path` (`-`: standard input), mapped when it is a
/// regular file that is not gzip'd; the set's opener too
/// (`CaptureSet::with_opener`).
///
/// # Errors
/// Those of [`CaptureReader::open`].
pub fn open(path: &Path) -> Result<CaptureReader, CaptureError> {
    // a FIFO or stdin may never give a byte: say so rather than hang
    // silently (opening a FIFO waits for a writer, reading it for data)
    let _watch = may_wait(path).then(|| Waiting::watch(path));
    if path.as_os_str() == "-" || mapping_off() {
        return CaptureReader::open(path);
    }
    // opened once: a FIFO is read from this descriptor, never reopened
    let file = File::open(path)?;
    match MappedFile::map(&file) {
        Ok(Some(map)) if !map.bytes().starts_with(&[0x1f, 0x8b]) => {
            CaptureReader::from_bytes(Arc::new(Mapped(map)))
        }
        // not a regular file, empty, gzip'd, or a file system that cannot
        // map: read it (the descriptor is still at its start)
        _ => CaptureReader::new(Box::new(file)),
    }
}

/// How long a FIFO or standard input may give nothing before rttlens says
/// it is waiting.
pub const WAIT_NOTICE: Duration = Duration::from_secs(5);

/// Whether opening and reading `path` may wait for another process:
/// standard input, or a FIFO.
fn may_wait(path: &Path) -> bool {
    path.as_os_str() == "-" || std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// While alive, a thread that prints one line on stderr if the capture's
/// header has not arrived within [`WAIT_NOTICE`]; rttlens keeps waiting
/// (Ctrl-C stops it). Dropped once the header is read, or reading failed.
struct Waiting {
    /// Dropped with the guard: the thread's wait ends without a word.
    _done: mpsc::Sender<()>,
}

impl Waiting {
    fn watch(path: &Path) -> Waiting {
        let (tx, rx) = mpsc::channel::<()>();
        let name = if path.as_os_str() == "-" {
            "standard input".to_string()
        } else {
            path.display().to_string()
        };
        std::thread::spawn(move || {
            // disconnected (the header came, or an error): nothing to say
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(WAIT_NOTICE) {
                eprintln!(
                    "rttlens: waiting for {name}: no data after {} s (is anything writing to it?); \
                     Ctrl-C stops",
                    WAIT_NOTICE.as_secs()
                );
            }
        });
        Waiting { _done: tx }
    }
}
