//! A scenario's fix ([`Fix`]): the change its finding names, applied by
//! the lab to the scenario's own configuration — the servers it starts,
//! its sysctls, its link, its clients' arguments — so the same `run`
//! makes the fixed variant (`rttlens lab --verify-fix`, [`crate::verify`]).
//!
//! [`super::ScenarioCtx`] applies the change to what the scenario asks for
//! (its [`super::ScenarioCtx::builtin`], [`super::ScenarioCtx::nginx`],
//! [`super::ScenarioCtx::sysctls`], [`super::ScenarioCtx::curl`] and the
//! QUIC servers); the run applies [`Change::link`] to the link; a `run`
//! that builds a client command itself asks
//! [`super::ScenarioCtx::change`].

use rttlens_lab_net::link::LinkConfig;
use rttlens_lab_net::Sysctls;
use rttlens_lab_server::builtin::ServerConfig;
use rttlens_lab_server::nginx;
use rttlens_lab_server::quic::QuicConfig;

use crate::go_server::QuicGoOptions;

/// The fix of a scenario: which finding it answers and the change the lab
/// makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fix {
    /// The finding whose cost the fix must win back (the syntax of
    /// [`super::Scenario::expect`]: `[N:]id[|id…]`).
    pub finding: &'static str,
    /// What the lab changes.
    pub change: Change,
}

/// A change the lab can make to a scenario: each is the fix a finding's
/// words name (rttlens-report's `words`), in the lab's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `tcp_nodelay on` (nginx) and `TCP_NODELAY` on the built-in
    /// server's sockets: Nagle off.
    NoDelay,
    /// TLS 1.3 instead of 1.2: the client's `--tls-max 1.2` (curl) is
    /// dropped and it asks for 1.3.
    Tls13,
    /// A session ticket key that survives the server's restart (nginx
    /// `ssl_session_ticket_key`): the ticket is accepted.
    SharedTicketKey,
    /// 0-RTT kept on where the scenario turned it off (nginx
    /// `ssl_early_data on`).
    EarlyDataOn,
    /// The server's TFO key left as it was (no `tcp_fastopen_key`
    /// rotation): the client's cookie stays valid.
    KeepTfoKey,
    /// Records of 4 KB at most (nginx `ssl_buffer_size 4k`, the built-in
    /// server's `max_fragment_size`).
    SmallRecords,
    /// The server's think time taken away (its configured delay and
    /// `?think=MS`).
    NoThink,
    /// The client's own wait before its request taken away.
    NoClientThink,
    /// The link's loss, black hole and delay spike removed.
    NoLoss,
    /// The sender's buffer left to the kernel's autotuning (no `sndbuf=`
    /// on nginx's listen, no `SO_SNDBUF`).
    LargerSndbuf,
    /// The receiver's buffer and window scaling at the kernel's defaults
    /// (`net.ipv4.tcp_rmem`, `net.ipv4.tcp_window_scaling`).
    LargerRcvbuf,
    /// The reading application reads as fast as data comes (no rate limit)
    /// through a receive buffer at the kernel's defaults.
    FastReader,
    /// The client's HTTP/2 stream window raised to 1 MB (h2load `-w 20`).
    H2Window,
    /// nginx's `http2_max_concurrent_streams` at its default (128).
    H2Streams,
    /// The client ACKs at once (`ip route … quickack 1`): no delayed ACK.
    QuickAck,
    /// Handshakes at the TLS stack's own cost with no queue (an ECDSA
    /// P-256 key and enough handshake workers).
    HandshakeCpu,
    /// A certificate chain within the anti-amplification limit (no
    /// intermediates, no padding).
    SmallChain,
    /// No Retry: the QUIC server does not validate addresses first.
    NoRetry,
    /// The QUIC server accepts the client's key share (X25519): its
    /// key-exchange groups at their default (quinn's, Go's).
    KeyShare,
    /// The QUIC server's stream and connection windows left at their
    /// defaults.
    QuicWindow,
    /// The restarted QUIC server keeps the windows its tickets promised.
    KeepQuicWindows,
    /// The QUIC client offers the version the server speaks (v1) first.
    QuicV1,
    /// The QUIC client offers the version the server speaks (v2) first.
    QuicV2,
}

