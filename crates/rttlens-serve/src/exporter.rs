//! The exporter's own metrics, on `/metrics`: probes by module and
//! outcome, how long they took, how many run now and the limit (and,
//! with `--interface`, the live analysis' metrics, registered here too).
//! Encoded as OpenMetrics text, or, when the scrape asks for it, in
//! Prometheus' protobuf format, the one that carries native histograms.

use prometheus_client::encoding::prometheus_protobuf;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

type Labels = Vec<(String, String)>;

/// The media type of Prometheus' protobuf exposition: length-delimited
/// `io.prometheus.client.MetricFamily` messages.
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// How a `/probe` request ended (the `outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The probe ran and succeeded (`probe_success 1`).
    Success,
    /// The probe ran and failed (`probe_success 0`).
    Failure,
    /// A bad target or unknown module: 400, no probe.
    BadRequest,
    /// Over the concurrency limit: 503, no probe.
    Overloaded,
    /// The target's address is outside `--allow-target`: 403, no
    /// connection.
    Forbidden,
}

impl Outcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::BadRequest => "bad_request",
            Outcome::Overloaded => "overloaded",
            Outcome::Forbidden => "forbidden",
        }
    }
}

/// The exporter's registry and its metrics.
#[derive(Debug)]
pub struct ExporterMetrics {
    registry: Registry,
    requests: Family<Labels, Counter>,
    duration: Family<Labels, Histogram>,
    in_flight: Gauge,
}

fn histogram() -> Histogram {
    // 50 ms … 51.2 s, doubling
    Histogram::new(exponential_buckets(0.05, 2.0, 11))
}

impl ExporterMetrics {
    /// The metrics, with `max_concurrent` as the limit exported.
    pub fn new(max_concurrent: usize) -> ExporterMetrics {
        let mut registry = Registry::default();
        let requests = Family::<Labels, Counter>::default();
        registry.register(
            "rttlens_serve_probe_requests",
            "/probe requests by module and outcome (success, failure, bad_request, overloaded, forbidden); an unknown module counts as module=\"\"",
            requests.clone(),
        );
        let duration =
            Family::<Labels, Histogram>::new_with_constructor(histogram as fn() -> Histogram);
        registry.register_with_unit(
            "rttlens_serve_probe_duration",
            "How long the probes that ran took, by module",
            Unit::Seconds,
            duration.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "rttlens_serve_probes_in_flight",
            "Probes running now",
            in_flight.clone(),
        );
        let limit = Gauge::<i64>::default();
        limit.set(i64::try_from(max_concurrent).unwrap_or(i64::MAX));
        registry.register(
            "rttlens_serve_max_concurrent",
            "The most probes that run at once (--max-concurrent); more get 503",
            limit,
        );
        ExporterMetrics {
            registry,
            requests,
            duration,
            in_flight,
        }
    }

    /// Show the live analysis' metrics on `/metrics` too.
    pub fn register_live(&mut self, live: &crate::live::LiveMetrics) {
        live.register(&mut self.registry);
    }

    /// Count a request.
    pub fn request(&self, module: &str, outcome: Outcome) {
        self.requests
            .get_or_create(&vec![
                ("module".to_string(), module.to_string()),
                ("outcome".to_string(), outcome.as_str().to_string()),
            ])
            .inc();
    }

    /// Note a probe's duration.
    pub fn observe(&self, module: &str, secs: f64) {
        self.duration
            .get_or_create(&vec![("module".to_string(), module.to_string())])
            .observe(secs);
    }

    /// A probe starts (`+1`) or ends (`-1`).
    pub fn in_flight(&self, delta: i64) {
        self.in_flight.inc_by(delta);
    }

    /// The exposition (OpenMetrics text): histograms with their classic
    /// buckets only.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // writing to a String cannot fail
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// The exposition in Prometheus' protobuf format
    /// ([`PROTOBUF_CONTENT_TYPE`]): the live analysis' histograms with
    /// both their native buckets (schema, spans, deltas) and their classic
    /// ones.
    ///
    /// # Errors
    /// A metric could not be encoded (none of ours fails; prometheus-client
    /// says so for a native-only histogram in a text-only encoder).
    pub fn encode_protobuf(&self) -> Result<Vec<u8>, prometheus_protobuf::EncodeError> {
        prometheus_protobuf::encode_to_vec(&self.registry)
    }
}
