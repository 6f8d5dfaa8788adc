//! One probe's outcome as Prometheus metrics (OpenMetrics text, encoded by
//! `prometheus-client`): blackbox_exporter's names where they exist, so its
//! dashboards and alerts keep working, and rttlens' own beside them
//! (docs/serve.md "Metrics" lists each, its unit and meaning).
//!
//! Which connection the blackbox names describe: a probe may make several
//! (a module with `resumption`, `zero_rtt` or `tfo` runs the probe's
//! sequence: full → resumed → 0-RTT; `follow_redirects` adds one per
//! redirect). blackbox's `probe_http_*` describe the first request as
//! blackbox would make it — the first connection and the redirects it
//! followed, phases summed over them as blackbox sums them — and
//! `rttlens_*` give every connection, labelled `attempt` (0-based) and
//! `step` (`single`, `full`, `resumed`, `0-rtt`, `tfo-cookie`, joined
//! with `+`).

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use rttlens_probe::{Attempt, ErrorKind, ProbeError, ProbeReport};

use crate::config::Module;

mod path;

/// The content type of [`render`]'s output (OpenMetrics 1.0 text, which
/// Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(String, String)>;
type GaugeF = Gauge<f64, AtomicU64>;
type FamilyF = Family<Labels, GaugeF>;

/// The probe's phases (`rttlens_probe_model::AppPhase::name`) and
/// blackbox's name for each (`probe_http_duration_seconds{phase}`).
const BLACKBOX_PHASES: [(&str, &str); 5] = [
    ("namelookup", "resolve"),
    ("connect", "connect"),
    ("tls", "tls"),
    ("request", "processing"),
    ("transfer", "transfer"),
];

/// What the capability checks (`rttlens_probe_model::Check::what`) say
/// about each feature a module can ask for, and the feature's label.
const FEATURES: [(&str, &str); 3] = [
    ("resumption", "resumed"),
    ("0rtt", "early-data-accepted"),
    ("tfo", "tfo-data-acked"),
];

/// A registry and shorthands to add gauges to it.
struct Metrics {
    registry: Registry,
}

impl Metrics {
    fn gauge(&mut self, name: &str, help: &str, unit: Option<Unit>, value: f64) {
        // prometheus-client ends each help text with a full stop itself
        let help = help.trim_end_matches('.');
        let g = GaugeF::default();
        g.set(value);
        match unit {
            Some(u) => self.registry.register_with_unit(name, help, u, g),
            None => self.registry.register(name, help, g),
        }
    }

    fn family(&mut self, name: &str, help: &str, unit: Option<Unit>) -> FamilyF {
        let help = help.trim_end_matches('.');
        let f = FamilyF::default();
        match unit {
            Some(u) => self.registry.register_with_unit(name, help, u, f.clone()),
            None => self.registry.register(name, help, f.clone()),
        }
        f
    }

