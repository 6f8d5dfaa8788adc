//! rttlens on the network: what the lab, the probe and the bench share
//! (docs/design.md §6), the part that needs Linux and root.
//!
//! - [`netns`]: named network namespaces, threads and processes inside
//!   them, per-namespace sysctls.
//! - [`link`]: the userspace delay link between two TUN devices (RTT,
//!   rate, loss, reordering, jitter) and its own pcapng capture.
//! - [`topology`]: the [`Lab`], a client and a server namespace joined by
//!   the link, torn down on drop, panic and Ctrl-C.
//! - [`tcpdump`]: client/server vantage captures with tcpdump.
//! - [`pcapng`]: the small pcapng writer the link and the self-capture use.
//! - [`selfcap`]: a program's capture of its own packets (AF_PACKET, kernel
//!   ns timestamps), written as pcapng with the TLS key log embedded.
//!
//! The products are crates over this one: `rttlens-probe` (`rttlens probe`),
//! `rttlens-lab-server` (the lab's servers), `rttlens-lab` (the scenarios
//! of `rttlens lab`) and `rttlens-bench` (`rttlens bench`).
//!
//! This crate has no `unsafe` code: namespaces go through `nix` (safe
//! `setns`) and iproute2, TUN devices through `tun-rs`, the two packet
//! socket calls nix lacks through `rttlens-sys`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
pub mod link;
pub mod netns;
pub mod pcapng;
pub mod selfcap;
pub mod tcpdump;
pub mod topology;

pub use link::{CapturePoint, Direction, LinkConfig, LinkStats, Loss};
pub use selfcap::{CaptureLimits, Captured, CapturedPacket, SelfCapture, SelfCaptureError};
pub use tcpdump::{Tcpdump, TcpdumpCounts};
pub use topology::{
    check_prerequisites, cleanup_all, register_scratch, require_command, unregister_scratch, Host,
    Lab, LabError, Sysctls, MTU, TUN_NAME,
};
