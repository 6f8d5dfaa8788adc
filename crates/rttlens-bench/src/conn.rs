//! One connection of a run: TCP connect, the TLS handshake (full, resumed
//! or 0-RTT) and optionally HTTP/1.1 requests, every phase timed with a
//! monotonic clock, a failure classified by phase and cause. The
//! connection is closed afterwards (close_notify, the server's FIN awaited
//! so the server, not the generator, holds TIME_WAIT) off the clock.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::mix::Kind;
use rttlens_core::proto::http::{response_head, Framing};
use rttlens_probe::{ErrorKind, ProbeError, ProbePhase};

/// How long a finished connection may take to close before it is dropped.
const CLOSE_WITHIN: Duration = Duration::from_secs(2);
/// The largest response head read (bytes).
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Why a connection failed, as the report groups it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorClass {
    /// The server answered the SYN with RST (nothing listens, or the
    /// accept queue overflowed with `tcp_abort_on_overflow`).
    Refused,
    /// No answer within `--timeout`.
    Timeout,
    /// The server sent a TLS alert.
    TlsAlert,
    /// The server's certificate did not verify (`--cacert`, `-k`).
    BadCertificate,
    /// Another TLS failure (protocol, version, decode).
    Tls,
    /// The connection was reset (RST after it was established).
    Reset,
    /// The server closed the connection (FIN) before the handshake or the
    /// response was complete.
    Closed,
    /// The response had a status of 400 or more.
    HttpStatus,
    /// The response could not be parsed as HTTP/1.1.
    Http,
    /// Not started: `--max-in-flight` connections were already open
    /// (open loop: the generator, not the server, was the limit).
    NotStarted,
    /// Anything else (no route, too many open files, …).
    Other,
}

impl ErrorClass {
    /// The name used in the report and JSON.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Refused => "refused",
            ErrorClass::Timeout => "timeout",
            ErrorClass::TlsAlert => "tls-alert",
            ErrorClass::BadCertificate => "bad-certificate",
            ErrorClass::Tls => "tls",
            ErrorClass::Reset => "reset",
            ErrorClass::Closed => "closed",
            ErrorClass::HttpStatus => "http-status",
            ErrorClass::Http => "http",
            ErrorClass::NotStarted => "not-started",
            ErrorClass::Other => "other",
        }
    }
}

/// A failed connection: the class, the phase it failed in, what was said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The class.
    pub class: ErrorClass,
    /// The phase.
    pub phase: ProbePhase,
    /// The error as the OS, rustls or the server put it.
    pub message: String,
}

impl Failure {
    fn new(class: ErrorClass, phase: ProbePhase, message: impl Into<String>) -> Failure {
        Failure {
            class,
            phase,
            message: message.into(),
        }
    }

    /// An I/O error in `phase` (rustls' errors arrive wrapped in one).
    fn io(phase: ProbePhase, what: &str, e: &std::io::Error) -> Failure {
        use std::io::ErrorKind as Io;
        let p = ProbeError::io(phase, what, e);
        let class = match (e.kind(), p.kind) {
            (_, ErrorKind::TlsAlert) => ErrorClass::TlsAlert,
            (_, ErrorKind::BadCertificate) => ErrorClass::BadCertificate,
            (_, ErrorKind::Tls) => ErrorClass::Tls,
            (_, ErrorKind::Refused) => ErrorClass::Refused,
            (_, ErrorKind::Timeout) => ErrorClass::Timeout,
            (Io::ConnectionReset | Io::ConnectionAborted | Io::BrokenPipe, _) => ErrorClass::Reset,
            (Io::UnexpectedEof, _) => ErrorClass::Closed,
            _ => ErrorClass::Other,
        };
        Failure::new(class, phase, p.message)
    }
}

/// What one connection measured. Durations are from a monotonic clock.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The kind it attempted.
    pub kind: Kind,
    /// When it was meant to start (open loop: the schedule; closed loop:
    /// when the previous connection of its worker ended).
    pub intended: Instant,
    /// Start lag: from the intended start to the `connect(2)` call.
    pub lag: Duration,
    /// TCP: `connect(2)` until the socket is established.
    pub connect: Option<Duration>,
    /// TLS: from the established socket (the ClientHello is written at
    /// once) to the client's Finished (handshake complete).
    pub tls: Option<Duration>,
    /// Time to first byte of the first response: from the request written
    /// (0-RTT: handed to rustls as early data) to its first byte read.
    pub ttfb: Option<Duration>,
    /// From the intended start to the end: the handshake completed, or,
    /// with requests, the last response read. Failed: to the failure.
    pub total: Duration,
    /// The handshake resumed a session (rustls `HandshakeKind::Resumed`).
    pub resumed: bool,
    /// The request was written as early data (a ticket allowing 0-RTT was
    /// available).
    pub early_sent: bool,
    /// The server accepted the early data (RFC 8446 §4.2.10,
    /// rustls `is_early_data_accepted`).
    pub early_accepted: bool,
    /// Why it failed, if it did.
    pub failure: Option<Failure>,
}

