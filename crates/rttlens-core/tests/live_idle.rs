//! A live source's quiet time drives the hand-offs (issue 46): a shared
//! capture replayed as a live source that, like `rttlens-live`'s capture,
//! reports the clock every 100 ms without a packet
//! ([`FrameSource::next_or_idle`]) — in the gaps between the capture's
//! packets and for 5 s after the last. Each closed TCP connection is then
//! handed on about a second after its last packet, and a QUIC connection
//! closed by CONNECTION_CLOSE about three seconds after it, before the end
//! of the capture; without the idle clock they would wait for later
//! packets, or for the end. One thread and two hand on the same
//! connections in the same order.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use rttlens_core::base::time::Timestamp;
use rttlens_core::capture::keylog::KeyStore;
use rttlens_core::capture::{
    CaptureError, CaptureNotes, CaptureReader, Frame, FrameSource, LinkType, Next,
};
use rttlens_core::model::Connection;
use rttlens_core::pipeline::{self, Options};

/// The live source's idle tick (`rttlens_live::POLL_MS`).
const TICK_NS: i64 = 100_000_000;
/// How long the replay stays quiet after its last packet.
const QUIET_AFTER_NS: i64 = 5_000_000_000;

fn shared(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures")
        .join(name)
}

/// A shared capture's path, which must exist.
fn capture(name: &str) -> PathBuf {
    let p = shared(name);
    assert!(
        p.exists(),
        "{}: the shared captures beside the repository",
        p.display()
    );
    p
}

/// One frame of the capture, owned.
struct Owned {
    number: u64,
    ts: Timestamp,
    link_type: LinkType,
    data: Vec<u8>,
    orig_len: u32,
}

/// A capture replayed as a live source: its frames (read beforehand), and
/// with `idle` between them (and after the last) the clock every
/// [`TICK_NS`] of the capture's time. `clock` is the time of the latest
/// frame or tick given.
struct Replay {
    frames: Vec<Owned>,
    /// The next frame to give.
    at: usize,
    /// The next tick, counted from the frame before `at`.
    tick: i64,
    idle: bool,
    keys: KeyStore,
    clock: Arc<AtomicI64>,
}

impl Replay {
    fn open(name: &str, idle: bool) -> (Replay, Arc<AtomicI64>) {
        let mut reader = CaptureReader::open(&capture(name)).expect("open the capture");
        // its key log beside it, when there is one (QUIC's closes are
        // encrypted)
        if let Ok(text) = std::fs::read(shared(name).with_extension("keylog")) {
            reader.key_store().add(&text);
        }
        let mut frames = Vec::new();
        while let Some(f) = reader.next_frame().expect("read the capture") {
            frames.push(Owned {
                number: f.number,
                ts: f.ts,
                link_type: f.link_type,
                data: f.data.to_vec(),
                orig_len: f.orig_len,
            });
        }
        assert!(!frames.is_empty(), "{name}: frames");
        let clock = Arc::new(AtomicI64::new(i64::MIN));
        let r = Replay {
            frames,
            at: 0,
            tick: 1,
            idle,
            keys: reader.key_store(),
            clock: Arc::clone(&clock),
        };
        (r, clock)
    }
}

impl FrameSource for Replay {
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        let Some(f) = self.frames.get(self.at) else {
            return Ok(None);
        };
        self.at += 1;
        self.tick = 1;
        self.clock.fetch_max(f.ts.nanos, Ordering::SeqCst);
        Ok(Some(Frame {
            number: f.number,
            ts: f.ts,
            link_type: f.link_type,
            data: &f.data,
            orig_len: f.orig_len,
        }))
    }
    fn next_or_idle(&mut self) -> Result<Option<Next<'_>>, CaptureError> {
        if self.idle && self.at > 0 {
            let prev = self.frames[self.at - 1].ts.nanos;
            let until = self
                .frames
                .get(self.at)
                .map_or(prev + QUIET_AFTER_NS, |f| f.ts.nanos);
            let t = prev + self.tick * TICK_NS;
            if t < until {
                self.tick += 1;
                self.clock.fetch_max(t, Ordering::SeqCst);
                return Ok(Some(Next::Idle(Timestamp::from_nanos(t))));
            }
        }
        Ok(self.next_frame()?.map(Next::Frame))
    }
    fn bytes_read(&self) -> u64 {
        0
    }
    fn notes(&self) -> CaptureNotes {
        CaptureNotes::default()
    }
    fn format_name(&self) -> String {
        "replay".to_string()
    }
    fn key_store(&self) -> KeyStore {
        self.keys.clone()
    }
    fn is_live(&self) -> bool {
        true
    }
}

