//! TLS by rustls: the client configuration (versions, roots, ALPN,
//! resumption, 0-RTT, key log) shared by every connection of a run, so
//! the second connection can resume and the third send early data.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use rttlens_probe_model::{NegotiatedTls, PeerCerts};

use crate::error::ProbeError;

pub use rttlens_probe_model::TlsVersion;

/// TLS options of a run.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Only this version (`None`: 1.3 and 1.2, rustls' default order).
    pub version: Option<TlsVersion>,
    /// ALPN protocols offered, in order (e.g. `http/1.1`).
    pub alpn: Vec<String>,
    /// PEM file of CA certificates to trust instead of the system's.
    pub cacert: Option<PathBuf>,
    /// Skip certificate verification (`-k`); handshake signatures are still
    /// checked.
    pub insecure: bool,
    /// Append TLS secrets to this file (NSS key log format); the
    /// `SSLKEYLOGFILE` environment variable when `None`.
    pub keylog: Option<PathBuf>,
    /// Cipher suites to offer, in order of preference, by IANA name
    /// (`TLS_AES_128_GCM_SHA256`, `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`)
    /// or rustls' (`TLS13_AES_128_GCM_SHA256`). Empty: rustls' default
    /// order (AES-256-GCM first).
    pub ciphers: Vec<String>,
}

/// The two client configurations of a run: one that never offers early
/// data and one that does, sharing one session store (so a ticket from
/// either serves both).
#[derive(Debug, Clone)]
pub struct TlsClient {
    /// Resumption allowed, early data never offered.
    pub normal: Arc<ClientConfig>,
    /// The same with `enable_early_data`.
    pub early: Arc<ClientConfig>,
    /// The key log, when one is kept.
    pub keylog: Option<Arc<KeyLogSink>>,
    /// The trust anchors' certificates (`--cacert` or the system's), to
    /// read the verified chain's expiry ([`peer_certs`]); `None` with
    /// `-k` (nothing is verified).
    pub anchors: Option<Arc<Vec<CertificateDer<'static>>>>,
}

impl TlsClient {
    /// Build the configurations.
    ///
    /// # Errors
    /// A usage error naming `--cacert` when the file cannot be read or holds
    /// no certificate, or naming `--keylog` when the file cannot be opened.
    pub fn new(o: &TlsOptions, keylog: Option<Arc<KeyLogSink>>) -> Result<TlsClient, ProbeError> {
        let anchors = if o.insecure {
            None
        } else {
            Some(Arc::new(root_ders(o.cacert.as_deref())?))
        };
        let mut cfg = config_with(
            o,
            rustls::crypto::ring::default_provider(),
            None,
            anchors.as_deref().map(Vec::as_slice),
        )?;
        // one in-memory store (rustls keeps tickets per server name), shared
        // by both configurations through the Arc inside `Resumption`
        cfg.resumption = Resumption::in_memory_sessions(64);
        if let Some(k) = &keylog {
            cfg.key_log = Arc::clone(k) as Arc<dyn rustls::KeyLog>;
        }
        let mut early = cfg.clone();
        early.enable_early_data = true;
        Ok(TlsClient {
            normal: Arc::new(cfg),
            early: Arc::new(early),
            keylog,
            anchors,
        })
    }
}

/// The configuration every client connection starts from: the versions,
/// the trust anchors (or `-k`) and the ALPN protocols of `o`. Resumption,
/// early data and the key log are the caller's (rustls' defaults: an
/// in-memory session store of 256 entries, no early data).
///
/// # Errors
/// A usage error naming `--tls` or `--cacert`.
pub fn base_config(o: &TlsOptions) -> Result<ClientConfig, ProbeError> {
    config_with(o, rustls::crypto::ring::default_provider(), None, None)
}

/// What [`config_with`] makes of the usual certificate verifier.
pub(crate) type WrapVerifier = dyn Fn(Arc<dyn ServerCertVerifier>) -> Arc<dyn ServerCertVerifier>;

/// [`base_config`] over `provider` (ring's, perhaps with its key-exchange
/// groups wrapped), with the certificate verifier `wrap` makes of the
/// usual one (`--cacert` or the system's roots, or `-k`'s) when given;
/// `anchors`: the trust anchors' certificates when already read
/// ([`root_ders`]), else they are read here.
///
/// # Errors
/// As [`base_config`].
pub(crate) fn config_with(
    o: &TlsOptions,
    mut provider: CryptoProvider,
    wrap: Option<&WrapVerifier>,
    anchors: Option<&[CertificateDer<'static>]>,
) -> Result<ClientConfig, ProbeError> {
    let roots = |cacert: Option<&Path>| match anchors {
        Some(a) => store(a.to_vec(), cacert),
        None => store(root_ders(cacert)?, cacert),
    };
    if !o.ciphers.is_empty() {
        provider.cipher_suites = cipher_suites(&provider.cipher_suites, &o.ciphers)?;
    }
    let provider = Arc::new(provider);
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = match o.version {
        None => vec![&rustls::version::TLS13, &rustls::version::TLS12],
        Some(TlsVersion::Tls12) => vec![&rustls::version::TLS12],
        Some(TlsVersion::Tls13) => vec![&rustls::version::TLS13],
    };
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| ProbeError::usage(format!("--tls: {e}")))?;
    let mut cfg = match (o.insecure, wrap) {
        (true, w) => {
            let v: Arc<dyn ServerCertVerifier> = Arc::new(NoVerify(provider));
            builder
                .dangerous()
                .with_custom_certificate_verifier(w.map_or(Arc::clone(&v), |w| w(v)))
                .with_no_client_auth()
        }
        (false, Some(w)) => {
            let roots = Arc::new(roots(o.cacert.as_deref())?);
            let v = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| ProbeError::usage(format!("--cacert: {e}")))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(w(v))
                .with_no_client_auth()
        }
        (false, None) => builder
            .with_root_certificates(roots(o.cacert.as_deref())?)
            .with_no_client_auth(),
    };
    cfg.alpn_protocols = o.alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
    Ok(cfg)
}

