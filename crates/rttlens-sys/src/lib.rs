//! # rttlens-sys: the workspace's one unsafe module
//!
//! The Linux socket calls rttlens needs that neither socket2 0.6 nor nix
//! 0.31 wraps, behind safe functions:
//!
//! - [`tcp_info`] / [`TcpInfo`]: `getsockopt(TCP_INFO)` and a decoder of
//!   `struct tcp_info` by byte offset (`include/uapi/linux/tcp.h`), for the
//!   probe's kernel view of its own connection (RTT, MSS, cwnd, TFO
//!   outcome, delivery rate).
//! - [`set_tcp_fastopen`]: `TCP_FASTOPEN` on a listener (the lab servers).
//! - [`bind_packet`] and [`packet_statistics`]: binding an `AF_PACKET`
//!   socket to one interface and reading its drop counter (the probe's
//!   self-capture in `rttlens-lab-net`, the live capture in `rttlens-live`).
//! - [`MappedFile`]: a regular capture file mapped read-only (memmap2's
//!   `Mmap::map`, with `MADV_SEQUENTIAL`, `MADV_DONTNEED` behind the
//!   reader and a `prefetcht0` of the next record), read in place by
//!   `rttlens analyze`; what a truncation while it is mapped does
//!   (`SIGBUS`) is on [`MappedFile`].
//!
//! Every `unsafe` block lives in the private module `ffi` (allowed there,
//! denied everywhere else in this crate, forbidden in every other crate of
//! the workspace) and carries a `SAFETY` comment. Decoding is safe code.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod ffi;
mod tcp_info;

pub use ffi::{bind_packet, packet_statistics, set_tcp_fastopen, MappedFile, PacketStats};
pub use tcp_info::{
    tcp_info, TcpInfo, TCPI_OPT_ECN, TCPI_OPT_ECN_SEEN, TCPI_OPT_SACK, TCPI_OPT_SYN_DATA,
    TCPI_OPT_TIMESTAMPS, TCPI_OPT_WSCALE,
};
