//! Every lab scenario at RTT 20 ms: its expected findings appear and its
//! forbidden ones do not. Needs root, /dev/net/tun and `nginx-light curl
//! openssl tcpdump`; FAILS (never skips) naming what is missing. The
//! scenarios run one after another in a single test (a 2-core machine keeps
//! its timing honest that way) and every failure is reported at the end.

use std::time::{Duration, Instant};

use rttlens_lab::catalogue;
use rttlens_lab::scenario;

/// Scenarios whose expectation the engine does not meet yet: run and
/// reported, not asserted. `no-wscale`: Linux keeps the flight at
/// rwnd − 2 MSS (62639 B against 65535 B, delayed-ACK granularity) while the
/// round classifier calls a round `rwnd` only at ≥ rwnd − 1 MSS, so the
/// rounds read as `sndbuf` and `sender-window-cap` is reported instead of
/// `receive-window-limit` (always at 40 ms, about one run in four at 20 ms).
/// From the server (`no-wscale-server`) the flight is exactly 65535 B and
/// the finding appears: the client and middle vantages see the flight 2 MSS
/// short of what the sender holds.
const KNOWN_GAPS: &[&str] = &[];

#[test]
fn every_scenario_holds_at_20ms() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("lab scenario tests need root, /dev/net/tun and iproute2: {e}");
    }
    for (c, p) in scenario::PROGRAMS {
        if let Err(e) = rttlens_lab_net::require_command(c, p) {
            panic!("{e}");
        }
    }
    // the quic-go peer of the QUIC scenarios: Go and the module proxy
    if let Err(e) = rttlens_lab::go_server::build_quic_peer() {
        panic!("the quic-go scenarios need Go 1.26 and the Go module proxy (or a warm module cache: scripts/deps lab): {e}");
    }
    let started = Instant::now();
    let mut failures = Vec::new();
    // the cost of the `zero-rtt` finding per scenario: accepted saves the
    // round trip (cost 0), rejected pays it (cost ≈ 1 RTT)
    let mut zero_rtt_cost = Vec::new();
    // outcomes one finding id covers: the title must name the right one
    let outcome_words = [
        ("resumption", "resumed"),
        ("resumption-declined", "declined"),
        ("zero-rtt", "accepted"),
        ("zero-rtt-rejected", "rejected"),
        ("probe-sequence", "accepted"),
        ("tfo", "accepted"),
        ("tfo-refused", "refused"),
    ];
    for s in catalogue() {
        match scenario::run_scenario(s, Duration::from_millis(20), None) {
            Ok(o) if o.passed() => {
                assert!(!o.client_capture.exists(), "capture removed without keep");
                if let Some(f) = o.found.iter().find(|f| f.id == Some("zero-rtt")) {
                    zero_rtt_cost.push((s.name, f.cost_rtts.expect("an RTT on a full capture")));
                }
                if let Some((_, word)) = outcome_words.iter().find(|(n, _)| *n == s.name) {
                    let last = o.found.last().map(|f| f.title.as_str()).unwrap_or("");
                    if !last.contains(word) {
                        failures.push(format!("{}: finding says {last:?}, not {word:?}", s.name));
                    }
                }
            }
            Ok(o) if KNOWN_GAPS.contains(&s.name) => {
                eprintln!("known gap {}: findings {:?}", s.name, o.findings);
            }
            Ok(o) => failures.push(format!(
                "{}: expected {:?}, forbidden seen {:?}, findings {:?}",
                s.name,
                o.found
                    .iter()
                    .map(|f| (f.expect, f.found))
                    .collect::<Vec<_>>(),
                o.unexpected_forbidden,
                o.findings
            )),
            Err(e) => failures.push(format!("{}: {e}", s.name)),
        }
    }
    let names = rttlens_lab_net::netns::list().unwrap_or_default();
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with(&format!("rttlens-{}-", std::process::id()))),
        "namespaces left behind: {names:?}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for (name, rtts) in &zero_rtt_cost {
        match *name {
            "zero-rtt" | "probe-sequence" => {
                assert_eq!(*rtts, 0.0, "{name}: accepted 0-RTT costs nothing")
            }
            "zero-rtt-rejected" => assert!(
                (0.8..1.3).contains(rtts),
                "rejected 0-RTT costs the round trip, not {rtts} RTT"
            ),
            _ => {}
        }
    }
    assert_eq!(zero_rtt_cost.len(), 3, "{zero_rtt_cost:?}");
    // a figure, not a check: the catalogue's run time
    eprintln!(
        "catalogue at 20 ms: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn catalogue_is_well_formed() {
    let all = catalogue();
    for (i, s) in all.iter().enumerate() {
        assert!(!s.about.is_empty(), "{}", s.name);
        assert!(
            !s.expect.is_empty() || !s.forbid.is_empty(),
            "{} checks nothing",
            s.name
        );
        assert!(
            all[..i].iter().all(|o| o.name != s.name),
            "{} twice",
            s.name
        );
        assert!(rttlens_lab::find(s.name).is_some());
    }
}
