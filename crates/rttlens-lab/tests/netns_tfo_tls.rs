//! TCP Fast Open, TLS resumption and 0-RTT on real traffic: Linux TCP with
//! `net.ipv4.tcp_fastopen=3`, nginx, curl and `openssl s_client`, in the
//! shared lab's namespaces joined by its 10 ms delay link (`support`). The
//! peers' own reports (openssl's "Reused" and "Early data was accepted",
//! curl's timings) are the oracle the findings are checked against.
//!
//! Needs root, `/dev/net/tun` and `iproute2 nftables tcpdump nginx-light
//! curl openssl`; fails naming what is missing.

mod support;

use rttlens_lab_net::Host;
use support::{analyze, body, check_contract, TestLab, SERVER_IP, TLS_PORT};

fn ids(c: &rttlens_core::model::ConnReport) -> Vec<&'static str> {
    c.findings.iter().map(|f| f.id).collect()
}

/// `curl -sS -o /dev/null --max-time 10 <args…> <url>` from the client; must succeed.
fn curl_ok(lab: &TestLab, args: &[&str], url: &str) {
    let mut all = vec!["-sS", "-o", "/dev/null", "--max-time", "10"];
    all.extend_from_slice(args);
    all.push(url);
    let out = lab.run_in(Host::Client, "curl", &all);
    assert!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Stop the capture, analyse it, check the finding contract; connections in index order.
fn stop_and_analyze(
    lab: &mut TestLab,
    cap: support::Capture,
) -> Vec<rttlens_core::model::ConnReport> {
    let path = lab.stop(cap);
    let a = analyze(&path);
    check_contract(&a);
    let mut conns = a.conns.clone();
    conns.sort_by_key(|c| c.index);
    conns
}

fn phase<'a>(c: &'a rttlens_core::model::ConnReport, name: &str) -> &'a rttlens_core::model::Phase {
    c.ladder
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no {name} phase: {:?}", c.ladder))
}

/// Round trips from the client's SYN to the first response byte.
fn syn_to_first_byte(c: &rttlens_core::model::ConnReport) -> f64 {
    let connect = phase(c, "connect");
    let request = phase(c, "request");
    // the request phase starts at the SYN when the request rode in it
    if request.start_frame == connect.start_frame {
        request.rtts
    } else {
        connect.rtts
            + request.rtts
            + c.ladder
                .iter()
                .filter(|p| p.name == "tls")
                .map(|p| p.rtts)
                .sum::<f64>()
    }
}

#[test]
fn tfo_cookie_then_request_in_the_syn() {
    let mut lab = TestLab::new("tfo");
    lab.sysctl(Host::Client, "net.ipv4.tcp_fastopen", "3");
    lab.sysctl(Host::Server, "net.ipv4.tcp_fastopen", "3");
    lab.nginx_tls(&[("small", body(2_000))], |c| c.fastopen = Some(16));
    let cap = lab.capture(Host::Client);
    let url = format!("http://{SERVER_IP}/small");
    for _ in 0..2 {
        curl_ok(&lab, &["--tcp-fastopen"], &url);
    }
    let conns = stop_and_analyze(&mut lab, cap);
    assert_eq!(conns.len(), 2, "two connections");
    let (first, second) = (&conns[0], &conns[1]);

    let cookie = first
        .findings
        .iter()
        .find(|f| f.id == "tfo-cookie")
        .unwrap_or_else(|| panic!("tfo-cookie on the first connection: {:?}", ids(first)));
    assert!(
        rttlens_report::words::title(cookie).contains("cookie obtained"),
        "{}",
        rttlens_report::words::title(cookie)
    );
    assert_eq!(
        cookie.evidence[0].frame, first.first_frame,
        "the SYN with the cookie request"
    );

    let accepted = second
        .findings
        .iter()
        .find(|f| f.id == "tfo-accepted")
        .unwrap_or_else(|| panic!("tfo-accepted on the second connection: {:?}", ids(second)));
    assert_eq!(
        accepted.evidence[0].frame, second.first_frame,
        "the SYN carrying the request"
    );
    assert!(!ids(second).contains(&"tfo-refused"));
    // the request rode in the SYN: its phase starts there, and the first
    // response byte comes one round trip after the SYN instead of two
    assert_eq!(phase(second, "request").start_frame, second.first_frame);
    let (t1, t2) = (syn_to_first_byte(first), syn_to_first_byte(second));
    assert!(
        t1 >= 1.8,
        "without TFO: ≈ 2 RTT from SYN to first byte, got {t1}"
    );
    assert!(
        t2 <= 1.4,
        "with TFO: ≈ 1 RTT from SYN to first byte, got {t2}"
    );
}

