//! The population detectors on crowds whose cause is known by
//! construction: each one names its cause, and says nothing where the
//! signs have another explanation (path loss, a server that never grants
//! an option, an RTT that rose with the load). Real captures of each cause
//! are in the lab's storm tests (`crates/rttlens/tests/bench.rs`).

use super::sample::{SynAckShape, SynSample};
use super::*;

/// A TLS connection to `server` starting at `start_s` with a connect of
/// one RTT, the server's handshake processing `hs_ms`, a client delay
/// `client_ms` and a TTFB of one RTT.
fn conn(start_s: f64, rtt: f64, hs_ms: f64, client_ms: f64) -> Sample {
    let mut s = Sample {
        start_s,
        rtt_ms: Some(rtt),
        data_segments: [4, 4],
        retransmissions: [0, 0],
        hello_frames: Some((3, 4)),
        client_wait_frames: Some((2, 3)),
        ..Sample::default()
    };
    let tls = rtt + hs_ms + client_ms;
    let put =
        |s: &mut Sample, p: PhaseId, ms: f64| s.phases[p.index()] = Some((ms, Some(ms / rtt)));
    put(&mut s, PhaseId::Connect, rtt);
    put(&mut s, PhaseId::Tls, tls);
    put(&mut s, PhaseId::ServerHandshake, hs_ms);
    put(&mut s, PhaseId::ClientDelay, client_ms);
    put(&mut s, PhaseId::Ttfb, rtt);
    s.first_byte_ms = Some(rtt + tls + rtt);
    s.handshake_end_s = start_s + (rtt + tls) / 1000.0;
    s.syn = Some(SynSample {
        syn_frame: 1,
        syn_count: 1,
        syn_ack_frame: Some(2),
        ack_ignored: None,
        shape: None,
    });
    s
}

fn run(samples: &[(Sample, &str)]) -> PopulationReport {
    let mut p = Population::new(None);
    for (i, (s, server)) in samples.iter().enumerate() {
        let c = Conn {
            index: i as u64,
            client: "10.0.0.1:40000",
            server,
            sni: None,
            tls: true,
            window_ms: 0.0,
        };
        p.add(&c, s);
    }
    p.finish()
}

fn ids(r: &PopulationReport) -> Vec<&'static str> {
    r.population_findings.iter().map(|f| f.id).collect()
}

const SERVER: &str = "10.0.0.2:443";

/// 20 s of arrivals whose rate swings between 50/s and 500/s each second;
/// the handshake processing at `hs(load)` ms, the RTT at `rtt(load)`.
fn storm(hs: impl Fn(f64) -> f64, rtt: impl Fn(f64) -> f64) -> Vec<(Sample, &'static str)> {
    let mut v = Vec::new();
    for sec in 0..20 {
        let rate = if sec % 2 == 0 { 50 } else { 500 };
        let load = f64::from(rate);
        for k in 0..rate {
            let t = f64::from(sec) + f64::from(k) / load;
            v.push((conn(t, rtt(load), hs(load), 0.2), SERVER));
        }
    }
    v
}

#[test]
fn handshake_time_that_rises_with_load_is_server_contention() {
    let r = run(&storm(|load| 1.0 + load / 10.0, |_| 10.0));
    assert_eq!(ids(&r), ["server-handshake-contention"], "{r:#?}");
    let f = &r.population_findings[0];
    assert_eq!(f.confidence.level, crate::detect::finding::Level::High);
    assert!(f.cost.ms > 0.0 && f.cost.connections > 0, "{f:?}");
    // intervals and connections both prove it
    assert!(f.evidence.iter().any(|e| e.interval.is_some()));
    assert!(f.evidence.iter().any(|e| e.frames == [3, 4]));
    let ot = r.over_time.as_ref().expect("over time");
    assert!(ot
        .intervals
        .iter()
        .any(|i| i.findings.contains(&"server-handshake-contention")));
    // most handshakes were slow (the loaded seconds hold most arrivals):
    // the cost is over the quick ones, for the slow ones
    assert_eq!(f.cost.connections, 5000, "{f:?}");
    assert!((f.cost.per_connection_ms - 45.0).abs() < 1.0, "{f:?}");
}

