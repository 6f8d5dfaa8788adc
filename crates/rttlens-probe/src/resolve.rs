//! The target: the URL taken apart, and its host resolved (curl's
//! `namelookup`), honouring `--resolve host:port:addr` and `-4`/`-6`.

use std::net::{IpAddr, SocketAddr};

use crate::error::{ErrorKind, ProbeError, ProbePhase};

/// A parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `true` for `https`.
    pub tls: bool,
    /// Host as written (IPv6 without brackets).
    pub host: String,
    /// Port (default 80 / 443).
    pub port: u16,
    /// Path and query (`/` when empty).
    pub path: String,
    /// The URL as given.
    pub url: String,
}

impl Target {
    /// Parse `url` (scheme `http` or `https`; a URL without scheme is
    /// `http`, as in curl).
    ///
    /// # Errors
    /// A usage [`ProbeError`] for an unparsable URL or another scheme.
    pub fn parse(url: &str) -> Result<Target, ProbeError> {
        let full = if url.contains("://") {
            url.to_string()
        } else {
            format!("http://{url}")
        };
        let uri: hyper::Uri = full
            .parse()
            .map_err(|e| ProbeError::usage(format!("URL '{url}': {e}")))?;
        let tls = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            Some(s) => {
                return Err(ProbeError::usage(format!(
                    "URL '{url}': scheme '{s}' is not http or https"
                )))
            }
            None => false,
        };
        let host = uri
            .host()
            .ok_or_else(|| ProbeError::usage(format!("URL '{url}': no host")))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let path = uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/".into());
        Ok(Target {
            tls,
            host,
            port,
            path,
            url: url.to_string(),
        })
    }

    /// The `Host` header value (`host[:port]`, IPv6 in brackets, port only
    /// when not the scheme's default).
    pub fn host_header(&self) -> String {
        let h = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            h
        } else {
            format!("{h}:{}", self.port)
        }
    }
}

/// One `--resolve host:port:addr` entry (curl's syntax; IPv6 addresses in
/// brackets or bare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveOverride {
    /// Host name it applies to (case-insensitive).
    pub host: String,
    /// Port it applies to.
    pub port: u16,
    /// Address to use instead of asking the resolver.
    pub addr: IpAddr,
}

impl std::str::FromStr for ResolveOverride {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("--resolve '{s}': expected host:port:address");
        let (host, rest) = s.split_once(':').ok_or_else(bad)?;
        let (port, addr) = rest.split_once(':').ok_or_else(bad)?;
        let port = port.parse::<u16>().map_err(|_| bad())?;
        let addr = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .map_err(|_| bad())?;
        if host.is_empty() {
            return Err(bad());
        }
        Ok(ResolveOverride {
            host: host.to_ascii_lowercase(),
            port,
            addr,
        })
    }
}

/// Which address family to use (`-4`, `-6`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Family {
    /// Whatever the resolver returns first.
    #[default]
    Any,
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
}

impl Family {
    fn accepts(self, a: &IpAddr) -> bool {
        match self {
            Family::Any => true,
            Family::V4 => a.is_ipv4(),
            Family::V6 => a.is_ipv6(),
        }
    }
}

/// Resolve the target: an IP literal as is, a `--resolve` entry, or the
/// system resolver (`getaddrinfo(3)` through tokio, so `/etc/hosts` and
/// `nsswitch.conf` apply). Returns the first address of the wanted family.
///
/// # Errors
/// A [`ProbePhase::Namelookup`] error when the name does not resolve or has no
/// address of the family.
pub async fn resolve(
    t: &Target,
    overrides: &[ResolveOverride],
    family: Family,
) -> Result<SocketAddr, ProbeError> {
    let fail = |m: String| ProbeError::new(ProbePhase::Namelookup, ErrorKind::Resolve, m);
    let wanted = match family {
        Family::Any => "",
        Family::V4 => " IPv4",
        Family::V6 => " IPv6",
    };
    let candidates: Vec<IpAddr> = if let Ok(ip) = t.host.parse::<IpAddr>() {
        vec![ip]
    } else if let Some(o) = overrides
        .iter()
        .find(|o| o.host.eq_ignore_ascii_case(&t.host) && o.port == t.port)
    {
        vec![o.addr]
    } else {
        tokio::net::lookup_host((t.host.as_str(), t.port))
            .await
            .map_err(|e| fail(format!("could not resolve host '{}': {e}", t.host)))?
            .map(|a| a.ip())
            .collect()
    };
    candidates
        .into_iter()
        .find(|a| family.accepts(a))
        .map(|a| SocketAddr::new(a, t.port))
        .ok_or_else(|| fail(format!("host '{}' has no{wanted} address", t.host)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = Target::parse("https://example.com/a?b=1").unwrap();
        assert_eq!(
            (t.tls, t.host.as_str(), t.port, t.path.as_str()),
            (true, "example.com", 443, "/a?b=1")
        );
        let t = Target::parse("http://[fd77::2]:8080").unwrap();
        assert_eq!(
            (t.tls, t.host.as_str(), t.port, t.path.as_str()),
            (false, "fd77::2", 8080, "/")
        );
        assert_eq!(t.host_header(), "[fd77::2]:8080");
        let t = Target::parse("10.0.0.1").unwrap();
        assert_eq!((t.tls, t.port), (false, 80));
        assert!(Target::parse("ftp://x/").is_err());
        assert!(Target::parse("https://").is_err());
    }

    #[test]
    fn resolve_overrides() {
        let o: ResolveOverride = "Lab:443:10.77.0.2".parse().unwrap();
        assert_eq!((o.host.as_str(), o.port), ("lab", 443));
        let o: ResolveOverride = "lab:443:[fd77::2]".parse().unwrap();
        assert!(o.addr.is_ipv6());
        assert!("lab:443".parse::<ResolveOverride>().is_err());
        assert!("lab:x:1.2.3.4".parse::<ResolveOverride>().is_err());
    }

    #[test]
    fn literal_and_family() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let t = Target::parse("https://lab.invalid/").unwrap();
        let o = vec!["lab.invalid:443:10.77.0.2".parse().unwrap()];
        let a = rt.block_on(resolve(&t, &o, Family::Any)).unwrap();
        assert_eq!(a.to_string(), "10.77.0.2:443");
        let e = rt.block_on(resolve(&t, &o, Family::V6)).unwrap_err();
        assert_eq!(
            (e.phase, e.kind),
            (ProbePhase::Namelookup, ErrorKind::Resolve)
        );
    }
}
