//! Self-capture: the probe records its own packets (docs/design.md §6) so
//! the same engine that reads capture files explains them.
//!
//! The crate's one `AF_PACKET` socket (module `packet`: each packet
//! arrives as a bare IPv4/IPv6 packet, the link header removed, with its
//! kernel timestamp in nanoseconds), bound to the interface of the route to
//! the remote host when it can be told, else on every interface.
//! A background thread reads it and keeps the TCP packets between us and
//! `remote` (address and port, either direction; optionally one local
//! port), so the socket is open and queueing before
//! [`SelfCapture::start`] returns and the SYN is never missed. A QUIC
//! probe asks for UDP instead ([`SelfCapture::start_protocol`] with
//! [`Protocol::Udp`]): the same filter on UDP datagrams, so its first
//! Initial is never missed either.
//!
//! On a loopback interface the kernel hands every packet to the tap twice,
//! once leaving (`PACKET_OUTGOING`) and once arriving (`PACKET_HOST`); the
//! outgoing copy is dropped, as libpcap does.
//!
//! The result is written as pcapng (`LINKTYPE_RAW`, ns timestamps), with
//! the TLS key log embedded when there is one, so Wireshark decrypts it.
//!
//! Needs `CAP_NET_RAW` (root, or `setcap cap_net_raw+ep` on the binary).

use std::collections::HashSet;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::ifaddrs::getifaddrs;
use nix::net::if_::{if_nametoindex, InterfaceFlags};
use rttlens_core::capture::LinkType;
use rttlens_core::wire::{decode, Decoded};

use crate::packet::{OpenError, PacketSocket, Rx, PACKET_OUTGOING};
use crate::pcapng::{PcapngWriter, SECRETS_TLS_KEY_LOG};

/// Why a capture could not start or finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SelfCaptureError {
    /// Opening an `AF_PACKET` socket needs `CAP_NET_RAW` (`EPERM`).
    #[error("capturing needs CAP_NET_RAW (run as root or `setcap cap_net_raw+ep`): {0}")]
    NotPermitted(#[source] std::io::Error),
    /// Any other system error (socket options, `poll`, `recvmsg`, the
    /// capture thread).
    #[error("capture: {0}")]
    Io(#[from] std::io::Error),
}

/// Memory bounds of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureLimits {
    /// Packets are kept whole until their stored bytes reach this total
    /// (bytes; default 64 MiB); after that only their IP and TCP headers
    /// are kept (counted in [`Captured::truncated`]).
    pub max_stored_bytes: u64,
}

impl Default for CaptureLimits {
    fn default() -> CaptureLimits {
        CaptureLimits {
            max_stored_bytes: 64 << 20,
        }
    }
}

/// One captured packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedPacket {
    /// Kernel receive timestamp (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`), in
    /// nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Length of the IP packet on the wire (bytes).
    pub orig_len: u32,
    /// The IP packet (IPv4 or IPv6 header first), its first `data.len()`
    /// of `orig_len` bytes.
    pub data: Vec<u8>,
}

/// What a [`SelfCapture`] recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The matching packets, in timestamp order.
    pub packets: Vec<CapturedPacket>,
    /// The interface captured on (`lo`, `eth0` …), or `any` when the route's
    /// interface could not be told.
    pub interface: String,
    /// Packets stored shorter than they were (`data.len() < orig_len`):
    /// headers only after [`CaptureLimits::max_stored_bytes`], or longer
    /// than the receive buffer.
    pub truncated: u64,
    /// Packets the kernel dropped because the socket's receive buffer was
    /// full (`tp_drops` of `PACKET_STATISTICS`, packet(7)), counting every
    /// packet the socket saw, not only matching ones; `None` when the
    /// kernel would not say.
    pub kernel_drops: Option<u64>,
}

/// A running capture of one connection's packets; [`stop`](Self::stop) it
/// to get them. Dropping it without `stop` ends the thread within 50 ms and
/// discards the packets.
#[derive(Debug)]
pub struct SelfCapture {
    thread: Option<JoinHandle<io::Result<Captured>>>,
    stop: Arc<AtomicBool>,
}