#[test]
fn flat_handshake_time_or_an_rtt_that_rises_with_it_is_not_contention() {
    assert!(ids(&run(&storm(|_| 2.0, |_| 10.0))).is_empty());
    // the RTT rose with the load as well: the path, not the server
    let r = run(&storm(|load| 1.0 + load / 10.0, |load| 10.0 + load / 10.0));
    assert!(
        !ids(&r).contains(&"server-handshake-contention"),
        "{:?}",
        ids(&r)
    );
}

/// 10 s at 100/s; in seconds 3 and 7, every other SYN is sent again and
/// answered 1 s later; the server's data is lost at `server_loss`.
fn backlog(server_loss_per_100: u64, ack_ignored: bool) -> Vec<(Sample, &'static str)> {
    let mut v = Vec::new();
    for i in 0..1000u32 {
        let t = f64::from(i) / 100.0;
        let mut s = conn(t, 10.0, 1.0, 0.2);
        s.data_segments = [4, 100];
        s.retransmissions = [0, server_loss_per_100];
        let burst = (t as u32 == 3 || t as u32 == 7) && i % 2 == 0;
        if let (true, Some(syn)) = (burst, s.syn.as_mut()) {
            if ack_ignored {
                syn.ack_ignored = Some((3, 9, 1000.0));
            } else {
                syn.syn_count = 2;
                s.phases[PhaseId::Connect.index()] = Some((1010.0, Some(101.0)));
            }
        }
        v.push((s, SERVER));
    }
    v
}

#[test]
fn syns_lost_in_bursts_beside_prompt_ones_are_a_full_backlog() {
    for ack in [false, true] {
        let r = run(&backlog(0, ack));
        assert!(ids(&r).contains(&"accept-queue-overflow"), "{r:#?}");
        let f = r
            .population_findings
            .iter()
            .find(|f| f.id == "accept-queue-overflow")
            .expect("finding");
        assert_eq!(f.cost.connections, 100);
        assert!((f.cost.ms - 100.0 * 1000.0).abs() < 1.0, "{:?}", f.cost);
        let ot = r.over_time.as_ref().expect("over time");
        let marked: Vec<f64> = ot
            .intervals
            .iter()
            .filter(|i| i.findings.contains(&"accept-queue-overflow"))
            .map(|i| i.start_s)
            .collect();
        assert!(marked.contains(&3.0) && marked.contains(&7.0), "{marked:?}");
    }
}

#[test]
fn syns_lost_as_often_as_the_servers_data_are_path_loss() {
    // 10 % of the server's data segments retransmitted: SYN losses of the
    // same order are the path's
    for ack in [false, true] {
        let r = run(&backlog(10, ack));
        assert!(!ids(&r).contains(&"accept-queue-overflow"), "{:?}", ids(&r));
    }
}

fn with_shape(mut s: Sample, granted: bool) -> Sample {
    if let Some(syn) = s.syn.as_mut() {
        syn.shape = Some(SynAckShape {
            offered_without_ts: true,
            granted,
        });
    }
    s
}

#[test]
fn syn_acks_that_drop_what_the_same_server_grants_are_cookies() {
    let mut v = Vec::new();
    for i in 0..100u32 {
        let t = f64::from(i) / 10.0;
        // seconds 4–5 answered from cookies
        v.push((
            with_shape(conn(t, 10.0, 1.0, 0.2), !(4.0..5.0).contains(&t)),
            SERVER,
        ));
        // another server never grants them: not its backlog
        v.push((with_shape(conn(t, 10.0, 1.0, 0.2), false), "10.0.0.3:443"));
    }
    let r = run(&v);
    assert_eq!(ids(&r), ["syn-flood-cookies"], "{r:#?}");
    let f = &r.population_findings[0];
    // the title names the server that granted them elsewhere, alone
    let names = f.facts.list("server_names");
    assert_eq!(names.len(), 1, "{:?}", f.facts);
    assert_eq!(names[0].as_str(), Some(SERVER), "{:?}", f.facts);
    assert_eq!(f.facts.u64("servers"), 1, "{:?}", f.facts);
    assert_eq!(f.cost.connections, 110);
    // only the server that never grants them: nothing
    let v: Vec<_> = v.into_iter().filter(|(_, s)| *s != SERVER).collect();
    assert!(ids(&run(&v)).is_empty());
}

