//! The server's leaf certificate as blackbox_exporter labels it in
//! `probe_ssl_last_chain_info` (its `prober/tls.go`: `getFingerprint`,
//! `getSubject`, `getIssuer`, `getDNSNames`, `getSerialNumber`), so a
//! query or alert written against blackbox matches the same strings.
//!
//! The subject and issuer are Go's `pkix.Name.String()`, written here:
//! no crate formats a name Go's way (x509-parser's `Display` keeps the
//! certificate's order and joins with `", "`; Go puts the attributes it
//! knows in its own fixed order, reversed, joined with `,`, and writes the
//! others as `OID=#hex` of their DER). Go's rules, followed step by step:
//! `FillFromRDNSequence` (the last CN and SERIALNUMBER win, the other
//! known types gather their values), `Name.String` (unknown attributes
//! first, then `ToRDNSequence`: C, ST, L, STREET, POSTALCODE, O, OU, CN,
//! SERIALNUMBER, each type one multi-valued RDN), `RDNSequence.String`
//! (the RDNs last first, values joined with `+`, RFC 4514 escaping).

use rttlens_probe_model::LeafCert;
use x509_parser::asn1_rs::Tag;
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

/// The known attribute types (OID arc 2.5.4.N) in `ToRDNSequence`'s order,
/// with Go's short names.
const KNOWN: [(u64, &str); 9] = [
    (6, "C"),
    (8, "ST"),
    (7, "L"),
    (9, "STREET"),
    (17, "POSTALCODE"),
    (10, "O"),
    (11, "OU"),
    (3, "CN"),
    (5, "SERIALNUMBER"),
];

