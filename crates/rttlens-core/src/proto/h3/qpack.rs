//! QPACK (RFC 9204) for a passive observer: the static table, one dynamic
//! table per direction fed by that direction's encoder stream, and field
//! sections decoded as far as the table allows.
//!
//! Our own, not a crate: the QPACK crates at hand are either endpoint
//! decoders (h3's is private; ls-qpack wraps C code) that block or fail on
//! a reference to an entry not received, or young single-author crates.
//! An observer of a capture must instead decode what it can and leave a
//! missing entry unknown, never guessed, and count it; it also needs its
//! own memory bound whatever capacity the peers agree. The Huffman code is
//! HPACK's (RFC 7541 Appendix B, RFC 9204 §4.1.2), decoded by
//! loona-hpack's `HuffmanDecoder`.

use std::collections::VecDeque;

/// The dynamic table's entries kept by us, in bytes as RFC 9204 §3.2.1
/// counts them (name + value + 32). A larger table agreed by the peers
/// loses its oldest entries here first: references to them are unresolved.
pub(crate) const TABLE_MEMORY_CAP: u64 = 64 * 1024;
/// Longest encoder-stream instruction buffered (an Insert's name and value
/// together), bytes; a longer one leaves the table unknown.
pub(crate) const INSTRUCTION_CAP: usize = 16 * 1024;

/// The static table (RFC 9204 Appendix A).
pub(crate) static STATIC_TABLE: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains",
    ),
    (
        "strict-transport-security",
        "max-age=31536000; includesubdomains; preload",
    ),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    (
        "content-security-policy",
        "script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// Why bytes could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// The bytes end inside the item (on the encoder stream: wait).
    More,
    /// The bytes break RFC 9204's syntax or rules.
    Bad(&'static str),
}

/// A field line's name and value; `None` where it came from a dynamic
/// table entry not at hand.
pub(crate) type FieldRef<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// The Huffman decoder (built once: it holds its code tables).
pub(crate) struct Huffman(loona_hpack::huffman::HuffmanDecoder);

impl Huffman {
    pub(crate) fn new() -> Huffman {
        Huffman(loona_hpack::huffman::HuffmanDecoder::new())
    }
}

impl std::fmt::Debug for Huffman {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Huffman")
    }
}

