//! Tests of the passive QPACK decoder (the parent module): the static table, the dynamic table fed by the encoder stream split anywhere, field sections.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

type Fields = Vec<(Option<String>, Option<String>)>;

fn decode(b: &[u8], t: &DynamicTable, max: Option<u64>) -> (Fields, Decoded) {
    let mut huff = Huffman::new();
    let mut fields = Vec::new();
    let d = decode_section(b, t, max, &mut huff, |(n, v)| {
        let s = |x: Option<&[u8]>| x.map(|x| String::from_utf8(x.to_vec()).unwrap());
        fields.push((s(n), s(v)));
    })
    .unwrap();
    (fields, d)
}

fn f(n: &str, v: &str) -> (Option<String>, Option<String>) {
    (Some(n.to_string()), Some(v.to_string()))
}

fn entries(t: &DynamicTable) -> Vec<(String, String)> {
    t.entries
        .iter()
        .map(|e| {
            (
                String::from_utf8(e.name.clone()).unwrap(),
                String::from_utf8(e.value.clone()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn static_table_ends_where_rfc9204_appendix_a_does() {
    assert_eq!(STATIC_TABLE[0], (":authority", ""));
    assert_eq!(STATIC_TABLE[17], (":method", "GET"));
    assert_eq!(STATIC_TABLE[25], (":status", "200"));
    assert_eq!(STATIC_TABLE[71], (":status", "500"));
    assert_eq!(STATIC_TABLE[98], ("x-frame-options", "sameorigin"));
}

/// RFC 9204 Appendix B, B.1 to B.5, in order against one table; the
/// decoder's maximum capacity is 220 (B.2's Set Dynamic Table
/// Capacity).
#[test]
fn rfc9204_appendix_b() {
    let mut huff = Huffman::new();
    let mut t = DynamicTable::default();
    let max = Some(220);
    // B.1: Literal Field Line with Name Reference, static
    let (fields, d) = decode(&hex("0000 510b 2f69 6e64 6578 2e68 746d 6c"), &t, max);
    assert_eq!(fields, [f(":path", "/index.html")]);
    assert_eq!(d, Decoded::default());
    // B.2: Dynamic Table
    t.feed(
        &hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d
             c10c 2f73 616d 706c 652f 7061 7468"),
        &mut huff,
    )
    .unwrap();
    assert_eq!((t.capacity, t.inserted, t.size), (220, 2, 106));
    let (fields, d) = decode(&hex("0381 10 11"), &t, max);
    assert_eq!(
        fields,
        [
            f(":authority", "www.example.com"),
            f(":path", "/sample/path")
        ]
    );
    assert_eq!((d.resolved, d.unresolved), (2, 0));
    // B.3: Speculative Insert
    t.feed(
        &hex("4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565"),
        &mut huff,
    )
    .unwrap();
    assert_eq!((t.inserted, t.size), (3, 160));
    // B.4: Duplicate Instruction, Stream Cancellation
    t.feed(&hex("02"), &mut huff).unwrap();
    assert_eq!((t.inserted, t.size), (4, 217));
    let (fields, d) = decode(&hex("0500 80 c1 81"), &t, max);
    assert_eq!(
        fields,
        [
            f(":authority", "www.example.com"),
            f(":path", "/"),
            f("custom-key", "custom-value")
        ]
    );
    assert_eq!((d.resolved, d.unresolved), (2, 0));
    // B.5: Dynamic Table Insert, Eviction
    t.feed(&hex("810d 6375 7374 6f6d 2d76 616c 7565 32"), &mut huff)
        .unwrap();
    assert_eq!((t.inserted, t.size), (5, 215));
    assert_eq!(
        entries(&t),
        [
            (":path".into(), "/sample/path".into()),
            ("custom-key".into(), "custom-value".into()),
            (":authority".into(), "www.example.com".into()),
            ("custom-key".into(), "custom-value2".into()),
        ]
    );
}

#[test]
fn encoder_stream_split_anywhere_gives_the_same_table() {
    let bytes = hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d
         c10c 2f73 616d 706c 652f 7061 7468
         4a63 7573 746f 6d2d 6b65 790c 6375 7374 6f6d 2d76 616c 7565 02");
    let mut huff = Huffman::new();
    for cut in 0..bytes.len() {
        let mut t = DynamicTable::default();
        t.feed(&bytes[..cut], &mut huff).unwrap();
        t.feed(&bytes[cut..], &mut huff).unwrap();
        assert_eq!((t.inserted, t.size), (4, 217), "cut at {cut}");
    }
}

#[test]
fn missing_entries_are_unknown_not_guessed() {
    let mut huff = Huffman::new();
    let mut t = DynamicTable::default();
    t.feed(
        &hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d"),
        &mut huff,
    )
    .unwrap();
    // B.2's section needs 2 inserts; only 1 arrived: :authority
    // resolves, :path (post-base index 1) does not
    let (fields, d) = decode(&hex("0381 10 11 d1"), &t, Some(220));
    assert_eq!(
        fields,
        [
            f(":authority", "www.example.com"),
            (None, None),
            f(":method", "GET")
        ]
    );
    assert_eq!((d.resolved, d.unresolved), (1, 1));
    // the decoder's maximum capacity unknown, the encoder's capacity
    // (220 → 6 entries) bounds it from below: still decodable
    assert_eq!(prefix(&hex("0381"), &t, None).unwrap().required, Some(2));
    // a lost table resolves nothing
    t.set_lost();
    let (fields, d) = decode(&hex("0381 10"), &t, Some(220));
    assert_eq!(fields, [(None, None)]);
    assert_eq!((d.resolved, d.unresolved), (0, 1));
    // an unknown capacity, nothing inserted: the count is unknown
    let t = DynamicTable::default();
    assert_eq!(prefix(&hex("0381"), &t, None).unwrap().required, None);
    let (fields, d) = decode(&hex("0381 10 d1"), &t, None);
    assert_eq!(fields, [(None, None), f(":method", "GET")]);
    assert_eq!(d.unresolved, 1);
}

#[test]
fn required_insert_count_wraps() {
    // RFC 9204 §4.5.1.1 with MaxEntries 6 (FullRange 12)
    assert_eq!(decode_required(3, 2, 6), Ok(2));
    assert_eq!(decode_required(3, 13, 6), Ok(14));
    assert_eq!(decode_required(1, 23, 6), Ok(24));
    assert!(decode_required(13, 2, 6).is_err());
    assert!(decode_required(1, 0, 0).is_err());
}

#[test]
fn huffman_literals_and_bad_input() {
    // Literal Field Line with Literal Name, Huffman: "custom-key" /
    // "custom-value" (RFC 7541 §C.4.1-style codes)
    let mut huff = Huffman::new();
    let mut b = hex("0000 2f");
    // name: H=1, length 8 in the 3-bit prefix (7 + 1)
    b[2] = 0x2f;
    b.push(0x01);
    b.extend(hex("25a8 49e9 5ba9 7d7f"));
    b.push(0x89);
    b.extend(hex("25a8 49e9 5bb8 e8b4 bf"));
    let mut got = Vec::new();
    decode_section(
        &b,
        &DynamicTable::default(),
        Some(0),
        &mut huff,
        |(n, v)| got.push((n.map(<[u8]>::to_vec), v.map(<[u8]>::to_vec))),
    )
    .unwrap();
    assert_eq!(
        got,
        [(Some(b"custom-key".to_vec()), Some(b"custom-value".to_vec()))]
    );
    let t = DynamicTable::default();
    for bad in [
        &hex("00")[..],                                          // no Base
        &hex("0000 ff")[..],                                     // static index truncated
        &hex("0000 ff 7f")[..], // static index 63+127 beyond the table
        &hex("0000 5f 7f")[..], // string truncated
        &hex("0000 ff ff ff ff ff ff ff ff ff ff ff ff 01")[..], // overflow
        &hex("0200 80")[..],    // RIC 1 with a 0-capacity decoder
    ] {
        assert!(
            decode_section(bad, &t, Some(0), &mut huff, |_| {}).is_err(),
            "{bad:02x?}"
        );
    }
    let mut t = DynamicTable::default();
    assert!(t
        .feed(&hex("c0 7f ff ff ff ff ff ff ff ff ff 01"), &mut huff)
        .is_err());
    assert!(t.lost());
    // an insert bigger than the capacity
    let mut t = DynamicTable::default();
    assert!(t.feed(&hex("c0 03 61 62 63"), &mut huff).is_err());
}
