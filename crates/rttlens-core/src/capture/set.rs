//! [`CaptureSet`]: several captures read as one, merged in time order.
//!
//! A rotated set (`tcpdump -C`, `-W`, `-G`) is a series of files each
//! starting where the last one ended; captures taken at once on several
//! interfaces or hosts overlap. Both are merged the way `mergecap` merges
//! by default: frame by frame, earliest timestamp first (a tie goes to the
//! file that started first, then to the one named first). Frames are
//! numbered 1, 2, … in that merged order, the numbers Wireshark shows for
//! the file `mergecap -w merged.pcapng FILES` writes.
//!
//! Memory stays that of the files open at once: each file is opened when
//! the merge reaches its first timestamp and closed at its end, so a rotated
//! set of any length has one or two files open. Files are opened by
//! [`CaptureReader::open`], or by the caller's opener
//! ([`CaptureSet::with_opener`]: the `rttlens` binary maps them).

use std::path::{Path, PathBuf};

use super::keylog::KeyStore;
use super::{CaptureError, CaptureNotes, CaptureReader, Frame, FrameSource, SharedFrame};
use crate::base::time::Timestamp;

/// Opens one file of a set (see [`CaptureSet::with_opener`]).
pub type Opener = fn(&Path) -> Result<CaptureReader, CaptureError>;

/// One file of the set.
struct Member {
    path: PathBuf,
    /// The first frame's timestamp (read when the file was added).
    first_ts: Timestamp,
    reader: Option<CaptureReader>,
    /// Read to its end (or to a break).
    done: bool,
}

/// Several capture files read as one stream of frames in time order.
///
/// ```no_run
/// # fn main() -> Result<(), rttlens_core::capture::CaptureError> {
/// use rttlens_core::capture::{CaptureSet, FrameSource};
/// let mut set = CaptureSet::default();
/// for p in ["dump.pcap0", "dump.pcap1", "dump.pcap2"] {
///     set.add(std::path::Path::new(p))?;
/// }
/// while let Some(frame) = set.next_frame()? {
///     println!("{} {:?}", frame.number, frame.ts);
/// }
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct CaptureSet {
    /// Sorted by first timestamp, then by the order they were added.
    members: Vec<Member>,
    /// Members before this one have been opened.
    next_closed: usize,
    /// The members open now.
    open: Vec<usize>,
    number: u64,
    /// Bytes and notes of the members already closed.
    closed_bytes: u64,
    closed_notes: CaptureNotes,
    formats: Vec<String>,
    gzip: bool,
    /// Files that broke off after their first frame, with the reason.
    breaks: Vec<String>,
    /// The TLS secrets of every member's Decryption Secrets Blocks.
    keys: KeyStore,
    /// Opens a member (`None`: [`CaptureReader::open`]).
    opener: Option<Opener>,
}

impl CaptureSet {
    /// An empty set whose files `open` opens, each time the set opens one
    /// (when it is added, and again when the merge reaches it), instead of
    /// [`CaptureReader::open`]: e.g. mapped and read in place
    /// ([`CaptureReader::from_bytes`]).
    pub fn with_opener(open: Opener) -> CaptureSet {
        CaptureSet {
            opener: Some(open),
            ..CaptureSet::default()
        }
    }

    fn open(&self, path: &Path) -> Result<CaptureReader, CaptureError> {
        self.opener.unwrap_or(CaptureReader::open)(path)
    }

