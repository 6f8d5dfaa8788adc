//! Tests of the connection table (the parent module): 4-tuple lookup, reuse by a new ISN, tombstones, sweeps.

use super::{FlowKey, Tombstones, TOMBSTONE};
use crate::base::time::{Duration, Timestamp};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address of either family, often one of a few (so that equal
/// addresses, ports and IPv4-mapped IPv6 ones come up).
fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from_bits(a))),
        any::<u128>().prop_map(|a| IpAddr::V6(Ipv6Addr::from_bits(a))),
        (0u32..4).prop_map(|a| IpAddr::V4(Ipv4Addr::from_bits(0x0a00_0000 | a))),
        (0u32..4).prop_map(|a| IpAddr::V6(Ipv4Addr::from_bits(0x0a00_0000 | a).to_ipv6_mapped())),
    ]
}

proptest! {
    /// `FlowKey::rank` orders ends as `(IpAddr, u16)`'s `Ord` does.
    #[test]
    fn rank_orders_ends_as_ip_addr_does(
        x in (ip(), prop_oneof![Just(443u16), any::<u16>()]),
        y in (ip(), prop_oneof![Just(443u16), any::<u16>()]),
    ) {
        prop_assert_eq!(FlowKey::rank(x).cmp(&FlowKey::rank(y)), x.cmp(&y));
    }
}

fn key(a: &str, pa: u16, b: &str, pb: u16) -> FlowKey {
    FlowKey {
        a: a.parse().unwrap(),
        b: b.parse().unwrap(),
        pa,
        pb,
    }
}

#[test]
fn tombstones_tell_every_part_of_the_four_tuple_apart() {
    let mut t = Tombstones::default();
    assert!(t.is_empty());
    let at = Timestamp::from_nanos(1_000);
    let v4 = key("10.0.0.1", 40000, "10.0.0.2", 443);
    let v6 = key("fd00::1", 40000, "fd00::2", 443);
    t.insert(v4, at);
    t.insert(v6, at);
    assert_eq!(t.get(&v4), Some(at));
    assert_eq!(t.get(&v6), Some(at));
    for other in [
        key("10.0.0.1", 40001, "10.0.0.2", 443),
        key("10.0.0.1", 40000, "10.0.0.2", 444),
        key("10.0.0.3", 40000, "10.0.0.2", 443),
        key("10.0.0.1", 40000, "10.0.0.4", 443),
        // the ports swapped pack differently
        key("10.0.0.1", 443, "10.0.0.2", 40000),
        key("fd00::1", 40000, "fd00::3", 443),
        // an IPv4-mapped address is not the IPv4 one
        key("::ffff:10.0.0.1", 40000, "::ffff:10.0.0.2", 443),
    ] {
        assert_eq!(t.get(&other), None, "{other:?}");
    }
    t.purge(at + TOMBSTONE - Duration::from_nanos(1));
    assert_eq!(t.get(&v4), Some(at));
    t.purge(at + TOMBSTONE);
    assert!(t.is_empty());
}