/// Reads a prefixed integer with an `n`-bit prefix (RFC 9204 §4.1.1, RFC
/// 7541 §5.1) at `*pos`, advancing it; values above 2^62 are refused.
pub(crate) fn int(b: &[u8], pos: &mut usize, n: u8) -> Result<u64, Need> {
    let first = *b.get(*pos).ok_or(Need::More)?;
    let mask = ((1u16 << n) - 1) as u8;
    let mut v = u64::from(first & mask);
    let mut p = *pos + 1;
    if v == u64::from(mask) {
        let mut shift = 0u32;
        loop {
            let byte = *b.get(p).ok_or(Need::More)?;
            p += 1;
            let add = u64::from(byte & 0x7f)
                .checked_shl(shift)
                .filter(|a| a >> shift == u64::from(byte & 0x7f))
                .ok_or(Need::Bad("integer overflow"))?;
            v = v.checked_add(add).ok_or(Need::Bad("integer overflow"))?;
            if v > 1 << 62 {
                return Err(Need::Bad("integer overflow"));
            }
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
    }
    *pos = p;
    Ok(v)
}

/// Reads a string literal whose length has an `n`-bit prefix and whose
/// Huffman flag is the bit above it (RFC 9204 §4.1.2), at `*pos`.
fn string(b: &[u8], pos: &mut usize, n: u8, huff: &mut Huffman) -> Result<Vec<u8>, Need> {
    let first = *b.get(*pos).ok_or(Need::More)?;
    let huffman = first & (1 << n) != 0;
    let mut p = *pos;
    let len = int(b, &mut p, n)?;
    let len = usize::try_from(len).map_err(|_| Need::Bad("string too long"))?;
    if len > INSTRUCTION_CAP.max(crate::proto::PARSE_BUFFER_CAP) {
        return Err(Need::Bad("string too long"));
    }
    let raw = b.get(p..p + len).ok_or(Need::More)?;
    let s = if huffman {
        huff.0
            .decode(raw)
            .map_err(|_| Need::Bad("bad Huffman code"))?
    } else {
        raw.to_vec()
    };
    *pos = p + len;
    Ok(s)
}

/// One dynamic table entry.
#[derive(Debug, Clone)]
struct Entry {
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Entry {
    /// Its size (RFC 9204 §3.2.1).
    fn size(&self) -> u64 {
        self.name.len() as u64 + self.value.len() as u64 + 32
    }
}

/// One direction's dynamic table (RFC 9204 §3.2) as its encoder stream
/// built it, and the encoder stream's bytes not yet read.
#[derive(Debug, Default)]
pub(crate) struct DynamicTable {
    /// Entries kept, oldest first; the newest has absolute index
    /// `inserted - 1`.
    entries: VecDeque<Entry>,
    /// Insert Count: entries ever inserted.
    inserted: u64,
    /// Sum of the sizes of `entries`.
    size: u64,
    /// Capacity set by the encoder.
    capacity: u64,
    /// The largest capacity the encoder set: a lower bound of the
    /// decoder's maximum.
    max_capacity_seen: u64,
    /// An instruction could not be read: the table is unknown from here on.
    lost: bool,
    /// Encoder stream bytes of an instruction not complete yet.
    pending: Vec<u8>,
}

impl DynamicTable {
    /// Insert Count (RFC 9204 §3.2.4).
    pub(crate) fn inserted(&self) -> u64 {
        self.inserted
    }

    /// Whether the encoder stream could not be followed.
    pub(crate) fn lost(&self) -> bool {
        self.lost
    }

    /// The encoder stream could not be followed (a gap, a malformed
    /// instruction): no later reference resolves.
    pub(crate) fn set_lost(&mut self) {
        self.lost = true;
        self.entries.clear();
        self.pending = Vec::new();
        self.size = 0;
    }

    /// The entry of absolute index `abs`, if received and still kept.
    fn get(&self, abs: u64) -> Option<&Entry> {
        if self.lost {
            return None;
        }
        let first = self.inserted - self.entries.len() as u64;
        let i = abs.checked_sub(first)?;
        self.entries.get(usize::try_from(i).ok()?)
    }

    fn evict_to(&mut self, limit: u64) {
        while self.size > limit {
            let Some(e) = self.entries.pop_front() else {
                break;
            };
            self.size -= e.size();
        }
    }

    fn insert(&mut self, e: Entry) -> Result<(), Need> {
        let sz = e.size();
        if sz > self.capacity {
            return Err(Need::Bad("entry larger than the table's capacity"));
        }
        self.evict_to(self.capacity - sz);
        self.inserted += 1;
        if sz <= TABLE_MEMORY_CAP {
            self.size += sz;
            self.entries.push_back(e);
            self.evict_to(TABLE_MEMORY_CAP);
        } else {
            // not kept: the kept entries must stay contiguous up to the
            // newest, so the older ones go too
            self.entries.clear();
            self.size = 0;
        }
        Ok(())
    }

    /// The entry at a relative index on the encoder stream (RFC 9204
    /// §3.2.5): `Ok(None)` when inserted but not kept.
    fn relative(&self, rel: u64) -> Result<Option<Entry>, Need> {
        let abs = self
            .inserted
            .checked_sub(rel)
            .and_then(|a| a.checked_sub(1))
            .ok_or(Need::Bad("relative index beyond the table"))?;
        Ok(self.get(abs).cloned())
    }

    /// Feeds in-order encoder stream bytes (RFC 9204 §4.3). Returns an
    /// error (and leaves the table lost) when they do not parse.
    pub(crate) fn feed(&mut self, data: &[u8], huff: &mut Huffman) -> Result<(), &'static str> {
        if self.lost {
            return Ok(());
        }
        self.pending.extend_from_slice(data);
        let buf = std::mem::take(&mut self.pending);
        let mut pos = 0;
        let r = loop {
            if pos == buf.len() {
                break Ok(());
            }
            let mut p = pos;
            match self.instruction(&buf, &mut p, huff) {
                Ok(()) => pos = p,
                Err(Need::More) if buf.len() - pos <= INSTRUCTION_CAP => {
                    self.pending = buf[pos..].to_vec();
                    break Ok(());
                }
                Err(Need::More) => break Err("encoder instruction too long"),
                Err(Need::Bad(what)) => break Err(what),
            }
        };
        if r.is_err() {
            self.set_lost();
        }
        r
    }

    /// One encoder instruction at `*pos`.
    fn instruction(&mut self, b: &[u8], pos: &mut usize, huff: &mut Huffman) -> Result<(), Need> {
        let first = b[*pos];
        if first & 0x80 != 0 {
            // Insert with Name Reference: 1 T index(6) value(H, 7)
            let stat = first & 0x40 != 0;
            let idx = int(b, pos, 6)?;
            let value = string(b, pos, 7, huff)?;
            let name = if stat {
                let (n, _) = static_entry(idx)?;
                Some(n.as_bytes().to_vec())
            } else {
                self.relative(idx)?.map(|e| e.name)
            };
            self.insert_or_placeholder(name, value)
        } else if first & 0x40 != 0 {
            // Insert with Literal Name: 01 H len(5) name, value(H, 7)
            let name = string(b, pos, 5, huff)?;
            let value = string(b, pos, 7, huff)?;
            self.insert(Entry { name, value })
        } else if first & 0x20 != 0 {
            // Set Dynamic Table Capacity: 001 capacity(5)
            let cap = int(b, pos, 5)?;
            self.capacity = cap;
            self.max_capacity_seen = self.max_capacity_seen.max(cap);
            self.evict_to(cap);
            Ok(())
        } else {
            // Duplicate: 000 index(5)
            let idx = int(b, pos, 5)?;
            match self.relative(idx)? {
                Some(e) => self.insert(e),
                None => self.insert_unknown(),
            }
        }
    }

    fn insert_or_placeholder(&mut self, name: Option<Vec<u8>>, value: Vec<u8>) -> Result<(), Need> {
        match name {
            Some(name) => self.insert(Entry { name, value }),
            None => self.insert_unknown(),
        }
    }

    /// An entry was inserted whose content is unknown (its name came from
    /// an entry we no longer keep): its size is unknown too, so eviction
    /// can no longer be followed and the table is lost.
    fn insert_unknown(&mut self) -> Result<(), Need> {
        self.set_lost();
        Ok(())
    }
}

fn static_entry(idx: u64) -> Result<(&'static str, &'static str), Need> {
    usize::try_from(idx)
        .ok()
        .and_then(|i| STATIC_TABLE.get(i))
        .copied()
        .ok_or(Need::Bad("static index beyond the table"))
}

/// A field section's prefix (RFC 9204 §4.5.1) decoded against a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prefix {
    /// Required Insert Count; `None` when it cannot be decoded (the
    /// decoder's maximum capacity is unknown and may matter).
    pub(crate) required: Option<u64>,
    /// Base (with `required`).
    base: Option<u64>,
    /// Bytes the prefix took.
    len: usize,
}

