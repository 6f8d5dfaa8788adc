//! The words of a finding: its title, evidence, reasons and fix, written
//! from the typed record the engine gives (docs/design.md §5, docs/json.md).
//!
//! The engine says what it found as data: a finding's id, its typed
//! parameters ([`Finding::facts`]), and for each frame of evidence and each
//! reason for its confidence a [`Fact`] (a kind and named values). Here,
//! and only here, those become sentences: one file per detector, named as
//! the detector's file in `rttlens_core::detect` is, holding the templates
//! of its finding ids (title, fix) and of its fact kinds
//! (`<file name in kebab-case>.<what>`). Text, HTML and JSON all read the
//! sentences through this module, so they say the same thing.
//!
//! Written as code, not as a template language: a sentence picks its own
//! precision (`{:.1} ms`), and a few change with a value (singular or
//! plural, a clause only when a flag is set).

use rttlens_core::model::finding::{Args, Confidence, Evidence, Fact, Finding};
use rttlens_core::model::Phase;

/// A sentence: a template's own words as they are, or written with the
/// record's values. Most fixes and many evidence sentences are fixed text:
/// borrowed, they cost no allocation and no copy before the renderer
/// writes them.
pub type Text = std::borrow::Cow<'static, str>;

/// `format!` as a [`Text`].
macro_rules! text {
    ($($t:tt)*) => {
        $crate::words::Text::Owned(::std::format!($($t)*))
    };
}

/// What each words file takes.
mod prelude {
    pub(super) use super::Text;
    pub(super) use rttlens_core::model::finding::{Args, Finding, Value};
}

mod capture_drops;
mod common;
mod delayed_ack;
mod h2_concurrency_limit;
mod h2_flow_control_stall;
mod h2_head_of_line;
mod hello_retry_request;
mod http1_head_of_line;
mod ladder;
mod large_tls_record;
mod loss;
mod nagle;
mod population;
mod queueing_delay;
mod quic_amplification_limit;
mod quic_flow_control_stall;
mod quic_hello_retry;
mod quic_initial_loss;
mod quic_retry;
mod quic_version_negotiation;
mod quic_zero_rtt;
mod receive_window_limit;
mod rto_backoff;
mod sender_window_cap;
mod server_handshake_time;
mod server_unaccounted_time;
mod slow_start;
mod syn_retransmission;
mod tfo;
mod think_time;
mod tls12_full_handshake;
mod tls_resumption;
mod transfer_stall;
mod window_limit;
mod zero_rtt;
mod zero_window;

/// One detector's templates.
struct Words {
    /// The kind prefix of its facts (`nagle` for `nagle.small-segment`).
    prefix: &'static str,
    /// Its finding ids.
    ids: &'static [&'static str],
    title: fn(&Finding) -> Option<Text>,
    fix: fn(&Finding) -> Option<Text>,
    fact: fn(&str, &Args) -> Option<Text>,
}

