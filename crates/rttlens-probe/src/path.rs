//! `--path`: the path toward the target, hop by hop (issue 44), after the
//! probe's connections are done (so its probes are in no timing and in
//! none of the self-capture).
//!
//! The tracing is trippy-core's (docs/design.md §7): TCP SYNs to the
//! target's port with rising TTL, as `mtr --tcp` sends them (a kernel
//! socket per probe with `IP_TTL` set; the target answers with its SYN-ACK
//! or a reset), or UDP datagrams for `--http3` (to the traceroute ports
//! from 33434 up: a listening QUIC server drops a stray datagram to its own
//! port without a word, while a closed port answers ICMP port
//! unreachable); the ICMP time-exceeded answers of the routers are read on
//! a raw socket, which needs `CAP_NET_RAW`. One round a second at most
//! (routers rate-limit their ICMP errors, mtr's default interval).
//!
//! Ours are only what trippy-core leaves to its user: the per-hop
//! statistics over the rounds (trippy's own `Hop` keeps a mean and a
//! deviation, not the percentiles the rest of the probe reports), which
//! hop steps up, the comparison with the connection's RTT, the bounded
//! reverse DNS, and a check for the capability before the tracer is built
//! (so the probe can say in one line what it could not do). trippy-core
//! notices the target's TCP answer by polling its sockets between waits
//! on the ICMP socket of [`READ_TIMEOUT`]: the target hop's RTT may read
//! up to that much long (the routers' ICMP answers are read as they come).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rttlens_core::base::cost::round3;
use rttlens_probe_model::{PathHop, PathReport, PathStep, PathVersus};
use trippy_core::{Builder, PortDirection, ProbeStatus, Protocol};

/// How long the tracer waits on its ICMP socket between polls of its TCP
/// probes (trippy-core's `read_timeout`; the smallest it takes, in ms).
pub const READ_TIMEOUT: Duration = Duration::from_millis(1);

/// The highest TTL tried (traceroute's default).
pub const MAX_TTL: u8 = 30;

/// How long the reverse lookups of all hops may take together.
pub const DNS_BOUND: Duration = Duration::from_millis(1500);

/// What to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathOptions {
    /// Rounds (`--path-rounds`, at least 1).
    pub rounds: u32,
    /// UDP probes (`--http3`) instead of TCP SYNs.
    pub udp: bool,
    /// Look the hops' names up (reverse DNS, within [`DNS_BOUND`]).
    pub names: bool,
}

impl Default for PathOptions {
    fn default() -> Self {
        PathOptions {
            rounds: 10,
            udp: false,
            names: true,
        }
    }
}

