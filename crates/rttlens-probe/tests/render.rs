//! The probe's report, filled by this crate and rendered by
//! `rttlens-report`, byte for byte as before the report moved there
//! (issue 22): three fixed runs (deterministic marks; the first with a real
//! capture attached through [`rttlens_probe::reconcile`]) against the
//! golden text and JSON in `tests/golden/`, made by the code before the
//! move. `RTTLENS_BLESS=1` rewrites them after an intended change.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rttlens_probe::assemble::{self, AttemptState};
use rttlens_probe::timing::Marks;
use rttlens_probe::{
    reconcile, Attempt, NegotiatedTls, ProbeConfig, ProbeReport, ProbeStep, ResponseInfo,
    TcpInfoSnapshots, TfoStep, TlsStep,
};

/// A public capture of one TLS 1.3 connection (127.0.0.1:59219 →
/// 127.0.0.1:8400).
fn capture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/public/illustrated_tls13.pcap")
}

fn marks(t0: Instant, us: [u64; 8], appconnect: bool, first: bool) -> Marks {
    let at = |i: usize| t0 + Duration::from_micros(us[i]);
    Marks {
        start: at(0),
        namelookup: at(1),
        connect_start: at(2),
        connect: at(3),
        appconnect: appconnect.then(|| at(4)),
        pretransfer: at(5),
        starttransfer: first.then(|| at(6)),
        total: at(7),
    }
}

fn tls(handshake: &'static str, early: &'static str) -> NegotiatedTls {
    NegotiatedTls {
        version: "TLSv1.3".into(),
        cipher: "TLS13_AES_256_GCM_SHA384".into(),
        alpn: Some("http/1.1".into()),
        handshake,
        early_data: early,
        certs: None,
    }
}

fn resp(status: u16, body: u64) -> ResponseInfo {
    ResponseInfo {
        status,
        version: "HTTP/1.1".into(),
        body_bytes: body,
        location: None,
    }
}

fn info(rtt: u32, min: Option<u32>, syn_data: bool) -> rttlens_sys::TcpInfo {
    rttlens_sys::TcpInfo {
        rtt_us: rtt,
        min_rtt_us: min,
        snd_cwnd: 10,
        total_retrans: 1,
        delivery_rate: Some(1_250_000),
        busy_time_us: Some(12_345),
        rwnd_limited_us: Some(0),
        sndbuf_limited_us: Some(250),
        options: if syn_data {
            rttlens_sys::TCPI_OPT_SYN_DATA
        } else {
            0
        },
        ..Default::default()
    }
}

/// The report's text and JSON against `tests/golden/NAME.{txt,json}`.
fn check(name: &str, r: &ProbeReport) {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut text = Vec::new();
    rttlens_report::probe::write_text(r, &mut text).expect("text");
    let mut json = Vec::new();
    rttlens_report::probe::write_json(r, &mut json).expect("json");
    for (ext, got) in [("txt", text), ("json", json)] {
        let path = golden.join(format!("{name}.{ext}"));
        if std::env::var_os("RTTLENS_BLESS").is_some() {
            std::fs::write(&path, &got).expect("bless");
            continue;
        }
        let want = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            got == want,
            "{} differs:\n--- got\n{}\n--- want\n{}",
            path.display(),
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want)
        );
    }
}

