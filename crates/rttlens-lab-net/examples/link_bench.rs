//! Link benchmark: a bulk TCP transfer through the lab link (RTT 1 ms) for
//! ~3 s, first at unlimited rate, then with the link's rate limit at
//! 200 Mbit/s; prints the throughput (Mbit/s) and the link's added delay
//! error per packet (p50/p99/max, µs). At unlimited rate the forwarder
//! itself is the bottleneck, so packets queue in it and the error includes
//! that queueing; at 200 Mbit/s the queueing is modelled (part of each
//! packet's ideal deadline) and the error is the link's timing alone.
//! Needs root and /dev/net/tun.
//!
//! `cargo run --release -p rttlens-lab-net --example link_bench [SECONDS]`
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rttlens_lab_net::{Host, Lab, LinkConfig};

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    for rate_bps in [0, 200_000_000] {
        run(secs, rate_bps);
    }
}

fn run(secs: f64, rate_bps: u64) {
    let cfg = LinkConfig {
        rate_bps,
        ..LinkConfig::with_rtt(Duration::from_millis(1))
    };
    let label = if rate_bps == 0 {
        "unlimited".to_string()
    } else {
        format!("rate {} Mbit/s", rate_bps / 1_000_000)
    };
    let mut lab = match Lab::new(cfg) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("link_bench: {e}");
            std::process::exit(2);
        }
    };
    let addr = SocketAddr::new(lab.addr(Host::Server), 7778);
    let (tx, rx) = std::sync::mpsc::channel();
    let server = lab.thread_in(Host::Server, move || {
        let l = TcpListener::bind(addr).expect("bind");
        tx.send(()).expect("ready");
        let (mut s, _) = l.accept().expect("accept");
        let chunk = vec![0u8; 1 << 16];
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            if s.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(5)).expect("server up");
    let client = lab.thread_in(Host::Client, move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut buf = vec![0u8; 1 << 16];
        let mut bytes = 0u64;
        let mut first = None;
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    first.get_or_insert_with(Instant::now);
                    bytes += n as u64;
                }
            }
        }
        (bytes, first.map(|t| t.elapsed()).unwrap_or_default())
    });
    let (bytes, took) = client.join().expect("client").expect("client ns");
    server.join().expect("server").expect("server ns");
    let stats = lab.stop_link();
    let forwarded: u64 = stats.forwarded.iter().sum();
    println!(
        "[{label}] throughput: {:.0} Mbit/s ({} bytes in {:.2} s, {} packets forwarded)",
        bytes as f64 * 8.0 / took.as_secs_f64() / 1e6,
        bytes,
        took.as_secs_f64(),
        forwarded
    );
    println!(
        "[{label}] added delay error |actual - configured| per packet: p50 {} µs, p99 {} µs, p99.9 {} µs, max {} µs",
        stats.error_quantile_us(0.5),
        stats.error_quantile_us(0.99),
        stats.error_quantile_us(0.999),
        stats.error_max_us
    );
    println!(
        "[{label}] link threads with real-time priority: {}/3",
        stats.realtime_threads
    );
}
