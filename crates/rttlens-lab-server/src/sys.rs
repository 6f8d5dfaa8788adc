//! The one place that calls `setsockopt(2)` directly: `TCP_FASTOPEN` on a
//! listening socket. Neither socket2 0.6 nor nix 0.31 wraps it (nix only has
//! the client-side `TCP_FASTOPEN_CONNECT`).
#![allow(unsafe_code)]

use std::os::fd::AsRawFd;

/// Enables TCP Fast Open on a listener with a pending-request queue of
/// `qlen` (`TCP_FASTOPEN`, RFC 7413 §4.1; kernel `do_tcp_setsockopt` →
/// `fastopen_queue_tune`). The server side also needs bit 0x2 of the
/// `net.ipv4.tcp_fastopen` sysctl in the socket's namespace.
pub(crate) fn set_tcp_fastopen(sock: &impl AsRawFd, qlen: u32) -> std::io::Result<()> {
    let val: libc::c_int = libc::c_int::try_from(qlen)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
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
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
