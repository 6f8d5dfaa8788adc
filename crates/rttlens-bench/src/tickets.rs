//! The session ticket pool that resumed and 0-RTT connections draw from.
//!
//! Our own [`ClientSessionStore`] because rustls' in-memory store keeps at
//! most 8 TLS 1.3 tickets per server (`MAX_TLS13_TICKETS_PER_SERVER` in
//! `rustls/src/client/handy.rs`): a load generator has hundreds of resumed
//! handshakes in flight, and each takes a ticket of its own (RFC 8446
//! §8.1 asks clients to use a ticket once; rustls' trait contract says
//! the same). This pool keeps up to [`TicketPool::capacity`] of them,
//! oldest handed out first, plus the last TLS 1.2 session (reusable, RFC
//! 5077 §3.3) and the key-exchange group the server chose.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

/// A bounded pool of tickets for the one server a run targets.
#[derive(Debug)]
pub struct TicketPool {
    capacity: usize,
    inner: Mutex<Inner>,
    received: AtomicU64,
    taken: AtomicU64,
    misses: AtomicU64,
}

#[derive(Debug, Default)]
struct Inner {
    tls13: VecDeque<(ServerName<'static>, Tls13ClientSessionValue)>,
    tls12: Option<(ServerName<'static>, Tls12ClientSessionValue)>,
    kx: Option<(ServerName<'static>, NamedGroup)>,
}

impl TicketPool {
    /// A pool keeping up to `capacity` TLS 1.3 tickets (the oldest is
    /// dropped when a new one arrives at a full pool).
    pub fn new(capacity: usize) -> TicketPool {
        TicketPool {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
            received: AtomicU64::new(0),
            taken: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The most TLS 1.3 tickets kept at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// TLS 1.3 tickets waiting to be used.
    pub fn len(&self) -> usize {
        self.lock().tls13.len()
    }

    /// No TLS 1.3 ticket is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a TLS 1.2 session is kept.
    pub fn has_tls12_session(&self) -> bool {
        self.lock().tls12.is_some()
    }

    /// NewSessionTicket messages received so far (TLS 1.3).
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Tickets handed to a connection so far (TLS 1.3).
    pub fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// Times a resumed or 0-RTT connection found no TLS 1.3 ticket (and
    /// so made a full handshake).
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ClientSessionStore for TicketPool {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.lock().kx = Some((server_name, group));
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        match &self.lock().kx {
            Some((n, g)) if n == server_name => Some(*g),
            _ => None,
        }
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.lock().tls12 = Some((server_name, value));
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        match &self.lock().tls12 {
            Some((n, v)) if n == server_name => Some(v.clone()),
            _ => None,
        }
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        let mut inner = self.lock();
        if inner.tls12.as_ref().is_some_and(|(n, _)| n == server_name) {
            inner.tls12 = None;
        }
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.received.fetch_add(1, Ordering::Relaxed);
        let mut inner = self.lock();
        if inner.tls13.len() >= self.capacity {
            inner.tls13.pop_front();
        }
        inner.tls13.push_back((server_name, value));
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        let mut inner = self.lock();
        let Some(i) = inner.tls13.iter().position(|(n, _)| n == server_name) else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let (_, v) = inner.tls13.remove(i)?;
        self.taken.fetch_add(1, Ordering::Relaxed);
        Some(v)
    }
}

/// The store of full handshakes: offers no ticket (so the handshake is
/// full) but keeps the tickets the server sends, so full connections keep
/// the pool filled for resumed ones, as a real client's would.
#[derive(Debug)]
pub struct FillOnly(pub std::sync::Arc<TicketPool>);

impl ClientSessionStore for FillOnly {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.0.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.0.kx_hint(server_name)
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.0.set_tls12_session(server_name, value);
    }

    fn tls12_session(&self, _server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _server_name: &ServerName<'static>) {}

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.0.insert_tls13_ticket(server_name, value);
    }

    fn take_tls13_ticket(
        &self,
        _server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        None
    }
}
