//! # rttlens-lab-net: the lab's network
//!
//! What `rttlens lab`, `rttlens bench` and the tests that need a network
//! build their networks from (docs/design.md §6), the part that needs
//! Linux, root and `/dev/net/tun`.
//!
//! - [`netns`]: named network namespaces, threads and processes inside
//!   them, per-namespace sysctls.
//! - [`link`]: the userspace delay link between two TUN devices (RTT,
//!   rate, loss, reordering, jitter) and its own pcapng capture.
//! - [`topology`]: the [`Lab`], a client and a server namespace joined by
//!   the link, torn down on drop, panic and Ctrl-C.
//! - [`routed`]: the [`RoutedLab`], four namespaces in a row (client,
//!   two forwarding routers joined by the link, server), for the path
//!   scenario.
//! - [`tcpdump`]: client/server vantage captures with tcpdump.
//!
//! Over this crate: `rttlens-lab` (the scenarios of `rttlens lab`) and
//! `rttlens-bench` (`rttlens bench`); the probe, the servers and the
//! exporter take it only in their tests. The link writes its captures
//! with `rttlens-live`'s pcapng writer; the probe's self-capture is
//! `rttlens-live`'s too, and `TlsVersion` is `rttlens-probe-model`'s.
//!
//! This crate has no `unsafe` code: namespaces go through `nix` (safe
//! `setns`) and iproute2, TUN devices through `tun-rs`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
pub mod link;
pub mod netns;
pub mod routed;
pub mod tcpdump;
pub mod topology;

pub use link::{CapturePoint, Direction, LinkConfig, LinkStats, Loss};
pub use routed::{Node, RoutedLab};
pub use tcpdump::{Tcpdump, TcpdumpCounts};
pub use topology::{
    check_prerequisites, cleanup_all, register_scratch, require_command, unregister_scratch, Host,
    Lab, LabError, Sysctls, MTU, TUN_NAME,
};