impl Sample {
    fn new(kind: Kind, intended: Instant) -> Sample {
        Sample {
            kind,
            intended,
            lag: Duration::ZERO,
            connect: None,
            tls: None,
            ttfb: None,
            total: Duration::ZERO,
            resumed: false,
            early_sent: false,
            early_accepted: false,
            failure: None,
        }
    }

    /// A connection the open loop could not start (`--max-in-flight`).
    pub(crate) fn not_started(kind: Kind, intended: Instant, in_flight: usize) -> Sample {
        let mut s = Sample::new(kind, intended);
        s.failure = Some(Failure::new(
            ErrorClass::NotStarted,
            ProbePhase::Setup,
            format!("{in_flight} connections already in flight (--max-in-flight)"),
        ));
        s
    }

    /// When it ended.
    pub fn end(&self) -> Instant {
        self.intended + self.total
    }
}

/// What every connection of a run shares.
pub(crate) struct Plan {
    pub addr: SocketAddr,
    pub server_name: ServerName<'static>,
    /// One connector per [`Kind`], in [`Kind::ALL`] order.
    pub connectors: [TlsConnector; 3],
    /// The request bytes (`GET … HTTP/1.1`), when requests are sent.
    pub request: Option<Vec<u8>>,
    /// Requests per connection (keep-alive between them).
    pub requests: u32,
    /// The request asks the server to close (`Connection: close`).
    pub server_closes: bool,
    pub timeout: Duration,
}

/// Run one connection of `kind`, meant to start at `intended`.
pub(crate) async fn measure(plan: &Plan, kind: Kind, intended: Instant) -> Sample {
    let mut s = Sample::new(kind, intended);
    let start = Instant::now();
    s.lag = start.saturating_duration_since(intended);
    let deadline = tokio::time::Instant::from_std(start + plan.timeout);
    let result = attempt(plan, kind, start, deadline, &mut s).await;
    s.total = Instant::now().saturating_duration_since(intended);
    match result {
        Ok(tls) => {
            let server_closes = plan.server_closes;
            tokio::spawn(async move {
                let _ = tokio::time::timeout(CLOSE_WITHIN, close(tls, server_closes)).await;
            });
        }
        Err(f) => s.failure = Some(f),
    }
    s
}

async fn within<F: std::future::Future>(
    deadline: tokio::time::Instant,
    phase: ProbePhase,
    timeout: Duration,
    f: F,
) -> Result<F::Output, Failure> {
    tokio::time::timeout_at(deadline, f).await.map_err(|_| {
        Failure::new(
            ErrorClass::Timeout,
            phase,
            format!("no answer within {} ms (--timeout)", timeout.as_millis()),
        )
    })
}