/// Decodes a field section's prefix (RFC 9204 §4.5.1.1 and §4.5.1.2).
/// `max_capacity` is the decoder's SETTINGS_QPACK_MAX_TABLE_CAPACITY
/// (`None`: its SETTINGS were not seen).
pub(crate) fn prefix(
    b: &[u8],
    table: &DynamicTable,
    max_capacity: Option<u64>,
) -> Result<Prefix, &'static str> {
    let trunc = |e| match e {
        Need::More => "field section truncated",
        Need::Bad(w) => w,
    };
    let mut pos = 0;
    let encoded = int(b, &mut pos, 8).map_err(trunc)?;
    let sign = b.get(pos).ok_or("field section truncated")? & 0x80 != 0;
    let delta = int(b, &mut pos, 7).map_err(trunc)?;
    let required = if encoded == 0 {
        Some(0)
    } else {
        let total = table.inserted;
        // MaxEntries: from the decoder's SETTINGS, or, when those are not
        // known, a lower bound from the capacities the encoder set (it
        // may not exceed the decoder's maximum): enough when no wrap can
        // have happened yet
        let known = max_capacity.map(|c| c / 32);
        let lower = table.max_capacity_seen / 32;
        match known {
            Some(max_entries) => Some(decode_required(encoded, total, max_entries)?),
            None if total < lower => Some(decode_required(encoded, total, lower)?),
            None => None,
        }
    };
    let base = match required {
        Some(ric) if sign => Some(
            ric.checked_sub(delta)
                .and_then(|v| v.checked_sub(1))
                .ok_or("Base below 0")?,
        ),
        Some(ric) => Some(ric.checked_add(delta).ok_or("Base overflow")?),
        None => None,
    };
    Ok(Prefix {
        required,
        base,
        len: pos,
    })
}

/// Required Insert Count from its encoding (RFC 9204 §4.5.1.1).
fn decode_required(encoded: u64, total: u64, max_entries: u64) -> Result<u64, &'static str> {
    let full_range = 2 * max_entries;
    if encoded > full_range {
        return Err("Required Insert Count out of range");
    }
    let max_value = total + max_entries;
    let max_wrapped = (max_value / full_range) * full_range;
    let mut ric = max_wrapped + encoded - 1;
    if ric > max_value {
        if ric <= full_range {
            return Err("Required Insert Count out of range");
        }
        ric -= full_range;
    }
    if ric == 0 {
        return Err("Required Insert Count of 0 encoded as non-zero");
    }
    Ok(ric)
}