#[test]
fn tls13_resumption_and_zero_rtt() {
    let mut lab = TestLab::new("tls-resume");
    lab.nginx_tls(&[("small", body(2_000))], |c| c.ssl_early_data = true);
    let cap = lab.capture(Host::Client);
    let dir = lab.dir.display().to_string();
    let req = "GET /small HTTP/1.1\\r\\nHost: lab.test\\r\\nConnection: close\\r\\n\\r\\n";
    lab.write(
        "early.txt",
        b"GET /small HTTP/1.1\r\nHost: lab.test\r\nConnection: close\r\n\r\n",
    );
    let connect = format!("{SERVER_IP}:{TLS_PORT}");
    let s_client = |extra: &str| {
        format!(
            "printf '{req}' | openssl s_client -connect {connect} -tls1_3 -ign_eof {extra} 2>&1"
        )
    };
    let runs = [
        s_client(&format!("-sess_out {dir}/s1.pem")),
        s_client(&format!("-sess_in {dir}/s1.pem -sess_out {dir}/s2.pem")),
        format!("openssl s_client -connect {connect} -tls1_3 -ign_eof -sess_in {dir}/s2.pem -early_data {dir}/early.txt < /dev/null 2>&1"),
    ];
    let mut said = Vec::new();
    for cmd in &runs {
        let out = lab.run_in(Host::Client, "sh", &["-c", cmd]);
        said.push(String::from_utf8_lossy(&out.stdout).to_string());
    }
    // the peers' own verdicts
    assert!(
        said[0].contains("New, TLSv1.3"),
        "first handshake is new: {}",
        said[0]
    );
    assert!(
        said[1].contains("Reused, TLSv1.3"),
        "openssl resumed the second: {}",
        said[1]
    );
    assert!(
        said[2].contains("Early data was accepted"),
        "openssl says 0-RTT was accepted: {}",
        said[2]
    );

    let conns = stop_and_analyze(&mut lab, cap);
    assert_eq!(conns.len(), 3, "three connections");
    let kinds: Vec<&str> = conns
        .iter()
        .map(|c| c.tls.as_ref().map(|t| t.kind.as_str()).unwrap_or("-"))
        .collect();
    assert_eq!(kinds, ["tls13-full", "tls13-psk", "tls13-0rtt"]);

    assert!(
        !ids(&conns[0]).contains(&"tls-resumption"),
        "nothing offered on the first: {:?}",
        ids(&conns[0])
    );
    let resumed = conns[1]
        .findings
        .iter()
        .find(|f| f.id == "tls-resumption")
        .expect("tls-resumption on the second");
    assert!(
        rttlens_report::words::title(resumed).contains("resumed"),
        "{}",
        rttlens_report::words::title(resumed)
    );
    assert!(conns[1].tls.as_ref().is_some_and(|t| t.info.resumed));

    let zero = conns[2]
        .findings
        .iter()
        .find(|f| f.id == "zero-rtt")
        .unwrap_or_else(|| panic!("zero-rtt on the third: {:?}", ids(&conns[2])));
    assert!(
        rttlens_report::words::title(zero).contains("accepted"),
        "{}",
        rttlens_report::words::title(zero)
    );
    assert_eq!(zero.cost.ms, 0.0, "an accepted 0-RTT costs nothing");
    // the request rode with the ClientHello: first response byte ~1 RTT after the SYN-ACK
    let rtt = conns[2].rtt.as_ref().expect("rtt").min_ms;
    let req = phase(&conns[2], "request");
    assert!(
        req.rtts <= 1.6,
        "0-RTT request answered within ~1 RTT: {} RTT ({} ms, RTT {rtt} ms)",
        req.rtts,
        req.ms
    );
}

/// nginx with `tcp_nodelay off` over TLS 1.3 (the lab's `nagle-response`
/// case): the response's small tail waits behind the NewSessionTicket
/// segment until the client ACKs it. With `tcp_nodelay on` (the control)
/// nothing waits.
fn nagle_run(nodelay: &str) -> Vec<rttlens_core::model::ConnReport> {
    let mut lab = TestLab::new(&format!("nagle-{nodelay}"));
    lab.nginx_tls(&[("small", body(700))], |c| c.tcp_nodelay = nodelay == "on");
    let cap = lab.capture(Host::Client);
    let url = format!("https://{SERVER_IP}/small");
    for _ in 0..3 {
        curl_ok(&lab, &["-k", "--tlsv1.3"], &url);
    }
    stop_and_analyze(&mut lab, cap)
}

#[test]
fn nagle_with_tcp_nodelay_off_and_none_with_it_on() {
    let off = nagle_run("off");
    let hits: Vec<_> = off
        .iter()
        .filter(|c| c.findings.iter().any(|f| f.id.starts_with("nagle")))
        .collect();
    assert!(
        !hits.is_empty(),
        "tcp_nodelay off: a Nagle finding on some connection: {:?}",
        off.iter().map(ids).collect::<Vec<_>>()
    );
    for c in &hits {
        let f = c
            .findings
            .iter()
            .find(|f| f.id.starts_with("nagle"))
            .expect("nagle");
        assert!(
            f.cost.rtts.is_some_and(|r| r >= 0.8),
            "a Nagle stall costs about a round trip or more: {:?}",
            f.cost
        );
        assert_eq!(
            f.evidence.len() % 3,
            0,
            "small segment, pure ACK, held segment"
        );
    }
    let on = nagle_run("on");
    for c in &on {
        assert!(
            !ids(c).iter().any(|i| i.starts_with("nagle")),
            "tcp_nodelay on: no Nagle finding: {:?}",
            ids(c)
        );
    }
}