async fn attempt(
    plan: &Plan,
    kind: Kind,
    start: Instant,
    deadline: tokio::time::Instant,
    s: &mut Sample,
) -> Result<TlsStream<tokio::net::TcpStream>, Failure> {
    let t = plan.timeout;
    let sock = if plan.addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|e| Failure::io(ProbePhase::Connect, "creating the socket", &e))?;
    let tcp = within(deadline, ProbePhase::Connect, t, sock.connect(plan.addr))
        .await?
        .map_err(|e| {
            Failure::io(
                ProbePhase::Connect,
                &format!("connecting to {}", plan.addr),
                &e,
            )
        })?;
    // curl and h2load set it too: the request must not wait behind the
    // client's Finished for an ACK (Nagle, RFC 896)
    tcp.set_nodelay(true)
        .map_err(|e| Failure::io(ProbePhase::Connect, "setting TCP_NODELAY", &e))?;
    let connected = Instant::now();
    s.connect = Some(connected - start);
    let connector = &plan.connectors[kind.index()];
    let mut tls = within(
        deadline,
        ProbePhase::Tls,
        t,
        connector.connect(plan.server_name.clone(), tcp),
    )
    .await?
    .map_err(|e| Failure::io(ProbePhase::Tls, "TLS handshake", &e))?;
    // with early data tokio-rustls returns before the handshake: writes go
    // out as early data, and the flush after them drives the handshake
    let early = tls.get_ref().1.is_handshaking();
    let mut handshake_done = (!early).then(Instant::now);
    let mut buf = Vec::new();
    if let Some(req) = &plan.request {
        for i in 0..plan.requests {
            let sent = Instant::now();
            within(deadline, ProbePhase::Http, t, tls.write_all(req))
                .await?
                .map_err(|e| Failure::io(ProbePhase::Http, "writing the request", &e))?;
            if handshake_done.is_none() {
                s.early_sent = true;
                within(deadline, ProbePhase::Tls, t, tls.flush())
                    .await?
                    .map_err(|e| Failure::io(ProbePhase::Tls, "TLS handshake (0-RTT)", &e))?;
                handshake_done = Some(Instant::now());
            } else {
                within(deadline, ProbePhase::Http, t, tls.flush())
                    .await?
                    .map_err(|e| Failure::io(ProbePhase::Http, "writing the request", &e))?;
            }
            let first = within(
                deadline,
                ProbePhase::Http,
                t,
                read_response(&mut tls, &mut buf),
            )
            .await??;
            if i == 0 {
                s.ttfb = Some(first.saturating_duration_since(sent));
            }
        }
    }
    if handshake_done.is_none() {
        within(deadline, ProbePhase::Tls, t, tls.flush())
            .await?
            .map_err(|e| Failure::io(ProbePhase::Tls, "TLS handshake", &e))?;
        handshake_done = Some(Instant::now());
    }
    s.tls = handshake_done.map(|d| d.saturating_duration_since(connected));
    let conn = tls.get_ref().1;
    s.resumed = conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    s.early_accepted = conn.is_early_data_accepted();
    Ok(tls)
}

/// Close a finished connection: when the server does not close by itself,
/// send close_notify (RFC 8446 §6.1) without a FIN; then read until the
/// server's FIN. Reading also takes in the NewSessionTickets a handshake
/// without a request has not read yet.
async fn close(mut tls: TlsStream<tokio::net::TcpStream>, server_closes: bool) {
    if !server_closes {
        tls.get_mut().1.send_close_notify();
        if tls.flush().await.is_err() {
            return;
        }
    }
    let mut sink = [0u8; 4096];
    // bounded by the caller's timeout and by the server's FIN
    while let Ok(n) = tls.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
}

