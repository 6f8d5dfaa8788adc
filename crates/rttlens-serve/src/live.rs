//! `rttlens serve --interface IFACE`: the live analysis of an interface's
//! traffic in the background, and what it found on `/metrics`.
//!
//! A thread reads an [`rttlens_live::LiveCapture`] through the engine's
//! streaming pipeline ([`rttlens_core::pipeline::run_with`], one thread:
//! the same analysis as `rttlens analyze -i IFACE`), and every connection
//! that ends adds to the metrics here: the connections analysed, each
//! finding's count and cost by id, each phase's duration (a histogram).
//! The kernel's counters of the capture socket (packets, drops) and the
//! connections open now are read at each scrape. Memory stays that of the
//! connections open at once (the pipeline hands each on when it ends or
//! after its idle timeout) and of the label sets, which are bounded: a
//! phase name (`connect`, `tls`, `request`, `first-decrypted-byte`,
//! `transfer`, `close`) or a finding id (`docs/design.md` §5).
//!
//! A connection is counted when it ends, and the pipeline sees that it
//! ended (a closed connection's linger, an idle one's timeout) on the
//! timestamps of later packets: on a quiet interface a connection waits
//! for the next packet to be counted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{
    exponential_buckets, Histogram, NativeHistogramConfig,
};
use prometheus_client::registry::{Registry, Unit};
use rttlens_core::model::Connection;
use rttlens_core::pipeline;
use rttlens_live::{LiveCapture, LiveCounters, LiveError, StopHandle};

type Labels = Vec<(String, String)>;

/// The metrics of the live analysis; clones share them.
#[derive(Debug, Clone)]
pub struct LiveMetrics {
    connections: Counter,
    findings: Family<Labels, Counter>,
    cost: Family<Labels, Counter<f64, AtomicU64>>,
    phase_seconds: Family<Labels, Histogram>,
    phase_rtts: Family<Labels, Histogram>,
    gauges: Arc<Gauges>,
}

/// What is read at each scrape.
#[derive(Debug)]
struct Gauges {
    interface: String,
    kernel: Arc<LiveCounters>,
    open: Arc<AtomicU64>,
}

/// Phase durations: 100 µs … 105 s, doubling (21 buckets), and a native
/// histogram beside them (bucket factor 1.1: schema 3, 2^(1/8) ≈ 1.09)
/// for a protobuf scrape ([`crate::exporter::PROTOBUF_CONTENT_TYPE`]).
fn seconds_histogram() -> Histogram {
    Histogram::new_classic_and_native(
        exponential_buckets(0.000_1, 2.0, 21),
        NativeHistogramConfig::new(1.1),
    )
}

/// Phase durations in round trips: ¼ … 1024, doubling.
fn rtts_histogram() -> Histogram {
    Histogram::new_classic_and_native(
        exponential_buckets(0.25, 2.0, 13),
        NativeHistogramConfig::new(1.1),
    )
}

impl LiveMetrics {
    fn new(interface: &str, kernel: Arc<LiveCounters>, open: Arc<AtomicU64>) -> LiveMetrics {
        LiveMetrics {
            connections: Counter::default(),
            findings: Family::default(),
            cost: Family::default(),
            phase_seconds: Family::new_with_constructor(seconds_histogram as fn() -> Histogram),
            phase_rtts: Family::new_with_constructor(rtts_histogram as fn() -> Histogram),
            gauges: Arc::new(Gauges {
                interface: interface.to_string(),
                kernel,
                open,
            }),
        }
    }