/// Every detector's templates.
#[rustfmt::skip]
const WORDS: &[Words] = &[
    Words { fact: common::fact, prefix: "common", ids: &[], title: common::title, fix: common::fix },
    Words { fact: ladder::fact, prefix: "ladder", ids: &[], title: ladder::title, fix: ladder::fix },
    Words { fact: capture_drops::fact, prefix: "capture-drops", ids: &["capture-drops"], title: capture_drops::title, fix: capture_drops::fix },
    Words { fact: delayed_ack::fact, prefix: "delayed-ack", ids: &["delayed-ack"], title: delayed_ack::title, fix: delayed_ack::fix },
    Words { fact: h2_concurrency_limit::fact, prefix: "h2-concurrency-limit", ids: &["h2-concurrency-limit"], title: h2_concurrency_limit::title, fix: h2_concurrency_limit::fix },
    Words { fact: h2_flow_control_stall::fact, prefix: "h2-flow-control-stall", ids: &["h2-flow-control-stall"], title: h2_flow_control_stall::title, fix: h2_flow_control_stall::fix },
    Words { fact: h2_head_of_line::fact, prefix: "h2-head-of-line", ids: &["h2-head-of-line"], title: h2_head_of_line::title, fix: h2_head_of_line::fix },
    Words { fact: hello_retry_request::fact, prefix: "hello-retry-request", ids: &["hello-retry-request"], title: hello_retry_request::title, fix: hello_retry_request::fix },
    Words { fact: http1_head_of_line::fact, prefix: "http1-head-of-line", ids: &["http1-head-of-line"], title: http1_head_of_line::title, fix: http1_head_of_line::fix },
    Words { fact: large_tls_record::fact, prefix: "large-tls-record", ids: &["large-tls-record"], title: large_tls_record::title, fix: large_tls_record::fix },
    Words { fact: loss::fact, prefix: "loss", ids: &["fast-retransmit", "tail-loss-probe", "rto", "spurious-retransmission"], title: loss::title, fix: loss::fix },
    Words { fact: nagle::fact, prefix: "nagle", ids: &["nagle-stall", "nagle-delayed-ack"], title: nagle::title, fix: nagle::fix },
    Words { fact: population::fact, prefix: "population", ids: &["server-handshake-contention", "accept-queue-overflow", "syn-flood-cookies", "client-side-stall", "path-degradation"], title: population::title, fix: population::fix },
    Words { fact: queueing_delay::fact, prefix: "queueing-delay", ids: &["queueing-delay"], title: queueing_delay::title, fix: queueing_delay::fix },
    Words { fact: quic_amplification_limit::fact, prefix: "quic-amplification-limit", ids: &["quic-amplification-limit"], title: quic_amplification_limit::title, fix: quic_amplification_limit::fix },
    Words { fact: quic_flow_control_stall::fact, prefix: "quic-flow-control-stall", ids: &["quic-flow-control-stall"], title: quic_flow_control_stall::title, fix: quic_flow_control_stall::fix },
    Words { fact: quic_hello_retry::fact, prefix: "quic-hello-retry", ids: &["quic-hello-retry"], title: quic_hello_retry::title, fix: quic_hello_retry::fix },
    Words { fact: quic_initial_loss::fact, prefix: "quic-initial-loss", ids: &["quic-initial-loss"], title: quic_initial_loss::title, fix: quic_initial_loss::fix },
    Words { fact: quic_retry::fact, prefix: "quic-retry", ids: &["quic-retry"], title: quic_retry::title, fix: quic_retry::fix },
    Words { fact: quic_version_negotiation::fact, prefix: "quic-version-negotiation", ids: &["quic-version-negotiation"], title: quic_version_negotiation::title, fix: quic_version_negotiation::fix },
    Words { fact: quic_zero_rtt::fact, prefix: "quic-zero-rtt", ids: &["quic-zero-rtt-rejected", "quic-zero-rtt-unused"], title: quic_zero_rtt::title, fix: quic_zero_rtt::fix },
    Words { fact: receive_window_limit::fact, prefix: "receive-window-limit", ids: &["receive-window-limit"], title: receive_window_limit::title, fix: receive_window_limit::fix },
    Words { fact: rto_backoff::fact, prefix: "rto-backoff", ids: &["rto-backoff"], title: rto_backoff::title, fix: rto_backoff::fix },
    Words { fact: sender_window_cap::fact, prefix: "sender-window-cap", ids: &["sender-window-cap"], title: sender_window_cap::title, fix: sender_window_cap::fix },
    Words { fact: server_handshake_time::fact, prefix: "server-handshake-time", ids: &["server-handshake-time"], title: server_handshake_time::title, fix: server_handshake_time::fix },
    Words { fact: server_unaccounted_time::fact, prefix: "server-unaccounted-time", ids: &["server-unaccounted-time"], title: server_unaccounted_time::title, fix: server_unaccounted_time::fix },
    Words { fact: slow_start::fact, prefix: "slow-start", ids: &["initial-window", "slow-start"], title: slow_start::title, fix: slow_start::fix },
    Words { fact: syn_retransmission::fact, prefix: "syn-retransmission", ids: &["syn-retransmission"], title: syn_retransmission::title, fix: syn_retransmission::fix },
    Words { fact: tfo::fact, prefix: "tfo", ids: &["tfo-cookie", "tfo-accepted", "tfo-refused", "tfo-fallback"], title: tfo::title, fix: tfo::fix },
    Words { fact: think_time::fact, prefix: "think-time", ids: &["server-think-time", "client-think-time"], title: think_time::title, fix: think_time::fix },
    Words { fact: tls12_full_handshake::fact, prefix: "tls12-full-handshake", ids: &["tls12-full-handshake"], title: tls12_full_handshake::title, fix: tls12_full_handshake::fix },
    Words { fact: tls_resumption::fact, prefix: "tls-resumption", ids: &["tls-resumption"], title: tls_resumption::title, fix: tls_resumption::fix },
    Words { fact: transfer_stall::fact, prefix: "transfer-stall", ids: &["transfer-stall"], title: transfer_stall::title, fix: transfer_stall::fix },
    Words { fact: window_limit::fact, prefix: "window-limit", ids: &["window-limit"], title: window_limit::title, fix: window_limit::fix },
    Words { fact: zero_rtt::fact, prefix: "zero-rtt", ids: &["zero-rtt"], title: zero_rtt::title, fix: zero_rtt::fix },
    Words { fact: zero_window::fact, prefix: "zero-window", ids: &["zero-window"], title: zero_window::title, fix: zero_window::fix },
];