/// Poll timeout while capturing: bounds how late the thread sees `stop`.
const POLL: Duration = Duration::from_millis(50);
/// After `stop`: how long to keep reading packets still queued (at most),
/// and the quiet time that ends it sooner.
const DRAIN_MAX: Duration = Duration::from_millis(100);
const DRAIN_QUIET: Duration = Duration::from_millis(20);
/// Packets read per wake-up before checking the stop flag again.
const BATCH: usize = 1024;
/// Receive buffer: a 64 KiB GSO packet (loopback, TSO) and more.
const RECV_BUF: usize = 256 << 10;
/// Socket receive buffer asked for (`SO_RCVBUFFORCE` as root): room for a
/// burst while the thread sleeps.
const SO_RCVBUF: usize = 8 << 20;

/// The transport a capture keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// TCP segments (the TCP probe; what [`SelfCapture::start`] keeps).
    #[default]
    Tcp,
    /// UDP datagrams (a QUIC probe, `rttlens probe --http3`).
    Udp,
}

/// Which packets match: TCP (or UDP) to/from `remote`, optionally one
/// local port.
#[derive(Debug, Clone, Copy)]
struct Filter {
    remote: SocketAddr,
    local_port: Option<u16>,
    protocol: Protocol,
}

impl Filter {
    fn matches(&self, src: SocketAddr, dst: SocketAddr) -> bool {
        let local_ok = |p: u16| self.local_port.is_none_or(|l| l == p);
        (unmap(src) == self.remote && local_ok(dst.port()))
            || (unmap(dst) == self.remote && local_ok(src.port()))
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as the IPv4 address the
/// wire carries.
fn unmap(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => a,
        },
        IpAddr::V4(_) => a,
    }
}

/// One network interface of this namespace.
#[derive(Debug, Clone)]
struct Iface {
    name: String,
    index: u32,
    addrs: Vec<IpAddr>,
    loopback: bool,
}

/// The interfaces of this namespace (`getifaddrs(3)`, `if_nametoindex(3)`).
fn interfaces() -> Vec<Iface> {
    let mut out: Vec<Iface> = Vec::new();
    let Ok(addrs) = getifaddrs() else {
        return out;
    };
    for a in addrs {
        let ip = a.address.as_ref().and_then(|s| {
            s.as_sockaddr_in()
                .map(|v4| IpAddr::V4(v4.ip()))
                .or_else(|| s.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip())))
        });
        match out.iter_mut().find(|i| i.name == a.interface_name) {
            Some(i) => i.addrs.extend(ip),
            None => {
                let Ok(index) = if_nametoindex(a.interface_name.as_str()) else {
                    continue;
                };
                out.push(Iface {
                    loopback: a.flags.contains(InterfaceFlags::IFF_LOOPBACK),
                    name: a.interface_name,
                    index,
                    addrs: ip.into_iter().collect(),
                });
            }
        }
    }
    out
}

/// The interface packets to `remote` leave by: the loopback interface for
/// a loopback or local address (the kernel routes those over `lo`), else
/// the one interface holding the source address the kernel picks for
/// `remote` (a connected UDP socket's local address; no packet is sent).
/// `None` when that is not one interface (no route, an address on several
/// interfaces): then capture on all. A policy route out of an interface
/// other than the source address's is not seen this way.
fn route_interface(remote: IpAddr, ifs: &[Iface]) -> Option<&Iface> {
    let local = remote.is_loopback() || ifs.iter().any(|i| i.addrs.contains(&remote));
    if local {
        return ifs.iter().find(|i| i.loopback);
    }
    let any: SocketAddr = match remote {
        IpAddr::V4(_) => "0.0.0.0:0".parse().ok()?,
        IpAddr::V6(_) => "[::]:0".parse().ok()?,
    };
    let udp = UdpSocket::bind(any).ok()?;
    udp.connect(SocketAddr::new(remote, 9)).ok()?;
    let src = udp.local_addr().ok()?.ip();
    let mut holders = ifs.iter().filter(|i| i.addrs.contains(&src));
    match (holders.next(), holders.next()) {
        (Some(i), None) => Some(i),
        _ => None,
    }
}

impl SelfCapture {
    /// Start capturing TCP packets to/from `remote` (and `local_port` if
    /// `Some`), with the default [`CaptureLimits`]. The socket is open and
    /// queueing packets when this returns. Capture happens in the network
    /// namespace of the calling thread.
    ///
    /// # Errors
    /// [`SelfCaptureError::NotPermitted`] without `CAP_NET_RAW`;
    /// [`SelfCaptureError::Io`] when a socket option or the thread fails.
    pub fn start(
        remote: SocketAddr,
        local_port: Option<u16>,
    ) -> Result<SelfCapture, SelfCaptureError> {
        SelfCapture::start_with(remote, local_port, CaptureLimits::default())
    }

