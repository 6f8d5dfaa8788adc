//! The TCP connection: a socket bound to an ephemeral port first (so the
//! self-capture can be filtered to it before the SYN leaves), optionally
//! with `TCP_FASTOPEN_CONNECT` (Linux ≥ 4.11: `connect(2)` returns at once
//! when a cookie is cached, and the SYN carries the first write, RFC 7413),
//! and `TCP_NODELAY` as curl sets it.

use std::net::SocketAddr;

use tokio::net::{TcpSocket, TcpStream};

use crate::error::{ProbeError, ProbePhase};

/// A socket bound to an ephemeral local port, not yet connected.
#[derive(Debug)]
pub struct BoundSocket {
    sock: TcpSocket,
    /// The local port the kernel chose.
    pub local_port: u16,
}

/// Create and bind the socket for `remote`.
///
/// # Errors
/// A [`ProbePhase::Connect`] error when the socket cannot be created, the TFO
/// option set (a kernel without `TCP_FASTOPEN_CONNECT`), or bound.
pub fn bind(remote: SocketAddr, tfo: bool) -> Result<BoundSocket, ProbeError> {
    let io = |what: &str, e: std::io::Error| ProbeError::io(ProbePhase::Connect, what, &e);
    let (sock, any) = if remote.is_ipv4() {
        (TcpSocket::new_v4(), SocketAddr::from(([0u8; 4], 0)))
    } else {
        (TcpSocket::new_v6(), SocketAddr::from(([0u16; 8], 0)))
    };
    let sock = sock.map_err(|e| io("creating the socket", e))?;
    if tfo {
        nix::sys::socket::setsockopt(&sock, nix::sys::socket::sockopt::TcpFastOpenConnect, &true)
            .map_err(|e| io("setting TCP_FASTOPEN_CONNECT (--tfo)", e.into()))?;
    }
    sock.bind(any).map_err(|e| io("binding a local port", e))?;
    let local_port = sock
        .local_addr()
        .map_err(|e| io("reading the local port", e))?
        .port();
    Ok(BoundSocket { sock, local_port })
}

impl BoundSocket {
    /// Connect to `remote` and set `TCP_NODELAY`.
    ///
    /// # Errors
    /// A [`ProbePhase::Connect`] error (refused, unreachable, …) naming `remote`.
    pub async fn connect(self, remote: SocketAddr) -> Result<TcpStream, ProbeError> {
        let s = self.sock.connect(remote).await.map_err(|e| {
            ProbeError::io(ProbePhase::Connect, &format!("connecting to {remote}"), &e)
        })?;
        s.set_nodelay(true)
            .map_err(|e| ProbeError::io(ProbePhase::Connect, "setting TCP_NODELAY", &e))?;
        Ok(s)
    }
}
