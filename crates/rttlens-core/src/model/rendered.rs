//! A connection's output written ahead, on the thread that made its report.
//!
//! The parallel pipeline makes each report on a flow thread, but hands the
//! reports on from the merging thread, in the serial run's order, once it
//! knows each connection's serial index. A renderer whose output is one
//! record per connection (JSON, JSON Lines) may write it on the flow thread
//! instead ([`Options::prerender`](crate::pipeline::Options::prerender)):
//! the merging thread then only copies the bytes, with the serial index put
//! where the flow thread wrote its own. Rendering was the merging thread's
//! largest cost, and with two threads the merging thread is what the others
//! wait for (bench/README.md "issue 41, fourth session").

use serde::Serialize as _;

use super::ConnReport;

/// Writes a report's output ahead ([`Rendered`]), on the thread that made
/// the report.
/// `None` when it cannot: the merging thread renders the report then (and
/// says why).
pub type Prerender = fn(&ConnReport) -> Option<Rendered>;

/// The name a serializer sees for a connection's index
/// (`serialize_newtype_struct`): a serializer that writes the output ahead
/// notes where each one starts ([`Rendered::marks`]); any other writes the
/// number as it is, as serde_json does.
pub const CONN_INDEX: &str = "rttlens::ConnIndex";

/// A connection's index, serialized as the newtype [`CONN_INDEX`].
#[derive(Debug, Clone, Copy)]
pub struct ConnIndex(pub u64);

impl serde::Serialize for ConnIndex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(CONN_INDEX, &self.0)
    }
}

/// `#[serde(serialize_with)]` for a connection's index field.
pub(crate) fn conn_index<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    ConnIndex(*v).serialize(s)
}

/// A report's output, written ahead.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// The output, with [`Rendered::index`] written at each mark.
    pub bytes: Vec<u8>,
    /// Where each decimal [`Rendered::index`] starts in `bytes`, in order.
    pub marks: Vec<usize>,
    /// The connection's index when the output was written (the flow
    /// thread's own, before the merging thread gives the serial one).
    pub index: u64,
}

impl Rendered {
    /// Appends the output to `out` with `index` in place of the index it
    /// was written with.
    pub fn write_into(&self, out: &mut Vec<u8>, index: u64) {
        let mut old = itoa::Buffer::new();
        let old = old.format(self.index).len();
        let mut new = itoa::Buffer::new();
        let new = new.format(index).as_bytes();
        let mut from = 0;
        for &at in &self.marks {
            out.extend_from_slice(&self.bytes[from..at]);
            out.extend_from_slice(new);
            from = at + old;
        }
        out.extend_from_slice(&self.bytes[from..]);
    }
}

#[cfg(test)]
mod tests {
    use super::Rendered;

    #[test]
    fn the_index_is_put_in_at_each_mark_whatever_its_length() {
        let r = Rendered {
            bytes: br#"{"index":7,"findings":[{"connection":7},{"connection":7}],"n":77}"#.to_vec(),
            marks: vec![9, 37, 54],
            index: 7,
        };
        let mut out = b"x".to_vec();
        r.write_into(&mut out, 12345);
        assert_eq!(
            out,
            br#"x{"index":12345,"findings":[{"connection":12345},{"connection":12345}],"n":77}"#
        );
        let mut same = Vec::new();
        r.write_into(&mut same, 7);
        assert_eq!(same, r.bytes);
        let none = Rendered {
            bytes: b"{}".to_vec(),
            marks: vec![],
            index: 3,
        };
        let mut out = Vec::new();
        none.write_into(&mut out, 40);
        assert_eq!(out, b"{}");
    }
}
