//! [`LiveCapture`]: a live interface read as the engine's [`FrameSource`]
//! (`rttlens analyze -i IFACE`, `rttlens serve --interface IFACE`), through
//! the crate's one `AF_PACKET` socket (module `packet`):
//!
//! - each frame is handed on with a Linux cooked v2 header built from the
//!   packet's `sockaddr_ll` (`LINKTYPE_LINUX_SLL2`, 20 octets, as libpcap
//!   writes for `tcpdump -i any`), so any interface kind (Ethernet, veth,
//!   TUN, loopback, WireGuard) reads the same way and VLAN tags the NIC
//!   took off do not matter;
//! - bound to the one interface asked for (or to every one, `any`): no
//!   packet of another interface is ever queued;
//! - a 16 MiB receive buffer: what the kernel holds while the analysis is
//!   busy. Its drop count is read once a second and at the end
//!   ([`LiveCounters`], [`FrameSource::kernel_drops`]), and the capture
//!   summary reports it as a capture-quality figure;
//! - on a loopback interface the outgoing copy of each packet is dropped;
//! - an interface that is down (or goes down) is waited for: the capture
//!   goes on when it comes back up;
//! - after [`POLL_MS`] without a packet it tells the pipeline the time
//!   ([`FrameSource::next_or_idle`]): the wall clock, not later packets,
//!   then hands on the connections that are over, on a quiet link too.
//!
//! The capture ends when its [`StopHandle`] is told to stop (Ctrl-C,
//! SIGTERM, the end of `--duration`, the exporter shutting down) or at its
//! deadline; the packets already queued are still read, then
//! [`FrameSource::next_frame`] returns `None` and the pipeline finishes the
//! connections still open, as at the end of a file.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::net::if_::if_nametoindex;
use nix::sys::socket::LinkAddr;
use rttlens_core::base::time::Timestamp;
use rttlens_core::capture::keylog::KeyStore;
use rttlens_core::capture::{CaptureError, CaptureNotes, Frame, FrameSource, LinkType, Next};

use crate::packet::{OpenError, PacketSocket, Rx, ARPHRD_LOOPBACK, PACKET_OUTGOING};

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
/// How far behind the wall clock a quiet capture's clock is held
/// ([`LiveCapture::idle_clock`]): room for a packet stamped by the kernel
/// but not yet queued when the wait ended.
const IDLE_MARGIN: Duration = Duration::from_millis(10);
/// How often the kernel's counters are read.
const STATS_EVERY: Duration = Duration::from_secs(1);
/// The receive buffer asked of the kernel (bytes).
const SO_RCVBUF: usize = 16 << 20;
/// The largest packet read whole (bytes): a 64 KiB GSO/GRO packet and more.
const MAX_PACKET: usize = 256 << 10;
/// The Linux cooked v2 header put before each packet (octets).
const SLL2_LEN: usize = 20;