#[test]
fn a_tail_made_of_the_clients_own_delay_is_a_client_stall() {
    let mut v = Vec::new();
    for i in 0..1000u32 {
        let t = f64::from(i) / 100.0;
        let client = if i % 10 == 0 { 80.0 } else { 0.3 };
        v.push((conn(t, 10.0, 1.0, client), SERVER));
    }
    let r = run(&v);
    assert_eq!(ids(&r), ["client-side-stall"], "{r:#?}");
    assert_eq!(r.population_findings[0].cost.connections, 100);
}

#[test]
fn an_rtt_that_rises_for_every_connection_at_once_is_the_path() {
    let mut v = Vec::new();
    for i in 0..1000u32 {
        let t = f64::from(i) / 100.0;
        let rtt = if (6.0..8.0).contains(&t) { 40.0 } else { 10.0 };
        v.push((conn(t, rtt, 1.0, 0.2), SERVER));
    }
    let r = run(&v);
    assert_eq!(ids(&r), ["path-degradation"], "{r:#?}");
    let f = &r.population_findings[0];
    assert_eq!(f.cost.connections, 200);
    // each waited 3 RTTs at 40 ms against 10: 90 ms more
    assert!(
        (f.cost.per_connection_ms - 90.0).abs() < 1.0,
        "{:?}",
        f.cost
    );
    // a steady path: nothing
    let v: Vec<_> = (0..1000u32)
        .map(|i| (conn(f64::from(i) / 100.0, 10.0, 1.0, 0.2), SERVER))
        .collect();
    assert!(ids(&run(&v)).is_empty());
}

#[test]
fn a_small_crowd_says_nothing() {
    let v: Vec<_> = (0..10u32)
        .map(|i| {
            (
                conn(f64::from(i), 10.0, 1.0 + f64::from(i) * 10.0, 0.2),
                SERVER,
            )
        })
        .collect();
    let r = run(&v);
    assert!(r.population_findings.is_empty());
    assert_eq!(r.phases.len(), 5, "{:?}", r.phases);
}

#[test]
fn groups_split_off_the_capture_when_a_second_server_comes() {
    let mut v = Vec::new();
    for i in 0..10u32 {
        v.push((conn(f64::from(i), 10.0, 1.0, 0.2), SERVER));
    }
    for i in 0..5u32 {
        v.push((conn(f64::from(i), 20.0, 1.0, 0.2), "10.0.0.3:443"));
    }
    for i in 0..5u32 {
        v.push((conn(f64::from(i), 10.0, 1.0, 0.2), SERVER));
    }
    let r = run(&v);
    let g: Vec<(&str, u64)> = r
        .phases_by_server
        .iter()
        .map(|g| (g.key.as_str(), g.connections))
        .collect();
    assert_eq!(g, [(SERVER, 15), ("10.0.0.3:443", 5)]);
    let connect = |k: usize| {
        r.phases_by_server[k]
            .phases
            .iter()
            .find(|p| p.phase == PhaseId::Connect)
            .map(|p| (p.ms.count, p.ms.p50))
    };
    assert_eq!(connect(0).map(|c| c.0), Some(15));
    assert!(connect(0).is_some_and(|c| (c.1 - 10.0).abs() < 0.1));
    assert!(connect(1).is_some_and(|c| c.0 == 5 && (c.1 - 20.0).abs() < 0.2));
    // one server: no groups (the capture's figures are its own)
    assert!(run(&v[..10]).phases_by_server.is_empty());
}

