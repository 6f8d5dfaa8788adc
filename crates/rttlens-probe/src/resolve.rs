//! The target: the URL taken apart, and its host resolved (curl's
//! `namelookup`), honouring `--resolve host:port:addr` and `-4`/`-6`.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

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

/// Which targets may be connected to (`rttlens serve --allow-target`):
/// networks (`10.0.0.0/8`, `fd00::/8`, a bare address as its own /32 or
/// /128) and host names (`example.com`, or `*.example.com` for its
/// subdomains). A network entry permits any target whose address, after
/// resolution, lies in it; a name entry permits that name whatever it
/// resolves to (its DNS is trusted). IPv4-mapped IPv6 addresses
/// (`::ffff:127.0.0.1`) are checked as the IPv4 address they carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    nets: Vec<IpNet>,
    hosts: Vec<String>,
}

impl AllowList {
    /// Add one entry: a CIDR network, an address or a host name.
    ///
    /// # Errors
    /// The entry is none of these (the message names it).
    pub fn add(&mut self, entry: &str) -> Result<(), String> {
        let e = entry.trim();
        if let Ok(n) = e.parse::<IpNet>() {
            self.nets.push(n.trunc());
        } else if let Ok(a) = e
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            self.nets.push(IpNet::from(a));
        } else if e.contains('/') {
            return Err(format!(
                "'{entry}': not a network (expected e.g. 10.0.0.0/8)"
            ));
        } else {
            let name = e.strip_prefix("*.").unwrap_or(e);
            let ok = !name.is_empty()
                && name.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                });
            if !ok {
                return Err(format!(
                    "'{entry}': not a host name, address or network (expected e.g. \
                     example.com, *.example.com, 10.0.0.0/8)"
                ));
            }
            self.hosts.push(e.to_ascii_lowercase());
        }
        Ok(())
    }

    /// A list of `entries`.
    ///
    /// # Errors
    /// As [`AllowList::add`], for the first bad entry.
    pub fn new<S: AsRef<str>>(entries: &[S]) -> Result<AllowList, String> {
        let mut l = AllowList::default();
        for e in entries {
            l.add(e.as_ref())?;
        }
        Ok(l)
    }

    /// No entry (everything is refused).
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty() && self.hosts.is_empty()
    }

    /// Whether the list names `host` (a name entry, case-insensitive).
    pub fn names(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.hosts.iter().any(|h| match h.strip_prefix("*.") {
            Some(parent) => host
                .strip_suffix(parent)
                .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
            None => *h == host,
        })
    }

    /// Whether a network entry holds `addr`.
    pub fn holds(&self, addr: IpAddr) -> bool {
        let canonical = addr.to_canonical();
        self.nets
            .iter()
            .any(|n| n.contains(&addr) || n.contains(&canonical))
    }

    /// Whether a connection to `addr`, resolved from `host`, is permitted.
    pub fn permits(&self, host: &str, addr: IpAddr) -> bool {
        self.names(host) || self.holds(addr)
    }
}

/// Resolve the target: an IP literal as is, a `--resolve` entry, or the
/// system resolver (`getaddrinfo(3)` through tokio, so `/etc/hosts` and
/// `nsswitch.conf` apply). Returns the first address of the wanted family
/// (that `allow` permits, when given): the caller connects to it, so the
/// address checked is the address used.
///
/// # Errors
/// A [`ProbePhase::Namelookup`] error when the name does not resolve or has no
/// address of the family; [`ErrorKind::Forbidden`] when `allow` permits
/// none of its addresses.
pub async fn resolve(
    t: &Target,
    overrides: &[ResolveOverride],
    family: Family,
    allow: Option<&AllowList>,
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
    let of_family: Vec<IpAddr> = candidates
        .into_iter()
        .filter(|a| family.accepts(a))
        .collect();
    let Some(first) = of_family.first().copied() else {
        return Err(fail(format!("host '{}' has no{wanted} address", t.host)));
    };
    match allow {
        None => Ok(SocketAddr::new(first, t.port)),
        Some(l) => of_family
            .iter()
            .find(|a| l.permits(&t.host, **a))
            .map(|a| SocketAddr::new(*a, t.port))
            .ok_or_else(|| {
                let addrs: Vec<String> = of_family.iter().map(IpAddr::to_string).collect();
                let shown = if t.host.parse::<IpAddr>().is_ok() {
                    format!("address {}", t.host)
                } else {
                    format!("host '{}' ({})", t.host, addrs.join(", "))
                };
                ProbeError::new(
                    ProbePhase::Namelookup,
                    ErrorKind::Forbidden,
                    format!("{shown} is not in the allow-list (--allow-target); not connected"),
                )
            }),
    }
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
        let a = rt.block_on(resolve(&t, &o, Family::Any, None)).unwrap();
        assert_eq!(a.to_string(), "10.77.0.2:443");
        let e = rt.block_on(resolve(&t, &o, Family::V6, None)).unwrap_err();
        assert_eq!(
            (e.phase, e.kind),
            (ProbePhase::Namelookup, ErrorKind::Resolve)
        );
    }

    #[test]
    fn allow_lists() {
        let l = AllowList::new(&[
            "10.0.0.0/8",
            "fd00::/8",
            "192.0.2.7",
            "*.example.com",
            "lab.test",
        ])
        .unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(l.permits("x", ip("10.1.2.3")));
        assert!(l.permits("x", ip("::ffff:10.1.2.3")));
        assert!(l.permits("x", ip("fd12::1")));
        assert!(l.permits("x", ip("192.0.2.7")));
        assert!(!l.permits("x", ip("192.0.2.8")));
        assert!(!l.permits("localhost", ip("127.0.0.1")));
        assert!(!l.permits("x", ip("::ffff:127.0.0.1")));
        assert!(l.permits("a.example.com", ip("127.0.0.1")));
        assert!(l.permits("A.B.Example.COM.", ip("127.0.0.1")));
        assert!(!l.permits("example.com", ip("127.0.0.1")));
        assert!(!l.permits("badexample.com", ip("127.0.0.1")));
        assert!(l.permits("lab.test", ip("127.0.0.1")));
        assert!(!l.permits("sub.lab.test", ip("127.0.0.1")));
        for bad in ["10.0.0.0/33", "a b", "", "http://x/", "-/8"] {
            assert!(AllowList::new(&[bad]).is_err(), "{bad}");
        }
        assert!(AllowList::default().is_empty());

        // the address resolved is the one checked, and returned
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let t = Target::parse("https://lab.invalid/").unwrap();
        let o = vec!["lab.invalid:443:127.0.0.1".parse().unwrap()];
        let e = rt
            .block_on(resolve(&t, &o, Family::Any, Some(&l)))
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Forbidden, "{e}");
        let ok = AllowList::new(&["127.0.0.0/8"]).unwrap();
        let a = rt
            .block_on(resolve(&t, &o, Family::Any, Some(&ok)))
            .unwrap();
        assert_eq!(a.to_string(), "127.0.0.1:443");
    }
}
