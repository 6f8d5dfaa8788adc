//! Over 700 lines: a catalogue of data, one entry per scenario.
//!
//! The scenarios. Each `run` starts its server(s) in the server namespace
//! and drives real clients (curl, `openssl s_client`) from the client one.

use std::time::Duration;

use rttlens_lab_server::builtin::{HandshakeCpu, HandshakeWrites, ServerConfig};
use rttlens_lab_server::quic::{KxGroup, QuicConfig};
use rttlens_lab_server::TlsVersion;

use rttlens_lab_net::link::{Direction, LinkConfig, Spike};
use rttlens_lab_net::{Host, Lab, LabError, Sysctls};

use crate::go_server::QuicGoOptions;
use crate::scenario::{Change, Fix, Scenario, ScenarioCtx, Variant};

const NAGLE: &str = "nagle-stall|nagle-delayed-ack";

fn plain_link(_: &mut LinkConfig) {}

/// A delay spike on the ACK path: from the server's first response segment
/// on, the client's packets are held 600 ms, well past the server's
/// retransmission timeout (200 ms + RTT), then delivered.
fn ack_spike(l: &mut LinkConfig) {
    l.spike = Some(Spike {
        after: (Direction::ServerToClient, 1),
        held: Direction::ClientToServer,
        hold: Duration::from_millis(600),
    });
}

/// `https://SERVER:port/size/n`.
fn url(port: u16, n: usize) -> String {
    format!("https://{}:{port}/size/{n}", Lab::SERVER_V4)
}

