//! `--sequence`: full handshake → resumed → 0-RTT (and, with `--tfo`, TFO
//! cookie → TFO data), each step's outcome verified from what the
//! libraries and the kernel say (rustls `handshake_kind()`,
//! `is_early_data_accepted()`; the wire's `tfo-*` findings) rather than
//! assumed.

/// What one connection of a run sets out to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeStep {
    /// TLS intent (`None` for `http://`).
    pub tls: Option<TlsStep>,
    /// TFO intent (`None` without `--tfo`).
    pub tfo: Option<TfoStep>,
}

/// The TLS intent of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsStep {
    /// Any handshake (a plain `-n` attempt: a fresh session store each time).
    Any,
    /// A full handshake (fresh session store).
    Full,
    /// Resume with a ticket from an earlier step.
    Resumed,
    /// Resume and send the request as early data (0-RTT).
    ZeroRtt,
    /// Keep the run's session store (`--http3 -n N` after the first
    /// attempt): resume, and send the request as 0-RTT whenever the ticket
    /// allows it, as a browser does. Verified, not assumed.
    Reuse,
}

/// The TFO intent of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TfoStep {
    /// Any outcome (a plain `--tfo` attempt).
    Any,
    /// Ask for a cookie (none cached yet: the SYN carries the request
    /// option but no data).
    Cookie,
    /// Send data in the SYN with the cached cookie.
    Data,
}

impl ProbeStep {
    /// The step's name: `single`, `full`, `resumed`, `0-rtt`, joined with
    /// `tfo-cookie` / `tfo-data` (`full+tfo-cookie`).
    pub fn name(&self) -> String {
        let tls = match self.tls {
            None | Some(TlsStep::Any | TlsStep::Reuse) => None,
            Some(TlsStep::Full) => Some("full"),
            Some(TlsStep::Resumed) => Some("resumed"),
            Some(TlsStep::ZeroRtt) => Some("0-rtt"),
        };
        let tfo = match self.tfo {
            None | Some(TfoStep::Any) => None,
            Some(TfoStep::Cookie) => Some("tfo-cookie"),
            Some(TfoStep::Data) => Some("tfo-data"),
        };
        match (tls, tfo) {
            (Some(a), Some(b)) => format!("{a}+{b}"),
            (Some(a), None) | (None, Some(a)) => a.to_string(),
            (None, None) => "single".to_string(),
        }
    }

    /// Early data is to be offered.
    pub fn early_data(&self) -> bool {
        self.tls == Some(TlsStep::ZeroRtt)
    }

    /// The step keeps the session store of the previous one.
    pub fn resumes(&self) -> bool {
        matches!(
            self.tls,
            Some(TlsStep::Resumed | TlsStep::ZeroRtt | TlsStep::Reuse)
        )
    }

    /// Early data is to be offered when the ticket allows it (`0-rtt`, and
    /// HTTP/3's `-n` attempts after the first).
    pub fn tries_early_data(&self) -> bool {
        matches!(self.tls, Some(TlsStep::ZeroRtt | TlsStep::Reuse))
    }
}

/// The steps of an `--http3` run: `--sequence` as for `https` without TFO
/// (`full`, `resumed`, `0-rtt`); otherwise `count` attempts sharing one
/// session store, the first [`TlsStep::Any`], the others
/// [`TlsStep::Reuse`].
pub fn plan_http3(sequence: bool, count: u32) -> Vec<ProbeStep> {
    if sequence {
        return plan(true, true, false, 1).unwrap_or_default();
    }
    (0..count.max(1))
        .map(|i| ProbeStep {
            tls: Some(if i == 0 { TlsStep::Any } else { TlsStep::Reuse }),
            tfo: None,
        })
        .collect()
}

/// The steps of a run: `--sequence` for `https` (`full`, `resumed`,
/// `0-rtt`, with `--tfo` the first asking for a cookie and the others
/// sending data), for `http` with `--tfo` (`tfo-cookie`, `tfo-data`);
/// otherwise `count` plain attempts.
///
/// # Errors
/// `--sequence` on `http://` without `--tfo`: nothing to show.
pub fn plan(sequence: bool, https: bool, tfo: bool, count: u32) -> Result<Vec<ProbeStep>, String> {
    let tfo_any = tfo.then_some(TfoStep::Any);
    if !sequence {
        let tls = https.then_some(TlsStep::Any);
        return Ok(vec![ProbeStep { tls, tfo: tfo_any }; count.max(1) as usize]);
    }
    let cookie = tfo.then_some(TfoStep::Cookie);
    let data = tfo.then_some(TfoStep::Data);
    match (https, tfo) {
        (true, _) => Ok(vec![
            ProbeStep {
                tls: Some(TlsStep::Full),
                tfo: cookie,
            },
            ProbeStep {
                tls: Some(TlsStep::Resumed),
                tfo: data,
            },
            ProbeStep {
                tls: Some(TlsStep::ZeroRtt),
                tfo: data,
            },
        ]),
        (false, true) => Ok(vec![
            ProbeStep {
                tls: None,
                tfo: cookie,
            },
            ProbeStep {
                tls: None,
                tfo: data,
            },
        ]),
        (false, false) => {
            Err("--sequence on an http:// URL needs --tfo (resumption and 0-RTT need https)".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        let p = plan(true, true, true, 1).unwrap();
        let names: Vec<String> = p.iter().map(ProbeStep::name).collect();
        assert_eq!(
            names,
            ["full+tfo-cookie", "resumed+tfo-data", "0-rtt+tfo-data"]
        );
        assert!(p[2].early_data() && p[1].resumes() && !p[0].resumes());
        let p = plan(true, false, true, 1).unwrap();
        assert_eq!(
            p.iter().map(ProbeStep::name).collect::<Vec<_>>(),
            ["tfo-cookie", "tfo-data"]
        );
        assert!(plan(true, false, false, 1).is_err());
        assert_eq!(plan(false, true, false, 5).unwrap().len(), 5);
        assert_eq!(plan(false, true, false, 0).unwrap()[0].name(), "single");
        let h3 = plan_http3(false, 3);
        assert!(!h3[0].resumes() && h3[1].resumes() && h3[2].tries_early_data());
        assert!(h3.iter().all(|s| s.name() == "single"));
        assert_eq!(plan_http3(true, 1).len(), 3);
    }
}
