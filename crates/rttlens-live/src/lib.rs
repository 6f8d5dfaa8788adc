//! # rttlens-live: packets read live from an interface
//!
//! One `AF_PACKET` capture (the module `packet`: the socket, its kernel
//! timestamps, drop counter and reads) serves both readers of live
//! packets:
//!
//! - [`LiveCapture`], a [`FrameSource`](rttlens_core::capture::FrameSource)
//!   over one interface (or every one, `any`), so `rttlens analyze -i
//!   IFACE` and `rttlens serve --interface IFACE` run the engine's
//!   streaming pipeline (`rttlens_core::pipeline`) on live traffic exactly
//!   as they run it on a file;
//! - [`selfcap`]: a program's capture of its own packets (`rttlens probe`:
//!   the TCP segments or UDP datagrams between it and one remote host),
//!   written as pcapng with the TLS key log embedded ([`pcapng`], the
//!   small writer the lab's delay link writes its captures with too).
//!
//! The two socket calls nix lacks (`bind` of a `sockaddr_ll`,
//! `PACKET_STATISTICS`) are `rttlens-sys`'s; this crate has no `unsafe`
//! code, and no async runtime, TLS or TUN code: `rttlens analyze -i` is
//! part of the analyzer binary (feature `live` of `rttlens`).
//!
//! Needs `CAP_NET_RAW` (root, or `setcap cap_net_raw+ep` on the binary):
//! without it, [`LiveError::NotPermitted`] and
//! [`SelfCaptureError::NotPermitted`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod interface;
mod packet;
pub mod pcapng;
pub mod selfcap;

pub use interface::{LiveCapture, LiveCounters, LiveError, StopHandle, POLL_MS};
pub use selfcap::{
    CaptureLimits, Captured, CapturedPacket, Protocol, SelfCapture, SelfCaptureError,
};
