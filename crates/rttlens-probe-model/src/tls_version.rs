//! The TLS protocol versions the lab's servers offer and the probe and the
//! bench ask for (`--tls-versions`, `--tls`): one type for both ends.

/// A TLS protocol version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLS 1.2 (RFC 5246).
    Tls12,
    /// TLS 1.3 (RFC 8446).
    Tls13,
}

impl TlsVersion {
    /// Both versions, the default of the servers and the probe.
    pub const ALL: [TlsVersion; 2] = [TlsVersion::Tls12, TlsVersion::Tls13];

    /// The name OpenSSL, nginx's `ssl_protocols` and rustls use
    /// (`TLSv1.2`, `TLSv1.3`).
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }
}

impl std::str::FromStr for TlsVersion {
    type Err = String;

    /// Parses `1.2`, `1.3`, `12`, `13`, `tls1.2`, `TLSv1.3`
    /// (case-insensitive).
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.to_ascii_lowercase();
        match t.trim_start_matches("tlsv").trim_start_matches("tls") {
            "1.2" | "12" => Ok(TlsVersion::Tls12),
            "1.3" | "13" => Ok(TlsVersion::Tls13),
            _ => Err(format!("unknown TLS version '{s}' (expected 1.2 or 1.3)")),
        }
    }
}

impl std::fmt::Display for TlsVersion {
    /// `1.2`, `1.3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsVersion::Tls12 => "1.2",
            TlsVersion::Tls13 => "1.3",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::TlsVersion;

    #[test]
    fn names_parse_and_print() {
        for (s, v) in [
            ("1.2", TlsVersion::Tls12),
            ("TLSv1.3", TlsVersion::Tls13),
            ("tls1.3", TlsVersion::Tls13),
            ("12", TlsVersion::Tls12),
        ] {
            assert_eq!(s.parse::<TlsVersion>(), Ok(v));
        }
        assert!("1.1".parse::<TlsVersion>().is_err());
        assert_eq!(TlsVersion::Tls13.to_string(), "1.3");
        assert_eq!(TlsVersion::Tls12.name(), "TLSv1.2");
    }
}
