//! `h2-flow-control-stall`: an HTTP/2 sender with more to send stopped at an
//! exhausted stream or connection window until the receiver's WINDOW_UPDATE
//! came (RFC 9113 §5.2, §6.9). A window smaller than the path's
//! bandwidth-delay product bounds a stream at window / RTT, whatever TCP's
//! congestion window allows.
//!
//! Cost: per stall, from the DATA frame that left the window at 0 to the
//! sender's next DATA frame (the time it had data and could not send it),
//! their union over the connection.

use super::finding::{conf, ev, Args, Fact, Finding, Level, Value};
use crate::analysis::Analysis;
use crate::base::fact::{args, fact};
use crate::base::time::union_len;
use crate::proto::h2::{Stall, Window};

/// Finding id.
pub(crate) const ID: &str = "h2-flow-control-stall";

/// `a` with the window `s` waited on: `window` (`connection` or `stream`),
/// and a stream's id and size.
fn with_window(a: Args, s: &Stall) -> Args {
    match s.window {
        Window::Connection => a.with("window", "connection"),
        Window::Stream(id) => a
            .with("window", "stream")
            .with("stream", Value::Count(u64::from(id)))
            .with(
                "window_bytes",
                Value::Bytes(u64::try_from(s.size).unwrap_or(0)),
            ),
    }
}

/// See the module docs.
pub(crate) fn detect(a: &Analysis) -> Vec<Finding> {
    let (stalls, count) = (&a.h2_stalls.0, a.h2_stalls.1);
    let Some(&first) = stalls.first() else {
        return vec![];
    };
    let span: Vec<_> = stalls
        .iter()
        .map(|s| (s.exhausted.ts, s.resumed.ts))
        .collect();
    let cost = a.cost(union_len(&span));
    let sender = first.sender;
    let receiver = first.sender.peer();
    let bound = (a.rtt_min.as_secs_f64() > 0.0 && matches!(first.window, Window::Stream(_)))
        .then(|| first.size as f64 / a.rtt_min.as_secs_f64());
    let mut evidence = Vec::new();
    for s in stalls.iter().take(3) {
        evidence.push(ev(
            s.exhausted.frame,
            Fact {
                kind: "h2-flow-control-stall.window-used-up",
                args: with_window(args!(sender = sender), s),
            },
        ));
        evidence.push(ev(
            s.update.frame,
            Fact {
                kind: "h2-flow-control-stall.window-update",
                args: with_window(args!(receiver = receiver), s),
            },
        ));
        evidence.push(ev(
            s.resumed.frame,
            fact!(
                "h2-flow-control-stall.data-resumes",
                sender = sender,
                wait_ms = s.resumed.ts - s.exhausted.ts
            ),
        ));
    }
    let mut facts = with_window(
        args!(
            sender = sender,
            receiver = receiver,
            stalls = Value::Count(count),
        ),
        &first,
    );
    if let Some(bps) = bound {
        facts.set("bytes_per_sec", Value::Number(bps));
    }
    vec![Finding {
        facts,
        id: ID,
        connection: a.index(),
        cost,
        evidence,
        confidence: conf(Level::High, fact!("h2-flow-control-stall.window-at-zero")),
        references: vec!["RFC 9113 §5.2", "RFC 9113 §6.9", "RFC 9113 §6.5.2"],
        span,
    }]
}
