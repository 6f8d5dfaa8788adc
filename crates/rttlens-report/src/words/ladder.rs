//! The words of a ladder phase's detail (kind `ladder.*`,
//! `rttlens_core::analysis::ladder::Phase::detail`).

use super::prelude::*;

/// No finding id of its own.
pub(super) fn title(_f: &Finding) -> Option<Text> {
    None
}

/// No finding id of its own.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    None
}

/// A fact of kind `ladder.*` as a sentence.
pub(super) fn fact(kind: &str, a: &Args) -> Option<Text> {
    Some(match kind {
        "ladder.connect" => {
            let mut s = match a.u64("syn_transmissions") {
                n if n > 1 => text!("SYN sent {n} times, then SYN-ACK"),
                _ => "SYN → SYN-ACK".into(),
            };
            let data = a.u64("syn_data_bytes");
            if data > 0 {
                s.to_mut()
                    .push_str(&format!("; {data} B of data in the SYN (TCP Fast Open)"));
            }
            s
        }
        "ladder.tls" => text!(
            "TLS {} handshake, {} (nominal {} RTT)",
            a.str("version"),
            a.str("kind"),
            a.u64("nominal_rtts")
        ),
        "ladder.request" => "first request byte sent → first response byte received (TTFB)".into(),
        "ladder.first-decrypted-byte" => text!(
            "first application record ({} B) complete",
            a.u64("record_bytes")
        ),
        "ladder.transfer" => {
            let rounds = a.u64("rounds");
            let mut s = format!(
                "{} B in {} round{}, {:.2} MB/s",
                a.u64("bytes"),
                rounds,
                if rounds == 1 { "" } else { "s" },
                a.f64("bytes_per_sec") / 1e6
            );
            if a.get("bound_by").is_some() {
                s.push_str(&format!(
                    "; bound by {}: {} B in flight / RTT = {:.2} MB/s",
                    a.str("bound_by"),
                    a.u64("bound_flight_bytes"),
                    a.f64("bound_bytes_per_sec") / 1e6
                ));
            }
            s.into()
        }
        "ladder.close" => match (a.get("rst_from"), a.u64("fins")) {
            (Some(_), _) => text!("FIN, then RST from the {}", a.str("rst_from")),
            (None, 2) => "FIN from both sides".into(),
            (None, _) => "FIN from one side only".into(),
        },
        "ladder.quic-handshake" => {
            let how = if a.flag("finished_seen") {
                "the client's Finished"
            } else {
                "the client's first 1-RTT packet (Finished not decrypted)"
            };
            let extra: Vec<&str> = [
                ("version_negotiation", "Version Negotiation"),
                ("retry", "Retry"),
                ("hello_retry", "HelloRetryRequest"),
            ]
            .into_iter()
            .filter(|(k, _)| a.flag(k))
            .map(|(_, w)| w)
            .collect();
            if extra.is_empty() {
                text!("client Initial to {how}")
            } else {
                text!("client Initial to {how}, with {}", extra.join(", "))
            }
        }
        "ladder.h3-request" => text!(
            "{} {} on stream {}: HEADERS to the response's HEADERS",
            a.get("method")
                .and_then(|v| v.as_str())
                .unwrap_or("request"),
            a.str("path"),
            a.u64("stream")
        ),
        "ladder.h3-transfer" => text!("{} response bytes", a.u64("bytes")),
        _ => return None,
    })
}
