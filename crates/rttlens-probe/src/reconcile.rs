//! The wire's view: a capture of the probe's packets run through the
//! analysis engine ([`rttlens_core::pipeline::run`]), each attempt matched
//! to its connection by the local `addr:port`, and the app-level phases
//! set against the wire's (durations only, so the app's monotonic clock
//! and the capture's wall clock never mix).

use std::collections::HashMap;

use rttlens_core::base::time::Timestamp;
use rttlens_core::capture::CaptureReader;
use rttlens_core::model::ConnReport;
use rttlens_core::pipeline;
use rttlens_core::wire::{self, Decoded, TcpFlags};

use rttlens_report::probe::{Agreement, Check, ProbeReport};

use crate::assemble::{self, AttemptState};

/// First SYN sent and last response payload received (before the probe's
/// FIN), per local `addr:port`.
#[derive(Debug, Default, Clone, Copy)]
struct Edges {
    syn: Option<Timestamp>,
    last_payload_in: Option<Timestamp>,
    /// The probe closed: what the server sends after (its close_notify)
    /// is no longer the response.
    fin_out: bool,
}

/// Analyse `reader` and attach what it shows to `report`: the matched
/// connections (with their packets when `trace`), RTTs from the wire, and
/// per attempt the app-vs-wire agreement. Returns the number of attempts
/// matched.
///
/// # Errors
/// The capture could not be read at all (message from the reader).
pub fn attach(
    report: &mut ProbeReport,
    mut reader: CaptureReader,
    trace: bool,
) -> Result<usize, String> {
    let locals: HashMap<String, usize> = report
        .attempts
        .iter()
        .enumerate()
        .map(|(i, a)| (a.local.clone(), i))
        .collect();
    let mut conns: Vec<ConnReport> = Vec::new();
    let summary = pipeline::run_with(
        &mut reader,
        &pipeline::Options {
            trace,
            ..Default::default()
        },
        &mut |c| {
            if locals.contains_key(&c.client) {
                conns.push(c);
            }
        },
        &mut |_| {},
    )
    .map_err(|e| e.to_string())?;
    conns.sort_by_key(|c| c.index);
    report.connections = conns;
    report.capture_summary = Some(summary);
    let mut matched = 0;
    for i in 0..report.attempts.len() {
        let local = report.attempts[i].local.clone();
        let idx = report.connections.iter().position(|c| c.client == local);
        report.attempts[i].connection = idx;
        matched += usize::from(idx.is_some());
        if let Some(c) = idx.and_then(|j| report.connections.get(j)) {
            let ids: Vec<&'static str> = c.findings.iter().map(|f| f.id).collect();
            verify_tfo(&mut report.attempts[i].checks, &ids);
        }
    }
    Ok(matched)
}

/// Per attempt, the wire's first SYN and last response payload, from a
/// second pass over the capture (the report model has durations, not
/// instants), set against the app's durations (`states[i]` is attempt
/// `i`'s).
///
/// # Errors
/// The capture could not be read.
pub fn agree(
    report: &mut ProbeReport,
    states: &[AttemptState],
    mut reader: CaptureReader,
) -> Result<(), String> {
    let mut edges: HashMap<String, Edges> = report
        .attempts
        .iter()
        .map(|a| (a.local.clone(), Edges::default()))
        .collect();
    loop {
        let frame = match reader.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(e.to_string()),
        };
        let ts = frame.ts;
        let Ok(Decoded::Tcp(seg)) = wire::decode(frame.link_type, frame.data, frame.orig_len)
        else {
            continue;
        };
        let src = std::net::SocketAddr::new(seg.src, seg.src_port).to_string();
        let dst = std::net::SocketAddr::new(seg.dst, seg.dst_port).to_string();
        if let Some(e) = edges.get_mut(&src) {
            if seg.flags.contains(TcpFlags::SYN) && e.syn.is_none() {
                e.syn = Some(ts);
            }
            e.fin_out |= seg.flags.contains(TcpFlags::FIN) || seg.flags.contains(TcpFlags::RST);
        } else if let Some(e) = edges.get_mut(&dst) {
            if seg.payload_len > 0 && !e.fin_out {
                e.last_payload_in = Some(ts);
            }
        }
    }
    for (a, state) in report.attempts.iter_mut().zip(states) {
        let Some(c) = a.connection.and_then(|i| report.connections.get(i)) else {
            continue;
        };
        let phase = |n: &str| c.ladder.iter().find(|p| p.name == n).map(|p| p.ms);
        let tfo = state.step.tfo.is_some();
        let early = state.step.early_data();
        let app = state.app;
        let mut v = Vec::new();
        let mut push = |name: &'static str, app_ms: f64, wire_ms: Option<f64>| {
            if let Some(w) = wire_ms {
                v.push(Agreement::new(name, app_ms, w));
            }
        };
        // TFO: connect(2) returns before the SYN leaves; nothing to compare
        if !tfo {
            push("connect", app.connect_ms, phase("connect"));
        }
        // 0-RTT: the app sees the handshake end only when it reads
        if let (Some(t), false) = (app.tls_ms, early) {
            push("tls", t, phase("tls"));
        }
        // the app's first byte is the first decrypted byte: the wire's
        // first response byte plus the time its record took to complete.
        // HTTP/2: the app's is the response's HEADERS, which may come in an
        // earlier record than the one the wire counts (or with the SETTINGS
        // before it): not compared
        let h2 = a.tls.as_ref().and_then(|t| t.alpn.as_deref()) == Some("h2");
        let fdb = phase("first-decrypted-byte").unwrap_or(0.0);
        if !h2 {
            push(
                "starttransfer",
                app.request_ms,
                phase("request").map(|r| r + fdb),
            );
        }
        let e = edges.get(&a.local).copied().unwrap_or_default();
        if let (Some(s), Some(l), false) = (e.syn, e.last_payload_in, tfo) {
            push(
                "total",
                app.total_from_connect_ms,
                Some((l - s).as_millis_f64()),
            );
        }
        a.wire_vs_app = v;
    }
    Ok(())
}

