//! rttlens lab networking: the part of the lab (docs/design.md §6) that
//! needs Linux and root.
//!
//! - [`lab::netns`]: named network namespaces, threads and processes inside
//!   them, per-namespace sysctls.
//! - [`lab::link`]: the userspace delay link between two TUN devices (RTT,
//!   rate, loss, reordering, jitter) and its own pcapng capture.
//! - [`lab::pcapng`]: the small pcapng writer the link uses.
//! - [`lab::tcpdump`]: client/server vantage captures with tcpdump.
//! - [`lab::Lab`]: ties them together and cleans up on drop, panic and
//!   Ctrl-C.
//! - [`probe`]: `rttlens probe URL`: DNS, TCP (optionally Fast Open),
//!   rustls and hyper step by step, timed with curl's names, sequences that
//!   verify resumption, 0-RTT and TFO.
//! - [`mod@bench`]: `rttlens bench URL`: a TLS handshake load generator, open
//!   or closed loop, full / resumed / 0-RTT mix, HDR histograms per phase.
//! - [`selfcap`]: the probe's capture of its own packets (AF_PACKET, kernel
//!   ns timestamps), written as pcapng with the TLS key log embedded.
//!
//! This crate has no `unsafe` code: namespaces go through `nix` (safe
//! `setns`) and iproute2, TUN devices through `tun-rs`, the two packet
//! socket calls nix lacks through `rttlens-sys`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bench;
pub mod lab;
pub mod probe;
pub mod selfcap;

pub use lab::link::{Capture, Dir, LinkConfig, LinkStats, Loss};
pub use lab::{Lab, LabError, Side, Sysctls};
pub use selfcap::{CaptureError, CaptureLimits, Captured, CapturedPacket, SelfCapture};
