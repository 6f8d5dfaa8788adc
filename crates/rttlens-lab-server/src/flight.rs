//! A TCP stream wrapper that controls how the server's first TLS flight
//! reaches `write(2)`, and records the sizes of the writes made during the
//! handshake.
//!
//! rustls 0.23 queues the whole server flight (TLS 1.3: ServerHello, then
//! EncryptedExtensions..Finished coalesced in one encrypted record; TLS 1.2:
//! ServerHello..ServerHelloDone) before tokio-rustls writes it with one
//! vectored write, i.e. one `writev(2)`: [`HandshakeWrites::One`]. With
//! [`HandshakeWrites::Two`] the first write is cut so that its last
//! [`SECOND_WRITE_BYTES`] go out in a second `write(2)`: with Nagle on, that
//! small second write waits for the ACK of the first
//! (`tcp_nagle_check` in `net/ipv4/tcp_output.c`): one more round trip.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::{Error, Result};

/// Bytes the second write carries with [`HandshakeWrites::Two`]: the size of
/// a TLS 1.3 CertificateVerify with this crate's ECDSA P-256 key (≈ 80 B:
/// 4 header + 2 scheme + 2 length + ≈ 72 signature), Finished with a
/// SHA-256 suite (36 B) and the AEAD record overhead (1 inner type + 16 tag),
/// RFC 8446 §4.4.3, §4.4.4, §5.2. Clamped to half of the first write.
pub const SECOND_WRITE_BYTES: usize = 133;

/// How the server's first TLS handshake flight is handed to the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HandshakeWrites {
    /// The whole flight in one `writev(2)` (what rustls + tokio-rustls do).
    #[default]
    One,
    /// The flight in two `write(2)` calls, the second carrying its last
    /// [`SECOND_WRITE_BYTES`] (≈ CertificateVerify + Finished in TLS 1.3).
    /// With `nodelay: false` the second write waits for the ACK of the
    /// first (Nagle, RFC 896; `tcp_nagle_check` in `net/ipv4/tcp_output.c`):
    /// the seed case of a TLS 1.3 handshake taking 2 RTT.
    Two,
}

impl std::str::FromStr for HandshakeWrites {
    type Err = Error;

    /// `one` / `1` or `two` / `2`.
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "one" | "1" => Ok(HandshakeWrites::One),
            "two" | "2" => Ok(HandshakeWrites::Two),
            _ => Err(Error::Config(format!(
                "handshake_writes: '{s}' is not one or two"
            ))),
        }
    }
}

struct Pending {
    buf: Vec<u8>,
    cut: usize,
    written: usize,
}

/// The wrapper: transparent except for the first write when splitting.
pub(crate) struct FlightStream<S> {
    inner: S,
    split_armed: bool,
    pending: Option<Pending>,
    recording: bool,
    writes: Vec<usize>,
}

impl<S> FlightStream<S> {
    pub(crate) fn new(inner: S, mode: HandshakeWrites) -> Self {
        FlightStream {
            inner,
            split_armed: mode == HandshakeWrites::Two,
            pending: None,
            recording: true,
            writes: Vec::new(),
        }
    }

    /// Stops recording and moves the sizes of the writes made so far into
    /// `sink`.
    pub(crate) fn finish_handshake(&mut self, sink: &Arc<Mutex<Vec<Vec<usize>>>>) {
        self.recording = false;
        self.split_armed = false;
        let writes = std::mem::take(&mut self.writes);
        if let Ok(mut s) = sink.lock() {
            s.push(writes);
        }
    }

    fn record(&mut self, n: usize) {
        if self.recording && n > 0 {
            self.writes.push(n);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for FlightStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> FlightStream<S> {
    /// Writes the pending split buffer in (at least) two `write` calls;
    /// returns the number of bytes the caller originally handed over.
    fn drive_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        // Bounded: each iteration writes ≥ 1 byte or returns.
        while let Some(p) = self.pending.as_mut() {
            if p.written == p.buf.len() {
                let n = p.buf.len();
                self.pending = None;
                return Poll::Ready(Ok(n));
            }
            let end = if p.written < p.cut {
                p.cut
            } else {
                p.buf.len()
            };
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &p.buf[p.written..end]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            if let Some(p) = self.pending.as_mut() {
                p.written += n;
            }
            self.record(n);
        }
        Poll::Ready(Ok(0))
    }

    fn arm(&mut self, bufs: &[IoSlice<'_>]) {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if !self.split_armed || self.pending.is_some() || total < 2 {
            return;
        }
        self.split_armed = false;
        let mut buf = Vec::with_capacity(total);
        for b in bufs {
            buf.extend_from_slice(b);
        }
        let tail = SECOND_WRITE_BYTES.min(total / 2);
        self.pending = Some(Pending {
            buf,
            cut: total - tail,
            written: 0,
        });
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for FlightStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.arm(&[IoSlice::new(buf)]);
        if self.pending.is_some() {
            // The caller re-submits the same bytes after `Pending`.
            return self.drive_pending(cx);
        }
        let n = ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
        self.record(n);
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.arm(bufs);
        if self.pending.is_some() {
            return self.drive_pending(cx);
        }
        let n = ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, bufs))?;
        self.record(n);
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // A pending split is finished by the caller re-submitting its bytes
        // (finishing it here would make that re-submission a duplicate).
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
