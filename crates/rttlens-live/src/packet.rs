//! The one `AF_PACKET` socket of rttlens, read by the live capture
//! ([`crate::LiveCapture`], `analyze -i`, `serve --interface`) and by the
//! probe's self-capture ([`crate::selfcap`]):
//!
//! - `AF_PACKET`, `SOCK_DGRAM` (packet(7)): the kernel removes the link
//!   header and says in `sockaddr_ll` which protocol the packet carries, on
//!   which interface, of which hardware type and in which direction;
//! - opened with protocol 0, so nothing is queued until
//!   [`bind`](PacketSocket::bind) names an interface and `ETH_P_ALL`
//!   ([`rttlens_sys::bind_packet`]). Opening with `ETH_P_ALL` and then
//!   binding would hook every interface first and unhook it on the bind,
//!   and the kernel's `synchronize_net()` in that unhook costs ~10 ms
//!   (`packet_do_bind`);
//! - kernel receive timestamps in nanoseconds (`SO_TIMESTAMPNS`,
//!   socket(7): the time the packet reached the packet tap, for outgoing
//!   packets in `dev_queue_xmit_nit`);
//! - a receive buffer of the caller's size (`SO_RCVBUFFORCE` as root, else
//!   as much of it as `net.core.rmem_max` allows); when it is full the
//!   kernel drops packets and counts them
//!   ([`statistics`](PacketSocket::statistics),
//!   [`rttlens_sys::packet_statistics`]);
//! - read without blocking (`MSG_DONTWAIT`), with `MSG_TRUNC` so a packet
//!   longer than the buffer still says its length; waited for with
//!   `poll(2)`.
//!
//! On a loopback interface the kernel hands every packet to the tap twice,
//! once leaving ([`PACKET_OUTGOING`]) and once arriving; both readers drop
//! the outgoing copy, as libpcap does.
//!
//! Needs `CAP_NET_RAW` (root, or `setcap cap_net_raw+ep` on the binary):
//! without it, [`OpenError::NotPermitted`].

use std::io::{self, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{
    recvmsg, setsockopt, socket, sockopt, AddressFamily, ControlMessageOwned, LinkAddr, MsgFlags,
    SockFlag, SockType,
};
use rttlens_sys::PacketStats;

/// `ARPHRD_LOOPBACK` (`include/uapi/linux/if_arp.h`).
pub(crate) const ARPHRD_LOOPBACK: u16 = 772;
/// `PACKET_OUTGOING` (`include/uapi/linux/if_packet.h`).
pub(crate) const PACKET_OUTGOING: u8 = 4;

/// Why the socket could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// `socket(2)` said `EPERM` or `EACCES`: no `CAP_NET_RAW`.
    NotPermitted(io::Error),
    /// Any other error of `socket(2)` or a socket option.
    Io(io::Error),
}

/// An `AF_PACKET` datagram socket with kernel timestamps, not yet bound.
#[derive(Debug)]
pub(crate) struct PacketSocket {
    fd: OwnedFd,
}

/// What `recvmsg` said of one packet read into the caller's buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rx {
    /// Kernel receive timestamp (`CLOCK_REALTIME`), ns since the Unix
    /// epoch; the wall clock when the kernel gave none.
    pub(crate) ts_ns: i64,
    /// Length of the packet on the wire from the network header on: may
    /// exceed the buffer (`MSG_TRUNC`).
    pub(crate) len: usize,
    /// The packet's `sockaddr_ll`: protocol, interface, hardware type,
    /// direction, link address.
    pub(crate) addr: Option<LinkAddr>,
}

impl Rx {
    /// The interface it was seen on (`sll_ifindex`; 0 when unknown).
    pub(crate) fn ifindex(&self) -> u32 {
        self.addr
            .map_or(0, |a| u32::try_from(a.ifindex()).unwrap_or(0))
    }

    /// `sll_pkttype` (`PACKET_HOST`, [`PACKET_OUTGOING`] …; 0 when
    /// unknown).
    pub(crate) fn pkttype(&self) -> u8 {
        self.addr.map_or(0, |a| a.pkttype())
    }
}

impl PacketSocket {
    /// Open the socket (non-blocking, close-on-exec, protocol 0: nothing
    /// queued yet) with nanosecond timestamps and a receive buffer of
    /// `rcvbuf` bytes.
    ///
    /// # Errors
    /// [`OpenError::NotPermitted`] without `CAP_NET_RAW`;
    /// [`OpenError::Io`] when a socket option fails.
    pub(crate) fn open(rcvbuf: usize) -> Result<PacketSocket, OpenError> {
        let fd = socket(
            AddressFamily::Packet,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
            None,
        )
        .map_err(|e| match e {
            Errno::EPERM | Errno::EACCES => OpenError::NotPermitted(e.into()),
            e => OpenError::Io(e.into()),
        })?;
        let io = |e: Errno| OpenError::Io(e.into());
        setsockopt(&fd, sockopt::ReceiveTimestampns, &true).map_err(io)?;
        if setsockopt(&fd, sockopt::RcvBufForce, &rcvbuf).is_err() {
            setsockopt(&fd, sockopt::RcvBuf, &rcvbuf).map_err(io)?;
        }
        Ok(PacketSocket { fd })
    }

    /// Receive every protocol (`ETH_P_ALL`) of interface `ifindex`, or of
    /// every interface for 0; packets are queued from now on.
    ///
    /// # Errors
    /// The `errno` of `bind(2)`: `ENODEV` for an unknown interface.
    pub(crate) fn bind(&self, ifindex: u32) -> io::Result<()> {
        rttlens_sys::bind_packet(&self.fd, ifindex, libc::ETH_P_ALL as u16)
    }

    /// The kernel's counters since the previous reading (reading resets
    /// them).
    ///
    /// # Errors
    /// The `errno` of `getsockopt(2)`.
    pub(crate) fn statistics(&self) -> io::Result<PacketStats> {
        rttlens_sys::packet_statistics(&self.fd)
    }

    /// Read one packet into `buf`; `None` when nothing is queued (or a
    /// signal came).
    ///
    /// # Errors
    /// Any other `errno` of `recvmsg(2)` (`ENETDOWN` when the interface is
    /// down).
    pub(crate) fn recv(&self, buf: &mut [u8]) -> nix::Result<Option<Rx>> {
        let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
        let mut iov = [IoSliceMut::new(buf)];
        let msg = match recvmsg::<LinkAddr>(
            self.fd.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_TRUNC,
        ) {
            Ok(m) => m,
            Err(Errno::EAGAIN | Errno::EINTR) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut ts_ns = None;
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::ScmTimestampns(t) = c {
                    let ns = i128::from(t.tv_sec()) * 1_000_000_000 + i128::from(t.tv_nsec());
                    ts_ns = i64::try_from(ns).ok();
                }
            }
        }
        let ts_ns = ts_ns.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        });
        Ok(Some(Rx {
            ts_ns,
            len: msg.bytes,
            addr: msg.address,
        }))
    }

    /// Wait up to `timeout` for a packet: whether one is queued.
    ///
    /// # Errors
    /// The `errno` of `poll(2)` (`EINTR` included: the caller decides).
    pub(crate) fn poll(&self, timeout: Duration) -> nix::Result<bool> {
        let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::ZERO);
        poll(&mut fds, timeout).map(|n| n > 0)
    }
}
