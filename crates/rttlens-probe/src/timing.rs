//! Timestamps. Every event is read from one monotonic clock
//! ([`std::time::Instant`], `CLOCK_MONOTONIC`) and reported in ms since the
//! attempt started (before the name lookup), as curl's `-w` `time_*`
//! variables are. [`Tap`] sits between hyper and the (TLS) stream and
//! notes when the request's first byte was written, when the first
//! response byte came out (after decryption), and when the TLS handshake
//! completed (for 0-RTT that is after the request went out).

use rttlens_core::base::cost::round3;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use rttlens_probe_model::Timings;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// What the [`Tap`] saw.
#[derive(Debug, Clone, Copy, Default)]
pub struct Events {
    /// First request byte handed to the stream.
    pub request_written: Option<Instant>,
    /// First response byte read (plaintext: after decryption with TLS).
    pub first_byte: Option<Instant>,
    /// The TLS handshake was first seen complete.
    pub handshake_done: Option<Instant>,
    /// Plaintext bytes read.
    pub bytes_in: u64,
    /// Plaintext bytes written.
    pub bytes_out: u64,
}

/// The stream under hyper: TCP, or TLS over TCP.
#[derive(Debug)]
pub enum Stream {
    /// `http://`.
    Plain(TcpStream),
    /// `https://`.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    /// The TCP socket.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }

    /// The rustls connection, for TLS.
    pub fn tls(&self) -> Option<&rustls::ClientConnection> {
        match self {
            Stream::Plain(_) => None,
            Stream::Tls(s) => Some(s.get_ref().1),
        }
    }

    fn handshaking(&self) -> bool {
        self.tls().is_some_and(|c| c.is_handshaking())
    }
}

macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Stream::Plain($s) => {
                let $s = Pin::new($s);
                $e
            }
            Stream::Tls($s) => {
                let $s = Pin::new(&mut **$s);
                $e
            }
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        delegate!(self, s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        delegate!(self, s => s.poll_write(cx, b))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => s.poll_shutdown(cx))
    }
}

/// A stream that notes [`Events`] as hyper uses it.
#[derive(Debug)]
pub struct Tap {
    inner: Stream,
    events: Arc<Mutex<Events>>,
}

impl Tap {
    /// Wrap `inner`; the events go to `events`.
    pub fn new(inner: Stream, events: Arc<Mutex<Events>>) -> Tap {
        Tap { inner, events }
    }

    /// The wrapped stream.
    pub fn into_inner(self) -> Stream {
        self.inner
    }

    fn note(&self, f: impl FnOnce(&mut Events)) {
        let now = Instant::now();
        if let Ok(mut e) = self.events.lock() {
            f(&mut e);
            if e.handshake_done.is_none() && !self.inner.handshaking() {
                e.handshake_done = Some(now);
            }
        }
    }
}

impl AsyncRead for Tap {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        this.note(|e| {
            if n > 0 {
                e.first_byte.get_or_insert_with(Instant::now);
                e.bytes_in += n;
            }
        });
        r
    }
}

impl AsyncWrite for Tap {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let at = Instant::now();
        let r = Pin::new(&mut this.inner).poll_write(cx, b);
        if let Poll::Ready(Ok(n)) = &r {
            let n = *n as u64;
            this.note(|e| {
                if n > 0 {
                    e.request_written.get_or_insert(at);
                    e.bytes_out += n;
                }
            });
        }
        r
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.note(|_| {});
        r
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The events of one attempt, as monotonic instants.
#[derive(Debug, Clone, Copy)]
pub struct Marks {
    /// Attempt start (before the name lookup).
    pub start: Instant,
    /// Name resolved.
    pub namelookup: Instant,
    /// `connect(2)` called.
    pub connect_start: Instant,
    /// `connect(2)` completed (with TFO: returned at once, the SYN goes
    /// with the first write).
    pub connect: Instant,
    /// TLS handshake complete.
    pub appconnect: Option<Instant>,
    /// About to send the request.
    pub pretransfer: Instant,
    /// First response byte read (after decryption).
    pub starttransfer: Option<Instant>,
    /// Response complete.
    pub total: Instant,
}

fn ms(from: Instant, to: Instant) -> f64 {
    // ms rounded to µs
    round3(to.saturating_duration_since(from).as_nanos() as f64 / 1e6)
}

impl Marks {
    /// The times in ms since `start`.
    pub fn timings(&self, tls: bool) -> Timings {
        let s = self.start;
        let st = self.starttransfer.unwrap_or(self.total);
        Timings {
            namelookup_ms: ms(s, self.namelookup),
            connect_ms: ms(s, self.connect),
            appconnect_ms: self.appconnect.map(|a| ms(s, a)),
            pretransfer_ms: ms(s, self.pretransfer),
            starttransfer_ms: ms(s, st),
            first_decrypted_byte_ms: tls.then(|| ms(s, st)),
            total_ms: ms(s, self.total),
        }
    }
}

/// Milliseconds between two instants (µs precision).
pub fn between_ms(from: Instant, to: Instant) -> f64 {
    ms(from, to)
}
