//! Lab scenarios: each one is a topology (link knobs, sysctls), a server
//! configuration, a client action and the findings the engine must report
//! on a capture of what happened.
//!
//! [`catalogue()`](crate::catalogue()) lists them; [`run_scenario`] (in `run.rs`; and
//! [`run_scenario_beside`], with a program of the caller's running in a
//! namespace throughout) builds a
//! fresh [`rttlens_lab_net::Lab`] for one, captures on the client's TUN device (tcpdump; the server's for
//! scenarios whose [`Scenario::vantage`] says so) and at the link's
//! middle, runs it, analyses the client capture with
//! [`rttlens_core::pipeline::run`] and checks the expectations.
//!
//! A scenario's run gets a [`ScenarioCtx`] (in `ctx.rs`) to start its
//! servers and run its clients. The built-in server runs in-process: a
//! thread inside the server namespace ([`rttlens_lab_net::Lab::thread_in`])
//! with its own single-threaded tokio runtime, so no binary has to be
//! found. nginx, curl and `openssl s_client` run as processes inside the
//! namespaces.

mod check;
mod ctx;
mod fix;
mod run;
mod variants;

pub use check::ExpectationResult;
pub use ctx::{Between, ScenarioCtx};
pub use fix::{Change, Fix, SMALL_RECORD};
pub use run::{
    run_analysed, run_scenario, run_scenario_beside, Analysed, Beside, BesideOutcome,
    ScenarioOutcome, BESIDE_READY, BESIDE_STOP,
};
pub use variants::VariantOutcome;

use rttlens_core::model::finding::Finding;
use rttlens_core::model::{ConnReport, QuicReport};
use rttlens_lab_net::link::LinkConfig;
use rttlens_lab_net::{Host, LabError};

/// The programs a scenario run may start, with their Debian packages.
pub const PROGRAMS: [(&str, &str); 5] = [
    ("nginx", "nginx-light"),
    ("curl", "curl"),
    ("openssl", "openssl"),
    ("tcpdump", "tcpdump"),
    ("h2load", "nghttp2-client"),
];

/// One lab experiment.
#[derive(Debug)]
pub struct Scenario {
    /// Stable name (`nagle-response`).
    pub name: &'static str,
    /// One line: what it shows.
    pub about: &'static str,
    /// Findings that must appear. Syntax `[N:]id[|id…]`: any of the `|`
    /// alternatives; with `N:` on the N-th connection (0-based, in capture
    /// order), otherwise on any connection. An expectation whose ids are
    /// all QUIC's (`quic-…`) is looked up on the capture's QUIC
    /// connections ([`rttlens_core::model::QuicReport`], `N` counting
    /// those), every other one on its TCP connections.
    pub expect: &'static [&'static str],
    /// Findings that must not appear (same syntax; for controls). `quic-*`
    /// forbids every finding on a QUIC connection (a QUIC control).
    pub forbid: &'static [&'static str],
    /// The ladder phase whose line is shown (`tls`, `request`, `transfer`;
    /// `quic-handshake` from a QUIC connection's ladder). A scenario whose
    /// key is a QUIC phase fails when its capture holds no QUIC connection.
    pub key: &'static str,
    /// Where the analysed capture is taken: tcpdump on this side's TUN
    /// device. The client for most; the server for loss the link inflicts
    /// server→client, whose originals only the server vantage sees.
    pub vantage: Host,
    /// Adjusts the link before the lab is built (loss, rate).
    pub link: fn(&mut LinkConfig),
    /// Starts the server(s) and runs the client action.
    pub run: fn(&mut ScenarioCtx) -> Result<(), LabError>,
    /// Partial copies of the capture analysed again, as captures from the
    /// wild come (see [`Variant`]).
    pub variants: &'static [Variant],
    /// The fix its finding names, as the lab applies it to the scenario's
    /// own configuration (`rttlens lab --verify-fix`); `None` for a
    /// control, an outcome (a resumption, 0-RTT accepted) or a cause the
    /// lab cannot take away.
    pub fix: Option<Fix>,
}