/// Read one HTTP/1.1 response from `io` (head parsed by rttlens-core's
/// [`response_head`], httparse underneath; the body read and discarded by
/// its framing: `Content-Length`, chunked, or until the server closes,
/// RFC 9112 §6.3). `buf` carries bytes already
/// read and, on return, those read past the response (the next one's).
/// Returns when its first byte arrived.
///
/// # Errors
/// A [`Failure`] in [`ProbePhase::Http`]: `http-status` for a status of 400 or
/// more, `http` for a head httparse refuses (or over 64 KiB), `closed`
/// when the stream ends early, or the read error's class.
pub async fn read_response<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut Vec<u8>,
) -> Result<Instant, Failure> {
    let read_err = |e: std::io::Error| Failure::io(ProbePhase::Http, "reading the response", &e);
    let http = |m: String| Failure::new(ErrorClass::Http, ProbePhase::Http, m);
    let mut first = None;
    let (head_len, framing) = loop {
        if !buf.is_empty() {
            match response_head(buf) {
                Ok(Some((_, status, _))) if status >= 400 => {
                    let line = buf.split(|&b| b == b'\n').next().unwrap_or_default();
                    return Err(Failure::new(
                        ErrorClass::HttpStatus,
                        ProbePhase::Http,
                        String::from_utf8_lossy(line).trim().to_string(),
                    ));
                }
                Ok(Some((len, _, framing))) => break (len, framing),
                Ok(None) if buf.len() > MAX_HEAD_BYTES => {
                    return Err(http(format!(
                        "response head longer than {MAX_HEAD_BYTES} bytes"
                    )))
                }
                Ok(None) => {}
                Err(e) => return Err(http(format!("bad response head: {e}"))),
            }
        }
        if io.read_buf(buf).await.map_err(read_err)? == 0 {
            return Err(Failure::new(
                ErrorClass::Closed,
                ProbePhase::Http,
                "the server closed the connection before the response head",
            ));
        }
        first.get_or_insert_with(Instant::now);
    };
    let first = first.unwrap_or_else(Instant::now);
    buf.drain(..head_len);
    let eof = || {
        Failure::new(
            ErrorClass::Closed,
            ProbePhase::Http,
            "the server closed the connection in the response body",
        )
    };
    match framing {
        Framing::None => buf.clear(),
        Framing::Length(mut left) => {
            // bounded by Content-Length: each read is at least one byte
            loop {
                let have = buf.len() as u64;
                if have >= left {
                    buf.drain(..usize::try_from(left).unwrap_or(buf.len()));
                    break;
                }
                left -= have;
                buf.clear();
                if io.read_buf(buf).await.map_err(read_err)? == 0 {
                    return Err(eof());
                }
            }
        }
        Framing::UntilClose => {
            buf.clear();
            while io.read_buf(buf).await.map_err(read_err)? > 0 {
                buf.clear();
            }
        }
        Framing::Chunked => {
            // bytes of chunk data (and its CRLF) still to skip
            let mut skip: u64 = 0;
            // each iteration consumes buffered bytes or reads at least one
            loop {
                if skip > 0 {
                    if buf.is_empty() && io.read_buf(buf).await.map_err(read_err)? == 0 {
                        return Err(eof());
                    }
                    let n = skip.min(buf.len() as u64);
                    buf.drain(..usize::try_from(n).unwrap_or(buf.len()));
                    skip -= n;
                    continue;
                }
                match httparse::parse_chunk_size(buf) {
                    Ok(httparse::Status::Complete((used, 0))) => {
                        // the last chunk, then trailer fields up to an
                        // empty line (RFC 9112 §7.1.2)
                        let rest = &buf[used..];
                        let end = if rest.starts_with(b"\r\n") {
                            Some(2)
                        } else {
                            rest.windows(4)
                                .position(|w| w == b"\r\n\r\n")
                                .map(|i| i + 4)
                        };
                        if let Some(e) = end {
                            buf.drain(..used + e);
                            break;
                        }
                    }
                    Ok(httparse::Status::Complete((used, size))) => {
                        buf.drain(..used);
                        skip = size.saturating_add(2);
                        continue;
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(_) => return Err(http("bad chunk size line".into())),
                }
                if buf.len() > MAX_HEAD_BYTES {
                    return Err(http("chunk size line or trailers too long".into()));
                }
                if io.read_buf(buf).await.map_err(read_err)? == 0 {
                    return Err(eof());
                }
            }
        }
    }
    Ok(first)
}

/// The plan's connectors, shared: cheap clones of `Arc<ClientConfig>`.
pub(crate) fn connector(cfg: Arc<rustls::ClientConfig>, early: bool) -> TlsConnector {
    TlsConnector::from(cfg).early_data(early)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(chunks: &[&[u8]]) -> (Result<Instant, Failure>, Vec<u8>) {
        let mut b = reader(chunks);
        let mut buf = Vec::new();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = rt.block_on(read_response(&mut b, &mut buf));
        (r, buf)
    }

    /// A reader handing out `chunks` one read at a time, then EOF.
    fn reader(chunks: &[&[u8]]) -> impl AsyncRead + Unpin {
        // one read never crosses from one slice into the next
        let mut r: Box<dyn AsyncRead + Unpin> = Box::new(&[][..]);
        for c in chunks.iter().rev() {
            r = Box::new(AsyncReadExt::chain(std::io::Cursor::new(c.to_vec()), r));
        }
        r
    }

    #[test]
    fn content_length_body_is_consumed_exactly() {
        let (r, rest) = read(&[
            b"HTTP/1.1 200 OK\r\nContent-Len",
            b"gth: 5\r\n\r\nhel",
            b"loNEXT",
        ]);
        assert!(r.is_ok());
        assert_eq!(rest, b"NEXT");
    }

    #[test]
    fn chunked_body_across_reads() {
        let (r, rest) = read(&[
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nab",
            b"cd\r\n3\r\nxyz\r\n0\r",
            b"\n\r\nNEXT",
        ]);
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(rest, b"NEXT");
    }

    #[test]
    fn close_delimited_and_errors() {
        let (r, _) = read(&[b"HTTP/1.1 200 OK\r\n\r\nbody until ", b"the end"]);
        assert!(r.is_ok());
        let (r, _) = read(&[b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"]);
        assert_eq!(r.unwrap_err().class, ErrorClass::HttpStatus);
        let (r, _) = read(&[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"]);
        assert_eq!(r.unwrap_err().class, ErrorClass::Closed);
        let (r, _) = read(&[b"SSH-2.0-OpenSSH\r\n\r\n"]);
        assert_eq!(r.unwrap_err().class, ErrorClass::Http);
        let (r, _) = read(&[]);
        assert_eq!(r.unwrap_err().class, ErrorClass::Closed);
    }
}
