//! One direction of one QUIC stream reassembled for the HTTP/3 tracker
//! (the parent module): pieces ahead of the next byte are held, up to
//! [`REASSEMBLY_CAP`](super::REASSEMBLY_CAP) per stream and a budget per
//! connection; a final size that moves is an error (RFC 9000 §4.5).

use std::collections::BTreeMap;

use super::REASSEMBLY_CAP;

/// One direction of one stream, reassembled: bytes at `next` and beyond
/// are not delivered yet; pieces ahead of `next` are held.
#[derive(Debug, Default)]
pub(super) struct Reasm {
    pub(super) next: u64,
    pub(super) held: BTreeMap<u64, Vec<u8>>,
    pub(super) held_bytes: usize,
    /// Final size, once a FIN was seen (RFC 9000 §4.5).
    pub(super) fin: Option<u64>,
}

/// Bytes the reassembler made available in order: `direct` at `offset`,
/// then the `drained` held pieces, contiguous.
pub(super) struct Admitted<'a> {
    pub(super) offset: u64,
    pub(super) direct: &'a [u8],
    pub(super) drained: Vec<Vec<u8>>,
}

/// The reassembler cannot follow the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ReasmError {
    /// More out-of-order bytes than the caps allow.
    Overflow,
    /// Two FINs with different final sizes, or data beyond the final size
    /// (RFC 9000 §4.5: FINAL_SIZE_ERROR).
    FinalSize,
}

impl Reasm {
    /// Admits `data` at `offset`, `fin` marking its end as the final
    /// size. `budget` is what the connection may still hold.
    pub(super) fn admit<'a>(
        &mut self,
        offset: u64,
        data: &'a [u8],
        fin: bool,
        budget: usize,
    ) -> Result<Admitted<'a>, ReasmError> {
        let nothing = Admitted {
            offset: self.next,
            direct: &[],
            drained: Vec::new(),
        };
        let Some(end) = offset
            .checked_add(data.len() as u64)
            .filter(|e| *e < 1 << 62)
        else {
            return Ok(nothing);
        };
        if fin {
            match self.fin {
                None if end >= self.next && self.held_end() <= end => self.fin = Some(end),
                Some(f) if f == end => {}
                _ => return Err(ReasmError::FinalSize),
            }
        }
        if self.fin.is_some_and(|f| end > f) {
            return Err(ReasmError::FinalSize);
        }
        if end <= self.next {
            return Ok(nothing);
        }
        if offset > self.next {
            if data.is_empty() {
                return Ok(nothing);
            }
            let old = self.held.get(&offset).map_or(0, Vec::len);
            if data.len() > old {
                let grow = data.len() - old;
                if self.held_bytes + grow > REASSEMBLY_CAP || grow > budget {
                    return Err(ReasmError::Overflow);
                }
                self.held.insert(offset, data.to_vec());
                self.held_bytes += grow;
            }
            return Ok(nothing);
        }
        // `offset <= next < end`: the skip is shorter than `data`
        let skip = usize::try_from(self.next - offset).unwrap_or(data.len());
        let direct = data.get(skip..).unwrap_or_default();
        let start = self.next;
        self.next = end;
        let mut drained = Vec::new();
        while let Some(entry) = self.held.first_entry() {
            let o = *entry.key();
            if o > self.next {
                break;
            }
            let mut v = entry.remove();
            self.held_bytes -= v.len();
            let e = o + v.len() as u64;
            if e > self.next {
                let skip = usize::try_from(self.next - o).unwrap_or(v.len());
                v.drain(..skip.min(v.len()));
                self.next = e;
                drained.push(v);
            }
        }
        Ok(Admitted {
            offset: start,
            direct,
            drained,
        })
    }

    /// The end of the furthest held piece (or `next`).
    pub(super) fn held_end(&self) -> u64 {
        self.held
            .iter()
            .map(|(o, v)| o + v.len() as u64)
            .max()
            .unwrap_or(self.next)
            .max(self.next)
    }

    /// All bytes up to the final size delivered.
    pub(super) fn complete(&self) -> bool {
        self.fin == Some(self.next)
    }
}
