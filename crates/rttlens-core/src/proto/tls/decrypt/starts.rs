//! Where the server's decrypted records began on the wire.
//!
//! The protocol inside TLS is fed each record's plaintext with the segment
//! that completed the record: the moment the client could read it. The
//! server wrote it earlier, when the record's first byte left: a 16 KiB
//! record that needs a second round of the congestion window completes an
//! RTT after the server answered. A response's think time ends where the
//! server answered ([`RecordStarts::sent`]), not where the client could
//! read.

use crate::base::side::FrameRef;

/// Completions kept; past them a response is timed from its record's
/// completion, as without this table.
const CAP: usize = 4096;

/// Per segment that completed server application records, the segment
/// that carried the first byte of the last of them, in capture order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RecordStarts {
    spans: Vec<(u64, FrameRef)>,
}

impl RecordStarts {
    /// A server application record began at `first` and completed at
    /// `complete`. Of records completed by one segment the last one is
    /// kept: it began at or after the others, so a response it holds is
    /// never timed earlier than the server answered.
    pub(crate) fn push(&mut self, complete: FrameRef, first: FrameRef) {
        let full = self.spans.len() >= CAP;
        match self.spans.last_mut() {
            Some((f, s)) if *f == complete.frame => *s = first,
            // out of capture order: left out (the completion is used)
            Some((f, _)) if *f > complete.frame => {}
            _ if !full => self.spans.push((complete.frame, first)),
            _ => {}
        }
    }

    /// When the server sent what the client could read at `at` (a
    /// segment that completed records): the first segment of the last
    /// record it completed; `at` itself when unknown.
    pub(crate) fn sent(&self, at: FrameRef) -> FrameRef {
        self.spans
            .binary_search_by_key(&at.frame, |(f, _)| *f)
            .ok()
            .map(|i| self.spans[i].1)
            .filter(|s| s.ts <= at.ts)
            .unwrap_or(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::Timestamp;

    fn at(frame: u64, ms: i64) -> FrameRef {
        FrameRef {
            frame,
            ts: Timestamp::from_nanos(ms * 1_000_000),
        }
    }

    #[test]
    fn a_record_is_sent_at_its_first_segment() {
        let mut s = RecordStarts::default();
        s.push(at(27, 111), at(11, 71));
        // a later record completed by the same segment began after
        s.push(at(27, 111), at(27, 111));
        s.push(at(30, 112), at(27, 111));
        assert_eq!(s.sent(at(27, 111)), at(27, 111));
        assert_eq!(s.sent(at(30, 112)), at(27, 111));
        // unknown segment: itself
        assert_eq!(s.sent(at(5, 1)), at(5, 1));
        let mut s = RecordStarts::default();
        s.push(at(27, 111), at(11, 71));
        assert_eq!(s.sent(at(27, 111)), at(11, 71));
    }
}