    fn encode(&self) -> String {
        let mut out = String::new();
        // writing to a String cannot fail
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// Milliseconds (µs-rounded in the report) as seconds, without the
/// binary fractions' noise (`0.385` ms → `0.000385`).
fn secs(ms: f64) -> f64 {
    (ms * 1e6).round() / 1e9
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The failed outcome's kind as a label value.
pub fn kind_name(k: ErrorKind) -> &'static str {
    match k {
        ErrorKind::Usage => "usage",
        ErrorKind::Resolve => "resolve",
        ErrorKind::Refused => "refused",
        ErrorKind::Timeout => "timeout",
        ErrorKind::TlsAlert => "tls-alert",
        ErrorKind::BadCertificate => "bad-certificate",
        ErrorKind::Tls => "tls",
        ErrorKind::Http => "http",
        ErrorKind::Io => "io",
        ErrorKind::Forbidden => "forbidden",
        _ => "other",
    }
}

/// The attempts of the first request: the first connection and the
/// redirects it followed (the leading attempts of the same step).
fn first_request(r: &ProbeReport) -> &[Attempt] {
    let Some(first) = r.attempts.first() else {
        return &[];
    };
    let n = r
        .attempts
        .iter()
        .take_while(|a| a.step == first.step)
        .count();
    &r.attempts[..n]
}

/// The attempts whose response is the answer to a request (not a
/// redirect that was followed): the last of each run of the same step.
fn answers(r: &ProbeReport) -> impl Iterator<Item = &Attempt> {
    r.attempts
        .iter()
        .enumerate()
        .filter(|(i, a)| r.attempts.get(i + 1).is_none_or(|b| b.step != a.step))
        .map(|(_, a)| a)
}

/// `HTTP/1.1` → 1.1, `HTTP/2` → 2 (blackbox's `probe_http_version`).
fn http_version(v: &str) -> Option<f64> {
    v.strip_prefix("HTTP/")?.parse().ok()
}

/// `TLSv1.3` → `TLS 1.3` (blackbox's `probe_tls_version_info{version}`,
/// Go's `tls.VersionName`).
fn tls_version_name(v: &str) -> String {
    v.strip_prefix("TLSv")
        .map_or_else(|| v.to_string(), |n| format!("TLS {n}"))
}

/// The attempt's handshake kind in the design's vocabulary
/// (docs/design.md §2): the wire's when the capture saw the connection,
/// else from rustls' verdicts.
fn handshake_kind(r: &ProbeReport, a: &Attempt) -> Option<String> {
    let wire = a
        .connection
        .and_then(|i| r.connections.get(i))
        .and_then(|c| c.tls.as_ref())
        .map(|t| t.kind.clone());
    wire.or_else(|| {
        let t = a.tls.as_ref()?;
        let v13 = t.version == "TLSv1.3";
        Some(
            match (t.handshake, t.early_data, v13) {
                (_, "accepted", _) => "tls13-0rtt",
                ("full-with-hello-retry", _, _) => "hello-retry",
                ("resumed", _, true) => "tls13-psk",
                ("resumed", _, false) => "tls12-abbreviated",
                (_, _, true) => "tls13-full",
                (_, _, false) => "tls12-full",
            }
            .to_string(),
        )
    })
}

/// Whether the probe succeeded under `module`: it ran, every answer's
/// status is valid, and (with `fail_if_not_verified`) each feature the
/// module asked for was verified.
pub fn success(module: &Module, r: &ProbeReport) -> bool {
    if !answers(r).all(|a| module.status_ok(a.response.status)) {
        return false;
    }
    if !module.fail_if_not_verified {
        return true;
    }
    let asked = [
        ("resumed", module.resumption),
        ("early-data-accepted", module.zero_rtt),
        ("tfo-data-acked", module.tfo),
    ];
    asked
        .iter()
        .filter(|(_, wanted)| *wanted)
        .all(|(check, _)| verified(r, check) == Some(true))
}

/// `check` held on every connection that checked it (`None`: none did,
/// or none could see it).
fn verified(r: &ProbeReport, check: &str) -> Option<bool> {
    let seen: Vec<bool> = r
        .attempts
        .iter()
        .filter_map(|a| a.check(check))
        .filter_map(|c| c.ok)
        .collect();
    (!seen.is_empty()).then(|| seen.iter().all(|ok| *ok))
}

/// The exposition of one probe: `result` is its report or the error
/// naming the phase that failed; `duration` the wall time it took.
pub fn render(
    module: &Module,
    result: &Result<ProbeReport, ProbeError>,
    duration: Duration,
) -> String {
    let mut m = Metrics {
        registry: Registry::default(),
    };
    let ok = match result {
        Ok(r) => success(module, r),
        Err(_) => false,
    };
    m.gauge(
        "probe_success",
        "Whether the probe succeeded (1) or not (0).",
        None,
        if ok { 1.0 } else { 0.0 },
    );
    m.gauge(
        "probe_duration",
        "How long the probe took, capture and analysis included.",
        Some(Unit::Seconds),
        duration.as_secs_f64(),
    );
    match result {
        Ok(r) => report_metrics(&mut m, r),
        Err(e) => {
            let f = m.family(
                "rttlens_probe_failed_phase_info",
                "The phase the probe failed in (setup, namelookup, connect, tls, http) and why (kind); 1 when it failed.",
                None,
            );
            f.get_or_create(&labels(&[
                ("phase", e.phase.as_str()),
                ("kind", kind_name(e.kind)),
            ]))
            .set(1.0);
        }
    }
    m.encode()
}

/// blackbox_exporter's certificate expiry series (its `prober/http.go`
/// and `prober/tls.go`), of the first request's final connection:
/// `probe_ssl_earliest_cert_expiry`, the earliest `notAfter` of the
/// certificates the server presented, and
/// `probe_ssl_last_chain_expiry_timestamp_seconds`, the earliest of the
/// verified chain (left out when none was verified: `insecure`), both in
/// Unix seconds; and `probe_ssl_last_chain_info`, 1 labelled with the leaf
/// certificate's SHA-256 fingerprint, subject, issuer, DNS names and serial
/// number in the strings Go writes (`rttlens_probe::certinfo`). Their
/// names, labels and help texts are blackbox's.
fn cert_metrics(m: &mut Metrics, certs: Option<&rttlens_probe::PeerCerts>) {
    let Some(c) = certs else {
        return;
    };
    if let Some(t) = c.earliest_expiry {
        m.gauge(
            "probe_ssl_earliest_cert_expiry",
            "Returns earliest SSL cert expiry in unixtime",
            None,
            t as f64,
        );
    }
    if let Some(t) = c.verified_chain_expiry {
        m.gauge(
            "probe_ssl_last_chain_expiry_timestamp_seconds",
            "Returns last SSL chain expiry in timestamp seconds",
            None,
            t as f64,
        );
    }
    if let Some(leaf) = &c.leaf {
        let f = m.family(
            "probe_ssl_last_chain_info",
            "Contains SSL leaf certificate information",
            None,
        );
        f.get_or_create(&labels(&[
            ("fingerprint_sha256", &leaf.fingerprint_sha256),
            ("subject", &leaf.subject),
            ("issuer", &leaf.issuer),
            ("subjectalternative", &leaf.dns_names.join(",")),
            ("serialnumber", &leaf.serial_hex),
        ]))
        .set(1.0);
    }
}

/// The metrics of a probe that ran.
fn report_metrics(m: &mut Metrics, r: &ProbeReport) {
    // blackbox's names: the first request
    let first = first_request(r);
    let phases = m.family(
        "probe_http_duration",
        "Duration of each phase of the first request (blackbox_exporter's names: resolve, connect, tls, processing, transfer), summed over its redirects.",
        Some(Unit::Seconds),
    );
    for (ours, theirs) in BLACKBOX_PHASES {
        let secs: f64 = first
            .iter()
            .filter_map(|a| a.phase(ours))
            .map(|p| secs(p.ms))
            .sum();
        phases
            .get_or_create(&labels(&[("phase", theirs)]))
            .set(secs);
    }
    if let Some(a) = first.first() {
        m.gauge(
            "probe_dns_lookup_time",
            "Time the name lookup of the first request took.",
            Some(Unit::Seconds),
            secs(a.timings.namelookup_ms),
        );
        let v6 = a.remote.starts_with('[');
        m.gauge(
            "probe_ip_protocol",
            "The IP version of the first connection (4 or 6).",
            None,
            if v6 { 6.0 } else { 4.0 },
        );
    }
    if let Some(last) = first.last() {
        m.gauge(
            "probe_http_status_code",
            "The first request's response status code (after the redirects it followed).",
            None,
            f64::from(last.response.status),
        );
        if let Some(v) = http_version(&last.response.version) {
            m.gauge(
                "probe_http_version",
                "The HTTP version of the first request's response (1.1, 2).",
                None,
                v,
            );
        }
        m.gauge(
            "probe_http_uncompressed_body_length",
            "Body bytes of the first request's response.",
            Some(Unit::Bytes),
            last.response.body_bytes as f64,
        );
        m.gauge(
            "probe_http_ssl",
            "Whether the first request's final connection used TLS (1) or not (0).",
            None,
            if last.tls.is_some() { 1.0 } else { 0.0 },
        );
        if let Some(t) = &last.tls {
            let f = m.family(
                "probe_tls_version_info",
                "The TLS version the first request's final connection negotiated; 1.",
                None,
            );
            f.get_or_create(&labels(&[("version", &tls_version_name(&t.version))]))
                .set(1.0);
            cert_metrics(m, t.certs.as_ref());
        }
        m.gauge(
            "probe_http_redirects",
            "Redirects the first request followed.",
            None,
            (first.len() - 1) as f64,
        );
    }

    // rttlens' own, per connection
    let dur = m.family(
        "rttlens_phase_duration",
        "Duration of each phase (namelookup, connect, tls, request, transfer) of each connection.",
        Some(Unit::Seconds),
    );
    let rtts = m.family(
        "rttlens_phase_rtts",
        "Each phase of each connection counted in round trips (its duration over the connection's RTT).",
        None,
    );
    let rtt = m.family(
        "rttlens_rtt",
        "The RTT each connection's phases are counted in, and where it comes from (source: capture, tcp_info, connect).",
        Some(Unit::Seconds),
    );
    let hs = m.family(
        "rttlens_tls_handshake_info",
        "Each TLS connection's handshake: kind (tls13-full, tls13-psk, tls13-0rtt, tls12-full, tls12-abbreviated, hello-retry), version, cipher, early_data (not-offered, accepted, rejected); 1.",
        None,
    );
    let checks = m.family(
        "rttlens_check_ok",
        "Each verified outcome of each connection (check: full-handshake, resumed, early-data-accepted, tfo-cookie, tfo-data-acked): 1 held, 0 did not; absent when it could not be seen.",
        None,
    );
    for a in &r.attempts {
        let index = a.index.to_string();
        let base = [("attempt", index.as_str()), ("step", a.step.as_str())];
        for p in &a.phases {
            let mut l = labels(&base);
            l.push(("phase".into(), p.name.into()));
            dur.get_or_create(&l).set(secs(p.ms));
            if let Some(n) = p.rtts {
                rtts.get_or_create(&l).set(n);
            }
        }
        if let (Some(ms), Some(src)) = (a.rtt_ms, a.rtt_source) {
            let mut l = labels(&base);
            l.push(("source".into(), src.into()));
            rtt.get_or_create(&l).set(secs(ms));
        }
        if let (Some(t), Some(kind)) = (&a.tls, handshake_kind(r, a)) {
            let mut l = labels(&base);
            l.extend(labels(&[
                ("kind", &kind),
                ("version", &t.version),
                ("cipher", &t.cipher),
                ("early_data", t.early_data),
            ]));
            hs.get_or_create(&l).set(1.0);
        }
        for c in &a.checks {
            if let Some(ok) = c.ok {
                let mut l = labels(&base);
                l.push(("check".into(), c.what.into()));
                checks.get_or_create(&l).set(if ok { 1.0 } else { 0.0 });
            }
        }
    }
    let attempted = m.family(
        "rttlens_attempted",
        "Whether the probe tried each feature (resumption, 0rtt, tfo): 1 or 0.",
        None,
    );
    let verified_f = m.family(
        "rttlens_verified",
        "Whether each feature (resumption, 0rtt, tfo) was verified on every connection that tried it: 1 or 0 (0 also when it could not be seen).",
        None,
    );
    for (feature, check) in FEATURES {
        let l = labels(&[("feature", feature)]);
        let tried = r.attempts.iter().any(|a| a.check(check).is_some());
        attempted
            .get_or_create(&l)
            .set(if tried { 1.0 } else { 0.0 });
        let ok = verified(r, check) == Some(true);
        verified_f.get_or_create(&l).set(if ok { 1.0 } else { 0.0 });
    }

    // the capture's findings, summed by id over the connections
    let mut by_id: std::collections::BTreeMap<&str, (f64, Option<f64>)> = Default::default();
    let mut count = 0usize;
    for c in &r.connections {
        for f in &c.findings {
            count += 1;
            let e = by_id.entry(f.id).or_insert((0.0, None));
            e.0 += f.cost.ms;
            if let Some(n) = f.cost.rtts {
                e.1 = Some(e.1.unwrap_or(0.0) + n);
            }
        }
    }
    let cost = m.family(
        "rttlens_finding_cost",
        "What each finding (id: nagle-delayed-ack, tls12-full-handshake, …) cost, summed over the probe's connections.",
        Some(Unit::Seconds),
    );
    let cost_rtts = m.family(
        "rttlens_finding_cost_rtts",
        "The same cost in round trips (absent when no RTT was known).",
        None,
    );
    for (id, (ms, n)) in &by_id {
        let l = labels(&[("id", id)]);
        cost.get_or_create(&l).set(secs(*ms));
        if let Some(n) = n {
            cost_rtts.get_or_create(&l).set(*n);
        }
    }
    m.gauge(
        "rttlens_findings",
        "Findings the capture of the probe's connections gave (0 without a capture: see rttlens_capture_info).",
        None,
        count as f64,
    );
    server_timing(m, r);
    let cap = m.family(
        "rttlens_capture_info",
        "Whether the probe's own packets were captured and analysed (status: captured, off, not-permitted, failed); 1.",
        None,
    );
    cap.get_or_create(&labels(&[("status", r.capture.status)]))
        .set(1.0);
    if let Some(p) = &r.path {
        path::path_metrics(m, p);
    }
}

/// The server's own account of the probe's last response that had one
/// (its `Server-Timing`, read from the capture of the probe's connections:
/// cleartext, or decrypted with the probe's key log): each metric's `dur`
/// (summed when a name repeats), and the wire's think time it leaves
/// unaccounted. Nothing is registered without one, so a server that sends
/// no `Server-Timing` gives the exposition it always did.
fn server_timing(m: &mut Metrics, r: &ProbeReport) {
    let tcp = r
        .connections
        .iter()
        .flat_map(|c| c.requests.iter().filter_map(|q| q.server_timing.as_ref()));
    let quic = r
        .quic_connections
        .iter()
        .flat_map(|c| c.streams.iter().filter_map(|s| s.server_timing.as_ref()));
    let Some(st) = tcp.chain(quic).last() else {
        return;
    };
    let mut by_name: std::collections::BTreeMap<&str, f64> = Default::default();
    for x in &st.metrics {
        if let Some(d) = x.dur_ms {
            *by_name.entry(x.name.as_str()).or_default() += d;
        }
    }
    if !by_name.is_empty() {
        let f = m.family(
            "rttlens_server_timing",
            "The server's own account of its time (Server-Timing, W3C Server Timing) in the probe's last response that had one: each metric's dur, by name.",
            Some(Unit::Seconds),
        );
        for (name, ms) in by_name {
            f.get_or_create(&labels(&[("metric", name)])).set(secs(ms));
        }
    }
    if let Some(u) = st.unaccounted_ms {
        m.gauge(
            "rttlens_server_timing_unaccounted",
            "The wire's server think time less the server's reported total in that response (negative when it reported more).",
            Some(Unit::Seconds),
            secs(u),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rttlens_probe::ProbePhase;

    #[test]
    fn names() {
        assert_eq!(http_version("HTTP/1.1"), Some(1.1));
        assert_eq!(http_version("HTTP/2"), Some(2.0));
        assert_eq!(tls_version_name("TLSv1.3"), "TLS 1.3");
    }

    #[test]
    fn a_failure_names_its_phase() {
        let e = ProbeError::new(ProbePhase::Connect, ErrorKind::Refused, "refused");
        let text = render(&Module::default(), &Err(e), Duration::from_millis(3));
        assert!(text.contains("probe_success 0"), "{text}");
        assert!(
            text.contains("rttlens_probe_failed_phase_info{phase=\"connect\",kind=\"refused\"} 1"),
            "{text}"
        );
        assert!(text.contains("probe_duration_seconds 0.003"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