/// blackbox's labels of the leaf certificate `der`; `None` when it is not
/// X.509 DER.
pub fn leaf_cert(der: &[u8]) -> Option<LeafCert> {
    let (_, c) = x509_parser::parse_x509_certificate(der).ok()?;
    let dns_names = match c.subject_alternative_name() {
        Ok(Some(san)) => san
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    // Go's `SerialNumber.Bytes()`: the magnitude, without DER's sign byte
    let serial = c.raw_serial();
    let first = serial.iter().position(|b| *b != 0).unwrap_or(serial.len());
    Some(LeafCert {
        fingerprint_sha256: hex(ring::digest::digest(&ring::digest::SHA256, der).as_ref()),
        subject: go_name(c.subject()),
        issuer: go_name(c.issuer()),
        dns_names,
        serial_hex: hex(&serial[first..]),
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The type's number under 2.5.4 when it is one Go knows by name.
fn known(atv: &AttributeTypeAndValue<'_>) -> Option<u64> {
    let arcs: Vec<u64> = atv.attr_type().iter()?.collect();
    match arcs.as_slice() {
        [2, 5, 4, n] if KNOWN.iter().any(|(k, _)| k == n) => Some(*n),
        _ => None,
    }
}

/// The value as Go's `asn1.Unmarshal` into `interface{}` reads it: the
/// string types as strings (T61String byte for byte, BMPString from
/// UTF-16); `None` for anything else.
fn go_string(atv: &AttributeTypeAndValue<'_>) -> Option<String> {
    let v = atv.attr_value();
    let data = v.data;
    match v.tag() {
        Tag::PrintableString | Tag::Ia5String | Tag::Utf8String | Tag::NumericString => {
            std::str::from_utf8(data).ok().map(str::to_string)
        }
        Tag::T61String => Some(String::from_utf8_lossy(data).into_owned()),
        Tag::BmpString => {
            let units: Vec<u16> = data
                .chunks_exact(2)
                .map(|p| u16::from_be_bytes([p[0], p[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

/// One RDN's attribute in Go's `RDNSequence.String`: a known type as
/// `NAME=value` (escaped), another as `OID=#` and the hex of the DER Go's
/// `asn1.Marshal` gives its value (a PrintableString when every character
/// is one, else a UTF8String).
enum Atv {
    Known(&'static str, String),
    Other(String, String),
}

impl Atv {
    fn write(&self, out: &mut String) {
        match self {
            Atv::Known(name, value) => {
                out.push_str(name);
                out.push('=');
                escape(value, out);
            }
            Atv::Other(oid, value) => {
                out.push_str(oid);
                out.push_str("=#");
                out.push_str(&hex(&marshal_string(value)));
            }
        }
    }
}

/// Go's escaping in `RDNSequence.String`: `,+"\<>;` always, a space first
/// or last, a `#` first.
fn escape(v: &str, out: &mut String) {
    let last = v.len().saturating_sub(1);
    for (k, c) in v.char_indices() {
        let esc = match c {
            ',' | '+' | '"' | '\\' | '<' | '>' | ';' => true,
            ' ' => k == 0 || k == last,
            '#' => k == 0,
            _ => false,
        };
        if esc {
            out.push('\\');
        }
        out.push(c);
    }
}

/// `asn1.Marshal` of a Go string: PrintableString (tag 19) when every
/// character is in its set (`*` and `&` excluded), else UTF8String (12).
fn marshal_string(s: &str) -> Vec<u8> {
    let printable = s.bytes().all(|b| {
        b.is_ascii_alphanumeric()
            || matches!(
                b,
                b' ' | b'\'' | b'(' | b')' | b'+' | b',' | b'-' | b'.' | b'/' | b':' | b'=' | b'?'
            )
    });
    let mut out = vec![if printable { 19 } else { 12 }];
    let n = s.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let len = n.to_be_bytes();
        let skip = len.iter().position(|b| *b != 0).unwrap_or(len.len() - 1);
        out.push(0x80 | (len.len() - skip) as u8);
        out.extend_from_slice(&len[skip..]);
    }
    out.extend_from_slice(s.as_bytes());
    out
}

/// Go's `pkix.Name.String()` of a parsed name.
fn go_name(name: &X509Name<'_>) -> String {
    // unknown attributes (each its own RDN), in the certificate's order;
    // a value that is no string is left out, as Go's fill skips it
    let mut rdns: Vec<Vec<Atv>> = Vec::new();
    for atv in name.iter_attributes() {
        if known(atv).is_none() {
            if let Some(v) = go_string(atv) {
                rdns.push(vec![Atv::Other(atv.attr_type().to_id_string(), v)]);
            }
        }
    }
    // the known ones: each type's values together, in Go's order; the
    // last CN and SERIALNUMBER only
    for (n, short) in KNOWN {
        let values: Vec<String> = name
            .iter_attributes()
            .filter(|a| known(a) == Some(n))
            .filter_map(go_string)
            .collect();
        let values = match n {
            3 | 5 => values.into_iter().last().into_iter().collect(),
            _ => values,
        };
        // Go leaves out an empty CN or SERIALNUMBER, not other types
        if values.is_empty() || (matches!(n, 3 | 5) && values[0].is_empty()) {
            continue;
        }
        rdns.push(values.into_iter().map(|v| Atv::Known(short, v)).collect());
    }
    let mut out = String::new();
    for (i, rdn) in rdns.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, atv) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            atv.write(&mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_as_go() {
        let e = |v: &str| {
            let mut o = String::new();
            escape(v, &mut o);
            o
        };
        assert_eq!(e(" #a+b, c "), r"\ #a\+b\, c\ ");
        assert_eq!(e("#x;<y>\"\\"), r#"\#x\;\<y\>\"\\"#);
        assert_eq!(e("a b"), "a b");
    }

    #[test]
    fn der_of_a_go_string() {
        assert_eq!(marshal_string("DE"), [19, 2, b'D', b'E']);
        assert_eq!(marshal_string("a@b")[..2], [12, 3]);
        assert_eq!(marshal_string("a*b")[0], 12);
        let long = "x".repeat(200);
        assert_eq!(marshal_string(&long)[..3], [19, 0x81, 200]);
        let longer = "x".repeat(300);
        assert_eq!(marshal_string(&longer)[..4], [19, 0x82, 1, 44]);
    }
}