static CATALOGUE: [Scenario; 61] = [
    Scenario {
        name: "nagle-response",
        about: "nginx tcp_nodelay off, TLS 1.3, keep-alive: the small response waits behind the NewSessionTicket for the client's ACK",
        expect: &[NAGLE],
        forbid: &[],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: |c| nagle_nginx(c, false),
        variants: &[],
        fix: Some(Fix { finding: NAGLE, change: Change::NoDelay }),
    },
    Scenario {
        name: "nodelay",
        about: "control: the same with tcp_nodelay on, nothing waits",
        expect: &[],
        forbid: &["nagle-stall", "nagle-delayed-ack", "delayed-ack"],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: |c| nagle_nginx(c, true),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "nagle-handshake",
        about: "built-in server, Nagle on, server flight in two writes: the TLS 1.3 handshake takes 2 RTT",
        expect: &[NAGLE],
        forbid: &[],
        key: "tls",
        vantage: Host::Client,
        link: plain_link,
        run: nagle_handshake,
        variants: &[],
        fix: Some(Fix { finding: NAGLE, change: Change::NoDelay }),
    },
    Scenario {
        name: "tls12-vs-tls13",
        about: "a TLS 1.2 full handshake (2 RTT) then a TLS 1.3 one (1 RTT)",
        expect: &["0:tls12-full-handshake"],
        forbid: &["1:tls12-full-handshake"],
        key: "tls",
        vantage: Host::Client,
        link: plain_link,
        run: tls12_vs_tls13,
        variants: &[],
        fix: Some(Fix { finding: "0:tls12-full-handshake", change: Change::Tls13 }),
    },
    Scenario {
        name: "resumption",
        about: "openssl s_client: a full TLS 1.3 handshake, then one resumed with its ticket",
        expect: &["1:tls-resumption"],
        forbid: &["0:tls-resumption"],
        key: "tls",
        vantage: Host::Client,
        link: plain_link,
        run: resumption,
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "resumption-declined",
        about: "nginx restarts with a new ticket key between the two connections: the second offers its ticket and gets a full handshake",
        expect: &["1:tls-resumption"],
        forbid: &[],
        key: "tls",
        vantage: Host::Client,
        link: plain_link,
        run: resumption_declined,
        variants: &[],
        fix: Some(Fix { finding: "1:tls-resumption", change: Change::SharedTicketKey }),
    },
    Scenario {
        name: "zero-rtt",
        about: "nginx ssl_early_data on: the third connection sends its request as 0-RTT early data",
        expect: &["2:zero-rtt"],
        forbid: &[],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: zero_rtt,
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "zero-rtt-rejected",
        about: "the same, but the server that takes the third connection has ssl_early_data off (same ticket key): resumed, early data rejected and sent again",
        expect: &["2:zero-rtt"],
        forbid: &[],
        key: "tls",
        vantage: Host::Client,
        link: plain_link,
        run: zero_rtt_rejected,
        variants: &[],
        fix: Some(Fix { finding: "2:zero-rtt", change: Change::EarlyDataOn }),
    },
    Scenario {
        name: "probe-sequence",
        about: "rttlens probe --sequence against nginx with early data: full, resumed, then 0-RTT, each verified by the probe",
        expect: &["1:tls-resumption", "2:zero-rtt"],
        forbid: &["0:tls-resumption"],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: probe_sequence,
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "tfo",
        about: "TCP Fast Open: the first connection gets a cookie, the second carries its request in the SYN",
        expect: &["0:tfo-cookie", "1:tfo-accepted"],
        forbid: &[],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: tfo,
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "tfo-refused",
        about: "TCP Fast Open with a stale cookie: the server's key changed, so the data in the SYN is refused and waits for the handshake",
        expect: &["0:tfo-cookie", "1:tfo-refused"],
        forbid: &["1:tfo-accepted"],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: tfo_refused,
        variants: &[],
        fix: Some(Fix { finding: "1:tfo-refused", change: Change::KeepTfoKey }),
    },
    Scenario {
        name: "tfo-fallback",
        about: "TCP Fast Open, but the link drops the SYN that carries data: the client resends a plain SYN a second later",
        expect: &["0:tfo-cookie", "1:tfo-fallback"],
        forbid: &["1:tfo-accepted"],
        key: "connect",
        vantage: Host::Client,
        link: |l| l.loss_c2s.first_syn_data = true,
        run: tfo,
        variants: &[],
        fix: Some(Fix { finding: "1:tfo-fallback", change: Change::NoLoss }),
    },
    Scenario {
        name: "big-records",
        about: "1 MB over 16 KB TLS records: the client decrypts only once a whole record is in",
        expect: &["large-tls-record"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Client,
        link: plain_link,
        run: |c| records(c, None),
        variants: &[Variant::Offload],
        fix: Some(Fix { finding: "large-tls-record", change: Change::SmallRecords }),
    },
    Scenario {
        name: "small-records",
        about: "control: the same over ~1.4 KB records",
        expect: &[],
        forbid: &["large-tls-record"],
        key: "transfer",
        vantage: Host::Client,
        link: plain_link,
        run: |c| records(c, Some(1400)),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "clean",
        about: "control: a small TLS 1.3 download with TCP_NODELAY and small records: none of the causes",
        expect: &[],
        forbid: &[
            "nagle-stall",
            "nagle-delayed-ack",
            "delayed-ack",
            "tls12-full-handshake",
            "hello-retry-request",
            "sender-window-cap",
            "receive-window-limit",
            "large-tls-record",
            "server-think-time",
            "fast-retransmit",
            "tail-loss-probe",
            "rto",
            "zero-window",
            "syn-retransmission",
            "capture-drops",
        ],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: |c| download(c, ServerConfig { record_size: Some(1400), ..ServerConfig::default() }, 20_000),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "server-think",
        about: "the built-in server thinks 200 ms before answering",
        expect: &["server-think-time"],
        forbid: &[],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: server_think,
        variants: &[Variant::Offload, Variant::MidStream],
        fix: Some(Fix { finding: "server-think-time", change: Change::NoThink }),
    },
    Scenario {
        name: "keepalive-slow-request",
        about: "curl fetches 10 files over one keep-alive TLS 1.3 connection, writing its TLS keys (SSLKEYLOGFILE); the built-in server thinks 200 ms on the tenth only: decrypted, that request is named",
        expect: &["server-think-time"],
        forbid: &["client-think-time"],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: keepalive_slow_request,
        variants: &[],
        fix: Some(Fix { finding: "server-think-time", change: Change::NoThink }),
    },
    Scenario {
        name: "pipelined-head-of-line",
        about: "openssl s_client pipelines three requests over TLS 1.3, writing its keys; the built-in server thinks 200 ms on the first: the two behind it wait, HTTP/1.1 answers in order",
        expect: &["http1-head-of-line", "server-think-time"],
        forbid: &[],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: pipelined_head_of_line,
        variants: &[],
        fix: Some(Fix { finding: "server-think-time", change: Change::NoThink }),
    },
    Scenario {
        name: "fast-retransmit",
        about: "the link drops one server data segment mid-transfer; duplicate ACKs bring it back",
        expect: &["fast-retransmit"],
        forbid: &["rto"],
        key: "transfer",
        vantage: Host::Client,
        link: |l| l.loss_s2c.indices = vec![60],
        run: |c| download(c, ServerConfig::default(), 1_000_000),
        variants: &[Variant::Offload, Variant::MidStream, Variant::SenderOnly { expect: &["fast-retransmit"] }],
        fix: Some(Fix { finding: "fast-retransmit", change: Change::NoLoss }),
    },
    Scenario {
        name: "tail-loss",
        about: "plain HTTP, 10 KB: the link drops the response's last segment; a tail loss probe resends it",
        expect: &["tail-loss-probe"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Server,
        link: |l| l.loss_s2c.indices = vec![TAIL],
        run: |c| download_plain(c, TAIL_BYTES),
        variants: &[Variant::MidStream, Variant::SenderOnly { expect: &["tail-loss-probe"] }],
        fix: Some(Fix { finding: "tail-loss-probe", change: Change::NoLoss }),
    },
    Scenario {
        name: "rto",
        about: "plain HTTP, 10 KB: the link drops the last segment and its retransmission; only the timer recovers",
        expect: &["rto"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Server,
        link: |l| l.loss_s2c.indices = vec![TAIL, TAIL + 1],
        run: |c| download_plain(c, TAIL_BYTES),
        variants: &[Variant::MidStream, Variant::SenderOnly { expect: &["rto"] }],
        fix: Some(Fix { finding: "rto", change: Change::NoLoss }),
    },
    Scenario {
        name: "sndbuf-cap",
        about: "nginx listen sndbuf=32k, 2 MB: the sender's buffer caps every flight",
        expect: &["sender-window-cap"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Client,
        link: plain_link,
        run: sndbuf_cap,
        variants: &[Variant::Offload, Variant::MidStream],
        fix: Some(Fix { finding: "sender-window-cap", change: Change::LargerSndbuf }),
    },
    Scenario {
        name: "no-wscale",
        about: "client without TCP window scaling, 2 MB: the 64 KB receive window caps every flight",
        expect: &["receive-window-limit"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Client,
        link: plain_link,
        run: no_wscale,
        variants: &[Variant::Offload, Variant::MidStream],
        fix: Some(Fix { finding: "receive-window-limit", change: Change::LargerRcvbuf }),
    },
    Scenario {
        name: "no-wscale-server",
        about: "no-wscale seen from the server: the flight sits exactly at the 65535 B window",
        expect: &["receive-window-limit"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Server,
        link: plain_link,
        run: no_wscale,
        variants: &[Variant::MidStream],
        fix: Some(Fix { finding: "receive-window-limit", change: Change::LargerRcvbuf }),
    },
    Scenario {
        name: "h2-flow-control",
        about: "h2load over HTTP/2 in clear (prior knowledge) from nginx with a 16 KB stream window (-w 14): a 300 KB download stops every 16 KB until the client's WINDOW_UPDATE",
        expect: &["h2-flow-control-stall"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Client,
        link: plain_link,
        run: h2_flow_control,
        variants: &[],
        fix: Some(Fix { finding: "h2-flow-control-stall", change: Change::H2Window }),
    },
    Scenario {
        name: "h2-concurrency",
        about: "nginx allows one HTTP/2 stream at a time (http2_max_concurrent_streams 1); after a first request, hyper's client asks for 8 files of 20 KB at once over h2c: each waits in the client for the stream ahead of it to close",
        expect: &["h2-concurrency-limit"],
        forbid: &["server-think-time"],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: h2_concurrency,
        variants: &[],
        fix: Some(Fix { finding: "h2-concurrency-limit", change: Change::H2Streams }),
    },
    Scenario {
        name: "h2-head-of-line",
        about: "h2load fetches 4 files of 200 KB at once over one HTTP/2 connection in clear from nginx; the link drops one server segment: the other streams' bytes behind it wait for its retransmission",
        expect: &["h2-head-of-line", "fast-retransmit|tail-loss-probe|rto"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Client,
        link: |l| l.loss_s2c.indices = vec![60],
        run: h2_head_of_line,
        variants: &[Variant::SenderOnly { expect: &["fast-retransmit|tail-loss-probe|rto"] }],
        fix: Some(Fix { finding: "fast-retransmit|tail-loss-probe|rto", change: Change::NoLoss }),
    },
    Scenario {
        name: "small-rcvbuf",
        about: "client tcp_rmem capped at 64 KB, 2 MB: the receive buffer caps every flight",
        expect: &["receive-window-limit"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Client,
        link: plain_link,
        run: small_rcvbuf,
        variants: &[Variant::MidStreamSaysLess {
            why: "the window scale is inferred and the window hardly moves: a flight flat at a lower bound is a window cap, the receiver's or the sender's",
            expect: &["receive-window-limit|window-limit"],
        }],
        fix: Some(Fix { finding: "receive-window-limit", change: Change::LargerRcvbuf }),
    },
    Scenario {
        name: "small-rcvbuf-server",
        about: "small-rcvbuf seen from the server (the sender): the flight sits at the client's advertised window",
        expect: &["receive-window-limit"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Server,
        link: plain_link,
        run: small_rcvbuf,
        variants: &[Variant::MidStreamSaysLess {
            why: "the window scale is inferred: a flight flat at a lower bound is a window cap, the receiver's or the sender's",
            expect: &["receive-window-limit|window-limit"],
        }],
        fix: Some(Fix { finding: "receive-window-limit", change: Change::LargerRcvbuf }),
    },
    Scenario {
        name: "slow-reader",
        about: "curl reads at 64 KB/s through a 16 KB receive buffer: the client's window closes (0) until it reads",
        expect: &["zero-window"],
        forbid: &["fast-retransmit", "rto"],
        key: "transfer",
        vantage: Host::Client,
        link: plain_link,
        run: slow_reader,
        variants: &[Variant::MidStream],
        fix: Some(Fix { finding: "zero-window|receive-window-limit", change: Change::FastReader }),
    },
    Scenario {
        name: "spurious-rto",
        about: "the client's ACKs are held 600 ms once the response starts (a delay spike): the server's timer fires, the data had arrived, the client's D-SACK says so",
        expect: &["spurious-retransmission"],
        forbid: &["fast-retransmit", "rto", "rto-backoff"],
        key: "transfer",
        vantage: Host::Server,
        link: ack_spike,
        run: |c| download_plain(c, 64_000),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "spurious-rto-lone",
        about: "a lone small response resent by the server's timer: a stack without tail loss probes and with a 300 ms minimum RTO (tcp_early_retrans=0, tcp_rto_min_us=300000), the client's ACKs held 400 ms once the first response starts (a second request on the connection keeps it open): the ACK of the original arrives just after the resend, and the client's D-SACK says it was not needed",
        expect: &["spurious-retransmission"],
        forbid: &["tail-loss-probe", "fast-retransmit", "rto", "rto-backoff"],
        key: "transfer",
        vantage: Host::Server,
        link: |l| {
            l.spike = Some(Spike {
                after: (Direction::ServerToClient, 1),
                held: Direction::ClientToServer,
                hold: Duration::from_millis(400),
            });
        },
        run: spurious_rto_lone,
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "client-think",
        about: "openssl s_client waits 300 ms after the handshake before sending its request",
        expect: &["client-think-time"],
        forbid: &["server-think-time"],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: client_think,
        variants: &[Variant::MidStream],
        fix: Some(Fix { finding: "client-think-time", change: Change::NoClientThink }),
    },
    Scenario {
        name: "delayed-ack",
        about: "plain HTTP, 60 KB, server route with cwnd locked at 1: each lone segment waits for the client's delayed ACK",
        expect: &["1:delayed-ack"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Client,
        link: plain_link,
        run: delayed_ack,
        variants: &[],
        fix: Some(Fix { finding: "1:delayed-ack", change: Change::QuickAck }),
    },
    Scenario {
        name: "black-hole",
        about: "plain HTTP, 1 MB: from the 30th data segment on the path drops everything server→client; the server backs off its RTO until the client gives up",
        expect: &["rto-backoff"],
        forbid: &[],
        key: "transfer",
        vantage: Host::Server,
        link: |l| l.loss_s2c.black_hole_from = Some(BLACK_HOLE_FROM),
        run: black_hole,
        variants: &[Variant::MidStream, Variant::SenderOnly { expect: &["rto-backoff"] }],
        fix: Some(Fix { finding: "rto-backoff", change: Change::NoLoss }),
    },
    Scenario {
        name: "black-hole-receiver",
        about: "the same black hole seen from the client: the transfer stops with the window open until the client gives up",
        expect: &["transfer-stall"],
        forbid: &["rto-backoff"],
        key: "transfer",
        vantage: Host::Client,
        link: |l| l.loss_s2c.black_hole_from = Some(BLACK_HOLE_FROM),
        run: black_hole,
        variants: &[Variant::MidStream],
        fix: Some(Fix { finding: "transfer-stall", change: Change::NoLoss }),
    },
    Scenario {
        name: "handshake-burst",
        about: "12 clients connect at once to the built-in server, which does one TLS handshake at a time, 40 ms each (an RSA-4096 signature on one busy core): the ClientHellos queue, the ServerHellos leave 40 ms apart, and each wait is the handshake's, not the application's; the population view names the queue",
        expect: &["population:server-handshake-contention", "server-handshake-time"],
        forbid: &["server-think-time"],
        key: "tls",
        vantage: Host::Client,
        link: plain_link,
        run: |c| handshake_burst(c, Some(HandshakeCpu { workers: 1, cost: Duration::from_millis(40) })),
        variants: &[],
        fix: Some(Fix { finding: "server-handshake-time", change: Change::HandshakeCpu }),
    },
    Scenario {
        name: "handshake-burst-control",
        about: "control: the same burst, every handshake at once at rustls' own cost (ECDSA P-256, no queue): no handshake wait to name",
        expect: &[],
        forbid: &["server-handshake-time", "server-think-time", "population:server-handshake-contention"],
        key: "tls",
        vantage: Host::Client,
        link: plain_link,
        run: |c| handshake_burst(c, None),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "server-timing-queue",
        about: "an upstream that reports its handler's time in Server-Timing (20 ms), behind nginx whose limit_req queue spaces five parallel requests 50 ms apart: the wire shows the queue the header does not",
        expect: &["server-unaccounted-time"],
        forbid: &["client-think-time"],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: |c| server_timing(c, true),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "server-timing-direct",
        about: "control: the same upstream and the same five parallel requests without the proxy: the wire's think times match the header",
        expect: &[],
        forbid: &["server-unaccounted-time", "client-think-time"],
        key: "request",
        vantage: Host::Client,
        link: plain_link,
        run: |c| server_timing(c, false),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "jitter-no-think",
        about: "control: every packet delayed ±RTT/8 each way (seeded), the server answers at once: the late responses are the path's, not the server's",
        expect: &[],
        forbid: &["server-think-time", "client-think-time", "queueing-delay"],
        key: "request",
        vantage: Host::Client,
        link: |l| {
            l.jitter = l.rtt / 8;
            l.jitter_seed = 9;
        },
        run: jitter_no_think,
        variants: &[Variant::MidStream],
        fix: None,
    },
    Scenario {
        name: "deep-queue",
        about: "a 20 Mbit/s bottleneck with a 500 KB queue (200 ms) under a 4 MB download (Reno: no HyStart): the flight fills the queue and the RTT climbs",
        expect: &["queueing-delay"],
        forbid: &["sender-window-cap", "receive-window-limit"],
        key: "transfer",
        vantage: Host::Client,
        link: |l| {
            l.rate_bps = 20_000_000;
            l.queue_limit_bytes = 500_000;
        },
        run: deep_queue,
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "quic-clean",
        about: "control: rttlens probe --http3 against the built-in QUIC server, a 20 KB download: a 1-RTT handshake, none of QUIC's causes",
        expect: &[],
        forbid: &["quic-*"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_probe(c, QuicConfig::default(), 1),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "quic-amplification",
        about: "the QUIC server's chain (6 intermediates, a padded leaf) is past 3x the client's Initial: its first flight stops at the anti-amplification limit for a round trip",
        expect: &["quic-amplification-limit"],
        forbid: &["quic-retry", "quic-hello-retry", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_probe(c, QuicConfig { intermediates: 6, cert_padding: 2000, ..QuicConfig::default() }, 1),
        variants: &[],
        fix: Some(Fix { finding: "quic-amplification-limit", change: Change::SmallChain }),
    },
    Scenario {
        name: "quic-retry",
        about: "the QUIC server answers the first Initial with a Retry: one more round trip",
        expect: &["quic-retry"],
        forbid: &["quic-amplification-limit", "quic-hello-retry", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_probe(c, QuicConfig { retry: true, ..QuicConfig::default() }, 1),
        variants: &[],
        fix: Some(Fix { finding: "quic-retry", change: Change::NoRetry }),
    },
    Scenario {
        name: "quic-hello-retry",
        about: "the QUIC server accepts only secp256r1, the client's key share is X25519: a HelloRetryRequest, one more round trip",
        expect: &["quic-hello-retry"],
        forbid: &["quic-amplification-limit", "quic-retry", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_probe(c, QuicConfig { kx_groups: vec![KxGroup::Secp256r1], ..QuicConfig::default() }, 1),
        variants: &[],
        fix: Some(Fix { finding: "quic-hello-retry", change: Change::KeyShare }),
    },
    Scenario {
        name: "quic-initial-loss",
        about: "the link drops the client's first UDP datagram (its Initial): the handshake waits for the client's PTO",
        expect: &["quic-initial-loss"],
        forbid: &["quic-amplification-limit", "quic-retry", "quic-hello-retry"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: |l| l.loss_c2s.udp_indices = vec![1],
        run: |c| quic_probe(c, QuicConfig::default(), 1),
        variants: &[],
        fix: Some(Fix { finding: "quic-initial-loss", change: Change::NoLoss }),
    },
    Scenario {
        name: "quic-zero-rtt",
        about: "the QUIC server takes 0-RTT: the probe's second connection resumes and sends its request as 0-RTT, accepted",
        expect: &[],
        forbid: &["quic-zero-rtt-rejected", "quic-zero-rtt-unused", "quic-retry", "quic-hello-retry"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_probe(c, QuicConfig { early_data: true, ..QuicConfig::default() }, 2),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "quic-flow-control",
        about: "the QUIC server allows 16 KB per stream (initial_max_stream_data) under a 256 KB upload: the client stops at each limit (STREAM_DATA_BLOCKED) until MAX_STREAM_DATA",
        expect: &["quic-flow-control-stall"],
        forbid: &["quic-amplification-limit", "quic-retry", "quic-hello-retry"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: quic_upload,
        variants: &[],
        fix: Some(Fix { finding: "quic-flow-control-stall", change: Change::QuicWindow }),
    },
    Scenario {
        name: "quic-flow-control-inferred",
        about: "the same 16 KB stream limit under a 256 KB upload from aioquic, which sends no STREAM_DATA_BLOCKED: the stall is inferred from the limits against the bytes sent (medium confidence)",
        expect: &["quic-flow-control-stall"],
        forbid: &["quic-amplification-limit", "quic-retry", "quic-hello-retry"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: quic_upload_unannounced,
        variants: &[],
        fix: Some(Fix { finding: "quic-flow-control-stall", change: Change::QuicWindow }),
    },
    Scenario {
        name: "quic-handshake-burst",
        about: "12 aioquic connections start at once to the QUIC server, which does one handshake at a time, 40 ms each: the Initials queue, the server's first packets leave 40 ms apart, and the population view names the queue",
        expect: &["population:server-handshake-contention"],
        forbid: &["quic-*"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_handshake_burst(c, Some(HandshakeCpu { workers: 1, cost: Duration::from_millis(40) })),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "quic-handshake-burst-control",
        about: "control: the same QUIC burst, every handshake at once: no queue to name",
        expect: &[],
        forbid: &["quic-*", "population:server-handshake-contention"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_handshake_burst(c, None),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "quic-go-clean",
        about: "control on the second stack: rttlens probe --http3 (quinn) against a quic-go HTTP/3 server, a 20 KB download: a 1-RTT handshake, none of QUIC's causes",
        expect: &[],
        forbid: &["quic-*"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_go_probe(c, QuicGoOptions::default()),
        variants: &[],
        fix: None,
    },
    Scenario {
        name: "quic-go-amplification",
        about: "a quic-go server with the chain of quic-amplification (6 intermediates, a padded leaf): quic-go too stops at 3x the client's Initial for a round trip",
        expect: &["quic-amplification-limit"],
        forbid: &["quic-retry", "quic-hello-retry", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_go_probe(c, QuicGoOptions { intermediates: 6, cert_padding: 2000, ..QuicGoOptions::default() }),
        variants: &[],
        fix: Some(Fix { finding: "quic-amplification-limit", change: Change::SmallChain }),
    },
    Scenario {
        name: "quic-go-retry",
        about: "a quic-go server validating every address with a Retry (Transport.VerifySourceAddress): one more round trip",
        expect: &["quic-retry"],
        forbid: &["quic-amplification-limit", "quic-hello-retry", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_go_probe(c, QuicGoOptions { retry: true, ..QuicGoOptions::default() }),
        variants: &[],
        fix: Some(Fix { finding: "quic-retry", change: Change::NoRetry }),
    },
    Scenario {
        name: "quic-go-hello-retry",
        about: "a quic-go server accepting only P-256 for key exchange (tls.Config.CurvePreferences); the probe's key share is X25519: a HelloRetryRequest for secp256r1, one more round trip",
        expect: &["quic-hello-retry"],
        forbid: &["quic-amplification-limit", "quic-retry", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: |c| quic_go_probe(c, QuicGoOptions { curves: "p256".into(), ..QuicGoOptions::default() }),
        variants: &[],
        fix: Some(Fix { finding: "quic-hello-retry", change: Change::KeyShare }),
    },
    Scenario {
        name: "quic-go-initial-loss",
        about: "quic-go on both sides; the link drops the client's first UDP datagram: quic-go's ClientHello (an X25519MLKEM768 key share) fills two Initials, the server acknowledges the second, and the client declares the first lost 9/8 RTT after sending it (RFC 9002 §6.1.2) and sends it again: about one round trip, not a PTO",
        expect: &["quic-initial-loss"],
        forbid: &["quic-amplification-limit", "quic-retry", "quic-hello-retry"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: |l| l.loss_c2s.udp_indices = vec![1],
        run: quic_go_initial_loss,
        variants: &[],
        fix: Some(Fix { finding: "quic-initial-loss", change: Change::NoLoss }),
    },
    Scenario {
        name: "quic-go-flow-control",
        about: "the quic-go client uploads 256 KB to a quic-go server allowing 16 KB per stream, fixed (auto-tuning capped at 16 KB): quic-go stops at each limit (STREAM_DATA_BLOCKED) until the server reads and raises it",
        expect: &["quic-flow-control-stall"],
        forbid: &["quic-amplification-limit", "quic-retry", "quic-hello-retry"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: quic_go_upload,
        variants: &[],
        fix: Some(Fix { finding: "quic-flow-control-stall", change: Change::QuicWindow }),
    },
    Scenario {
        name: "quic-zero-rtt-rejected",
        about: "the quic-go client's ticket allows 0-RTT; the quic-go server restarts with the same ticket key but smaller windows than the ticket remembers, resumes and rejects the early request: it goes again after the handshake",
        expect: &["1:quic-zero-rtt-rejected"],
        forbid: &["quic-retry", "quic-hello-retry", "quic-version-negotiation", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: quic_zero_rtt_rejected,
        variants: &[],
        fix: Some(Fix { finding: "1:quic-zero-rtt-rejected", change: Change::KeepQuicWindows }),
    },
    Scenario {
        name: "quic-version-negotiation",
        about: "the quic-go client offers QUIC v2 first (then v1); the quinn server speaks v1 only, answers Version Negotiation, and the client starts again in v1: one more round trip",
        expect: &["quic-version-negotiation"],
        forbid: &["quic-retry", "quic-hello-retry", "quic-amplification-limit", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: quic_version_negotiation,
        variants: &[],
        fix: Some(Fix { finding: "quic-version-negotiation", change: Change::QuicV1 }),
    },
    Scenario {
        name: "quic-go-v2-only",
        about: "the reverse: a quic-go server speaking QUIC v2 only, the quic-go client offering v1 first (then v2): Version Negotiation, and the client starts again in v2: one more round trip",
        expect: &["quic-version-negotiation"],
        forbid: &["quic-retry", "quic-hello-retry", "quic-amplification-limit", "quic-initial-loss"],
        key: "quic-handshake",
        vantage: Host::Client,
        link: plain_link,
        run: quic_go_v2_only,
        variants: &[],
        fix: Some(Fix { finding: "quic-version-negotiation", change: Change::QuicV2 }),
    },
];

/// The payload segment server→client from which the black-hole scenarios'
/// path drops everything (about 40 KB into the download).
const BLACK_HOLE_FROM: u64 = 30;

/// A 1 MB plain HTTP download that the path black-holes mid-way: curl gives
/// up after 4 s (the server's RTO has backed off four or five times by then)
/// and closes; its FIN reaches the server, the server's answers do not.
fn black_hole(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.builtin(ServerConfig {
        plain_http: true,
        ..ServerConfig::default()
    })?;
    c.curl_may_fail(
        4,
        &[&format!("http://{}:{port}/size/1000000", Lab::SERVER_V4)],
    )?;
    Ok(())
}

/// Five small TLS downloads on one keep-alive connection (no think time on
/// the server): each response is late only by the path's jitter.
fn jitter_no_think(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.builtin(ServerConfig::default())?;
    let u = url(port, 2000);
    c.curl(&["--tlsv1.3", &u, &u, &u, &u, &u])?;
    Ok(())
}

/// A 4 MB download from a Reno sender: slow start without CUBIC's HyStart
/// (which leaves slow start as soon as the RTT rises and then sits on its
/// plateau for seconds) keeps doubling the flight until the bottleneck's
/// queue is full, as a bulk sender does on a bloated path.
fn deep_queue(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.lab()
        .netns(Host::Server)
        .set_sysctl("net/ipv4/tcp_congestion_control", "reno")?;
    download(c, ServerConfig::default(), 4_000_000)
}

/// The server may keep only one segment in flight: its route to the client
/// gets a locked congestion window of 1 (`ip route add … cwnd lock 1`).
/// Linux applies the route's metrics through its TCP metrics cache from the
/// next connection on (observed on 6.x), so the first download warms the
/// cache and the second is the one held to a segment at a time. Once the
/// client has spent its quick ACKs (`tcp_incr_quickack()`), it holds the
/// ACK of each lone full-sized segment for its delayed-ACK timer, and the
/// server waits for it every time.
fn delayed_ack(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let ns = c.lab().ns_name(Host::Server).to_string();
    let client = format!("{}/32", Lab::CLIENT_V4);
    rttlens_lab_net::netns::ip(&[
        "-n",
        &ns,
        "route",
        "add",
        &client,
        "dev",
        rttlens_lab_net::TUN_NAME,
        "cwnd",
        "lock",
        "1",
    ])?;
    if c.change() == Some(Change::QuickAck) {
        // fixed: the client ACKs every segment at once
        let ns = c.lab().ns_name(Host::Client).to_string();
        let server = format!("{}/32", Lab::SERVER_V4);
        rttlens_lab_net::netns::ip(&[
            "-n",
            &ns,
            "route",
            "add",
            &server,
            "dev",
            rttlens_lab_net::TUN_NAME,
            "quickack",
            "1",
        ])?;
    }
    let port = c.builtin(ServerConfig {
        plain_http: true,
        ..ServerConfig::default()
    })?;
    let u = format!("http://{}:{port}/size/60000", Lab::SERVER_V4);
    for _ in 0..2 {
        c.curl(&[&u])?;
    }
    Ok(())
}

/// Body size of the loss scenarios' plain HTTP download.
const TAIL_BYTES: usize = 10_000;
/// Index of the last server→client payload segment of that download
/// (response header and body; payload segments counted by the link).
const TAIL: u64 = 7;

/// Every scenario, in the order `rttlens lab` runs them.
pub fn catalogue() -> &'static [Scenario] {
    &CATALOGUE
}

/// Find a scenario of the catalogue by name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    catalogue().iter().find(|s| s.name == name)
}

fn nagle_nginx(c: &mut ScenarioCtx, nodelay: bool) -> Result<(), LabError> {
    c.nginx(443, |n| {
        n.tcp_nodelay = nodelay;
        n.files = vec![700];
    })?;
    let u = format!("https://{}/size/700", Lab::SERVER_V4);
    for _ in 0..3 {
        c.curl(&["--tlsv1.3", &u])?;
    }
    Ok(())
}

fn nagle_handshake(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.builtin(ServerConfig {
        nodelay: false,
        handshake_writes: HandshakeWrites::Two,
        tls_versions: vec![TlsVersion::Tls13],
        ..ServerConfig::default()
    })?;
    c.curl(&["--tlsv1.3", &url(port, 1000)])?;
    Ok(())
}

fn tls12_vs_tls13(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.builtin(ServerConfig::default())?;
    c.curl(&["--tlsv1.2", "--tls-max", "1.2", &url(port, 1000)])?;
    c.curl(&["--tlsv1.3", &url(port, 1000)])?;
    Ok(())
}

/// Writes the request the `openssl s_client` scenarios send, to a pipe.
const REQUEST: &str =
    "printf 'GET /size/2000 HTTP/1.1\\r\\nHost: lab\\r\\nConnection: close\\r\\n\\r\\n'";

/// `printf REQ | openssl s_client …` for nginx on 443.
fn s_client(extra: &str) -> String {
    format!(
        "{REQUEST} | openssl s_client -connect {}:443 -tls1_3 -ign_eof {extra} 2>&1",
        Lab::SERVER_V4
    )
}

fn nginx_tls13(c: &mut ScenarioCtx, early: bool) -> Result<(), LabError> {
    c.nginx(443, |n| {
        n.ssl_early_data = early;
        n.files = vec![2000];
    })
}

fn resumption(c: &mut ScenarioCtx) -> Result<(), LabError> {
    nginx_tls13(c, false)?;
    let d = c.dir().display().to_string();
    let first = c.sh(&s_client(&format!("-sess_out {d}/s1.pem")))?;
    let second = c.sh(&s_client(&format!("-sess_in {d}/s1.pem")))?;
    if !first.contains("New, TLSv1.3") || !second.contains("Reused, TLSv1.3") {
        return Err(LabError::Client {
            command: "openssl s_client -sess_out / -sess_in".into(),
            stderr: format!(
                "openssl did not resume: first said {:?}, second {:?}",
                first.lines().find(|l| l.contains("TLSv1")),
                second.lines().find(|l| l.contains("TLSv1"))
            ),
        });
    }
    Ok(())
}

/// A full handshake, then nginx restarts (a fresh random ticket key, as a
/// server without a shared `ssl_session_ticket_key` does on every reload),
/// then the client offers the old ticket: declined, full handshake.
///
/// Fixed ([`Change::SharedTicketKey`]): both servers read one ticket key
/// file, so the ticket is accepted.
fn resumption_declined(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let shared = c.change() == Some(Change::SharedTicketKey);
    let key = shared.then(|| ticket_key_file(c)).transpose()?;
    let start = |c: &mut ScenarioCtx| {
        let key = key.clone();
        c.nginx(443, move |n| {
            n.ssl_session_ticket_key = key;
            n.files = vec![2000];
        })
    };
    start(c)?;
    let d = c.dir().display().to_string();
    c.sh(&s_client(&format!("-sess_out {d}/s1.pem")))?;
    c.stop_nginx();
    start(c)?;
    let second = c.sh(&s_client(&format!("-sess_in {d}/s1.pem")))?;
    let want = if shared {
        "Reused, TLSv1.3"
    } else {
        "New, TLSv1.3"
    };
    if !second.contains(want) {
        return Err(LabError::Client {
            command: "openssl s_client -sess_in".into(),
            stderr: format!(
                "openssl does not say {want:?} after the server's restart: {:?}",
                second.lines().find(|l| l.contains("TLSv1"))
            ),
        });
    }
    Ok(())
}

/// An nginx session ticket key file in the scenario's directory (80
/// bytes: nginx's AES-256 ticket key format); returns its path.
fn ticket_key_file(c: &ScenarioCtx) -> Result<std::path::PathBuf, LabError> {
    let key = c.dir().join("ticket.key");
    let bytes: Vec<u8> = (0u8..80)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    std::fs::write(&key, bytes).map_err(|e| LabError::Io {
        context: format!("writing {}", key.display()),
        source: e,
    })?;
    Ok(key)
}

fn zero_rtt(c: &mut ScenarioCtx) -> Result<(), LabError> {
    nginx_tls13(c, true)?;
    early_data_sequence(c, None, "Early data was accepted", false)
}

/// nginx with early data on hands out the tickets; then nginx restarts with
/// `ssl_early_data off` and the same ticket key, so the third connection
/// resumes but its early data is rejected (RFC 8446 §4.2.10) and the client
/// sends the request again after the handshake.
///
/// Fixed ([`Change::EarlyDataOn`]): the restarted server keeps early data
/// on and accepts it.
fn zero_rtt_rejected(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let key = ticket_key_file(c)?;
    let verdict = if c.change() == Some(Change::EarlyDataOn) {
        "Early data was accepted"
    } else {
        "Early data was rejected"
    };
    let with_key = move |early: bool| {
        let key = key.clone();
        move |n: &mut rttlens_lab_server::nginx::Config| {
            n.ssl_early_data = early;
            n.ssl_session_ticket_key = Some(key);
            n.files = vec![2000];
        }
    };
    c.nginx(443, with_key(true))?;
    early_data_sequence(
        c,
        Some(Box::new(move |c: &mut ScenarioCtx| {
            c.stop_nginx();
            c.nginx(443, with_key(false))
        })),
        verdict,
        true,
    )
}

/// A server action between the second and the third connection.
type Between = Box<dyn FnOnce(&mut ScenarioCtx) -> Result<(), LabError>>;

/// Three `openssl s_client` connections to nginx on 443: full handshake,
/// resumed, then resumed with the request as early data; openssl must say
/// `verdict` about the early data. With `resend` the third connection also
/// writes the request after the handshake (what a client does when its
/// early data was rejected).
fn early_data_sequence(
    c: &mut ScenarioCtx,
    between: Option<Between>,
    verdict: &str,
    resend: bool,
) -> Result<(), LabError> {
    let d = c.dir().display().to_string();
    std::fs::write(
        c.dir().join("early.txt"),
        b"GET /size/2000 HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n",
    )
    .map_err(|e| LabError::Io {
        context: "writing early.txt".into(),
        source: e,
    })?;
    c.sh(&s_client(&format!("-sess_out {d}/s1.pem")))?;
    c.sh(&s_client(&format!(
        "-sess_in {d}/s1.pem -sess_out {d}/s2.pem"
    )))?;
    if let Some(f) = between {
        f(c)?;
    }
    // rejected early data is gone: the client must send the request again
    // after the handshake (openssl does not; it sends its stdin then)
    let stdin = if resend {
        format!("{REQUEST} |")
    } else {
        String::new()
    };
    let third = c.sh(&format!(
        "{stdin} openssl s_client -connect {}:443 -tls1_3 -ign_eof -sess_in {d}/s2.pem \
         -early_data {d}/early.txt {} 2>&1",
        Lab::SERVER_V4,
        if resend { "" } else { "< /dev/null" }
    ))?;
    if !third.contains("Reused, TLSv1.3") {
        return Err(LabError::Client {
            command: "openssl s_client -sess_in -early_data".into(),
            stderr: "the early-data connection did not resume its session".into(),
        });
    }
    if !third.contains(verdict) {
        return Err(LabError::Client {
            command: "openssl s_client -early_data".into(),
            stderr: format!("openssl does not say {verdict:?}"),
        });
    }
    Ok(())
}

/// The built-in QUIC server with `cfg`, and `rttlens probe --http3 -n
/// count` fetching 20 KB from it (`-n 2` shares one session store: the
/// second connection resumes, with 0-RTT when the ticket allows). The
/// probe's key log goes beside the capture, so the analysis decrypts every
/// packet; the probe's own checks (resumed, 0-RTT accepted) must hold.
fn quic_probe(c: &mut ScenarioCtx, cfg: QuicConfig, count: u32) -> Result<(), LabError> {
    let port = c.quic_server(cfg)?;
    let mut p = rttlens_probe::ProbeConfig::new(url(port, 20_000));
    p.http3 = true;
    p.count = count;
    p.tls.insecure = true;
    p.tls.keylog = Some(c.keylog());
    p.max_time = Some(Duration::from_secs(20));
    // the scenario's own tcpdump is the vantage analysed
    p.capture = false;
    c.probe(p).map(|_| ())
}

/// The UDP port of the quic-go server.
const QUIC_GO_PORT: u16 = 4433;

/// The quic-go server ([`ScenarioCtx::quic_go_server`]) with `o`, and
/// `rttlens probe --http3` (quinn) fetching 20 KB from it, its key log
/// beside the capture: the engine's causes shown on a second QUIC stack.
fn quic_go_probe(c: &mut ScenarioCtx, o: QuicGoOptions) -> Result<(), LabError> {
    c.quic_go_server(QUIC_GO_PORT, &o)?;
    let mut p = rttlens_probe::ProbeConfig::new(url(QUIC_GO_PORT, 20_000));
    p.http3 = true;
    p.tls.insecure = true;
    p.tls.keylog = Some(c.keylog());
    p.max_time = Some(Duration::from_secs(20));
    p.capture = false;
    c.probe(p).map(|_| ())
}

/// The quic-go server's session ticket key in [`quic_zero_rtt_rejected`]
/// (fixed, so the restarted server decrypts the first one's tickets).
const TICKET_KEY: [u8; 32] = [0x5a; 32];

/// The quic-go server with 0-RTT on and a fixed ticket key; the quic-go
/// client's first connection takes a ticket that allows 0-RTT (and
/// remembers the server's transport parameters, RFC 9000 §7.4.1); the
/// server restarts with the same key but windows below quic-go's defaults
/// (64 KB a stream, 128 KB in all); the client's second connection resumes
/// and sends its GET as 0-RTT, which quic-go rejects (the limits shrank)
/// and the client sends again after the handshake.
fn quic_zero_rtt_rejected(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let first = QuicGoOptions {
        zero_rtt: true,
        ticket_key: Some(TICKET_KEY),
        ..QuicGoOptions::default()
    };
    c.quic_go_server(QUIC_GO_PORT, &first)?;
    let said = c.quic_go_client(
        &url(QUIC_GO_PORT, 20_000),
        &["-n", "2", "-0rtt"],
        Some(|c| {
            c.stop_go();
            c.quic_go_server(
                QUIC_GO_PORT,
                &QuicGoOptions {
                    zero_rtt: true,
                    ticket_key: Some(TICKET_KEY),
                    stream_window: Some(64 * 1024),
                    conn_window: Some(128 * 1024),
                    ..QuicGoOptions::default()
                },
            )
        }),
    )?;
    // the client's own account: resumed, 0-RTT sent and rejected (fixed:
    // accepted)
    let rejected = if c.change() == Some(Change::KeepQuicWindows) {
        "0-RTT rejected false"
    } else {
        "0-RTT rejected true"
    };
    if !said.contains("conn 1: status 200") || !said.contains(rejected) {
        return Err(LabError::Client {
            command: "rttlens-quic-peer -n 2 -0rtt".into(),
            stderr: format!("the second connection's 0-RTT was not rejected: {said}"),
        });
    }
    Ok(())
}

/// The built-in quinn server (QUIC v1 only) and the quic-go client
/// offering v2 first: Version Negotiation, then a v1 handshake.
fn quic_version_negotiation(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.quic_server(QuicConfig::default())?;
    // fixed: the version the server speaks first
    let versions = if c.change() == Some(Change::QuicV1) {
        "v1"
    } else {
        "v2,v1"
    };
    let said = c.quic_go_client(&url(port, 20_000), &["-versions", versions], None)?;
    if !said.contains("status 200") || !said.contains("version v1") {
        return Err(LabError::Client {
            command: "rttlens-quic-peer -versions v2,v1".into(),
            stderr: format!("no v1 exchange after Version Negotiation: {said}"),
        });
    }
    Ok(())
}

/// The quic-go server and the quic-go client fetching 20 KB from it (the
/// link drops the client's first datagram in `quic-go-initial-loss`: half
/// of its ClientHello, which X25519MLKEM768's key share makes two Initials
/// long).
fn quic_go_initial_loss(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.quic_go_server(QUIC_GO_PORT, &QuicGoOptions::default())?;
    let said = c.quic_go_client(&url(QUIC_GO_PORT, 20_000), &[], None)?;
    if !said.contains("status 200, 20000 bytes") {
        return Err(LabError::Client {
            command: "rttlens-quic-peer".into(),
            stderr: format!("no 20 KB download: {said}"),
        });
    }
    Ok(())
}

/// The bytes the quic-go client uploads in [`quic_go_upload`].
const QUIC_GO_PUT: usize = 256 * 1024;

/// The quic-go server's stream window in [`quic_go_upload`] (bytes).
const QUIC_GO_STREAM_WINDOW: u64 = 16 * 1024;

/// The quic-go server allowing 16 KB a stream, fixed (its auto-tuning
/// capped at the same 16 KB, as the quinn server's window of
/// `quic-flow-control`; the connection's window at quic-go's default) and
/// the quic-go client POSTing 256 KB (`-put`): quic-go stops at each limit
/// and says so (STREAM_DATA_BLOCKED), the server's handler reads the body
/// and raises the limit a round trip later.
fn quic_go_upload(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.quic_go_server(
        QUIC_GO_PORT,
        &QuicGoOptions {
            stream_window: Some(QUIC_GO_STREAM_WINDOW),
            max_stream_window: Some(QUIC_GO_STREAM_WINDOW),
            ..QuicGoOptions::default()
        },
    )?;
    let put = QUIC_GO_PUT.to_string();
    let said = c.quic_go_client(&url(QUIC_GO_PORT, 10), &["-put", &put], None)?;
    let read = format!("answer \"read {QUIC_GO_PUT} bytes\"");
    if !said.contains("status 200") || !said.contains(&read) {
        return Err(LabError::Client {
            command: format!("rttlens-quic-peer -put {put}"),
            stderr: format!("the server did not read the whole upload: {said}"),
        });
    }
    Ok(())
}

/// The quic-go server speaking QUIC v2 only and the quic-go client
/// offering v1 first: Version Negotiation, then a v2 handshake.
fn quic_go_v2_only(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.quic_go_server(
        QUIC_GO_PORT,
        &QuicGoOptions {
            versions: "v2".into(),
            ..QuicGoOptions::default()
        },
    )?;
    // fixed: the version the server speaks first
    let versions = if c.change() == Some(Change::QuicV2) {
        "v2,v1"
    } else {
        "v1,v2"
    };
    let said = c.quic_go_client(&url(QUIC_GO_PORT, 20_000), &["-versions", versions], None)?;
    if !said.contains("status 200") || !said.contains("version v2") {
        return Err(LabError::Client {
            command: format!("rttlens-quic-peer -versions {versions}"),
            stderr: format!("no v2 exchange after Version Negotiation: {said}"),
        });
    }
    Ok(())
}

/// A 256 KB POST over HTTP/3 to a QUIC server whose per-stream window is
/// 16 KB: quinn stops at each limit and says so (STREAM_DATA_BLOCKED),
/// the server reads the body and raises it a round trip later.
fn quic_upload(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.quic_server(QuicConfig {
        stream_receive_window: Some(16 * 1024),
        ..QuicConfig::default()
    })?;
    let mut p = rttlens_probe::ProbeConfig::new(url(port, 10));
    p.http3 = true;
    p.request.body = Some(vec![b'u'; 256 * 1024]);
    p.tls.insecure = true;
    p.tls.keylog = Some(c.keylog());
    p.max_time = Some(Duration::from_secs(20));
    p.capture = false;
    c.probe(p).map(|_| ())
}

/// [`quic_upload`] with aioquic as the uploader: it keeps to the server's
/// limits but never sends STREAM_DATA_BLOCKED (RFC 9000 §4.1 makes it a
/// SHOULD), so only the limits and the bytes sent show the stall.
fn quic_upload_unannounced(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.quic_server(QuicConfig {
        stream_receive_window: Some(16 * 1024),
        ..QuicConfig::default()
    })?;
    c.aioquic_client(&url(port, 10), Some(256 * 1024), 1)
        .map(|_| ())
}

/// The project's probe as the client: `--sequence` makes a full
/// handshake, a resumed one and a 0-RTT one, and checks each itself.
fn probe_sequence(c: &mut ScenarioCtx) -> Result<(), LabError> {
    nginx_tls13(c, true)?;
    let mut cfg = rttlens_probe::ProbeConfig::new(format!("https://{}/size/2000", Lab::SERVER_V4));
    cfg.sequence = true;
    cfg.tls.insecure = true;
    // the scenario's own tcpdump is the vantage analysed
    cfg.capture = false;
    c.probe(cfg).map(|_| ())
}

/// TFO on in both namespaces (`net.ipv4.tcp_fastopen=3`) and nginx with a
/// TFO queue serving a 2000-byte file over plain HTTP; returns its URL.
fn tfo_setup(c: &mut ScenarioCtx) -> Result<String, LabError> {
    let both = Sysctls {
        tcp_fastopen: Some(3),
        ..Sysctls::default()
    };
    c.sysctls(Host::Client, &both)?;
    c.sysctls(Host::Server, &both)?;
    c.nginx(80, |n| {
        n.tls = false;
        n.fastopen = Some(16);
        n.files = vec![2000];
    })?;
    Ok(format!("http://{}/size/2000", Lab::SERVER_V4))
}

fn tfo(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let u = tfo_setup(c)?;
    for _ in 0..2 {
        c.curl(&["--tcp-fastopen", &u])?;
    }
    Ok(())
}

/// A cookie, then a new server key (`net.ipv4.tcp_fastopen_key`), then the
/// old cookie with data: the server refuses the data (RFC 7413 §4.1.2).
fn tfo_refused(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let u = tfo_setup(c)?;
    c.curl(&["--tcp-fastopen", &u])?;
    if c.change() != Some(Change::KeepTfoKey) {
        c.lab().netns(Host::Server).set_sysctl(
            "net/ipv4/tcp_fastopen_key",
            "01234567-89abcdef-01234567-89abcdef",
        )?;
    }
    c.curl(&["--tcp-fastopen", &u])?;
    Ok(())
}

fn records(c: &mut ScenarioCtx, size: Option<usize>) -> Result<(), LabError> {
    download(
        c,
        ServerConfig {
            record_size: size,
            ..ServerConfig::default()
        },
        1_000_000,
    )
}

fn server_think(c: &mut ScenarioCtx) -> Result<(), LabError> {
    download(
        c,
        ServerConfig {
            think: Duration::from_millis(200),
            ..ServerConfig::default()
        },
        2000,
    )
}

fn keepalive_slow_request(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.builtin(ServerConfig::default())?;
    let mut urls: Vec<String> = (0..9).map(|_| url(port, 2000)).collect();
    urls.push(format!("{}?think=200", url(port, 2000)));
    let outs: Vec<String> = urls.iter().map(|u| format!("-o /dev/null {u}")).collect();
    let script = format!(
        "SSLKEYLOGFILE={} curl -sS -k --tlsv1.3 --max-time 20 -w '%{{http_code}}\\n' {}",
        c.keylog().display(),
        outs.join(" ")
    );
    let out = c.sh(&script)?;
    if out.lines().filter(|l| l.trim() == "200").count() != 10 {
        return Err(LabError::Client {
            command: script,
            stderr: out,
        });
    }
    Ok(())
}

fn pipelined_head_of_line(c: &mut ScenarioCtx) -> Result<(), LabError> {
    let port = c.builtin(ServerConfig::default())?;
    let get = |q: &str, last: bool| {
        let close = if last { "Connection: close\\r\\n" } else { "" };
        format!("GET /size/2000{q} HTTP/1.1\\r\\nHost: lab\\r\\n{close}\\r\\n")
    };
    // all three in one write, once the handshake is done
    let script = format!(
        "printf '{}{}{}' | openssl s_client -connect {}:{port} -tls1_3 -keylogfile {} -quiet -ign_eof 2>&1",
        get("?think=200", false),
        get("", false),
        get("", true),
        Lab::SERVER_V4,
        c.keylog().display(),
    );
    let out = c.sh(&script)?;
    if out.matches("HTTP/1.1 200").count() != 3 {
        return Err(LabError::Client {
            command: script,
            stderr: out,
        });
    }
    Ok(())
}

/// One TLS 1.3 download of `n` bytes from the built-in server.
fn download(c: &mut ScenarioCtx, cfg: ServerConfig, n: usize) -> Result<(), LabError> {
    let port = c.builtin(cfg)?;
    c.curl(&["--tlsv1.3", &url(port, n)])?;
    Ok(())
}

/// Clients in a reconnect burst ([`handshake_burst`]).
const BURST: usize = 12;

/// [`BURST`] TLS 1.3 connections at once (curl `--parallel`), each with one
/// small request, against the built-in server doing its handshakes as
/// `cpu` says (no tickets: every handshake is full).
fn handshake_burst(c: &mut ScenarioCtx, cpu: Option<HandshakeCpu>) -> Result<(), LabError> {
    let port = c.builtin(ServerConfig {
        handshake_cpu: cpu,
        tickets: false,
        ..ServerConfig::default()
    })?;
    // one curl process, every transfer on its own connection at once (a
    // burst of curl processes would load the 2-core lab machine with their
    // start-up while the server handshakes)
    let outs: Vec<String> = (0..BURST)
        .map(|i| format!("-o /dev/null {}?i={i}", url(port, 2000)))
        .collect();
    let script = format!(
        "curl -sS -k --tlsv1.3 --max-time 20 --parallel --parallel-immediate --parallel-max {BURST} -w '%{{http_code}}\\n' {}",
        outs.join(" ")
    );
    let out = c.sh(&script)?;
    if out.lines().filter(|l| l.trim() == "200").count() != BURST {
        return Err(LabError::Client {
            command: script,
            stderr: out,
        });
    }
    Ok(())
}

/// [`handshake_burst`] over QUIC: [`BURST`] aioquic connections started
/// at once (one Python process) against the built-in QUIC server with
/// `cpu`'s handshake workers.
fn quic_handshake_burst(c: &mut ScenarioCtx, cpu: Option<HandshakeCpu>) -> Result<(), LabError> {
    let port = c.quic_server(QuicConfig {
        handshake_cpu: cpu,
        tickets: false,
        ..QuicConfig::default()
    })?;
    let n = u32::try_from(BURST).unwrap_or(u32::MAX);
    c.aioquic_client(&url(port, 2000), None, n).map(|_| ())
}

/// Parallel requests in [`server_timing`].
const TIMED_REQUESTS: usize = 5;

/// [`TIMED_REQUESTS`] cleartext HTTP/1.1 requests at once (curl
/// `--parallel`, a connection each) to the built-in server thinking 20 ms
/// and saying so in `Server-Timing`; with `queue`, through nginx whose
/// `limit_req` (20 requests/s, a burst of 20 delayed, not refused) spaces
/// them 50 ms apart before they reach the upstream.
fn server_timing(c: &mut ScenarioCtx, queue: bool) -> Result<(), LabError> {
    let upstream = c.builtin(ServerConfig {
        plain_http: true,
        server_timing: true,
        think: Duration::from_millis(20),
        ..ServerConfig::default()
    })?;
    let port = if queue {
        c.nginx(80, |n| {
            n.tls = false;
            n.extra_http = vec!["limit_req_zone $server_name zone=queue:1m rate=20r/s;".into()];
            n.extra_location = vec![
                "limit_req zone=queue burst=20;".into(),
                format!("proxy_pass http://{}:{upstream};", Lab::SERVER_V4),
            ];
        })?;
        80
    } else {
        upstream
    };
    let outs: Vec<String> = (0..TIMED_REQUESTS)
        .map(|i| {
            format!(
                "-o /dev/null http://{}:{port}/size/2000?i={i}",
                Lab::SERVER_V4
            )
        })
        .collect();
    let script = format!(
        "curl -sS --max-time 20 --parallel --parallel-immediate --parallel-max {TIMED_REQUESTS} -w '%{{http_code}}\\n' {}",
        outs.join(" ")
    );
    let out = c.sh(&script)?;
    if out.lines().filter(|l| l.trim() == "200").count() != TIMED_REQUESTS {
        return Err(LabError::Client {
            command: script,
            stderr: out,
        });
    }
    Ok(())
}

/// One plain HTTP download of `n` bytes from the built-in server.
fn download_plain(c: &mut ScenarioCtx, n: usize) -> Result<(), LabError> {
    let port = c.builtin(ServerConfig {
        plain_http: true,
        ..ServerConfig::default()
    })?;
    c.curl(&[&format!("http://{}:{port}/size/{n}", Lab::SERVER_V4)])?;
    Ok(())
}

fn sndbuf_cap(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.nginx(443, |n| {
        n.sndbuf = Some(32 * 1024);
        n.files = vec![2_000_000];
    })?;
    c.curl(&[
        "--tlsv1.3",
        &format!("https://{}/size/2000000", Lab::SERVER_V4),
    ])?;
    Ok(())
}

fn no_wscale(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.sysctls(
        Host::Client,
        &Sysctls {
            tcp_window_scaling: Some(false),
            ..Sysctls::default()
        },
    )?;
    download(c, ServerConfig::default(), 2_000_000)
}

fn h2_flow_control(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.nginx(80, |n| {
        n.tls = false;
        n.http2 = true;
        n.files = vec![300_000];
    })?;
    // -w: the client's stream window, 2^w bytes (fixed: 1 MB)
    let w = if c.change() == Some(Change::H2Window) {
        20
    } else {
        14
    };
    let script = format!(
        "h2load -n 1 -c 1 -m 1 -w {w} http://{}:80/size/300000 2>&1",
        Lab::SERVER_V4
    );
    let out = c.sh(&script)?;
    if !out.contains("1 succeeded") {
        return Err(LabError::Client {
            command: script,
            stderr: out,
        });
    }
    Ok(())
}

fn h2_concurrency(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.nginx(80, |n| {
        n.tls = false;
        n.http2 = true;
        n.http2_max_concurrent_streams = Some(1);
        n.files = vec![20_000];
    })?;
    let addr = std::net::SocketAddr::from((Lab::SERVER_V4, 80));
    let what = format!("hyper HTTP/2 client: GET http://{addr}/size/20000, then 8 at once");
    let got = c
        .lab()
        .run_in(Host::Client, move || {
            crate::h2_client::get_parallel(addr, "/size/20000", 8)
        })
        .map_err(|e| e.to_string())
        .and_then(|r| r);
    match got {
        Ok(r) if r.len() == 9 && r.iter().all(|&(s, n)| s == 200 && n == 20_000) => Ok(()),
        Ok(r) => Err(LabError::Client {
            command: what,
            stderr: format!("responses (status, bytes): {r:?}"),
        }),
        Err(e) => Err(LabError::Client {
            command: what,
            stderr: e,
        }),
    }
}

fn h2_head_of_line(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.nginx(80, |n| {
        n.tls = false;
        n.http2 = true;
        n.files = vec![200_000];
    })?;
    let script = format!(
        "h2load -n 4 -c 1 -m 4 -w 16 http://{}:80/size/200000 2>&1",
        Lab::SERVER_V4
    );
    let out = c.sh(&script)?;
    if !out.contains("4 succeeded") {
        return Err(LabError::Client {
            command: script,
            stderr: out,
        });
    }
    Ok(())
}

fn small_rcvbuf(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.sysctls(
        Host::Client,
        &Sysctls {
            tcp_rmem: Some([4096, 65536, 65536]),
            ..Sysctls::default()
        },
    )?;
    download(c, ServerConfig::default(), 2_000_000)
}

fn spurious_rto_lone(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.sysctls(
        Host::Server,
        &Sysctls {
            tcp_early_retrans: Some(0),
            tcp_rto_min_us: Some(300_000),
            ..Sysctls::default()
        },
    )?;
    let port = c.builtin(ServerConfig {
        plain_http: true,
        ..ServerConfig::default()
    })?;
    // a second request on the same connection keeps it open past the
    // timer, so the D-SACK is captured
    let u = format!("http://{}:{port}/size/100", Lab::SERVER_V4);
    c.curl(&[&u, &u])?;
    Ok(())
}

fn slow_reader(c: &mut ScenarioCtx) -> Result<(), LabError> {
    c.sysctls(
        Host::Client,
        &Sysctls {
            tcp_rmem: Some([4096, 16384, 16384]),
            ..Sysctls::default()
        },
    )?;
    let port = c.builtin(ServerConfig::default())?;
    c.curl(&["--tlsv1.3", "--limit-rate", "64k", &url(port, 256_000)])?;
    Ok(())
}

fn client_think(c: &mut ScenarioCtx) -> Result<(), LabError> {
    nginx_tls13(c, false)?;
    // fixed: the request leaves as soon as the handshake is done
    let wait = if c.change() == Some(Change::NoClientThink) {
        "0"
    } else {
        "0.3"
    };
    let out = c.sh(&format!(
        "(sleep {wait}; printf 'GET /size/2000 HTTP/1.1\\r\\nHost: lab\\r\\nConnection: close\\r\\n\\r\\n') | \
         openssl s_client -connect {}:443 -tls1_3 -ign_eof 2>&1",
        Lab::SERVER_V4
    ))?;
    if !out.contains("HTTP/1.1 200") {
        return Err(LabError::Client {
            command: "openssl s_client (delayed request)".into(),
            stderr: "no HTTP 200 in its output".into(),
        });
    }
    Ok(())
}
