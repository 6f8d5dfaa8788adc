//! A compact JSON serializer for the record: byte for byte what
//! `serde_json::to_writer` writes (compact, UTF-8 unescaped, floats by
//! `zmij`, integers by `itoa`: the crates serde_json uses), into a `Vec<u8>`.
//!
//! Why our own, beside serde_json (docs/design.md §7): serde_json takes
//! every struct field name through its map-key serializer and escapes it
//! byte by byte, on every connection (a TCP connection's line has about
//! 300 of them), and scans every string value a byte at a time. Profiled
//! with `valgrind --tool=callgrind` on 100,000 packets of the
//! connection-heavy bench capture (5,778 connections, 25.8 MB of JSON
//! Lines), `serialize_str` was 25 % of all instructions and the JSON half
//! of the run. Here a field name or a string is scanned eight bytes at a
//! time (SWAR) for the bytes JSON escapes and copied whole when it has
//! none, which is nearly always. sonic-rs (SIMD escaping) was measured and
//! still escaped the field names (bench/README.md, issue 41). The tests at
//! the end check the bytes against serde_json's on the shapes serde derives.

use std::fmt::{self, Display};

use rttlens_core::model::CONN_INDEX;
use serde::ser::{self, Serialize};

/// Why a value could not be written: a map key that is not a string,
/// number, bool or char (as serde_json refuses them), or a `Serialize`
/// implementation's own error.
#[derive(Debug)]
pub struct Error(String);

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// Appends `value` as compact JSON to `out`.
pub fn to_vec_into<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), Error> {
    value.serialize(&mut Ser { out, marks: None })
}

/// [`to_vec_into`], noting in `marks` where each connection index
/// ([`CONN_INDEX`]) starts in `out` (`Rendered::marks`).
pub fn to_vec_marked<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    marks: &mut Vec<usize>,
    value: &T,
) -> Result<(), Error> {
    value.serialize(&mut Ser {
        out,
        marks: Some(marks),
    })
}

/// `value` as compact JSON.
#[cfg(test)]
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    to_vec_into(&mut out, value)?;
    Ok(out)
}

