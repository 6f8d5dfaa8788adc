//! The probe's `--path` across the routed lab (issue 44): client — R1 —
//! delay link — R2 — server, the delay on the middle link. The trace must
//! show R1, R2 and the server, name R2 as the hop where the RTT steps up,
//! and put each hop's median RTT within 1 ms of the delay in front of it.
//! Needs root, /dev/net/tun and iproute2; FAILS (never skips) naming what
//! is missing.

use std::time::Duration;

use rttlens_lab::path::{find_path, run_path};

#[test]
fn path_middle_hop() {
    if let Err(e) = rttlens_lab_net::check_prerequisites() {
        panic!("the path scenario needs root, /dev/net/tun and iproute2: {e}");
    }
    let s = find_path("path-middle-hop").expect("scenario");
    let o = run_path(s, Duration::from_millis(40)).expect("path scenario ran");
    for h in &o.path.hops {
        eprintln!("{h:?}");
    }
    for c in &o.checks {
        eprintln!(
            "{} {}: {}",
            if c.ok { "held" } else { "FAILED" },
            c.expect,
            c.seen
        );
    }
    assert!(o.passed(), "path-middle-hop: {:#?}", o.checks);

    // the text report's hop table names the hops and the step
    let mut text = Vec::new();
    rttlens_report::probe::path::write_path(&o.path, &mut text).expect("text");
    let text = String::from_utf8(text).expect("utf-8");
    eprintln!("{text}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        rows[1].contains("10.77.0.2") && rows[2].contains("10.77.2.2 [target]"),
        "{text}"
    );
    assert!(text.contains("largest step: hop 2 10.77.0.2"), "{text}");

    // the HTML report draws them: a median dot per hop, the step pinned
    let mut html = Vec::new();
    rttlens_report::html::path::fragment(&o.path, &mut html).expect("html");
    let html = String::from_utf8(html).expect("utf-8");
    assert!(
        html.contains("data-graph=\"path\"") && html.contains("<svg"),
        "{html}"
    );
    assert!(
        html.contains("data-finding=\"step\""),
        "no step pin: {html}"
    );
    assert!(html.contains("hop 2 10.77.0.2"), "{html}");
}
