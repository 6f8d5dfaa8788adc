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

/// The private-enterprise OID reserved for documentation (RFC 5612,
/// 1.3.6.1.4.1.32473) under which [`CertChain`] pads its leaf.
const PADDING_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 32473, 1];

/// A certificate chain for the lab's QUIC server (rcgen 0.14, ECDSA
/// P-256 throughout): a root CA, `intermediates` intermediate CAs, each
/// signed by the one before, and a leaf for `localhost`, `127.0.0.1`,
/// `::1` and the lab's server addresses (`10.77.0.2`, `fd77::2`). Its
/// size is the knob: a server's first flight carries the whole chain, and
/// before the client's address is validated a QUIC server may send at most
/// 3× the bytes it received (RFC 9000 §8.1), so a chain past ~3 KB against
/// a 1200-byte client Initial waits a round trip.
#[derive(Clone, Debug)]
pub struct CertChain {
    /// The chain as the server sends it: the leaf first, then the
    /// intermediates from the leaf's issuer up (the root is not sent, RFC
    /// 8446 §4.4.2).
    pub chain: Vec<CertificateDer<'static>>,
    /// The root CA, DER: what a client adds to its root store.
    pub root: CertificateDer<'static>,
    /// The root CA, PEM (for `rttlens probe --cacert`).
    pub root_pem: String,
    key_der: Vec<u8>,
}

impl CertChain {
    /// A root, `intermediates` intermediate CAs and a leaf whose
    /// certificate carries `padding_bytes` extra bytes (a non-critical
    /// extension holding an OCTET STRING of zeros under the documentation
    /// OID 1.3.6.1.4.1.32473.1; 0 = no extension). Each ECDSA P-256
    /// certificate is about 400 B of DER.
    ///
    /// # Errors
    /// [`Error::Cert`] when rcgen fails.
    pub fn generate(intermediates: usize, padding_bytes: usize) -> Result<CertChain> {
        let cert_err = |e: rcgen::Error| Error::Cert(e.to_string());
        let ca_params = |name: String| -> Result<rcgen::CertificateParams> {
            let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
            p.distinguished_name = rcgen::DistinguishedName::new();
            p.distinguished_name.push(rcgen::DnType::CommonName, name);
            p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            p.key_usages = vec![
                rcgen::KeyUsagePurpose::KeyCertSign,
                rcgen::KeyUsagePurpose::CrlSign,
                rcgen::KeyUsagePurpose::DigitalSignature,
            ];
            Ok(p)
        };
        let root_key = rcgen::KeyPair::generate().map_err(cert_err)?;
        let root_params = ca_params("rttlens lab root CA".into())?;
        let root = root_params.self_signed(&root_key).map_err(cert_err)?;
        let mut issuer = rcgen::Issuer::new(root_params, root_key);
        let mut sent: Vec<CertificateDer<'static>> = Vec::new();
        for i in 0..intermediates {
            let key = rcgen::KeyPair::generate().map_err(cert_err)?;
            let params = ca_params(format!("rttlens lab intermediate CA {}", i + 1))?;
            let cert = params.signed_by(&key, &issuer).map_err(cert_err)?;
            sent.push(cert.der().clone());
            issuer = rcgen::Issuer::new(params, key);
        }
        let names: Vec<String> = ["localhost", "127.0.0.1", "::1", "10.77.0.2", "fd77::2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut leaf = rcgen::CertificateParams::new(names).map_err(cert_err)?;
        leaf.distinguished_name = rcgen::DistinguishedName::new();
        leaf.distinguished_name
            .push(rcgen::DnType::CommonName, "rttlens lab server");
        if padding_bytes > 0 {
            leaf.custom_extensions
                .push(rcgen::CustomExtension::from_oid_content(
                    PADDING_OID,
                    der_octet_string(padding_bytes),
                ));
        }
        let leaf_key = rcgen::KeyPair::generate().map_err(cert_err)?;
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(cert_err)?;
        // leaf first, then the intermediates from the leaf's issuer up
        sent.reverse();
        sent.insert(0, leaf_cert.der().clone());
        Ok(CertChain {
            chain: sent,
            root: root.der().clone(),
            root_pem: root.pem(),
            key_der: leaf_key.serialize_der(),
        })
    }

    /// Bytes of DER in the chain the server sends (the sum over
    /// [`chain`](Self::chain), without TLS framing).
    pub fn chain_bytes(&self) -> usize {
        self.chain.iter().map(|c| c.len()).sum()
    }

    /// The leaf's private key, DER (PKCS#8).
    pub fn key_der(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()))
    }
}

/// A DER OCTET STRING of `n` zero bytes (X.690 §8.7, definite length §8.1.3).
fn der_octet_string(n: usize) -> Vec<u8> {
    let mut v = vec![0x04];
    if n < 0x80 {
        v.push(n as u8);
    } else {
        let len = n.to_be_bytes();
        let skip = len.iter().take_while(|b| **b == 0).count();
        v.push(0x80 | (len.len() - skip) as u8);
        v.extend_from_slice(&len[skip..]);
    }
    v.resize(v.len() + n, 0);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths() {
        assert_eq!(der_octet_string(3), [4, 3, 0, 0, 0]);
        let v = der_octet_string(300);
        assert_eq!(&v[..4], [4, 0x82, 1, 44]);
        assert_eq!(v.len(), 304);
    }

    #[test]
    fn chain_grows_with_its_knobs() {
        let plain = CertChain::generate(0, 0).unwrap();
        assert_eq!(plain.chain.len(), 1);
        let long = CertChain::generate(3, 2000).unwrap();
        assert_eq!(long.chain.len(), 4);
        assert!(long.chain_bytes() > plain.chain_bytes() + 2000 + 3 * 300);
    }
}