/// The connection's own RTT, to compare the last hop with: ms and where it
/// comes from (an attempt's `rtt_ms`, `rtt_source`).
pub type ConnectionRtt = Option<(f64, &'static str)>;

/// Trace toward `target` (the connection's remote address and port).
/// Never fails: what could not be done is the report's `status` and
/// `note`.
pub fn trace(target: SocketAddr, opts: PathOptions, conn: ConnectionRtt) -> PathReport {
    if let Err(why) = raw_icmp_permitted(target.ip()) {
        let mut report = not_traced(target, opts, &why);
        report.status = "not-permitted";
        return report;
    }
    let mut report = not_traced(target, opts, "");
    report.status = "traced";
    report.note = None;
    match run_rounds(target, opts) {
        Ok((rounds, samples)) => {
            report.rounds = rounds;
            report.hops = hops(&samples, target.ip());
            if opts.names {
                names(&mut report.hops);
            }
            report.step = step(&report.hops);
            report.versus_connection = versus(&report.hops, conn);
        }
        Err(e) => {
            report.status = "failed";
            report.note = Some(format!("path not traced: {e}"));
        }
    }
    report
}

/// A report with no hops: `status` `failed`, `note` saying why.
pub fn not_traced(target: SocketAddr, opts: PathOptions, why: &str) -> PathReport {
    PathReport {
        status: "failed",
        note: Some(why.to_string()),
        protocol: if opts.udp { "udp" } else { "tcp" },
        target: target.ip().to_string(),
        port: (!opts.udp).then_some(target.port()),
        rounds: 0,
        hops: Vec::new(),
        step: None,
        versus_connection: None,
    }
}

/// Whether this process may open the raw ICMP socket the tracer reads
/// its answers on; `Err` is the one line the report shows.
///
/// # Errors
/// The socket was refused (no `CAP_NET_RAW`), in words.
pub fn raw_icmp_permitted(target: IpAddr) -> Result<(), String> {
    use socket2::{Domain, Protocol as P, Socket, Type};
    let (domain, proto) = match target {
        IpAddr::V4(_) => (Domain::IPV4, P::ICMPV4),
        IpAddr::V6(_) => (Domain::IPV6, P::ICMPV6),
    };
    match Socket::new(domain, Type::RAW, Some(proto)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(format!(
            "path not traced: the ICMP answers need a raw socket, which needs CAP_NET_RAW ({e})"
        )),
        Err(e) => Err(format!("path not traced: raw ICMP socket: {e}")),
    }
}

/// One probe's outcome: the TTL, then (when answered) who answered and
/// the RTT in ms.
type Sample = (u8, Option<(IpAddr, f64)>);

/// Run the tracer for `opts.rounds` rounds; the rounds completed and every
/// probe sent.
fn run_rounds(
    target: SocketAddr,
    opts: PathOptions,
) -> Result<(u32, Vec<Sample>), trippy_core::Error> {
    let rounds = opts.rounds.max(1);
    let (protocol, ports) = if opts.udp {
        // trippy's UDP default: a fixed source port, the destination from
        // 33434 up (the sequence)
        (
            Protocol::Udp,
            PortDirection::new_fixed_src(udp_source_port()),
        )
    } else {
        (Protocol::Tcp, PortDirection::new_fixed_dest(target.port()))
    };
    let tracer = Builder::new(target.ip())
        .protocol(protocol)
        .port_direction(ports)
        .max_rounds(Some(rounds as usize))
        .max_ttl(MAX_TTL)
        .read_timeout(READ_TIMEOUT)
        .build()?;
    let samples = RefCell::new(Vec::new());
    let done = RefCell::new(0u32);
    tracer.run_with(|round| {
        *done.borrow_mut() += 1;
        let mut s = samples.borrow_mut();
        for p in round.probes {
            match p {
                ProbeStatus::Complete(c) => {
                    let ms = c
                        .received
                        .duration_since(c.sent)
                        .unwrap_or_default()
                        .as_secs_f64()
                        * 1e3;
                    s.push((c.ttl.0, Some((c.host, ms))));
                }
                ProbeStatus::Awaited(a) => s.push((a.ttl.0, None)),
                ProbeStatus::Failed(f) => s.push((f.ttl.0, None)),
                ProbeStatus::NotSent | ProbeStatus::Skipped => {}
            }
        }
    })?;
    Ok((done.into_inner(), samples.into_inner()))
}

/// A source port for the UDP probes: this process's, above the ephemeral
/// range's usual start, so two probes at once rarely share one.
fn udp_source_port() -> u16 {
    40_000 + (std::process::id() % 20_000) as u16
}

/// The hops from TTL 1 to the target's (the smallest TTL the target
/// answered at), or to the highest that answered at all.
fn hops(samples: &[Sample], target: IpAddr) -> Vec<PathHop> {
    let target_ttl = samples
        .iter()
        .filter(|(_, a)| a.is_some_and(|(h, _)| h == target))
        .map(|(t, _)| *t)
        .min();
    let last = target_ttl.or_else(|| {
        samples
            .iter()
            .filter(|(_, a)| a.is_some())
            .map(|(t, _)| *t)
            .max()
    });
    let Some(last) = last else {
        return Vec::new();
    };
    let mut by_ttl: BTreeMap<u8, Vec<Option<(IpAddr, f64)>>> = BTreeMap::new();
    for (t, a) in samples.iter().filter(|(t, _)| *t <= last) {
        by_ttl.entry(*t).or_default().push(*a);
    }
    (1..=last)
        .map(|ttl| {
            let probes = by_ttl.remove(&ttl).unwrap_or_default();
            hop(ttl, &probes, target_ttl == Some(ttl))
        })
        .collect()
}

/// One TTL's probes summed up.
fn hop(ttl: u8, probes: &[Option<(IpAddr, f64)>], target: bool) -> PathHop {
    let mut rtts: Vec<f64> = probes.iter().flatten().map(|(_, ms)| *ms).collect();
    rtts.sort_by(f64::total_cmp);
    let mut counts: HashMap<IpAddr, usize> = HashMap::new();
    for (a, _) in probes.iter().flatten() {
        *counts.entry(*a).or_default() += 1;
    }
    let mut addrs: Vec<(IpAddr, usize)> = counts.into_iter().collect();
    addrs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let sent = probes.len() as u32;
    let received = rtts.len() as u32;
    PathHop {
        ttl,
        addr: addrs.first().map(|(a, _)| a.to_string()),
        other_addrs: addrs.iter().skip(1).map(|(a, _)| a.to_string()).collect(),
        name: None,
        target,
        sent,
        received,
        loss_pct: if sent == 0 {
            100.0
        } else {
            round3(100.0 * f64::from(sent - received) / f64::from(sent))
        },
        min_ms: rtts.first().map(|v| round3(*v)),
        p50_ms: rank(&rtts, 0.5),
        p90_ms: rank(&rtts, 0.9),
        max_ms: rtts.last().map(|v| round3(*v)),
    }
}

/// The nearest-rank `q` quantile of sorted `v` (ms, rounded to µs).
fn rank(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    Some(round3(v[i]))
}

/// The hop whose median RTT rises the most over the answering hop before
/// it (the client itself, 0 ms, before the first).
fn step(hops: &[PathHop]) -> Option<PathStep> {
    let mut prev = 0.0;
    let mut best: Option<PathStep> = None;
    for h in hops {
        let (Some(p50), Some(addr)) = (h.p50_ms, &h.addr) else {
            continue;
        };
        let s = PathStep {
            ttl: h.ttl,
            addr: addr.clone(),
            name: h.name.clone(),
            from_ms: prev,
            to_ms: p50,
            step_ms: round3(p50 - prev),
        };
        if best.as_ref().is_none_or(|b| s.step_ms > b.step_ms) {
            best = Some(s);
        }
        prev = p50;
    }
    best
}

/// The last answering hop's median against the connection's RTT.
fn versus(hops: &[PathHop], conn: ConnectionRtt) -> Option<PathVersus> {
    let (rtt, source) = conn?;
    let last = hops.iter().rev().find(|h| h.p50_ms.is_some())?;
    let ms = last.p50_ms?;
    Some(PathVersus {
        last_hop_ms: ms,
        last_hop_is_target: last.target,
        connection_rtt_ms: round3(rtt),
        connection_rtt_source: source,
        diff_ms: round3(ms - rtt),
    })
}

/// Each hop's reverse-DNS name, looked up on threads of their own; names
/// not back within [`DNS_BOUND`] stay `null` (their threads finish alone).
/// The lookups are the system resolver's (getnameinfo, through
/// dns-lookup): the names the user's other tools show.
fn names(hops: &mut [PathHop]) {
    let addrs: Vec<IpAddr> = {
        let mut v: Vec<IpAddr> = hops
            .iter()
            .filter_map(|h| h.addr.as_deref()?.parse().ok())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let (tx, rx) = mpsc::channel();
    for a in &addrs {
        let (tx, a) = (tx.clone(), *a);
        std::thread::spawn(move || {
            let name = dns_lookup::lookup_addr(&a).ok();
            let _ = tx.send((a, name));
        });
    }
    drop(tx);
    let deadline = Instant::now() + DNS_BOUND;
    let mut found: HashMap<IpAddr, String> = HashMap::new();
    while found.len() < addrs.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((a, Some(n))) if n.parse::<IpAddr>().is_err() => {
                found.insert(a, n);
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    for h in hops {
        h.name = h
            .addr
            .as_deref()
            .and_then(|a| a.parse().ok())
            .and_then(|a: IpAddr| found.get(&a).cloned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn hops_steps_and_versus() {
        let t = ip("10.0.2.2");
        let (r1, r2) = (ip("10.0.1.2"), ip("10.0.0.2"));
        let mut samples = Vec::new();
        for i in 0..10 {
            let j = f64::from(i) * 0.01;
            samples.push((1, Some((r1, 0.1 + j))));
            samples.push((2, if i == 3 { None } else { Some((r2, 20.0 + j)) }));
            samples.push((3, Some((t, 20.5 + j))));
            // beyond the target: not a hop
            samples.push((4, Some((t, 20.6))));
        }
        let hs = hops(&samples, t);
        assert_eq!(hs.len(), 3);
        assert_eq!(hs[1].loss_pct, 10.0);
        assert_eq!(hs[1].received, 9);
        assert!(hs[2].target && !hs[1].target);
        assert_eq!(hs[0].min_ms, Some(0.1));
        assert_eq!(hs[0].p50_ms, Some(0.14));
        assert_eq!(hs[0].p90_ms, Some(0.18));
        assert_eq!(hs[0].max_ms, Some(0.19));
        let s = step(&hs).unwrap();
        assert_eq!((s.ttl, s.addr.as_str()), (2, "10.0.0.2"));
        let v = versus(&hs, Some((20.3, "capture"))).unwrap();
        assert!(v.last_hop_is_target);
        assert_eq!(v.diff_ms, round3(hs[2].p50_ms.unwrap() - 20.3));
    }

    #[test]
    fn silent_hops_are_kept() {
        let t = ip("192.0.2.1");
        let samples = vec![(1, None), (2, Some((ip("198.51.100.1"), 5.0))), (1, None)];
        let hs = hops(&samples, t);
        assert_eq!(hs.len(), 2);
        assert_eq!(hs[0].addr, None);
        assert_eq!(hs[0].loss_pct, 100.0);
        assert!(!hs[1].target);
        assert!(hops(&[(1, None)], t).is_empty());
    }
}