/// What decoding a field section found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Decoded {
    /// Dynamic table references resolved.
    pub(crate) resolved: u64,
    /// Dynamic table references not resolved: the entry was not received
    /// (yet), was evicted from our copy, or the table is unknown.
    pub(crate) unresolved: u64,
}

/// Decodes a field section (RFC 9204 §4.5), calling `field` for each field
/// line in order. References to dynamic entries not at hand give `None`
/// for what they would have supplied. Stops at the first malformed line
/// (what was reported before stands).
pub(crate) fn decode_section(
    b: &[u8],
    table: &DynamicTable,
    max_capacity: Option<u64>,
    huff: &mut Huffman,
    mut field: impl FnMut(FieldRef<'_>),
) -> Result<Decoded, &'static str> {
    let pre = prefix(b, table, max_capacity)?;
    let mut out = Decoded::default();
    let mut pos = pre.len;
    let err = |e| match e {
        Need::More => "field section truncated",
        Need::Bad(w) => w,
    };
    let rel = |idx: u64| -> Result<Option<u64>, &'static str> {
        match pre.base {
            None => Ok(None),
            Some(base) => base
                .checked_sub(idx)
                .and_then(|v| v.checked_sub(1))
                .map(Some)
                .ok_or("relative index below 0"),
        }
    };
    let post = |idx: u64| -> Result<Option<u64>, &'static str> {
        match pre.base {
            None => Ok(None),
            Some(base) => base
                .checked_add(idx)
                .map(Some)
                .ok_or("post-base index overflow"),
        }
    };
    while pos < b.len() {
        let first = b[pos];
        if first & 0x80 != 0 {
            // Indexed Field Line: 1 T index(6)
            let idx = int(b, &mut pos, 6).map_err(err)?;
            if first & 0x40 != 0 {
                let (n, v) = static_entry(idx).map_err(err)?;
                field((Some(n.as_bytes()), Some(v.as_bytes())));
            } else {
                let e = dynamic(table, pre.required, rel(idx)?, &mut out)?;
                field((e.map(|e| &e.name[..]), e.map(|e| &e.value[..])));
            }
        } else if first & 0x40 != 0 {
            // Literal Field Line with Name Reference: 01 N T index(4)
            let idx = int(b, &mut pos, 4).map_err(err)?;
            let value = string(b, &mut pos, 7, huff).map_err(err)?;
            if first & 0x10 != 0 {
                let (n, _) = static_entry(idx).map_err(err)?;
                field((Some(n.as_bytes()), Some(&value)));
            } else {
                let e = dynamic(table, pre.required, rel(idx)?, &mut out)?;
                field((e.map(|e| &e.name[..]), Some(&value)));
            }
        } else if first & 0x20 != 0 {
            // Literal Field Line with Literal Name: 001 N H len(3)
            let name = string(b, &mut pos, 3, huff).map_err(err)?;
            let value = string(b, &mut pos, 7, huff).map_err(err)?;
            field((Some(&name), Some(&value)));
        } else if first & 0x10 != 0 {
            // Indexed Field Line with Post-Base Index: 0001 index(4)
            let idx = int(b, &mut pos, 4).map_err(err)?;
            let e = dynamic(table, pre.required, post(idx)?, &mut out)?;
            field((e.map(|e| &e.name[..]), e.map(|e| &e.value[..])));
        } else {
            // Literal Field Line with Post-Base Name Reference: 0000 N
            // index(3)
            let idx = int(b, &mut pos, 3).map_err(err)?;
            let value = string(b, &mut pos, 7, huff).map_err(err)?;
            let e = dynamic(table, pre.required, post(idx)?, &mut out)?;
            field((e.map(|e| &e.name[..]), Some(&value)));
        }
    }
    Ok(out)
}

/// The dynamic entry of absolute index `abs` (`None`: not computable),
/// checked against the Required Insert Count and counted.
fn dynamic<'t>(
    table: &'t DynamicTable,
    required: Option<u64>,
    abs: Option<u64>,
    out: &mut Decoded,
) -> Result<Option<&'t Entry>, &'static str> {
    if let (Some(a), Some(ric)) = (abs, required) {
        if a >= ric {
            return Err("reference at or beyond Required Insert Count");
        }
    }
    let e = abs.and_then(|a| table.get(a));
    if e.is_some() {
        out.resolved += 1;
    } else {
        out.unresolved += 1;
    }
    Ok(e)
}

#[cfg(test)]
mod tests;
