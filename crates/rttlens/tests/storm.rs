//! Storms on real servers in the lab (root), captured at the client end of
//! the link (`rttlens bench --lab … --capture`): `rttlens analyze` names
//! each storm's cause from the capture alone, the paced control names
//! none, and the capture's phase percentiles agree with bench's own HDR
//! percentiles for the same connections. The server's kernel counters
//! (`lab.server_tcp` in bench's JSON: ListenOverflows, SyncookiesSent)
//! say what really happened, so a storm that did not reproduce its cause
//! on a slow machine fails with that said, not with a wrong finding.

mod common;

use std::process::Command;

use common::{analyze_ok, bin, scratch};
use serde_json::Value;

/// Fail with a clear message when the lab cannot run here.
fn require_lab() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("storm tests need root, /dev/net/tun and iproute2: {e}");
    }
    for (cmd, pkg) in [("nginx", "nginx-light"), ("openssl", "openssl")] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {cmd}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(found, "storm tests need {cmd} (apt-get install {pkg})");
    }
    if let Err(e) = rttlens_lab::go_server::find_go() {
        panic!("storm tests need Go for the crypto/tls server: {e}");
    }
}

/// One storm: bench's JSON and `analyze --format json` of its capture.
fn storm(name: &str, args: &[&str]) -> (Value, Value) {
    let cap = scratch(&format!("storm-{name}.pcapng"));
    let out = bin()
        .arg("bench")
        .args(args)
        .args(["--rtt", "10ms", "--mix", "full=1", "--request"])
        .args(["--timeout", "10s", "--no-progress", "--format", "json"])
        .arg("--capture")
        .arg(&cap)
        .output()
        .expect("running rttlens bench");
    assert!(
        out.status.success(),
        "{name}: rttlens bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bench: Value = serde_json::from_slice(&out.stdout).expect("bench JSON");
    let doc = analyze_ok(["--format".as_ref(), "json".as_ref(), cap.as_os_str()]);
    let _ = std::fs::remove_file(&cap);
    (bench, serde_json::from_slice(&doc).expect("analyze JSON"))
}

fn ids(doc: &Value) -> Vec<String> {
    doc["capture"]["population_findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["id"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Each population finding's id and title, one per line, for a failure
/// that says what was named and why.
fn titles(doc: &Value) -> String {
    doc["capture"]["population_findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| format!("{}: {}", f["id"], f["title"]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn counter(bench: &Value, name: &str) -> u64 {
    bench["lab"]["server_tcp"][name].as_u64().unwrap_or(0)
}

/// Nearest-rank percentile of `v` (sorted).
fn pct(v: &[f64], q: f64) -> f64 {
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// The capture's `phase` (ladder name) in ms for bench's measured
/// connections: the last `n` to begin of those that got a response (a
/// `request` phase). bench's percentiles count its successes only, and
/// before them come its first check and warm-up. The connections that
/// failed are left out by their missing response, not by their place: in
/// an overloaded storm they interleave with the successes, and when
/// connect times split between no wait and a SYN retransmitted after 1 s,
/// a few of them in the window move the p50 from one mode to the other
/// (CI: bench 26.6 ms, the last 2375 connections to begin 1011 ms).
fn ladder_ms(doc: &Value, phase: &str, n: usize) -> Vec<f64> {
    let ms = |c: &Value, name: &str| {
        c["ladder"].as_array()?.iter().find(|p| p["name"] == name)?["ms"].as_f64()
    };
    let mut conns: Vec<&Value> = doc["connections"]
        .as_array()
        .expect("connections")
        .iter()
        .filter(|c| ms(c, "request").is_some())
        .collect();
    conns.sort_by_key(|c| c["index"].as_u64());
    let from = conns.len().saturating_sub(n);
    let mut v: Vec<f64> = conns[from..].iter().filter_map(|c| ms(c, phase)).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// bench's connect, tls and ttfb p50/p90 against the capture's for the
/// same connections. bench times from its own calls (connect(2) →
/// established, established → handshake complete, request written → first
/// byte read), so on a paced run it may only add the client's own
/// processing and wake-ups to what the wire shows: within 1.5 ms (or 10 %),
/// never less. In a storm the generator shares two cores with the server
/// and the link and wakes up late, which also moves where bench's `tls`
/// begins: there the medians agree within 25 ms or 10 %. How late it woke
/// at its slowest tenth grows with the overload (connect p90 of 19, 21 and
/// 38 ms at the client for 10 ms on the wire were seen): that excess is the
/// connect p90's whole difference, so there only a wire slower than the
/// client's account (by more than the slack) fails, and the excess is added
/// to the tls and ttfb slacks: the generator wakes that late at either end
/// of a phase as well, on top of the 10 % (a Go storm of 3000 connections
/// in 3 s: tls p50 301.3 ms at the client for 270.9 ms on the wire, 10.1 %,
/// with connect p90 26.3 ms at the client for 10.05 ms on the wire).
/// Returns the note that shows both.
fn agree(name: &str, bench: &Value, doc: &Value, paced: bool) -> String {
    let slack: f64 = if paced { 1.5 } else { 25.0 };
    let n = bench["connections"]["succeeded"]
        .as_u64()
        .expect("succeeded") as usize;
    let mut note = format!("{name}: {n} connections; bench / capture (ms):");
    // the client's lateness at its slowest tenth (unpaced runs only)
    let mut late: f64 = 0.0;
    for (b, ladder) in [("connect", "connect"), ("tls", "tls"), ("ttfb", "request")] {
        let v = ladder_ms(doc, ladder, n);
        assert!(
            v.len() as f64 >= 0.95 * n as f64,
            "{name}: {ladder} measured for {} of {n} connections",
            v.len()
        );
        for (q, key) in [(0.5, "p50_ms"), (0.9, "p90_ms")] {
            let want = bench["phases"][b][key].as_f64().expect("bench percentile");
            let got = pct(&v, q);
            note.push_str(&format!(" {b} {key} {want:.2} / {got:.2};"));
            // paced, the wire cannot be slower than the client's own
            // account (HDR rounds to 0.1 %)
            let bound = !paced || got <= want * 1.002 + 0.1;
            // a storm's connect p90: only the wire's side is held (the
            // client's is its lateness)
            let one_sided = !paced && b == "connect" && q == 0.9;
            let diff = if one_sided {
                got - want
            } else {
                (want - got).abs()
            };
            assert!(
                bound && diff <= (0.1 * want).max(slack) + late,
                "{name}: {b} {key}: bench {want:.3} ms, capture {got:.3} ms\n{note}"
            );
            if one_sided {
                late = (want - got).max(0.0);
            }
        }
    }
    note
}

/// The storm `name` (`args` and a 3 s run) at each of `rates` in turn until
/// `over` says the server was beyond its capacity: the rate a slower
/// machine could not follow, a faster one keeps up with (Go signed ~1000
/// RSA-2048 handshakes/s on one core of the 2026-11-26 VM, 500/s had been
/// beyond it before). Each rate's outcome goes in `notes`; no rate
/// overloading the server is a failure that says so.
fn overload(
    name: &str,
    args: &[&str],
    rates: &[&str],
    over: impl Fn(&Value) -> bool,
    notes: &mut Vec<String>,
) -> (Value, Value) {
    for rate in rates {
        let mut all = args.to_vec();
        all.extend(["--rate", rate, "--duration", "3s"]);
        let (bench, doc) = storm(name, &all);
        let hs = &bench["handshakes_per_s"];
        notes.push(format!(
            "{name} at {rate}/s: {:.0} handshakes/s achieved, server {:.2} cores busy, {}",
            hs["achieved"].as_f64().unwrap_or(0.0),
            bench["server_cpu"]["cores_busy"].as_f64().unwrap_or(0.0),
            bench["lab"]["server_tcp"]
        ));
        if over(&bench) {
            return (bench, doc);
        }
    }
    panic!("{name}: the server kept up with every rate offered: {notes:#?}");
}

#[test]
fn storms_name_their_cause_and_agree_with_bench() {
    require_lab();
    let mut notes = Vec::new();
    // a paced control: nothing to name. Paced from its first connection:
    // bench's default warm-up opens 16 connections at once, and the lab's
    // one nginx worker serves their handshakes one at a time (16
    // ServerHellos 0.4 ms apart, the last waiting 5.5 ms): a real queue,
    // which the burst rule names (seen on CI), not a paced control
    let (bench, doc) = storm(
        "control",
        &[
            "--lab",
            "nginx",
            "--rate",
            "200",
            "--duration",
            "3s",
            "--warmup",
            "0",
        ],
    );
    assert!(ids(&doc).is_empty(), "control: {}", titles(&doc));
    notes.push(agree("control", &bench, &doc, true));

    // Go's crypto/tls on one core, RSA-2048, beyond its capacity (its
    // core saturated, as bench measures it, or the rate it could not follow)
    let (bench, doc) = overload(
        "go",
        &["--lab", "go", "--lab-cert", "rsa2048"],
        &["500", "1000", "2000", "4000"],
        |bench| {
            let busy = bench["server_cpu"]["cores_busy"].as_f64().unwrap_or(0.0);
            let hs = &bench["handshakes_per_s"];
            let offered = hs["offered"].as_f64().unwrap_or(0.0);
            let achieved = hs["achieved"].as_f64().unwrap_or(0.0);
            busy >= 0.8 || achieved < 0.9 * offered
        },
        &mut notes,
    );
    assert_eq!(
        ids(&doc),
        ["server-handshake-contention"],
        "go storm: {notes:?}\n{}",
        titles(&doc)
    );
    notes.push(agree("go", &bench, &doc, false));

    // nginx with a listen backlog of 8 and no SYN cookies, until its accept
    // queue overflows
    let (bench, doc) = overload(
        "backlog",
        &[
            "--lab",
            "nginx",
            "--lab-cert",
            "rsa2048",
            "--lab-backlog",
            "8",
            "--lab-syncookies",
            "0",
        ],
        &["400", "800", "1600", "3200"],
        |bench| counter(bench, "listen_overflows") > 0,
        &mut notes,
    );
    assert!(
        ids(&doc).contains(&"accept-queue-overflow".to_string()),
        "backlog storm: {}",
        titles(&doc)
    );
    notes.push(agree("backlog", &bench, &doc, false));

    // the same with SYN cookies, to clients without TCP timestamps, until
    // the server sends cookies
    let (bench, doc) = overload(
        "cookies",
        &[
            "--lab",
            "nginx",
            "--lab-backlog",
            "4",
            "--lab-syncookies",
            "1",
            "--lab-client-timestamps",
            "off",
        ],
        &["400", "800", "1600", "3200"],
        |bench| counter(bench, "syncookies_sent") > 0,
        &mut notes,
    );
    assert!(
        ids(&doc).contains(&"syn-flood-cookies".to_string()),
        "cookie storm: {}",
        titles(&doc)
    );
    notes.push(agree("cookies", &bench, &doc, false));
    for n in &notes {
        eprintln!("{n}");
    }
}
