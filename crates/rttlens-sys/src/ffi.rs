//! The only module of the workspace that calls the C library directly: the
//! socket options and the `bind(2)` that neither socket2 0.6 nor nix 0.31
//! wraps, and the mapping of a capture file (memmap2's `Mmap::map`,
//! `MADV_DONTNEED`, the cache prefetch of the next record). Each socket function is one system call on a
//! caller-owned descriptor with stack buffers whose sizes are passed
//! exactly; each `unsafe` block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::AsRawFd;

/// Turn a `0`/`-1` return into a `Result`, reading `errno` on failure.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Enables TCP Fast Open on a listener with a pending-request queue of
/// `qlen` (`TCP_FASTOPEN`, RFC 7413 §4.1; kernel `do_tcp_setsockopt` →
/// `fastopen_queue_tune`). The server side also needs bit 0x2 of the
/// `net.ipv4.tcp_fastopen` sysctl in the socket's namespace. Neither
/// socket2 0.6 nor nix 0.31 wraps it (nix only has the client-side
/// `TCP_FASTOPEN_CONNECT`, `nix::sys::socket::sockopt::TcpFastOpenConnect`).
///
/// # Errors
/// `InvalidInput` when `qlen` exceeds `i32::MAX`; otherwise the `errno` of
/// `setsockopt(2)` (`EBADF`, `ENOTSOCK`, `EOPNOTSUPP` on a non-TCP socket).
pub fn set_tcp_fastopen(sock: &impl AsRawFd, qlen: u32) -> io::Result<()> {
    let val: libc::c_int =
        libc::c_int::try_from(qlen).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `sock` owns a valid open file descriptor for the duration of
    // the call; `val` lives on the stack across it and its size is passed
    // exactly, so the kernel reads `sizeof(int)` initialised bytes.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_FASTOPEN,
            std::ptr::addr_of!(val).cast::<libc::c_void>(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    check(rc)
}

/// `getsockopt(fd, IPPROTO_TCP, TCP_INFO, buf, &len)` into `buf` (zeroed
/// first); returns how many bytes the kernel wrote (`min(buf.len(),
/// sizeof(struct tcp_info))` in kernel `do_tcp_getsockopt`).
pub(crate) fn getsockopt_tcp_info(sock: &impl AsRawFd, buf: &mut [u8]) -> io::Result<usize> {
    buf.fill(0);
    let mut len = libc::socklen_t::try_from(buf.len())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `sock` owns a valid open descriptor for the call. `buf` is a
    // live, exclusively borrowed byte buffer of `len` bytes and the kernel
    // writes at most `len` bytes into it (`copy_to_user(optval, &info,
    // min(len, sizeof(info)))`); any byte pattern is a valid `u8`. `len` is
    // a live stack variable the kernel overwrites with the length written.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast::<libc::c_void>(),
            &mut len,
        )
    };
    check(rc)?;
    Ok((len as usize).min(buf.len()))
}

/// Binds an `AF_PACKET` socket to interface `ifindex` and link-layer
/// `protocol` (an `ETH_P_*` value in host byte order, e.g.
/// `libc::ETH_P_ALL`): afterwards it receives only that interface's
/// packets (packet(7); kernel `packet_bind` → `packet_do_bind`). socket2
/// 0.6 and nix 0.31 have no safe constructor for a `sockaddr_ll`.
///
/// # Errors
/// The `errno` of `bind(2)`: `ENODEV` for an unknown interface, `EINVAL`
/// when `sock` is not an `AF_PACKET` socket.
pub fn bind_packet(sock: &impl AsRawFd, ifindex: u32, protocol: u16) -> io::Result<()> {
    let ifindex =
        libc::c_int::try_from(ifindex).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let addr = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as libc::c_ushort,
        sll_protocol: protocol.to_be(),
        sll_ifindex: ifindex,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    // SAFETY: `sock` owns a valid open descriptor for the call. `addr` is a
    // fully initialised `sockaddr_ll` on the stack that outlives the call,
    // and its exact size is passed, so the kernel reads only initialised
    // bytes of it (`packet_bind` checks `addr_len >= sizeof(sockaddr_ll)`).
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            std::ptr::addr_of!(addr).cast::<libc::sockaddr>(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    check(rc)
}

/// Counters of an `AF_PACKET` socket since the previous call (reading
/// resets them): `struct tpacket_stats` of `include/uapi/linux/if_packet.h`,
/// filled by kernel `packet_getsockopt` for `PACKET_STATISTICS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PacketStats {
    /// `tp_packets`: packets the socket received (drops included).
    pub packets: u32,
    /// `tp_drops`: packets dropped because the socket's receive buffer was
    /// full (or a filter/allocation failed).
    pub drops: u32,
}

/// Read and reset the counters of an `AF_PACKET` socket
/// (`getsockopt(SOL_PACKET, PACKET_STATISTICS)`, packet(7)).
///
/// # Errors
/// The `errno` of `getsockopt(2)`: `ENOPROTOOPT` when `sock` is not an
/// `AF_PACKET` socket.
pub fn packet_statistics(sock: &impl AsRawFd) -> io::Result<PacketStats> {
    let mut stats = libc::tpacket_stats {
        tp_packets: 0,
        tp_drops: 0,
    };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: `sock` owns a valid open descriptor for the call. `stats` is
    // an initialised `tpacket_stats` (two `c_uint`, any bit pattern valid)
    // on the stack and `len` is exactly its size, so the kernel writes at
    // most that many bytes into it (`packet_getsockopt` clamps to `len`).
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            std::ptr::addr_of_mut!(stats).cast::<libc::c_void>(),
            &mut len,
        )
    };
    check(rc)?;
    Ok(PacketStats {
        packets: stats.tp_packets,
        drops: stats.tp_drops,
    })
}