    /// Register every metric in `registry` (the exporter's own, so one
    /// `/metrics` shows both).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "rttlens_live_connections",
            "Connections (TCP and QUIC) of the live capture analysed (counted when they end)",
            self.connections.clone(),
        );
        registry.register(
            "rttlens_live_findings",
            "Findings of the live capture's connections, by id",
            self.findings.clone(),
        );
        registry.register_with_unit(
            "rttlens_live_finding_cost",
            "What the findings of the live capture's connections cost, by id (informational findings cost 0)",
            Unit::Seconds,
            self.cost.clone(),
        );
        registry.register_with_unit(
            "rttlens_live_phase_duration",
            "Each phase of each connection of the live capture (connect, tls, request, first-decrypted-byte, transfer, close)",
            Unit::Seconds,
            self.phase_seconds.clone(),
        );
        registry.register(
            "rttlens_live_phase_rtts",
            "The same phases in round trips of each connection's own RTT (connections whose RTT is known)",
            self.phase_rtts.clone(),
        );
        registry.register_collector(Box::new(Arc::clone(&self.gauges)));
    }

    /// Add one ended connection.
    pub fn add(&self, c: &Connection) {
        self.connections.inc();
        for f in c.findings() {
            let id = vec![("id".to_string(), f.id.to_string())];
            self.findings.get_or_create(&id).inc();
            if f.cost.ms.is_finite() && f.cost.ms > 0.0 {
                self.cost.get_or_create(&id).inc_by(f.cost.ms / 1000.0);
            }
        }
        for p in c.ladder() {
            let phase = vec![("phase".to_string(), p.name.to_string())];
            if p.ms.is_finite() && p.ms >= 0.0 {
                self.phase_seconds
                    .get_or_create(&phase)
                    .observe(p.ms / 1000.0);
            }
            if c.rtt_min_ms().is_some() && p.rtts.is_finite() && p.rtts >= 0.0 {
                self.phase_rtts.get_or_create(&phase).observe(p.rtts);
            }
        }
    }
}

impl Collector for Gauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let iface = [("interface", self.interface.as_str())];
        let counters = [
            (
                "rttlens_live_kernel_packets",
                "Packets the kernel passed to the capture socket (PACKET_STATISTICS tp_packets, read once a second; drops included)",
                self.kernel.kernel_packets(),
            ),
            (
                "rttlens_live_kernel_drops",
                "Packets the kernel dropped because the capture socket's buffer was full (PACKET_STATISTICS tp_drops, read once a second): the analysis missed them",
                self.kernel.kernel_drops(),
            ),
            (
                "rttlens_live_frames",
                "Frames the live analysis read",
                self.kernel.frames(),
            ),
        ];
        for (name, help, v) in counters {
            let c = ConstCounter::new(v);
            let mut family = encoder.encode_descriptor(name, help, None, c.metric_type())?;
            c.encode(family.encode_family(&iface)?)?;
        }
        let open =
            ConstGauge::new(i64::try_from(self.open.load(Ordering::Relaxed)).unwrap_or(i64::MAX));
        let mut family = encoder.encode_descriptor(
            "rttlens_live_open_connections",
            "TCP connections of the live capture open now (seen, not yet ended)",
            None,
            open.metric_type(),
        )?;
        open.encode(family.encode_family(&iface)?)?;
        Ok(())
    }
}

/// The live analysis running in the background.
#[derive(Debug)]
pub struct LiveRun {
    metrics: LiveMetrics,
    stop: StopHandle,
    thread: Option<JoinHandle<()>>,
}

impl LiveRun {
    /// Open a capture on `interface` and start analysing it on a thread of
    /// its own (in the calling thread's network namespace).
    ///
    /// # Errors
    /// The capture could not be opened: no such interface, no
    /// `CAP_NET_RAW`.
    pub fn start(interface: &str) -> Result<LiveRun, LiveError> {
        let mut cap = LiveCapture::open(interface)?;
        let stop = cap.stop_handle();
        let open = Arc::new(AtomicU64::new(0));
        let metrics = LiveMetrics::new(interface, cap.counters(), Arc::clone(&open));
        let m = metrics.clone();
        let name = interface.to_string();
        let thread = std::thread::Builder::new()
            .name("rttlens-live".into())
            .spawn(move || {
                let options = pipeline::Options {
                    threads: 1,
                    open_connections: Some(open),
                    ..pipeline::Options::default()
                };
                let r = pipeline::run_with(&mut cap, &options, &mut |c| m.add(&c), &mut |_| {});
                if let Err(e) = r {
                    eprintln!("rttlens serve: the live analysis of {name} ended: {e}");
                }
            })
            .map_err(|source| LiveError::Io {
                interface: interface.to_string(),
                source,
            })?;
        Ok(LiveRun {
            metrics,
            stop,
            thread: Some(thread),
        })
    }

    /// The metrics, to register.
    pub fn metrics(&self) -> &LiveMetrics {
        &self.metrics
    }

    /// Stop the capture and wait for the analysis to finish the
    /// connections still open (they are counted too).
    pub fn stop(mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        self.stop.stop();
    }
}
