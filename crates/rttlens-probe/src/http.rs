//! The HTTP exchange through hyper's client connection API over the
//! probe's own stream, so every byte hyper writes and reads passes the
//! [`crate::timing::Tap`]: HTTP/1.1 (`hyper::client::conn::http1`), or
//! HTTP/2 (`hyper::client::conn::http2`, RFC 9113) when TLS's ALPN agreed
//! on `h2`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rttlens_probe_model::ResponseInfo;

use crate::error::{ErrorKind, ProbeError, ProbePhase};
use crate::resolve::Target;
use crate::timing::{Stream, Tap};

/// The request to send.
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    /// Method (`GET`; `POST` when a body is given and no `-X`).
    pub method: Option<String>,
    /// Extra headers `Name: value`, in order.
    pub headers: Vec<(String, String)>,
    /// Request body (`-d`).
    pub body: Option<Vec<u8>>,
}

/// The end of an exchange.
#[derive(Debug)]
pub struct Done {
    /// What came back.
    pub info: ResponseInfo,
    /// The response head was parsed (HTTP/2: the first HEADERS frame; the
    /// first bytes read are the server's SETTINGS, not the response).
    pub headers_at: std::time::Instant,
    /// HTTP/1.1: the stream, handed back without closing it (for the TLS
    /// state).
    pub stream: Option<Stream>,
    /// HTTP/2: the connection task, still running (it closes the
    /// connection once awaited: GOAWAY, close_notify, FIN).
    pub h2_conn: Option<tokio::task::JoinHandle<()>>,
}

/// Send the request over `tap` and read the whole response, in HTTP/2
/// when `h2` (ALPN agreed on `h2`), else HTTP/1.1.
///
/// # Errors
/// A [`ProbePhase::Http`] error (or [`ProbePhase::Tls`] when the handshake finishing
/// under an early-data request fails), or a usage error for a bad method
/// or header.
pub async fn exchange(
    tap: Tap,
    target: &Target,
    spec: &RequestSpec,
    h2: bool,
) -> Result<Done, ProbeError> {
    let method = spec.method.clone().unwrap_or_else(|| {
        if spec.body.is_some() {
            "POST".into()
        } else {
            "GET".into()
        }
    });
    // HTTP/2 carries the authority in `:authority` (RFC 9113 §8.3.1), from
    // an absolute URI; HTTP/1.1 the origin form and `Host`
    let mut req = if h2 {
        hyper::Request::builder().uri(format!("https://{}{}", target.host_header(), target.path))
    } else {
        hyper::Request::builder()
            .uri(target.path.as_str())
            .header(hyper::header::HOST, target.host_header())
    };
    req = req
        .method(method.as_str())
        .header(
            hyper::header::USER_AGENT,
            concat!("rttlens/", env!("CARGO_PKG_VERSION")),
        )
        .header(hyper::header::ACCEPT, "*/*");
    for (k, v) in &spec.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let body = Full::new(Bytes::from(spec.body.clone().unwrap_or_default()));
    let req = req
        .body(body)
        .map_err(|e| ProbeError::usage(format!("request (-X/-H): {e}")))?;
    if h2 {
        return exchange_h2(tap, req).await;
    }
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tap))
        .await
        .map_err(|e| http_err(&e))?;
    // hyper's connection future does the I/O; it gives the stream back once
    // the sender is dropped (without_shutdown: no close_notify, no FIN yet)
    let conn = tokio::spawn(conn.without_shutdown());
    let resp = sender.send_request(req).await.map_err(|e| http_err(&e))?;
    let headers_at = std::time::Instant::now();
    let info = read_response(resp).await?;
    drop(sender);
    let parts = conn
        .await
        .map_err(|e| ProbeError::new(ProbePhase::Http, ErrorKind::Http, e.to_string()))?
        .map_err(|e| http_err(&e))?;
    Ok(Done {
        info,
        headers_at,
        stream: Some(parts.io.into_inner().into_inner()),
        h2_conn: None,
    })
}

/// The HTTP/2 exchange: one stream on a fresh connection. The connection
/// task is returned still running, so the caller can read `TCP_INFO`
/// before it closes.
async fn exchange_h2(tap: Tap, req: hyper::Request<Full<Bytes>>) -> Result<Done, ProbeError> {
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tap))
            .await
            .map_err(|e| http_err(&e))?;
    let conn = tokio::spawn(async move {
        // errors after the response (the server's GOAWAY) do not matter
        let _ = conn.await;
    });
    let resp = sender.send_request(req).await.map_err(|e| http_err(&e))?;
    let headers_at = std::time::Instant::now();
    let info = read_response(resp).await?;
    Ok(Done {
        info,
        headers_at,
        stream: None,
        h2_conn: Some(conn),
    })
}

/// Status, version, `Location` and the body's length.
async fn read_response(
    resp: hyper::Response<hyper::body::Incoming>,
) -> Result<ResponseInfo, ProbeError> {
    let mut info = ResponseInfo {
        status: resp.status().as_u16(),
        version: format!("{:?}", resp.version()),
        body_bytes: 0,
        location: resp
            .headers()
            .get(hyper::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    };
    let mut body = resp.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| http_err(&e))?;
        if let Some(d) = frame.data_ref() {
            info.body_bytes += d.len() as u64;
        }
    }
    Ok(info)
}

fn http_err(e: &hyper::Error) -> ProbeError {
    // an I/O error under hyper may be the TLS handshake failing late (0-RTT)
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(t) = s.downcast_ref::<rustls::Error>() {
            return ProbeError::tls(t);
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if let Some(t) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                return ProbeError::tls(t);
            }
        }
        src = s.source();
    }
    let detail = std::error::Error::source(e)
        .map(|s| format!("{e}: {s}"))
        .unwrap_or_else(|| e.to_string());
    ProbeError::new(ProbePhase::Http, ErrorKind::Http, detail)
}
