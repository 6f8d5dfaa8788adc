//! The rustls pieces the probe instruments to hear the QUIC stack's own
//! account of a connection (quinn does not expose its rustls connection):
//! key shares generated (a HelloRetryRequest), certificates verified (a
//! full handshake), the suite whose packet keys were made last (the
//! negotiated one); and [`QuicClient`], the run's quinn client
//! configuration built over them.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ActiveKeyExchange, SupportedKxGroup};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, NamedGroup, ProtocolVersion, SignatureScheme};

use crate::error::ProbeError;
use crate::tls::{KeyLogSink, TlsOptions, TlsVersion};

thread_local! {
    /// Key shares rustls generated on this thread ([`Counted`]).
    static KEY_SHARES: Cell<u32> = const { Cell::new(0) };
    /// The cipher suite whose QUIC packet keys were made last on this
    /// thread ([`SuiteSeen`]).
    static LAST_SUITE: Cell<Option<rustls::CipherSuite>> = const { Cell::new(None) };
}

/// A cipher suite's QUIC packet protection that notes the suite each time
/// it makes packet keys: the Initial keys are always
/// TLS_AES_128_GCM_SHA256's (RFC 9001 §5.2), the Handshake and 1-RTT keys
/// the negotiated suite's, made later, so the last suite noted once the
/// handshake is over is the one it chose (quinn does not say).
struct SuiteSeen {
    suite: rustls::CipherSuite,
    inner: &'static dyn rustls::quic::Algorithm,
}

impl rustls::quic::Algorithm for SuiteSeen {
    fn packet_key(
        &self,
        key: rustls::crypto::cipher::AeadKey,
        iv: rustls::crypto::cipher::Iv,
    ) -> Box<dyn rustls::quic::PacketKey> {
        LAST_SUITE.with(|c| c.set(Some(self.suite)));
        self.inner.packet_key(key, iv)
    }

    fn header_protection_key(
        &self,
        key: rustls::crypto::cipher::AeadKey,
    ) -> Box<dyn rustls::quic::HeaderProtectionKey> {
        self.inner.header_protection_key(key)
    }

    fn aead_key_len(&self) -> usize {
        self.inner.aead_key_len()
    }

    fn fips(&self) -> bool {
        self.inner.fips()
    }
}

/// ring's TLS 1.3 suites with their QUIC packet protection wrapped in a
/// [`SuiteSeen`], made once for the process (rustls wants `'static`
/// suites); its TLS 1.2 suites as they are (QUIC never uses them).
fn seen_suites() -> Vec<rustls::SupportedCipherSuite> {
    static SUITES: OnceLock<Vec<rustls::SupportedCipherSuite>> = OnceLock::new();
    SUITES
        .get_or_init(|| {
            rustls::crypto::ring::default_provider()
                .cipher_suites
                .into_iter()
                .map(|s| match s {
                    rustls::SupportedCipherSuite::Tls13(t) => {
                        let quic = t.quic.map(|inner| {
                            let w: &'static SuiteSeen = Box::leak(Box::new(SuiteSeen {
                                suite: t.common.suite,
                                inner,
                            }));
                            w as &'static dyn rustls::quic::Algorithm
                        });
                        let wrapped: &'static rustls::Tls13CipherSuite =
                            Box::leak(Box::new(rustls::Tls13CipherSuite {
                                common: rustls::crypto::CipherSuiteCommon {
                                    suite: t.common.suite,
                                    hash_provider: t.common.hash_provider,
                                    confidentiality_limit: t.common.confidentiality_limit,
                                },
                                hkdf_provider: t.hkdf_provider,
                                aead_alg: t.aead_alg,
                                quic,
                            }));
                        rustls::SupportedCipherSuite::Tls13(wrapped)
                    }
                    other => other,
                })
                .collect()
        })
        .clone()
}

/// A key-exchange group that counts the key shares generated with it.
#[derive(Debug)]
struct Counted(&'static dyn SupportedKxGroup);

impl SupportedKxGroup for Counted {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, rustls::Error> {
        KEY_SHARES.with(|c| c.set(c.get().saturating_add(1)));
        self.0.start()
    }

    fn name(&self) -> NamedGroup {
        self.0.name()
    }

    fn fips(&self) -> bool {
        self.0.fips()
    }

    fn usable_for_version(&self, version: ProtocolVersion) -> bool {
        self.0.usable_for_version(version)
    }
}

/// ring's key-exchange groups, each wrapped in a [`Counted`] once for the
/// process (rustls wants `'static` groups: three small objects, leaked
/// once).
fn counted_groups() -> Vec<&'static dyn SupportedKxGroup> {
    static GROUPS: OnceLock<Vec<&'static dyn SupportedKxGroup>> = OnceLock::new();
    GROUPS
        .get_or_init(|| {
            rustls::crypto::ring::default_provider()
                .kx_groups
                .into_iter()
                .map(|g| {
                    let c: &'static Counted = Box::leak(Box::new(Counted(g)));
                    c as &'static dyn SupportedKxGroup
                })
                .collect()
        })
        .clone()
}