    /// Adds the capture at `path`: it is opened, its first frame's
    /// timestamp read, and closed again until the merge reaches it. A file
    /// without a single frame adds nothing.
    ///
    /// # Errors
    ///
    /// Those of [`CaptureReader::open`] (or of the opener), or of reading
    /// the first frame (a file that cannot give one frame is not a usable
    /// capture).
    /// Standard input (`-`) cannot be part of a set.
    pub fn add(&mut self, path: &Path) -> Result<(), CaptureError> {
        if path.as_os_str() == "-" {
            return Err(CaptureError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "standard input (-) can only be read alone, not with other files",
            )));
        }
        let mut reader = self.open(path)?;
        let name = reader.format().to_string();
        if !self.formats.contains(&name) {
            self.formats.push(name);
        }
        self.gzip |= reader.is_gzip();
        let Some(first_ts) = reader.peek_ts()? else {
            self.closed_bytes += reader.bytes_read();
            return Ok(());
        };
        // opened again when the merge reaches it: memory is that of the
        // files open at once, not of the whole set
        drop(reader);
        let m = Member {
            path: path.to_path_buf(),
            first_ts,
            reader: None,
            done: false,
        };
        // stable: files starting at the same time keep the order given
        let at = self.members.partition_point(|x| x.first_ts <= first_ts);
        self.members.insert(at, m);
        Ok(())
    }

    /// Closes member `i` after its end or a break.
    fn close(&mut self, i: usize, err: Option<CaptureError>) {
        let Some(m) = self.members.get_mut(i) else {
            return;
        };
        if let Some(r) = m.reader.take() {
            self.closed_bytes += r.bytes_read();
            self.closed_notes.add(&r.notes());
        }
        m.done = true;
        self.open.retain(|&j| j != i);
        if let Some(e) = err {
            self.breaks.push(format!("{}: {e}", m.path.display()));
        }
    }

    /// The head timestamp of open member `i`, closing it at its end.
    fn head(&mut self, i: usize) -> Option<Timestamp> {
        let m = self.members.get_mut(i)?;
        if m.done {
            return None;
        }
        let r = m.reader.as_mut()?;
        match r.peek_ts() {
            Ok(Some(ts)) => Some(ts),
            Ok(None) => {
                self.close(i, None);
                None
            }
            Err(e) => {
                self.close(i, Some(e));
                None
            }
        }
    }

    /// The open member with the earliest head, opening members whose first
    /// frame comes before it.
    fn earliest(&mut self) -> Option<usize> {
        loop {
            let mut best: Option<(Timestamp, usize)> = None;
            let mut k = 0;
            while let Some(&i) = self.open.get(k) {
                // `head` closes a member at its end (removing it from `open`)
                if let Some(ts) = self.head(i) {
                    if best.is_none_or(|b| (ts, i) < b) {
                        best = Some((ts, i));
                    }
                    k += 1;
                }
            }
            let Some(next) = self.members.get(self.next_closed) else {
                return best.map(|(_, i)| i);
            };
            if best.is_some_and(|(b, _)| b < next.first_ts) {
                return best.map(|(_, i)| i);
            }
            // the next file starts before (or with) every open one: open it
            let i = self.next_closed;
            self.next_closed += 1;
            match self.open(&self.members[i].path) {
                Ok(mut r) => {
                    r.share_key_store(&self.keys);
                    self.members[i].reader = Some(r);
                    self.open.push(i);
                }
                Err(e) => self.close(i, Some(e)),
            }
        }
    }
}

impl FrameSource for CaptureSet {
    /// The earliest frame of all files. A file that breaks off after its
    /// first frame is noted ([`FrameSource::breaks`]) and the others go on.
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        Ok(self.next_shared()?.map(|(f, _)| f))
    }

    fn bytes_read(&self) -> u64 {
        let open: u64 = self
            .members
            .iter()
            .filter_map(|m| m.reader.as_ref())
            .map(CaptureReader::bytes_read)
            .sum();
        self.closed_bytes + open
    }

    fn notes(&self) -> CaptureNotes {
        let mut n = self.closed_notes;
        for r in self.members.iter().filter_map(|m| m.reader.as_ref()) {
            n.add(&r.notes());
        }
        n
    }

    fn key_store(&self) -> KeyStore {
        self.keys.clone()
    }

    fn format_name(&self) -> String {
        let mut s = self.formats.join(", ");
        if self.gzip {
            s.push_str(" (gzip)");
        }
        s
    }

    fn next_shared(
        &mut self,
    ) -> Result<Option<(Frame<'_>, Option<SharedFrame<'_>>)>, CaptureError> {
        let Some(i) = self.earliest() else {
            return Ok(None);
        };
        self.number += 1;
        let number = self.number;
        let r = self.members[i].reader.as_mut();
        match r.map(CaptureReader::next_shared) {
            Some(Ok(Some((f, s)))) => Ok(Some((Frame { number, ..f }, Some(s)))),
            // `earliest` peeked a frame there: not reached
            _ => Ok(None),
        }
    }

    fn breaks(&self) -> Vec<String> {
        self.breaks.clone()
    }
}
