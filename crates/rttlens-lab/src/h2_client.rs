//! A client that sends requests in parallel over one HTTP/2 connection in
//! clear (prior knowledge, RFC 9113 §3.3) and honours the server's
//! `SETTINGS_MAX_CONCURRENT_STREAMS`: hyper's HTTP/2 client (the `h2`
//! crate) holds a request's HEADERS until the server allows another stream.
//! curl 7.88 and h2load cannot be the lab's client for that: both open
//! their streams before the server's SETTINGS arrive (nginx refuses the
//! excess), and curl then stops on the connection.
//!
//! One request goes first, alone, so the server's SETTINGS are known
//! before the parallel ones: a long-lived connection (a gRPC channel, a
//! browser's) meets the limit that way.

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// How long the whole exchange may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// `GET path` once, then `n` times at once, on one HTTP/2 connection in
/// clear to `addr`; returns each response's status and body length, the
/// first request's first.
///
/// # Errors
/// The connection or a request failed, or it all took over 30 s.
pub fn get_parallel(addr: SocketAddr, path: &str, n: usize) -> Result<Vec<(u16, u64)>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let uri = format!("http://{addr}{path}");
    let shown = uri.clone();
    rt.block_on(async move {
        tokio::time::timeout(TIMEOUT, async move {
            let tcp = tokio::net::TcpStream::connect(addr)
                .await
                .map_err(|e| format!("connecting to {addr}: {e}"))?;
            tcp.set_nodelay(true).map_err(|e| e.to_string())?;
            let (sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                    .await
                    .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            let get = |mut sender: hyper::client::conn::http2::SendRequest<Empty<Bytes>>| {
                let uri = uri.clone();
                async move {
                    let req = hyper::Request::get(uri)
                        .body(Empty::<Bytes>::new())
                        .map_err(|e| e.to_string())?;
                    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
                    let status = resp.status().as_u16();
                    let body = resp
                        .into_body()
                        .collect()
                        .await
                        .map_err(|e| e.to_string())?;
                    Ok::<_, String>((status, body.to_bytes().len() as u64))
                }
            };
            let mut out = vec![get(sender.clone()).await?];
            let tasks: Vec<_> = (0..n).map(|_| tokio::spawn(get(sender.clone()))).collect();
            for t in tasks {
                out.push(t.await.map_err(|e| e.to_string())??);
            }
            Ok(out)
        })
        .await
        .map_err(|_| format!("{shown}: not done in {} s", TIMEOUT.as_secs()))?
    })
}
