//! The wire's view: a capture of the probe's packets run through the
//! analysis engine ([`rttlens_core::pipeline::run`]), each attempt matched
//! to its connection by the local `addr:port`, and the app-level phases
//! set against the wire's (durations only, so the app's monotonic clock
//! and the capture's wall clock never mix).
//!
//! Over QUIC ([`attach_quic_bytes`]) the capture is read with the
//! connections' key log, so the engine opens every packet, and each phase
//! of its QUIC ladder is timed between the very packets it names (the
//! capture is the client's: a packet's timestamp is when the client sent
//! or received it), set against the app's instants next to those packets
//! ([`crate::assemble::QuicDurations`]).

use std::collections::HashMap;

use rttlens_core::base::time::Timestamp;
use rttlens_core::capture::CaptureReader;
use rttlens_core::model::{ConnReport, QuicReport};
use rttlens_core::pipeline;
use rttlens_core::wire::{self, Decoded, TcpFlags};

use rttlens_probe_model::{Agreement, Check, ProbeReport};

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
            if let rttlens_core::model::Connection::Tcp(c) = c {
                if locals.contains_key(&c.client) {
                    conns.push(*c);
                }
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
/// pcapng bytes), with `secrets` (the connections' TLS key log) added to
/// whatever the capture's Decryption Secrets Block holds, then recount the
/// phases in the wire's RTT ([`assemble::finish`]). `interface` names
/// where it was taken.
///
/// # Errors
/// The capture could not be read.
pub fn attach_bytes(
    report: &mut ProbeReport,
    states: &[AttemptState],
    bytes: &[u8],
    secrets: Option<&[u8]>,
    interface: &str,
    trace: bool,
) -> Result<usize, String> {
    let open = || {
        CaptureReader::new(Box::new(std::io::Cursor::new(bytes.to_vec())))
            .map_err(|e| e.to_string())
    };
    let reader = open()?;
    if let Some(k) = secrets {
        reader.key_store().add(k);
    }
    let matched = attach(report, reader, trace)?;
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

/// `--http3`: [`attach_quic_bytes`]'s work on a capture held in memory:
/// the engine's QUIC analysis of it, with `secrets` (the connections' key
/// log) added to whatever the capture's Decryption Secrets Block holds;
/// each attempt matched to its QUIC connection by local `addr:port`, and
/// its app durations set against the wire's. Returns the attempts matched.
///
/// # Errors
/// The capture could not be read.
pub fn attach_quic_bytes(
    report: &mut ProbeReport,
    states: &[AttemptState],
    bytes: &[u8],
    secrets: Option<&[u8]>,
    interface: &str,
    trace: bool,
) -> Result<usize, String> {
    let open = || {
        CaptureReader::new(Box::new(std::io::Cursor::new(bytes.to_vec())))
            .map_err(|e| e.to_string())
    };
    let mut reader = open()?;
    if let Some(k) = secrets {
        reader.key_store().add(k);
    }
    let mut quic = Vec::new();
    let summary = pipeline::run_with(
        &mut reader,
        &pipeline::Options {
            trace,
            ..Default::default()
        },
        &mut |c| {
            if let rttlens_core::model::Connection::Quic(q) = c {
                quic.push(*q);
            }
        },
        &mut |_| {},
    )
    .map_err(|e| e.to_string())?;
    quic.sort_by_key(|q| q.index);
    let times = frame_times(open()?)?;
    let mut matched = 0;
    let mut undecrypted: std::collections::BTreeMap<&'static str, u64> = Default::default();
    for (a, state) in report.attempts.iter_mut().zip(states) {
        let idx = quic.iter().position(|q| q.client == a.local);
        a.quic_connection = idx;
        let Some(q) = idx.and_then(|i| quic.get(i)) else {
            continue;
        };
        matched += 1;
        for (ty, n) in &q.not_decrypted {
            *undecrypted.entry(ty).or_default() += n;
        }
        if let Some(app) = state.quic {
            a.wire_vs_app = quic_agreements(&app, q, &times);
        }
    }
    report.quic_connections = quic;
    report.capture_summary = Some(summary);
    report.capture.status = "captured";
    report.capture.packets = times.len() as u64;
    report.capture.interface = Some(interface.to_string());
    let mut notes = Vec::new();
    if matched < report.attempts.len() {
        notes.push(format!(
            "{} of {} QUIC connections not found in the capture",
            report.attempts.len() - matched,
            report.attempts.len()
        ));
    }
    if !undecrypted.is_empty() {
        let by_type: Vec<String> = undecrypted
            .iter()
            .map(|(ty, n)| format!("{n} {ty}"))
            .collect();
        notes.push(format!(
            "QUIC packets not decrypted: {}",
            by_type.join(", ")
        ));
    }
    report.capture.note = (!notes.is_empty()).then(|| notes.join("; "));
    assemble::finish(report, states, assemble::planned_sequence(states));
    Ok(matched)
}

/// Every frame's timestamp, by 1-based frame number (`[0]` is frame 1):
/// the probe's capture is small.
fn frame_times(mut reader: CaptureReader) -> Result<Vec<Timestamp>, String> {
    let mut v = Vec::new();
    loop {
        match reader.next_frame() {
            Ok(Some(f)) => {
                let n = usize::try_from(f.number).unwrap_or(usize::MAX);
                if n > v.len() {
                    v.resize(n, f.ts);
                }
                if let Some(t) = n.checked_sub(1).and_then(|i| v.get_mut(i)) {
                    *t = f.ts;
                }
            }
            Ok(None) => return Ok(v),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// The app's QUIC durations against the engine's QUIC ladder of `q`, each
/// wire duration between the timestamps of the two packets the engine
/// names (`start_frame`, `end_frame`; not the ladder's ms, which moves
/// received packets by half the client's RTT half, docs/design.md §4
/// "Vantage and RTT": at the client that half is the client's own
/// processing, which the app's instants include):
///
/// - `quic-handshake`: the client's first Initial → its Finished (the
///   ladder's `quic-handshake`); app: the probe's task first yielded after
///   quinn's `connect` (the first Initial leaves as the runtime drives the
///   connection) → quinn's handshake complete, which is when quinn has
///   the server's Finished and queues the client's.
/// - `request`: the packet with the request's HEADERS → the packet
///   completing the response's HEADERS (the ladder's `request`); app: h3
///   wrote the request's HEADERS → the response's HEADERS decoded.
/// - `transfer`: the packet with the response's first DATA byte → the one
///   with its FIN (the ladder's `transfer`); app: the first DATA bytes
///   read → the stream's end read.
/// - `total`: the client's first Initial → the response's FIN; app: from
///   the same instant as `quic-handshake` → the stream's end read.
///
/// A response packet that arrives before the client's Finished leaves
/// (0-RTT's answer, sent with the server's first flight: RFC 9001 §4.1.1)
/// cannot be read before the client has its 1-RTT keys, made as it
/// finishes the handshake: for the app the response starts there, so the
/// wire's `request` ends (and `transfer` starts) at the later of that
/// packet and the client's Finished.
fn quic_agreements(
    app: &crate::assemble::QuicDurations,
    q: &QuicReport,
    times: &[Timestamp],
) -> Vec<Agreement> {
    let at = |frame: u64| {
        usize::try_from(frame)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| times.get(i).copied())
    };
    let phase = |n: &str| q.ladder.iter().find(|p| p.name == n);
    let hs = phase("quic-handshake");
    // the client reads nothing of the response before it has its 1-RTT
    // keys, which the wire shows as its Finished leaving
    let keys = hs.and_then(|p| at(p.end_frame));
    let readable = |frame: u64| Some(at(frame)?.max(keys.unwrap_or_default()));
    let span = |from: u64, to: u64| Some((at(to)? - at(from)?).as_millis_f64());
    let mut v = Vec::new();
    if let Some(w) = hs.and_then(|p| span(p.start_frame, p.end_frame)) {
        v.push(Agreement::new("quic-handshake", app.handshake_ms, w));
    }
    let request = phase("request");
    if let Some(w) =
        request.and_then(|p| Some((readable(p.end_frame)? - at(p.start_frame)?).as_millis_f64()))
    {
        v.push(Agreement::new("request", app.request_ms, w));
    }
    let transfer = phase("transfer")
        .and_then(|p| Some((at(p.end_frame)? - readable(p.start_frame)?).as_millis_f64()));
    if let (Some(t), Some(w)) = (app.transfer_ms, transfer) {
        v.push(Agreement::new("transfer", t, w));
    }
    // the stream the ladder's `request` names, to its FIN
    let end = request.and_then(|p| {
        q.streams
            .iter()
            .find(|s| s.request_frame == Some(p.start_frame))
            .and_then(|s| s.end_frame)
    });
    if let (Some(h), Some(e)) = (hs, end) {
        if let Some(w) = span(h.start_frame, e) {
            v.push(Agreement::new("total", app.total_ms, w));
        }
    }
    v
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
    use rttlens_probe_model::Check;

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