/// The serializer: the output it appends to, and where it notes the
/// connection indexes it writes (when asked).
pub struct Ser<'a> {
    out: &'a mut Vec<u8>,
    marks: Option<&'a mut Vec<usize>>,
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of the word `x` is below 0x20, a `"` or a `\`: the
/// bytes JSON escapes (RFC 8259 §7). Each test is exact for "any byte"
/// (a borrow runs only from a byte that already matched).
#[inline]
fn word_needs_escape(x: u64) -> bool {
    let below_space = x.wrapping_sub(LO * 0x20) & !x;
    let q = x ^ (LO * u64::from(b'"'));
    let quote = q.wrapping_sub(LO) & !q;
    let b = x ^ (LO * u64::from(b'\\'));
    let backslash = b.wrapping_sub(LO) & !b;
    (below_space | quote | backslash) & HI != 0
}

/// Whether `b` is one of the bytes JSON escapes.
#[inline]
fn byte_needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Whether `s` holds a byte JSON escapes, eight bytes at a time (the last
/// word overlapping the one before it: an "any" test may look twice).
/// Field names and most values are short: up to 16 bytes take one or two
/// loads and no loop, a string of 1 to 7 bytes is read as overlapping
/// parts padded with spaces (which JSON does not escape).
#[inline]
fn needs_escape(s: &[u8]) -> bool {
    let word = |c: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        word_needs_escape(u64::from_le_bytes(w))
    };
    let n = s.len();
    match n {
        0 => false,
        1..=3 => {
            // every byte is one of the first, middle and last
            let w = u64::from_le_bytes([s[0], s[n / 2], s[n - 1], b' ', b' ', b' ', b' ', b' ']);
            word_needs_escape(w)
        }
        4..=7 => {
            let half = |c: &[u8]| {
                let mut w = [0u8; 4];
                w.copy_from_slice(c);
                u64::from(u32::from_le_bytes(w))
            };
            word_needs_escape(half(&s[..4]) | half(&s[n - 4..]) << 32)
        }
        8..=16 => word(&s[..8]) | word(&s[n - 8..]),
        _ => {
            let mut any = false;
            for c in s.chunks_exact(8) {
                any |= word(c);
            }
            any || word(&s[n - 8..])
        }
    }
}

/// Appends `s`'s bytes, escaped as serde_json escapes them (the short
/// escapes for `\b \t \n \f \r " \`, `\u00xx` with lower-case hex for the
/// other control bytes), without the quotes.
fn escape_into(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if !needs_escape(bytes) {
        out.extend_from_slice(bytes);
        return;
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !byte_needs_escape(b) {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// Appends `s` as a JSON string.
#[inline]
fn string_into(out: &mut Vec<u8>, s: &str) {
    quoted_into(out, s, false);
}

/// Appends `s` as a JSON string, then a `:` when `colon` (a field name).
///
/// A string of up to 16 bytes that needs no escape, as field names and
/// most values are, is written without a loop or a `memcpy` call: its
/// bytes are read as (overlapping) words, tested for escapes, stored into a
/// 20-byte array with the quotes, and the array appended whole and cut to
/// length. Anything else takes [`escape_into`].
#[inline]
fn quoted_into(out: &mut Vec<u8>, s: &str, colon: bool) {
    let b = s.as_bytes();
    let n = b.len();
    if n <= 16 {
        let mut w = [0u8; 20];
        w[0] = b'"';
        let clean = match n {
            0 => true,
            1..=3 => {
                w[1] = b[0];
                w[1 + n / 2] = b[n / 2];
                w[n] = b[n - 1];
                let x =
                    u64::from_le_bytes([b[0], b[n / 2], b[n - 1], b' ', b' ', b' ', b' ', b' ']);
                !word_needs_escape(x)
            }
            4..=7 => {
                let (mut lo, mut hi) = ([0u8; 4], [0u8; 4]);
                lo.copy_from_slice(&b[..4]);
                hi.copy_from_slice(&b[n - 4..]);
                w[1..5].copy_from_slice(&lo);
                w[n - 3..n + 1].copy_from_slice(&hi);
                let x = u64::from(u32::from_le_bytes(lo)) | u64::from(u32::from_le_bytes(hi)) << 32;
                !word_needs_escape(x)
            }
            _ => {
                let (mut lo, mut hi) = ([0u8; 8], [0u8; 8]);
                lo.copy_from_slice(&b[..8]);
                hi.copy_from_slice(&b[n - 8..]);
                w[1..9].copy_from_slice(&lo);
                w[n - 7..n + 1].copy_from_slice(&hi);
                !word_needs_escape(u64::from_le_bytes(lo))
                    && !word_needs_escape(u64::from_le_bytes(hi))
            }
        };
        if clean {
            w[n + 1] = b'"';
            w[n + 2] = b':';
            let len = out.len();
            out.extend_from_slice(&w);
            out.truncate(len + n + 2 + usize::from(colon));
            return;
        }
    }
    out.reserve(n + 3);
    out.push(b'"');
    escape_into(out, s);
    out.push(b'"');
    if colon {
        out.push(b':');
    }
}

impl Ser<'_> {
    #[inline]
    fn int<I: itoa::Integer>(&mut self, v: I) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
    }

    /// A float as serde_json writes it: `zmij`'s shortest form, `null` when
    /// not finite.
    #[inline]
    fn float<F: zmij::Float>(&mut self, v: F, finite: bool) {
        if finite {
            self.out
                .extend_from_slice(zmij::Buffer::new().format_finite(v).as_bytes());
        } else {
            self.out.extend_from_slice(b"null");
        }
    }

    /// `{"variant":` of an enum variant holding data.
    fn open_variant(&mut self, variant: &str) {
        self.out.push(b'{');
        string_into(self.out, variant);
        self.out.push(b':');
    }
}

/// An object or array being written: whether the next item is the first.
pub struct Compound<'s, 'a> {
    ser: &'s mut Ser<'a>,
    first: bool,
    /// The bytes that close it (`]`, `}`, or `]}` / `}}` for a variant).
    close: &'static [u8],
}

impl Compound<'_, '_> {
    #[inline]
    fn comma(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.ser.out.push(b',');
        }
    }

    #[inline]
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        self.comma();
        quoted_into(self.ser.out, key, true);
        value.serialize(&mut *self.ser)
    }

    #[inline]
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.comma();
        value.serialize(&mut *self.ser)
    }

    #[inline]
    fn close(self) -> Result<(), Error> {
        self.ser.out.extend_from_slice(self.close);
        Ok(())
    }
}

