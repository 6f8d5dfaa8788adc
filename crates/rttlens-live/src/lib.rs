//! # rttlens-live: packets read live from an interface
//!
//! [`LiveCapture`] is a [`FrameSource`] over an `AF_PACKET` socket bound to
//! one interface (or to every one, `any`), so `rttlens analyze -i IFACE`
//! and `rttlens serve --interface IFACE` run the engine's streaming
//! pipeline (`rttlens_core::pipeline`) on live traffic exactly as they run
//! it on a file.
//!
//! How packets are read, as the probe's self-capture reads them
//! (`rttlens-net`'s `selfcap`, docs/design.md §6):
//!
//! - an `AF_PACKET`, `SOCK_DGRAM` socket (packet(7)): the kernel removes the
//!   link header and says in `sockaddr_ll` which protocol the packet
//!   carries, on which interface, of which hardware type and in which
//!   direction. Each frame is handed on with a Linux cooked v2 header built
//!   from it (`LINKTYPE_LINUX_SLL2`, 20 octets, as libpcap writes for
//!   `tcpdump -i any`), so any interface kind (Ethernet, veth, TUN,
//!   loopback, WireGuard) reads the same way and VLAN tags the NIC took
//!   off do not matter;
//! - opened with protocol 0 and then bound to the interface with
//!   `ETH_P_ALL` ([`rttlens_sys::bind_packet`]): no packet of another
//!   interface is ever queued;
//! - kernel receive timestamps in nanoseconds (`SO_TIMESTAMPNS`,
//!   socket(7));
//! - a 16 MiB receive buffer (`SO_RCVBUFFORCE` as root, else as much of it
//!   as `net.core.rmem_max` allows): what the kernel holds while the
//!   analysis is busy. When it is full the kernel drops packets and counts
//!   them; [`rttlens_sys::packet_statistics`] reads the count once a second
//!   and at the end ([`LiveCounters`], [`FrameSource::kernel_drops`]), and
//!   the capture summary reports it as a capture-quality figure;
//! - on a loopback interface the kernel hands every packet to the tap twice
//!   (leaving, `PACKET_OUTGOING`, and arriving); the outgoing copy is
//!   dropped, as libpcap does;
//! - an interface that is down (or goes down) is waited for: the capture
//!   goes on when it comes back up.
//!
//! The capture ends when its [`StopHandle`] is told to stop (Ctrl-C,
//! SIGTERM, the end of `--duration`, the exporter shutting down) or at its
//! deadline; the packets already queued are still read, then
//! [`FrameSource::next_frame`] returns `None` and the pipeline finishes the
//! connections still open, as at the end of a file.
//!
//! Needs `CAP_NET_RAW` (root, or `setcap cap_net_raw+ep` on the binary):
//! without it, [`LiveError::NotPermitted`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::io::{self, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::net::if_::if_nametoindex;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    recvmsg, setsockopt, socket, sockopt, AddressFamily, ControlMessageOwned, LinkAddr, MsgFlags,
    SockFlag, SockType,
};
use rttlens_core::base::time::Timestamp;
use rttlens_core::capture::keylog::KeyStore;
use rttlens_core::capture::{CaptureError, CaptureNotes, Frame, FrameSource, LinkType};

/// Why a live capture could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LiveError {
    /// Opening an `AF_PACKET` socket needs `CAP_NET_RAW` (`EPERM`).
    #[error(
        "capturing on {interface} needs CAP_NET_RAW: run as root or give the binary the \
         capability (`setcap cap_net_raw+ep rttlens`)"
    )]
    NotPermitted {
        /// The interface asked for.
        interface: String,
    },
    /// No interface of that name in this network namespace.
    #[error("no interface named '{interface}' in this network namespace (`ip link` lists them; `any` captures on all)")]
    NoInterface {
        /// The name given.
        interface: String,
    },
    /// Another system error (a socket option, `bind`).
    #[error("capturing on {interface}: {source}")]
    Io {
        /// The interface.
        interface: String,
        /// The error.
        source: io::Error,
    },
}

