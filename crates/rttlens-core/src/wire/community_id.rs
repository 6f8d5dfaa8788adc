//! Community ID flow hashing, version 1: the key Zeek (≥ 6, `conn.log`'s
//! `community_id`), Suricata (`community-id: yes` in eve.json), Arkime and
//! Elastic (`network.community_id`) join flows on, so a fleet's rttlens
//! records join theirs.
//!
//! `"1:" + base64(SHA-1(seed ‖ saddr ‖ daddr ‖ proto ‖ 0 ‖ sport ‖ dport))`,
//! the seed and ports big-endian 16-bit, the addresses in network order,
//! the endpoints ordered so that the smaller (address, then port) comes
//! first: both directions of a flow give the same ID. Source: the
//! specification, corelight/community-id-spec (README "Technical
//! details", `community-id.py`), whose published baselines the tests check.

use std::net::{IpAddr, SocketAddr};

use base64::Engine as _;

/// IANA protocol number of TCP.
pub const TCP: u8 = 6;
/// IANA protocol number of UDP.
pub const UDP: u8 = 17;

/// The Community ID v1 of the flow between `a` and `b` over `proto`
/// (TCP or UDP: the ports take part), with `seed` (0 by default in every
/// tool). The order of `a` and `b` does not matter. An IPv4 and an IPv6
/// endpoint cannot share a flow: the v4 one is then taken as v4-mapped v6
/// so that the ID is still defined (no capture gives such a pair).
pub fn community_id(seed: u16, proto: u8, a: SocketAddr, b: SocketAddr) -> String {
    let digest = digest(seed, proto, a, b);
    let mut out = String::with_capacity(30);
    out.push_str("1:");
    base64::engine::general_purpose::STANDARD.encode_string(digest, &mut out);
    out
}

/// The SHA-1 digest a Community ID v1 is the base64 of ([`community_id`]
/// without the `1:` and the base64): what `--shard` hashes connections by
/// (`flow::shard`).
pub fn digest(seed: u16, proto: u8, a: SocketAddr, b: SocketAddr) -> [u8; 20] {
    // an address's bytes, 4 or 16, in a 16-byte array
    let bytes = |ip: IpAddr, mixed: bool| -> ([u8; 16], usize) {
        match ip {
            IpAddr::V4(v4) if !mixed => {
                let mut b = [0; 16];
                b[..4].copy_from_slice(&v4.octets());
                (b, 4)
            }
            IpAddr::V4(v4) => (v4.to_ipv6_mapped().octets(), 16),
            IpAddr::V6(v6) => (v6.octets(), 16),
        }
    };
    let mixed = a.is_ipv4() != b.is_ipv4();
    let ((ia, len), (ib, _)) = (bytes(a.ip(), mixed), bytes(b.ip(), mixed));
    let (ea, eb) = ((&ia[..len], a.port()), (&ib[..len], b.port()));
    let (first, second) = if ea <= eb { (ea, eb) } else { (eb, ea) };
    // on the stack: seed, two addresses, protocol, padding, two ports
    let mut input = [0u8; 2 + 2 * 16 + 2 + 4];
    let mut n = 0;
    for part in [
        &seed.to_be_bytes()[..],
        first.0,
        second.0,
        &[proto, 0],
        &first.1.to_be_bytes(),
        &second.1.to_be_bytes(),
    ] {
        input[n..n + part.len()].copy_from_slice(part);
        n += part.len();
    }
    // RustCrypto's sha1, not ring's (used for TLS): it takes the CPU's SHA
    // extensions where there are some, and one digest per connection was a
    // fifth of a SYN-only connection's report (2,660 instructions with
    // ring's portable SHA-1; bench/README.md, issue 41)
    use sha1::Digest as _;
    sha1::Sha1::digest(&input[..n]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TCP and UDP rows of corelight/community-id-spec's
    /// `baseline/baseline_deflt.json` (seed 0) and `baseline_seed1.json`
    /// (seed 1): `(seed, proto, saddr, daddr, sport, dport, id)`.
    #[rustfmt::skip]
    const BASELINE: &[(u16, u8, &str, &str, u16, u16, &str)] = &[
        (0, 6, "2001:470:e5bf:dead:4957:2174:e82c:4887", "2607:f8b0:400c:c03::1a", 63943, 25, "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4="),
        (0, 6, "2607:f8b0:400c:c03::1a", "2001:470:e5bf:dead:4957:2174:e82c:4887", 25, 63943, "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4="),
        (0, 6, "128.232.110.120", "66.35.250.204", 34855, 80, "1:LQU9qZlK+B5F3KDmev6m5PMibrg="),
        (0, 6, "66.35.250.204", "128.232.110.120", 80, 34855, "1:LQU9qZlK+B5F3KDmev6m5PMibrg="),
        (0, 17, "192.168.1.52", "8.8.8.8", 54585, 53, "1:d/FP5EW3wiY1vCndhwleRRKHowQ="),
        (0, 17, "8.8.8.8", "192.168.1.52", 53, 54585, "1:d/FP5EW3wiY1vCndhwleRRKHowQ="),
        (1, 6, "2001:470:e5bf:dead:4957:2174:e82c:4887", "2607:f8b0:400c:c03::1a", 63943, 25, "1:eJYTW6AOzFLlSUoESovMjnu7rMw="),
        (1, 6, "66.35.250.204", "128.232.110.120", 80, 34855, "1:3V71V58M3Ksw/yuFALMcW0LAHvc="),
        (1, 17, "192.168.1.52", "8.8.8.8", 54585, 53, "1:Q9We8WO3piVF8yEQBNJF4uiSVrI="),
    ];

    #[test]
    fn the_specifications_baselines() {
        for &(seed, proto, s, d, sp, dp, want) in BASELINE {
            let a = SocketAddr::new(s.parse().unwrap(), sp);
            let b = SocketAddr::new(d.parse().unwrap(), dp);
            assert_eq!(community_id(seed, proto, a, b), want, "{s}:{sp} → {d}:{dp}");
        }
    }
}