/// A connection as it was handed on: its index, transport, whether it
/// closed, its last packet's time and the replay's clock then (ns).
#[derive(Debug, Clone, PartialEq)]
struct HandedOn {
    index: u64,
    quic: bool,
    closed: bool,
    last_ns: i64,
    clock_ns: i64,
}

/// The connections of `name` replayed (with the idle clock or without) on
/// `threads`, as handed on; the end of the replay's frames as a clock.
fn replay(name: &str, idle: bool, threads: usize) -> (Vec<HandedOn>, i64) {
    let (mut src, clock) = Replay::open(name, idle);
    let end = src.frames.last().map_or(0, |f| f.ts.nanos);
    let mut out = Vec::new();
    pipeline::run_with(
        &mut src,
        &Options {
            threads,
            ..Options::default()
        },
        &mut |c| {
            let clock_ns = clock.load(Ordering::SeqCst);
            out.push(match c {
                Connection::Tcp(r) => {
                    let h = r.history.as_str();
                    HandedOn {
                        index: r.index,
                        quic: false,
                        // FIN both ways or a reset (Zeek's history letters)
                        closed: h.contains('F') && h.contains('f')
                            || h.contains('R')
                            || h.contains('r'),
                        last_ns: r.first_ts.nanos + (r.duration_ms * 1e6) as i64,
                        clock_ns,
                    }
                }
                Connection::Quic(q) => HandedOn {
                    index: q.index,
                    quic: true,
                    closed: true,
                    last_ns: 0,
                    clock_ns,
                },
            });
        },
        &mut |_| {},
    )
    .expect("the replay runs");
    (out, end)
}

#[test]
fn each_closed_tcp_connection_is_handed_on_a_second_after_its_last_packet() {
    let name = "public/zeek_http-bro-org.pcap";
    let (conns, end) = replay(name, true, 1);
    let closed: Vec<&HandedOn> = conns.iter().filter(|c| c.closed).collect();
    assert!(closed.len() >= 10, "{name}: closed connections: {conns:?}");
    for c in &closed {
        let after_ms = (c.clock_ns - c.last_ns) as f64 / 1e6;
        // CLOSED_LINGER (1 s), then the next tick or sweep (100 ms each)
        assert!(
            (1_000.0..=1_250.0).contains(&after_ms),
            "{name}: connection {} handed on {after_ms} ms after its last packet",
            c.index
        );
        assert!(c.clock_ns <= end + 1_250_000_000, "{c:?}");
    }
    // every one of them before the replay's quiet end: on time alone
    assert!(closed.iter().all(|c| c.clock_ns < end + QUIET_AFTER_NS));

    // without the idle clock, the last ones wait for the end
    let (plain, _) = replay(name, false, 1);
    let late = plain
        .iter()
        .filter(|c| c.closed && c.clock_ns - c.last_ns < 1_000_000_000)
        .count();
    assert!(
        late > 0,
        "{name}: without the idle clock some closed connection waits for the end: {plain:?}"
    );
}

#[test]
fn two_threads_hand_on_what_one_does_with_the_idle_clock() {
    for name in [
        "public/zeek_http-bro-org.pcap",
        "public/zeek_http-vnd-ms-cab-multi-conn.pcap",
    ] {
        let (one, _) = replay(name, true, 1);
        let (two, _) = replay(name, true, 2);
        let key = |v: &[HandedOn]| -> Vec<(u64, bool, i64)> {
            v.iter().map(|c| (c.index, c.quic, c.last_ns)).collect()
        };
        assert!(!one.is_empty(), "{name}");
        assert_eq!(key(&one), key(&two), "{name}: one thread and two");
    }
}

#[test]
fn a_closed_quic_connection_is_handed_on_three_seconds_after_its_close() {
    // with its key log: the server's CONNECTION_CLOSE is encrypted
    let name = "public/illustrated_quic.pcap";
    let (conns, end) = replay(name, true, 1);
    let quic: Vec<&HandedOn> = conns.iter().filter(|c| c.quic).collect();
    assert_eq!(quic.len(), 1, "{name}: {conns:?}");
    let after_ms = (quic[0].clock_ns - end) as f64 / 1e6;
    // 3 s after CONNECTION_CLOSE (the last packets), swept once a second
    assert!(
        (3_000.0..=4_200.0).contains(&after_ms),
        "{name}: handed on {after_ms} ms after the last packet"
    );
}
