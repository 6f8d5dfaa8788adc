//! The path toward the target, hop by hop (`rttlens probe --path`, issue
//! 44): what each hop answered over the rounds, where the RTT steps up,
//! and how the last hop compares with the connection's own RTT. Filled by
//! `rttlens-probe`'s `path` module, rendered by `rttlens-report`
//! (`docs/probe.md`, "path").

/// The traced path (`probe.path` in the JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PathReport {
    /// `traced`, or `not-permitted` (no `CAP_NET_RAW`: no raw socket for
    /// the ICMP answers), or `failed` (`note` says why); the hops are empty
    /// unless `traced`.
    pub status: &'static str,
    /// What could not be done, in one line (`null` when traced).
    pub note: Option<String>,
    /// The probes' protocol: `tcp` (SYNs to the target's port, as
    /// `mtr --tcp`) or `udp` (`--http3`: datagrams to the traceroute
    /// ports from 33434 up, whose port-unreachable answers the last hop).
    pub protocol: &'static str,
    /// The address traced to (the connection's remote address).
    pub target: String,
    /// The TCP destination port (`null` for UDP, whose ports vary).
    pub port: Option<u16>,
    /// Rounds run (`--path-rounds`, one a second at most, as mtr does).
    pub rounds: u32,
    /// One entry per TTL from 1 to the target's (or to the last that
    /// answered), in TTL order; a hop that never answered has `addr: null`
    /// and 100 % loss.
    pub hops: Vec<PathHop>,
    /// The hop where the median RTT steps up the most over the hop before
    /// it (`null` with fewer than one answering hop).
    pub step: Option<PathStep>,
    /// The last hop's median RTT against the connection's own RTT.
    pub versus_connection: Option<PathVersus>,
}

/// One hop (one TTL).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PathHop {
    /// The TTL of the probes (1 = the first router).
    pub ttl: u8,
    /// The address that answered most often (`null`: none answered).
    pub addr: Option<String>,
    /// Other addresses that answered at this TTL (load balancing), most
    /// answers first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub other_addrs: Vec<String>,
    /// Its reverse-DNS name, when the lookup answered within the bound
    /// (`null` otherwise).
    pub name: Option<String>,
    /// Whether this is the target (it answered for the target: the SYN-ACK
    /// or reset, or ICMP port unreachable for UDP).
    pub target: bool,
    /// Probes sent at this TTL.
    pub sent: u32,
    /// Probes answered.
    pub received: u32,
    /// `100 × (sent − received) / sent`, in percent.
    pub loss_pct: f64,
    /// Smallest RTT (ms; `null` without an answer).
    pub min_ms: Option<f64>,
    /// Median RTT (ms, nearest rank).
    pub p50_ms: Option<f64>,
    /// 90th percentile RTT (ms, nearest rank).
    pub p90_ms: Option<f64>,
    /// Largest RTT (ms).
    pub max_ms: Option<f64>,
}

/// Where the RTT steps up the most.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PathStep {
    /// The hop's TTL.
    pub ttl: u8,
    /// Its address.
    pub addr: String,
    /// Its name, when known.
    pub name: Option<String>,
    /// The median RTT of the answering hop before it (ms; 0 for the first
    /// hop: the step from the client itself).
    pub from_ms: f64,
    /// Its own median RTT (ms).
    pub to_ms: f64,
    /// `to_ms − from_ms` (ms).
    pub step_ms: f64,
}

/// The last hop against the connection's own RTT.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PathVersus {
    /// The last answering hop's median RTT (ms).
    pub last_hop_ms: f64,
    /// Whether that hop is the target itself.
    pub last_hop_is_target: bool,
    /// The connection's RTT (ms; the first attempt's `rtt_ms`).
    pub connection_rtt_ms: f64,
    /// Where the connection's RTT comes from (the attempt's `rtt_source`).
    pub connection_rtt_source: &'static str,
    /// `last_hop_ms − connection_rtt_ms` (ms).
    pub diff_ms: f64,
}
