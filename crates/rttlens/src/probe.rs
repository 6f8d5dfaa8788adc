//! `rttlens probe URL`: turns the arguments into a
//! [`rttlens_probe::ProbeConfig`], runs it and renders the report.
//! Exit codes: 0 ok, 1 the target failed (the message names the phase),
//! 2 usage.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use rttlens_core::model::Connection;
use rttlens_probe::{self as probe, ErrorKind, Family, ProbeConfig};

use crate::args::{Format, ProbeArgs};
use crate::output;

/// The probe ran (checks that did not hold are in the report).
const EXIT_OK: u8 = 0;
/// The target failed: DNS, connect, TLS, HTTP or a timeout.
const EXIT_TARGET: u8 = 1;
/// A bad URL or option.
const EXIT_USAGE: u8 = 2;

/// Run `rttlens probe`.
pub fn run(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let cfg = match config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rttlens probe: {e}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    let mut report = match probe::run(&cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rttlens probe: {e}");
            let code = if e.kind == ErrorKind::Usage {
                EXIT_USAGE
            } else {
                EXIT_TARGET
            };
            return Ok(ExitCode::from(code));
        }
    };
    let pics = &args.pictures;
    let mut out = output::open(pics)?;
    // the report as text or JSON first: the connections (with their
    // traces) then go to the pictures without a copy
    let mut text = Vec::new();
    match args.format {
        Format::Text => rttlens_report::probe::write_text(&report, &mut out)?,
        Format::Json => rttlens_report::probe::write_json(&report, &mut out)?,
        Format::Html => rttlens_report::probe::write_text(&report, &mut text)?,
    }
    // the probe's connections drawn (the page, `--svg`); `-n 1000`: the
    // ten costliest, as `analyze` does
    let mut drawn = Vec::new();
    if let (Some(summary), true) = (&report.capture_summary, cfg.trace) {
        let source = format!("the probe's own capture of {}", report.url);
        drawn.push(output::fragment(
            &output::html_options(pics, 10),
            output::svg_dir(pics)?,
            ("", "", &source),
            // the TCP connections, then the QUIC ones (`--http3`)
            std::mem::take(&mut report.connections)
                .into_iter()
                .map(Connection::from)
                .chain(
                    std::mem::take(&mut report.quic_connections)
                        .into_iter()
                        .map(Connection::from),
                )
                .collect(),
            summary,
        )?);
    }
    if let (Format::Html, Some(p)) = (args.format, &report.path) {
        // the hops drawn, before the connections
        let mut frag = Vec::new();
        rttlens_report::html::path::fragment(p, &mut frag)?;
        drawn.insert(0, frag);
    }
    if let Format::Html = args.format {
        let title = format!("probe {}", report.url);
        rttlens_report::html::page(&mut out, &title, &output::preface(&text), &drawn)?;
    }
    out.flush()?;
    Ok(ExitCode::from(EXIT_OK))
}

fn config(a: &ProbeArgs) -> Result<ProbeConfig, String> {
    let mut c = ProbeConfig::new(a.url.clone());
    c.resolve = a.resolve.clone();
    c.family = match (a.ipv4, a.ipv6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => Family::Any,
    };
    c.tfo = a.tfo;
    c.http3 = a.http3;
    c.tls.version = a.tls;
    c.tls.alpn = if a.http2 {
        vec!["h2".into(), "http/1.1".into()]
    } else if a.http1_1 {
        vec!["http/1.1".into()]
    } else {
        a.alpn.clone()
    };
    c.tls.cacert = a.cacert.clone();
    c.tls.insecure = a.insecure;
    c.tls.keylog = a.keylog.clone();
    c.request.method = a.method.clone();
    for h in &a.headers {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| format!("-H '{h}': expected 'Name: value'"))?;
        c.request
            .headers
            .push((k.trim().to_string(), v.trim().to_string()));
    }
    c.request.body = match a.data.as_deref() {
        None => None,
        Some(d) => Some(match d.strip_prefix('@') {
            Some(path) => std::fs::read(path).map_err(|e| format!("-d @{path}: {e}"))?,
            None => d.as_bytes().to_vec(),
        }),
    };
    c.follow = a.location;
    c.count = a.count;
    c.sequence = a.sequence;
    c.max_time = a
        .max_time
        .as_deref()
        .map(|s| duration(s).map_err(|e| format!("--max-time {s}: {e}")))
        .transpose()?;
    c.connect_timeout = a
        .connect_timeout
        .as_deref()
        .map(|s| duration(s).map_err(|e| format!("--connect-timeout {s}: {e}")))
        .transpose()?;
    c.capture = !a.no_capture;
    c.path = a.path.then_some(probe::path::PathOptions {
        rounds: a.path_rounds,
        udp: a.http3,
        names: true,
    });
    c.pcap = a.pcap.clone();
    c.trace = output::wants_trace(a.format, &a.pictures);
    Ok(c)
}

/// `5`, `2.5s`, `500ms` (a bare number is seconds, as in curl).
fn duration(s: &str) -> Result<Duration, String> {
    let secs = crate::args::duration_ms(s, "s")? / 1000.0;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err("must be above 0 and at most a day".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations() {
        assert_eq!(duration("5").unwrap().as_millis(), 5000);
        assert_eq!(duration("250ms").unwrap().as_millis(), 250);
        assert_eq!(duration("0.5s").unwrap().as_millis(), 500);
        assert!(duration("0").is_err());
        assert!(duration("3h").is_err());
        assert!(duration("x").is_err());
    }
}