/// Tells a [`LiveCapture`] to end; clones share the flag (one for the
/// signal handler, one for a timer, the capture's own).
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    /// A handle not yet stopped.
    pub fn new() -> StopHandle {
        StopHandle::default()
    }

    /// Ask the capture to end: it reads what is queued, then reports the
    /// end of its frames (within [`POLL_MS`] ms).
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`stop`](Self::stop) was called.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counts a running capture shares with other threads (the exporter's
/// `/metrics`); each only grows.
#[derive(Debug, Default)]
pub struct LiveCounters {
    kernel_packets: AtomicU64,
    kernel_drops: AtomicU64,
    frames: AtomicU64,
}

impl LiveCounters {
    /// Packets the kernel passed to the socket's tap (`tp_packets` of
    /// `PACKET_STATISTICS`, summed; drops included), as of the last
    /// reading (once a second).
    pub fn kernel_packets(&self) -> u64 {
        self.kernel_packets.load(Ordering::Relaxed)
    }

    /// Packets the kernel dropped because the socket's receive buffer was
    /// full (`tp_drops`, summed), as of the last reading (once a second).
    pub fn kernel_drops(&self) -> u64 {
        self.kernel_drops.load(Ordering::Relaxed)
    }

    /// Frames handed to the analysis so far.
    pub fn frames(&self) -> u64 {
        self.frames.load(Ordering::Relaxed)
    }
}

/// How long one wait for a packet lasts (ms): bounds how late a stop is
/// seen.
pub const POLL_MS: u16 = 100;
/// How often the kernel's counters are read.
const STATS_EVERY: Duration = Duration::from_secs(1);
/// The receive buffer asked of the kernel (bytes).
const SO_RCVBUF: usize = 16 << 20;
/// The largest packet read whole (bytes): a 64 KiB GSO/GRO packet and more.
const MAX_PACKET: usize = 256 << 10;
/// `ARPHRD_LOOPBACK` (`include/uapi/linux/if_arp.h`).
const ARPHRD_LOOPBACK: u16 = 772;
/// `PACKET_OUTGOING` (`include/uapi/linux/if_packet.h`).
const PACKET_OUTGOING: u8 = 4;
/// The Linux cooked v2 header put before each packet (octets).
const SLL2_LEN: usize = 20;

/// A capture on a live interface, read as a [`FrameSource`].
#[derive(Debug)]
pub struct LiveCapture {
    fd: OwnedFd,
    interface: String,
    /// `[SLL2 header][packet]` of the frame last returned.
    buf: Vec<u8>,
    frames: u64,
    bytes: u64,
    last_ts: Option<Timestamp>,
    notes: CaptureNotes,
    keys: KeyStore,
    stop: StopHandle,
    deadline: Option<Instant>,
    counters: Arc<LiveCounters>,
    stats_at: Instant,
    /// The kernel would not give its counters (then `kernel_drops` is
    /// `None`).
    no_stats: bool,
    /// The last read found the interface down (`ENETDOWN`): wait without
    /// polling, which would return at once.
    down: bool,
}

/// What `recvmsg` said of one packet.
#[derive(Debug, Clone, Copy)]
struct Rx {
    ts: Timestamp,
    /// The packet's length on the wire, from the network header on.
    len: usize,
    addr: Option<LinkAddr>,
}

impl LiveCapture {
    /// Open a capture on `interface` (`eth0`, `veth1`; `any`: every
    /// interface of the namespace). Packets are queued from when this
    /// returns. The capture is in the network namespace of the calling
    /// thread.
    ///
    /// # Errors
    /// [`LiveError::NoInterface`] for an unknown name,
    /// [`LiveError::NotPermitted`] without `CAP_NET_RAW`,
    /// [`LiveError::Io`] when a socket option or the bind fails.
    pub fn open(interface: &str) -> Result<LiveCapture, LiveError> {
        let ifindex = if interface == "any" {
            0
        } else {
            if_nametoindex(interface).map_err(|_| LiveError::NoInterface {
                interface: interface.to_string(),
            })?
        };
        let io_err = |source: io::Error| LiveError::Io {
            interface: interface.to_string(),
            source,
        };
        // Protocol 0: nothing is queued until `bind` names the interface
        // and ETH_P_ALL (as in the probe's self-capture).
        let fd = socket(
            AddressFamily::Packet,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
            None,
        )
        .map_err(|e| match e {
            Errno::EPERM | Errno::EACCES => LiveError::NotPermitted {
                interface: interface.to_string(),
            },
            e => io_err(e.into()),
        })?;
        setsockopt(&fd, sockopt::ReceiveTimestampns, &true).map_err(|e| io_err(e.into()))?;
        if setsockopt(&fd, sockopt::RcvBufForce, &SO_RCVBUF).is_err() {
            setsockopt(&fd, sockopt::RcvBuf, &SO_RCVBUF).map_err(|e| io_err(e.into()))?;
        }
        rttlens_sys::bind_packet(&fd, ifindex, libc::ETH_P_ALL as u16).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENODEV) {
                LiveError::NoInterface {
                    interface: interface.to_string(),
                }
            } else {
                io_err(e)
            }
        })?;
        // the counters count from the bind on
        let _ = rttlens_sys::packet_statistics(&fd);
        Ok(LiveCapture {
            fd,
            interface: interface.to_string(),
            buf: vec![0; SLL2_LEN + MAX_PACKET],
            frames: 0,
            bytes: 0,
            last_ts: None,
            notes: CaptureNotes::default(),
            keys: KeyStore::new(),
            stop: StopHandle::new(),
            deadline: None,
            counters: Arc::new(LiveCounters::default()),
            stats_at: Instant::now(),
            no_stats: false,
            down: false,
        })
    }

    /// End the capture at `deadline` (`--duration`), as a stop would.
    pub fn with_deadline(mut self, deadline: Instant) -> LiveCapture {
        self.deadline = Some(deadline);
        self
    }

    /// Use `stop` (shared with a signal handler, say) as this capture's
    /// stop flag.
    pub fn with_stop(mut self, stop: StopHandle) -> LiveCapture {
        self.stop = stop;
        self
    }

    /// The capture's stop flag.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// The counters, shared with whoever wants to read them while the
    /// capture runs.
    pub fn counters(&self) -> Arc<LiveCounters> {
        Arc::clone(&self.counters)
    }

    /// The interface captured on.
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// Add the kernel's counters since the last reading to the totals.
    fn read_stats(&mut self) {
        self.stats_at = Instant::now();
        match rttlens_sys::packet_statistics(&self.fd) {
            Ok(s) => {
                self.counters
                    .kernel_packets
                    .fetch_add(u64::from(s.packets), Ordering::Relaxed);
                self.counters
                    .kernel_drops
                    .fetch_add(u64::from(s.drops), Ordering::Relaxed);
            }
            Err(_) => self.no_stats = true,
        }
    }

    /// Read one packet behind the header room of `buf`; `None` when none
    /// is queued.
    fn recv(&mut self) -> io::Result<Option<Rx>> {
        let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
        let mut iov = [IoSliceMut::new(&mut self.buf[SLL2_LEN..])];
        // MSG_TRUNC: the packet's real length even when longer than the
        // buffer (packet(7))
        let msg = match recvmsg::<LinkAddr>(
            self.fd.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_TRUNC,
        ) {
            Ok(m) => m,
            Err(Errno::EAGAIN | Errno::EINTR) => return Ok(None),
            // the interface is down (now, or was set down): wait for it to
            // come back up, as a capture left running should
            Err(Errno::ENETDOWN) => {
                self.down = true;
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let mut ts_ns = None;
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::ScmTimestampns(t) = c {
                    ts_ns = Some(t.tv_sec() * 1_000_000_000 + t.tv_nsec());
                }
            }
        }
        let ts_ns = ts_ns.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        });
        Ok(Some(Rx {
            ts: Timestamp::from_nanos(ts_ns),
            len: msg.bytes,
            addr: msg.address,
        }))
    }

    /// Wait up to [`POLL_MS`] for a packet.
    fn wait(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.down) {
            std::thread::sleep(Duration::from_millis(u64::from(POLL_MS)));
            return Ok(());
        }
        let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(POLL_MS)) {
            Ok(_) | Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the capture is told to end (stop flag or deadline).
    fn ending(&self) -> bool {
        self.stop.is_stopped() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

impl FrameSource for LiveCapture {
    /// The next packet, waiting for one; `None` once the capture is told
    /// to end and what was queued is read.
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        let rx = loop {
            if self.stats_at.elapsed() >= STATS_EVERY {
                self.read_stats();
            }
            let ending = self.ending();
            match self.recv()? {
                Some(rx) => {
                    let outgoing_loopback = rx.addr.is_some_and(|a| {
                        a.hatype() == ARPHRD_LOOPBACK && a.pkttype() == PACKET_OUTGOING
                    });
                    if !outgoing_loopback {
                        break rx;
                    }
                }
                None if ending => {
                    self.read_stats();
                    return Ok(None);
                }
                None => self.wait()?,
            }
        };
        // Linux cooked v2 header (LINKTYPE_LINUX_SLL2): protocol (network
        // order, as sockaddr_ll holds it), reserved, ifindex, ARPHRD type,
        // packet type, address length, address (8 octets)
        let (protocol, ifindex, hatype, pkttype, halen, addr) =
            rx.addr.map_or((0, 0, 0, 0, 0, [0; 6]), |a: LinkAddr| {
                (
                    a.protocol(),
                    u32::try_from(a.ifindex()).unwrap_or(0),
                    a.hatype(),
                    a.pkttype(),
                    u8::try_from(a.halen().min(8)).unwrap_or(0),
                    a.addr().unwrap_or([0; 6]),
                )
            });
        let head = &mut self.buf[..SLL2_LEN];
        head[0..2].copy_from_slice(&protocol.to_ne_bytes());
        head[2..4].fill(0);
        head[4..8].copy_from_slice(&ifindex.to_be_bytes());
        head[8..10].copy_from_slice(&hatype.to_be_bytes());
        head[10] = pkttype;
        head[11] = halen;
        head[12..18].copy_from_slice(&addr);
        head[18..20].fill(0);
        let caplen = rx.len.min(MAX_PACKET);
        if caplen < rx.len {
            self.notes.cut_by_snaplen += 1;
        }
        if self.last_ts.is_some_and(|t| rx.ts < t) {
            self.notes.ts_backwards += 1;
        }
        self.last_ts = Some(rx.ts);
        self.frames += 1;
        self.bytes += (SLL2_LEN + caplen) as u64;
        self.counters.frames.store(self.frames, Ordering::Relaxed);
        Ok(Some(Frame {
            number: self.frames,
            ts: rx.ts,
            link_type: LinkType::LINUX_SLL2,
            data: &self.buf[..SLL2_LEN + caplen],
            orig_len: u32::try_from(SLL2_LEN + rx.len).unwrap_or(u32::MAX),
        }))
    }

    /// Bytes captured (the packets and their cooked headers).
    fn bytes_read(&self) -> u64 {
        self.bytes
    }

    fn notes(&self) -> CaptureNotes {
        self.notes
    }

    /// `live AF_PACKET (kernel: N packets, M dropped)`: the kernel's
    /// capture-quality figure beside the format.
    fn format_name(&self) -> String {
        if self.no_stats {
            return "live AF_PACKET (kernel drop count unavailable)".to_string();
        }
        format!(
            "live AF_PACKET (kernel: {} packets, {} dropped)",
            self.counters.kernel_packets(),
            self.counters.kernel_drops()
        )
    }

    fn key_store(&self) -> KeyStore {
        self.keys.clone()
    }

    fn kernel_drops(&self) -> Option<u64> {
        (!self.no_stats).then(|| self.counters.kernel_drops())
    }

    fn is_live(&self) -> bool {
        true
    }
}