    /// [`start`](Self::start) with explicit memory `limits`.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_with(
        remote: SocketAddr,
        local_port: Option<u16>,
        limits: CaptureLimits,
    ) -> Result<SelfCapture, SelfCaptureError> {
        SelfCapture::start_protocol(remote, local_port, Protocol::Tcp, limits)
    }

    /// [`start_with`](Self::start_with) for the packets of `protocol`:
    /// TCP segments, or UDP datagrams (QUIC) to/from `remote` (and
    /// `local_port` if `Some`). UDP datagrams are kept whole, as their IP
    /// packets, until [`CaptureLimits::max_stored_bytes`], then their IP
    /// and UDP headers only. A datagram coalesced by UDP GRO or sent with
    /// UDP GSO on an interface that does the segmenting in hardware is
    /// seen as the one large packet the kernel handled.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_protocol(
        remote: SocketAddr,
        local_port: Option<u16>,
        protocol: Protocol,
        limits: CaptureLimits,
    ) -> Result<SelfCapture, SelfCaptureError> {
        let remote = unmap(remote);
        // Protocol 0: no packets until `bind` names an interface.
        let sock = PacketSocket::open(SO_RCVBUF).map_err(|e| match e {
            OpenError::NotPermitted(e) => SelfCaptureError::NotPermitted(e),
            OpenError::Io(e) => SelfCaptureError::Io(e),
        })?;
        let ifs = interfaces();
        // Bound to the route's interface when it can be told and bound to;
        // else every interface (the filter still picks the packets).
        let bound = route_interface(remote.ip(), &ifs)
            .and_then(|i| sock.bind(i.index).ok().map(|()| (i.name.clone(), i.index)));
        let (interface, ifindex) = match bound {
            Some((name, index)) => (name, Some(index)),
            None => {
                // ifindex 0: every interface
                sock.bind(0).map_err(SelfCaptureError::Io)?;
                ("any".to_string(), None)
            }
        };
        let loopbacks: HashSet<u32> = ifs.iter().filter(|i| i.loopback).map(|i| i.index).collect();
        let reader = Reader {
            sock,
            filter: Filter {
                remote,
                local_port,
                protocol,
            },
            ifindex,
            loopbacks,
            limits,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("rttlens-selfcap".into())
            .spawn(move || reader.run(&flag, interface))?;
        Ok(SelfCapture {
            thread: Some(thread),
            stop,
        })
    }

    /// Stop and return what was captured, in timestamp order. The thread
    /// sees the request within 50 ms (its poll timeout), then reads the
    /// packets still queued until the socket is quiet for 20 ms, at most
    /// 100 ms: so `stop` returns within about 150 ms.
    ///
    /// # Errors
    /// [`SelfCaptureError::Io`] when reading the socket failed or the capture
    /// thread panicked.
    pub fn stop(mut self) -> Result<Captured, SelfCaptureError> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self
            .thread
            .take()
            .ok_or_else(|| io::Error::other("the capture thread is gone (stop called twice?)"))?;
        match thread.join() {
            Ok(r) => r.map_err(SelfCaptureError::Io),
            Err(_) => Err(io::Error::other("the capture thread panicked").into()),
        }
    }
}

impl Drop for SelfCapture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The capture thread's state.
struct Reader {
    sock: PacketSocket,
    filter: Filter,
    /// The interface bound to (packets from others, queued before the
    /// bind, are ignored).
    ifindex: Option<u32>,
    loopbacks: HashSet<u32>,
    limits: CaptureLimits,
}