/// A regular file mapped read-only, for reading a capture in place
/// (`rttlens analyze FILE`): its bytes are those of the file when it was
/// mapped, up to the length it had then.
///
/// **If another process truncates the file while it is mapped**, touching
/// a page past the new end raises `SIGBUS`, and the process ends (killed by
/// signal 7) with the report unwritten. No check can rule this out (the
/// file can shrink between any check and the next access), and catching
/// `SIGBUS` would mean a process-wide signal handler that jumps out of
/// safe code. rttlens does what ripgrep does: it maps only regular files
/// it opened itself, and documents the risk; `RTTLENS_NO_MMAP=1` reads
/// through `read(2)` instead (a file `tcpdump -W` may reopen and truncate,
/// one on a network file system other hosts write). A file modified in
/// place shows its new bytes, which the capture reader (safe Rust,
/// bounds-checked against the mapping's fixed length) takes for a broken
/// capture at worst; bytes appended after the mapping are not read.
#[derive(Debug)]
pub struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps `file` (opened for reading) when it is a regular file of at
    /// least one byte; `Ok(None)` for anything else (a FIFO, a character
    /// device, a directory, an empty file), which the caller reads as a
    /// stream. The kernel is told the mapping will be read in order
    /// (`MADV_SEQUENTIAL`: read ahead, and pages behind are reclaimed
    /// first).
    ///
    /// # Errors
    /// Those of `fstat(2)` and `mmap(2)` (`ENOMEM`, `ENODEV` for a file
    /// system that cannot map).
    pub fn map(file: &std::fs::File) -> io::Result<Option<MappedFile>> {
        let meta = file.metadata()?;
        if !meta.is_file() || meta.len() == 0 {
            return Ok(None);
        }
        // SAFETY: `Mmap::map` hands out the file's pages as a `&[u8]`
        // (PROT_READ, MAP_SHARED; `len` from `fstat` above, the descriptor
        // may be closed afterwards). It is unsafe because Rust takes the
        // bytes behind a `&[u8]` never to change, and no one can promise
        // that of a file: any process may write or truncate it while it is
        // mapped. We only ever read through the mapping, and accept the
        // rest as documented on `MappedFile`: bytes changed in place are
        // read as whatever they now are by safe, bounds-checked code
        // (the slice's length is the mapping's, which never changes); a
        // truncation turns an access past the new end into SIGBUS, which
        // ends the process rather than letting it read invalid memory.
        // MAP_PRIVATE would change neither (a private mapping shares the
        // file's pages until it is written, and it never is).
        let map = unsafe { memmap2::Mmap::map(file)? };
        // only advice: reading works the same without it
        let _ = map.advise(memmap2::Advice::Sequential);
        Ok(Some(MappedFile { map }))
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Asks the CPU to bring the two cache lines at `offset` into its
    /// cache (x86-64 `prefetcht0`; nothing elsewhere, or past the end). A
    /// mapped capture is read where it lies, so each record header would
    /// otherwise be a cache miss that the stream's copy pays in bulk.
    #[inline]
    pub fn prefetch(&self, offset: usize) {
        #[cfg(target_arch = "x86_64")]
        for at in [offset, offset.saturating_add(64)] {
            if let Some(p) = self.map.get(at) {
                // SAFETY: `_mm_prefetch` is unsafe only because it is an
                // intrinsic of a target feature (SSE, on every x86-64);
                // `prefetcht0` is a hint that reads nothing
                // architecturally and never faults, even on a page past a
                // truncated file's end. `p` points into the mapping.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        std::ptr::from_ref(p).cast::<i8>(),
                    );
                }
            }
        }
    }

    /// Gives the pages wholly before `offset` back to the system
    /// (`MADV_DONTNEED`): the process's resident memory stays that of the
    /// part being read, not of the file. Reading them again is correct,
    /// only slower (they come back from the page cache, or the disk).
    pub fn release_before(&self, offset: usize) {
        // madvise(2) rounds the length up to whole pages: the page holding
        // `offset` may go too, and is read back when it is next touched
        let len = offset.min(self.map.len());
        if len == 0 {
            return;
        }
        // SAFETY: MADV_DONTNEED is unsafe in general because on a private
        // or anonymous mapping it throws the pages' contents away (the
        // next read sees zeros or the file's bytes, not what was written
        // there). This mapping is a shared, read-only mapping of a file
        // that is never written through it: dropping its pages only drops
        // the process's page-table entries, and the next access maps the
        // file's page again, with the same bytes (madvise(2): "shared
        // mappings ... the pages will be repopulated from the underlying
        // file"). `0..len` lies inside the mapping (`len` ≤ its length)
        // and starts at its page-aligned first byte; no `&mut` to it
        // exists, and a thread reading a frame there meanwhile faults the
        // same bytes back in.
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, 0, len)
        };
    }
}