/// The suites named in `names`, in that order, out of `all`.
fn cipher_suites(
    all: &[rustls::SupportedCipherSuite],
    names: &[String],
) -> Result<Vec<rustls::SupportedCipherSuite>, ProbeError> {
    // rustls names TLS 1.3 suites TLS13_…, IANA TLS_…
    let norm = |n: &str| n.trim().to_ascii_uppercase().replace("TLS13_", "TLS_");
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|s| norm(&format!("{:?}", s.suite())) == norm(n))
                .copied()
                .ok_or_else(|| {
                    let known: Vec<String> = all
                        .iter()
                        .map(|s| norm(&format!("{:?}", s.suite())))
                        .collect();
                    ProbeError::usage(format!(
                        "--ciphers: unknown suite '{n}'; known: {}",
                        known.join(", ")
                    ))
                })
        })
        .collect()
}

/// The trust anchors' certificates: `--cacert FILE`, or the system's
/// (rustls-native-certs: `SSL_CERT_FILE`, `SSL_CERT_DIR`, then the
/// distribution's bundle).
///
/// # Errors
/// A usage error naming `--cacert` when the file cannot be read.
pub fn root_ders(cacert: Option<&Path>) -> Result<Vec<CertificateDer<'static>>, ProbeError> {
    match cacert {
        Some(p) => CertificateDer::pem_file_iter(p)
            .and_then(|it| it.collect::<Result<_, _>>())
            .map_err(|e| ProbeError::usage(format!("--cacert {}: {e}", p.display()))),
        None => Ok(rustls_native_certs::load_native_certs().certs),
    }
}

/// The store of `certs`; a `--cacert` file must hold one usable
/// certificate at least.
fn store(
    certs: Vec<CertificateDer<'static>>,
    cacert: Option<&Path>,
) -> Result<RootCertStore, ProbeError> {
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs);
    if let (Some(p), 0) = (cacert, added) {
        return Err(ProbeError::usage(format!(
            "--cacert {}: no usable certificate in it",
            p.display()
        )));
    }
    Ok(store)
}

/// A certificate's `notAfter` in Unix seconds (`None`: not X.509 DER).
fn not_after(der: &[u8]) -> Option<i64> {
    x509_parser::parse_x509_certificate(der)
        .ok()
        .map(|(_, c)| c.validity().not_after.timestamp())
}

