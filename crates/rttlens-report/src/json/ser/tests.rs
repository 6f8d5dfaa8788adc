//! The serializer's bytes against serde_json's, shape by shape (the real
//! records are compared in `tests/json_bytes.rs`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{needs_escape, to_vec, word_needs_escape};

/// Asserts that `value` serializes to serde_json's exact bytes.
fn same<T: Serialize + ?Sized>(value: &T) {
    let ours = to_vec(value).expect("ours");
    let theirs = serde_json::to_vec(value).expect("serde_json");
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
}

#[derive(Serialize)]
struct Inner {
    a: u8,
    #[serde(rename = "odd \"name\"")]
    odd: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    empty: Vec<u32>,
}

#[derive(Serialize)]
#[allow(dead_code)] // every variant is serialized below
enum Kind {
    Unit,
    Newtype(i64),
    Tuple(u8, String),
    Struct { x: f32, y: bool },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Tagged {
    One { v: u32 },
    Two(Inner),
}

#[derive(Serialize)]
struct Outer<'a> {
    name: &'a str,
    #[serde(flatten)]
    inner: Inner,
    kinds: Vec<Kind>,
    tagged: Vec<Tagged>,
    map: BTreeMap<u16, &'a str>,
    bools: BTreeMap<bool, ()>,
    pair: (i8, char),
    bytes: &'a serde_bytes_like::Bytes,
    unit: (),
    nested: Option<Option<u128>>,
}

/// `serialize_bytes`, without a crate for it.
mod serde_bytes_like {
    pub struct Bytes(pub Vec<u8>);
    impl serde::Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }
}

#[test]
fn derived_shapes_match_serde_json() {
    let bytes = serde_bytes_like::Bytes(vec![0, 7, 255]);
    let v = Outer {
        name: "tab\there \u{2192} \"quoted\" back\\slash \u{1} \u{7f} \u{1f}",
        inner: Inner {
            a: 7,
            odd: Some(-0.0),
            empty: vec![],
        },
        kinds: vec![
            Kind::Unit,
            Kind::Newtype(i64::MIN),
            Kind::Tuple(255, "x\n".into()),
            Kind::Struct { x: 0.1, y: true },
        ],
        tagged: vec![
            Tagged::One { v: 3 },
            Tagged::Two(Inner {
                a: 0,
                odd: None,
                empty: vec![1, 2],
            }),
        ],
        map: [(1, "one"), (65535, "max")].into_iter().collect(),
        bools: [(true, ()), (false, ())].into_iter().collect(),
        pair: (-128, '\u{8}'),
        bytes: &bytes,
        unit: (),
        nested: Some(Some(u128::MAX)),
    };
    same(&v);
}

#[test]
fn floats_match_serde_json() {
    for f in [
        0.0,
        -0.0,
        1.0,
        0.1,
        11790123.0,
        1e300,
        -1e-300,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        2.026,
        123456789012345680.0,
    ] {
        same(&f);
        same(&(f as f32));
    }
}

#[test]
fn every_byte_escapes_as_serde_json_does() {
    // each char alone, and at every place inside words of each length up
    // to and around the eight-byte chunks (the short strings' overlapping
    // loads, the two words of 8 to 16 bytes, the loop beyond)
    for c in (0u32..0x100).filter_map(char::from_u32) {
        for len in (0..=18).chain([23, 24, 25, 31, 32, 33]) {
            for at in 0..=len {
                let mut s: String = "a".repeat(len);
                s.insert(at, c);
                same(&s);
                // as a map key (written with its colon after it)
                same(&BTreeMap::from([(s, 1)]))
            }
        }
    }
}

#[test]
fn the_word_test_finds_each_escaped_byte_in_each_place() {
    for b in 0u8..=255 {
        for at in 0..8 {
            let mut w = [b'a'; 8];
            w[at] = b;
            let expected = b < 0x20 || b == b'"' || b == b'\\';
            assert_eq!(
                word_needs_escape(u64::from_le_bytes(w)),
                expected,
                "{b:#x} at {at}"
            );
            assert_eq!(needs_escape(&w), expected);
        }
    }
    // bytes at 0x80 and above (UTF-8) borrow nothing into a match
    assert!(!needs_escape("→→→ ≥ é".as_bytes()));
}

#[test]
fn map_keys_that_json_cannot_take_are_refused() {
    let mut m = BTreeMap::new();
    m.insert(vec![1u8], 1);
    assert!(to_vec(&m).is_err());
    assert!(serde_json::to_vec(&m).is_err());
    let mut f = BTreeMap::new();
    f.insert(ordered(1.5), 1);
    same(&f);
}

/// A float map key (BTreeMap needs `Ord`).
fn ordered(f: f64) -> OrdF64 {
    OrdF64(f)
}

#[derive(PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
impl Serialize for OrdF64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

#[test]
fn display_values_are_escaped_as_they_are_written() {
    struct D;
    impl std::fmt::Display for D {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a\"b{}c\n\t", 5)
        }
    }
    struct ViaDisplay;
    impl Serialize for ViaDisplay {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(&D)
        }
    }
    same(&ViaDisplay);
    same(&vec![ViaDisplay, ViaDisplay]);
}

/// Field names of each length the short path reads differently, and ones
/// JSON escapes.
#[derive(Serialize)]
struct Names {
    #[serde(rename = "a")]
    n1: u8,
    #[serde(rename = "ab")]
    n2: u8,
    #[serde(rename = "abc")]
    n3: u8,
    #[serde(rename = "abcd")]
    n4: u8,
    #[serde(rename = "abcdefg")]
    n7: u8,
    #[serde(rename = "abcdefgh")]
    n8: u8,
    #[serde(rename = "abcdefghi")]
    n9: u8,
    #[serde(rename = "abcdefghijklmnop")]
    n16: u8,
    #[serde(rename = "abcdefghijklmnopq")]
    n17: u8,
    #[serde(rename = "")]
    n0: u8,
    #[serde(rename = "q\"")]
    quote: u8,
    #[serde(rename = "tab\there, 16 b")]
    tab: u8,
    #[serde(rename = "back\\slash")]
    backslash: u8,
}

#[test]
fn field_names_of_every_length_match_serde_json() {
    same(&Names {
        n1: 1,
        n2: 2,
        n3: 3,
        n4: 4,
        n7: 7,
        n8: 8,
        n9: 9,
        n16: 16,
        n17: 17,
        n0: 0,
        quote: 0,
        tab: 0,
        backslash: 0,
    });
}