/// A capture on a live interface, read as a [`FrameSource`].
#[derive(Debug)]
pub struct LiveCapture {
    sock: PacketSocket,
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
    /// The last packet's timestamp and when it was read: the capture's
    /// clock while no packet comes ([`LiveCapture::idle_clock`]).
    last_read: Option<(Timestamp, Instant)>,
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
        let sock = PacketSocket::open(SO_RCVBUF).map_err(|e| match e {
            OpenError::NotPermitted(_) => LiveError::NotPermitted {
                interface: interface.to_string(),
            },
            OpenError::Io(e) => io_err(e),
        })?;
        sock.bind(ifindex).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENODEV) {
                LiveError::NoInterface {
                    interface: interface.to_string(),
                }
            } else {
                io_err(e)
            }
        })?;
        // the counters count from the bind on
        let _ = sock.statistics();
        Ok(LiveCapture {
            sock,
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
            last_read: None,
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
        match self.sock.statistics() {
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
        match self.sock.recv(&mut self.buf[SLL2_LEN..]) {
            Ok(rx) => Ok(rx),
            // the interface is down (now, or was set down): wait for it to
            // come back up, as a capture left running should
            Err(Errno::ENETDOWN) => {
                self.down = true;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Wait up to [`POLL_MS`] for a packet: whether the wait ended before
    /// its time (a packet is queued, a signal came); `false` when it timed
    /// out, or the interface is down (no packet came either).
    fn wait(&mut self) -> io::Result<bool> {
        if std::mem::take(&mut self.down) {
            std::thread::sleep(Duration::from_millis(u64::from(POLL_MS)));
            return Ok(false);
        }
        match self.sock.poll(Duration::from_millis(u64::from(POLL_MS))) {
            Ok(ready) => Ok(ready),
            Err(Errno::EINTR) => Ok(true),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the capture is told to end (stop flag or deadline).
    fn ending(&self) -> bool {
        self.stop.is_stopped() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// What one read of the socket gave.
enum Got {
    /// A packet, behind the header room of the buffer.
    Packet(Rx),
    /// No packet for [`POLL_MS`]: the capture's clock then.
    Idle(Timestamp),
    /// The capture is told to end and what was queued is read.
    End,
}

impl LiveCapture {
    /// Read the next packet, waiting for one; with `idle`, a wait of
    /// [`POLL_MS`] without one returns [`Got::Idle`] instead (once a
    /// packet was read: the capture's clock starts with it).
    fn read(&mut self, idle: bool) -> Result<Got, CaptureError> {
        loop {
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
                        return Ok(Got::Packet(rx));
                    }
                }
                None if ending => {
                    self.read_stats();
                    return Ok(Got::End);
                }
                None => {
                    let ready = self.wait()?;
                    if let Some(now) = self.idle_clock().filter(|_| idle && !ready) {
                        return Ok(Got::Idle(now));
                    }
                }
            }
        }
    }

    /// The capture's clock when no packet is queued: the last packet's
    /// kernel timestamp plus the time since it was read (a monotonic
    /// clock, so a wall-clock step does not move it), less [`IDLE_MARGIN`].
    /// The kernel stamps a packet as it takes it, before it is queued, and
    /// a packet waits in the queue before it is read, so a packet still to
    /// come is never stamped earlier than this. `None` before the first
    /// packet.
    fn idle_clock(&self) -> Option<Timestamp> {
        let (ts, read_at) = self.last_read?;
        let since = i64::try_from(read_at.elapsed().as_nanos()).unwrap_or(i64::MAX);
        let margin = i64::try_from(IDLE_MARGIN.as_nanos()).unwrap_or(0);
        Some(Timestamp::from_nanos(
            ts.nanos.saturating_add(since).saturating_sub(margin),
        ))
    }

    /// The frame of packet `rx` (read into `buf`), with its cooked header.
    fn frame(&mut self, rx: Rx) -> Frame<'_> {
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
        let ts = Timestamp::from_nanos(rx.ts_ns);
        let caplen = rx.len.min(MAX_PACKET);
        if caplen < rx.len {
            self.notes.cut_by_snaplen += 1;
        }
        if self.last_ts.is_some_and(|t| ts < t) {
            self.notes.ts_backwards += 1;
        }
        self.last_ts = Some(ts);
        self.frames += 1;
        self.bytes += (SLL2_LEN + caplen) as u64;
        self.counters.frames.store(self.frames, Ordering::Relaxed);
        self.last_read = Some((ts, Instant::now()));
        Frame {
            number: self.frames,
            ts,
            link_type: LinkType::LINUX_SLL2,
            data: &self.buf[..SLL2_LEN + caplen],
            orig_len: u32::try_from(SLL2_LEN + rx.len).unwrap_or(u32::MAX),
        }
    }
}

impl FrameSource for LiveCapture {
    /// The next packet, waiting for one; `None` once the capture is told
    /// to end and what was queued is read.
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        match self.read(false)? {
            Got::Packet(rx) => Ok(Some(self.frame(rx))),
            Got::Idle(_) | Got::End => Ok(None),
        }
    }

    /// The next packet, or, when none came for [`POLL_MS`], the capture's
    /// clock ([`Next::Idle`]): the pipeline then hands on the connections
    /// that are over by the wall clock however quiet the link.
    fn next_or_idle(&mut self) -> Result<Option<Next<'_>>, CaptureError> {
        Ok(match self.read(true)? {
            Got::Packet(rx) => Some(Next::Frame(self.frame(rx))),
            Got::Idle(now) => Some(Next::Idle(now)),
            Got::End => None,
        })
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