/// When the server's certificates expire (blackbox_exporter's
/// `getEarliestCertExpiry` and `getLastChainExpiry`): the earliest
/// `notAfter` of those it presented, and the earliest of the chain the
/// verifier builds from them to one of `anchors` (the leaf, the
/// intermediates used, the anchor's certificate). rustls keeps the chain
/// it verified to itself, so it is built again here by webpki (rustls'
/// own verifier) over the same anchors, at the same time; Go lists every
/// chain it can build and takes the one that expires last, webpki builds
/// one. `anchors`: `None` with `-k` (no chain is verified). The leaf's
/// labels: [`crate::certinfo`].
pub fn peer_certs(
    c: &rustls::ClientConnection,
    anchors: Option<&[CertificateDer<'static>]>,
) -> Option<PeerCerts> {
    let chain = c.peer_certificates()?;
    Some(PeerCerts {
        earliest_expiry: chain.iter().filter_map(|d| not_after(d)).min(),
        verified_chain_expiry: anchors.and_then(|a| verified_chain_expiry(chain, a)),
        leaf: chain.first().and_then(|d| crate::certinfo::leaf_cert(d)),
    })
}

/// The earliest `notAfter` of the verified chain of `chain` to one of
/// `anchors`; `None` when it does not verify.
fn verified_chain_expiry(
    chain: &[CertificateDer<'_>],
    anchors: &[CertificateDer<'static>],
) -> Option<i64> {
    let (leaf, sent) = chain.split_first()?;
    let ee = webpki::EndEntityCert::try_from(leaf).ok()?;
    let parsed: Vec<(rustls::pki_types::TrustAnchor<'_>, &CertificateDer<'static>)> = anchors
        .iter()
        .filter_map(|d| webpki::anchor_from_trusted_cert(d).ok().map(|a| (a, d)))
        .collect();
    let tas: Vec<rustls::pki_types::TrustAnchor<'_>> =
        parsed.iter().map(|(a, _)| a.clone()).collect();
    let algs = rustls::crypto::ring::default_provider()
        .signature_verification_algorithms
        .all;
    let path = ee
        .verify_for_usage(
            algs,
            &tas,
            sent,
            UnixTime::now(),
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .ok()?;
    let anchor = path.anchor();
    let root = parsed
        .iter()
        .find(|(a, _)| {
            a.subject == anchor.subject
                && a.subject_public_key_info == anchor.subject_public_key_info
        })
        .map(|(_, d)| *d);
    let mut expiries = vec![not_after(leaf)?];
    for i in path.intermediate_certificates() {
        expiries.push(not_after(i.der().as_ref())?);
    }
    expiries.extend(root.and_then(|r| not_after(r)));
    expiries.into_iter().min()
}

/// `-k`: accepts any certificate chain but still checks the handshake
/// signatures with the provider's algorithms. Our own code because rustls
/// deliberately ships no "insecure" verifier; this is its documented
/// `dangerous()` extension point.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The key log: every secret appended to a file in the NSS key log format
/// (`LABEL <client_random hex> <secret hex>`) and kept in memory for the
/// capture's Decryption Secrets Block. Our own code because rustls'
/// `KeyLogFile` reads only `SSLKEYLOGFILE` and keeps nothing in memory.
#[derive(Debug)]
pub struct KeyLogSink {
    /// `None`: kept in memory only ([`KeyLogSink::in_memory`]).
    file: Option<Mutex<std::fs::File>>,
    lines: Mutex<Vec<u8>>,
}

impl KeyLogSink {
    /// Open `path` for appending (created if missing).
    ///
    /// # Errors
    /// A usage error naming `--keylog` and the path.
    pub fn open(path: &Path) -> Result<KeyLogSink, ProbeError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ProbeError::usage(format!("--keylog {}: {e}", path.display())))?;
        Ok(KeyLogSink {
            file: Some(Mutex::new(file)),
            lines: Mutex::new(Vec::new()),
        })
    }

    /// A key log kept in memory only, written to no file: the secrets the
    /// probe needs to decrypt its own capture when no `--keylog` was asked
    /// for (QUIC has no plaintext past the Initials, RFC 9001 §5; TLS over
    /// TCP has its HTTP requests and responses, and their `Server-Timing`,
    /// only inside the records). They go into no `--pcap` file.
    pub fn in_memory() -> KeyLogSink {
        KeyLogSink {
            file: None,
            lines: Mutex::new(Vec::new()),
        }
    }

    /// The sink `--keylog FILE` (or `SSLKEYLOGFILE`) asks for, if any.
    ///
    /// # Errors
    /// See [`KeyLogSink::open`].
    pub fn for_options(o: &TlsOptions) -> Result<Option<Arc<KeyLogSink>>, ProbeError> {
        let path = o
            .keylog
            .clone()
            .or_else(|| std::env::var_os("SSLKEYLOGFILE").map(PathBuf::from));
        path.map(|p| KeyLogSink::open(&p).map(Arc::new)).transpose()
    }

    /// Every line logged so far.
    pub fn contents(&self) -> Vec<u8> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl rustls::KeyLog for KeyLogSink {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let line = format!("{label} {} {}\n", hex(client_random), hex(secret));
        if let Some(Ok(mut f)) = self.file.as_ref().map(Mutex::lock) {
            // a key log that cannot be written must not fail the probe
            let _ = f.write_all(line.as_bytes());
        }
        if let Ok(mut l) = self.lines.lock() {
            l.extend_from_slice(line.as_bytes());
        }
    }
}

/// What TLS negotiated, read off a finished connection; `offered`: early
/// data was offered; `anchors`: see [`peer_certs`].
pub fn negotiated(
    c: &rustls::ClientConnection,
    offered: bool,
    anchors: Option<&[CertificateDer<'static>]>,
) -> NegotiatedTls {
    use rustls::HandshakeKind;
    NegotiatedTls {
        version: c
            .protocol_version()
            .map(|v| match v {
                rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3".to_string(),
                rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2".to_string(),
                other => format!("{other:?}"),
            })
            .unwrap_or_default(),
        cipher: c
            .negotiated_cipher_suite()
            .map(|s| format!("{:?}", s.suite()))
            .unwrap_or_default(),
        alpn: c
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned()),
        handshake: match c.handshake_kind() {
            Some(HandshakeKind::Resumed) => "resumed",
            Some(HandshakeKind::FullWithHelloRetryRequest) => "full-with-hello-retry",
            _ => "full",
        },
        early_data: match (offered, c.is_early_data_accepted()) {
            (_, true) => "accepted",
            (true, false) => "rejected",
            (false, false) => "not-offered",
        },
        certs: peer_certs(c, anchors),
    }
}
