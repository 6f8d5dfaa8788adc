//! Stream plumbing shared by the TLS and HTTP trackers: admitting in-order
//! bytes by offset ([`InOrder`]) and walking `[fixed header | body]` items by
//! their announced length ([`Framer`]).

/// Stream offsets at and beyond this are ignored (2^62 bytes is no TCP
/// stream), so that offset arithmetic in the trackers cannot overflow.
pub(crate) const OFFSET_LIMIT: u64 = 1 << 62;

/// The next expected stream offset of one direction.
///
/// The flow layer delivers bytes in order, but a tracker must not trust that
/// blindly: bytes before `next` were already seen (overlap, trimmed), bytes
/// that start beyond it leave a hole (treated as a gap), and nothing at or
/// beyond [`OFFSET_LIMIT`] is admitted.
#[derive(Debug, Clone, Default)]
pub(crate) struct InOrder {
    next: u64,
}

impl InOrder {
    /// Admits `data` delivered at `offset`. Returns the bytes missing before
    /// it (a hole, 0 when contiguous) and its new part, or `None` when nothing
    /// in it is new.
    pub(crate) fn admit<'a>(&mut self, offset: u64, data: &'a [u8]) -> Option<(u64, &'a [u8])> {
        let room = usize::try_from(OFFSET_LIMIT.checked_sub(offset)?).unwrap_or(usize::MAX);
        let data = &data[..data.len().min(room)];
        let end = offset + data.len() as u64;
        if end <= self.next {
            return None;
        }
        let (hole, fresh) = if offset >= self.next {
            (offset - self.next, data)
        } else {
            // `end > next > offset`, so the skip is shorter than `data`.
            let skip = usize::try_from(self.next - offset).unwrap_or(data.len());
            (0, data.get(skip..).unwrap_or_default())
        };
        self.next = end;
        Some((hole, fresh))
    }

    /// Admits a gap of `len` bytes at `offset`. Returns how many bytes past
    /// [`InOrder::next`] are now known to be missing (0 if none).
    pub(crate) fn admit_gap(&mut self, offset: u64, len: u64) -> u64 {
        if offset >= OFFSET_LIMIT {
            return 0;
        }
        let end = offset.saturating_add(len).min(OFFSET_LIMIT);
        if end <= self.next {
            return 0;
        }
        let missing = end - self.next;
        self.next = end;
        missing
    }
}

/// Walks a stream of items made of a fixed-size header of `H` bytes that
/// announces the length of the body that follows: TLS records (`H = 5`,
/// RFC 8446 §5.1) and TLS handshake messages (`H = 4`, RFC 8446 §4).
///
/// The caller alternates [`Framer::take_header`] (which returns the header
/// once all `H` bytes have arrived, however they were split) and
/// [`Framer::begin_body`] with the length it read from it, then
/// [`Framer::take_body`] / [`Framer::skip_body`] until [`Framer::body_left`]
/// is 0, then [`Framer::end_item`]. Bodies are never copied.
#[derive(Debug, Clone)]
pub(crate) struct Framer<const H: usize> {
    hdr: [u8; H],
    have: usize,
    in_body: bool,
    body_left: u64,
}

impl<const H: usize> Default for Framer<H> {
    fn default() -> Self {
        Framer {
            hdr: [0; H],
            have: 0,
            in_body: false,
            body_left: 0,
        }
    }
}

impl<const H: usize> Framer<H> {
    /// `true` between items: no header byte of the next item seen yet.
    pub(crate) fn at_boundary(&self) -> bool {
        !self.in_body && self.have == 0
    }

    /// `true` while inside an item's body.
    pub(crate) fn in_body(&self) -> bool {
        self.in_body
    }

    /// Body bytes still to come for the current item.
    pub(crate) fn body_left(&self) -> u64 {
        self.body_left
    }

    /// Moves header bytes from the front of `data` into the header; returns
    /// the complete header once its last byte has arrived.
    pub(crate) fn take_header(&mut self, data: &mut &[u8]) -> Option<[u8; H]> {
        let want = H - self.have;
        let n = want.min(data.len());
        let (head, rest) = data.split_at(n);
        self.hdr[self.have..self.have + n].copy_from_slice(head);
        self.have += n;
        *data = rest;
        (self.have == H).then_some(self.hdr)
    }

    /// Starts the body of the item whose header just completed.
    pub(crate) fn begin_body(&mut self, len: u64) {
        self.in_body = true;
        self.body_left = len;
    }

    /// Takes the next body bytes from the front of `data` (at most
    /// [`Framer::body_left`]).
    pub(crate) fn take_body<'a>(&mut self, data: &mut &'a [u8]) -> &'a [u8] {
        let n = usize::try_from(self.body_left)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let (body, rest) = data.split_at(n);
        self.body_left -= n as u64;
        *data = rest;
        body
    }

    /// Skips `len` missing body bytes. `false` (and no change) if `len`
    /// reaches past the end of the body or no body is in progress: framing is
    /// lost then.
    pub(crate) fn skip_body(&mut self, len: u64) -> bool {
        if !self.in_body || len > self.body_left {
            return false;
        }
        self.body_left -= len;
        true
    }

    /// Ends the current item (its body is complete); the next byte starts a
    /// header.
    pub(crate) fn end_item(&mut self) {
        self.have = 0;
        self.in_body = false;
        self.body_left = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_trims_overlap_and_reports_holes() {
        let mut s = InOrder::default();
        assert_eq!(s.admit(0, b"abc"), Some((0, &b"abc"[..])));
        assert_eq!(s.admit(1, b"bcde"), Some((0, &b"de"[..])));
        assert_eq!(s.admit(0, b"ab"), None);
        assert_eq!(s.admit(7, b"hi"), Some((2, &b"hi"[..])));
        assert_eq!(s.admit_gap(5, 3), 0);
        assert_eq!(s.admit_gap(8, 4), 3);
        assert_eq!(s.next, 12);
        assert_eq!(s.admit(12, b""), None);
        assert_eq!(s.admit(u64::MAX - 1, b"xyz"), None);
        assert_eq!(
            s.admit(OFFSET_LIMIT - 2, b"xyz"),
            Some((OFFSET_LIMIT - 14, &b"xy"[..]))
        );
        assert_eq!(s.admit_gap(OFFSET_LIMIT, u64::MAX), 0);
    }

    #[test]
    fn framer_walks_split_headers_and_bodies() {
        let mut f = Framer::<2>::default();
        let mut d: &[u8] = &[7];
        assert_eq!(f.take_header(&mut d), None);
        assert!(!f.at_boundary());
        let mut d: &[u8] = &[3, b'a', b'b'];
        assert_eq!(f.take_header(&mut d), Some([7, 3]));
        f.begin_body(3);
        assert_eq!(f.take_body(&mut d), b"ab");
        assert!(d.is_empty());
        assert!(!f.skip_body(2));
        assert!(f.skip_body(1));
        assert_eq!(f.body_left(), 0);
        f.end_item();
        assert!(f.at_boundary());
    }
}