impl Change {
    /// Short name (`tcp_nodelay on`, `no loss`), for the table.
    pub fn name(self) -> &'static str {
        match self {
            Change::NoDelay => "tcp_nodelay on",
            Change::Tls13 => "TLS 1.3",
            Change::SharedTicketKey => "shared ticket key",
            Change::EarlyDataOn => "ssl_early_data on",
            Change::KeepTfoKey => "TFO key kept",
            Change::SmallRecords => "4 KB records",
            Change::NoThink => "no server think",
            Change::NoClientThink => "no client think",
            Change::NoLoss => "no loss",
            Change::LargerSndbuf => "autotuned sndbuf",
            Change::LargerRcvbuf => "default rcvbuf, wscale",
            Change::FastReader => "fast reader",
            Change::H2Window => "h2 window 1 MB",
            Change::H2Streams => "h2 streams 128",
            Change::QuickAck => "quickack",
            Change::HandshakeCpu => "handshake CPU",
            Change::SmallChain => "small chain",
            Change::NoRetry => "no Retry",
            Change::KeyShare => "X25519 accepted",
            Change::QuicWindow => "QUIC window",
            Change::KeepQuicWindows => "windows kept",
            Change::QuicV1 => "v1 first",
            Change::QuicV2 => "v2 first",
        }
    }

    /// The change to the link ([`LinkConfig`]).
    pub fn link(self, l: &mut LinkConfig) {
        if self == Change::NoLoss {
            l.loss_c2s = Default::default();
            l.loss_s2c = Default::default();
            l.spike = None;
        }
    }

    /// The change to the built-in server's configuration.
    pub fn builtin(self, c: &mut ServerConfig) {
        match self {
            Change::NoDelay => c.nodelay = true,
            Change::SmallRecords => c.record_size = Some(SMALL_RECORD),
            Change::NoThink => {
                c.think = std::time::Duration::ZERO;
                c.query_think = false;
            }
            Change::LargerSndbuf => c.sndbuf = None,
            Change::HandshakeCpu => c.handshake_cpu = None,
            _ => {}
        }
    }

    /// The change to an nginx configuration.
    pub fn nginx(self, n: &mut nginx::Config) {
        match self {
            Change::NoDelay => n.tcp_nodelay = true,
            Change::SmallRecords => n.ssl_buffer_size = Some(SMALL_RECORD),
            Change::LargerSndbuf => n.sndbuf = None,
            Change::EarlyDataOn => n.ssl_early_data = true,
            Change::H2Streams => n.http2_max_concurrent_streams = None,
            _ => {}
        }
    }

    /// The change to a namespace's sysctls.
    pub fn sysctls(self, s: &mut Sysctls) {
        if matches!(self, Change::LargerRcvbuf | Change::FastReader) {
            s.tcp_rmem = None;
            s.tcp_window_scaling = None;
        }
    }

    /// The change to curl's arguments.
    pub fn curl<'a>(self, args: &[&'a str]) -> Vec<&'a str> {
        let mut out = Vec::with_capacity(args.len());
        let mut it = args.iter().copied();
        while let Some(a) = it.next() {
            match (self, a) {
                (Change::Tls13, "--tls-max") => {
                    it.next();
                }
                (Change::Tls13, "--tlsv1.2") => out.push("--tlsv1.3"),
                (Change::FastReader, "--limit-rate") => {
                    it.next();
                }
                _ => out.push(a),
            }
        }
        out
    }

    /// The change to the built-in QUIC server's configuration.
    pub fn quic(self, q: &mut QuicConfig) {
        let d = QuicConfig::default();
        match self {
            Change::SmallChain => {
                q.intermediates = 0;
                q.cert_padding = 0;
            }
            Change::NoRetry => q.retry = false,
            Change::KeyShare => q.kx_groups = d.kx_groups,
            Change::QuicWindow => {
                q.stream_receive_window = d.stream_receive_window;
                q.receive_window = d.receive_window;
            }
            _ => {}
        }
    }

    /// The change to the quic-go server's options.
    pub fn quic_go(self, o: &mut QuicGoOptions) {
        match self {
            Change::SmallChain => {
                o.intermediates = 0;
                o.cert_padding = 0;
            }
            Change::NoRetry => o.retry = false,
            Change::KeyShare => o.curves = QuicGoOptions::default().curves,
            Change::KeepQuicWindows | Change::QuicWindow => {
                o.stream_window = None;
                o.max_stream_window = None;
                o.conn_window = None;
            }
            _ => {}
        }
    }
}

/// The record size [`Change::SmallRecords`] sets (bytes): nginx's
/// `ssl_buffer_size 4k`.
pub const SMALL_RECORD: usize = 4096;