/// A certificate verifier that counts its certificate verifications
/// (rustls calls it only in full handshakes).
#[derive(Debug)]
struct CountingVerifier {
    inner: Arc<dyn ServerCertVerifier>,
    calls: Arc<AtomicU64>,
}

impl ServerCertVerifier for CountingVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}

/// The QUIC client configuration of a run (or of one redirect target):
/// TLS 1.3, ALPN `h3`, one session store for every attempt (resumption,
/// 0-RTT), the key log, and no UDP segmentation offload (each QUIC
/// datagram leaves as its own packet, so the self-capture sees them as the
/// peer does).
#[derive(Clone)]
pub struct QuicClient {
    pub(super) config: quinn::ClientConfig,
    /// Certificate verifications so far (full handshakes).
    pub(super) verifications: Arc<AtomicU64>,
}

impl std::fmt::Debug for QuicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicClient").finish_non_exhaustive()
    }
}

impl QuicClient {
    /// Build the configuration from the run's TLS options (the version is
    /// TLS 1.3 and ALPN `h3` whatever they say; `--cacert`, `-k`,
    /// `--ciphers` and the key log apply).
    ///
    /// # Errors
    /// A usage error naming `--tls 1.2` (QUIC is TLS 1.3 only, RFC 9001
    /// §4.2), `--cacert` or `--ciphers` (QUIC needs
    /// TLS_AES_128_GCM_SHA256 among them for its Initial packets, RFC 9001
    /// §5.2).
    pub fn new(o: &TlsOptions, keylog: Option<Arc<KeyLogSink>>) -> Result<QuicClient, ProbeError> {
        if o.version == Some(TlsVersion::Tls12) {
            return Err(ProbeError::usage(
                "--tls 1.2 with --http3: QUIC runs TLS 1.3 only (RFC 9001 §4.2)",
            ));
        }
        let o = TlsOptions {
            version: Some(TlsVersion::Tls13),
            alpn: vec!["h3".into()],
            ..o.clone()
        };
        let mut provider = rustls::crypto::ring::default_provider();
        provider.kx_groups = counted_groups();
        provider.cipher_suites = seen_suites();
        let calls = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&calls);
        let wrap = move |inner: Arc<dyn ServerCertVerifier>| -> Arc<dyn ServerCertVerifier> {
            Arc::new(CountingVerifier {
                inner,
                calls: Arc::clone(&counter),
            })
        };
        let mut tls = crate::tls::config_with(&o, provider, Some(&wrap), None)?;
        tls.resumption = rustls::client::Resumption::in_memory_sessions(64);
        tls.enable_early_data = true;
        if let Some(k) = keylog {
            tls.key_log = k as Arc<dyn rustls::KeyLog>;
        }
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).map_err(|e| {
            ProbeError::usage(format!(
                "--ciphers with --http3: {e} (QUIC's Initial packets need TLS_AES_128_GCM_SHA256)"
            ))
        })?;
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport.enable_segmentation_offload(false);
        config.transport_config(Arc::new(transport));
        Ok(QuicClient {
            config,
            verifications: calls,
        })
    }
}

/// Zero this thread's counts, before a connection starts.
pub(super) fn reset_counts() {
    KEY_SHARES.with(|c| c.set(0));
    LAST_SUITE.with(|c| c.set(None));
}

/// Key shares rustls generated on this thread since [`reset_counts`].
pub(super) fn key_shares() -> u32 {
    KEY_SHARES.with(Cell::get)
}

/// The suite whose QUIC packet keys were made last on this thread since
/// [`reset_counts`].
pub(super) fn last_suite() -> Option<rustls::CipherSuite> {
    LAST_SUITE.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_groups_are_ring_s_in_order() {
        let names: Vec<NamedGroup> = counted_groups().iter().map(|g| g.name()).collect();
        let ring: Vec<NamedGroup> = rustls::crypto::ring::default_provider()
            .kx_groups
            .iter()
            .map(|g| g.name())
            .collect();
        assert_eq!(names, ring);
        KEY_SHARES.with(|c| c.set(0));
        let _ = counted_groups()[0].start().unwrap();
        assert_eq!(KEY_SHARES.with(Cell::get), 1);
    }
}