fn words_of_id(id: &str) -> Option<&'static Words> {
    WORDS.iter().find(|w| w.ids.contains(&id))
}

/// The finding's title: one line a person reads (an id no template knows
/// is written as its id and facts, never dropped).
pub fn title(f: &Finding) -> Text {
    words_of_id(f.id)
        .and_then(|w| (w.title)(f))
        .unwrap_or_else(|| {
            raw(&Fact {
                kind: f.id,
                args: f.facts.clone(),
            })
            .into()
        })
}

/// The finding's fix: the directive, sysctl, socket option or code change.
pub fn fix(f: &Finding) -> Text {
    words_of_id(f.id)
        .and_then(|w| (w.fix)(f))
        .unwrap_or_default()
}

/// A population finding's title: one line a person reads.
pub fn pop_title(f: &rttlens_core::model::population::PopFinding) -> Text {
    population::pop_title(f)
}

/// A population finding's fix.
pub fn pop_fix(f: &rttlens_core::model::population::PopFinding) -> Text {
    population::pop_fix(f)
}

/// A fact as a sentence. A kind no template knows is written as its kind
/// and values (`kind (name=value, …)`), never dropped.
pub fn fact(fact: &Fact) -> Text {
    let prefix = fact.kind.split('.').next().unwrap_or("");
    WORDS
        .iter()
        .find(|w| w.prefix == prefix)
        .and_then(|w| (w.fact)(fact.kind, &fact.args))
        .unwrap_or_else(|| raw(fact).into())
}

/// What happened in a ladder phase.
pub fn phase_detail(p: &Phase) -> Text {
    fact(&p.detail)
}

/// What one frame of evidence shows: its facts joined by `; `.
pub fn evidence(e: &Evidence) -> Text {
    join(&e.facts)
}

/// Why the finding has its confidence: the reasons joined by `; `.
pub fn why(c: &Confidence) -> Text {
    join(&c.why)
}

/// `facts` as sentences joined by `; `.
fn join(facts: &[Fact]) -> Text {
    // most evidence frames and reasons have one fact: its sentence as it is
    if let [one] = facts {
        return fact(one);
    }
    let mut s = String::new();
    for (i, f) in facts.iter().enumerate() {
        if i > 0 {
            s.push_str("; ");
        }
        s.push_str(&fact(f));
    }
    s.into()
}

/// `kind (name=value, …)`: a fact no template knows.
fn raw(fact: &Fact) -> String {
    let mut s = fact.kind.to_string();
    for (i, (n, v)) in fact.args.iter().enumerate() {
        s.push_str(if i == 0 { " (" } else { ", " });
        s.push_str(n);
        s.push('=');
        s.push_str(&serde_json::to_string(v).unwrap_or_default());
    }
    if !fact.args.is_empty() {
        s.push(')');
    }
    s
}
