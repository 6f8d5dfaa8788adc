//! Protocols above TCP, placed by stream offset: TLS records and handshake
//! ([`tls`], without keys) and HTTP/1.1 messages over cleartext TCP ([`http`]).
//!
//! # Input model
//!
//! One tracker per TCP connection ([`tls::TlsTracker`], [`http::HttpTracker`]).
//! The flow layer feeds it each direction's payload byte stream **in order**:
//!
//! - `push(side, offset, data, at)`: `side` is the *sender* of the bytes,
//!   `offset` the stream offset of `data[0]` in bytes (0 = the first payload
//!   byte after the SYN, i.e. relative sequence number − 1), and `at` the
//!   [`FrameRef`](crate::base::side::FrameRef) (frame number and timestamp) of the segment
//!   that delivered the bytes. For a retransmission that fills a hole, `at` is
//!   the retransmission's frame.
//! - `gap(side, offset, len)`: `len` bytes at `offset` that the capture never
//!   saw (capture drop). After a gap nothing is known of those bytes.
//!
//! Bytes at offsets already passed are ignored (overlap); data that starts
//! beyond the next expected offset is treated as a gap up to its start;
//! offsets at or beyond 2^62 are ignored (no TCP stream is that long). The two
//! directions are independent streams, but feeding them in capture order (as
//! the frames come) lets the HTTP tracker pair a response with its request's
//! method (HEAD) and lets the TLS classifier order the directions by frame
//! number.
//!
//! # Bounded memory
//!
//! A tracker's memory does not grow with the length of the stream: only what
//! must be parsed is buffered (a TLS handshake message of interest, an HTTP
//! header block, a chunk-size line), each capped at [`PARSE_BUFFER_CAP`] bytes;
//! record payloads and message bodies are walked by their lengths and never
//! copied. Per-item detail is kept for the first few items (records, messages,
//! exchanges) and running aggregates for all of them.
//!
//! # Bad input
//!
//! Nothing here panics or returns errors on input. What does not parse is a
//! [`Note`] (counted, with its stream offset) and the tracker stops parsing
//! that direction when it cannot know where the next item starts.

pub mod h2;
pub mod h3;
pub mod http;
pub mod protocols;
mod stream;
pub mod tls;

/// Largest item (a TLS handshake message that needs parsing, an HTTP header
/// block, a chunk-size line or trailer section) buffered for parsing, in
/// bytes. Beyond it the item is noted as [`NoteKind::TooLarge`] and skipped
/// (TLS, where its length is known) or parsing of the direction stops (HTTP).
pub const PARSE_BUFFER_CAP: usize = 64 * 1024;

/// Something a tracker noticed in one direction's byte stream that is not a
/// protocol event: malformed bytes, lost framing, an item too large to parse.
///
/// A note is input to the diagnosis (capture quality, odd peers), not a
/// failure: the rest of the connection's analysis goes on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Note {
    /// Stream offset (bytes from the first payload byte after the SYN) of the
    /// item the note is about.
    pub(crate) offset: u64,
    /// What happened (serialized inline: `{"offset": 5, "kind":
    /// "malformed", "what": "…"}`).
    #[serde(flatten)]
    pub kind: NoteKind,
}

/// What a [`Note`] reports.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
#[non_exhaustive]
pub enum NoteKind {
    /// The bytes break the protocol's syntax (bad TLS content type or record
    /// length, a request line httparse rejects, …). Parsing of this direction
    /// stopped at `offset`.
    Malformed {
        /// What was wrong, e.g. `"record length above 2^14 + 2048"`.
        what: &'static str,
    },
    /// The capture missed bytes where framing was (a TLS record header, a
    /// handshake message header, an HTTP header block or chunk-size line):
    /// where the next item starts is unknown, so parsing of `layer` stopped.
    LostSync {
        /// `"record"`, `"handshake"` or `"http"`.
        layer: &'static str,
    },
    /// Bytes inside an item whose length is known were missing from the
    /// capture; the item's content is unknown but framing is kept.
    Gap {
        /// Missing bytes.
        len: u64,
    },
    /// An item larger than [`PARSE_BUFFER_CAP`]; its content was not parsed.
    TooLarge {
        /// Which item, e.g. `"ClientHello"` or `"HTTP header block"`.
        what: &'static str,
        /// Its length in bytes (as announced, or as seen so far).
        len: u64,
    },
    /// An item framed correctly whose content did not parse (e.g. a
    /// ClientHello tls-parser rejects); framing is kept.
    Unparsed {
        /// Which item.
        what: &'static str,
    },
    /// The connection switched to another protocol (HTTP `101 Switching
    /// Protocols`, a `2xx` answer to `CONNECT`); parsing stopped.
    Upgraded,
}

/// The first [`Notes::CAP`] notes of one direction, plus a count of the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Notes {
    items: Vec<Note>,
    dropped: u64,
}

impl Notes {
    /// How many notes are kept per direction; later ones are only counted.
    pub const CAP: usize = 16;

    /// The notes kept, in stream order.
    pub fn items(&self) -> &[Note] {
        &self.items
    }

    /// Notes not kept because [`Notes::CAP`] was reached.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Records a note (or only counts it once the cap is reached).
    pub(crate) fn push(&mut self, offset: u64, kind: NoteKind) {
        if self.items.len() < Self::CAP {
            self.items.push(Note { offset, kind });
        } else {
            self.dropped += 1;
        }
    }
}

/// `bytes` as a lossy UTF-8 string of at most `max_chars` characters.
pub(crate) fn lossy_truncated(bytes: &[u8], max_chars: usize) -> String {
    // A char is at most 4 bytes: no need to decode more than that.
    let head = &bytes[..bytes.len().min(max_chars.saturating_mul(4))];
    String::from_utf8_lossy(head)
        .chars()
        .take(max_chars)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_cap_and_json_shape() {
        let mut n = Notes::default();
        for i in 0..20 {
            n.push(i, NoteKind::Gap { len: 1 });
        }
        assert_eq!((n.items().len(), n.dropped()), (Notes::CAP, 4));
        let note = Note {
            offset: 5,
            kind: NoteKind::Malformed { what: "x" },
        };
        assert_eq!(
            serde_json::to_string(&note).unwrap(),
            r#"{"offset":5,"kind":"malformed","what":"x"}"#
        );
        let up = Note {
            offset: 0,
            kind: NoteKind::Upgraded,
        };
        assert_eq!(
            serde_json::to_string(&up).unwrap(),
            r#"{"offset":0,"kind":"upgraded"}"#
        );
        assert_eq!(lossy_truncated("héllo".as_bytes(), 2), "hé");
    }
}