/// One https attempt with `TCP_INFO`, the capture attached and matched.
#[test]
fn single_attempt_with_its_capture() {
    let t0 = Instant::now();
    let mut cfg = ProbeConfig::new("https://127.0.0.1:8400/");
    cfg.capture = true;
    let step = ProbeStep {
        tls: Some(TlsStep::Any),
        tfo: None,
    };
    let (mut a, state) = assemble::attempt(
        step,
        "127.0.0.1:59219".into(),
        "127.0.0.1:8400".parse().unwrap(),
        marks(
            t0,
            [0, 120, 130, 1_250, 3_600, 3_700, 5_900, 6_400],
            true,
            true,
        ),
        true,
        Some(tls("full", "not-offered")),
        resp(200, 1234),
        78,
    );
    assemble::attach_tcp_info(
        &mut a,
        TcpInfoSnapshots {
            after_connect: Some(info(0, None, false)),
            at_end: Some(info(1_150, Some(1_020), false)),
        },
    );
    let states = [state];
    let mut r = assemble::report(
        &cfg,
        vec![a],
        &states,
        Some(b"CLIENT_RANDOM 00 11\n".to_vec()),
    );
    let bytes = std::fs::read(capture()).expect("the shared captures beside the repository");
    reconcile::attach_bytes(&mut r, &states, &bytes, None, "lo", false).expect("attach");
    r.capture.pcap = Some("/tmp/probe.pcapng".into());
    r.capture.start_overhead_ms = Some(0.213);
    r.capture.stop_ms = Some(151.5);
    check("single-captured", &r);
}

/// `-n 3` over http without capture: the order statistics.
#[test]
fn three_attempts_without_capture() {
    let t0 = Instant::now();
    let mut cfg = ProbeConfig::new("http://example.test/x");
    cfg.capture = false;
    cfg.count = 3;
    let step = ProbeStep {
        tls: None,
        tfo: None,
    };
    let (attempts, states): (Vec<Attempt>, Vec<AttemptState>) = (0..3u64)
        .map(|i| {
            assemble::attempt(
                step,
                format!("10.0.0.1:{}", 40000 + i),
                "10.0.0.2:80".parse().unwrap(),
                marks(
                    t0,
                    [
                        0,
                        300 + i * 10,
                        310 + i * 10,
                        2_300 + i * 70,
                        0,
                        2_310 + i * 70,
                        4_500 + i * 333,
                        4_900 + i * 400,
                    ],
                    false,
                    true,
                ),
                false,
                None,
                resp(301 - i as u16, 10 * i),
                60,
            )
        })
        .unzip();
    let r = assemble::report(&cfg, attempts, &states, None);
    check("count-nocapture", &r);
}

/// `--sequence --tfo` over https, the capture never attached: checks held,
/// not held and unseen, and what each step saved.
#[test]
fn sequence_with_its_checks() {
    let t0 = Instant::now();
    let mut cfg = ProbeConfig::new("https://lab.test/size/2000");
    cfg.sequence = true;
    cfg.tfo = true;
    let steps = [
        (
            ProbeStep {
                tls: Some(TlsStep::Full),
                tfo: Some(TfoStep::Cookie),
            },
            tls("full", "not-offered"),
            false,
            2_400u64,
        ),
        (
            ProbeStep {
                tls: Some(TlsStep::Resumed),
                tfo: Some(TfoStep::Data),
            },
            tls("resumed", "not-offered"),
            true,
            1_300,
        ),
        (
            ProbeStep {
                tls: Some(TlsStep::ZeroRtt),
                tfo: Some(TfoStep::Data),
            },
            tls("full", "rejected"),
            false,
            900,
        ),
    ];
    let (attempts, states): (Vec<Attempt>, Vec<AttemptState>) = steps
        .into_iter()
        .enumerate()
        .map(|(i, (s, t, syn, st))| {
            let (mut a, state) = assemble::attempt(
                s,
                format!("10.77.0.1:{}", 50000 + i),
                "10.77.0.2:443".parse().unwrap(),
                marks(
                    t0,
                    [0, 50, 60, 1_060, 2_100, 2_150, 2_150 + st, 3_000 + st],
                    true,
                    i != 2,
                ),
                true,
                Some(t),
                resp(200, 2000),
                70,
            );
            if i > 0 {
                assemble::attach_tcp_info(
                    &mut a,
                    TcpInfoSnapshots {
                        after_connect: None,
                        at_end: Some(info(1_000 + i as u32, None, syn)),
                    },
                );
            }
            (a, state)
        })
        .unzip();
    let r = assemble::report(&cfg, attempts, &states, None);
    check("sequence", &r);
}