/// A partial copy of a scenario's capture, analysed again: it must name
/// its expectations on the same connection, citing frames the full
/// capture's finding cites (mapped back), and never say what the full
/// capture does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The vantage capture from its first payload segment on: tcpdump
    /// started after the three-way handshake, so there is no SYN, no
    /// handshake RTT and no window scale option. The scenario's own
    /// expectations must hold, the connection must say it started
    /// mid-stream, and its RTT must be known (data/ACK pairs, timestamps).
    MidStream,
    /// The same copy, where one direction's packets cannot prove the
    /// scenario's cause without the handshake (`why` says what is missing):
    /// `expect` is what the copy still proves (a less specific finding, such
    /// as `window-limit` for a `receive-window-limit` whose window scale is
    /// only in the SYNs), and every other check of [`Variant::MidStream`]
    /// holds: nothing the full capture does not say, a header that says it
    /// started mid-stream, an RTT.
    MidStreamSaysLess {
        /// What the copy cannot prove, and why.
        why: &'static str,
        /// What it still proves.
        expect: &'static [&'static str],
    },
    /// The vantage capture as a host with receive offload (GRO) on would
    /// have taken it: runs of full-sized segments merged into segments of
    /// up to 64 KB ([`crate::copies::coalesce`]). The scenario's expectations must
    /// hold, and the capture-quality note must count the oversized segments.
    Offload,
    /// Only the server's packets, captured at the server (the data sender
    /// in every scenario that has this variant): one direction, as a
    /// `src host` filter or asymmetric routing leaves it. `expect` replaces
    /// the scenario's expectations (what one direction can prove); the
    /// connection must say that only one side was seen.
    SenderOnly {
        /// Findings that must appear (the scenario's syntax).
        expect: &'static [&'static str],
    },
    /// The vantage capture cut to [`SNAPLEN`] bytes a frame, as `tcpdump
    /// -s 96` takes it: TLS and HTTP unreadable. Run for every scenario.
    /// The expectations the headers alone prove
    /// ([`rttlens_core::detect::HEADER_ONLY`]) must hold; the others may go.
    Snaplen,
    /// The vantage capture analysed without the key log its clients wrote,
    /// as most QUIC captures come: Initial packets still open (their keys
    /// come from the client's first Destination Connection ID), the rest
    /// is sizes, timing, long-header types and the spin bit. Run for every
    /// scenario whose capture holds a QUIC connection. The QUIC
    /// expectations those prove ([`rttlens_core::detect::QUIC_KEYLESS`])
    /// must hold; every finding must be one the keyed analysis has on the
    /// same connection; a connection whose keyed analysis has a handshake
    /// phase or an RTT must have them too, the RTT never below the keyed
    /// one (its samples are a subset).
    Keyless,
}

impl Scenario {
    /// What the [`Variant::Snaplen`] copy must still prove: the
    /// expectations the headers alone prove (every alternative of one,
    /// [`rttlens_core::detect::HEADER_ONLY`]).
    pub fn header_only(&self) -> Vec<&'static str> {
        self.expect
            .iter()
            .copied()
            .filter(|e| {
                parse_expect(e)
                    .1
                    .iter()
                    .all(|id| rttlens_core::detect::HEADER_ONLY.contains(id))
            })
            .collect()
    }

    /// What the [`Variant::Keyless`] analysis must still prove: the QUIC
    /// expectations whose every alternative needs no key
    /// ([`rttlens_core::detect::QUIC_KEYLESS`]). A population finding is
    /// not among them: without keys a connection's RTT comes from the
    /// Initials' ACKs alone, and a server slow to answer its first Initial
    /// (a handshake queue) holds that ACK too, so its wait reads as path
    /// (RFC 9002 §5.3 takes no ack delay off below the smallest sample)
    /// and the queue is not named: said less.
    pub fn keyless(&self) -> Vec<&'static str> {
        self.expect
            .iter()
            .copied()
            .filter(|e| {
                is_quic(e)
                    && parse_expect(e)
                        .1
                        .iter()
                        .all(|id| rttlens_core::detect::QUIC_KEYLESS.contains(id))
            })
            .collect()
    }
}

/// Bytes a frame kept by the [`Variant::Snaplen`] copies.
pub const SNAPLEN: u32 = 96;

impl Variant {
    /// Short name (`mid-stream`, `sender-only`).
    pub fn name(&self) -> &'static str {
        match self {
            Variant::MidStream | Variant::MidStreamSaysLess { .. } => "mid-stream",
            Variant::Offload => "offload",
            Variant::SenderOnly { .. } => "sender-only",
            Variant::Snaplen => "snaplen",
            Variant::Keyless => "keyless",
        }
    }
}

/// `[N:]id[|id…]` → (connection, alternatives).
pub(crate) fn parse_expect(e: &str) -> (Option<usize>, Vec<&str>) {
    let (conn, ids) = match e.split_once(':') {
        Some((n, rest)) => match n.parse::<usize>() {
            Ok(n) => (Some(n), rest),
            Err(_) => (None, e),
        },
        None => (None, e),
    };
    (conn, ids.split('|').collect())
}

/// Whether an expectation is about QUIC connections: all its ids are
/// QUIC's (`quic-…`).
pub(crate) fn is_quic(e: &str) -> bool {
    parse_expect(e).1.iter().all(|id| id.starts_with("quic-"))
}

/// The first finding matching `e` on the connections it names: the QUIC
/// ones when [`is_quic`], the TCP ones otherwise.
pub(crate) fn lookup<'c>(
    conns: &'c [ConnReport],
    quic: &'c [QuicReport],
    e: &str,
) -> Option<(usize, &'c Finding)> {
    if is_quic(e) {
        find_in(quic.iter().map(|q| &q.findings[..]), e)
    } else {
        find_in(conns.iter().map(|c| &c.findings[..]), e)
    }
}

fn find_in<'c>(
    lists: impl Iterator<Item = &'c [Finding]>,
    e: &str,
) -> Option<(usize, &'c Finding)> {
    let (conn, ids) = parse_expect(e);
    lists
        .enumerate()
        .filter(|(i, _)| conn.is_none_or(|n| n == *i))
        .find_map(|(i, fs)| fs.iter().find(|f| ids.contains(&f.id)).map(|f| (i, f)))
}