impl Reader {
    fn run(self, stop: &AtomicBool, interface: String) -> io::Result<Captured> {
        let mut out = Captured {
            interface,
            ..Captured::default()
        };
        let mut stored = 0u64;
        let mut buf = vec![0u8; RECV_BUF];
        let mut drain_until: Option<Instant> = None;
        loop {
            let draining = match drain_until {
                Some(t) => Some(t),
                None if stop.load(Ordering::Relaxed) => {
                    drain_until = Some(Instant::now() + DRAIN_MAX);
                    drain_until
                }
                None => None,
            };
            if draining.is_some_and(|t| Instant::now() >= t) {
                break;
            }
            let wait = if draining.is_some() {
                DRAIN_QUIET
            } else {
                POLL
            };
            let ready = match self.sock.poll(wait) {
                Ok(ready) => ready,
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            if !ready {
                if draining.is_some() {
                    break; // quiet: nothing more queued
                }
                continue;
            }
            for _ in 0..BATCH {
                match self.sock.recv(&mut buf)? {
                    None => break,
                    Some(rx) => self.keep(&buf, rx, &mut stored, &mut out),
                }
            }
        }
        out.kernel_drops = self.sock.statistics().ok().map(|s| u64::from(s.drops));
        out.packets.sort_by_key(|p| p.ts_ns);
        Ok(out)
    }

    /// Keep the packet `rx` read into `buf` if it matches.
    fn keep(&self, buf: &[u8], rx: Rx, stored: &mut u64, out: &mut Captured) {
        let (len, ifindex, pkttype) = (rx.len, rx.ifindex(), rx.pkttype());
        // a kernel time before 1970 is no time
        let ts_ns = u64::try_from(rx.ts_ns).unwrap_or(0);
        if self.ifindex.is_some_and(|i| i != ifindex) {
            return;
        }
        if pkttype == PACKET_OUTGOING && self.loopbacks.contains(&ifindex) {
            return; // the same packet comes back as PACKET_HOST
        }
        let Some(data) = buf.get(..len.min(buf.len())) else {
            return;
        };
        let wire_len = u32::try_from(len).unwrap_or(u32::MAX);
        let (src, dst, payload_len) = match self.filter.protocol {
            Protocol::Tcp => {
                let Ok(Decoded::Tcp(seg)) = decode(LinkType::RAW, data, wire_len) else {
                    return;
                };
                let src = SocketAddr::new(seg.src, seg.src_port);
                let dst = SocketAddr::new(seg.dst, seg.dst_port);
                (src, dst, seg.payload.len())
            }
            Protocol::Udp => match udp_ends(ip_datagram(data)) {
                Some(ends) => ends,
                None => return,
            },
        };
        if !self.filter.matches(src, dst) {
            return;
        }
        // Without the link padding; the original length is the
        // datagram's unless the receive buffer cut it.
        let whole = len <= buf.len();
        let data = ip_datagram(data);
        let orig_len = if whole { data.len() as u32 } else { wire_len };
        let keep = if *stored + data.len() as u64 <= self.limits.max_stored_bytes {
            data
        } else {
            // Headers only: the payload is the datagram's tail.
            let headers = data.len().saturating_sub(payload_len);
            data.get(..headers).unwrap_or(data)
        };
        if keep.len() < orig_len as usize {
            out.truncated += 1;
        }
        *stored += keep.len() as u64;
        out.packets.push(CapturedPacket {
            ts_ns,
            orig_len,
            data: keep.to_vec(),
        });
    }
}

/// The source, destination and payload length of a UDP datagram in an IP
/// packet (etherparse; IPv4 or IPv6 with its extension headers); `None`
/// for anything else, a fragment after the first, or a datagram cut short.
fn udp_ends(ip: &[u8]) -> Option<(SocketAddr, SocketAddr, usize)> {
    let p = etherparse::SlicedPacket::from_ip(ip).ok()?;
    let (src, dst): (IpAddr, IpAddr) = match p.net? {
        etherparse::NetSlice::Ipv4(v4) => (
            v4.header().source_addr().into(),
            v4.header().destination_addr().into(),
        ),
        etherparse::NetSlice::Ipv6(v6) => (
            v6.header().source_addr().into(),
            v6.header().destination_addr().into(),
        ),
        etherparse::NetSlice::Arp(_) => return None,
    };
    match p.transport? {
        etherparse::TransportSlice::Udp(u) => Some((
            SocketAddr::new(src, u.source_port()),
            SocketAddr::new(dst, u.destination_port()),
            u.payload().len(),
        )),
        _ => None,
    }
}

/// `data` cut to the IP datagram's own length, without link-layer padding
/// (an Ethernet frame is at least 60 bytes, so a short packet arrives with
/// trailing zeros). An IP length of 0 (IPv4 with TSO or BIG TCP) or longer
/// than `data` leaves it as is.
fn ip_datagram(data: &[u8]) -> &[u8] {
    let len = match data.first().map(|b| b >> 4) {
        Some(4) => data
            .get(2..4)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]]))),
        Some(6) => data
            .get(4..6)
            .map(|b| 40 + usize::from(u16::from_be_bytes([b[0], b[1]]))),
        _ => None,
    };
    match len {
        Some(n) if n > 0 && n < data.len() => &data[..n],
        _ => data,
    }
}