/// [`attach`] and [`agree`] over a capture held in memory (pcap or
/// pcapng bytes), then recount the phases in the wire's RTT
/// ([`assemble::finish`]). `interface` names where it was taken.
///
/// # Errors
/// The capture could not be read.
pub fn attach_bytes(
    report: &mut ProbeReport,
    states: &[AttemptState],
    bytes: &[u8],
    interface: &str,
    trace: bool,
) -> Result<usize, String> {
    let open = || {
        CaptureReader::new(Box::new(std::io::Cursor::new(bytes.to_vec())))
            .map_err(|e| e.to_string())
    };
    let matched = attach(report, open()?, trace)?;
    agree(report, states, open()?)?;
    report.capture.status = "captured";
    report.capture.packets = report.capture_summary.as_ref().map_or(0, |s| s.frames);
    report.capture.interface = Some(interface.to_string());
    report.capture.note = (matched < report.attempts.len()).then(|| {
        format!(
            "{} of {} connections not found in the capture",
            report.attempts.len() - matched,
            report.attempts.len()
        )
    });
    assemble::finish(report, states, assemble::planned_sequence(states));
    Ok(matched)
}

/// The TFO checks from the wire's findings (`detect/tfo.rs`): data in the
/// SYN acknowledged by the SYN-ACK is `tfo-accepted`; `tfo-refused` and
/// `tfo-fallback` say it was not; `tfo-cookie` that a cookie came back.
/// Where `TCP_INFO` already answered (`TCPI_OPT_SYN_DATA`), the two must
/// agree: a disagreement fails the check and says so.
fn verify_tfo(checks: &mut [Check], ids: &[&'static str]) {
    for c in checks.iter_mut() {
        match c.what {
            "tfo-data-acked" => {
                let seen = ["tfo-accepted", "tfo-refused", "tfo-fallback"]
                    .into_iter()
                    .find(|id| ids.contains(id));
                let wire_ok = seen == Some("tfo-accepted");
                let wire_how = match seen {
                    Some(id) => format!("capture: {id}"),
                    None => "capture: no data in the SYN".into(),
                };
                let kernel = c.how.starts_with("TCP_INFO").then_some(c.ok).flatten();
                (c.ok, c.how) = match kernel {
                    None => (Some(wire_ok), wire_how),
                    Some(k) if k == wire_ok => (Some(k), format!("{}; {wire_how} (agree)", c.how)),
                    Some(_) => (
                        Some(false),
                        format!("{}; {wire_how}: TCP_INFO and the capture DISAGREE", c.how),
                    ),
                };
            }
            "tfo-cookie" => {
                let got = ids.contains(&"tfo-cookie");
                c.ok = Some(got);
                c.how = if got {
                    "capture: tfo-cookie (the SYN-ACK carried a cookie)".into()
                } else {
                    "capture: no cookie in the SYN-ACK".into()
                };
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::verify_tfo;
    use rttlens_report::probe::Check;

    fn check(ok: Option<bool>, how: &str) -> Check {
        Check {
            what: "tfo-data-acked",
            ok,
            how: how.into(),
        }
    }

    #[test]
    fn tfo_kernel_and_wire_must_agree() {
        let mut c = [check(Some(true), "TCP_INFO: SYN data acknowledged")];
        verify_tfo(&mut c, &["tfo-accepted"]);
        assert_eq!(c[0].ok, Some(true));
        assert!(c[0].how.contains("(agree)"), "{}", c[0].how);
        let mut c = [check(Some(true), "TCP_INFO: SYN data acknowledged")];
        verify_tfo(&mut c, &["tfo-refused"]);
        assert_eq!(c[0].ok, Some(false));
        assert!(c[0].how.contains("DISAGREE"), "{}", c[0].how);
        let mut c = [check(None, "not seen: no TCP_INFO and no capture")];
        verify_tfo(&mut c, &["tfo-accepted"]);
        assert_eq!(c[0].ok, Some(true));
        assert_eq!(c[0].how, "capture: tfo-accepted");
    }
}