/// A burst of `n` TLS connections whose ClientHellos come 0.5 ms apart at
/// 1.0 s; the i-th served leaves its ServerHello at `served(i)` ms after
/// the burst and its connection's RTT is `rtt(i)`. The handshakes are
/// served in the order they came.
fn burst(
    n: u32,
    served: impl Fn(u32) -> f64,
    rtt: impl Fn(u32) -> f64,
) -> Vec<(Sample, &'static str)> {
    (0..n)
        .map(|i| {
            let ch = 1.0 + f64::from(i) * 0.0005;
            let sh = 1.0 + served(i) / 1000.0;
            let wait = (sh - ch) * 1000.0 - rtt(i);
            let mut s = conn(ch - rtt(i) / 1000.0, rtt(i), wait, 0.2);
            s.hello_s = Some((ch, sh));
            s.hello_frames = Some((u64::from(i) + 100, u64::from(i) + 200));
            (s, SERVER)
        })
        .collect()
}

/// A fixed jitter within ±2 ms for each `i`, without a period.
fn jitter(i: u32) -> f64 {
    let x = u64::from(i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((x >> 40) % 4001) as f64 / 1000.0 - 2.0
}

fn burst_finding(r: &PopulationReport) -> Option<&PopFinding> {
    r.population_findings
        .iter()
        .find(|f| f.id == "server-handshake-contention" && f.facts.str("shape") == "burst")
}

#[test]
fn a_burst_served_one_at_a_time_is_server_contention() {
    // 30 handshakes, one every 15 ms, after a 20 ms RTT
    let r = run(&burst(
        30,
        |i| 20.0 + 15.0 * f64::from(i + 1) + jitter(i),
        |_| 20.0,
    ));
    let f = burst_finding(&r).unwrap_or_else(|| panic!("{r:#?}"));
    assert_eq!(f.facts.u64("handshakes"), 30);
    assert_eq!(f.facts.u64("at_a_time"), 1);
    assert!((f.facts.f64("every_ms") - 15.0).abs() < 1.0, "{f:?}");
    // the first served, the middle one and the last, with their frames
    let places: Vec<u64> = f
        .evidence
        .iter()
        .map(|e| e.fact.args.u64("place"))
        .collect();
    assert_eq!(places, [1, 16, 30]);
    assert!(f.evidence.iter().all(|e| e.frames.len() == 2));
    // each wait beyond the first's: Σ 15 ms × place, within the jitter
    let want: f64 = (0..30).map(|i| 15.0 * f64::from(i)).sum();
    assert!(
        (f.cost.ms - want).abs() < 0.05 * want,
        "{:?} against {want}",
        f.cost
    );
    assert_eq!(f.confidence.level, crate::detect::finding::Level::High);
}

#[test]
fn a_burst_served_two_at_a_time_names_two_workers() {
    // two workers of 30 ms each, out of step by 11 ms
    let served = |i: u32| 20.0 + 30.0 * f64::from(i / 2 + 1) + if i % 2 == 1 { 11.0 } else { 0.0 };
    let r = run(&burst(24, served, |_| 20.0));
    let f = burst_finding(&r).unwrap_or_else(|| panic!("{r:#?}"));
    assert_eq!(f.facts.u64("at_a_time"), 2, "{f:?}");
    assert!((f.facts.f64("handshake_ms") - 30.0).abs() < 1.0, "{f:?}");
}

#[test]
fn slow_handshakes_in_parallel_or_a_queue_on_the_path_are_not_a_burst_queue() {
    // each handshake slow by its own random time (a lookup, not the CPU):
    // they leave at random, not at a steady rate
    let mut x: u64 = 12345;
    let waits: Vec<f64> = (0..30)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            50.0 + (x >> 33) as f64 % 450.0
        })
        .collect();
    let r = run(&burst(30, |i| 20.0 + waits[i as usize], |_| 20.0));
    assert!(burst_finding(&r).is_none(), "{r:#?}");
    // served at a steady rate, but the RTT grew with the place in the
    // queue: the path's queue, not the server's
    let r = run(&burst(
        30,
        |i| 20.0 + 15.0 * f64::from(i + 1),
        |i| 20.0 + 10.0 * f64::from(i),
    ));
    assert!(burst_finding(&r).is_none(), "{r:#?}");
    // all answered together after the same wait: a slow server, no queue
    let r = run(&burst(30, |i| 220.0 + jitter(i), |_| 20.0));
    assert!(burst_finding(&r).is_none(), "{r:#?}");
}