impl<'s, 'a> Ser<'a> {
    fn compound(&'s mut self, open: &[u8], close: &'static [u8]) -> Compound<'s, 'a> {
        self.out.extend_from_slice(open);
        Compound {
            ser: self,
            first: true,
            close,
        }
    }
}

/// The ten `serialize_{i,u}{8,16,32,64,128}` methods, each `$body` with
/// the serializer and the value bound to `$s` and `$v`.
macro_rules! integers {
    (|$s:ident, $v:ident| $body:expr) => {
        integers!(@each |$s, $v| $body; serialize_i8 i8, serialize_i16 i16,
            serialize_i32 i32, serialize_i64 i64, serialize_i128 i128,
            serialize_u8 u8, serialize_u16 u16, serialize_u32 u32,
            serialize_u64 u64, serialize_u128 u128);
    };
    (@each |$s:ident, $v:ident| $body:expr; $($name:ident $t:ty),*) => {
        $(
            fn $name(self, $v: $t) -> Result<(), Error> {
                let $s = self;
                $body
            }
        )*
    };
}

impl<'s, 'a> ser::Serializer for &'s mut Ser<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'s, 'a>;
    type SerializeTuple = Compound<'s, 'a>;
    type SerializeTupleStruct = Compound<'s, 'a>;
    type SerializeTupleVariant = Compound<'s, 'a>;
    type SerializeMap = Compound<'s, 'a>;
    type SerializeStruct = Compound<'s, 'a>;
    type SerializeStructVariant = Compound<'s, 'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    integers!(|ser, v| {
        ser.int(v);
        Ok(())
    });
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.float(v, v.is_finite());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v, v.is_finite());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        string_into(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        let mut seq = self.compound(b"[", b"]");
        for b in v {
            seq.element(b)?;
        }
        seq.close()
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        if let Some(marks) = self.marks.as_deref_mut().filter(|_| name == CONN_INDEX) {
            marks.push(self.out.len());
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.open_variant(variant);
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Ok(self.compound(b"[", b"]"))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Ok(self.compound(b"[", b"]"))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Ok(self.compound(b"[", b"]"))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        self.open_variant(variant);
        Ok(self.compound(b"[", b"]}"))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Ok(self.compound(b"{", b"}"))
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Ok(self.compound(b"{", b"}"))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        self.open_variant(variant);
        Ok(self.compound(b"{", b"}}"))
    }
    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        /// Escapes what `Display` writes, piece by piece.
        struct Escaping<'o>(&'o mut Vec<u8>);
        impl fmt::Write for Escaping<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                escape_into(self.0, s);
                Ok(())
            }
        }
        self.out.push(b'"');
        fmt::write(&mut Escaping(self.out), format_args!("{value}"))
            .map_err(|_| Error("a Display implementation failed".into()))?;
        self.out.push(b'"');
        Ok(())
    }
}

impl ser::SerializeSeq for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTuple for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.comma();
        key.serialize(MapKey(&mut *self.ser))?;
        self.ser.out.push(b':');
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(&mut *self.ser)
    }
    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result<(), Error> {
        self.serialize_key(key)?;
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

mod map_key;
#[cfg(test)]
mod tests;

use map_key::MapKey;
