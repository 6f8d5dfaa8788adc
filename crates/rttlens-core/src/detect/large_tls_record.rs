//! `large-tls-record`: the response's first TLS record is larger than what
//! arrives in one round, so nothing can be decrypted until a later round
//! completes it (the first decrypted byte waits for the whole record).
//!
//! Cost: time from the record's first byte to its completion, as the client
//! sees it (both are packets it receives). Source: docs/design.md §4 "Large
//! records"; nginx `ssl_buffer_size` (default 16k); the "dynamic record
//! sizing" technique (small records for the first ~1 MB, then 16 KB).

use super::finding::{conf, ev, Finding, Level};
use crate::analysis::Analysis;
use crate::base::text::{self, text};

/// Finding id.
pub(crate) const ID: &str = "large-tls-record";

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let Some(fr) = a.app.first_record else {
        return vec![];
    };
    let wait = fr.complete.ts - fr.first.ts;
    let cost = a.cost(wait);
    let span = [(fr.first.ts, fr.complete.ts)];
    if !super::kept(a, ID, cost, &span) {
        return vec![];
    }
    let mss = a.tcp.mss[1].max(1);
    let segments = fr.len.div_ceil(mss);
    let mut evidence = vec![
        ev(
            fr.first.frame,
            text!(
                "first byte of a {} B application record (spans ~{segments} segments)",
                fr.len
            ),
        ),
        ev(
            fr.complete.frame,
            text!(
                "record complete {:.1} ms later: first decrypted byte",
                wait.as_millis_f64()
            ),
        ),
    ];
    if let Some(t) = &a.transfer {
        let split = t
            .rounds
            .iter()
            .find(|r| r.first.frame > fr.first.frame && r.first.frame <= fr.complete.frame);
        if let Some(r) = split {
            evidence.insert(
                1,
                ev(
                    r.first.frame,
                    text!(
                        "round {} starts: the record did not fit in the previous round",
                        r.index
                    ),
                ),
            );
        }
    }
    vec![Finding {
        facts: Default::default(),
        id: ID,
        connection: a.conn.index,
        title: text!(
            "first TLS record of the response is {} B: the first decrypted byte waited {} for it to complete",
            fr.len,
            cost.describe()
        ),
        cost,
        evidence,
        confidence: conf(Level::High, "record boundaries read from the TLS record headers"),
        fix: text::owned("Send small records at the start of a response: nginx `ssl_buffer_size 4k;` (default 16k), HAProxy `tune.ssl.maxrecord 1400`, or a server with dynamic record sizing (small records for the first flights, 16 KB once the window is open)."),
        references: vec!["RFC 8446 §5.1 (record size)", "nginx ssl_buffer_size"],
        span: span.to_vec(),
    }]
}
