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
use std::path::Path;
use std::sync::Arc;

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
