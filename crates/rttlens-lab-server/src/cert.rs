//! A self-signed certificate for the lab servers (rcgen 0.14, ECDSA P-256).
//!
//! Subject alternative names: `localhost`, `127.0.0.1`, `::1`; clients in
//! the lab skip verification (`curl -k`) or trust [`SelfSigned::cert_der`].

use crate::{Error, Result};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A freshly generated self-signed certificate and its private key.
#[derive(Clone, Debug)]
pub struct SelfSigned {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The PKCS#8 private key, PEM.
    pub key_pem: String,
    cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl SelfSigned {
    /// Generates a certificate for `localhost`, `127.0.0.1` and `::1`.
    pub fn generate() -> Result<SelfSigned> {
        let names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
        let ck =
            rcgen::generate_simple_self_signed(names).map_err(|e| Error::Cert(e.to_string()))?;
        Ok(SelfSigned {
            cert_pem: ck.cert.pem(),
            key_pem: ck.signing_key.serialize_pem(),
            cert_der: ck.cert.der().clone(),
            key_der: ck.signing_key.serialize_der(),
        })
    }

    /// A certificate and PKCS#8 key made elsewhere (e.g. an RSA-2048 pair
    /// from `openssl req -newkey rsa:2048`, which rcgen cannot generate
    /// with ring), from their PEM text.
    ///
    /// # Errors
    /// [`Error::Cert`] when either holds no certificate / PKCS#8 key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<SelfSigned> {
        use rustls::pki_types::pem::PemObject;
        let cert_der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| Error::Cert(format!("certificate PEM: {e}")))?;
        let key = PrivatePkcs8KeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| Error::Cert(format!("PKCS#8 key PEM: {e}")))?;
        Ok(SelfSigned {
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.to_string(),
            cert_der,
            key_der: key.secret_pkcs8_der().to_vec(),
        })
    }

    /// The certificate, DER (what a rustls client adds to its root store).
    pub fn cert_der(&self) -> CertificateDer<'static> {
        self.cert_der.clone()
    }

    /// The private key, DER (PKCS#8).
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}