impl Captured {
    /// Write as pcapng (one `LINKTYPE_RAW` interface, ns timestamps, see
    /// [`PcapngWriter`]). With `keylog` (NSS key log text, the
    /// `SSLKEYLOGFILE` format), a Decryption Secrets Block (type
    /// 0x0000000A, secrets type 0x544c534b "TLSK", draft-ietf-opsawg-pcapng
    /// §4.7) comes before the packets, so Wireshark/tshark decrypt the TLS
    /// without a separate key file.
    ///
    /// # Errors
    /// Any I/O error from `out`.
    pub fn write_pcapng<W: io::Write>(&self, out: W, keylog: Option<&[u8]>) -> io::Result<()> {
        let mut w = PcapngWriter::new(out)?;
        if let Some(k) = keylog {
            w.write_decryption_secrets(SECRETS_TLS_KEY_LOG, k)?;
        }
        for p in &self.packets {
            w.write_packet_cut(p.ts_ns, &p.data, p.orig_len.max(p.data.len() as u32))?;
        }
        w.into_inner().map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_matches_both_directions_and_the_local_port() {
        let remote: SocketAddr = "10.0.0.2:443".parse().unwrap();
        let me: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let f = Filter {
            remote,
            local_port: None,
            protocol: Protocol::Tcp,
        };
        assert!(f.matches(me, remote) && f.matches(remote, me));
        assert!(!f.matches(me, "10.0.0.2:444".parse().unwrap()));
        assert!(!f.matches(me, "10.0.0.3:443".parse().unwrap()));
        let f = Filter {
            remote,
            local_port: Some(5001),
            protocol: Protocol::Tcp,
        };
        assert!(!f.matches(me, remote) && !f.matches(remote, me));
        assert!(f.matches(remote, "10.0.0.1:5001".parse().unwrap()));
        // An IPv4-mapped remote matches the IPv4 packets.
        let f = Filter {
            remote: unmap("[::ffff:10.0.0.2]:443".parse().unwrap()),
            local_port: None,
            protocol: Protocol::Tcp,
        };
        assert!(f.matches(me, remote));
    }

    #[test]
    fn udp_ends_read_v4_and_v6_datagrams_and_nothing_else() {
        let payload = [0xc0u8; 20];
        let v4 = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64).udp(5000, 443);
        let mut b = Vec::new();
        v4.write(&mut b, &payload).unwrap();
        let (s, d, n) = udp_ends(&b).unwrap();
        assert_eq!(
            (s.to_string(), d.to_string(), n),
            ("10.0.0.1:5000".into(), "10.0.0.2:443".into(), 20)
        );
        let v6 = etherparse::PacketBuilder::ipv6([0xfd; 16], [0xfe; 16], 64).udp(443, 6000);
        let mut b = Vec::new();
        v6.write(&mut b, &payload).unwrap();
        let (s, d, _) = udp_ends(&b).unwrap();
        assert_eq!((s.port(), d.port()), (443, 6000));
        let tcp = etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(5000, 443, 1, 1000);
        let mut b = Vec::new();
        tcp.write(&mut b, &payload).unwrap();
        assert!(udp_ends(&b).is_none());
        assert!(udp_ends(&b[..10]).is_none());
    }

    #[test]
    fn ip_datagram_strips_link_padding() {
        let mut v4 = vec![0x45, 0, 0, 40];
        v4.resize(46, 0);
        assert_eq!(ip_datagram(&v4).len(), 40);
        let mut v6 = vec![0x60, 0, 0, 0, 0, 20];
        v6.resize(64, 0);
        assert_eq!(ip_datagram(&v6).len(), 60);
        // Length 0 (TSO) or beyond the data: unchanged.
        assert_eq!(ip_datagram(&[0x45, 0, 0, 0, 1]).len(), 5);
        assert_eq!(ip_datagram(&[0x45, 0, 0xff, 0xff]).len(), 4);
        assert_eq!(ip_datagram(&[]).len(), 0);
        assert_eq!(ip_datagram(&[0x45]).len(), 1);
    }
}
